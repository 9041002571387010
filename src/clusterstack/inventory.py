"""Capacity: what a plan gives the fleet — nodes, racks and GPUs per pool, GPU quota per queue —
and a capacity change said in words. Pure functions over :class:`~clusterstack.plan.model.StackPlan`
resources, so an offline plan, a plan at a git ref and a plan diff all read the same facts.

Where each number comes from (the declared objects, not the reviewed file, so the numbers are
what would be applied):
- a CoreWeave ``NodePool``'s ``spec``: ``maxNodes`` of an autoscaled pool (the envelope;
  ``minNodes`` the warm nodes), or ``targetRacks`` × the rack size of the instance type
  (:func:`clusterstack.config.instances.rack_size`, 18 for NVL72) for rack-scale pools, which carry
  no envelope (:func:`clusterstack.derive.derive_nodepools`), or ``targetNodes`` of a pool
  without ``autoscaling: true`` (``autoscaling`` defaults to false and min/max then bound
  nothing — CoreWeave CKS "Node Pool reference", transcribed in
  ``tests/schemas/nodepools.compute.coreweave.com.crd.yaml``): what a state file of a pool
  adopted as it was deployed can record, though this tool's plans always autoscale;
- GPUs per node: the pool's Kueue flavor ``<NodePool>-flavor`` in the ClusterQueue, whose
  ``nvidia.com/gpu`` nominal quota is nodes × GPUs per node
  (:func:`clusterstack.derive.derive_kueue_quota`); without one (pools under a shared flavor),
  the GPUs per node of the instance type (:func:`clusterstack.config.instances.instance_type`);
- the quota per queue: Σ ``nvidia.com/gpu`` nominal quota over the ClusterQueue's flavors; a
  team's queue carries the label ``[conventions] team_label`` (``<prefix>/team``) naming the team
  (:mod:`clusterstack.derive.teams`), and its cohort;
- money (:mod:`clusterstack.config.prices`): a pool's monthly cost is warm nodes × rate × hours
  to max nodes × rate × hours (one figure when pinned); a queue's is its share of each flavor's
  pool — its nominal quota of the flavor's GPUs (a CPU flavor: CPUs) over every queue's — so the
  teams and the cluster's own queue add up to the cluster.

This module is the one place per-team quota and cost are read from; ``diff``, the PR comment
and the guard read them here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import date
from typing import Any, Iterable, Mapping, Protocol, Sequence

from clusterstack.config.instances import GPU_RESOURCE, instance_type, rack_size
from clusterstack.config.prices import DEFAULT_PRICES, LIST_PRICES_SOURCE, PriceTable, usd
from clusterstack.config.teams import Reservation
from clusterstack.derive import CPU_RESOURCE, RACK_SIZE
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE as CLUSTER_QUEUE, NODEPOOL
from clusterstack.pulumi.urn import name_of

SCALE_GROUP_LABEL = "/scale-group"   # <label_prefix>/scale-group: the pool's scale group


class DeclaredResource(Protocol):
    """What this module reads of a declared resource
    (:class:`clusterstack.plan.model.PlannedResource`): its type token, name and inputs."""

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def inputs(self) -> Mapping[str, Any]: ...


class DeclaredStack(Protocol):
    """What this module reads of a plan (:class:`clusterstack.plan.model.StackPlan`, or the
    steps of a preview as :func:`capacity_from_steps` gathers them): its stack and resources."""

    @property
    def stack(self) -> str: ...

    @property
    def resources(self) -> Sequence[DeclaredResource]: ...


@dataclass(frozen=True)
class _StepResource:
    """One side of a preview step as a declared resource (:func:`capacity_from_steps`)."""

    type: str
    name: str
    inputs: Mapping[str, Any]


@dataclass(frozen=True)
class _StepsStack:
    """The NodePool and ClusterQueue steps of a preview, one side (:func:`capacity_from_steps`)."""

    stack: str
    resources: tuple[_StepResource, ...]


@dataclass(frozen=True)
class PoolCapacity:
    """One NodePool: ``pool`` its scale group (the NodePool name when unlabelled); nodes are
    counts; ``racks`` set for rack-scale pools; ``gpus`` = ``max_nodes`` × ``gpus_per_node``."""

    stack: str
    pool: str
    nodepool: str
    instance_type: str
    min_nodes: int
    max_nodes: int
    racks: int | None
    gpus_per_node: int
    gpus: int
    # USD a month (config.prices): warm nodes × rate … max nodes × rate; None when unpriced
    monthly_min: float | None = None
    monthly_max: float | None = None
    hourly: float | None = None          # USD per node-hour in force
    rate_source: str = ""                # where the rate comes from ("" when unpriced)


@dataclass(frozen=True)
class QueueQuota:
    """One ClusterQueue and its nominal GPU quota (devices); ``team`` the team it belongs to
    (its ``<prefix>/team`` label), ``cohort`` its cohort; ``monthly_min``/``monthly_max`` its
    share of the priced pools' cost (USD; ``unpriced`` names the pools left out)."""

    stack: str
    queue: str
    gpus: int
    team: str | None = None
    cohort: str | None = None
    monthly_min: float | None = None
    monthly_max: float | None = None
    unpriced: tuple[str, ...] = ()   # pools it uses that have no rate (left out of the figure)


