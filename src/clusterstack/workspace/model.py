"""The typed sections of ``clusterstack.toml``; adding a section is one class and one field of
:class:`WorkspaceFile`. Every table and key is strict: an unknown one (a ``[Workspace]`` typo
holding the production backend) is a located error, never silently dropped."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from clusterstack.config.cluster import DEFAULT_CLEANUP, CleanupPolicy
from clusterstack.config.document import Strict
from clusterstack.guard.policy import GuardPolicy
from clusterstack.config.types import (QUANTITY_RE, BackendUrl, KubernetesLabelValue,
                                       KubernetesQualifiedName, NonEmptyStr, OptionalQualifiedName,
                                       ProjectName, RepoPath, Rfc1123Subdomain)

# A node-label value that selects something: a Kubernetes label value, not empty.
NonEmptyLabelValue = Annotated[KubernetesLabelValue, Field(min_length=1)]

CLUSTER_PROJECT = "clusters"  # the handle of the cluster project (<project_dir>); reserved in [projects]
_PROJECT_KEY = re.compile(r"\A[a-z][a-z0-9-]{0,62}\Z")

#: The kinds of Pulumi project clusterstack runs; each has one build function in
#: :mod:`clusterstack.programs` and one document loader in :mod:`clusterstack.validation`.
ProjectKind = Literal["cluster", "buckets", "github"]


class WorkspaceSection(Strict):
    """``[workspace]``: where things are and how Pulumi stores state."""

    clusters_dir: RepoPath = "clusters"             # reviewed cluster configs, one <cluster>.yaml each
    project_dir: RepoPath = "infra"                 # the cluster project (Pulumi.yaml, __main__.py, stack files)
    project_name: ProjectName = "clusterstack"      # must equal `name:` in <project_dir>/Pulumi.yaml
    backend_url: BackendUrl = "file://.pulumi-state"   # relative file:// paths are relative to the root
    secrets_provider: NonEmptyStr = "passphrase"
    release_branch: NonEmptyStr = "main"            # `up` elsewhere needs a typed confirmation


class Defaults(Strict):
    """``[defaults]``: values a lab shares across clusters, filled in where a cluster file omits
    them. Checked here for their TOML type; their meaning is checked where they are used, so a
    bad value is reported at its line here, naming the cluster that uses it."""

    dns_zone_id: str | None = None
    dns_api_token: str | None = None
    federation_allow_sources: list[str] | None = None
    acme_email: str | None = None


class IamSection(Strict):
    """``[iam]``: the reviewed IAM file and the ONE stack that applies it (resolved by
    :class:`clusterstack.iam.settings.IamSettings`)."""

    file: RepoPath = "iam/iam.yaml"             # relative to the repository root
    stack: NonEmptyStr | None = None            # the stack (cluster) that applies the IAM file
    allow_email_domains: list[NonEmptyStr] = Field(default_factory=list)   # more accepted domains
    allow_emails: list[NonEmptyStr] = Field(default_factory=list)          # accepted addresses


# The placeholders a [conventions] name template may use, per template (see Conventions).
_PREFIX, _GROUP, _POOL, _NS = "prefix", "group", "pool", "namespace"
_TEMPLATE_FIELDS: dict[str, tuple[str, ...]] = {
    "nodepool_name": (_PREFIX, _GROUP),
    "managed_label": (_PREFIX,),
    "scale_group_label": (_PREFIX,),
    "resource_flavor": (_PREFIX, _POOL),
    "system_priority_class": (_PREFIX,),
    "controller_role": (_PREFIX, _NS),
    "observer_role": (_PREFIX, _NS),
    "allowlist_middleware": (_PREFIX, _NS),
    "federation_ingress": (_PREFIX, _NS),
    "federation_tls_secret": (_PREFIX, _NS),
    "controller_instance": (_PREFIX,),
    "loom_session_role": (_PREFIX, _NS),
    "registry_upstream_description": ("upstream",),
    "team_cluster_queue": (_PREFIX, "team"),
    "team_label": (_PREFIX,),
}


# Kueue 0.14.4 ResourceFlavor CRD (config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml):
# spec.nodeLabels maxProperties.
KUEUE_MAX_FLAVOR_NODE_LABELS = 8
# The resources every ClusterQueue covers (clusterstack.derive.COVERED_RESOURCES, which is this).
KUEUE_COVERED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/ib")
# Seconds a fresh CoreWeave bare-metal NodePool may take to deliver Ready nodes: Marin measured
# "20-30 minutes" per bare-metal node (marin-community/marin lib/iris/docs/coreweave-v2.md@82d3f250,
# "CoreWeave: Shared NodePool Model"), so the upper end, 30 minutes. An atomic Helm release's wait
# on a first `up` must last longer than that: it starts when the NodePool is created (the
# provider awaits no custom resource) and must still cover the pods' image pull and start.
BARE_METAL_NODE_DELIVERY_SECONDS = 1800


class Conventions(Strict):
    """``[conventions]``: every name and label key that lands on a live object, one table.

    Defaults are a new lab's names (what clusterstack has always declared); a lab adopting a
    running fleet overrides them so every live object keeps its name (docs/adopting-a-cluster.md;
    ``examples/marin/clusterstack.toml`` holds Marin's). Templates are ``str.format`` strings
    over the placeholders listed per field (``{prefix}`` = ``platform.label_prefix``,
    ``{group}`` = scale group, ``{pool}`` = NodePool name, ``{namespace}`` =
    ``kubernetes_provider.namespace``); an unknown placeholder is an error at its line.
    Derivations and components receive these values as arguments; none reads this file.
    """

    # --- NodePools (components/coreweave/nodepools.py; derive.derive_nodepools) ---
    nodepool_name: NonEmptyStr = "{prefix}-{group}"       # lowercased, '_' -> '-'
    managed_label: NonEmptyStr = "{prefix}/managed"       # node-label key, value "true"
    scale_group_label: NonEmptyStr = "{prefix}/scale-group"   # node-label key, value = group
    # Copy the node labels into the NodePool's metadata.labels (Marin does:
    # marin-community/marin lib/iris/.../k8s/nodepool_manifests.py@47384f1a build_nodepool_manifest).
    nodepool_metadata_labels: bool = False
    # A node-label key set to "true" on pools with warm nodes (minNodes > 0), or "" for none
    # (Marin: cks.coreweave.cloud/system-critical, nodepool_manifests.py@47384f1a).
    warm_pool_label: OptionalQualifiedName = ""   # a node-label key, or "" for none
    # --- Kueue (components/coreweave/kueue.py) ---
    resource_flavor: NonEmptyStr = "{pool}-flavor"        # one ResourceFlavor per NodePool
    # One shared flavor per device kind instead of one per pool, when set: "" = per pool.
    # Marin: cw-cpu (no node selector) and cw-ib (backend.coreweave.cloud/flavor: infiniband),
    # marin-community/marin lib/iris/.../k8s/kueue_manifests.py@51326295.
    cpu_resource_flavor: Literal[""] | Rfc1123Subdomain = ""   # a Kubernetes object name
    gpu_resource_flavor: Literal[""] | Rfc1123Subdomain = ""
    gpu_flavor_node_labels: dict[KubernetesQualifiedName, NonEmptyLabelValue] = Field(default_factory=dict)
    system_priority_class: NonEmptyStr = "{prefix}-system"
    # Its value and description (both land on the object; ``value`` is immutable:
    # ValidatePriorityClassUpdate; at most 1000000000, Kubernetes pkg/apis/scheduling/types.go
    # HighestUserDefinablePriority). Marin: 10000, "Iris system priority band"
    # (marin-community/marin lib/iris/.../k8s/types.py@0bb47aa8 IRIS_PRIORITY_CLASSES).
    system_priority_value: int = Field(default=1_000_000, ge=-2_147_483_648, le=1_000_000_000)
    system_priority_description: NonEmptyStr = (
        "System workloads of the training scheduler and the Kueue manager; kube-scheduler and "
        "Kueue (withinClusterQueue: LowerPriority) preempt lower-priority workloads for them.")
    # How the Kueue manager gets that PriorityClass: "values" — the chart's
    # controllerManager.manager.priorityClassName; "patch" — a server-side-apply DeploymentPatch
    # of the chart's Deployment <kueue_release>-controller-manager setting only
    # spec.template.spec.priorityClassName (Marin's: infra/pulumi/src/iac/coreweave/
    # kueue.py@28d310ae ``kueue-manager-priority``, "the chart exposes no priorityClassName value").
    kueue_manager_priority: Literal["values", "patch"] = "values"
    # The Kueue chart's values, a named preset of components/coreweave/kueue.py KUEUE_VALUES:
    # "clusterstack" — one feature gate (TopologyAwareScheduling), the Configuration as sorted
    # JSON (metrics :8443, leader election), the placement; "marin-cks" — what Marin passes to
    # cks-kueue, byte for byte (lib/iris/.../k8s/kueue_manifests.py, the cw-tas revision,
    # build_cks_values: six feature gates as the chart's own list incl. TASBalancedPlacement
    # off, enableKueueViz false, the Configuration as YAML with metrics :8080 and
    # internalCertManagement, the manager memory; no other key).
    kueue_values: Literal["clusterstack", "marin-cks"] = "clusterstack"
    # A team's ClusterQueue (and its LocalQueues' name): provisioning.coreweave.teams, derive/teams.py
    team_cluster_queue: NonEmptyStr = "{team}"
    # The label key on a team's ClusterQueue naming the team (inventory and review read it)
    team_label: NonEmptyStr = "{prefix}/team"
    # Declare every Kueue Topology (infiniband and multinode-nvlink-ib), not only the one the
    # GPU flavor binds (Marin declares both: infra/pulumi/src/iac/coreweave/kueue.py@28d310ae).
    kueue_all_topologies: bool = False
    kueue_release: NonEmptyStr = "kueue"                  # Helm release name
    kueue_namespace: NonEmptyStr = "kueue-system"
    kueue_chart: NonEmptyStr = "oci://registry.k8s.io/kueue/charts/kueue"
    kueue_chart_repo: str = ""                            # "" when the chart is an oci:// URL
    kueue_chart_version: NonEmptyStr = "0.14.4"
    # Where the kueue chart's values sit: "" for the upstream chart, "kueue" for CoreWeave's
    # cks-kueue, which nests upstream kueue as a subchart (marin-community/marin
    # lib/iris/.../k8s/kueue_manifests.py@51326295 build_cks_values).
    kueue_values_key: str = ""
    # The NoSchedule taint key on every GPU NodePool's nodes ("" = untainted, Marin's pools);
    # each GPU flavor tolerates it and Kueue adds the toleration to the pods it admits there
    # (pkg/podset/podset.go L84-85), so only admitted GPU work lands on GPU nodes. The default
    # is the key NVIDIA's GPU operator DaemonSets tolerate. Not with the "single-tas-flavor"
    # layout: its one flavor would give the toleration to every pod, CPU pods included.
    gpu_node_taint: OptionalQualifiedName = "nvidia.com/gpu"   # "" = untainted
    # How the ClusterQueue's flavors admit (docs/cluster-objects.md "Kueue"). Kueue 0.14.4 lets
    # a PodSet without a topology annotation use a TAS flavor only when EVERY flavor of the
    # ClusterQueue is a TAS flavor (pkg/scheduler/flavorassigner/tas_flavorassigner.go
    # L131-168, isTASImplied), so both layouts make every flavor topology-aware:
    #   "tas-flavors": one flavor per NodePool (or per kind: cpu_/gpu_resource_flavor), GPU
    #     flavors on provisioning.coreweave.kueue.flavor_topology, CPU flavors on the Topology
    #     kueue_cpu_topology (hostname only: TAS sees only nodes carrying every level label,
    #     pkg/cache/scheduler/tas_flavor.go L107-113, and CPU nodes carry no fabric labels);
    #   "single-tas-flavor": one flavor tas_resource_flavor over every pool on flavor_topology
    #     (Marin's cw-tas: lib/iris/.../k8s/kueue_manifests.py, the revision with
    #     RESOURCE_FLAVOR_NAME = "cw-tas"; CPU pools then need cpu_pool_topology_labels).
    # (validated even when left at its default: with "tas-flavors" the GPU pools are tainted)
    kueue_queue_layout: Literal["tas-flavors", "single-tas-flavor"] = Field(default="tas-flavors",
                                                                          validate_default=True)
    # The Topology CPU flavors bind in the "tas-flavors" layout: one level, kubernetes.io/hostname.
    kueue_cpu_topology: Rfc1123Subdomain = "hostname"
    # The one flavor of the "single-tas-flavor" layout and the node labels it selects; {} selects
    # every managed node ({managed_label} = "true"). The labels are added to every NodePool.
    tas_resource_flavor: Rfc1123Subdomain = "tas"
    tas_flavor_node_labels: dict[KubernetesQualifiedName, NonEmptyLabelValue] = Field(default_factory=dict)
    # Node labels added to CPU NodePools in the "single-tas-flavor" layout so TAS sees their
    # nodes: one per level of flavor_topology but kubernetes.io/hostname (tas_flavor.go L107-113).
    cpu_pool_topology_labels: dict[KubernetesQualifiedName, NonEmptyLabelValue] = Field(default_factory=dict)
    # A pool whose nodes lack a level label of their flavor's Topology: "refuse" — validate
    # refuses it (TAS never lists those nodes, tas_flavor.go L107-113); "allow" — the lab accepts
    # that TAS places no pod there. Marin's example allows it: which labels
    # Marin's CPU pools carry is not settled (nodepool_manifests.py@f7d97558 declares none; the cw-tas revision
    # of kueue_manifests.py says they carry synthetic levels).
    tas_invisible_pools: Literal["refuse", "allow"] = "refuse"
    # A fixed nominalQuota per covered resource instead of nodes × per-node capacity, e.g. a
    # non-binding {cpu = "1G", memory = "1Pi"} (Marin: kueue_manifests.py NON_BINDING_QUOTA;
    # its GPU and RDMA quota is the fleet, infra/pulumi/src/iac/coreweave/kueue.py@28d310ae
    # accelerator_nominal_quotas). Keys: cpu, memory, ephemeral-storage, nvidia.com/gpu, rdma/ib.
    kueue_fixed_quota: dict[str, str] = Field(default_factory=dict)
    # Write a count quota (cpu, nvidia.com/gpu, rdma/ib) as a string ("512") instead of a
    # number: the same quantity to the API server, another input to Pulumi's diff. Marin:
    # strings (infra/pulumi/src/iac/coreweave/kueue.py@28d310ae accelerator_nominal_quotas:
    # ``quota = str(accelerator_count)``).
    kueue_quota_strings: bool = False
    # The ClusterQueue's namespaceSelector: only the workload namespace, or every namespace ({}:
    # Marin's, kueue_manifests.py@51326295 build_cluster_queue). A LocalQueue elsewhere is then
    # admitted too.
    cluster_queue_namespaces: Literal["workload-namespace", "all"] = "workload-namespace"
    # Declare the ClusterQueue's queueingStrategy (BestEffortFIFO) and
    # preemption.reclaimWithinCohort (Never) — both the CRD's defaults (kueue v0.14.4
    # kueue.x-k8s.io_clusterqueues.yaml: default), so the live object is the same either way.
    # Marin declares neither (kueue_manifests.py cw-tas revision build_cluster_queue).
    cluster_queue_explicit_defaults: bool = True
    # Declare the workload namespace's LocalQueue (named like the ClusterQueue). Marin: false —
    # its program declares none; the scheduler reconciles its own <label_prefix>-lq at
    # controller start (lib/iris/config/cw-us-west-04a.yaml@0379ee52 kubernetes_provider.kueue).
    local_queue: bool = True
    # The levels of a Kueue Topology by name (infiniband, multinode-nvlink-ib), replacing
    # derive.TOPOLOGY_LEVELS' for that name; {} = those. Immutable on a live Topology (CRD CEL
    # ``self == oldSelf``). Marin's carry backend.coreweave.cloud/superpod between fabric and
    # leafgroup (kueue_manifests.py@a1e72a14 TOPOLOGIES; coreweave_topology.py@2b2c4286).
    kueue_topology_levels: dict[NonEmptyStr, tuple[NonEmptyStr, ...]] = Field(default_factory=dict)
    # An autoscaled pool (minNodes < maxNodes) under a topology-aware flavor: "refuse" — validate
    # refuses it (TAS places pods only on existing Ready nodes and keeps the rest gated, so the
    # cluster autoscaler never sees an unschedulable pod: tas_flavor.go L107-113); "allow" — the
    # lab accepts that TAS uses only the nodes that exist (Marin's cw-us-west-04a h100-8x, 1→2).
    tas_autoscaled_pools: Literal["refuse", "allow"] = "refuse"
    # --- the Helm releases (kueue, cert-manager, traefik) ---
    # Pin every chart's pods to the controller's CPU pool (controller.coreweave.scale_group) by
    # nodeSelector, or leave them to the scheduler ("none": Marin's charts set no nodeSelector).
    chart_node_selector: Literal["controller-pool", "none"] = "controller-pool"
    # Roll a failed install back (helm --atomic; pulumi-kubernetes helm_release.go L618). Marin:
    # no atomic.
    helm_atomic: bool = True
    # A release wait of BARE_METAL_NODE_DELIVERY_SECONDS or less: "refuse" (a new lab — on the
    # first `up` the wait ends before a fresh pool's nodes are Ready; atomic, the release rolls
    # back; not atomic, it is left failed and the `up` fails with every resource after it); "allow"
    # — the lab's releases run on nodes that already exist (an adopted fleet: Marin's, 300 s).
    helm_short_wait: Literal["refuse", "allow"] = "refuse"
    # Seconds Helm waits for the release's pods to be Ready (pulumi-kubernetes helm_release.go:
    # default 300, filled in at check time L433-440). The first `up` creates the NodePools and
    # the releases together, and a fresh bare-metal pool delivers nodes in 20-30 minutes: an
    # atomic release must wait longer than BARE_METAL_NODE_DELIVERY_SECONDS (1800); the default,
    # 45 minutes, leaves 15 for the pods' image pull and start. Marin: none (300).
    helm_timeout_seconds: int = Field(default=2700, ge=1, le=86400)
    # Replicas of the Kueue manager, Traefik and the cert-manager webhook; with 2 or more each
    # also gets a PodDisruptionBudget (minAvailable 1) and a spread over nodes
    # (topologySpreadConstraints on kubernetes.io/hostname). 1 = the charts' defaults (Marin's).
    ha_replicas: int = Field(default=2, ge=1, le=16)
    # The Traefik and cert-manager releases' values: "clusterstack" — Traefik's IngressClass and
    # public CoreWeave LoadBalancer Service (externalTrafficPolicy Local), cert-manager's
    # crds.enabled, the placement; "none" — no values, the charts' own defaults (Marin's:
    # infra/pulumi/src/iac/coreweave/traefik.py@9865fe73 and @6019f395 pass none).
    ingress_chart_values: Literal["clusterstack", "none"] = "clusterstack"
    # --- RBAC (components/coreweave/rbac.py) ---
    controller_role: NonEmptyStr = "{prefix}-controller"  # Role, RoleBinding, ClusterRole(Binding)
    # The controller's grants, a named preset of components/coreweave/rbac.py CONTROLLER_RBAC:
    # "minimal" = a namespaced Role(Binding) for its pods and configmaps plus a read-only
    # ClusterRole (a new lab's least privilege); "iris" = the scheduler's own ClusterRole and
    # no namespaced Role (marin-community/marin lib/iris/.../k8s/rbac_manifests.py@33283163
    # CLUSTER_ROLE_RULES: the scheduler re-applies it at every start, so ours must equal it).
    controller_rbac: Literal["minimal", "iris"] = "minimal"   # the controller's grants (a preset)
    observer_role: NonEmptyStr = "{prefix}-node-observer"
    # The node observer's grants and labels (CONTROLLER_RBAC's sibling OBSERVER_RBAC):
    # "nodes" = read nodes; "marin-grafana" = read nodes and NodePools, Marin's labels
    # (infra/pulumi/src/iac/coreweave/rbac.py@17c9466c, tests/test_coreweave_rbac.py@5206448e).
    observer_rbac: Literal["nodes", "marin-grafana"] = "nodes"   # the observer's grants and labels
    # The Role and RoleBinding granting provisioning.coreweave.loom_session_rbac.usernames exec
    # and port-forward into the namespace's pods; "" = declare none (the usernames are then
    # read and ignored). Its labels: LOOM_SESSION_RBAC preset "plain" (none) or "marin-loom".
    loom_session_role: str = "loom-session"   # Role(Binding) of loom_session_rbac; "" = none
    loom_session_rbac: Literal["plain", "marin-loom"] = "plain"   # its labels (a preset)
    # --- Ingress (components/coreweave/ingress.py) ---
    allowlist_middleware: NonEmptyStr = "federation-allowlist"
    federation_ingress: NonEmptyStr = "{prefix}-federation"
    federation_tls_secret: NonEmptyStr = "{prefix}-federation-tls"
    cert_manager_release: NonEmptyStr = "cert-manager"
    cert_manager_namespace: NonEmptyStr = "cert-manager"
    cert_manager_chart: NonEmptyStr = "cert-manager"
    cert_manager_chart_repo: str = "https://charts.jetstack.io"
    cert_manager_chart_version: NonEmptyStr = "v1.19.1"
    traefik_release: NonEmptyStr = "traefik"
    traefik_namespace: NonEmptyStr = "traefik"
    traefik_chart: NonEmptyStr = "traefik"
    traefik_chart_repo: str = "https://traefik.github.io/charts"
    traefik_chart_version: NonEmptyStr = "37.2.0"
    # --- Artifact Registry mirrors (components/gcp/registries.py) ---
    # remoteRepositoryConfig.description, "{upstream}" = the config's docker_upstream; "" = none
    # (Marin declares none: infra/pulumi/src/iac/gcp/registries.py@7caf86cc). ForceNew in
    # terraform-provider-google: changing it on a live mirror replaces it (an empty cache).
    registry_upstream_description: str = "{upstream} mirror"   # "" = none
    # The cleanup policies of a mirror whose config lists none (provisioning.gcp.registries[]
    # .cleanup_policies omitted).
    registry_cleanup_policies: tuple[CleanupPolicy, ...] = DEFAULT_CLEANUP   # when a registry lists none
    # --- DNS (components/dns.py): 1 = Cloudflare "automatic" ---
    dns_ttl: int = Field(default=1, ge=1)
    # --- the Kubernetes provider: take over fields another field manager owns (server-side
    # apply conflicts) — pulumi-kubernetes Provider ``enablePatchForce``. Off by default:
    # turning it on is the reviewed act of adoption (docs/adopting-a-cluster.md). ---
    enable_patch_force: bool = False
    # --- GCP: the controller VM when controller.gcp.instance is omitted (the scheduler's
    # name, marin-community/marin infra/pulumi/src/iac/program.py@ef45e6c0 controller_vm_name) ---
    controller_instance: NonEmptyStr = "iris-controller-{prefix}"
    # --- GCP: the shared HTTPS load balancer (components/gcp/gclb.py, docs/gcp-ingress.md).
    # Marin declares none of these three (marin-community/marin infra/pulumi/src/iac/gcp/
    # gclb.py@fbd675bf and @3df94eb4: no SSL policy, the token-proxy backend without a
    # security policy; program.py@12deed0d _build_gcp: no DNS record), so its workspace turns
    # them off and adopting it changes nothing live. ---
    # One Cloudflare A record per certificate domain, pointing at the load balancer's IP, in
    # the GCP stack itself: a Google-managed certificate stays PROVISIONING until each domain
    # resolves to the load balancer (Google Cloud "Use Google-managed SSL certificates").
    # Off: the lab points its DNS at the `lb_ip` output by other means.
    gclb_dns_records: bool = True   # an A record per certificate domain → the LB IP, in the GCP stack
    # The SSL policy's profile on the target HTTPS proxy, "" for none (then Google's default
    # policy applies: COMPATIBLE with TLS 1.0 — Google Cloud "SSL policies overview").
    gclb_ssl_policy: Literal["", "COMPATIBLE", "MODERN", "RESTRICTED"] = "MODERN"   # "" = no SSL policy
    gclb_min_tls_version: Literal["TLS_1_0", "TLS_1_1", "TLS_1_2"] = "TLS_1_2"   # of the SSL policy
    # A Cloud Armor policy (per-client-IP throttle) on each controller's IAP-free token-proxy
    # backend (/proxy/t, /proxy/t/*), the one path of the load balancer with neither IAP nor
    # Cloud Armor otherwise (Cloud Armor "Rate limiting overview").
    gclb_token_proxy_armor: bool = True   # Cloud Armor throttle on the token-proxy backends

    @field_validator(*_TEMPLATE_FIELDS)
    @classmethod
    def _known_placeholders(cls, value: str, info: ValidationInfo) -> str:
        # Rule: a template may use only the placeholders its object has (a typo such as
        # {prefx} would otherwise fail at plan time, far from this line).
        allowed = _TEMPLATE_FIELDS[info.field_name or ""]
        try:
            value.format(**{k: "x" for k in allowed})
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"{value!r} uses an unknown placeholder ({exc}); allowed: "
                             + ", ".join("{" + k + "}" for k in allowed)) from None
        return value

    @field_validator("kueue_fixed_quota")
    @classmethod
    def _fixed_quota_is_covered(cls, value: dict[str, str]) -> dict[str, str]:
        # Rule: only the resources the ClusterQueue covers have a quota, and a nominalQuota is
        # a Kubernetes quantity (Kueue 0.14.4 ClusterQueue CRD: resources[].nominalQuota
        # x-kubernetes-int-or-string quantity pattern; Kubernetes "Resource units").
        for resource, quantity in value.items():
            if resource not in KUEUE_COVERED_RESOURCES:
                raise ValueError(f"{resource!r} is not a resource the ClusterQueue covers; one of "
                                 + ", ".join(KUEUE_COVERED_RESOURCES))
            if not QUANTITY_RE.match(quantity):
                raise ValueError(f"{resource} = {quantity!r} is not a Kubernetes quantity "
                                 "(e.g. 1G, 1Pi, 512)")
        return value

    @field_validator("kueue_topology_levels")
    @classmethod
    def _known_topologies(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        # Rule: only the Topologies the table knows (derive.TOPOLOGY_LEVELS) can be given other
        # levels, and a Topology has at least one level (kueue v0.14.4 Topology CRD:
        # spec.levels minItems 1).
        known = ("infiniband", "multinode-nvlink-ib")
        for name, levels in value.items():
            if name not in known:
                raise ValueError(f"{name!r} is not a Topology clusterstack declares; one of " + ", ".join(known))
            if not levels:
                raise ValueError(f"{name}: a Topology needs at least one level")
        return value

    @field_validator("helm_timeout_seconds")
    @classmethod
    def _atomic_wait_outlasts_node_delivery(cls, value: int, info: ValidationInfo) -> int:
        # Rule: an atomic release whose wait (helm_release.go L608-618: Wait = !skipAwait,
        # Timeout, Atomic) ends before a fresh pool's nodes are Ready uninstalls itself, and
        # every CR of its CRDs fails after it (docs/cluster-objects.md "Day one").
        # Marin measured 20-30 minutes per bare-metal node (BARE_METAL_NODE_DELIVERY_SECONDS):
        # the wait must outlast the upper end. Without atomic the timed-out wait is still an
        # error of the release (helm_release.go: the install's error is returned), so the `up`
        # fails too; only helm_short_wait = "allow" (nodes already exist) accepts it.
        if value <= BARE_METAL_NODE_DELIVERY_SECONDS and info.data.get("helm_short_wait") != "allow":
            atomic = info.data.get("helm_atomic", True)
            raise ValueError(f"{value} s is not longer than a bare-metal NodePool may take to "
                             f"deliver its first nodes ({BARE_METAL_NODE_DELIVERY_SECONDS} s: 20-30 "
                             "minutes, Marin's lib/iris/docs/coreweave-v2.md@82d3f250); "
                             + ("an atomic Helm release that times out on the first `up` rolls back"
                                if atomic else "a Helm release that times out on the first `up` is "
                                "left failed and the `up` fails")
                             + f" — set more than {BARE_METAL_NODE_DELIVERY_SECONDS} (default 2700), or "
                             "helm_short_wait = \"allow\" if the releases run on nodes that already exist")
        return value

    @field_validator("kueue_queue_layout")
    @classmethod
    def _gpu_taint_needs_a_gpu_only_flavor(cls, value: str, info: ValidationInfo) -> str:
        # Rule: Kueue adds a flavor's tolerations to every pod it admits to that flavor
        # (kubernetes-sigs/kueue v0.14.4 pkg/podset/podset.go L84-85). The "single-tas-flavor"
        # layout has one flavor for CPU and GPU pools, which must tolerate the GPU taint for GPU
        # work to run — so every admitted CPU pod would tolerate it too and TAS would place it on
        # GPU nodes (their taint no longer keeps it off), usage the GPU taint keeps off.
        # (gpu_node_taint is declared before this field, so its value, or default, is here.)
        taint = info.data.get("gpu_node_taint", "")
        if value == "single-tas-flavor" and taint:
            raise ValueError(f"\"single-tas-flavor\" with a GPU node taint (gpu_node_taint = {taint!r}): "
                             "the one ResourceFlavor must tolerate it, and Kueue adds a flavor's "
                             "tolerations to every pod it admits (kueue v0.14.4 pkg/podset/podset.go "
                             "L84-85), so CPU pods would land on GPU nodes — keep \"tas-flavors\" (a "
                             "flavor per pool), or set gpu_node_taint = \"\" (untainted GPU pools)")
        # Rule ("GPU nodes carry only GPU work"): with a flavor per pool nothing needs
        # untainted GPU nodes, and without the taint every pod Kueue does not place (a chart, a
        # DaemonSet-less Deployment, a plain pod) can be bound to a GPU node, where TAS counts
        # it as usage (kueue v0.14.4 pkg/cache/scheduler/tas_flavor.go L117-123).
        if value == "tas-flavors" and not taint:
            raise ValueError("gpu_node_taint = \"\" (untainted GPU pools) with the \"tas-flavors\" layout: "
                             "any pod without a nodeSelector can then be bound to a GPU node, where "
                             "Kueue's TAS counts it as usage (kueue v0.14.4 pkg/cache/scheduler/"
                             "tas_flavor.go L117-123) and whole-node gangs stop fitting — remove "
                             "gpu_node_taint (default nvidia.com/gpu) or set a taint key; untainted "
                             "GPU pools only with kueue_queue_layout = \"single-tas-flavor\"")
        return value

    @field_validator("gpu_flavor_node_labels")
    @classmethod
    def _gpu_flavor_selects_nodes(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # Rule: a topology-aware flavor (every GPU flavor has topologyName) must carry at least
        # one nodeLabel (Kueue "Topology Aware Scheduling"; Marin's kueue_manifests.py@51326295).
        if info.data.get("gpu_resource_flavor") and not value:
            raise ValueError("gpu_resource_flavor is set but gpu_flavor_node_labels is empty; "
                             "a topology-aware ResourceFlavor must select nodes by a label")
        # Rule: the labels become the shared flavor's spec.nodeLabels, which Kueue 0.14.4's
        # ResourceFlavor CRD caps (kueue.x-k8s.io_resourceflavors.yaml: maxProperties 8).
        if len(value) > KUEUE_MAX_FLAVOR_NODE_LABELS:
            raise ValueError(f"{len(value)} labels; a Kueue ResourceFlavor's nodeLabels hold at most "
                             f"{KUEUE_MAX_FLAVOR_NODE_LABELS} (Kueue 0.14.4 ResourceFlavor CRD, "
                             "spec.nodeLabels maxProperties)")
        return value

    def name(self, template: str, **values: str) -> str:
        """Fill the template field ``template`` (e.g. ``"controller_role"``) with ``values``."""
        return str(getattr(self, template)).format(**values)


def _project_key(key: str) -> str:
    # Rule: a handle used on the command line (`plan --project KEY`) and in messages.
    if not _PROJECT_KEY.match(key) or key == CLUSTER_PROJECT:
        raise ValueError(f"bad project name {key!r}: a lowercase handle such as buckets (letters, "
                         f"digits, '-'; {CLUSTER_PROJECT!r} is the cluster project's)")
    return key


ProjectKey = Annotated[str, AfterValidator(_project_key)]


class ProjectSection(Strict):
    """``[projects.<key>]``: an independent Pulumi project beside the cluster project."""

    dir: RepoPath                                  # the directory holding its Pulumi.yaml
    kind: Literal["buckets", "github"]             # which program and loader it has (declared)


class CostSection(Strict):
    """``[cost]``: the lab's own rates and how monthly figures are made
    (:mod:`clusterstack.config.prices`; without this table, CoreWeave's public list prices)."""

    hours_per_month: Annotated[int, Field(gt=0, le=744)] = 730   # 8760 h / 12
    rates_as_of: str | None = Field(default=None, pattern=r"\A\d{4}-\d{2}-\d{2}\Z")   # ISO date of the lab's rates
    # instance type → USD per node-hour, over the list prices
    hourly: dict[NonEmptyStr, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    # inventory and CI's drift run warn this many days before a reservation ends
    reservation_warn_days: Annotated[int, Field(ge=0, le=3650)] = 30


class WorkspaceFile(Strict):
    """The whole ``clusterstack.toml``."""

    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)
    defaults: Defaults = Field(default_factory=Defaults)
    # The guard policy (clusterstack.guard.policy: what is never replaced or deleted, capacity cuts).
    guard: GuardPolicy = Field(default_factory=GuardPolicy)
    iam: IamSection = Field(default_factory=IamSection)
    conventions: Conventions = Field(default_factory=Conventions)
    projects: dict[ProjectKey, ProjectSection] = Field(default_factory=dict)
    cost: CostSection = Field(default_factory=CostSection)
