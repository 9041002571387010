"""Pure derivations: config model → frozen specs. One place per fact.

Each function raises :class:`clusterstack.errors.FieldError` naming the config path to fix;
the loader turns that into a ``file:line`` error (:mod:`clusterstack.validation` runs every
derivation once at load time).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.instances import GPU_RESOURCE, NVL72_RACK_NODES, RACK_SCALE_FAMILIES, rack_size  # noqa: F401  (re-exported)
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
    ``<x>_chart_version``). ``repo`` is "" for an ``oci://`` chart URL. ``atomic`` and
    ``timeout`` (seconds) are how the release waits (``[conventions] helm_atomic``,
    ``helm_timeout_seconds``; pulumi-kubernetes provider/pkg/provider/helm_release.go L608-618:
    ``Wait = !skipAwait``, ``Timeout``, ``Atomic``)."""

    release: str
    namespace: str
    chart: str
    repo: str
    version: str
    atomic: bool = DEFAULT_CONVENTIONS.helm_atomic
    timeout: int = DEFAULT_CONVENTIONS.helm_timeout_seconds

    @property
    def source(self) -> str:
        """``<repo>/<chart>@<version>`` (or ``<chart>@<version>``)."""
        return f"{self.repo.rstrip('/') + '/' if self.repo else ''}{self.chart}@{self.version}"


def helm_chart(conventions: Conventions, which: str) -> HelmChart:
    """The release ``which`` (``kueue``, ``cert_manager``, ``traefik``) as the conventions name it."""
    get = lambda key: str(getattr(conventions, f"{which}_{key}"))  # noqa: E731
    return HelmChart(release=get("release"), namespace=get("namespace"), chart=get("chart"),
                     repo=get("chart_repo"), version=get("chart_version"),
                     atomic=conventions.helm_atomic, timeout=conventions.helm_timeout_seconds)


@dataclass(frozen=True)
class ChartPlacement:
    """Where and how many of the charts' pods run (Kueue manager, Traefik, cert-manager).

    ``node_selector``: (key, value) pairs every chart pod selects — the system pool's
    scale-group label with ``[conventions] chart_node_selector = "controller-pool"``, else ().
    ``replicas``: ``[conventions] ha_replicas`` for the Kueue manager, Traefik and the
    cert-manager webhook; with 2 or more each also gets a PodDisruptionBudget (minAvailable 1),
    so a node drain never takes the last one (the webhooks are fail-closed), and a spread over
    nodes, so a node's loss takes one (components/coreweave/helm.py ``spread``).
    """

    node_selector: tuple[tuple[str, str], ...]
    replicas: int

    @property
    def pdb(self) -> bool:
        return self.replicas >= 2


def chart_placement(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                    system: NodePoolSpec | None = None) -> ChartPlacement:
    """:class:`ChartPlacement` of a CoreWeave stack (raises FieldError as :func:`system_pool`);
    ``system``: its :func:`system_pool`, when derived already."""
    pool = system_pool(cfg, conventions) if system is None else system
    selector = ((conventions.name("scale_group_label", prefix=cfg.platform.label_prefix), pool.scale_group),)
    return ChartPlacement(node_selector=selector if conventions.chart_node_selector == "controller-pool" else (),
                          replicas=conventions.ha_replicas)

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


