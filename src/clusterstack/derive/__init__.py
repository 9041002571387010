"""Pure derivations: config model → frozen specs. One place per fact.

Each function raises :class:`clusterstack.errors.FieldError` naming the config path to fix;
the loader turns that into a ``file:line`` error (:mod:`clusterstack.validation` runs every
derivation once at load time).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.instances import NVL72_RACK_NODES, RACK_SCALE_FAMILIES, rack_size  # noqa: F401  (re-exported)
from clusterstack.config.instances import instance_type as instance_type_of
from clusterstack.config.types import MAX_QUANTITY_BYTES, QUANTITY_RANGE, RFC1123_LABEL_RE, parse_bytes  # noqa: F401  (parse_bytes: a size in bytes, re-exported)
from clusterstack.errors import FieldError
from clusterstack.pulumi.paths import format_path
from clusterstack.workspace.model import Conventions

DEFAULT_CONVENTIONS = Conventions()


@dataclass(frozen=True)
class HelmChart:
    """Where a Helm release's chart comes from and what the release is called
    (``[conventions]`` ``<x>_release``, ``<x>_namespace``, ``<x>_chart``, ``<x>_chart_repo``,
    ``<x>_chart_version``). ``repo`` is "" for an ``oci://`` chart URL."""

    release: str
    namespace: str
    chart: str
    repo: str
    version: str

    @property
    def source(self) -> str:
        """``<repo>/<chart>@<version>`` (or ``<chart>@<version>``)."""
        return f"{self.repo.rstrip('/') + '/' if self.repo else ''}{self.chart}@{self.version}"


def helm_chart(conventions: Conventions, which: str) -> HelmChart:
    """The release ``which`` (``kueue``, ``cert_manager``, ``traefik``) as the conventions name it."""
    get = lambda key: str(getattr(conventions, f"{which}_{key}"))  # noqa: E731
    return HelmChart(release=get("release"), namespace=get("namespace"), chart=get("chart"),
                     repo=get("chart_repo"), version=get("chart_version"))

# The Helm releases a CoreWeave stack installs, by their ``[conventions]`` key (``<x>_release``,
# ``<x>_namespace``, …): the one table of charts is the Conventions model itself.
HELM_RELEASES = tuple(f.removesuffix("_release") for f in Conventions.model_fields if f.endswith("_release"))

# Kubernetes' own namespaces (Kubernetes docs "Namespaces": "Kubernetes starts with four initial
# namespaces: default, kube-node-lease, kube-public, kube-system"; "Avoid creating namespaces
# with the prefix kube-, since it is reserved for Kubernetes system namespaces").
KUBERNETES_SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


def workload_namespace(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS) -> str:
    """``kubernetes_provider.namespace``: the namespace a CoreWeave stack declares (a Namespace
    object it owns, so ``destroy`` deletes it) for the controller, its RBAC and the LocalQueue.

    Rule: not one of :data:`KUBERNETES_SYSTEM_NAMESPACES` nor ``kube-*`` (Kubernetes' own), and
    not the namespace of a Helm release of :data:`HELM_RELEASES` (each release creates its
    namespace, ``create_namespace=True``: two owners of one object). Raises FieldError at
    ``kubernetes_provider.namespace``.
    """
    ns = cfg.kubernetes_provider.namespace
    hint = "give the cluster's workloads a namespace of their own, e.g. iris"
    if ns in KUBERNETES_SYSTEM_NAMESPACES or ns.startswith("kube-"):
        raise FieldError(("kubernetes_provider", "namespace"),
                         f"{ns!r} is a Kubernetes system namespace; the stack would declare it as a "
                         "Namespace of its own (and delete it on destroy)", hint)
    for which in HELM_RELEASES:
        chart = helm_chart(conventions, which)
        if ns == chart.namespace:
            raise FieldError(("kubernetes_provider", "namespace"),
                             f"{ns!r} is the namespace of the {chart.release} Helm release "
                             f"([conventions] {which}_namespace), which creates it; the stack would "
                             "declare the same Namespace a second time", hint)
    return ns


