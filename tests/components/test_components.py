"""Components under Pulumi mocks: each one is run through clusterstack.plan.run_program (the
capturing MockMonitor) and its RegisterResource requests — type, inputs, parent, provider and
resource options — are checked against the product's rules."""

from __future__ import annotations

import json
from dataclasses import replace

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest
from ruamel.yaml import YAML

from clusterstack import secrets
from clusterstack.config.secretspec import SecretSpec
from clusterstack.components.coreweave.ingress import (CERT_MANAGER_CHART, LE_PRODUCTION, LE_STAGING,
                                                       TRAEFIK_CHART, Ingress, IngressArgs)
from clusterstack.components.coreweave.kueue import Kueue, KueueArgs
from clusterstack.components.coreweave.nodepools import NodePools, NodePoolsArgs
from clusterstack.components.coreweave.rbac import Rbac, RbacArgs
from clusterstack.components.dns import FederationDns, FederationDnsArgs
from clusterstack.components.gcp.addresses import AddressSpec, StaticAddresses, StaticAddressesArgs
from clusterstack.components.gcp.registries import RegistryMirrors, RegistryMirrorsArgs, RegistrySpec
from clusterstack.config.cluster import Ingress as IngressConfig
from clusterstack.config.cluster import DEFAULT_CLEANUP, Registry
from clusterstack.derive import ChartPlacement, FlavorQuota, NodePoolSpec
from clusterstack.derive.kueue import ClusterQueueSpec, TopologySpec
from clusterstack.plan import StackPlan, dumps, run_program
from clusterstack.plan.model import PlannedResource
from clusterstack.pulumi.tokens import NODEPOOL as NODEPOOL_TYPE
from clusterstack.pulumi.values import SECRET

PROJECT, STACK = "unit", "test"
ROOT = f"urn:pulumi:{STACK}::{PROJECT}::"
K8S_PROVIDER = f"{ROOT}pulumi:providers:kubernetes::k8s"
GCP_PROVIDER = f"{ROOT}pulumi:providers:gcp::gcp"


def run(program) -> StackPlan:
    return run_program(PROJECT, STACK, {}, program)


def k8s_provider() -> k8s.Provider:
    return k8s.Provider("k8s", context="ctx", kubeconfig="")


def of_type(plan: StackPlan, type_: str) -> dict[str, PlannedResource]:
    return {r.name: r for r in plan.resources if r.type == type_}


def one(plan: StackPlan, type_: str) -> PlannedResource:
    (r,) = of_type(plan, type_).values()
    return r


def component_urn(type_: str, name: str) -> str:
    return f"{ROOT}{type_}::{name}"


def assert_child(r: PlannedResource, component_type: str, component_name: str, provider: str | None):
    """``r`` is a custom resource parented to the component and using the explicit provider."""
    assert r.custom
    assert r.parent == component_urn(component_type, component_name)
    assert r.urn == f"{ROOT}{component_type}${r.type}::{r.name}"
    assert r.provider == provider


# ---------------------------------------------------------------------------------------
# NodePools

LABELS = (("lab/managed", "true"), ("lab/scale-group", "x"))
POOLS = (
    NodePoolSpec("lab-cpu", "cpu", "cd-gp-i64-erapids", 2, 4, None,
                 LABELS + (("lab/extra", "true"),)),
    NodePoolSpec("lab-cold", "cold", "gd-8xh100ib-i128", 0, 16, None, LABELS),
    NodePoolSpec("lab-gb200", "gb200", "gb200-4x", 216, 216, 12, LABELS),
)


@pytest.fixture(scope="module")
def nodepools_plan() -> StackPlan:
    return run(lambda: NodePools("nodepools", NodePoolsArgs(pools=POOLS), provider=k8s_provider()))


def test_every_nodepool_is_protected_and_uses_the_provider(nodepools_plan):
    comp = one(nodepools_plan, "clusterstack:coreweave:NodePools")
    assert comp.parent == f"{ROOT}pulumi:pulumi:Stack::{PROJECT}-{STACK}" and not comp.custom
    pools = of_type(nodepools_plan, NODEPOOL_TYPE)
    assert sorted(pools) == sorted(p.name for p in POOLS)
    for r in pools.values():
        assert r.protect is True
        assert not r.retain_on_delete
        assert_child(r, "clusterstack:coreweave:NodePools", "nodepools", K8S_PROVIDER)
        assert r.inputs["apiVersion"] == "compute.coreweave.com/v1alpha1"
        assert r.inputs["kind"] == "NodePool"
        assert r.inputs["metadata"] == {"name": r.name}