# --- Kueue Topologies (facts of the CoreWeave fleet; components/coreweave/kueue.py declares them) ---
# CoreWeave "InfiniBand and RoCE labels" (backend.coreweave.cloud/fabric, …/leafgroup on every
# InfiniBand node) and "Topology/Block Scheduling" (ds.coreweave.com/nvlink.domain: the NVL72
# rack of GB200/GB300 nodes); Kueue "Topology Aware Scheduling": levels from the broadest to the
# narrowest, kubernetes.io/hostname last. Level order as Marin's tested CoreWeave setup
# (marin-community/marin lib/iris/.../k8s/kueue_manifests.py@51326295 TOPOLOGIES).
HOSTNAME_LABEL = "kubernetes.io/hostname"
FABRIC_LABEL = "backend.coreweave.cloud/fabric"
LEAFGROUP_LABEL = "backend.coreweave.cloud/leafgroup"
NVLINK_DOMAIN_LABEL = "ds.coreweave.com/nvlink.domain"
TOPOLOGY_LEVELS: dict[str, tuple[str, ...]] = {
    "infiniband": (FABRIC_LABEL, LEAFGROUP_LABEL, HOSTNAME_LABEL),
    "multinode-nvlink-ib": (FABRIC_LABEL, LEAFGROUP_LABEL, NVLINK_DOMAIN_LABEL, HOSTNAME_LABEL),
}
#: The levels of the Topology CPU flavors bind ([conventions] kueue_cpu_topology): every node
#: carries kubernetes.io/hostname (Kubernetes "Well-Known Labels"), a CPU node no fabric label,
#: and Kueue's TAS lists only nodes carrying every level label (kubernetes-sigs/kueue v0.14.4
#: pkg/cache/scheduler/tas_flavor.go L107-113: client.HasLabels(levels)).
HOSTNAME_TOPOLOGY_LEVELS: tuple[str, ...] = (HOSTNAME_LABEL,)
#: The ``flavor_topology`` of GPU pools whose nodes may carry no fabric label: its one level,
#: kubernetes.io/hostname, is on every node, so TAS lists them all (same lines).
HOSTNAME_TOPOLOGY = "hostname"
#: The NoSchedule taint a GPU NodePool's nodes carry ([conventions] gpu_node_taint = key);
#: value and effect are fixed (Kubernetes "Taints and Tolerations"; CoreWeave "Node Pool
#: reference" spec.nodeTaints: key, value, effect).
GPU_TAINT_VALUE, GPU_TAINT_EFFECT = "present", "NoSchedule"


def topology_levels(name: str, conventions: Conventions) -> tuple[str, ...]:
    """The levels of the Topology ``name``: ``[conventions] kueue_topology_levels[name]`` when
    given, else one of :data:`TOPOLOGY_LEVELS`, or the CPU Topology ``[conventions]
    kueue_cpu_topology`` (:data:`HOSTNAME_TOPOLOGY_LEVELS`)."""
    if name in conventions.kueue_topology_levels:
        return tuple(conventions.kueue_topology_levels[name])
    return TOPOLOGY_LEVELS.get(name) or HOSTNAME_TOPOLOGY_LEVELS


# No ``cks.coreweave.cloud/system-critical`` node label any more: no CoreWeave
# page documents it, and CoreWeave rejects custom labels under ``*.coreweave.cloud``.
# Nodes per GB200/GB300 NVL72 rack (18 compute trays × 4 GPUs = 72); per instance type the
# one table says it (clusterstack.config.instances.rack_size), this is the NVL72 figure.
RACK_SIZE = NVL72_RACK_NODES
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
    # spec.nodeTaints as (key, value, effect), sorted: GPU pools get [conventions] gpu_node_taint
    node_taints: tuple[tuple[str, str, str], ...] = ()
    gpu: bool = False            # resources.device_type == "gpu"

    @property
    def warm_nodes(self) -> int:
        """Nodes the pool keeps from its creation: ``targetRacks × 18`` for a rack-scale pool
        (no autoscaler), else ``minNodes`` (the autoscaler's floor, and ``targetNodes`` seed)."""
        return self.target_racks * (rack_size(self.instance_type) or RACK_SIZE) if self.target_racks is not None else self.min_nodes

    @property
    def autoscaled(self) -> bool:
        """True when nodes above :attr:`warm_nodes` exist only if an autoscaler asks for them."""
        return self.target_racks is None and self.max_nodes > self.min_nodes

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
    # spec.topologyName: the Topology this flavor is bound to (None: not topology-aware)
    topology: str | None = None
    # taint keys the flavor tolerates (NoSchedule, operator Exists): Kueue admits a PodSet to a
    # flavor whose nodeTaints the PodSet's or the flavor's tolerations tolerate, and adds the
    # flavor's tolerations to the pods it admits (kueue v0.14.4 flavorassigner.go L817-822,
    # pkg/podset/podset.go L84-85)
    tolerations: tuple[str, ...] = ()
    # spec.nodeTaints, (key, value, effect): the taints every node the flavor selects carries
    node_taints: tuple[tuple[str, str, str], ...] = ()


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


