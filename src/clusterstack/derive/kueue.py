"""Kueue's queue layout as pure data: the Topologies a stack declares and its ClusterQueue(s).

The flavors and their quota come from :func:`clusterstack.derive.derive_kueue_quota`; this
module arranges them into ClusterQueues (one today; the shape allows several sharing one
cohort, each listing the flavors it may use) and names the Topologies those flavors bind.
Components declare exactly what these functions return (components/coreweave/kueue.py).

Sources: kubernetes-sigs/kueue v0.14.4 — the ClusterQueue CRD (``namespaceSelector``: "An
empty selector matches all namespaces"; ``resourceGroups``; ``cohort``), the Topology CRD
(``levels``, immutable: CEL ``self == oldSelf``), and the scheduler rules cited at each field.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.config.cluster import ClusterConfig
from clusterstack.derive import (
    DEFAULT_CONVENTIONS,
    HOSTNAME_LABEL,
    TOPOLOGY_LEVELS,
    FlavorQuota,
    KueueQuotaSpec,
    NodePoolSpec,
    derive_kueue_quota,
    derive_nodepools,
    topology_levels,
)
from clusterstack.errors import FieldError
from clusterstack.workspace.model import Conventions


@dataclass(frozen=True)
class TopologySpec:
    """One Kueue Topology: ``name`` and its ``levels`` (node-label keys, broadest first,
    ``kubernetes.io/hostname`` last). ``bound``: some flavor of this stack names it in
    ``topologyName`` (the others are declared only with ``[conventions] kueue_all_topologies``)."""

    name: str
    levels: tuple[str, ...]
    bound: bool


@dataclass(frozen=True)
class ClusterQueueSpec:
    """One ClusterQueue.

    ``flavors`` in the order Kueue tries them (flavorassigner.go ``findFlavorForPodSets``: the
    first flavor that fits wins). ``namespace``: the one namespace its ``namespaceSelector``
    matches (by ``kubernetes.io/metadata.name``, set by the API server on every Namespace), or
    None for every namespace (``{}``). ``cohort``: the cohort it borrows in (None: none).
    """

    name: str
    flavors: tuple[FlavorQuota, ...]
    namespace: str | None
    cohort: str | None = None
    # --- a team's queue (derive/teams.py); the defaults leave a cluster's one queue unchanged ---
    namespaces: tuple[str, ...] = ()      # the namespaces it matches (kubernetes.io/metadata.name In)
    labels: tuple[tuple[str, str], ...] = ()   # metadata.labels ([conventions] team_label → team)
    # (flavor, resource, borrowingLimit, lendingLimit), None where unlimited (CRD L392-420)
    limits: tuple[tuple[str, str, int | str | None, int | str | None], ...] = ()
    fair_sharing_weight: str | None = None     # spec.fairSharing.weight (a Quantity as text)
    # (withinClusterQueue, reclaimWithinCohort); None: the cluster queue's default
    preemption: tuple[str, str] | None = None

    @property
    def tas_only(self) -> bool:
        """Every flavor names a Topology: Kueue's ``isTASOnly`` (pkg/cache/scheduler/
        clusterqueue.go L627-636), the condition under which a PodSet without a topology
        annotation gets TAS implied (tas_flavorassigner.go L165-168)."""
        return all(f.topology is not None for f in self.flavors)

    def namespace_selector(self) -> dict:
        """The ``spec.namespaceSelector`` object."""
        if self.namespaces:
            return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                          "values": list(self.namespaces)}]}
        if self.namespace is None:
            return {}
        return {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}}


def derive_topologies(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                      quota: KueueQuotaSpec | None = None) -> tuple[TopologySpec, ...]:
    """The Topologies of a CoreWeave stack: the ones its flavors bind (the GPU topology
    ``provisioning.coreweave.kueue.flavor_topology`` first, then the CPU topology), then — with
    ``[conventions] kueue_all_topologies`` — every other one of :data:`TOPOLOGY_LEVELS` (Marin
    declares both: infra/pulumi/src/iac/coreweave/kueue.py@28d310ae). Raises FieldError as
    :func:`derive_kueue_quota` does; ``quota``: its result, when derived already."""
    cw = cfg.provisioning.coreweave
    assert cw is not None
    bound: list[str] = []
    for f in (derive_kueue_quota(cfg, conventions) if quota is None else quota).flavors:
        if f.topology is not None and f.topology not in bound:
            bound.append(f.topology)
    gpu = cw.kueue.flavor_topology
    ordered = sorted(bound, key=lambda t: (t != gpu, t))
    out = [TopologySpec(t, topology_levels(t, conventions), True) for t in ordered]
    if conventions.kueue_all_topologies:
        out += [TopologySpec(t, topology_levels(t, conventions), False) for t in TOPOLOGY_LEVELS
                if t not in bound]
    return tuple(out)


def check_topology_pools(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                         pools: tuple[NodePoolSpec, ...] | None = None) -> None:
    """Every NodePool under a topology-aware flavor (all of them: :func:`derive_kueue_quota`)
    meets the two rules of :func:`_check_pool`. Raises FieldError at the field to fix
    (``scale_groups.<group>`` or ``scale_groups.<group>.buffer_slices``); run by ``validate``
    and ``plan`` (:func:`clusterstack.derive.cluster.derive_cluster`). ``pools``: the stack's
    :func:`derive_nodepools`, when derived already."""
    cw = cfg.provisioning.coreweave
    assert cw is not None
    single = conventions.kueue_queue_layout == "single-tas-flavor"
    for pool in derive_nodepools(cfg, conventions) if pools is None else pools:
        _check_pool(cfg, pool, conventions, cw.kueue.flavor_topology if (pool.gpu or single)
                    else conventions.kueue_cpu_topology)


def _check_pool(cfg: ClusterConfig, pool: NodePoolSpec, conventions: Conventions,
                topology: str | None) -> None:
    """The rules a pool under a topology-aware flavor must meet (FieldError at the field to fix).

    1. Its nodes carry every level of the flavor's Topology, or TAS never lists them (kueue
       v0.14.4 pkg/cache/scheduler/tas_flavor.go L107-113: ``client.HasLabels(levels)``). A GPU
       pool's fabric, leafgroup and NVLink-domain labels are CoreWeave's own (set on every
       InfiniBand / NVL72 node); a CPU pool under the GPU Topology (single-flavor layout) needs
       them from ``[conventions] cpu_pool_topology_labels``.
       Refused unless ``[conventions] tas_invisible_pools = "allow"``.
    2. It does not autoscale, unless ``[conventions] tas_autoscaled_pools = "allow"``: TAS
       places pods only on existing Ready nodes (same lines: ``ReadyNode``/``SchedulableNode``
       field selectors) and keeps the rest gated, so the cluster autoscaler never sees an
       unschedulable pod and nodes above ``minNodes`` are never delivered.
    """
    if topology is None:
        return
    if not pool.gpu and conventions.tas_invisible_pools == "refuse":
        carried = dict(pool.node_labels)
        missing = [lvl for lvl in topology_levels(topology, conventions)
                   if lvl != HOSTNAME_LABEL and lvl not in carried]
        if missing:
            raise FieldError(("scale_groups", pool.scale_group),
                             f"CPU NodePool {pool.name} would be invisible to Kueue's topology-aware "
                             f"flavor: its nodes lack the Topology {topology!r} level label(s) "
                             f"{', '.join(missing)}, and TAS lists only nodes carrying every level "
                             "(kueue v0.14.4 pkg/cache/scheduler/tas_flavor.go L107-113)",
                             "set [conventions] cpu_pool_topology_labels in clusterstack.toml to a "
                             "value for each of those labels, or use kueue_queue_layout = "
                             "\"tas-flavors\" (CPU flavors on a hostname-only Topology), or accept "
                             "it with tas_invisible_pools = \"allow\"")
    if pool.autoscaled and conventions.tas_autoscaled_pools == "refuse":
        raise FieldError(("scale_groups", pool.scale_group, "buffer_slices"),
                         f"NodePool {pool.name} autoscales {pool.min_nodes} → {pool.max_nodes} "
                         "nodes, but its Kueue flavor is topology-aware: TAS places pods only on "
                         "nodes that already exist and keeps the rest gated, so the autoscaler "
                         f"never sees a pending pod and nodes above {pool.min_nodes} are never "
                         "delivered (kueue v0.14.4 pkg/cache/scheduler/tas_flavor.go L107-113)",
                         f"pin the pool: buffer_slices = max_slices ({cfg.scale_groups[pool.scale_group].max_slices}), "
                         "or accept it with [conventions] tas_autoscaled_pools = \"allow\"")


def derive_cluster_queues(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                          quota: KueueQuotaSpec | None = None) -> tuple[ClusterQueueSpec, ...]:
    """The ClusterQueue(s) of a CoreWeave stack: today one, ``kubernetes_provider.kueue
    .cluster_queue``, over every flavor of :func:`derive_kueue_quota`, matching the workload
    namespace or every namespace (``[conventions] cluster_queue_namespaces``). Raises
    FieldError as :func:`derive_kueue_quota` does; ``quota``: its result, when derived already."""
    kueue = cfg.kubernetes_provider.kueue
    assert kueue is not None
    ns = None if conventions.cluster_queue_namespaces == "all" else cfg.kubernetes_provider.namespace
    if quota is None:
        quota = derive_kueue_quota(cfg, conventions)
    return (ClusterQueueSpec(name=kueue.cluster_queue, flavors=quota.flavors,
                             namespace=ns),)
