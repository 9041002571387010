"""Capacity a step destroys: the nodes and GPUs of a CoreWeave NodePool, the GPU quota of a Kueue
ClusterQueue (any ClusterQueue — a cluster's or a team's — per flavor). Pure functions over a
step's old and new inputs (:class:`clusterstack.pulumi.steps.Step`), so a live preview, a saved
preview or event log, a static plan diff and a review record are measured alike.

Where the numbers come from:
- a NodePool's ``spec`` (CoreWeave CKS "Node Pool reference", transcribed in
  ``tests/schemas/nodepools.compute.coreweave.com.crd.yaml``): ``minNodes``, ``maxNodes``,
  ``targetNodes`` in nodes, ``targetRacks`` in racks of :func:`clusterstack.config.instances.rack_size`
  nodes (18 for NVL72); the pool's size is ``targetRacks`` × rack size for a rack-scale pool,
  ``targetNodes`` without ``autoscaling: true``, else ``maxNodes`` (as
  :mod:`clusterstack.inventory` counts it); GPUs per node from the instance type table
  (:func:`clusterstack.config.instances.instance_type`; unknown type: GPUs not counted);
- a ClusterQueue's ``spec.resourceGroups[].flavors[].resources[]`` ``nvidia.com/gpu``
  ``nominalQuota`` per flavor (Kueue v1beta1 ClusterQueue CRD,
  ``../shared/reference/kueue-v0.14.4/config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml``).

A *cut* (:func:`measure`): an ``update`` that lowers any of a NodePool's four counts or the
pool's size, or any flavor's GPU quota of a queue (a raise elsewhere does not offset it: a
team's H100 quota is not paid back in another flavor); a ``delete`` or ``replace``, which
destroys all of it (a replace re-creates the pool empty: CoreWeave deprovisions its nodes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from clusterstack.config.instances import GPU_RESOURCE, NVL72_RACK_NODES, instance_type, rack_size
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE, NODEPOOL, family, member
from clusterstack.pulumi.urn import name_of

#: The NodePool counts compared, in the order they are reported (CoreWeave Node Pool reference).
NODE_FIELDS = ("targetRacks", "targetNodes", "maxNodes", "minNodes")


@dataclass(frozen=True)
class Cut:
    """One count that goes down: ``path`` (a Pulumi property path: ``spec.maxNodes``,
    ``spec.resourceGroups[*].flavors[name="h100"].nvidia.com/gpu``), ``old`` → ``new`` (0 for
    a resource destroyed), ``unit`` (``nodes``, ``racks``, ``GPUs``)."""

    path: str
    old: int
    new: int
    unit: str

    def words(self) -> str:
        short = self.path.removeprefix("spec.")
        return f"{short} {self.old} → {self.new}"


@dataclass(frozen=True)
class CapacityLoss:
    """The capacity one step destroys. ``op``: ``shrink`` (an in-place cut), ``delete`` or
    ``replace``; ``kind``: ``NodePool`` / ``ClusterQueue``; ``name``: the resource's name (URN
    name); ``cuts``: each count that goes down; ``nodes_lost`` (0 for a queue), ``gpus_lost``
    (None when a NodePool's instance type is unknown: GPUs not counted)."""

    urn: str
    type: str
    op: str
    cuts: tuple[Cut, ...]
    nodes_lost: int
    gpus_lost: int | None
    #: a NodePool's size (nodes) before and after (None: not told, or a queue; after: 0 when destroyed)
    size: tuple[int | None, int | None] = (None, None)

    @property
    def name(self) -> str:
        return name_of(self.urn)

    @property
    def kind(self) -> str:
        return member(self.type)

    def words(self) -> str:
        """``maxNodes 32 → 4, minNodes 8 → 4: −28 nodes, −224 GPUs`` (a queue: ``flavor
        h100-flavor 256 → 128 GPUs: −128 GPUs of quota``)."""
        what = ", ".join(c.words() for c in self.cuts)
        if family(self.type) == family(KUEUE_CLUSTER_QUEUE):
            return f"{what}: −{self.gpus_lost or 0} GPUs of quota"
        gpus = (", GPUs unknown (instance type not in the table)" if self.gpus_lost is None
                else ", no GPUs" if self.gpus_lost == 0 else f", −{self.gpus_lost} GPUs")
        return f"{what}: −{self.nodes_lost} nodes{gpus}"

    def to_json(self) -> dict[str, Any]:
        return {"urn": self.urn, "type": self.type, "op": self.op, "name": self.name,
                "cuts": [{"path": c.path, "old": c.old, "new": c.new, "unit": c.unit} for c in self.cuts],
                "nodes_lost": self.nodes_lost, "gpus_lost": self.gpus_lost, "words": self.words()}


def _count(value: Any) -> int | None:
    """A count from an input value: an int, or a decimal string (a Kubernetes quantity of
    devices); None for anything else (unknown at preview, absent)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _spec(inputs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (inputs or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def pool_counts(spec: Mapping[str, Any]) -> dict[str, int]:
    """A NodePool ``spec``'s counts in :data:`NODE_FIELDS` that are known integers, plus
    ``size`` (nodes the pool has: module docstring) when it can be told."""
    out = {f: n for f in NODE_FIELDS if (n := _count(spec.get(f))) is not None}
    rack = rack_size(str(spec.get("instanceType", ""))) or NVL72_RACK_NODES
    if "targetRacks" in out:
        out["size"] = out["targetRacks"] * rack
    elif spec.get("autoscaling") is not True and "targetNodes" in out:
        out["size"] = out["targetNodes"]
    elif "maxNodes" in out:
        out["size"] = out["maxNodes"]
    return out


def _in_nodes(field: str, n: int, spec: Mapping[str, Any]) -> int:
    return n * (rack_size(str(spec.get("instanceType", ""))) or NVL72_RACK_NODES) if field == "targetRacks" else n


def queue_gpus(spec: Mapping[str, Any]) -> dict[str, int]:
    """flavor name → its ``nvidia.com/gpu`` nominal quota (devices), over every resource group
    of a ClusterQueue ``spec``; flavors without a GPU quota are absent."""
    out: dict[str, int] = {}
    groups = spec.get("resourceGroups")
    for group in groups if isinstance(groups, list) else []:
        flavors = group.get("flavors") if isinstance(group, Mapping) else None
        for flavor in flavors if isinstance(flavors, list) else []:
            if not isinstance(flavor, Mapping):
                continue
            resources = flavor.get("resources")
            for r in resources if isinstance(resources, list) else []:
                if isinstance(r, Mapping) and r.get("name") == GPU_RESOURCE:
                    n = _count(r.get("nominalQuota"))
                    if n is not None:
                        name = str(flavor.get("name"))
                        out[name] = out.get(name, 0) + n
    return out


def _flavor_path(flavor: str) -> str:
    return f'spec.resourceGroups[*].flavors[name="{flavor}"].{GPU_RESOURCE}'


def measure(op: str, urn: str, typ: str, old_inputs: Mapping[str, Any] | None,
            new_inputs: Mapping[str, Any] | None) -> CapacityLoss | None:
    """The capacity a step of logical ``op`` (``update``, ``replace``, ``delete``) on a
    NodePool or ClusterQueue destroys, or None (another kind, another op, nothing lost, no old
    inputs to measure). ``update`` → ``shrink`` when any count goes down (module docstring);
    ``replace`` / ``delete`` → all of the old side's capacity."""
    fam = family(typ)
    if op not in ("update", "replace", "delete") or not old_inputs:
        return None
    whole = op in ("replace", "delete")
    if fam == family(NODEPOOL):
        old_spec, new_spec = _spec(old_inputs), _spec(new_inputs)
        old, new = pool_counts(old_spec), ({} if whole else pool_counts(new_spec))
        cuts = []
        lost = 0
        for f in NODE_FIELDS:
            if f in old and (whole or f in new) and new.get(f, 0) < old[f]:
                cuts.append(Cut(f"spec.{f}", old[f], new.get(f, 0), "racks" if f == "targetRacks" else "nodes"))
                lost = max(lost, _in_nodes(f, old[f], old_spec) - _in_nodes(f, new.get(f, 0), old_spec))
        if "size" in old and (whole or "size" in new) and new.get("size", 0) < old["size"]:
            lost = max(lost, old["size"] - new.get("size", 0))
        if whole:
            lost = max(lost, old.get("size", 0))
        if not cuts and not lost:
            return None
        known = instance_type(str(old_spec.get("instanceType", "")))
        gpus = lost * known.gpus if known is not None else None
        return CapacityLoss(urn, typ, "shrink" if op == "update" else op, tuple(cuts), lost, gpus,
                            (old.get("size"), 0 if whole else new.get("size")))
    if fam == family(KUEUE_CLUSTER_QUEUE):
        old_q, new_q = queue_gpus(_spec(old_inputs)), ({} if whole else queue_gpus(_spec(new_inputs)))
        if op == "replace" and new_inputs:   # a replace re-creates it with the new quota
            new_q = queue_gpus(_spec(new_inputs))
        cuts = tuple(Cut(_flavor_path(f), old_q[f], new_q.get(f, 0), "GPUs")
                     for f in sorted(old_q) if new_q.get(f, 0) < old_q[f])
        if not cuts:
            return None
        return CapacityLoss(urn, typ, "shrink" if op == "update" else op, cuts, 0,
                            sum(c.old - c.new for c in cuts))
    return None


__all__ = ["CapacityLoss", "Cut", "NODE_FIELDS", "measure", "pool_counts", "queue_gpus"]