# No ``cks.coreweave.cloud/system-critical`` node label any more: no CoreWeave
# page documents it, and CoreWeave rejects custom labels under ``*.coreweave.cloud``.
# Nodes per GB200/GB300 NVL72 rack (18 compute trays × 4 GPUs = 72); per instance type the
# one table says it (clusterstack.config.instances.rack_size), this is the NVL72 figure.
RACK_SIZE = NVL72_RACK_NODES
GPU_RESOURCE = "nvidia.com/gpu"
RDMA_RESOURCE = "rdma/ib"


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
    # (key, value) of ``metadata.labels``, sorted; () unless [conventions] nodepool_metadata_labels
    metadata_labels: tuple[tuple[str, str], ...] = ()

    # The node-label keys the scheduler selects this pool's nodes by ([conventions]
    # managed_label / scale_group_label): a change of either strands every live node.
    identity_label_keys: tuple[str, ...] = ()

    @property
    def rack_scale(self) -> bool:
        return self.target_racks is not None

    @property
    def identity_label_paths(self) -> tuple[str, ...]:
        """Pulumi property paths (``spec.nodeLabels["<key>"]``) of :attr:`identity_label_keys`:
        the NodePool's ``replaceOnChanges``, so the engine plans a changed key as a replace,
        which the guard blocks for NodePools (``forbid_replace``)."""
        return tuple(format_path(("spec", "nodeLabels", k)) for k in self.identity_label_keys)


# The resources the ClusterQueue covers. Kueue admits a workload only if every resource its
# pods request is covered by the flavor's resource group ("resource cpu unavailable in
# ClusterQueue", pkg/scheduler/flavorassigner), and every real pod requests cpu and memory.
CPU_RESOURCE, MEMORY_RESOURCE, STORAGE_RESOURCE = "cpu", "memory", "ephemeral-storage"
COVERED_RESOURCES = (CPU_RESOURCE, MEMORY_RESOURCE, STORAGE_RESOURCE, GPU_RESOURCE, RDMA_RESOURCE)

# What the pinned Kueue's ClusterQueue and ResourceFlavor CRDs admit (kubernetes-sigs/kueue
# v0.14.4 config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml and
# kueue.x-k8s.io_resourceflavors.yaml). spec.resourceGroups: at most 16 groups, "Each resource
# and each flavor can only form part of one resource group"; spec.resourceGroups[].flavors:
# maxItems 64 (256 across all groups); coveredResources and a flavor's resources: maxItems 64;
# ResourceFlavor spec.nodeLabels: maxProperties 8. Every flavor here covers cpu and memory, so
# all of them sit in the one resource group: a CoreWeave cluster holds at most 64 flavors.
KUEUE_LIMITS_SOURCE = "Kueue 0.14.4 ClusterQueue CRD (kueue.x-k8s.io_clusterqueues.yaml)"
KUEUE_MAX_FLAVORS_PER_GROUP = 64        # spec.resourceGroups[].flavors maxItems


@dataclass(frozen=True)
class FlavorQuota:
    """One Kueue ResourceFlavor and its nominal quota: one per NodePool, named
    ``<NodePool name>-flavor`` (a name of its own: import IDs are looked up by logical name).

    ``node_labels`` select exactly that pool's nodes (its ``<prefix>/scale-group`` label, so
    CPU and GPU pools are apart); ``topology`` is set for GPU pools (Topology Aware
    Scheduling). ``quotas`` is (resource, quantity) in :data:`COVERED_RESOURCES` order;
    quantities are ints (cores, devices) or Kubernetes quantity strings (bytes, ``Gi``).
    """

    name: str
    node_labels: tuple[tuple[str, str], ...]
    gpu: bool
    quotas: tuple[tuple[str, int | str], ...]


@dataclass(frozen=True)
class KueueQuotaSpec:
    """The ClusterQueue's flavors, CPU pools first (a CPU-only workload tries them first; a
    GPU workload finds 0 GPUs there and falls through to a GPU flavor), then GPU pools."""

    flavors: tuple[FlavorQuota, ...]

    def total(self, resource: str) -> int:
        """Σ of an integer resource (cpu, nvidia.com/gpu, rdma/ib) over all flavors."""
        return sum(int(q) for f in self.flavors for r, q in f.quotas if r == resource)


