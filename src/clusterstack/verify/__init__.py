"""Preflight: does every resource a cluster's stack owns exist, and is it the declared one?

``verify_prerequisites(cluster)`` plans the stack offline (the same program and specs as
``up``, see :mod:`clusterstack.verify.expect`), then looks each declared resource up —
read-only — on CoreWeave through the Kubernetes API (:class:`clusterstack.adapters.kubernetes.KubeApi`)
and on GCP through the Compute Engine and Artifact Registry APIs
(:class:`clusterstack.adapters.gcp.ComputeApi`).
Tools that depend on provisioned resources call it instead of creating them; the CLI is
``clusterstack verify CLUSTER [--json]`` (exit 0 ok, 4 missing/different, 1 could not check,
2 bad config).

Bounded: one lookup per declared resource (each with a timeout; Kubernetes reads retried by
the one rule of :mod:`clusterstack.adapters.kubernetes`, GCP calls not at all), and after an API
proves unreachable the remaining lookups to it are reported, not attempted. The APIs are those
of the run's :class:`~clusterstack.clients.Clients` (``kubernetes`` for the kube context,
``gcp`` for Compute Engine and Artifact Registry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from clusterstack.adapters.gcp import ComputeApi, GoogleCompute
from clusterstack.adapters.kubernetes import KubeApi, KubernetesApi
from clusterstack.clients import Clients
from clusterstack.verify.expect import expectations, rule_for
from clusterstack.verify.model import (EXIT_MISSING, EXIT_OK, EXIT_UNVERIFIED, CheckError, Diff,
                                       Expected, Finding, GcpObject, HelmRelease, KubeObject,
                                       NegMember, Unreachable, VerifyReport)
from clusterstack.workspace import Workspace
from clusterstack.plan import plan_stack
from clusterstack.validation import load_cluster

__all__ = ["EXIT_MISSING", "EXIT_OK", "EXIT_UNVERIFIED", "Finding", "VerifyReport",
           "check_expectations", "verify_prerequisites"]


class _Connect:
    """Builds a reader on first use. Once building it failed or its API proved unusable
    (:class:`Unreachable`), every further lookup is answered with that message, unasked."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory, self._reader, self.down = factory, None, None

    def reader(self) -> Any:
        if self.down is not None:
            raise Unreachable(self.down)
        if self._reader is None:
            try:
                self._reader = self._factory()
            except CheckError as exc:
                self.down = str(exc)
                raise Unreachable(self.down) from None
        return self._reader


def _compare(e: Expected, live: dict[str, Any]) -> tuple[Diff, ...]:
    rule = rule_for(e.type)
    assert rule is not None
    actual = rule.fields(live)
    return tuple(Diff(k, v, actual.get(k)) for k, v in e.declared if actual.get(k) != v)


def _check_one(e: Expected, kube: _Connect, gcp: _Connect) -> Finding:
    def finding(state, diffs=(), message=""):
        return Finding(state, e.type, e.name, e.ref, tuple(diffs), message)

    if e.lookup is None:
        return finding("skipped", message=e.reason)
    conn = kube if isinstance(e.lookup, (KubeObject, HelmRelease)) else gcp
    try:
        reader = conn.reader()
        if isinstance(e.lookup, KubeObject):
            live = reader.get(e.lookup)
        elif isinstance(e.lookup, HelmRelease):
            live = reader.helm_release(e.lookup)
        elif isinstance(e.lookup, GcpObject):
            live = reader.get(e.lookup)
        else:
            assert isinstance(e.lookup, NegMember)
            members = reader.neg_endpoints(e.lookup)
            if members is None:
                return finding("missing", message=f"network endpoint group {e.lookup.neg} does not exist")
            live = next((m for m in members
                         if str(m.get("instance", "")).rsplit("/", 1)[-1] == e.lookup.instance
                         and m.get("port") == e.lookup.port), None)
    except Unreachable as exc:
        conn.down = str(exc)
        return finding("error", message=str(exc))
    except CheckError as exc:
        return finding("error", message=str(exc))
    if live is None:
        return finding("missing", message="does not exist")
    diffs = _compare(e, live)
    return finding("different", diffs) if diffs else finding("ok")


def check_expectations(cluster: str, expected: tuple[Expected, ...], *,
                       kube: Callable[[], KubeApi], gcp: Callable[[], ComputeApi]) -> VerifyReport:
    """Look every expectation up, in order. ``kube``/``gcp`` build a reader (raising
    CheckError when they cannot); each is called at most once, and only when an expectation
    needs it."""
    k, g = _Connect(kube), _Connect(gcp)
    return VerifyReport(cluster, tuple(_check_one(e, k, g) for e in expected))


def verify_prerequisites(cluster: str, *, workspace: Workspace | None = None,
                         kube: KubeApi | None = None, gcp: ComputeApi | None = None,
                         timeout: float = 15.0, clients: Clients | None = None) -> VerifyReport:
    """Check, read-only, that every resource ``cluster``'s stack owns exists and matches.

    ``workspace`` defaults to the one around the working directory. ``kube``/``gcp`` default
    to the APIs of ``clients`` (default: :meth:`Clients.production`): the kube context of
    ``platform.coreweave.kube_context`` (``clients.kubernetes``: the ambient kubeconfig) and
    ``clients.gcp`` (Application Default Credentials). ``timeout`` is seconds per API call.
    Returns the report (``report.ok``, ``report.exit_code``, ``report.fix``); raises
    ConfigError for an invalid config (exit 2), never for a missing or unreachable resource.
    """
    ws = workspace or Workspace.discover(Path.cwd())
    clients = clients or Clients.production()
    cfg = load_cluster(ws, cluster).config
    plan = plan_stack(ws.project_dir, cluster)

    def make_kube() -> KubeApi:
        if cfg.platform.coreweave is None:
            raise CheckError("the cluster has no platform.coreweave.kube_context")
        return KubernetesApi.from_kubeconfig(cfg.platform.coreweave.kube_context, connect=clients.kubernetes,
                                             timeout=(min(5.0, timeout), timeout))

    return check_expectations(cluster, expectations(plan),
                              kube=(lambda: kube) if kube is not None else make_kube,
                              gcp=(lambda: gcp) if gcp is not None else (lambda: GoogleCompute(clients.gcp, timeout=timeout)))
