"""The one way a CoreWeave stack declares a Helm release (Kueue, cert-manager, Traefik).

pulumi-kubernetes ``helm.sh/v3:Release`` (provider/pkg/provider/helm_release.go, read at
pulumi/pulumi-kubernetes@94977969, the SDK pinned in uv.lock is 4.34.2): an install waits for
every resource of the chart to be ready (``client.Wait = !SkipAwait``, L608) for ``timeout``
seconds (``getTimeoutOrDefault``, L1766-1770: 300 when unset; ``setDefaults`` fills the input in
at check time, L433-440, so an omitted timeout and ``timeout: 300`` are the same checked input)
and, with ``atomic``, uninstalls itself when that wait fails (L618). The release's pods need a
node: on a fresh cluster none exists until a NodePool delivers its bare-metal nodes, so every
release depends explicitly on the system pool (:func:`clusterstack.derive.system_pool`): an
explicit ``depends_on`` of its own, because a parent's ``depends_on`` is not a dependency of its
children (Pulumi Python SDK ``runtime/resource.py`` ``prepare_resource``: a resource's
dependencies are its own ``depends_on`` and property dependencies only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.derive import ChartPlacement, HelmChart
from clusterstack.pulumi import importids as ids

#: helm_release.go L64 ``defaultTimeoutSeconds``: what an omitted ``timeout`` means.
PROVIDER_DEFAULT_TIMEOUT = 300


def release(name: str, chart: HelmChart, values: Mapping[str, Any], *, opts: pulumi.ResourceOptions,
            after: Sequence[pulumi.Resource] = ()) -> k8s.helm.v3.Release:
    """A Helm release under the logical ``name``: release name, namespace, chart source,
    ``atomic`` and ``timeout`` from ``chart`` (the conventions), created in its own namespace,
    depending on ``after`` (the system pool, and whatever else must exist first).

    ``atomic`` is declared only when true and ``timeout`` only when it is not the provider's
    default: an omitted input and its default are one checked input (L433-440), and a lab
    whose program declares neither (Marin's, infra/pulumi/src/iac/coreweave/traefik.py@6019f395)
    keeps exactly its inputs."""
    extra: dict[str, Any] = {}
    if chart.atomic:
        extra["atomic"] = True
    if chart.timeout != PROVIDER_DEFAULT_TIMEOUT:
        extra["timeout"] = chart.timeout
    if chart.repo:
        extra["repository_opts"] = {"repo": chart.repo}
    if values:   # no values: no input at all, as a program passing none (Marin's traefik.py@9865fe73)
        extra["values"] = dict(values)
    r = k8s.helm.v3.Release(
        name, name=chart.release, chart=chart.chart, version=chart.version, namespace=chart.namespace,
        create_namespace=True, **extra,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(after))))
    ids.importable(r, ids.helm_release(chart.namespace, chart.release))
    return r


def pdb(placement: ChartPlacement) -> dict[str, Any]:
    """A chart's ``podDisruptionBudget`` value when the placement asks for one (minAvailable 1:
    a voluntary eviction never takes the last replica of a fail-closed webhook)."""
    return {"enabled": True, "minAvailable": 1}


def spread(pod_labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """A ``topologySpreadConstraints`` value spreading the replicas whose pods carry
    ``pod_labels`` over nodes: one node's failure then takes one replica, not both (Kubernetes
    "Pod Topology Spread Constraints": ``maxSkew`` 1 over ``kubernetes.io/hostname``;
    ``ScheduleAnyway``, so a pool with one warm node still runs them all on the first ``up``)."""
    return [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": dict(pod_labels)}}]


def placed(values: dict[str, Any], placement: ChartPlacement, *, selector_at: Sequence[Sequence[str]],
           replicas_at: Sequence[str] | None, pdb_at: Sequence[str] | None,
           spread_at: tuple[Sequence[str], Mapping[str, str]] | None = None) -> dict[str, Any]:
    """``values`` with the placement written at the chart's own keys: the node selector under
    each path of ``selector_at`` (``nodeSelector`` appended), the replica count at
    ``replicas_at``, the PodDisruptionBudget at ``pdb_at`` and, ``spread_at`` = (path, the
    replicated pods' labels as the chart renders them), :func:`spread` at that path (the last
    three only with 2+ replicas: 1 is every chart's default). Paths are the chart's value keys,
    cited by the caller."""
    def put(path: Sequence[str], value: Any) -> None:
        node = values
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    if placement.node_selector:
        for path in selector_at:
            put((*path, "nodeSelector"), dict(placement.node_selector))
    if placement.pdb:
        if replicas_at is not None:
            put(tuple(replicas_at), placement.replicas)
        if pdb_at is not None:
            put(tuple(pdb_at), pdb(placement))
        if spread_at is not None:
            put(tuple(spread_at[0]), spread(spread_at[1]))
    return values