def bytes_quantity(n: int) -> str:
    """The shortest exact Kubernetes quantity for ``n`` bytes: ``2048Gi``, ``207360G``, plain
    bytes when no suffix divides (binary wins a tie). Source: Kubernetes "Resource units"."""
    best = str(n)
    if n:
        for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20),
                             ("Ki", 2**10), ("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9),
                             ("M", 10**6), ("k", 10**3)):
            if n % size == 0 and len(f"{n // size}{suffix}") < len(best):
                best = f"{n // size}{suffix}"
    return best


def node_gpus(instance_type: str, device_count: int) -> int:
    """GPUs per node of a GPU pool: the instance-type table's count for a known type (the
    loader refuses a ``resources.device_count`` that contradicts it), else the scale group's
    ``device_count`` (a type the table lacks: the config's own figure)."""
    known = instance_type_of(instance_type)
    return known.gpus if known is not None and known.gpus else device_count


def is_rack_scale(instance_type: str) -> bool:
    """True for rack-scale (NVL72) instance types: the table's rack size
    (:func:`clusterstack.config.instances.rack_size`; an unknown GB200/GB300 variant by its
    family)."""
    return rack_size(instance_type) is not None


def nodepool_name(label_prefix: str, group: str, conventions: Conventions = DEFAULT_CONVENTIONS) -> str:
    """``[conventions] nodepool_name`` (default ``<label_prefix>-<group>``), lowercased,
    ``_`` → ``-`` (not yet validated)."""
    return conventions.name("nodepool_name", prefix=label_prefix, group=group).lower().replace("_", "-")


def managed_labels(label_prefix: str, group: str,
                   conventions: Conventions = DEFAULT_CONVENTIONS) -> tuple[tuple[str, str], ...]:
    """Node labels marking a pool as managed and naming its scale group: the keys of
    ``[conventions] managed_label`` / ``scale_group_label`` (default ``<prefix>/managed``,
    ``<prefix>/scale-group``; Marin's ``iris-<prefix>-managed``, ``iris-<prefix>-scale-group``)."""
    return ((conventions.name("managed_label", prefix=label_prefix), "true"),
            (conventions.name("scale_group_label", prefix=label_prefix), group))