def says_infiniband(instance_type: str) -> bool:
    """True when a CoreWeave instance type's name says its nodes are InfiniBand-connected: the
    ``ib`` of ``gd-8xh100ib-i128`` (the second dash-separated part ends in ``ib``), or a
    rack-scale (NVL72) type. Only these carry ``backend.coreweave.cloud/fabric`` and
    ``…/leafgroup`` for certain (CoreWeave "InfiniBand and RoCE labels": set on nodes connected
    to a backend fabric); clusterstack's instance table does not record the fabric of the
    others (``b200-8x``, ``gd-8xl40s-i128``), so for them this is False, not a verdict."""
    head = instance_type.lower().split("-")
    return is_rack_scale(instance_type) or (len(head) > 1 and head[1].endswith("ib"))


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
        gpu = sg.resources.device_type == "gpu"
        if conventions.kueue_queue_layout == "single-tas-flavor":
            # The one TAS flavor selects its nodes by these labels; a CPU node must also carry
            # every Topology level (but the hostname) or TAS never lists it (tas_flavor.go L107-113).
            labels.update(conventions.tas_flavor_node_labels)
            if not gpu:
                labels.update(conventions.cpu_pool_topology_labels)
        taints = (((conventions.gpu_node_taint, GPU_TAINT_VALUE, GPU_TAINT_EFFECT),)
                  if gpu and conventions.gpu_node_taint else ())
        pools.append(NodePoolSpec(name=name, scale_group=group, instance_type=cw.instance_type,
                                  min_nodes=min_nodes, max_nodes=max_nodes,
                                  target_racks=target_racks,
                                  node_labels=tuple(sorted(labels.items())),
                                  metadata_labels=metadata,
                                  identity_label_keys=tuple(k for k, _ in managed_labels(
                                      prefix, group, conventions)),
                                  node_taints=taints, gpu=gpu))
    return tuple(pools)


def system_pool(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                pools: tuple[NodePoolSpec, ...] | None = None) -> NodePoolSpec:
    """The CPU NodePool the Helm charts' pods (and the controller) run on, which every Helm
    release waits for: ``controller.coreweave.scale_group`` (the scheduler's field, Marin's
    lib/iris/config/cw-us-west-04a.yaml@0379ee52), else — only when ``[conventions]
    chart_node_selector = "none"`` — the first CPU pool with warm nodes (by scale group).

    Rules (each a FieldError at its field): the named group is a NodePool (has
    ``slice_template.coreweave.instance_type``), of CPU nodes (an amd64 controller cannot run on
    Grace GB200 nodes, and a GPU node must stay for GPU work), with warm nodes (``buffer_slices``
    ≥ 1: a release's pods need a node on the first ``up``, docs/cluster-objects.md "Day one").
    ``pools``: the stack's :func:`derive_nodepools`, when derived already.
    """
    by_group = {p.scale_group: p for p in (derive_nodepools(cfg, conventions) if pools is None else pools)}
    cw = cfg.controller.coreweave
    group = cw.scale_group if cw is not None else None
    hint = ("name a CPU scale group with a slice_template.coreweave.instance_type and "
            "buffer_slices ≥ 1 (add one if the cluster has none: the charts and the controller "
            "run there, never on GPU nodes)")
    if group is None:
        if conventions.chart_node_selector == "controller-pool":
            raise FieldError(("controller", "coreweave"),
                             "no scale_group: the Helm charts' pods are pinned to the controller's "
                             "CPU pool ([conventions] chart_node_selector = \"controller-pool\")",
                             "add scale_group: <CPU scale group> under controller.coreweave; " + hint)
        warm = [p for _, p in sorted(by_group.items()) if not p.gpu and p.warm_nodes > 0]
        if not warm:
            raise FieldError(("scale_groups",),
                             "no CPU NodePool with warm nodes: the Helm releases' pods would have "
                             "no node to run on during the first `up`", hint)
        return warm[0]
    where = ("controller", "coreweave", "scale_group")
    pool = by_group.get(group)
    if pool is None:
        raise FieldError(where, f"{group!r} is not a scale group with a NodePool (one with "
                                "slice_template.coreweave.instance_type)", hint)
    if pool.gpu:
        raise FieldError(where, f"{group!r} is a GPU pool; the controller and the charts must "
                                "run on CPU nodes", hint)
    if pool.warm_nodes == 0:
        raise FieldError(where, f"{group!r} keeps no warm nodes (buffer_slices: 0): the charts "
                                "and the controller would wait for the autoscaler to deliver a "
                                "bare-metal node on the first `up` and after every scale-down", hint)
    return pool


