"""The catalogue: every object Marin's own program declares for one of its cluster configs,
value for value, rebuilt from Marin's source (github.com/marin-community/marin), each value
citing the file and commit it comes from.

Marin declares its CoreWeave objects in ``infra/pulumi/src/iac/program.py`` (``_build_coreweave``:
CoreweaveCluster, IrisRbac, GrafanaObserverRbac, KueueAddon, TraefikAddon, FederationDns) from
the builders of ``lib/iris/src/iris/cluster/platforms/k8s/{rbac,nodepool,kueue,network}_manifests.py``,
and its GCP objects in ``_build_gcp`` (GcpStaticAddresses, GcpArtifactRegistries, the GCLB when
``provisioning.gcp.gclb`` is set, GcpIam). The stored versions of those files differ per file;
each :class:`Src` names the one read. Where the code index holds a version but not its commit
(``commit=None``), the source names what identifies the version instead.

What is declared is Pulumi *inputs* as the SDK registers them (camelCase, ``apiVersion``/``kind``
added by the typed Kubernetes classes, ``compat: "true"`` added by pulumi-kubernetes' Release:
``pulumi_kubernetes/helm/v3/Release.py`` ``__props__.__dict__["compat"] = 'true'``), so a plan
of ``examples/marin`` is compared with them key for key. Options (``protect``,
``ignoreChanges``, ``retainOnDelete``) are Pulumi state only — a change of them is a ``same``
step (pulumi/pulumi lifecycletest ``TestProtect`` step 5) — and are recorded separately.

Not catalogued here: Marin's GCP IAM (``GcpIam``, ~750 additive members; branch ``iammarin``)
and the GCLB (absent from the published ``marin.yaml``; branch ``gcp``).

Pure functions of a config dict; no clusterstack import (an oracle independent of the code it
judges).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

MARIN = "marin-community/marin"


@dataclass(frozen=True)
class Src:
    """A Marin source: ``path`` at ``commit`` (None: the code index holds that version but not
    its commit; ``symbol`` then says which version), and the symbol read there."""

    path: str
    commit: str | None
    symbol: str = ""

    def __str__(self) -> str:
        at = f"@{self.commit[:12]}" if self.commit else "@(commit not recorded)"
        return f"{MARIN} {self.path}{at}" + (f" {self.symbol}" if self.symbol else "")

    def of(self, symbol: str) -> "Src":
        return Src(self.path, self.commit, symbol)


_K8S = "lib/iris/src/iris/cluster/platforms/k8s"
RBAC_MANIFESTS = Src(f"{_K8S}/rbac_manifests.py", "3328316323db5cb03f138110e875e45f432864f9")
IAC_RBAC = Src("infra/pulumi/src/iac/coreweave/rbac.py", "17c9466c8220e40d88d4832137c2d5e32dc6db47")
IAC_RBAC_OBJECTS = Src("infra/pulumi/src/iac/coreweave/rbac.py", "d0b0c1a131992251a9133d9b5e299786168180d1",
                       "IrisRbac: Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding")
RBAC_TEST = Src("infra/pulumi/tests/test_coreweave_rbac.py", "5206448ec931d80e272dcf140009e787b24fee97",
                "test_grafana_observer_can_read_node_inventory_without_mutating_it")
LOOM_TEST = Src("infra/pulumi/tests/test_coreweave_rbac.py", None,
                "the version importing loom_session_manifests (code-index id 63177031583)")
NODEPOOL_MANIFESTS = Src(f"{_K8S}/nodepool_manifests.py", "f7d97558edb2e54a1bbb518de52a23349edd9c34")
IAC_NODEPOOLS = Src("infra/pulumi/src/iac/nodepools.py", "47384f1a3dc733024d49b16f853be36833151ebf")
IAC_CLUSTER = Src("infra/pulumi/src/iac/coreweave/cluster.py", "031c515db52c4e5ab61dcae55aeded1f35df4690")
TOPOLOGY_LABELS = Src(f"{_K8S}/coreweave_topology.py", "2b2c4286d122861cc1eaae75738f3f4fb323402d")
IAC_KUEUE = Src("infra/pulumi/src/iac/coreweave/kueue.py", "28d310aea2c96a2f3225dc8dffd9ecfa42fd5d45")
KUEUE_MANIFESTS = Src(f"{_K8S}/kueue_manifests.py", "a1e72a14b6444f6326346fb0b3afe25e396c3c16")
KUEUE_MANIFESTS_TAS = Src(f"{_K8S}/kueue_manifests.py", None,
                          "the version with RESOURCE_FLAVOR_NAME = \"cw-tas\" (code-index id 60815173370)")
PRIORITY_TYPES = Src(f"{_K8S}/types.py", "0bb47aa8130e578af11fd6c357e91bf805e5b580")
IAC_TRAEFIK = Src("infra/pulumi/src/iac/coreweave/traefik.py", "9865fe7379c26687c0a460f41ecaa018bb42dea2")
NETWORK_MANIFESTS = Src(f"{_K8S}/network_manifests.py", "6019f395fa0928c031ee2b03a3cd346f9284115d")
IAC_DNS = Src("infra/pulumi/src/iac/coreweave/dns.py", "3d81880077fccd1f337c6da61048f0d9689c70c2")
IAC_PROGRAM = Src("infra/pulumi/src/iac/program.py", "12deed0dc45677f442f130a037dbd274840104b9")
IAC_CONFIG = Src("infra/pulumi/src/iac/config.py", "9d17f3389f793f2e09becf06bdf9f4201885b50a")
IAC_CONFIG_KUEUE = Src("infra/pulumi/src/iac/config.py", "208671df5a6a19acf479e18db64fd1d64df84ba2")
IAC_ADDRESSES = Src("infra/pulumi/src/iac/gcp/addresses.py", "031c515db52c4e5ab61dcae55aeded1f35df4690")
IAC_REGISTRIES = Src("infra/pulumi/src/iac/gcp/registries.py", "7caf86cc6f467840b694b3bad8cd4b8de48448fb")

# Who makes an object exact: "marin" = examples/marin's [conventions]; LOOM_NAME =
# nobody can yet (the name is in no stored Marin source), its catalogue tests strict-xfail.
MADE_HERE = "marin"
LOOM_NAME = "Loom Role name"              # LOOM_SESSION_ROLE's value is in no stored version

RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Expected:
    """One object Marin's program declares for a cluster.

    ``type``: the Pulumi type token clusterstack declares it with (Marin's CustomResource objects
    are the same Kubernetes kind); ``name`` None when Marin's name is not recoverable; ``inputs``
    the declared inputs (None with an unknown name); ``options`` Marin's resource options;
    ``sources`` every Marin file the inputs come from; ``owner`` who makes it exact."""

    cluster: str
    type: str
    kind: str
    namespace: str
    name: str | None
    inputs: dict[str, Any] | None
    sources: tuple[Src, ...]
    owner: str = MADE_HERE
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name or "?")


# --- RBAC ----------------------------------------------------------------------------------

# rbac_manifests.py@33283163 CLUSTER_ROLE_RULES, in its order.
IRIS_CONTROLLER_RULES: list[dict] = [
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods", "pods/exec", "pods/log"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"],
     "verbs": ["get", "list", "create", "update", "patch", "delete"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
     "verbs": ["get", "create", "update", "patch", "delete"]},
]
GRAFANA_ROLE = "marin-grafana-node-reader"                 # rbac.py@17c9466c GRAFANA_OBSERVER_ROLE
GRAFANA_LABELS = {"app.kubernetes.io/name": "marin-grafana",  # rbac.py@17c9466c grafana_observer_manifests
                  "app.kubernetes.io/component": "k8s-observer"}
GRAFANA_RULES = [  # test_coreweave_rbac.py@5206448e
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"], "verbs": ["get", "list", "watch"]},
]
LOOM_LABELS = {"app.kubernetes.io/name": "marin-loom", "app.kubernetes.io/component": "session-connect"}
LOOM_RULES = [{"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"], "verbs": ["create"]}]


def _users(usernames: list[str]) -> list[dict]:
    # rbac.py@17c9466c: one User subject per username, in the config's order.
    return [{"apiGroup": RBAC_GROUP, "kind": "User", "name": u} for u in usernames]


def rbac(cluster: str, cfg: dict) -> list[Expected]:
    """IrisRbac (+ GrafanaObserverRbac, + the Loom session Role where configured)."""
    cw, ns = cfg["provisioning"]["coreweave"], namespace_of(cfg)
    sa = cw.get("rbac", {}).get("service_account", "iris-controller")   # config.py@9d17f338 RbacSpec
    role = f"iris-controller-{ns}"                                      # rbac_manifests cluster_role_name
    src = (RBAC_MANIFESTS, IAC_RBAC_OBJECTS)
    out = [
        Expected(cluster, "kubernetes:core/v1:Namespace", "Namespace", "", ns,
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                  "spec": {"finalizers": ["kubernetes"]}}, (RBAC_MANIFESTS.of("namespace_manifest"), *src[1:])),
        Expected(cluster, "kubernetes:core/v1:ServiceAccount", "ServiceAccount", ns, sa,
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}},
                 (RBAC_MANIFESTS.of("service_account_manifest"), *src[1:])),
        Expected(cluster, f"kubernetes:{RBAC_GROUP}/v1:ClusterRole", "ClusterRole", "", role,
                 {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": role},
                  "rules": IRIS_CONTROLLER_RULES}, (RBAC_MANIFESTS.of("CLUSTER_ROLE_RULES"), *src[1:])),
        Expected(cluster, f"kubernetes:{RBAC_GROUP}/v1:ClusterRoleBinding", "ClusterRoleBinding", "", role,
                 {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
                  "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
                  "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]},
                 (RBAC_MANIFESTS.of("cluster_role_binding_manifest"), *src[1:])),
    ]
    if grafana := cw.get("grafana_observer_rbac"):       # program.py@12deed0d _build_coreweave
        meta = {"name": GRAFANA_ROLE, "labels": GRAFANA_LABELS}
        gsrc = (IAC_RBAC.of("grafana_observer_manifests"), RBAC_TEST, IAC_PROGRAM.of("_build_coreweave"))
        out += [
            Expected(cluster, f"kubernetes:{RBAC_GROUP}/v1:ClusterRole", "ClusterRole", "", GRAFANA_ROLE,
                     {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": meta,
                      "rules": GRAFANA_RULES}, gsrc),
            Expected(cluster, f"kubernetes:{RBAC_GROUP}/v1:ClusterRoleBinding", "ClusterRoleBinding", "",
                     GRAFANA_ROLE,
                     {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": meta,
                      "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": GRAFANA_ROLE},
                      "subjects": _users(grafana["usernames"])}, gsrc),
        ]
    if cw.get("loom_session_rbac"):
        # Marin's Role/RoleBinding: labels and rule from LOOM_TEST; the name (LOOM_SESSION_ROLE)
        # is in no stored version of coreweave/rbac.py, so neither is comparable yet.
        for kind in ("Role", "RoleBinding"):
            out.append(Expected(cluster, f"kubernetes:{RBAC_GROUP}/v1:{kind}", kind, ns, None, None,
                                (LOOM_TEST,), owner=LOOM_NAME))
    return out


def loom_session_objects(cfg: dict, name: str) -> dict[str, dict]:
    """Marin's Loom Role and RoleBinding inputs under ``name`` (LOOM_TEST: metadata with
    namespace and labels, the one rule, roleRef kind Role, one User per username)."""
    ns, users = namespace_of(cfg), cfg["provisioning"]["coreweave"]["loom_session_rbac"]["usernames"]
    meta = {"name": name, "namespace": ns, "labels": LOOM_LABELS}
    return {"Role": {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": meta, "rules": LOOM_RULES},
            "RoleBinding": {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding", "metadata": meta,
                            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
                            "subjects": _users(users)}}


# --- NodePools -----------------------------------------------------------------------------

SYSTEM_CRITICAL = "cks.coreweave.cloud/system-critical"    # nodepool_manifests.py@f7d97558
RACK_SIZE = 18                                              # coreweave_topology.py@2b2c4286
NVL72 = ("gb200", "gb300")                                  # coreweave_topology.py@2b2c4286


def nodepools(cluster: str, cfg: dict) -> list[Expected]:
    """One NodePool per scale group with a CoreWeave instance type (nodepools.py@47384f1a
    derive_nodepools; nodepool_manifests.py@f7d97558 nodepool_manifest; cluster.py@031c515d:
    targetNodes seeded to minNodes and ignored after, rack-based pools own targetRacks)."""
    prefix, out = cfg["platform"]["label_prefix"], []
    for group, sg in cfg["scale_groups"].items():
        tmpl = sg.get("slice_template") or {}
        itype = (tmpl.get("coreweave") or {}).get("instance_type")
        if not itype:
            continue
        num_vms = max(1, tmpl.get("num_vms", 1))
        lo, hi = sg.get("buffer_slices", 0) * num_vms, sg["max_slices"] * num_vms
        name = f"{prefix}-{group}".replace("_", "-").lower()
        labels = {f"iris-{prefix}-managed": "true", f"iris-{prefix}-scale-group": group}
        # + the cw-tas flavor's node label on every pool: the cw-tas revision of kueue_manifests.py
        # imports KUEUE_NODE_LABEL from nodepool_manifests.py for RESOURCE_FLAVOR_NODE_LABELS, "One
        # TAS ResourceFlavor spans every Iris-managed CoreWeave NodePool" — the pools of that
        # revision carry it (the stored NodePool revisions @47384f1a/@f7d97558 predate it; without
        # it the flavor selects no node and Kueue admits nothing).
        node_labels = {**labels, **TAS_FLAVOR_NODE_LABELS, **({SYSTEM_CRITICAL: "true"} if lo > 0 else {})}
        spec: dict[str, Any] = {"computeClass": "default", "instanceType": itype, "nodeLabels": node_labels}
        rack = itype.lower().startswith(NVL72)
        if rack:
            spec["targetRacks"] = hi // RACK_SIZE
        else:
            spec.update(autoscaling=True, minNodes=lo, maxNodes=hi, targetNodes=lo)
        out.append(Expected(
            cluster, "kubernetes:compute.coreweave.com/v1alpha1:NodePool", "NodePool", "", name,
            {"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
             "metadata": {"name": name, "labels": labels}, "spec": spec},
            (NODEPOOL_MANIFESTS.of("nodepool_manifest"), KUEUE_MANIFESTS_TAS.of("RESOURCE_FLAVOR_NODE_LABELS"),
             IAC_NODEPOOLS.of("derive_nodepools"),
             IAC_CLUSTER.of("CoreweaveCluster"), TOPOLOGY_LABELS.of("RACK_SIZE")),
            options={"ignoreChanges": [] if rack else ["spec.targetNodes"]}))
    return out


# --- Kueue ---------------------------------------------------------------------------------

CW_REPO = "https://charts.core-services.ingress.coreweave.com"   # kueue_manifests CW_REPO_URL
FEATURE_GATES = [  # kueue_manifests.py@a1e72a14 CKS_KUEUE_FEATURE_GATES (the same in the cw-tas version)
    {"name": "VisibilityOnDemand", "enabled": True},
    {"name": "LendingLimit", "enabled": True},
    {"name": "ObjectRetentionPolicies", "enabled": True},
    {"name": "TopologyAwareScheduling", "enabled": True},
    {"name": "TASBalancedPlacement", "enabled": False},
    {"name": "TASMultiLayerTopology", "enabled": True},
]
_FABRIC, _SUPERPOD, _LEAF = ("backend.coreweave.cloud/fabric", "backend.coreweave.cloud/superpod",
                             "backend.coreweave.cloud/leafgroup")
TOPOLOGIES = {  # kueue_manifests.py@a1e72a14 TOPOLOGIES (labels: coreweave_topology.py@2b2c4286)
    "infiniband": [_FABRIC, _SUPERPOD, _LEAF, "kubernetes.io/hostname"],
    "multinode-nvlink-ib": [_FABRIC, _SUPERPOD, _LEAF, "ds.coreweave.com/nvlink.domain", "kubernetes.io/hostname"],
}
TAS_FLAVOR = "cw-tas"                                      # the cw-tas version RESOURCE_FLAVOR_NAME
TAS_FLAVOR_NODE_LABELS = {"iris.kueue": "true"}           # ... RESOURCE_FLAVOR_NODE_LABELS (its test)
NON_BINDING = {"cpu": "1G", "memory": "1Pi", "ephemeral-storage": "1Pi"}   # ... NON_BINDING_QUOTA
SYSTEM_PRIORITY = "iris-system"                            # types.py@0bb47aa8 IRIS_PRIORITY_CLASS_SYSTEM
MIN_KUEUE_MANAGER_MEMORY = "2Gi"                            # config.py@208671df MIN_KUEUE_MANAGER_MEMORY


def namespace_of(cfg: dict) -> str:
    # program.py@12deed0d: kubernetes_provider.namespace, else DEFAULT_NAMESPACE "iris".
    return (cfg.get("kubernetes_provider") or {}).get("namespace") or "iris"


def kueue_values(cfg: dict) -> dict:
    """cks-kueue values: kueue.py@28d310ae passes build_cks_values([namespace],
    manager_memory_limit, client_connection qps/burst); the cw-tas version of kueue_manifests
    builds them (featureGates, the memory override — config.py@208671df: always, 2Gi by
    default —, the Configuration as
    ``yaml.safe_dump(..., default_flow_style=False, sort_keys=False)``)."""
    k = cfg["provisioning"]["coreweave"]["kueue"]
    conn = k.get("client_connection") or {}
    # config.py: KueueClientConnectionSpec qps is a float (100.0), burst an int (200).
    qps, burst = float(conn.get("qps", 100.0)), int(conn.get("burst", 200))
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8080"},
        "webhook": {"port": 9443}, "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace_of(cfg)]}]},
        "internalCertManagement": {"enable": True, "webhookServiceName": "kueue-webhook-service",
                                   "webhookSecretName": "kueue-webhook-server-cert"},
        "integrations": {"frameworks": ["batch/job", "pod"]},
        "clientConnection": {"qps": qps, "burst": burst},
    }
    manager: dict[str, Any] = {"featureGates": FEATURE_GATES}
    # config.py@208671df KueueProvisioningSpec.manager_memory_limit = MIN_KUEUE_MANAGER_MEMORY
    # ("2Gi") by default, so build_cks_values always gets one and always overrides the memory
    # (an older config.py defaulted it to None: the override only where configured).
    memory = k.get("manager_memory_limit") or MIN_KUEUE_MANAGER_MEMORY
    manager["manager"] = {"resources": {"limits": {"memory": memory}, "requests": {"memory": memory}}}
    return {"kueue": {"enableKueueViz": False, "controllerManager": manager, "managerConfig": {
        "controllerManagerConfigYaml": yaml.safe_dump(config, default_flow_style=False, sort_keys=False)}}}


def accelerator_quota(cfg: dict) -> str:
    """kueue.py@28d310ae accelerator_nominal_quotas: Σ max_slices × max(1, num_vms) ×
    device_count over GPU scale groups, as a string (nvidia.com/gpu and rdma/ib alike)."""
    total = 0
    for sg in cfg["scale_groups"].values():
        res, tmpl = sg.get("resources") or {}, sg.get("slice_template")
        if res.get("device_type") == "gpu" and tmpl is not None:
            total += sg["max_slices"] * max(1, tmpl.get("num_vms", 1)) * res.get("device_count", 0)
    return str(total)


def kueue(cluster: str, cfg: dict) -> list[Expected]:
    """KueueAddon (kueue.py@28d310ae): the cks-kueue Release, both Topologies, the one TAS
    ResourceFlavor, the ClusterQueue, the iris-system PriorityClass and the manager's
    priority DeploymentPatch."""
    cw, queue = cfg["provisioning"]["coreweave"], cfg["kubernetes_provider"]["kueue"]["cluster_queue"]
    topology = cw["kueue"].get("flavor_topology", "infiniband")        # config.py KueueProvisioningSpec
    src = IAC_KUEUE.of("KueueAddon")
    out = [Expected(cluster, "kubernetes:helm.sh/v3:Release", "Release", "kueue-system", "kueue",
                    {"name": "kueue", "chart": "cks-kueue", "version": "1.5.0", "namespace": "kueue-system",
                     "createNamespace": True, "repositoryOpts": {"repo": CW_REPO}, "values": kueue_values(cfg),
                     "compat": "true"},
                    (src.of("CKS_KUEUE_CHART/VERSION, build_cks_values"), KUEUE_MANIFESTS_TAS.of("build_cks_values"),
                     KUEUE_MANIFESTS.of("CKS_KUEUE_FEATURE_GATES"),
                     IAC_CONFIG_KUEUE.of("KueueProvisioningSpec.manager_memory_limit, KueueClientConnectionSpec")))]
    for name, levels in TOPOLOGIES.items():
        out.append(Expected(cluster, "kubernetes:kueue.x-k8s.io/v1beta1:Topology", "Topology", "", name,
                            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": name},
                             "spec": {"levels": [{"nodeLabel": lv} for lv in levels]}},
                            (src.of("TOPOLOGIES loop"), KUEUE_MANIFESTS.of("TOPOLOGIES"), TOPOLOGY_LABELS)))
    out.append(Expected(cluster, "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor", "ResourceFlavor", "",
                        TAS_FLAVOR,
                        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                         "metadata": {"name": TAS_FLAVOR},
                         "spec": {"nodeLabels": TAS_FLAVOR_NODE_LABELS, "topologyName": topology}},
                        (src.of("resource-flavor"), KUEUE_MANIFESTS_TAS.of("build_resource_flavor"))))
    gpus = accelerator_quota(cfg)
    quota = {**NON_BINDING, "nvidia.com/gpu": gpus, "rdma/ib": gpus}
    covered = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/ib"]
    out.append(Expected(cluster, "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue", "ClusterQueue", "", queue,
                        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": queue},
                         "spec": {"namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                                  "resourceGroups": [{"coveredResources": covered, "flavors": [
                                      {"name": TAS_FLAVOR,
                                       "resources": [{"name": r, "nominalQuota": quota[r]} for r in covered]}]}]}},
                        (src.of("accelerator_nominal_quotas, build_cluster_queue"),
                         KUEUE_MANIFESTS_TAS.of("NON_BINDING_QUOTA, build_cluster_queue"))))
    out.append(Expected(cluster, "kubernetes:scheduling.k8s.io/v1:PriorityClass", "PriorityClass", "",
                        SYSTEM_PRIORITY,
                        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                         "metadata": {"name": SYSTEM_PRIORITY}, "value": 10000,
                         "preemptionPolicy": "PreemptLowerPriority", "globalDefault": False,
                         "description": "Iris system priority band"},
                        (src.of("iris_priority_class_manifest(IRIS_PRIORITY_CLASS_SYSTEM)"),
                         PRIORITY_TYPES.of("IRIS_PRIORITY_CLASSES, build_priority_class_manifest"))))
    out.append(Expected(cluster, "kubernetes:apps/v1:DeploymentPatch", "Deployment", "kueue-system",
                        "kueue-controller-manager",
                        {"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                         "spec": {"template": {"spec": {"priorityClassName": SYSTEM_PRIORITY}}}},
                        (src.of("kueue-manager-priority DeploymentPatch, MANAGER_DEPLOYMENT"),)))
    return out


# --- Traefik, cert-manager, the federation Ingress, DNS ------------------------------------

LE_ACME = {"letsencrypt-http01-prod": "https://acme-v02.api.letsencrypt.org/directory",
           "letsencrypt-http01-staging": "https://acme-staging-v02.api.letsencrypt.org/directory"}
MIDDLEWARE, INGRESS, TLS_SECRET = "iris-federation-ipallowlist", "iris-federation", "iris-controller-fed-tls"
FEDERATION_SOURCES = ["34.27.183.11", "35.254.13.19"]      # config.py@9d17f338 MARIN_FEDERATION_EGRESS_SOURCES
DNS_ZONE = "169959d6aafcbfd77764b8efafa3a509"              # config.py@9d17f338 CLOUDFLARE_OA_DEV_ZONE_ID


def _cidr(source: str) -> str:
    # network_manifests.py@6019f395 normalize_source: a bare IP becomes /32 (/128).
    return source if "/" in source else f"{source}/{128 if ':' in source else 32}"


def federation_host(cluster: str) -> str:
    # network_manifests.py@6019f395 default_federation_host
    return f"iris-cw-{cluster.removeprefix('cw-')}.oa.dev"


def ingress(cluster: str, cfg: dict) -> list[Expected]:
    """TraefikAddon (traefik.py@9865fe73): the cert-manager and traefik Releases (CoreWeave
    charts by repo alias, no repositoryOpts, no values), an HTTP-01 ClusterIssuer per
    configured issuer, the ipAllowList Middleware and the federation Ingress; FederationDns
    (program.py@12deed0d passes the config's hostname/target; dns.py@3d818800 ttl, proxied)."""
    cw, ns, name = cfg["provisioning"]["coreweave"], namespace_of(cfg), cfg.get("name", cluster)
    ing, src = cw["ingress"], IAC_TRAEFIK.of("TraefikAddon")
    ctl = cfg["controller"]["coreweave"]
    out = [
        Expected(cluster, "kubernetes:helm.sh/v3:Release", "Release", "cert-manager", "cert-manager",
                 {"name": "cert-manager", "chart": "coreweave/cert-manager", "version": "1.20.0",
                  "namespace": "cert-manager", "createNamespace": True, "compat": "true"},
                 (src.of("CERT_MANAGER_VERSION"), NETWORK_MANIFESTS.of("CERT_MANAGER_CHART"))),
        Expected(cluster, "kubernetes:helm.sh/v3:Release", "Release", "traefik", "traefik",
                 {"name": "traefik", "chart": "coreweave/traefik", "version": "1.35.0",
                  "namespace": "traefik", "createNamespace": True, "compat": "true"},
                 (src.of("TRAEFIK_VERSION"), NETWORK_MANIFESTS.of("TRAEFIK_CHART"))),
    ]
    for issuer in ing["cluster_issuers"]:
        out.append(Expected(
            cluster, "kubernetes:cert-manager.io/v1:ClusterIssuer", "ClusterIssuer", "", issuer,
            {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": issuer},
             "spec": {"acme": {"server": LE_ACME[issuer], "email": ing["acme_email"],
                               "privateKeySecretRef": {"name": f"{issuer}-account-key"},
                               "solvers": [{"http01": {"ingress": {"ingressClassName": ing.get("ingress_class", "traefik")}}}]}}},
            (src.of("cluster-issuer-<env>"), NETWORK_MANIFESTS.of("http01_issuer"))))
    sources = ing.get("federation_allow_sources") or FEDERATION_SOURCES
    out.append(Expected(cluster, "kubernetes:traefik.io/v1alpha1:Middleware", "Middleware", ns, MIDDLEWARE,
                        {"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
                         "metadata": {"name": MIDDLEWARE, "namespace": ns},
                         "spec": {"ipAllowList": {"sourceRange": [_cidr(s) for s in sources]}}},
                        (src.of("federation-ipallowlist"), NETWORK_MANIFESTS.of("ipallowlist_middleware"),
                         IAC_CONFIG.of("MARIN_FEDERATION_EGRESS_SOURCES"))))
    host = federation_host(name)
    out.append(Expected(
        cluster, "kubernetes:networking.k8s.io/v1:Ingress", "Ingress", ns, INGRESS,
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
         "metadata": {"name": INGRESS, "namespace": ns, "annotations": {
             "traefik.ingress.kubernetes.io/router.middlewares": f"{ns}-{MIDDLEWARE}@kubernetescrd",
             "cert-manager.io/cluster-issuer": ing["active_cluster_issuer"]}},
         "spec": {"ingressClassName": ing.get("ingress_class", "traefik"), "rules": [{"host": host, "http": {"paths": [
             {"path": "/", "pathType": "Prefix", "backend": {"service": {
                 "name": ctl["service_name"], "port": {"number": ctl.get("port", 10000)}}}}]}}],
             "tls": [{"hosts": [host], "secretName": TLS_SECRET}]}},
        (src.of("federation-ingress"), NETWORK_MANIFESTS.of("federation_ingress"))))
    if dns := cw.get("federation_dns"):
        out.append(Expected(cluster, "cloudflare:index/dnsRecord:DnsRecord", "DnsRecord", "", dns["hostname"],
                            {"zoneId": dns.get("zone_id", DNS_ZONE), "name": dns["hostname"], "type": "CNAME",
                             "content": dns["target"], "ttl": 300, "proxied": False},
                            (IAC_DNS.of("FederationDns: ttl=300, proxied=False"), IAC_PROGRAM.of("FederationDnsArgs(spec=...)"))))
    return out


