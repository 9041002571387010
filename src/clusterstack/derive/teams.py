"""Teams → Kueue objects, as pure data: one ClusterQueue per team in the cluster's cohort, one
LocalQueue per team namespace, the cluster's own queue holding what no team was given, and
whether Kueue's fair sharing is on. Components declare exactly what :func:`derive_teams`
returns (components/coreweave/teams.py); ``validate`` and ``plan`` run it once at load time
(:func:`clusterstack.validation.clusters.derive_all`), so every rule below is a ``file:line``
error with exit 2.

A cluster without ``provisioning.coreweave.teams`` gets None here and keeps its one
ClusterQueue exactly as before (:func:`clusterstack.derive.kueue.derive_cluster_queues`).

Quota (per team, per flavor; a flavor is named by its ResourceFlavor name or by the scale group
whose NodePool it covers):

- ``gpu`` → ``nvidia.com/gpu``, and ``rdma/ib`` as many (one per GPU: the fleet's rule,
  :func:`clusterstack.derive.derive_kueue_quota`); ``cpu`` → ``cpu``; ``memory`` → ``memory``.
- A resource the team leaves out gets the team's share of the flavor — share = its GPUs over the
  flavor's GPUs (a CPU flavor: its CPUs over the flavor's CPUs), rounded down — because Kueue
  admits a workload only when every resource it requests fits the flavor's quota
  (flavorassigner.go ``fitsResourceQuota`` L908-938 at v0.14.4), and every pod requests cpu and
  memory: a team given GPUs but 0 CPUs would run nothing.
- A flavor's ``[conventions] kueue_fixed_quota`` resources keep their fixed value in every queue.

Rules (each a FieldError at the field to change):

1. a quota key is a flavor or a scale group with a NodePool of this cluster ("a flavor the
   cluster lacks"); two keys naming one flavor are refused; a GPU flavor needs ``gpu``, a CPU
   flavor ``cpu`` (the share is taken from it);
2. Σ of the teams' nominal quota per flavor and resource ≤ the fleet's
   (:func:`clusterstack.derive.derive_kueue_quota`: nodes × per node), unless ``overcommit:
   true``; Kueue sums nominal quotas in a cohort (pkg/cache/scheduler/resource_node.go
   ``accumulateFromChild`` L210-218), so a larger sum admits pods that find no node;
3. ``lending_limit`` ≤ the nominal quota (Kueue's webhook ``validateLendingLimit``,
   pkg/webhooks/clusterqueue_webhook.go L266-273: "must be less than or equal to the
   nominalQuota"); limits only with a cohort (CRD rule "borrowingLimit must be nil when cohort is
   empty", kueue.x-k8s.io_clusterqueues.yaml L495-497) — every team queue has one here;
4. a team namespace is not a Kubernetes system namespace, the namespace of a Helm release of the
   stack, the cluster's own workload namespace (``kubernetes_provider.namespace``), nor another
   team's (each is one Namespace object with one owner and one LocalQueue per team);
5. team names and their ClusterQueue names are unique and none is the cluster's own queue.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.teams import TEAM_RESOURCES, ResourceQuota, Team, Teams
from clusterstack.config.types import quantity_bytes
from clusterstack.derive import (
    DEFAULT_CONVENTIONS,
    GPU_RESOURCE,
    HELM_RELEASES,
    KUBERNETES_SYSTEM_NAMESPACES,
    MEMORY_RESOURCE,
    RDMA_RESOURCE,
    STORAGE_RESOURCE,
    FlavorQuota,
    KueueQuotaSpec,
    NodePoolSpec,
    bytes_quantity,
    derive_kueue_quota,
    derive_nodepools,
    helm_chart,
)
from clusterstack.derive.kueue import ClusterQueueSpec, derive_cluster_queues
from clusterstack.errors import FieldError
from clusterstack.workspace.model import Conventions

_TEAMS = ("provisioning", "coreweave", "teams")
_BYTES = (MEMORY_RESOURCE, STORAGE_RESOURCE)


@dataclass(frozen=True)
class LocalQueueSpec:
    """A LocalQueue ``name`` in ``namespace`` naming ClusterQueue ``cluster_queue``."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class TeamsSpec:
    """What a cluster with teams declares besides the fleet's flavors.

    ``queues``: one ClusterQueue per team (declared order), each in ``cohort``; ``cluster_queue``:
    the cluster's own queue (``kubernetes_provider.kueue.cluster_queue``) in the same cohort
    with the quota no team was given (0 where the teams took all; it borrows the rest);
    ``local_queues``: one per team namespace; ``namespaces``: every team namespace (declared
    as Namespace objects by the stack); ``fair_sharing``: Kueue's Configuration
    ``fairSharing.enable``; ``teams``: team name → its ClusterQueue name."""

    cohort: str
    queues: tuple[ClusterQueueSpec, ...]
    cluster_queue: ClusterQueueSpec
    local_queues: tuple[LocalQueueSpec, ...]
    namespaces: tuple[str, ...]
    fair_sharing: bool
    teams: tuple[tuple[str, str], ...]


