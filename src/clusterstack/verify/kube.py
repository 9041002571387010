"""Read-only Kubernetes lookups for ``clusterstack verify``, through the official client.

:class:`KubeReader` is the seam (a fake only has to answer the same two questions);
:class:`KubernetesApi` implements it with ``kubernetes.client``: typed APIs for the core
kinds clusterstack declares (Namespace, ServiceAccount, ClusterRole/Binding, Ingress,
PriorityClass) and ``CustomObjectsApi`` for custom resources (NodePool, ResourceFlavor,
ClusterQueue, Topology, ClusterIssuer, Middleware). Helm releases are read the way Helm 3
stores them: Secrets in the release namespace labelled ``owner=helm,name=<release>``, one per
revision, whose ``status`` label is ``deployed`` for the live one (Helm "Storage backends").

Every call has a connect/read timeout; retries follow the one rule of
:mod:`clusterstack.adapters.kubernetes` (reads retried twice on a connection error). Errors:
404 → None; anything else → :class:`CheckError` (:class:`Unreachable` when no connection could
be made, so the caller stops asking this API).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from clusterstack.verify.model import CheckError, HelmRelease, KubeObject, Unreachable
from clusterstack.adapters.kubernetes import KubeconfigError, api_client, api_exception, typed_api


class KubeReader(Protocol):
    """Read one object (as the API's JSON dict) or None when it does not exist."""

    def get(self, obj: KubeObject) -> dict[str, Any] | None: ...

    def helm_release(self, release: HelmRelease) -> dict[str, Any] | None:
        """``{"status": str, "revision": int}`` of the newest revision, or None."""
        ...


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


class KubernetesApi:
    """:class:`KubeReader` over ``kubernetes.client.ApiClient``.

    ``timeout`` is urllib3's ``(connect, read)`` in seconds for every request.
    """

    def __init__(self, api_client: Any, *, timeout: tuple[float, float] = (5.0, 15.0)) -> None:
        self._client = api_client
        self._timeout = timeout
        self._core = typed_api(api_client, "CoreV1Api")
        self._rbac = typed_api(api_client, "RbacAuthorizationV1Api")
        self._net = typed_api(api_client, "NetworkingV1Api")
        self._sched = typed_api(api_client, "SchedulingV1Api")
        self._custom = typed_api(api_client, "CustomObjectsApi")
        # (apiVersion, kind) → typed read; its result is a model turned into the API's JSON.
        self._typed: dict[tuple[str, str], Callable[[KubeObject], Any]] = {
            ("v1", "Namespace"): lambda o: self._core.read_namespace(o.name, **self._kw),
            ("v1", "ServiceAccount"): lambda o: self._core.read_namespaced_service_account(
                o.name, o.namespace, **self._kw),
            # a Helm release's storage Secret (the adoption report reads the release's values)
            ("v1", "Secret"): lambda o: self._core.read_namespaced_secret(o.name, o.namespace, **self._kw),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"):
                lambda o: self._rbac.read_cluster_role(o.name, **self._kw),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
                lambda o: self._rbac.read_cluster_role_binding(o.name, **self._kw),
            ("networking.k8s.io/v1", "Ingress"):
                lambda o: self._net.read_namespaced_ingress(o.name, o.namespace, **self._kw),
            ("scheduling.k8s.io/v1", "PriorityClass"):
                lambda o: self._sched.read_priority_class(o.name, **self._kw),
        }

    @property
    def _kw(self) -> dict[str, Any]:
        return {"_request_timeout": self._timeout}

    @classmethod
    def from_kubeconfig(cls, context: str, *, config_file: str | None = None,
                        connect: Callable[[str], Any] | None = None,
                        timeout: tuple[float, float] = (5.0, 15.0)) -> "KubernetesApi":
        """Client for ``context`` of the ambient kubeconfig (``$KUBECONFIG`` or
        ``~/.kube/config``, as ``kubectl`` and the Pulumi provider use it at run time), built by
        ``connect`` (default: :func:`clusterstack.adapters.kubernetes.api_client`; the CLI
        passes ``Clients.kubernetes``). Raises CheckError when the file or context is missing."""
        connect = connect or (lambda ctx: api_client(ctx, config_file=config_file))
        try:
            return cls(connect(context), timeout=timeout)
        except KubeconfigError as exc:
            raise CheckError(exc.problems[0].message) from None

    def _call(self, fn: Callable[[], Any]) -> Any:
        from urllib3.exceptions import HTTPError as Urllib3Error

        try:
            return fn()
        except api_exception() as exc:
            if exc.status == 404:
                return None
            reason = exc.reason or ""
            raise CheckError(f"HTTP {exc.status} {reason}".strip()) from None
        except Urllib3Error as exc:
            raise Unreachable(f"Kubernetes API unreachable: {type(exc).__name__}: {exc}") from None
        except ValueError as exc:   # a response the client's models reject
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()][:3]
            raise CheckError(f"unexpected response: {': '.join(lines)}") from None

    def get(self, obj: KubeObject) -> dict[str, Any] | None:
        typed = self._typed.get((obj.api_version, obj.kind))
        if typed is not None:
            model = self._call(lambda: typed(obj))
            return None if model is None else self._client.sanitize_for_serialization(model)
        if "/" not in obj.api_version:
            raise CheckError(f"no reader for core kind {obj.kind}")
        group, version = obj.api_version.split("/", 1)
        if obj.namespace:
            fn = lambda: self._custom.get_namespaced_custom_object(  # noqa: E731
                group, version, obj.namespace, plural(obj.kind), obj.name, **self._kw)
        else:
            fn = lambda: self._custom.get_cluster_custom_object(  # noqa: E731
                group, version, plural(obj.kind), obj.name, **self._kw)
        return self._call(fn)

    def helm_release(self, release: HelmRelease) -> dict[str, Any] | None:
        listing = self._call(lambda: self._core.list_namespaced_secret(
            release.namespace, label_selector=f"owner=helm,name={release.name}", **self._kw))
        if listing is None or not listing.items:
            return None
        newest = max(listing.items, key=lambda s: int((s.metadata.labels or {}).get("version", "0")))
        labels = newest.metadata.labels or {}
        return {"status": labels.get("status"), "revision": int(labels.get("version", "0"))}
