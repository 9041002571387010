"""Every spec a CoreWeave stack declares, derived together and once: :func:`derive_cluster`.

The NodePools come first and every other spec is computed from them (the Kueue flavors and
their quota from the pools, the ClusterQueue(s) and Topologies from the flavors, the teams
from both, the system pool and the charts' placement from the pools), so one call runs
:func:`clusterstack.derive.derive_nodepools` once. :func:`clusterstack.validation.load_cluster`
calls it when it loads a cluster (a bad scale group is a located error at load time) and keeps
the result; the program declares from that result (:mod:`clusterstack.programs.cluster`), so
what was validated is what is declared, derived once per load.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.config.cluster import ClusterConfig
from clusterstack.derive import (DEFAULT_CONVENTIONS, ChartPlacement, KueueQuotaSpec, NodePoolSpec,
                                 chart_placement, derive_kueue_quota, derive_nodepools, system_pool,
                                 workload_namespace)
from clusterstack.derive.kueue import (ClusterQueueSpec, TopologySpec, check_topology_pools,
                                       derive_cluster_queues, derive_topologies)
from clusterstack.derive.teams import TeamsSpec, check_reservations, derive_teams
from clusterstack.workspace.model import Conventions


@dataclass(frozen=True)
class ClusterSpecs:
    """The derived specs of one CoreWeave stack, each from its ``derive`` function.

    ``namespace``: :func:`~clusterstack.derive.workload_namespace`; ``nodepools``:
    :func:`~clusterstack.derive.derive_nodepools` (sorted by scale group); ``quota``:
    :func:`~clusterstack.derive.derive_kueue_quota`; ``cluster_queues``:
    :func:`~clusterstack.derive.kueue.derive_cluster_queues`; ``topologies``:
    :func:`~clusterstack.derive.kueue.derive_topologies`; ``teams``:
    :func:`~clusterstack.derive.teams.derive_teams` (None without teams); ``system``:
    :func:`~clusterstack.derive.system_pool`; ``placement``:
    :func:`~clusterstack.derive.chart_placement`."""

    namespace: str
    nodepools: tuple[NodePoolSpec, ...]
    quota: KueueQuotaSpec
    cluster_queues: tuple[ClusterQueueSpec, ...]
    topologies: tuple[TopologySpec, ...]
    teams: TeamsSpec | None
    system: NodePoolSpec
    placement: ChartPlacement

    @property
    def cluster_queue(self) -> ClusterQueueSpec:
        """The cluster's own ClusterQueue as declared: the teams' remainder queue when the
        stack has teams, else the one of :attr:`cluster_queues`."""
        return self.teams.cluster_queue if self.teams is not None else self.cluster_queues[0]


def derive_cluster(cfg: ClusterConfig,
                   conventions: Conventions = DEFAULT_CONVENTIONS) -> ClusterSpecs | None:
    """:class:`ClusterSpecs` of a CoreWeave stack with the workspace's ``[conventions]``; None
    for a GCP stack (it declares no NodePool). The rules run in this order, so the first
    FieldError raised is the same whichever command loads the file: the workload namespace,
    the NodePools, the flavors' quota, the pools under topology-aware flavors, the teams, the
    reservations, the system pool. Raises FieldError (the config path to fix)."""
    if cfg.provisioning.provider != "coreweave":
        return None
    namespace = workload_namespace(cfg, conventions)
    pools = derive_nodepools(cfg, conventions)
    quota = derive_kueue_quota(cfg, conventions, pools=pools)
    check_topology_pools(cfg, conventions, pools=pools)
    teams = derive_teams(cfg, conventions, pools=pools, quota=quota)
    check_reservations(cfg, conventions, pools=pools)
    system = system_pool(cfg, conventions, pools=pools)
    return ClusterSpecs(namespace=namespace, nodepools=pools, quota=quota,
                        cluster_queues=derive_cluster_queues(cfg, conventions, quota=quota),
                        topologies=derive_topologies(cfg, conventions, quota=quota), teams=teams,
                        system=system, placement=chart_placement(cfg, conventions, system=system))


__all__ = ["ClusterSpecs", "derive_cluster"]