def _amount(resource: str, value: int | str) -> int:
    return quantity_bytes(str(value)) if resource in _BYTES else int(value)


def _quantity(resource: str, n: int) -> int | str:
    return bytes_quantity(n) if resource in _BYTES else n


def flavor_keys(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                pools: tuple[NodePoolSpec, ...] | None = None,
                quota: KueueQuotaSpec | None = None) -> dict[str, str]:
    """Every name a team's quota may use for a flavor → the flavor: each ResourceFlavor's own
    name, and each scale group with a NodePool → the flavor covering its nodes (its own
    ``[conventions] resource_flavor``, or the shared CPU/GPU/TAS flavor). ``pools``,
    ``quota``: the stack's :func:`derive_nodepools` and :func:`derive_kueue_quota`, when
    derived already."""
    if pools is None:
        pools = derive_nodepools(cfg, conventions)
    if quota is None:
        quota = derive_kueue_quota(cfg, conventions, pools=pools)
    flavors = {f.name for f in quota.flavors}
    keys = {f: f for f in sorted(flavors)}
    prefix = cfg.platform.label_prefix
    for pool in pools:
        if conventions.kueue_queue_layout == "single-tas-flavor":
            name = conventions.tas_resource_flavor
        else:
            shared = conventions.gpu_resource_flavor if pool.gpu else conventions.cpu_resource_flavor
            name = shared or conventions.name("resource_flavor", prefix=prefix, pool=pool.name)
        if name in flavors:
            keys.setdefault(pool.scale_group, name)
    return keys


def _resolve(team_at: tuple, key: str, keys: dict[str, str]) -> str:
    if key not in keys:
        raise FieldError((*team_at, "quota", key),
                         f"{key!r} is neither a scale group with a NodePool nor a Kueue flavor of this cluster",
                         f"name one of: {', '.join(sorted(keys))}")
    return keys[key]


def _team_quotas(team: Team, at: tuple, flavor: FlavorQuota, given: ResourceQuota, key: str,
                 conventions: Conventions) -> dict[str, int]:
    """The team's nominal quota in ``flavor`` per covered resource, as integers (bytes)."""
    fleet = dict(flavor.quotas)
    primary = "gpu" if flavor.gpu else "cpu"
    if getattr(given, primary) is None:
        raise FieldError((*at, "quota", key), f"no {primary} quota for {'GPU' if flavor.gpu else 'CPU'} "
                         f"flavor {flavor.name}: the team's share of its other resources is taken from it",
                         f"add {primary}: <{'GPUs' if flavor.gpu else 'CPUs'}> under quota.{key}")
    whole = _amount(TEAM_RESOURCES[primary], fleet[TEAM_RESOURCES[primary]])
    share = Fraction(getattr(given, primary), whole) if whole else Fraction(0)
    out: dict[str, int] = {}
    for resource, total in flavor.quotas:
        if resource in conventions.kueue_fixed_quota:
            continue
        field = next((f for f, r in TEAM_RESOURCES.items() if r == resource), None)
        value = getattr(given, field) if field is not None else None
        if resource == RDMA_RESOURCE and flavor.gpu and given.gpu is not None:
            value = given.gpu              # one rdma/ib per GPU (derive_kueue_quota)
        if value is None:
            out[resource] = int(share * _amount(resource, total))
        else:
            out[resource] = _amount(resource, value)
    return out