def derive_nodepools(cfg: ClusterConfig,
                     conventions: Conventions = DEFAULT_CONVENTIONS) -> tuple[NodePoolSpec, ...]:
    """One NodePool per scale group whose ``slice_template.coreweave.instance_type`` is set.

    ``num_vms = max(1, slice_template.num_vms)``; ``min = buffer_slices × num_vms``;
    ``max = max_slices × num_vms``. Rack-scale types get ``target_racks = max / <rack size>``
    (the instance-type table's, :func:`clusterstack.config.instances.rack_size`: 18 for NVL72)
    and both counts must be whole racks (CoreWeave "Node Pool reference", the revision with
    ``targetRacks``: exactly one of targetNodes/targetRacks; racks only for NVL72 types).
    Node labels: :func:`managed_labels`, plus ``[conventions] warm_pool_label: "true"`` on
    pools with ``min > 0`` when that convention is set; ``metadata_labels`` = the node labels
    without the warm-pool key when ``nodepool_metadata_labels`` (Marin's shape,
    nodepool_manifests.py@47384f1a). Names and keys from ``conventions``. Sorted by scale group.

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
        name = nodepool_name(prefix, group, conventions)
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
        size = rack_size(cw.instance_type)
        if size is not None:
            for fieldname, count in (("max_slices", max_nodes), ("buffer_slices", min_nodes)):
                if count % size:
                    raise FieldError(("scale_groups", group, fieldname),
                                     f"{count} nodes is not a whole number of {size}-node "
                                     f"NVL72 racks for {cw.instance_type}",
                                     f"make {fieldname} × num_vms a multiple of {size}")
            target_racks = max_nodes // size
        labels = dict(managed_labels(prefix, group, conventions))
        metadata = tuple(sorted(labels.items())) if conventions.nodepool_metadata_labels else ()
        if conventions.warm_pool_label and min_nodes > 0:
            labels[conventions.warm_pool_label] = "true"
        pools.append(NodePoolSpec(name=name, scale_group=group, instance_type=cw.instance_type,
                                  min_nodes=min_nodes, max_nodes=max_nodes,
                                  target_racks=target_racks,
                                  node_labels=tuple(sorted(labels.items())),
                                  metadata_labels=metadata,
                                  identity_label_keys=tuple(k for k, _ in managed_labels(
                                      prefix, group, conventions))))
    return tuple(pools)


def derive_kueue_quota(cfg: ClusterConfig,
                       conventions: Conventions = DEFAULT_CONVENTIONS) -> KueueQuotaSpec:
    """One flavor per NodePool (named by ``[conventions] resource_flavor``), its quota = the pool's envelope × per-node capacity.

    ``nodes = max_slices × max(1, num_vms)`` (the pool's ``maxNodes``); per node:
    ``resources.cpu`` cores, ``resources.ram`` and ``resources.disk`` bytes (the scheduler's
    own per-node figures, e.g. Marin's ``cd-gp-i64-erapids: cpu 64, ram 512GB``), and for GPU
    groups ``resources.device_count`` GPUs. ``rdma/ib`` (GPU pools only): one per GPU, an
    upper bound argued from how pods use it — each GPU pod requests ``rdma/ib: 1`` (CoreWeave's
    InfiniBand examples) and at most ``device_count`` GPU pods fit a node; CoreWeave documents
    no per-node count. CPU pools get 0 GPUs and 0 ``rdma/ib`` (Kueue requires every flavor of a
    resource group to list every covered resource: the CRD's CEL rule on resourceGroups).

    With ``[conventions] cpu_resource_flavor`` / ``gpu_resource_flavor`` set, every CPU (GPU)
    pool shares that one flavor and its quotas add up (Marin's cw-cpu / cw-ib layout:
    marin-community/marin lib/iris/.../k8s/kueue_manifests.py@51326295); the shared CPU flavor
    selects no nodes, the shared GPU flavor selects ``gpu_flavor_node_labels``.

    Raises FieldError naming ``scale_groups.<group>.resources.<field>`` when a pool lacks a
    per-node figure (without it Kueue would admit nothing that requests that resource), and
    naming ``scale_groups`` when the flavors are more than the ClusterQueue's one resource
    group may list (:data:`KUEUE_MAX_FLAVORS_PER_GROUP`, Kueue 0.14.4's CRD: the API server
    would refuse the ClusterQueue at ``up``), and naming ``scale_groups.<group>`` when a
    quota (nodes × per node, or a shared flavor's sum) exceeds a Kubernetes quantity's int64
    (:data:`clusterstack.config.types.MAX_QUANTITY_BYTES`).
    """
    prefix = cfg.platform.label_prefix
    cpu_flavors: list[FlavorQuota] = []
    gpu_flavors: list[FlavorQuota] = []
    seen_flavors: dict[str, str] = {}
    prev_totals: dict[str, tuple[int, ...]] = {}   # shared flavor name → its summed totals
    for pool in derive_nodepools(cfg, conventions):
        sg = cfg.scale_groups[pool.scale_group]
        res = sg.resources
        per_node: dict[str, int] = {}
        for fieldname, value in (("cpu", res.cpu), ("ram", res.ram), ("disk", res.disk)):
            if value is None:
                raise FieldError(("scale_groups", pool.scale_group, "resources", fieldname),
                                 f"NodePool {pool.name} ({pool.instance_type}) has no per-node {fieldname}",
                                 f"set resources.{fieldname} to what one {pool.instance_type} node "
                                 "offers; the ClusterQueue quota is nodes × per-node capacity")
            try:
                per_node[fieldname] = int(value) if fieldname == "cpu" else parse_bytes(str(value))
            except ValueError as exc:
                raise FieldError(("scale_groups", pool.scale_group, "resources", fieldname), str(exc),
                                 "write a size such as 512GB, 960GiB or 7.68TB") from None
        gpu = res.device_type == "gpu"
        gpus = node_gpus(pool.instance_type, res.device_count) if gpu else 0
        nodes = pool.max_nodes
        totals = (nodes * per_node["cpu"], nodes * per_node["ram"], nodes * per_node["disk"],
                  nodes * gpus, nodes * gpus)
        shared = conventions.gpu_resource_flavor if gpu else conventions.cpu_resource_flavor
        if shared:  # one flavor for every pool of this kind: quotas add up
            labels = tuple(sorted(conventions.gpu_flavor_node_labels.items())) if gpu else ()
            prev = next((f for f in (gpu_flavors if gpu else cpu_flavors) if f.name == shared), None)
            if prev is not None:
                totals = tuple(a + b for a, b in zip(totals, prev_totals[shared]))
                (gpu_flavors if gpu else cpu_flavors).remove(prev)
            prev_totals[shared] = totals
            name = shared
        else:
            labels = (managed_labels(prefix, pool.scale_group, conventions)[1],)
            name = conventions.name("resource_flavor", prefix=prefix, pool=pool.name)
            if name in seen_flavors:
                raise FieldError(("scale_groups", pool.scale_group),
                                 f"ResourceFlavor name {name!r} is also derived from scale group "
                                 f"{seen_flavors[name]!r}",
                                 "make [conventions] resource_flavor in clusterstack.toml include {pool}")
            seen_flavors[name] = pool.scale_group
        for resource, total in zip(COVERED_RESOURCES, totals):
            if total > MAX_QUANTITY_BYTES:  # ram/disk in bytes; counts too (a Quantity's int64)
                where = (f"the shared flavor {shared!r} (every {'GPU' if gpu else 'CPU'} pool's quota "
                         "added up)" if shared else f"NodePool {pool.name}")
                raise FieldError(("scale_groups", pool.scale_group),
                                 f"the ClusterQueue's {resource} quota of {where} is {total} "
                                 f"({nodes} nodes × per-node capacity): out of range, {QUANTITY_RANGE}",
                                 "lower max_slices × num_vms or the per-node resources of this "
                                 "scale group")
        quotas = ((CPU_RESOURCE, totals[0]), (MEMORY_RESOURCE, bytes_quantity(totals[1])),
                  (STORAGE_RESOURCE, bytes_quantity(totals[2])),
                  (GPU_RESOURCE, totals[3]), (RDMA_RESOURCE, totals[4]))
        (gpu_flavors if gpu else cpu_flavors).append(
            FlavorQuota(name=name, node_labels=labels, gpu=gpu, quotas=quotas))
    flavors = tuple(cpu_flavors + gpu_flavors)
    names = [f.name for f in flavors]
    if dup := next((n for n in names if names.count(n) > 1), None):
        raise FieldError(("scale_groups",),
                         f"two Kueue ResourceFlavors are named {dup!r}: a shared flavor "
                         "([conventions] cpu_resource_flavor / gpu_resource_flavor) has the name of "
                         "the other kind's flavor, so the stack would declare one object twice",
                         "give the shared CPU and GPU flavors names of their own in clusterstack.toml")
    shared_any = bool(conventions.cpu_resource_flavor or conventions.gpu_resource_flavor)
    if len(flavors) > KUEUE_MAX_FLAVORS_PER_GROUP:
        raise FieldError(("scale_groups",),
                         f"{len(flavors)} Kueue ResourceFlavors (one per NodePool scale group"
                         f"{' not under a shared flavor' if shared_any else ''}) in the "
                         f"ClusterQueue's one resource group; {KUEUE_LIMITS_SOURCE} allows at most "
                         f"{KUEUE_MAX_FLAVORS_PER_GROUP} flavors per resource group "
                         "(spec.resourceGroups[].flavors maxItems), and they cannot be split over "
                         "several groups: every flavor covers cpu and memory, and each resource "
                         "belongs to one group only",
                         f"keep at most {KUEUE_MAX_FLAVORS_PER_GROUP} scale groups with a "
                         "slice_template.coreweave.instance_type in this cluster (move the rest to "
                         "another cluster), or set [conventions] "
                         + " / ".join(k for k in ("cpu_resource_flavor", "gpu_resource_flavor")
                                      if not getattr(conventions, k))
                         + " in clusterstack.toml so pools of one kind share a flavor")
    return KueueQuotaSpec(flavors=flavors)

