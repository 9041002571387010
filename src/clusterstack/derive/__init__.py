"""Pure derivations: config model → frozen specs. One place per fact.

Each function raises :class:`clusterstack.errors.FieldError` naming the config path to fix;
the loader turns that into a ``file:line`` error (:mod:`clusterstack.validation` runs every
derivation once at load time).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.types import RFC1123_LABEL_RE
from clusterstack.errors import FieldError

SYSTEM_CRITICAL_LABEL = "cks.coreweave.cloud/system-critical"
RACK_SIZE = 18          # nodes per GB200/GB300 NVL72 rack (18 compute trays × 4 GPUs = 72)
GPU_RESOURCE = "nvidia.com/gpu"
RDMA_RESOURCE = "rdma/ib"
# Rack-scale instance families deploy in whole NVL72 racks and cannot autoscale
# (CoreWeave docs, "Autoscale Node Pools": no autoscaling for rack-based GB200/GB300 types).
RACK_SCALE_FAMILIES = ("gb200", "gb300")


@dataclass(frozen=True)
class NodePoolSpec:
    """One CoreWeave NodePool derived from one scale group.

    ``min_nodes``/``max_nodes`` are node counts; ``target_racks`` is set (and the autoscaler
    envelope omitted) for rack-scale NVL72 instance types. ``node_labels`` is a sorted tuple
    of (key, value).
    """

    name: str
    scale_group: str
    instance_type: str
    min_nodes: int
    max_nodes: int
    target_racks: int | None
    node_labels: tuple[tuple[str, str], ...]

    @property
    def rack_scale(self) -> bool:
        return self.target_racks is not None


@dataclass(frozen=True)
class KueueQuotaSpec:
    """ClusterQueue nominal quota: ``quotas`` is a sorted tuple of (resource name, quantity)."""

    quotas: tuple[tuple[str, int], ...]


def is_rack_scale(instance_type: str) -> bool:
    """True for GB200/GB300 NVL72 instance types (matched on the family name)."""
    return any(f in instance_type.lower() for f in RACK_SCALE_FAMILIES)


def nodepool_name(label_prefix: str, group: str) -> str:
    """``<label_prefix>-<group>``, lowercased, ``_`` → ``-`` (not yet validated)."""
    return f"{label_prefix}-{group}".lower().replace("_", "-")


def managed_labels(label_prefix: str, group: str) -> tuple[tuple[str, str], ...]:
    """Node labels marking a pool as managed by clusterstack and naming its scale group."""
    return ((f"{label_prefix}/managed", "true"), (f"{label_prefix}/scale-group", group))


def derive_nodepools(cfg: ClusterConfig) -> tuple[NodePoolSpec, ...]:
    """One NodePool per scale group whose ``slice_template.coreweave.instance_type`` is set.

    ``num_vms = max(1, slice_template.num_vms)``; ``min = buffer_slices × num_vms``;
    ``max = max_slices × num_vms``. Rack-scale types get ``target_racks = max / 18`` and both
    counts must be multiples of 18. Pools with ``min > 0`` carry CoreWeave's
    ``cks.coreweave.cloud/system-critical=true`` label. Sorted by scale group name.

    Raises FieldError for an invalid or duplicate NodePool name or a partial rack.
    """
    pools: list[NodePoolSpec] = []
    seen: dict[str, str] = {}
    prefix = cfg.platform.label_prefix
    for group in sorted(cfg.scale_groups):
        sg = cfg.scale_groups[group]
        cw = sg.slice_template.coreweave
        if cw is None or not cw.instance_type:
            continue
        name = nodepool_name(prefix, group)
        if not RFC1123_LABEL_RE.match(name):
            raise FieldError(("scale_groups", group),
                             f"NodePool name {name!r} is not a valid RFC 1123 label",
                             "use lowercase letters, digits and '-' (63 characters at most) in "
                             "the label_prefix and scale group name")
        if name in seen:
            raise FieldError(("scale_groups", group),
                             f"NodePool name {name!r} is also derived from scale group {seen[name]!r}",
                             "rename one of the two scale groups")
        seen[name] = group
        num_vms = max(1, sg.slice_template.num_vms)
        min_nodes, max_nodes = sg.buffer_slices * num_vms, sg.max_slices * num_vms
        target_racks = None
        if is_rack_scale(cw.instance_type):
            for fieldname, count in (("max_slices", max_nodes), ("buffer_slices", min_nodes)):
                if count % RACK_SIZE:
                    raise FieldError(("scale_groups", group, fieldname),
                                     f"{count} nodes is not a whole number of {RACK_SIZE}-node "
                                     f"NVL72 racks for {cw.instance_type}",
                                     f"make {fieldname} × num_vms a multiple of {RACK_SIZE}")
            target_racks = max_nodes // RACK_SIZE
        labels = dict(managed_labels(prefix, group))
        if min_nodes > 0:
            labels[SYSTEM_CRITICAL_LABEL] = "true"
        pools.append(NodePoolSpec(name=name, scale_group=group, instance_type=cw.instance_type,
                                  min_nodes=min_nodes, max_nodes=max_nodes,
                                  target_racks=target_racks,
                                  node_labels=tuple(sorted(labels.items()))))
    return tuple(pools)


def derive_kueue_quota(cfg: ClusterConfig) -> KueueQuotaSpec:
    """Nominal quota for GPUs and the RDMA resource.

    ``Σ over GPU groups (device_type gpu, with a CoreWeave instance type) of
    max_slices × num_vms × device_count``; both covered resources get the same number
    (one RDMA device per GPU on CoreWeave InfiniBand nodes).
    """
    total = 0
    for group in sorted(cfg.scale_groups):
        sg = cfg.scale_groups[group]
        cw = sg.slice_template.coreweave
        if sg.resources.device_type != "gpu" or cw is None or not cw.instance_type:
            continue
        total += sg.max_slices * max(1, sg.slice_template.num_vms) * sg.resources.device_count
    return KueueQuotaSpec(quotas=((GPU_RESOURCE, total), (RDMA_RESOURCE, total)))