@dataclass(frozen=True)
class ReservationTerm:
    """A pool's reservation (``provisioning.coreweave.reservations``): ``ends`` ISO date,
    ``days_left`` from the day asked about (negative: ended), ``warning`` the words when it
    ends within ``[cost] reservation_warn_days`` (or has ended), else ""."""

    stack: str
    pool: str
    id: str
    ends: str
    committed_nodes: int
    days_left: int
    warning: str = ""


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "unpriced"
    return usd(lo) if lo == hi else f"{usd(lo)}–{usd(hi)}"


@dataclass(frozen=True)
class Inventory:
    pools: tuple[PoolCapacity, ...] = ()
    queues: tuple[QueueQuota, ...] = ()
    reservations: tuple[ReservationTerm, ...] = ()
    prices: PriceTable = DEFAULT_PRICES

    @property
    def monthly(self) -> tuple[float, float]:
        """Σ of the priced pools' monthly cost (min, max)."""
        return (round(sum(p.monthly_min or 0 for p in self.pools), 2),
                round(sum(p.monthly_max or 0 for p in self.pools), 2))

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.monthly
        return {"pools": [asdict(p) for p in self.pools], "queues": [asdict(q) for q in self.queues],
                "teams": [{"stack": q.stack, "team": q.team, "queue": q.queue, "gpus": q.gpus,
                           "monthly_min": q.monthly_min, "monthly_max": q.monthly_max,
                           "unpriced": list(q.unpriced)}
                          for q in self.queues if q.team is not None],
                "reservations": [asdict(r) for r in self.reservations],
                "total_gpus": sum(p.gpus for p in self.pools),
                "monthly_cost": {"min": lo, "max": hi, "currency": "USD",
                                 "hours_per_month": self.prices.hours_per_month,
                                 "unpriced_pools": [f"{p.stack}/{p.pool}" for p in self.pools if p.hourly is None],
                                 "list_prices": LIST_PRICES_SOURCE,
                                 "lab_rates": sorted(self.prices.lab)}}

    def warnings(self) -> list[str]:
        """One line per reservation ending soon (or ended)."""
        return [f"{r.stack}/{r.pool}: {r.warning}" for r in self.reservations if r.warning]

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table per kind (deterministic)."""
        lines = ["| stack | pool | instance type | nodes (min–max) | racks | GPUs/node | GPUs | monthly (USD) |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p.stack} | {p.pool} | `{p.instance_type}` | {p.min_nodes}–{p.max_nodes} | "
                  f"{p.racks if p.racks is not None else ''} | {p.gpus_per_node} | {p.gpus} | "
                  f"{_range(p.monthly_min, p.monthly_max)} |" for p in self.pools]
        lines += ["", "| stack | queue | team | GPU quota | monthly (USD) |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {q.stack} | {q.queue} | {q.team or ''} | {q.gpus} | {_range(q.monthly_min, q.monthly_max)} |"
                  for q in self.queues]
        if self.reservations:
            lines += ["", "| stack | pool | reservation | ends | committed nodes | days left |",
                      "| --- | --- | --- | --- | --- | --- |"]
            lines += [f"| {r.stack} | {r.pool} | {r.id} | {r.ends} | {r.committed_nodes} | {r.days_left} |"
                      for r in self.reservations]
        return "\n".join(lines) + "\n"


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _flavor_gpus(queue_spec: dict[str, Any], resource: str = GPU_RESOURCE) -> dict[str, int]:
    """flavor name → its ``resource`` (nvidia.com/gpu) nominal quota."""
    out: dict[str, int] = {}
    for group in queue_spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                if r.get("name") == resource:
                    out[str(flavor.get("name"))] = out.get(str(flavor.get("name")), 0) + _int(r.get("nominalQuota"))
    return out


def _fleet_flavor_gpus(plan: DeclaredStack) -> dict[str, int]:
    """flavor name → Σ of its nvidia.com/gpu nominal quota over every ClusterQueue (one queue:
    that queue's; teams: the teams' and the cluster queue's together, the fleet's)."""
    out: dict[str, int] = {}
    for r in plan.resources:
        if r.type == CLUSTER_QUEUE:
            for f, n in _flavor_gpus((r.inputs or {}).get("spec") or {}).items():
                out[f] = out.get(f, 0) + n
    return out


def _pools(plan: DeclaredStack, prices: PriceTable = DEFAULT_PRICES) -> list[tuple[PoolCapacity, bool]]:
    """Each NodePool's capacity, and whether its GPUs per node are known: False when the
    ClusterQueue has no flavor ``<NodePool>-flavor`` to read them from (a state deployed under
    another flavor layout, a shared flavor, a preview step without the queue's inputs); the
    capacity then says 0 GPUs per node."""
    pools, flavor_gpus = [], _fleet_flavor_gpus(plan)
    for r in plan.resources:
        if r.type != NODEPOOL:
            continue
        spec = (r.inputs or {}).get("spec") or {}
        racks = spec.get("targetRacks")
        racks = _int(racks) if racks is not None else None
        instance = str(spec.get("instanceType", ""))
        if racks is not None:
            max_nodes = min_nodes = racks * (rack_size(instance) or RACK_SIZE)
        elif spec.get("autoscaling") is not True and spec.get("targetNodes") is not None:
            # no autoscaler: the pool has targetNodes nodes (minNodes/maxNodes bound nothing)
            max_nodes = min_nodes = _int(spec.get("targetNodes"))
        else:
            max_nodes, min_nodes = _int(spec.get("maxNodes")), _int(spec.get("minNodes"))
        flavor = f"{r.name}-flavor"
        known = flavor in flavor_gpus
        per_node = flavor_gpus[flavor] // max_nodes if known and max_nodes else 0
        if not known and (table := instance_type(instance)) is not None:
            # no flavor of its own to read (a shared flavor): the instance-type table's count
            per_node, known = table.gpus, True
        labels = spec.get("nodeLabels") or {}
        group = next((str(v) for k, v in sorted(labels.items()) if k.endswith(SCALE_GROUP_LABEL)), r.name)
        rate = prices.rate(instance)
        pools.append((PoolCapacity(plan.stack, group, r.name, instance,
                                   min_nodes, max_nodes, racks, per_node, max_nodes * per_node,
                                   prices.monthly(instance, min_nodes), prices.monthly(instance, max_nodes),
                                   rate.hourly if rate else None, rate.source if rate else ""),
                      known))
    return sorted(pools, key=lambda pk: pk[0].nodepool)


TEAM_LABEL = "/team"   # <label_prefix>/team ([conventions] team_label): the team of a ClusterQueue


def _team(inputs: Mapping[str, Any]) -> str | None:
    labels = ((inputs.get("metadata") or {}).get("labels")) or {}
    return next((str(v) for k, v in sorted(labels.items()) if str(k).endswith(TEAM_LABEL)), None)


def _queues(plan: DeclaredStack, pools: list[PoolCapacity] | None = None) -> list[QueueQuota]:
    """Each ClusterQueue's GPU quota, team, cohort and share of the pools' cost (``pools``:
    the plan's, priced; None: no cost). The one queue of a cluster costs the whole fleet;
    several queues share each pool by their quota of its ``<NodePool>-flavor``, and a queue
    using a flavor of no one pool (a shared flavor) gets no figure (None)."""
    queues = [r for r in plan.resources if r.type == CLUSTER_QUEUE]
    # share of a flavor's pool: by GPUs, or by CPUs where the flavor has no GPUs
    totals: dict[str, tuple[str, int]] = {}
    for resource in (CPU_RESOURCE, GPU_RESOURCE):
        sums: dict[str, int] = {}
        for r in queues:
            for f, n in _flavor_gpus((r.inputs or {}).get("spec") or {}, resource).items():
                sums[f] = sums.get(f, 0) + n
        totals.update({f: (resource, n) for f, n in sums.items() if n})
    by_flavor = {f"{p.nodepool}-flavor": p for p in pools or []}
    out = []
    for r in queues:
        spec = (r.inputs or {}).get("spec") or {}
        lo = hi = 0.0
        unpriced = []
        if len(queues) == 1:
            # the cluster's one queue: the whole fleet, whatever the flavor layout (shared
            # flavors, Marin's cw-cpu / cw-ib, map to no single pool)
            mine = [p for p in pools or [] if p.monthly_min is not None and p.monthly_max is not None]
            out.append(QueueQuota(plan.stack, r.name, sum(_flavor_gpus(spec).values()), _team(r.inputs or {}),
                                  spec.get("cohort"),
                                  round(sum(p.monthly_min or 0 for p in mine), 2) if pools is not None else None,
                                  round(sum(p.monthly_max or 0 for p in mine), 2) if pools is not None else None,
                                  tuple(p.pool for p in pools or [] if p.hourly is None)))
            continue
        for f, (resource, whole) in sorted(totals.items()):
            own = _flavor_gpus(spec, resource).get(f, 0)
            if not own:
                continue
            pool = by_flavor.get(f)
            if pool is None:          # a flavor of no one pool: its share cannot be priced
                lo = hi = float("nan")
                unpriced.append(f)
                continue
            if pool.monthly_min is None or pool.monthly_max is None:
                unpriced.append(pool.pool)
                continue
            lo += pool.monthly_min * own / whole
            hi += pool.monthly_max * own / whole
        priced = pools is not None and lo == lo   # nan: a flavor of no one pool
        out.append(QueueQuota(plan.stack, r.name, sum(_flavor_gpus(spec).values()), _team(r.inputs or {}),
                              spec.get("cohort"), round(lo, 2) if priced else None,
                              round(hi, 2) if priced else None, tuple(unpriced)))
    return sorted(out, key=lambda q: q.queue)


def inventory(plan: DeclaredStack, prices: PriceTable = DEFAULT_PRICES) -> Inventory:
    """The capacity a :class:`StackPlan` declares (empty for a stack without NodePools or
    ClusterQueues, e.g. a GCP stack), priced by ``prices``. Pools sorted by name, queues by
    name. A pool whose ClusterQueue has no ``<NodePool>-flavor`` shows 0 GPUs per node."""
    pools = [p for p, _ in _pools(plan, prices)]
    return Inventory(tuple(pools), tuple(_queues(plan, pools)), prices=prices)


def fleet(plans: Iterable[DeclaredStack], prices: PriceTable = DEFAULT_PRICES,
          reservations: Iterable[ReservationTerm] = ()) -> Inventory:
    """The inventories of ``plans`` together, in plan order, with ``reservations``."""
    invs = [inventory(p, prices) for p in plans]
    return Inventory(tuple(p for i in invs for p in i.pools), tuple(q for i in invs for q in i.queues),
                     tuple(reservations), prices)


def reservation_terms(stack: str, reservations: Mapping[str, Reservation], today: date, warn_days: int) -> list[ReservationTerm]:
    """The terms of ``reservations`` (``provisioning.coreweave.reservations``: scale group →
    :class:`clusterstack.config.teams.Reservation`) seen on ``today`` (a ``datetime.date``),
    sorted by pool; a warning when a term ends within ``warn_days`` days or has ended (a pool
    whose reservation lapses stops being billed at its rate, or loses its nodes)."""
    out = []
    for pool, res in sorted(reservations.items()):
        left = (res.ends - today).days
        if left < 0:
            warning = (f"reservation {res.id} ended on {res.ends.isoformat()} ({-left} day{'s' if left < -1 else ''} ago): "
                       f"its {res.committed_nodes} committed nodes are no longer reserved")
        elif left <= warn_days:
            warning = (f"reservation {res.id} ends on {res.ends.isoformat()}, in {left} days "
                       f"(warn_days {warn_days}): renew it or plan the pool's {res.committed_nodes} nodes")
        else:
            warning = ""
        out.append(ReservationTerm(stack, pool, res.id, res.ends.isoformat(), res.committed_nodes, left, warning))
    return out


def _signed(n: int) -> str:
    return f"+{n}" if n > 0 else f"−{-n}" if n < 0 else "0"


@dataclass(frozen=True)
class PoolChange:
    """One pool whose capacity changes: ``before``/``after`` its capacity on each side (None:
    the pool is new / removed). ``gpus_known``: False when a side's GPUs per node could not be
    read (see :func:`capacity_change`); the words then say no GPU figure and ``gpus_delta``
    is None."""

    pool: str
    before: PoolCapacity | None
    after: PoolCapacity | None
    gpus_known: bool = True

    @property
    def replaced(self) -> bool:
        """The pool's instance type changes: CoreWeave replaces the NodePool (immutable
        ``instanceType``), so all of its capacity is destroyed before the new nodes come."""
        return (self.before is not None and self.after is not None
                and self.before.instance_type != self.after.instance_type)

    def words(self) -> str:
        a, b = self.before, self.after
        gpus = lambda text: f", {text} GPUs" if self.gpus_known else ""  # noqa: E731
        if a is None:
            assert b is not None, "a pool change has a before or an after side"
            return f"pool {self.pool} new: {b.max_nodes} nodes{gpus(b.gpus)}"
        if b is None:
            return f"pool {self.pool} removed: {a.max_nodes} nodes{gpus(_signed(-a.gpus))}"
        if self.replaced:   # an instance type change destroys every node, then builds the new ones
            return (f"pool {self.pool} replaced ({a.instance_type} → {b.instance_type}): "
                    f"{a.max_nodes} nodes destroyed{gpus(_signed(-a.gpus))}, "
                    f"{b.max_nodes} new{gpus(_signed(b.gpus))}")
        text = f"pool {self.pool} {a.max_nodes} → {b.max_nodes} nodes"
        if a.racks is not None or b.racks is not None:
            text += f" ({a.racks or 0} → {b.racks or 0} racks)"
        if a.min_nodes != b.min_nodes and a.racks is None and b.racks is None:
            text += f" (warm {a.min_nodes} → {b.min_nodes})"
        if a.gpus != b.gpus and self.gpus_known:
            text += f", {_signed(b.gpus - a.gpus)} GPUs"
        return text

    def to_json(self) -> dict[str, Any]:
        side = lambda c: None if c is None else {  # noqa: E731
            "nodes": c.max_nodes, "warm_nodes": c.min_nodes, "racks": c.racks,
            "gpus_per_node": c.gpus_per_node, "gpus": c.gpus, "instance_type": c.instance_type}
        delta = ((self.after.gpus if self.after else 0) - (self.before.gpus if self.before else 0)
                 if self.gpus_known else None)
        return {"pool": self.pool, "before": side(self.before), "after": side(self.after),
                "gpus_delta": delta, "replaced": self.replaced}


@dataclass(frozen=True)
class QueueChange:
    """One ClusterQueue whose nominal GPU quota changes (0 on a side where it is absent);
    ``team`` the team it belongs to (None: the cluster's own queue); ``monthly_before`` /
    ``monthly_after`` its share of the priced pools' cost (USD, the upper figure)."""

    queue: str
    before: int
    after: int
    team: str | None = None
    monthly_before: float | None = None
    monthly_after: float | None = None

    def team_words(self) -> str:
        """``team-a 256 → 192 GPUs, −64 ($1,150,246.40 → $862,684.80 a month, −$287,561.60)``."""
        text = f"{self.team} {self.before} → {self.after} GPUs, {_signed(self.after - self.before)}"
        a, b = self.monthly_before, self.monthly_after
        if a is not None and b is not None and a != b:
            text += f" ({usd(a)} → {usd(b)} a month, {usd(round(b - a, 2), signed=True)})"
        return text


@dataclass(frozen=True)
class CapacityChange:
    """What a change does to one stack's capacity: the pools and queues that change, by name.
    :meth:`words` is the sentence of ``diff`` and the PR comment, :meth:`to_json` the same
    facts for ``diff --json``."""

    stack: str
    pools: tuple[PoolChange, ...] = ()
    queues: tuple[QueueChange, ...] = ()

    def words(self) -> str:
        """``cw-demo-h100: pool h100 32 → 16 nodes, −128 GPUs; GPU quota 256 → 128``: the pools
        and the queues of no team ("" when only teams' quota changes: :meth:`lines`)."""
        parts = [p.words() for p in self.pools]
        for q in self.queues:
            if q.team is not None:
                continue
            label = "GPU quota" if self.single_queue else f"GPU quota of {q.queue}"
            parts.append(f"{label} {q.before} → {q.after}")
        return f"{self.stack}: {'; '.join(parts)}" if parts else ""

    single_queue: bool = True   # the stack has one queue on either side: "GPU quota" unqualified
    # Σ of the priced pools' monthly cost (min, max) before and after (USD); None: no pool priced
    monthly_before: tuple[float, float] | None = None
    monthly_after: tuple[float, float] | None = None

    @property
    def monthly_delta(self) -> tuple[float, float] | None:
        """(warm, max) change of the monthly cost, USD; None when a side is unpriced."""
        if self.monthly_before is None or self.monthly_after is None:
            return None
        a, b = self.monthly_before, self.monthly_after
        return (round(b[0] - a[0], 2), round(b[1] - a[1], 2))

    def cost_words(self) -> str:
        """``cw-demo-h100: monthly cost $1,150,246.40 → $575,123.20 (−$575,123.20)``; a range
        (warm–max) where a pool autoscales, its delta at both ends; "" when neither side is
        priced."""
        if self.monthly_before is None and self.monthly_after is None:
            return ""
        rng = lambda m: "unpriced" if m is None else usd(m[0]) if m[0] == m[1] else f"{usd(m[0])}–{usd(m[1])}"  # noqa: E731
        text = f"{self.stack}: monthly cost {rng(self.monthly_before)} → {rng(self.monthly_after)}"
        delta = self.monthly_delta
        if delta is None:
            return text
        d = (usd(delta[0], signed=True) if delta[0] == delta[1]
             else f"warm {usd(delta[0], signed=True)}, max {usd(delta[1], signed=True)}")
        return f"{text} ({d})"

    def lines(self) -> list[str]:
        """Every line ``diff`` and the PR comment show for this stack: :meth:`words`, one line
        per team whose quota changes (:meth:`QueueChange.team_words`), and :meth:`cost_words`."""
        out = [self.words()] if self.words() else []
        out += [f"{self.stack}: {q.team_words()}" for q in self.queues if q.team is not None]
        if self.cost_words():
            out.append(self.cost_words())
        return out

    def to_json(self) -> dict[str, Any]:
        delta = self.monthly_delta
        return {"stack": self.stack, "pools": [p.to_json() for p in self.pools],
                "queues": [{"queue": q.queue, "team": q.team, "before_gpus": q.before, "after_gpus": q.after,
                            "gpus_delta": q.after - q.before, "monthly_before": q.monthly_before,
                            "monthly_after": q.monthly_after} for q in self.queues],
                "gpus_delta": sum(p.to_json()["gpus_delta"] or 0 for p in self.pools),
                "monthly_cost": None if delta is None else {
                    "before": list(self.monthly_before) if self.monthly_before else None,
                    "after": list(self.monthly_after) if self.monthly_after else None,
                    "delta_min": delta[0], "delta_max": delta[1], "currency": "USD"},
                "words": self.words(), "lines": self.lines()}


def _monthly(pools: list[PoolCapacity]) -> tuple[float, float] | None:
    """Σ (warm, max) monthly cost of the priced pools; None when nothing is priced or an
    unpriced pool is not a known CPU type (a GPU pool's cost missing from the sum would make
    the figure a fiction; an unpriced CPU pool is left out and ``inventory`` names it)."""
    priced = [p for p in pools if p.monthly_min is not None and p.monthly_max is not None]
    if not priced or any(p.hourly is None and ((t := instance_type(p.instance_type)) is None or t.gpus)
                         for p in pools):
        return None
    return (round(sum(p.monthly_min or 0 for p in priced), 2), round(sum(p.monthly_max or 0 for p in priced), 2))


def capacity_change(base: DeclaredStack | None, head: DeclaredStack | None,
                    prices: PriceTable = DEFAULT_PRICES) -> CapacityChange | None:
    """The capacity change from plan ``base`` to plan ``head`` of one stack (None when nothing
    changes capacity). Either plan may be None (stack new / gone). A pool changes when its
    nodes, warm nodes, GPUs or instance type do (a replace: its capacity is destroyed and
    built again); a queue when its GPU quota does.

    GPUs per node are a property of the instance type: a pool on both sides with the same
    ``instanceType`` whose GPUs per node one side cannot read (no ``<NodePool>-flavor`` in its
    ClusterQueue, e.g. a state file deployed under an older flavor layout) takes the other
    side's figure. When that is not possible (another instance type, neither side known) the
    pool's GPUs are not compared (``gpus_known`` False) rather than counted as 0."""
    old = _pools(base, prices) if base is not None else []
    new = _pools(head, prices) if head is not None else []
    either = head or base
    assert either is not None, "a capacity change compares a base plan, a head plan or both"
    stack = either.stack
    before = {p.pool: (p, k) for p, k in old}
    after = {p.pool: (p, k) for p, k in new}
    pools = []
    for name in sorted(set(before) | set(after)):
        (a, ka), (b, kb) = before.get(name, (None, True)), after.get(name, (None, True))
        if a is not None and b is not None and ka != kb and a.instance_type == b.instance_type:
            if ka:
                b = replace(b, gpus_per_node=a.gpus_per_node, gpus=b.max_nodes * a.gpus_per_node)
            else:
                a = replace(a, gpus_per_node=b.gpus_per_node, gpus=a.max_nodes * b.gpus_per_node)
            ka = kb = True
        known = ka and kb
        if a is None or b is None or (a.max_nodes, a.min_nodes) != (b.max_nodes, b.min_nodes) or \
                (known and a.gpus != b.gpus) or a.instance_type != b.instance_type:
            pools.append(PoolChange(name, a, b, gpus_known=known))
    qa = {q.queue: q for q in (_queues(base, [p for p, _ in old]) if base is not None else [])}
    qb = {q.queue: q for q in (_queues(head, [p for p, _ in new]) if head is not None else [])}
    queues = []
    for n in sorted(set(qa) | set(qb)):
        a, b = qa.get(n), qb.get(n)
        if (a.gpus if a else 0) == (b.gpus if b else 0):
            continue
        queues.append(QueueChange(n, a.gpus if a else 0, b.gpus if b else 0, (b or a).team,  # type: ignore[union-attr]
                                  a.monthly_max if a else None, b.monthly_max if b else None))
    if not pools and not queues:
        return None
    return CapacityChange(stack, tuple(pools), tuple(queues), single_queue=len(set(qa) | set(qb)) == 1,
                          monthly_before=(0.0, 0.0) if base is None else _monthly([p for p, _ in old]),
                          monthly_after=(0.0, 0.0) if head is None else _monthly([p for p, _ in new]))


def capacity_changes(base: DeclaredStack | None, head: DeclaredStack | None, prices: PriceTable = DEFAULT_PRICES) -> list[str]:
    """The capacity change from plan ``base`` to plan ``head`` of one stack, one line each, in
    words: ``cw-demo-h100: pool h100 32 → 16 nodes, −128 GPUs; GPU quota 256 → 128``. A pool
    added or removed reads ``pool h100 new: 16 nodes, 128 GPUs`` / ``pool h100 removed: −128
    GPUs``. Empty when nothing changes capacity. Either plan may be None (stack new / gone).
    The words of :func:`capacity_change`."""
    change = capacity_change(base, head, prices)
    return change.lines() if change is not None else []


def capacity_from_steps(stack: str, steps: Iterable[Step], prices: PriceTable = DEFAULT_PRICES) -> list[str]:
    """:func:`capacity_changes` over an engine preview's steps (``old_inputs`` → ``new_inputs``
    of the NodePool and ClusterQueue steps; :class:`clusterstack.pulumi.steps.Step`), for the
    PR comment, which has previews, not plans. A resource whose step carries no inputs on a
    side is absent on that side (a ``same`` step without inputs changes nothing)."""
    old: list[_StepResource] = []
    new: list[_StepResource] = []
    for s in steps:
        if s.type not in (NODEPOOL, CLUSTER_QUEUE):
            continue
        for side, inputs in ((old, s.old_inputs), (new, s.new_inputs)):
            if inputs:
                side.append(_StepResource(type=s.type, name=name_of(s.urn), inputs=dict(inputs)))
    if not old and not new:
        return []
    return capacity_changes(_StepsStack(stack, tuple(old)) if old else None,
                            _StepsStack(stack, tuple(new)) if new else None, prices)