# --- GCP -----------------------------------------------------------------------------------

DOCKER_HUB_URI = "https://registry-1.docker.io"            # registries.py@7caf86cc DOCKER_HUB_URI
DEFAULT_MIRROR_CLEANUP = [  # config.py@9d17f338 DEFAULT_MIRROR_CLEANUP_POLICIES
    {"id": "delete-older-than-30d", "action": "DELETE", "older_than": "2592000s"},
    {"id": "keep-latest", "action": "KEEP", "keep_count": 16},
]


def _cleanup(p: dict) -> dict:
    # registries.py@7caf86cc _cleanup_policy (config.py: tag_state defaults to "ANY").
    if p["action"] == "KEEP":
        return {"id": p["id"], "action": "KEEP", "mostRecentVersions": {"keepCount": p["keep_count"]}}
    return {"id": p["id"], "action": "DELETE",
            "condition": {"tagState": p.get("tag_state", "ANY"), "olderThan": p["older_than"]}}


def gcp(cluster: str, cfg: dict) -> list[Expected]:
    """GcpStaticAddresses (addresses.py@031c515d) and GcpArtifactRegistries
    (registries.py@7caf86cc): one Address per address, one Repository per (registry, location)."""
    g, out = cfg["provisioning"]["gcp"], []
    for a in g.get("addresses", []):
        inputs = {"name": a["name"], "project": g["project"], "region": a["region"], "address": a["address"],
                  "addressType": "EXTERNAL", **({"description": a["description"]} if a.get("description") else {})}
        out.append(Expected(cluster, "gcp:compute/address:Address", "Address", "", a["name"], inputs,
                            (IAC_ADDRESSES.of("GcpStaticAddresses"),), options={"retainOnDelete": True}))
    for r in g.get("registries", []):
        upstream = DOCKER_HUB_URI if r["docker_upstream"] == "DOCKER_HUB" else r["docker_upstream"]
        for loc in r.get("locations", []):
            inputs = {"project": g["project"], "location": loc, "repositoryId": r["name"], "format": "DOCKER",
                      "mode": "REMOTE_REPOSITORY",
                      **({"description": r["description"]} if r.get("description") else {}),
                      "remoteRepositoryConfig": {"commonRepository": {"uri": upstream}},
                      "cleanupPolicies": [_cleanup(p) for p in r.get("cleanup_policies", DEFAULT_MIRROR_CLEANUP)],
                      "cleanupPolicyDryRun": False}
            out.append(Expected(cluster, "gcp:artifactregistry/repository:Repository", "Repository", loc, r["name"],
                                inputs, (IAC_REGISTRIES.of("GcpArtifactRegistries, remote_repository_config"),
                                         IAC_CONFIG.of("DEFAULT_MIRROR_CLEANUP_POLICIES"))))
    return out