@pytest.mark.parametrize("name", ["lab-cpu", "lab-cold"])
def test_autoscaled_pool_seeds_target_and_ignores_it(nodepools_plan, name):
    pool = next(p for p in POOLS if p.name == name)
    r = of_type(nodepools_plan, NODEPOOL_TYPE)[name]
    assert r.ignore_changes == ("spec.targetNodes",)
    assert r.inputs["spec"] == {
        "computeClass": "default", "instanceType": pool.instance_type,
        "nodeLabels": dict(pool.node_labels), "autoscaling": True,
        "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes, "targetNodes": pool.min_nodes,
    }


def test_nvl72_pool_declares_whole_racks_and_no_autoscaler(nodepools_plan):
    r = of_type(nodepools_plan, NODEPOOL_TYPE)["lab-gb200"]
    assert r.ignore_changes == ()
    assert r.inputs["spec"] == {"computeClass": "default", "instanceType": "gb200-4x",
                                "nodeLabels": dict(LABELS), "targetRacks": 12}


# ---------------------------------------------------------------------------------------
# RBAC

# What the controller needs, by least privilege: in its namespace,
# pods incl. exec/log, configmaps, PodDisruptionBudgets, Kueue workloads (read, cancel) and
# LocalQueues (read); cluster-wide only nodes, priority classes and NodePools, all read-only.
# No wildcards, no NodePool writes, no workloads/status.
CRUD = {"get", "list", "watch", "create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}
CONTROLLER_NAMESPACE_NEEDS = {
    ("", "pods"): READ | {"create", "delete"},
    ("", "pods/exec"): {"get", "create"},
    ("", "pods/log"): {"get"},
    ("", "configmaps"): CRUD,
    ("policy", "poddisruptionbudgets"): READ | {"create", "delete"},
    ("kueue.x-k8s.io", "workloads"): READ | {"delete"},
    ("kueue.x-k8s.io", "localqueues"): READ,
}
CONTROLLER_CLUSTER_NEEDS = {
    ("", "nodes"): READ,
    ("scheduling.k8s.io", "priorityclasses"): READ,
    ("compute.coreweave.com", "nodepools"): READ,
}


def grants(rules: list[dict]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        assert set(rule) == {"apiGroups", "resources", "verbs"}
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                out.setdefault((g, res), set()).update(rule["verbs"])
    return out


def rbac_plan(observers: tuple[str, ...]) -> StackPlan:
    return run(lambda: Rbac("rbac", RbacArgs(namespace="training", service_account="controller",
                                             name_prefix="lab", observer_usernames=observers),
                            provider=k8s_provider()))


def test_rbac_controller_role_and_binding():
    plan = rbac_plan(())
    ns = one(plan, "kubernetes:core/v1:Namespace")
    sa = one(plan, "kubernetes:core/v1:ServiceAccount")
    roles = of_type(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    bindings = of_type(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    ns_role = one(plan, "kubernetes:rbac.authorization.k8s.io/v1:Role")
    ns_binding = one(plan, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    assert set(roles) == set(bindings) == {"lab-controller"}  # no observer without usernames
    for r in (ns, sa, ns_role, ns_binding, *roles.values(), *bindings.values()):
        assert_child(r, "clusterstack:coreweave:Rbac", "rbac", K8S_PROVIDER)
    assert ns.inputs["metadata"] == {"name": "training"}
    assert sa.inputs["metadata"] == {"name": "controller", "namespace": "training"}
    assert sa.dependencies == (ns.urn,)
    subjects = [{"kind": "ServiceAccount", "name": "controller", "namespace": "training"}]
    # the namespaced Role: pods, exec, logs, configmaps … in the workload namespace only
    assert ns_role.inputs["metadata"] == {"name": "lab-controller", "namespace": "training"}
    assert grants(ns_role.inputs["rules"]) == CONTROLLER_NAMESPACE_NEEDS
    assert ns_binding.inputs["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                            "name": "lab-controller"}
    assert ns_binding.inputs["subjects"] == subjects
    assert set(ns_binding.dependencies) == {ns.urn, ns_role.urn, sa.urn}
    # the ClusterRole: only what is cluster-scoped, read-only
    role, binding = roles["lab-controller"], bindings["lab-controller"]
    assert grants(role.inputs["rules"]) == CONTROLLER_CLUSTER_NEEDS
    assert binding.inputs["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                         "name": "lab-controller"}
    assert binding.inputs["subjects"] == subjects
    assert set(binding.dependencies) == {role.urn, sa.urn}


def test_rbac_observer_binds_the_listed_users_read_only():
    plan = rbac_plan(("zed-readonly", "amy-readonly"))
    role = of_type(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")["lab-node-observer"]
    binding = of_type(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")["lab-node-observer"]
    assert grants(role.inputs["rules"]) == {("", "nodes"): READ}
    assert binding.inputs["roleRef"]["name"] == "lab-node-observer"
    # in the reviewed config's order (Marin binds in config order: rbac.py@17c9466c)
    assert binding.inputs["subjects"] == [
        {"kind": "User", "name": "zed-readonly", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "User", "name": "amy-readonly", "apiGroup": "rbac.authorization.k8s.io"},
    ]
    assert "labels" not in role.inputs["metadata"]      # the "nodes" preset carries none
    assert binding.dependencies == (role.urn,)


# ---------------------------------------------------------------------------------------
# Kueue

LEVELS = {
    "infiniband": ["backend.coreweave.cloud/fabric", "backend.coreweave.cloud/leafgroup",
                   "kubernetes.io/hostname"],
    "multinode-nvlink-ib": ["backend.coreweave.cloud/fabric", "backend.coreweave.cloud/leafgroup",
                            "ds.coreweave.com/nvlink.domain", "kubernetes.io/hostname"],
}
RESOURCES = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/ib"]
CPU_FLAVOR = FlavorQuota("lab-cpu", (("lab/scale-group", "cpu"),), False,
                         (("cpu", 256), ("memory", "2Ti"), ("ephemeral-storage", "28Ti"),
                          ("nvidia.com/gpu", 0), ("rdma/ib", 0)), topology="hostname")
GPU_FLAVOR = FlavorQuota("lab-h100", (("lab/scale-group", "h100"),), True,
                         (("cpu", 1536), ("memory", "24Ti"), ("ephemeral-storage", "12T"),
                          ("nvidia.com/gpu", 96), ("rdma/ib", 96)), tolerations=("nvidia.com/gpu",),
                         node_taints=(("nvidia.com/gpu", "present", "NoSchedule"),))


def kueue_plan(topology: str, *, jobset: bool = False, placement: ChartPlacement | None = None) -> StackPlan:
    gpu = replace(GPU_FLAVOR, topology=topology)
    args = KueueArgs(name_prefix="lab", namespace="training", manager_memory_limit="6Gi", qps=150, burst=300,
                     queue=ClusterQueueSpec("team-cq", (CPU_FLAVOR, gpu), "training"),
                     topologies=(TopologySpec(topology, tuple(LEVELS[topology]), True),
                                 TopologySpec("hostname", ("kubernetes.io/hostname",), True)),
                     jobset=jobset, placement=placement or ChartPlacement((), 1))

    def program():
        kueue = Kueue("kueue", args, provider=k8s_provider())
        kueue.local_queue(None)
    return run(program)


@pytest.mark.parametrize("topology", sorted(LEVELS))
def test_kueue(topology):
    plan = kueue_plan(topology)
    comp = ("clusterstack:coreweave:Kueue", "kueue")

    release = one(plan, "kubernetes:helm.sh/v3:Release")
    assert_child(release, *comp, K8S_PROVIDER)
    assert release.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.inputs["version"][0].isdigit()  # pinned, not a range
    assert release.inputs["namespace"] == "kueue-system"
    # waits for its pods longer than bare metal takes to deliver a node, rolls back on failure
    assert release.inputs["atomic"] is True and release.inputs["timeout"] == 2700
    manager = release.inputs["values"]["controllerManager"]["manager"]
    assert manager["resources"] == {"limits": {"memory": "6Gi"}, "requests": {"memory": "6Gi"}}
    assert manager["priorityClassName"] == "lab-system"  # the manager runs on the system class
    conf = YAML(typ="safe").load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert conf["apiVersion"] == "config.kueue.x-k8s.io/v1beta1" and conf["kind"] == "Configuration"
    assert conf["clientConnection"] == {"qps": 150, "burst": 300}
    # webhooks scoped to the workload namespace; no JobSet integration without JobSet
    assert conf["managedJobsNamespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["training"]}]}
    assert conf["manageJobsWithoutQueueName"] is False
    assert conf["integrations"]["frameworks"] == ["batch/job", "pod"]

    topos = of_type(plan, "kubernetes:kueue.x-k8s.io/v1beta1:Topology")
    topo = topos[topology]
    assert topo.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert topo.inputs["metadata"] == {"name": topology}
    assert topo.inputs["spec"] == {"levels": [{"nodeLabel": lvl} for lvl in LEVELS[topology]]}
    assert topos["hostname"].inputs["spec"] == {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}
    assert topo.dependencies == (release.urn,)
    assert topo.replace_on_changes == ("spec",) and topo.delete_before_replace

    # one flavor per pool, every one topology-aware: CPU on the hostname Topology, GPU on the
    # fabric Topology, tolerating the GPU nodes' taint
    flavors = of_type(plan, "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor")
    assert set(flavors) == {"lab-cpu", "lab-h100"}
    assert flavors["lab-cpu"].inputs["spec"] == {"nodeLabels": {"lab/scale-group": "cpu"}, "topologyName": "hostname"}
    assert flavors["lab-h100"].inputs["spec"] == {
        "nodeLabels": {"lab/scale-group": "h100"},
        "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "topologyName": topology}
    assert set(flavors["lab-h100"].dependencies) == {release.urn, topo.urn}
    assert flavors["lab-h100"].property_dependencies == {"spec": (topo.urn,)}
    assert set(flavors["lab-cpu"].dependencies) == {release.urn, topos["hostname"].urn}
    for f in flavors.values():
        assert f.replace_on_changes == ("spec",) and f.delete_before_replace

    cq = one(plan, "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
    assert cq.name == "team-cq" and cq.inputs["metadata"] == {"name": "team-cq"}
    spec = cq.inputs["spec"]
    assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "training"}}
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
    (rg,) = spec["resourceGroups"]
    assert rg["coveredResources"] == RESOURCES
    assert rg["flavors"] == [
        {"name": "lab-cpu", "resources": [{"name": r, "nominalQuota": q} for r, q in CPU_FLAVOR.quotas]},
        {"name": "lab-h100", "resources": [{"name": r, "nominalQuota": q} for r, q in GPU_FLAVOR.quotas]}]
    assert set(cq.dependencies) == {release.urn, *(f.urn for f in flavors.values())}
    # replaced with its topology-bound flavors and their Topologies, deleted before them
    assert set(cq.replace_with) == {*(f.urn for f in flavors.values()), *(t.urn for t in topos.values())}
    assert cq.delete_before_replace and cq.replace_on_changes == ()

    lq = one(plan, "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue")
    assert lq.inputs["metadata"] == {"name": "team-cq", "namespace": "training"}
    assert lq.inputs["spec"] == {"clusterQueue": "team-cq"}
    assert cq.urn in lq.dependencies and release.urn in lq.dependencies

    pc = one(plan, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert pc.inputs["metadata"] == {"name": "lab-system"}
    assert pc.inputs["globalDefault"] is False and pc.inputs["value"] > 0
    assert pc.inputs["preemptionPolicy"] == "PreemptLowerPriority"
    assert pc.urn in release.dependencies  # the class exists before the manager asks for it
    assert pc.replace_on_changes == ("value", "preemptionPolicy") and pc.delete_before_replace
    for r in (*topos.values(), *flavors.values(), cq, lq, pc):
        assert_child(r, *comp, K8S_PROVIDER)


def test_kueue_manager_is_pinned_replicated_and_disruption_budgeted():
    """kueue values.yaml (../shared/reference/kueue-v0.14.4/charts/kueue): controllerManager
    .nodeSelector, .replicas, .podDisruptionBudget {enabled, minAvailable}."""
    plan = kueue_plan("infiniband", placement=ChartPlacement((("lab/scale-group", "cpu"),), 2))
    cm = one(plan, "kubernetes:helm.sh/v3:Release").inputs["values"]["controllerManager"]
    assert cm["nodeSelector"] == {"lab/scale-group": "cpu"} and cm["replicas"] == 2
    assert cm["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    # spread over nodes, selecting the manager pods by the chart's selector labels (kueue v0.14.4
    # charts/kueue/templates/_helpers.tpl "kueue.selectorLabels" L48-51)
    assert cm["topologySpreadConstraints"] == [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/instance": "kueue",
                                          "control-plane": "controller-manager"}}}]
    # one replica (Marin's): the chart's defaults, no keys at all
    cm = one(kueue_plan("infiniband"), "kubernetes:helm.sh/v3:Release").inputs["values"]["controllerManager"]
    assert not {"nodeSelector", "replicas", "podDisruptionBudget", "topologySpreadConstraints"} & set(cm)


def test_kueue_enables_jobset_only_when_installed():
    release = one(kueue_plan("infiniband", jobset=True), "kubernetes:helm.sh/v3:Release")
    conf = json.loads(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert conf["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "pod"]


# ---------------------------------------------------------------------------------------
# Ingress

def ingress_plan(hostname: str | None, issuers=("letsencrypt-http01-staging", "letsencrypt-http01-prod"),
                 active="letsencrypt-http01-prod") -> tuple[StackPlan, tuple[str, ...]]:
    sources = IngressConfig.model_validate({
        "acme_email": "ops@example.org", "cluster_issuers": list(issuers), "active_cluster_issuer": active,
        "federation_allow_sources": ["203.0.113.10", "2001:db8::1", "198.51.100.0/24"],
    }).federation_allow_sources

    def program():
        p = k8s_provider()
        ns = k8s.core.v1.Namespace("training", metadata={"name": "training"},
                                   opts=pulumi.ResourceOptions(provider=p))
        Ingress("ingress", IngressArgs(
            namespace="training", name_prefix="lab", ingress_class="traefik", acme_email="ops@example.org",
            cluster_issuers=issuers, active_cluster_issuer=active, allow_sources=sources,
            service_name="controller-svc", service_port=10000, hostname=hostname,
            external_hostname="ctl.abc123-c.coreweave.app" if hostname else None),
            provider=p, namespace=ns)
    return run(program), sources


def test_cluster_issuers_use_staging_or_production_acme():
    plan, _ = ingress_plan("ctl.example.org")
    cert_manager = of_type(plan, "kubernetes:helm.sh/v3:Release")["cert-manager"]
    issuers = of_type(plan, "kubernetes:cert-manager.io/v1:ClusterIssuer")
    assert set(issuers) == {"letsencrypt-http01-staging", "letsencrypt-http01-prod"}
    assert LE_STAGING == "https://acme-staging-v02.api.letsencrypt.org/directory"
    assert LE_PRODUCTION == "https://acme-v02.api.letsencrypt.org/directory"
    for name, r in issuers.items():
        assert_child(r, "clusterstack:coreweave:Ingress", "ingress", K8S_PROVIDER)
        assert r.inputs["metadata"] == {"name": name}
        assert r.inputs["spec"] == {"acme": {
            "email": "ops@example.org",
            "server": LE_STAGING if "staging" in name else LE_PRODUCTION,
            "privateKeySecretRef": {"name": f"{name}-account-key"},
            "solvers": [{"http01": {"ingress": {"ingressClassName": "traefik"}}}],
        }}
        assert r.dependencies == (cert_manager.urn,)


def test_helm_releases_are_pinned():
    plan, _ = ingress_plan(None)
    releases = of_type(plan, "kubernetes:helm.sh/v3:Release")
    for chart in (CERT_MANAGER_CHART, TRAEFIK_CHART):
        name, repo, version = chart.chart, chart.repo, chart.version
        r = releases[chart.release]
        assert (r.inputs["chart"], r.inputs["repositoryOpts"], r.inputs["version"]) == (name, {"repo": repo}, version)
        assert version.lstrip("v")[0].isdigit() and not any(c in version for c in "^~*<>")
    assert releases["cert-manager"].inputs["values"] == {"crds": {"enabled": True}}
    assert releases["traefik"].inputs["values"]["ingressClass"]["name"] == "traefik"


@pytest.mark.parametrize("hostname", ["ctl.example.org", None])
def test_traefik_service_is_a_public_coreweave_load_balancer_keeping_client_ips(hostname):
    # CoreWeave "Create a public DNS name": public LB type, the *.coreweave.app name, and
    # externalTrafficPolicy: Local so the IP allowlist sees the client's address.
    plan, _ = ingress_plan(hostname)
    service = of_type(plan, "kubernetes:helm.sh/v3:Release")["traefik"].inputs["values"]["service"]
    expected = {"service.beta.kubernetes.io/coreweave-load-balancer-type": "public"}
    if hostname:
        expected["service.beta.kubernetes.io/external-hostname"] = "ctl.abc123-c.coreweave.app"
    assert service == {"annotations": expected, "spec": {"externalTrafficPolicy": "Local"}}


def test_allowlist_middleware_has_normalised_sources():
    plan, sources = ingress_plan("ctl.example.org")
    assert sources == ("203.0.113.10/32", "2001:db8::1/128", "198.51.100.0/24")
    mw = one(plan, "kubernetes:traefik.io/v1alpha1:Middleware")
    assert mw.inputs["metadata"] == {"name": "federation-allowlist", "namespace": "training"}
    assert mw.inputs["spec"] == {"ipAllowList": {"sourceRange": list(sources)}}


def test_federation_ingress_with_dns_has_host_and_tls():
    plan, _ = ingress_plan("ctl.example.org", active="letsencrypt-http01-staging")
    ing = one(plan, "kubernetes:networking.k8s.io/v1:Ingress")
    assert_child(ing, "clusterstack:coreweave:Ingress", "ingress", K8S_PROVIDER)
    assert ing.inputs["metadata"] == {"name": "lab-federation", "namespace": "training", "annotations": {
        "cert-manager.io/cluster-issuer": "letsencrypt-http01-staging",
        "traefik.ingress.kubernetes.io/router.middlewares": "training-federation-allowlist@kubernetescrd",
    }}
    spec = ing.inputs["spec"]
    assert spec["ingressClassName"] == "traefik"
    (rule,) = spec["rules"]
    assert rule["host"] == "ctl.example.org"
    assert rule["http"]["paths"] == [{"path": "/", "pathType": "Prefix", "backend": {
        "service": {"name": "controller-svc", "port": {"number": 10000}}}}]
    assert spec["tls"] == [{"hosts": ["ctl.example.org"], "secretName": "lab-federation-tls"}]
    ns_urn = next(r.urn for r in plan.resources if r.type == "kubernetes:core/v1:Namespace")
    traefik = of_type(plan, "kubernetes:helm.sh/v3:Release")["traefik"]
    # and after every ClusterIssuer: cert-manager's ingress-shim looks up the annotated one
    issuers = of_type(plan, "kubernetes:cert-manager.io/v1:ClusterIssuer")
    assert set(ing.dependencies) == {ns_urn, traefik.urn, *(i.urn for i in issuers.values())}


def test_federation_ingress_without_dns_has_no_host_and_no_tls():
    plan, _ = ingress_plan(None)
    spec = one(plan, "kubernetes:networking.k8s.io/v1:Ingress").inputs["spec"]
    assert "tls" not in spec
    assert [set(rule) for rule in spec["rules"]] == [{"http"}]


# ---------------------------------------------------------------------------------------
# DNS

DNS_COMP = ("clusterstack:cloudflare:FederationDns", "dns")
CF_PROVIDER = f"{ROOT}clusterstack:cloudflare:FederationDns$pulumi:providers:cloudflare::cloudflare"


def dns_plan(token) -> StackPlan:
    return run(lambda: FederationDns("dns", FederationDnsArgs(
        zone_id="0123456789abcdef0123456789abcdef", hostname="ctl.example.org",
        target="ctl.cluster.coreweave.app", api_token=token())))


def test_dns_record_is_protected_unproxied_cname_with_a_secret_token():
    plan = dns_plan(lambda: pulumi.Output.secret("cf-token-value-1234"))
    provider = one(plan, "pulumi:providers:cloudflare")
    assert provider.urn == CF_PROVIDER and provider.parent == component_urn(*DNS_COMP)
    assert provider.inputs == {"apiToken": SECRET}
    record = one(plan, "cloudflare:index/dnsRecord:DnsRecord")
    assert_child(record, *DNS_COMP, CF_PROVIDER)
    assert record.protect is True
    assert record.inputs == {"zoneId": "0123456789abcdef0123456789abcdef", "name": "ctl.example.org",
                             "type": "CNAME", "content": "ctl.cluster.coreweave.app",
                             "proxied": False, "ttl": 1}
    assert "cf-token-value-1234" not in dumps([plan])


def test_dns_token_from_a_spec_is_never_resolved_offline(monkeypatch):
    monkeypatch.delenv("CLUSTERSTACK_TEST_NO_SUCH_TOKEN", raising=False)
    spec = SecretSpec.parse("env:CLUSTERSTACK_TEST_NO_SUCH_TOKEN")
    plan = dns_plan(lambda: secrets.resolve_output(spec))
    assert one(plan, "pulumi:providers:cloudflare").inputs == {"apiToken": SECRET}


def test_token_spec_text_never_appears_in_the_example_plans(example_plans, repo_root):
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace

    ws = Workspace.load(repo_root)
    for stack in ("cw-demo-h100", "cw-demo-gb200"):
        spec = str(load_cluster(ws, stack).config.provisioning.coreweave.federation_dns.api_token)
        text = dumps([example_plans[stack]])
        assert spec not in text and "cloudflare-dns-token" not in text
        assert one(example_plans[stack], "pulumi:providers:cloudflare").inputs == {"apiToken": SECRET}


# ---------------------------------------------------------------------------------------
# GCP

def test_static_addresses_external_protected_and_retained():
    def program():
        p = gcp.Provider("gcp", project="demo-project")
        StaticAddresses("addresses", StaticAddressesArgs(project="demo-project", addresses=(
            AddressSpec("ingress", "us-central1", "34.16.10.20", "Pinned; forces a replace"),
            AddressSpec("relay", "us-east5", "34.16.10.21", None))), provider=p)
    plan = run(program)
    assert one(plan, "pulumi:providers:gcp").inputs == {"project": "demo-project"}
    addrs = of_type(plan, "gcp:compute/address:Address")
    assert set(addrs) == {"ingress", "relay"}
    for r in addrs.values():
        assert_child(r, "clusterstack:gcp:StaticAddresses", "addresses", GCP_PROVIDER)
        assert r.protect is True and r.retain_on_delete is True
        assert r.inputs["addressType"] == "EXTERNAL" and r.inputs["name"] == r.name
        assert r.inputs["project"] == "demo-project"
    assert addrs["ingress"].inputs == {"name": "ingress", "project": "demo-project", "region": "us-central1",
                                       "address": "34.16.10.20", "addressType": "EXTERNAL",
                                       "description": "Pinned; forces a replace"}
    assert "description" not in addrs["relay"].inputs  # unset, not an empty (different) description


DEFAULT_POLICIES = [
    {"id": "delete-older-than-30d", "action": "DELETE", "condition": {"olderThan": "2592000s", "tagState": "ANY"}},
    {"id": "keep-newest-16", "action": "KEEP", "mostRecentVersions": {"keepCount": 16}},
]


def test_registry_per_location_with_cleanup_policies():
    registries = [
        Registry.model_validate({"name": "hub", "docker_upstream": "DOCKER_HUB", "locations": ["us", "europe"],
                                 "description": "Docker Hub"}),
        Registry.model_validate({"name": "ghcr", "docker_upstream": "https://ghcr.io", "locations": ["asia"],
                                 "cleanup_policies": [
                                     {"action": "DELETE", "id": "old", "older_than": "86400s", "tag_state": "UNTAGGED"},
                                     {"action": "KEEP", "id": "keep-3", "keep_count": 3}]}),
    ]

    def program():
        p = gcp.Provider("gcp", project="demo-project")
        RegistryMirrors("registries", RegistryMirrorsArgs(project="demo-project", registries=tuple(
            RegistrySpec(r.name, loc, r.docker_upstream, r.description, r.cleanup_policies or DEFAULT_CLEANUP,
                         f"{r.docker_upstream} mirror")
            for r in registries for loc in r.locations)), provider=p)
    repos = of_type(run(program), "gcp:artifactregistry/repository:Repository")
    assert set(repos) == {"hub-us", "hub-europe", "ghcr-asia"}
    for r in repos.values():
        assert_child(r, "clusterstack:gcp:RegistryMirrors", "registries", GCP_PROVIDER)
        assert (r.inputs["format"], r.inputs["mode"], r.inputs["project"]) == ("DOCKER", "REMOTE_REPOSITORY",
                                                                                "demo-project")
        assert r.inputs["cleanupPolicyDryRun"] is False
    for loc in ("us", "europe"):
        r = repos[f"hub-{loc}"]
        assert (r.inputs["repositoryId"], r.inputs["location"]) == ("hub", loc)
        # The API's canonical commonRepository form, Docker Hub by its registry URI.
        assert r.inputs["remoteRepositoryConfig"] == {
            "description": "DOCKER_HUB mirror", "commonRepository": {"uri": "https://registry-1.docker.io"}}
        assert r.inputs["cleanupPolicies"] == DEFAULT_POLICIES
    ghcr = repos["ghcr-asia"]
    assert ghcr.inputs["remoteRepositoryConfig"] == {
        "description": "https://ghcr.io mirror", "commonRepository": {"uri": "https://ghcr.io"}}
    assert ghcr.inputs["cleanupPolicies"] == [
        {"id": "old", "action": "DELETE", "condition": {"olderThan": "86400s", "tagState": "UNTAGGED"}},
        {"id": "keep-3", "action": "KEEP", "mostRecentVersions": {"keepCount": 3}},
    ]


# ---------------------------------------------------------------------------------------
# The program's wiring, on the shipped examples

@pytest.mark.parametrize("stack,context", [("cw-demo-h100", "demo-h100_US-EAST-04A"),
                                           ("cw-demo-gb200", "demo-gb200_US-WEST-09B")])
def test_every_kubernetes_resource_uses_the_explicit_provider(example_plans, stack, context):
    plan = example_plans[stack]
    (provider,) = [r for r in plan.resources if r.type == "pulumi:providers:kubernetes"]
    assert provider.name == "k8s"
    assert provider.inputs == {"context": context, "kubeconfig": ""}
    kube = [r for r in plan.resources if r.type.startswith("kubernetes:")]
    assert len(kube) >= 15
    assert {r.provider for r in kube} == {provider.urn}


def test_every_gcp_resource_uses_the_project_provider(example_plans):
    plan = example_plans["gcp-demo"]
    (provider,) = [r for r in plan.resources if r.type == "pulumi:providers:gcp"]
    assert provider.inputs == {"project": "demo-project"}
    assert {r.provider for r in plan.resources if r.type.startswith("gcp:")} == {provider.urn}
    repos = of_type(plan, "gcp:artifactregistry/repository:Repository")
    assert set(repos) == {"dockerhub-mirror-us", "dockerhub-mirror-europe", "ghcr-mirror-us"}
    assert repos["dockerhub-mirror-us"].inputs["cleanupPolicies"] == DEFAULT_POLICIES  # omitted in config


def test_example_exports(example_plans):
    assert example_plans["cw-demo-h100"].outputs == {
        "cluster": "cw-demo-h100", "cks_cluster": "demo-h100", "cluster_queue": "training-cq",
        "federation_hostname": "ctl-cw-demo-h100.example.org",
        "nodepools": ["cwdemo-cpu-general", "cwdemo-h100"]}
    gcp_outputs = {
        "cluster": "gcp-demo", "project": "demo-project",
        "addresses": {"controller-ingress": "34.16.10.20", "log-relay": "34.16.10.21"},
        "registries": ["europe/dockerhub-mirror", "us/dockerhub-mirror", "us/ghcr-mirror"]}
    assert {k: example_plans["gcp-demo"].outputs.get(k) for k in gcp_outputs} == gcp_outputs


def test_example_kueue_quota_and_rack_pool(example_plans):
    gb200 = example_plans["cw-demo-gb200"]
    pool = of_type(gb200, NODEPOOL_TYPE)["cwgb-gb200"]
    assert pool.inputs["spec"]["targetRacks"] == 12 and pool.ignore_changes == ()
    cq = one(gb200, "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
    # the CPU pool (controller, charts) first, then the racks
    cpu, flavor = cq.inputs["spec"]["resourceGroups"][0]["flavors"]
    assert cpu["name"] == "cwgb-cpu-general-flavor"
    assert flavor["name"] == "cwgb-gb200-flavor"
    nodes = 12 * 18  # 12 racks; per node 144 cores, 960GB, 13.97TiB, 4 GPUs (clusters/cw-demo-gb200.yaml)
    assert flavor["resources"] == [
        {"name": "cpu", "nominalQuota": nodes * 144},
        {"name": "memory", "nominalQuota": f"{nodes * 960}G"},
        {"name": "ephemeral-storage", "nominalQuota": str(nodes * int(13.97 * 2**40))},
        {"name": "nvidia.com/gpu", "nominalQuota": nodes * 4},
        {"name": "rdma/ib", "nominalQuota": nodes * 4}]
    release = of_type(gb200, "kubernetes:helm.sh/v3:Release")["kueue"]
    assert release.inputs["values"]["controllerManager"]["manager"]["resources"]["limits"] == {"memory": "8Gi"}
    conf = json.loads(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert conf["clientConnection"] == {"qps": 200, "burst": 400}
