"""The Kubernetes adapter: the one kubeconfig loader and the one retry rule, building the official
``kubernetes`` client for a context, and :class:`KubeApi` — every call clusterstack makes to the
API server — implemented by :class:`KubernetesApi`.

The kubeconfig is the ambient one — ``$KUBECONFIG``, else ``~/.kube/config``, as ``kubectl`` and
the Pulumi Kubernetes provider read it at run time (read when a client is built, not at import:
the ``kubernetes`` package reads ``$KUBECONFIG`` once, when it is imported).

The retry rule (:func:`read_retries`): reads (``GET``) are retried twice on a connection error,
writes never — a PATCH whose response was lost must be observed, not re-sent (the rollback
executor of :mod:`clusterstack.deploy.kubernetes` relies on it), and a status code is an answer,
not a reason to retry. ``/`` stays unescaped in path parameters (:data:`SAFE_PATH_CHARS`).
"""

from __future__ import annotations

import os
import stat
from typing import Any, Callable, Protocol

from clusterstack.adapters.lookups import CheckError, HelmRelease, KubeObject, Unreachable
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import file_kind

SAFE_PATH_CHARS = "/"
"""Path parameters are sent with ``/`` unescaped, so a multi-segment health path reaches the
service proxy as written (``…/proxy/api/health``, not ``…/proxy/api%2Fhealth``). Kubernetes
object names are DNS subdomains and never contain ``/``, so no other parameter changes."""
READ_RETRIES = 2
"""Retries of a read (GET) after a connection error; writes are never retried."""


class KubeconfigError(ClusterstackError):
    """The kubeconfig is missing or unreadable, or lacks the context (exit 2). The message names
    the context and the file; callers add where the context came from."""


def kubeconfig_path(config_file: str | None = None) -> str:
    """``config_file``, else ``$KUBECONFIG``, else ``~/.kube/config``."""
    return config_file or os.environ.get("KUBECONFIG") or "~/.kube/config"


def read_retries() -> Any:
    """The urllib3 ``Retry`` of every client: :data:`READ_RETRIES` for GET, none for writes,
    backoff 0.5 s, a status code returned, never retried."""
    from urllib3.util.retry import Retry

    return Retry(total=READ_RETRIES, allowed_methods=frozenset({"GET"}), backoff_factor=0.5,
                 raise_on_status=False)


def _regular_kubeconfig(path: str, context: str) -> None:
    """Refuse a kubeconfig that is a named pipe, a device or a directory before the client
    opens it (a pipe would block it; ``/dev/zero`` never ends). A missing file is left to the
    client's own message."""
    try:
        mode = os.stat(os.path.expanduser(path)).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise KubeconfigError(f"kubeconfig {path} is {file_kind(mode)}, not a regular file",
                              f"point $KUBECONFIG at the kubeconfig file holding context {context!r}")


def configuration(context: str, *, config_file: str | None = None) -> Any:
    """A ``kubernetes.client.Configuration`` for ``context`` of the kubeconfig
    (:func:`kubeconfig_path`), with the retry rule and :data:`SAFE_PATH_CHARS`. Raises
    KubeconfigError for a missing or unreadable file or a context it lacks."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    import yaml  # the kubernetes client's own YAML library (a dependency of it)

    cfg = client.Configuration()
    path = kubeconfig_path(config_file)
    hint = "add the context to your kubeconfig ($KUBECONFIG, else ~/.kube/config)"
    _regular_kubeconfig(path, context)
    try:
        config.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                persist_config=False)
    except (ConfigException, OSError) as exc:
        raise KubeconfigError(f"cannot use kube context {context!r} of kubeconfig {path}: {exc}", hint) from None
    except (yaml.YAMLError, ValueError, TypeError, LookupError, AttributeError) as exc:
        # not YAML, or YAML of another shape (`contexts: 5`): the client's loader fails with
        # whatever its code meets first — the file's fault, not a bug
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise KubeconfigError(f"kubeconfig {path} is not a valid kubeconfig ({type(exc).__name__}: "
                              f"{first})", "fix or replace the file (`kubectl config view` reads it "
                              "the same way); " + hint) from None
    cfg.retries = read_retries()
    cfg.safe_chars_for_path_param = SAFE_PATH_CHARS
    return cfg


class KubeConnection(Protocol):
    """A connection to one API server: ``kubernetes.client.ApiClient`` (:func:`api_client`),
    which :class:`KubernetesApi` calls through."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        """A model of the client → the API's JSON (dicts, lists, strings…)."""
        ...