def _limits(team: Team, at: tuple, keys: dict[str, str], nominal: dict[str, dict[str, int]]
            ) -> tuple[tuple[str, str, int | str | None, int | str | None], ...]:
    """(flavor, resource, borrowingLimit, lendingLimit) for every limited resource."""
    out: dict[tuple[str, str], list] = {}
    for which, table in (("borrowing_limit", team.borrowing_limit), ("lending_limit", team.lending_limit)):
        for key, limits in table.items():
            flavor = _resolve(at, key, keys)
            for field, resource in TEAM_RESOURCES.items():
                value = getattr(limits, field)
                if value is None:
                    continue
                n = _amount(resource, value)
                if which == "lending_limit" and n > nominal[flavor].get(resource, 0):
                    raise FieldError((*at, which, key, field),
                                     f"lending limit {value} exceeds the team's nominal {field} quota "
                                     f"{_quantity(resource, nominal[flavor].get(resource, 0))} in {flavor} "
                                     "(Kueue's webhook: \"must be less than or equal to the nominalQuota\", "
                                     "pkg/webhooks/clusterqueue_webhook.go L266-273 at v0.14.4)",
                                     f"lower it to at most the team's quota.{key}.{field}")
                slot = out.setdefault((flavor, resource), [None, None])
                slot[0 if which == "borrowing_limit" else 1] = _quantity(resource, n)
                if field == "gpu" and which == "borrowing_limit":
                    # rdma/ib follows the GPUs (one per GPU): borrowing GPUs borrows as many
                    out.setdefault((flavor, RDMA_RESOURCE), [None, None])[0] = n
                if field == "gpu" and which == "lending_limit":
                    out.setdefault((flavor, RDMA_RESOURCE), [None, None])[1] = n
    return tuple((f, r, b, lend) for (f, r), (b, lend) in sorted(out.items()))


def _check_namespaces(cfg: ClusterConfig, teams: Teams, conventions: Conventions) -> None:
    own = cfg.kubernetes_provider.namespace
    helm = {helm_chart(conventions, w).namespace: helm_chart(conventions, w).release for w in HELM_RELEASES}
    owner: dict[str, str] = {}
    for i, team in enumerate(teams.members):
        for j, ns in enumerate(team.namespaces):
            at = (*_TEAMS, "members", i, "namespaces", j)
            hint = f"give team {team.name} a namespace of its own, e.g. {team.name}"
            if ns in KUBERNETES_SYSTEM_NAMESPACES or ns.startswith("kube-"):
                raise FieldError(at, f"{ns!r} is a Kubernetes system namespace; a team's workloads "
                                 "and LocalQueue do not belong there", hint)
            if ns in helm:
                raise FieldError(at, f"{ns!r} is the namespace of the {helm[ns]} Helm release", hint)
            if ns == own:
                raise FieldError(at, f"{ns!r} is the cluster's own workload namespace "
                                 "(kubernetes_provider.namespace), whose LocalQueue feeds the cluster's "
                                 "queue, not a team's", hint)
            if ns in owner:
                raise FieldError(at, f"{ns!r} is already team {owner[ns]}'s namespace; one namespace "
                                 "has one team (one LocalQueue, one owner of the Namespace)", hint)
            owner[ns] = team.name


