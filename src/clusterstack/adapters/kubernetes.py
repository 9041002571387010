"""The Kubernetes adapter: the one kubeconfig loader and the one retry rule, building the official
``kubernetes`` client for a context.

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
from typing import Any

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


def api_client(context: str, *, config_file: str | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for ``context`` (see :func:`configuration`). Raises
    KubeconfigError."""
    from kubernetes import client

    return client.ApiClient(configuration(context, config_file=config_file))



def typed_api(api_client: Any, name: str) -> Any:
    """``kubernetes.client.<name>(api_client)`` — the client's typed API group (``"CoreV1Api"``,
    ``"AppsV1Api"``, ``"CustomObjectsApi"``, …) over ``api_client`` (:func:`api_client`); the
    SDK is imported here, on first use, never by a feature module."""
    from kubernetes import client

    return getattr(client, name)(api_client)


def api_exception() -> type[Exception]:
    """The client's ``ApiException`` (``.status``, ``.reason``, ``.body``), for an ``except``
    clause: ``except api_exception() as exc`` (evaluated only when something was raised)."""
    from kubernetes.client.exceptions import ApiException

    return ApiException
