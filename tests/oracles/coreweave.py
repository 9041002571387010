"""The nodes a CoreWeave NodePool delivers: their labels, taints and allocatable resources.

Rules (CoreWeave docs, as the search index stored them in 2026):

* "Node Pool reference" (https://docs.coreweave.com/docs/products/cks/reference/node-pool, the
  revision with ``targetRacks``): every node of a pool carries the pool's ``spec.nodeLabels``
  and ``spec.nodeTaints``; a pool keeps ``targetNodes`` nodes (seeded at ``minNodes``, the
  autoscaler's floor) or ``targetRacks`` × 18 nodes for NVL72 types; ``instanceType`` fixes
  what one node is.
* "InfiniBand and RoCE labels": every InfiniBand node carries ``backend.coreweave.cloud/fabric``
  and ``backend.coreweave.cloud/leafgroup`` (and ``…/superpod``, ``…/flavor=infiniband``: Marin's
  lib/iris/src/iris/cluster/platforms/k8s/coreweave_topology.py@2b2c4286 reads them there).
* "Topology/Block Scheduling": GB200/GB300 NVL72 nodes carry ``ds.coreweave.com/nvlink.domain``,
  one value per rack of 18 nodes.
* Kubernetes "Well-Known Labels": ``kubernetes.io/hostname`` and ``kubernetes.io/os`` on every node.

Not documented, so chosen to be no easier than the real fleet: an InfiniBand leaf group holds
:data:`LEAF_GROUP_NODES` nodes, or one NVL72 rack (a gang that fits one here fits a real one,
which is larger);
a node's allocatable equals the per-node figures its scale group states (the scheduler's own
``resources``; tests ask for less than that, as kubelet reserves some). ``rdma/ib``: one per GPU
(what :func:`clusterstack.derive.derive_kueue_quota` assumes). Pods per node: 110 (kubelet's
default ``maxPods``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes.utils import parse_quantity

from clusterstack.plan import StackPlan

NODEPOOL_TYPE = "kubernetes:compute.coreweave.com/v1alpha1:NodePool"
RACK_NODES = 18
LEAF_GROUP_NODES = 8
MAX_PODS = 110
FABRIC, SUPERPOD, LEAFGROUP = ("backend.coreweave.cloud/fabric", "backend.coreweave.cloud/superpod",
                               "backend.coreweave.cloud/leafgroup")
IB_FLAVOR = "backend.coreweave.cloud/flavor"
NVLINK_DOMAIN = "ds.coreweave.com/nvlink.domain"
HOSTNAME, OS = "kubernetes.io/hostname", "kubernetes.io/os"


def is_nvl72(instance_type: str) -> bool:
    return instance_type.lower().startswith(("gb200", "gb300"))


def is_infiniband(instance_type: str) -> bool:
    """CoreWeave's InfiniBand GPU types: the ``ib`` in ``gd-8xh100ib-i128``, and every NVL72 type."""
    head = instance_type.lower().split("-")
    return is_nvl72(instance_type) or (len(head) > 1 and head[1].endswith("ib"))


@dataclass(frozen=True)
class Node:
    """One delivered node: labels, taints (key, value, effect), allocatable (resource → amount,
    cpu in cores, bytes for memory and ephemeral-storage)."""

    name: str
    pool: str
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]
    allocatable: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeShape:
    """What one node of an instance type offers (the scale group's ``resources``)."""

    cpu: float
    memory: float
    disk: float
    gpus: int = 0


def shapes_from_config(cfg) -> dict[str, NodeShape]:
    """Instance type → :class:`NodeShape`, from a :class:`clusterstack.config.cluster.ClusterConfig`'s
    scale groups (their per-node ``resources``, the figures the ClusterQueue quota uses too)."""
    from clusterstack.derive import parse_bytes

    out: dict[str, NodeShape] = {}
    for sg in cfg.scale_groups.values():
        cw = sg.slice_template.coreweave
        if cw is None or not cw.instance_type:
            continue
        r = sg.resources
        out[cw.instance_type] = NodeShape(cpu=float(r.cpu or 0), memory=float(parse_bytes(str(r.ram))),
                                          disk=float(parse_bytes(str(r.disk))),
                                          gpus=r.device_count if r.device_type == "gpu" else 0)
    return out


def warm_nodes(spec: dict) -> int:
    """Nodes a pool keeps from its creation: ``targetRacks`` × 18, else ``targetNodes`` (the
    plan's seed, ``minNodes``)."""
    if "targetRacks" in spec:
        return int(spec["targetRacks"]) * RACK_NODES
    return int(spec.get("targetNodes", spec.get("minNodes", 0)))


def pools(plan: StackPlan) -> dict[str, dict]:
    """NodePool name → its planned spec."""
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plan.resources if r.type == NODEPOOL_TYPE}


def delivered_nodes(plan: StackPlan, shapes: dict[str, NodeShape]) -> list[Node]:
    """Every node the plan's NodePools keep, as CoreWeave labels and taints them."""
    nodes: list[Node] = []
    for pool, spec in sorted(pools(plan).items()):
        itype = spec["instanceType"]
        shape = shapes[itype]
        taints = tuple((t["key"], t.get("value", ""), t["effect"]) for t in spec.get("nodeTaints", ()))
        for i in range(warm_nodes(spec)):
            name = f"{pool}-{i}"
            labels = {**spec.get("nodeLabels", {}), HOSTNAME: name, OS: "linux",
                      "node.kubernetes.io/instance-type": itype}
            if is_infiniband(itype):
                # a leaf group contains whole NVL72 racks (the levels nest: fabric ⊃ leafgroup ⊃
                # nvlink.domain), so an NVL72 pool gets one rack per leaf group
                per_leaf = RACK_NODES if is_nvl72(itype) else LEAF_GROUP_NODES
                labels |= {FABRIC: "fabric-0", SUPERPOD: "superpod-0", IB_FLAVOR: "infiniband",
                           LEAFGROUP: f"{pool}-leaf-{i // per_leaf}"}
            if is_nvl72(itype):
                labels[NVLINK_DOMAIN] = f"{pool}-rack-{i // RACK_NODES}"
            allocatable = {"cpu": shape.cpu, "memory": shape.memory, "ephemeral-storage": shape.disk,
                           "pods": MAX_PODS}
            if shape.gpus:
                allocatable |= {"nvidia.com/gpu": shape.gpus, "rdma/ib": shape.gpus}
            nodes.append(Node(name, pool, labels, taints, allocatable))
    return nodes


def amount(quantity: str | int | float) -> float:
    """A Kubernetes quantity as a number (cores, bytes, devices)."""
    return float(parse_quantity(quantity))