def derive_kueue_quota(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS, *,
                       pools: tuple[NodePoolSpec, ...] | None = None) -> KueueQuotaSpec:
    """The ClusterQueue's flavors and their nominal quota, by ``[conventions] kueue_queue_layout``.

    Quota of a pool = its envelope × per-node capacity: ``nodes = max_slices × max(1, num_vms)``
    (the pool's ``maxNodes``); per node ``resources.cpu`` cores, ``resources.ram`` and
    ``resources.disk`` bytes (the scheduler's own per-node figures, e.g. Marin's
    ``cd-gp-i64-erapids: cpu 64, ram 512GB``), and for GPU groups ``resources.device_count``
    GPUs. ``rdma/ib`` (GPU pools only): one per GPU, an upper bound argued from how pods use it —
    each GPU pod requests ``rdma/ib: 1`` (CoreWeave's InfiniBand examples) and at most
    ``device_count`` GPU pods fit a node; CoreWeave documents no per-node count. CPU pools get 0
    GPUs and 0 ``rdma/ib`` (Kueue requires every flavor of a resource group to list every covered
    resource: the CRD's CEL rule on resourceGroups). ``[conventions] kueue_fixed_quota`` replaces
    the derived quota of the resources it names (e.g. a non-binding cpu/memory quota).

    Layouts — every flavor is topology-aware, because Kueue 0.14.4 lets a PodSet without a
    topology annotation use a TAS flavor only when every flavor of the ClusterQueue is one
    (kubernetes-sigs/kueue v0.14.4 pkg/scheduler/flavorassigner/tas_flavorassigner.go L131-168,
    ``isTASImplied``; a queue mixing both never admits a plain GPU job):

    * ``tas-flavors``: one flavor per NodePool (named by ``[conventions] resource_flavor``), or
      one per kind with ``cpu_resource_flavor`` / ``gpu_resource_flavor`` (Marin's cw-cpu /
      cw-ib, lib/iris/.../k8s/kueue_manifests.py@51326295), CPU flavors first (a CPU-only
      workload tries them first; a GPU workload finds 0 GPUs there and falls through). GPU
      flavors bind ``flavor_topology``; CPU flavors bind the hostname-only Topology
      ``kueue_cpu_topology`` (TAS lists only nodes carrying every level label: pkg/cache/
      scheduler/tas_flavor.go L107-113). A GPU flavor tolerates ``gpu_node_taint`` and records it
      as its ``nodeTaints``.
    * ``single-tas-flavor``: one flavor ``tas_resource_flavor`` over every pool, bound to
      ``flavor_topology``, selecting ``tas_flavor_node_labels`` (default: the managed label), its
      quota the sum of all pools (Marin's cw-tas). Every CPU pool must carry the topology's
      levels (``cpu_pool_topology_labels``), or its nodes are invisible to TAS.

    Raises FieldError naming ``scale_groups.<group>.resources.<field>`` when a pool lacks a
    per-node figure (without it Kueue would admit nothing that requests that resource);
    ``scale_groups`` when the flavors are more than the ClusterQueue's one resource group may
    list (:data:`KUEUE_MAX_FLAVORS_PER_GROUP`, Kueue 0.14.4's CRD: the API server would refuse
    the ClusterQueue at ``up``); ``scale_groups.<group>`` when a quota (nodes × per node, or a
    shared flavor's sum) exceeds a Kubernetes quantity's int64
    (:data:`clusterstack.config.types.MAX_QUANTITY_BYTES`). What a pool under these flavors must
    meet besides: :func:`clusterstack.derive.kueue.check_topology_pools`. ``pools``: the stack's
    :func:`derive_nodepools`, when derived already.
    """
    prefix = cfg.platform.label_prefix
    single = conventions.kueue_queue_layout == "single-tas-flavor"
    gpu_topology = cfg.provisioning.coreweave.kueue.flavor_topology if cfg.provisioning.coreweave else None
    cpu_flavors: list[FlavorQuota] = []
    gpu_flavors: list[FlavorQuota] = []
    seen_flavors: dict[str, str] = {}
    prev_totals: dict[str, tuple[int, ...]] = {}   # shared flavor name → its summed totals
    managed = (conventions.name("managed_label", prefix=prefix), "true")
    for pool in derive_nodepools(cfg, conventions) if pools is None else pools:
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
        gpu = pool.gpu
        gpus = node_gpus(pool.instance_type, res.device_count) if gpu else 0
        nodes = pool.max_nodes
        totals = (nodes * per_node["cpu"], nodes * per_node["ram"], nodes * per_node["disk"],
                  nodes * gpus, nodes * gpus)
        taint_keys = tuple(k for k, _, _ in pool.node_taints)
        if single:
            shared: str = conventions.tas_resource_flavor
            labels = tuple(sorted((conventions.tas_flavor_node_labels or dict([managed])).items()))
            topology, tolerations, node_taints = gpu_topology, taint_keys, ()
        else:
            shared = conventions.gpu_resource_flavor if gpu else conventions.cpu_resource_flavor
            labels = ((tuple(sorted(conventions.gpu_flavor_node_labels.items())) if gpu else (managed,))
                      if shared else (managed_labels(prefix, pool.scale_group, conventions)[1],))
            topology = gpu_topology if gpu else conventions.kueue_cpu_topology
            tolerations, node_taints = taint_keys, pool.node_taints
        kind_list = gpu_flavors if (gpu and not single) else cpu_flavors
        covers_gpus = gpu
        if shared:  # one flavor for several pools: quotas add up
            prev = next((f for f in kind_list if f.name == shared), None)
            if prev is not None:
                totals = tuple(a + b for a, b in zip(totals, prev_totals[shared]))
                tolerations = tuple(sorted(set(tolerations) | set(prev.tolerations)))
                node_taints = tuple(sorted(set(node_taints) & set(prev.node_taints)))
                covers_gpus = covers_gpus or prev.gpu
                kind_list.remove(prev)
            prev_totals[shared] = totals
            name = shared
        else:
            name = conventions.name("resource_flavor", prefix=prefix, pool=pool.name)
            if name in seen_flavors:
                raise FieldError(("scale_groups", pool.scale_group),
                                 f"ResourceFlavor name {name!r} is also derived from scale group "
                                 f"{seen_flavors[name]!r}",
                                 "make [conventions] resource_flavor in clusterstack.toml include {pool}")
            seen_flavors[name] = pool.scale_group
        for resource, total in zip(COVERED_RESOURCES, totals):
            if resource in conventions.kueue_fixed_quota:
                continue
            if total > MAX_QUANTITY_BYTES:  # ram/disk in bytes; counts too (a Quantity's int64)
                where = (f"the shared flavor {shared!r} (every {'GPU' if gpu else 'CPU'} pool's quota "
                         "added up)" if shared else f"NodePool {pool.name}")
                raise FieldError(("scale_groups", pool.scale_group),
                                 f"the ClusterQueue's {resource} quota of {where} is {total} "
                                 f"({nodes} nodes × per-node capacity): out of range, {QUANTITY_RANGE}",
                                 "lower max_slices × num_vms or the per-node resources of this "
                                 "scale group")
        quotas = tuple((r, conventions.kueue_fixed_quota[r]) if r in conventions.kueue_fixed_quota
                       else (r, bytes_quantity(t) if r in (MEMORY_RESOURCE, STORAGE_RESOURCE)
                             else str(t) if conventions.kueue_quota_strings else t)
                       for r, t in zip(COVERED_RESOURCES, totals))
        kind_list.append(FlavorQuota(name=name, node_labels=labels, gpu=covers_gpus,
                                     quotas=quotas, topology=topology, tolerations=tolerations,
                                     node_taints=node_taints))
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