def derive_teams(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                 pools: tuple[NodePoolSpec, ...] | None = None,
                 quota: KueueQuotaSpec | None = None) -> TeamsSpec | None:
    """The teams layout of a CoreWeave stack (None without ``provisioning.coreweave.teams``).
    Raises FieldError at the field to change (module docstring, rules 1-5). ``pools``,
    ``quota``: the stack's :func:`derive_nodepools` and :func:`derive_kueue_quota`, when
    derived already."""
    cw = cfg.provisioning.coreweave
    teams = cw.teams if cw is not None else None
    if teams is None:
        return None
    if pools is None:
        pools = derive_nodepools(cfg, conventions)
    if quota is None:
        quota = derive_kueue_quota(cfg, conventions, pools=pools)
    base = derive_cluster_queues(cfg, conventions, quota=quota)[0]
    fleet = {f.name: f for f in quota.flavors}
    keys = flavor_keys(cfg, conventions, pools=pools, quota=quota)
    prefix = cfg.platform.label_prefix
    _check_namespaces(cfg, teams, conventions)
    used: dict[str, dict[str, int]] = {f: {} for f in fleet}
    names: dict[str, str] = {}
    queues: list[ClusterQueueSpec] = []
    local: list[LocalQueueSpec] = []
    label = conventions.name("team_label", prefix=prefix)
    for i, team in enumerate(teams.members):
        at = (*_TEAMS, "members", i)
        queue = conventions.name("team_cluster_queue", prefix=prefix, team=team.name)
        if team.name in names or queue in names.values() or queue == base.name:
            raise FieldError((*at, "name"), f"team {team.name!r} (ClusterQueue {queue!r}) is declared "
                             "twice or is the cluster's own queue", "give each team a name of its own")
        names[team.name] = queue
        nominal: dict[str, dict[str, int]] = {}
        for key, given in team.quota.items():
            flavor = _resolve(at, key, keys)
            if flavor in nominal:
                raise FieldError((*at, "quota", key), f"{key!r} names flavor {flavor}, which another "
                                 "key of this team's quota names too", "keep one key per flavor")
            nominal[flavor] = _team_quotas(team, at, fleet[flavor], given, key, conventions)
            stated = {TEAM_RESOURCES[f] for f in TEAM_RESOURCES if getattr(given, f) is not None}
            # the resources the team states first: an error names the figure it wrote
            for resource, n in sorted(nominal[flavor].items(), key=lambda rn: rn[0] not in stated):
                used[flavor][resource] = used[flavor].get(resource, 0) + n
                whole = _amount(resource, dict(fleet[flavor].quotas)[resource])
                if used[flavor][resource] > whole and not teams.overcommit:
                    field = next((f for f, r in TEAM_RESOURCES.items() if r == resource), None)
                    where = (*at, "quota", key, field) if field and getattr(given, field) is not None \
                        else (*at, "quota", key)
                    raise FieldError(where, f"the teams' {resource} quota in {flavor} adds up to "
                                     f"{_quantity(resource, used[flavor][resource])} (team {team.name} "
                                     f"{_quantity(resource, n)}), more than the fleet's "
                                     f"{_quantity(resource, whole)} (nodes × per node): Kueue would admit "
                                     "pods no node can hold",
                                     "lower the teams' quota to fit the fleet, add nodes, or declare "
                                     "overcommit: true under provisioning.coreweave.teams")
        flavors = []
        for f in fleet.values():   # the fleet's order: the order Kueue tries flavors in
            if f.name not in nominal:
                continue
            q = nominal[f.name]
            flavors.append(replace(f, quotas=tuple(
                (r, t) if r in conventions.kueue_fixed_quota else (r, _quantity(r, q[r])) for r, t in f.quotas)))
        queues.append(ClusterQueueSpec(
            name=queue, flavors=tuple(flavors), namespace=None, cohort=teams.cohort,
            namespaces=team.namespaces, labels=((label, team.name),),
            limits=_limits(team, at, keys, nominal),
            fair_sharing_weight=str(team.fair_sharing_weight) if teams.fair_sharing else None,
            preemption=(team.preemption.within_team, team.preemption.reclaim_from_cohort)))
        local += [LocalQueueSpec(ns, queue, queue) for ns in team.namespaces]
    rest = tuple(replace(f, quotas=tuple(
        (r, t) if r in conventions.kueue_fixed_quota
        else (r, _quantity(r, max(0, _amount(r, t) - used[f.name].get(r, 0)))) for r, t in f.quotas))
        for f in fleet.values())
    own = replace(base, flavors=rest, cohort=teams.cohort)
    return TeamsSpec(cohort=teams.cohort, queues=tuple(queues), cluster_queue=own,
                     local_queues=tuple(local),
                     namespaces=tuple(ns for t in teams.members for ns in t.namespaces),
                     fair_sharing=teams.fair_sharing, teams=tuple(names.items()))


__all__ = ["LocalQueueSpec", "TeamsSpec", "check_reservations", "derive_teams", "flavor_keys"]


def check_reservations(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                       pools: tuple[NodePoolSpec, ...] | None = None) -> None:
    """``provisioning.coreweave.reservations``: each names a scale group with a NodePool, and the
    pool's committed nodes — its warm nodes (``minNodes``, or every node of a rack-scale pool:
    :attr:`clusterstack.derive.NodePoolSpec.warm_nodes`), which the fleet keeps whether or not
    they run work — are at most the reservation's ``committed_nodes``: more would be billed
    outside the reservation, or never delivered by it. Raises FieldError. ``pools``: the
    stack's :func:`derive_nodepools`, when derived already."""
    cw = cfg.provisioning.coreweave
    if cw is None or not cw.reservations:
        return
    by_group = {p.scale_group: p for p in (derive_nodepools(cfg, conventions) if pools is None else pools)}
    for group, res in sorted(cw.reservations.items()):
        pool = by_group.get(group)
        if pool is None:
            raise FieldError(("provisioning", "coreweave", "reservations", group),
                             f"{group!r} is not a scale group with a NodePool",
                             f"name one of: {', '.join(sorted(by_group)) or '(none)'}")
        if pool.warm_nodes > res.committed_nodes:
            raise FieldError(("scale_groups", group, "buffer_slices"),
                             f"NodePool {pool.name} commits {pool.warm_nodes} nodes, more than the "
                             f"{res.committed_nodes} of reservation {res.id} (ends {res.ends.isoformat()})",
                             f"keep at most {res.committed_nodes} warm nodes, or raise "
                             f"provisioning.coreweave.reservations.{group}.committed_nodes once the "
                             "reservation holds more")