def api_client(context: str, *, config_file: str | None = None) -> KubeConnection:
    """A ``kubernetes.client.ApiClient`` for ``context`` (see :func:`configuration`). Raises
    KubeconfigError."""
    from kubernetes import client

    return client.ApiClient(configuration(context, config_file=config_file))


class KubeStatusError(Exception):
    """The API server answered a call of :class:`KubeApi` with an error status: ``status``
    (HTTP code; None when the client had none), ``reason`` and ``body`` (the ``Status``
    document's text) — ``kubernetes.client.exceptions.ApiException``'s fields."""

    def __init__(self, status: int | None, reason: str | None, body: str | None) -> None:
        super().__init__(f"HTTP {status} {reason or ''}".strip())
        self.status, self.reason, self.body = status, reason, body


class KubeTransportError(Exception):
    """A call of :class:`KubeApi` got no usable answer (a urllib3 ``HTTPError``): ``error``
    its type name, ``text`` its message; ``cause`` the type name of the last attempt's error
    when the retries ran out (``MaxRetryError.reason``), else None; ``connect_failed``: no
    connection was ever made (``NewConnectionError`` / ``ConnectTimeoutError``, directly or
    as the last attempt's error) — nothing was sent."""

    def __init__(self, error: str, text: str, *, cause: str | None, connect_failed: bool) -> None:
        super().__init__(f"{error}: {text}")
        self.error, self.text, self.cause, self.connect_failed = error, text, cause, connect_failed


def _transport_error(exc: Exception) -> KubeTransportError:
    from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError

    connect = (NewConnectionError, ConnectTimeoutError)
    if isinstance(exc, MaxRetryError):
        return KubeTransportError(type(exc).__name__, str(exc), cause=type(exc.reason).__name__,
                                  connect_failed=isinstance(exc.reason, connect))
    return KubeTransportError(type(exc).__name__, str(exc), cause=None, connect_failed=isinstance(exc, connect))