def catalogue(cluster: str, cfg: dict) -> list[Expected]:
    """Every object Marin's program declares for ``cfg`` (program.py@12deed0d build_stack:
    CoreWeave or GCP by provisioning.provider), in declaration order."""
    if cfg["provisioning"]["provider"] == "gcp":
        return gcp(cluster, cfg)
    return [*nodepools(cluster, cfg), *rbac(cluster, cfg), *kueue(cluster, cfg), *ingress(cluster, cfg)]


# --- matching a plan -----------------------------------------------------------------------

def plan_key(r: Any) -> tuple[str, str, str] | None:
    """The catalogue key (kind, namespace, name) of a planned resource (a
    clusterstack.plan.PlannedResource); None for components, providers and the Stack."""
    if not r.custom or r.type.startswith("pulumi:"):
        return None
    kind = r.type.rsplit(":", 1)[1]
    if r.type == "kubernetes:helm.sh/v3:Release":
        return ("Release", r.inputs["namespace"], r.inputs["name"])
    if r.type == "kubernetes:apps/v1:DeploymentPatch":
        kind = "Deployment"
    if r.type == "gcp:artifactregistry/repository:Repository":
        return ("Repository", r.inputs["location"], r.inputs["repositoryId"])
    if r.type in ("gcp:compute/address:Address", "cloudflare:index/dnsRecord:DnsRecord"):
        return (kind, "", r.inputs["name"])
    meta = r.inputs.get("metadata")
    if isinstance(meta, dict):
        return (kind, meta.get("namespace", ""), meta["name"])
    return (kind, "", r.name)
