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
- the quota per queue: Σ ``nvidia.com/gpu`` nominal quota over the ClusterQueue's flavors.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable

from clusterstack.config.instances import GPU_RESOURCE, instance_type, rack_size
from clusterstack.derive import RACK_SIZE
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE as CLUSTER_QUEUE, NODEPOOL
from clusterstack.pulumi.urn import name_of

SCALE_GROUP_LABEL = "/scale-group"   # <label_prefix>/scale-group: the pool's scale group


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


@dataclass(frozen=True)
class QueueQuota:
    """One ClusterQueue and its nominal GPU quota (devices)."""

    stack: str
    queue: str
    gpus: int


@dataclass(frozen=True)
class Inventory:
    pools: tuple[PoolCapacity, ...] = ()
    queues: tuple[QueueQuota, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"pools": [asdict(p) for p in self.pools], "queues": [asdict(q) for q in self.queues],
                "total_gpus": sum(p.gpus for p in self.pools)}

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table per kind (deterministic)."""
        lines = ["| stack | pool | instance type | nodes (min–max) | racks | GPUs/node | GPUs |",
                 "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p.stack} | {p.pool} | `{p.instance_type}` | {p.min_nodes}–{p.max_nodes} | "
                  f"{p.racks if p.racks is not None else ''} | {p.gpus_per_node} | {p.gpus} |" for p in self.pools]
        lines += ["", "| stack | queue | GPU quota |", "| --- | --- | --- |"]
        lines += [f"| {q.stack} | {q.queue} | {q.gpus} |" for q in self.queues]
        return "\n".join(lines) + "\n"


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _flavor_gpus(queue_spec: dict[str, Any]) -> dict[str, int]:
    """flavor name → its nvidia.com/gpu nominal quota."""
    out: dict[str, int] = {}
    for group in queue_spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                if r.get("name") == GPU_RESOURCE:
                    out[str(flavor.get("name"))] = out.get(str(flavor.get("name")), 0) + _int(r.get("nominalQuota"))
    return out


def _pools(plan: Any) -> list[tuple[PoolCapacity, bool]]:
    """Each NodePool's capacity, and whether its GPUs per node are known: False when the
    ClusterQueue has no flavor ``<NodePool>-flavor`` to read them from (a state deployed under
    another flavor layout, a shared flavor, a preview step without the queue's inputs); the
    capacity then says 0 GPUs per node."""
    pools, flavor_gpus = [], {}
    for r in plan.resources:
        if r.type == CLUSTER_QUEUE:
            flavor_gpus.update(_flavor_gpus((r.inputs or {}).get("spec") or {}))
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
        pools.append((PoolCapacity(plan.stack, group, r.name, instance,
                                   min_nodes, max_nodes, racks, per_node, max_nodes * per_node),
                      known))
    return sorted(pools, key=lambda pk: pk[0].nodepool)


def _queues(plan: Any) -> list[QueueQuota]:
    return sorted((QueueQuota(plan.stack, r.name,
                              sum(_flavor_gpus((r.inputs or {}).get("spec") or {}).values()))
                   for r in plan.resources if r.type == CLUSTER_QUEUE), key=lambda q: q.queue)


def inventory(plan: Any) -> Inventory:
    """The capacity a :class:`StackPlan` declares (empty for a stack without NodePools or
    ClusterQueues, e.g. a GCP stack). Pools sorted by name, queues by name. A pool whose
    ClusterQueue has no ``<NodePool>-flavor`` shows 0 GPUs per node."""
    return Inventory(tuple(p for p, _ in _pools(plan)), tuple(_queues(plan)))


def fleet(plans: Iterable[Any]) -> Inventory:
    """The inventories of ``plans`` together, in plan order."""
    invs = [inventory(p) for p in plans]
    return Inventory(tuple(p for i in invs for p in i.pools), tuple(q for i in invs for q in i.queues))


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
    """One ClusterQueue whose nominal GPU quota changes (0 on a side where it is absent)."""

    queue: str
    before: int
    after: int


@dataclass(frozen=True)
class CapacityChange:
    """What a change does to one stack's capacity: the pools and queues that change, by name.
    :meth:`words` is the sentence of ``diff`` and the PR comment, :meth:`to_json` the same
    facts for ``diff --json``."""

    stack: str
    pools: tuple[PoolChange, ...] = ()
    queues: tuple[QueueChange, ...] = ()

    def words(self) -> str:
        """``cw-demo-h100: pool h100 32 → 16 nodes, −128 GPUs; GPU quota 256 → 128``."""
        parts = [p.words() for p in self.pools]
        for q in self.queues:
            label = "GPU quota" if self.single_queue else f"GPU quota of {q.queue}"
            parts.append(f"{label} {q.before} → {q.after}")
        return f"{self.stack}: {'; '.join(parts)}"

    single_queue: bool = True   # the stack has one queue on either side: "GPU quota" unqualified

    def to_json(self) -> dict[str, Any]:
        return {"stack": self.stack, "pools": [p.to_json() for p in self.pools],
                "queues": [{"queue": q.queue, "before_gpus": q.before, "after_gpus": q.after,
                            "gpus_delta": q.after - q.before} for q in self.queues],
                "gpus_delta": sum(p.to_json()["gpus_delta"] or 0 for p in self.pools),
                "words": self.words()}


def capacity_change(base: Any | None, head: Any | None) -> CapacityChange | None:
    """The capacity change from plan ``base`` to plan ``head`` of one stack (None when nothing
    changes capacity). Either plan may be None (stack new / gone). A pool changes when its
    nodes, warm nodes, GPUs or instance type do (a replace: its capacity is destroyed and
    built again); a queue when its GPU quota does.

    GPUs per node are a property of the instance type: a pool on both sides with the same
    ``instanceType`` whose GPUs per node one side cannot read (no ``<NodePool>-flavor`` in its
    ClusterQueue, e.g. a state file deployed under an older flavor layout) takes the other
    side's figure. When that is not possible (another instance type, neither side known) the
    pool's GPUs are not compared (``gpus_known`` False) rather than counted as 0."""
    old = _pools(base) if base is not None else []
    new = _pools(head) if head is not None else []
    stack = (head or base).stack
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
    qa = {q.queue: q.gpus for q in (_queues(base) if base is not None else [])}
    qb = {q.queue: q.gpus for q in (_queues(head) if head is not None else [])}
    queues = [QueueChange(n, qa.get(n, 0), qb.get(n, 0)) for n in sorted(set(qa) | set(qb))
              if qa.get(n, 0) != qb.get(n, 0)]
    if not pools and not queues:
        return None
    return CapacityChange(stack, tuple(pools), tuple(queues), single_queue=len(set(qa) | set(qb)) == 1)


def capacity_changes(base: Any | None, head: Any | None) -> list[str]:
    """The capacity change from plan ``base`` to plan ``head`` of one stack, one line each, in
    words: ``cw-demo-h100: pool h100 32 → 16 nodes, −128 GPUs; GPU quota 256 → 128``. A pool
    added or removed reads ``pool h100 new: 16 nodes, 128 GPUs`` / ``pool h100 removed: −128
    GPUs``. Empty when nothing changes capacity. Either plan may be None (stack new / gone).
    The words of :func:`capacity_change`."""
    change = capacity_change(base, head)
    return [change.words()] if change is not None else []


def capacity_from_steps(stack: str, steps: Iterable[Any]) -> list[str]:
    """:func:`capacity_changes` over an engine preview's steps (``old_inputs`` → ``new_inputs``
    of the NodePool and ClusterQueue steps; :class:`clusterstack.pulumi.steps.Step`), for the
    PR comment, which has previews, not plans. A resource whose step carries no inputs on a
    side is absent on that side (a ``same`` step without inputs changes nothing)."""
    from types import SimpleNamespace


    old, new = [], []
    for s in steps:
        if s.type not in (NODEPOOL, CLUSTER_QUEUE):
            continue
        for side, inputs in ((old, s.old_inputs), (new, s.new_inputs)):
            if inputs:
                side.append(SimpleNamespace(type=s.type, name=name_of(s.urn), inputs=dict(inputs)))
    if not old and not new:
        return []
    return capacity_changes(SimpleNamespace(stack=stack, resources=old) if old else None,
                            SimpleNamespace(stack=stack, resources=new) if new else None)