def _sdk_call(fn: Callable[[], Any]) -> Any:
    """``fn()``, a call of the client: ``ApiException`` → :class:`KubeStatusError`, urllib3's
    ``HTTPError`` → :class:`KubeTransportError`; anything else propagates."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        return fn()
    except ApiException as exc:
        raise KubeStatusError(exc.status, exc.reason, exc.body) from None
    except HTTPError as exc:
        raise _transport_error(exc) from None


def plural(kind: str) -> str:
    """The resource (plural) of a kind by Kubernetes' naming convention (the code generators'
    English rule): lowercase; ``…s/x/z/ch/sh`` → ``+es``; consonant + ``y`` → ``ies``; else
    ``+s`` (NodePool → nodepools, Topology → topologies, Ingress → ingresses,
    PriorityClass → priorityclasses)."""
    k = kind.lower()
    if k.endswith(("s", "x", "z", "ch", "sh")):
        return k + "es"
    if k.endswith("y") and len(k) > 1 and k[-2] not in "aeiou":
        return k[:-1] + "ies"
    return k + "s"


JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


class KubeApi(Protocol):
    """What clusterstack asks of one Kubernetes API server; objects as the API's JSON.

    The reads of ``verify`` and ``imports`` (:meth:`get`, :meth:`helm_release`) answer None
    for an object that does not exist (404) and raise :class:`CheckError` for any other
    answer (:class:`Unreachable` when no connection could be made). The calls of the
    ``deploy`` backend raise :class:`KubeStatusError` (an error status; 404 included) and
    :class:`KubeTransportError` (no usable answer). Reads (GET) are retried on a connection
    error, writes never (:func:`read_retries`)."""

    def get(self, obj: KubeObject) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        ...

    def helm_release(self, release: HelmRelease) -> dict[str, Any] | None:
        """``{"status": str, "revision": int}`` of the release's newest revision (Helm 3's
        storage Secrets), or None."""
        ...

    def read_deployment(self, namespace: str, name: str) -> dict[str, Any]:
        """``GET …/namespaces/{ns}/deployments/{name}`` (apps/v1)."""
        ...

    def list_replica_sets(self, namespace: str, label_selector: str | None) -> dict[str, Any]:
        """``GET …/namespaces/{ns}/replicasets?labelSelector=…``: the ``ReplicaSetList``."""
        ...

    def patch_deployment(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> None:
        """A JSON patch (RFC 6902, :data:`JSON_PATCH`) of the Deployment; a failed ``test``
        operation is answered 422 and nothing is written."""
        ...

    def patch_replica_set(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """A JSON merge patch (RFC 7386, :data:`MERGE_PATCH`) of the ReplicaSet."""
        ...

    def get_service_proxy(self, namespace: str, service: str, path: str) -> None:
        """``GET …/namespaces/{ns}/services/{service}/proxy/{path}`` (``service``:
        ``name:port``): returns on a 2xx answer, else :class:`KubeStatusError`."""
        ...


def _namespace(obj: KubeObject) -> str:
    """The namespace of a lookup of a namespaced kind; CheckError when it has none."""
    if obj.namespace is None:
        raise CheckError(f"{obj.ref}: a {obj.kind} is namespaced, and the lookup names no namespace")
    return obj.namespace


class KubernetesApi:
    """:class:`KubeApi` over a :class:`KubeConnection` (``kubernetes.client.ApiClient``):
    typed APIs for the core kinds clusterstack declares (Namespace, ServiceAccount, Secret,
    ClusterRole/Binding, Ingress, PriorityClass), ``CustomObjectsApi`` for custom resources
    (NodePool, ResourceFlavor, ClusterQueue, Topology, ClusterIssuer, Middleware), Helm
    releases read the way Helm 3 stores them — Secrets in the release namespace labelled
    ``owner=helm,name=<release>``, one per revision, whose ``status`` label is ``deployed``
    for the live one (Helm "Storage backends").

    ``timeout`` is urllib3's ``(connect, read)`` in seconds for every request.
    """

    def __init__(self, api_client: KubeConnection, *, timeout: tuple[float, float] = (5.0, 15.0)) -> None:
        from kubernetes import client

        self._client = api_client
        self._timeout = timeout
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self._rbac = client.RbacAuthorizationV1Api(api_client)
        self._net = client.NetworkingV1Api(api_client)
        self._sched = client.SchedulingV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        # (apiVersion, kind) → typed read; its result is a model turned into the API's JSON.
        self._typed: dict[tuple[str, str], Callable[[KubeObject], Any]] = {
            ("v1", "Namespace"): lambda o: self._core.read_namespace(o.name, **self._kw),
            ("v1", "ServiceAccount"): lambda o: self._core.read_namespaced_service_account(
                o.name, _namespace(o), **self._kw),
            # a Helm release's storage Secret (the adoption report reads the release's values)
            ("v1", "Secret"): lambda o: self._core.read_namespaced_secret(o.name, _namespace(o), **self._kw),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"):
                lambda o: self._rbac.read_cluster_role(o.name, **self._kw),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
                lambda o: self._rbac.read_cluster_role_binding(o.name, **self._kw),
            ("networking.k8s.io/v1", "Ingress"):
                lambda o: self._net.read_namespaced_ingress(o.name, _namespace(o), **self._kw),
            ("scheduling.k8s.io/v1", "PriorityClass"):
                lambda o: self._sched.read_priority_class(o.name, **self._kw),
        }

    @property
    def _kw(self) -> dict[str, Any]:
        return {"_request_timeout": self._timeout}

    @classmethod
    def from_kubeconfig(cls, context: str, *, config_file: str | None = None,
                        connect: Callable[[str], KubeConnection] | None = None,
                        timeout: tuple[float, float] = (5.0, 15.0)) -> "KubernetesApi":
        """Client for ``context`` of the ambient kubeconfig (``$KUBECONFIG`` or
        ``~/.kube/config``, as ``kubectl`` and the Pulumi provider use it at run time), built by
        ``connect`` (default: :func:`api_client`; the CLI passes ``Clients.kubernetes``).
        Raises CheckError when the file or context is missing."""
        connect = connect or (lambda ctx: api_client(ctx, config_file=config_file))
        try:
            return cls(connect(context), timeout=timeout)
        except KubeconfigError as exc:
            raise CheckError(exc.problems[0].message) from None

    # -- the reads of verify / imports ----------------------------------------------------
    def _read(self, fn: Callable[[], Any]) -> Any:
        try:
            return _sdk_call(fn)
        except KubeStatusError as exc:
            if exc.status == 404:
                return None
            raise CheckError(f"HTTP {exc.status} {exc.reason or ''}".strip()) from None
        except KubeTransportError as exc:
            raise Unreachable(f"Kubernetes API unreachable: {exc.error}: {exc.text}") from None
        except ValueError as exc:   # a response the client's models reject
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()][:3]
            raise CheckError(f"unexpected response: {': '.join(lines)}") from None

    def get(self, obj: KubeObject) -> dict[str, Any] | None:
        typed = self._typed.get((obj.api_version, obj.kind))
        if typed is not None:
            model = self._read(lambda: typed(obj))
            return None if model is None else self._client.sanitize_for_serialization(model)
        if "/" not in obj.api_version:
            raise CheckError(f"no reader for core kind {obj.kind}")
        group, version = obj.api_version.split("/", 1)
        namespace = obj.namespace
        if namespace:
            fn = lambda: self._custom.get_namespaced_custom_object(  # noqa: E731
                group, version, namespace, plural(obj.kind), obj.name, **self._kw)
        else:
            fn = lambda: self._custom.get_cluster_custom_object(  # noqa: E731
                group, version, plural(obj.kind), obj.name, **self._kw)
        return self._read(fn)

    def helm_release(self, release: HelmRelease) -> dict[str, Any] | None:
        listing = self._read(lambda: self._core.list_namespaced_secret(
            release.namespace, label_selector=f"owner=helm,name={release.name}", **self._kw))
        if listing is None or not listing.items:
            return None
        newest = max(listing.items, key=lambda s: int((s.metadata.labels or {}).get("version", "0")))
        labels = newest.metadata.labels or {}
        return {"status": labels.get("status"), "revision": int(labels.get("version", "0"))}

    # -- the calls of the deploy backend --------------------------------------------------
    def read_deployment(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.sanitize_for_serialization(_sdk_call(
            lambda: self._apps.read_namespaced_deployment(name, namespace, **self._kw)))

    def list_replica_sets(self, namespace: str, label_selector: str | None) -> dict[str, Any]:
        return self._client.sanitize_for_serialization(_sdk_call(
            lambda: self._apps.list_namespaced_replica_set(namespace, label_selector=label_selector,
                                                           **self._kw)))

    def patch_deployment(self, namespace: str, name: str, ops: list[dict[str, Any]]) -> None:
        _sdk_call(lambda: self._apps.patch_namespaced_deployment(name, namespace, ops, _content_type=JSON_PATCH,
                                                                 **self._kw))

    def patch_replica_set(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        _sdk_call(lambda: self._apps.patch_namespaced_replica_set(name, namespace, patch,
                                                                  _content_type=MERGE_PATCH, **self._kw))

    def get_service_proxy(self, namespace: str, service: str, path: str) -> None:
        _sdk_call(lambda: self._core.connect_get_namespaced_service_proxy_with_path(
            service, namespace, path, **self._kw))
