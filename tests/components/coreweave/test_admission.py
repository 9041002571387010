"""What a shipped CoreWeave stack declares works once applied: Kueue admits
real workloads, the controller's RBAC cannot delete a NodePool, the federation Service is
public with the DNS record pointing at CoreWeave's name for it, and existing Topology state
is aliased rather than replaced.

Kueue's admission rules, as documented ("Cluster Queue": resource groups, flavors tried in
order, nominalQuota; pkg/scheduler/flavorassigner: "resource X unavailable in ClusterQueue"
when a requested resource is covered by no resource group): a workload is admitted to a
flavor when every resource its pod sets request is covered by that flavor's resource group
and the flavor's nominal quota of each is at least the total request. The queue must be
reachable: a LocalQueue in the workload's namespace naming the ClusterQueue, whose
namespaceSelector matches that namespace (``kubernetes.io/metadata.name`` is set on every
Namespace by the API server).

RBAC evaluation: Kubernetes "Using RBAC Authorization" — a request is allowed when some rule
of a Role bound in the request's namespace, or of a ClusterRole bound cluster-wide, matches its
apiGroup, resource and verb (``*`` matching anything).
"""

from __future__ import annotations

from dataclasses import dataclass


import pytest
from kubernetes.utils import parse_quantity

from clusterstack.plan import run_program

COREWEAVE = ("cw-demo-gb200", "cw-demo-h100")
NAMESPACE = "training"


def objects(plan, kind: str) -> list[dict]:
    return [r.inputs for r in plan.resources if r.type.startswith("kubernetes:") and r.inputs.get("kind") == kind]


# --- Kueue -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PodSet:
    count: int
    requests: dict[str, str | int]   # per pod


def admit(plan, namespace: str, queue_name: str, podsets: list[PodSet]) -> tuple[str | None, str]:
    """(flavor, reason): the flavor Kueue would assign to the workload, or None and why not."""
    (lq,) = [q for q in objects(plan, "LocalQueue")
             if q["metadata"] == {"name": queue_name, "namespace": namespace}] or [None]
    if lq is None:
        return None, f"no LocalQueue {namespace}/{queue_name}"
    cqs = {q["metadata"]["name"]: q for q in objects(plan, "ClusterQueue")}
    cq = cqs.get(lq["spec"]["clusterQueue"])
    if cq is None:
        return None, f"ClusterQueue {lq['spec']['clusterQueue']} does not exist"
    selector = cq["spec"].get("namespaceSelector", {})
    ns_labels = {"kubernetes.io/metadata.name": namespace}
    if any(ns_labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return None, f"namespace {namespace} does not match the ClusterQueue's namespaceSelector"
    flavors = {f["metadata"]["name"] for f in objects(plan, "ResourceFlavor")}
    total: dict[str, float] = {}
    for ps in podsets:
        for r, q in ps.requests.items():
            total[r] = total.get(r, 0) + ps.count * float(parse_quantity(q))
    assigned = None
    for r in total:
        if not any(r in rg["coveredResources"] for rg in cq["spec"]["resourceGroups"]):
            return None, f"resource {r} unavailable in ClusterQueue"
    for rg in cq["spec"]["resourceGroups"]:
        wanted = {r: n for r, n in total.items() if r in rg["coveredResources"]}
        if not wanted:
            continue
        for f in rg["flavors"]:
            assert f["name"] in flavors, f"ClusterQueue names ResourceFlavor {f['name']} nobody declares"
            quota = {x["name"]: float(parse_quantity(x["nominalQuota"])) for x in f["resources"]}
            if all(quota.get(r, 0) >= n for r, n in wanted.items()):
                assigned = f["name"]
                break
        else:
            return None, f"insufficient quota for {sorted(wanted)} in every flavor"
    return assigned, "admitted"


GPU_JOBS = {
    # 4 H100 nodes: per pod one node's GPUs, most of its cores and memory, one rdma/ib
    "cw-demo-h100": [PodSet(4, {"cpu": 120, "memory": "1800Gi", "ephemeral-storage": "500Gi",
                                "nvidia.com/gpu": 8, "rdma/ib": 1})],
    # one NVL72 rack: 18 pods of 4 GPUs
    "cw-demo-gb200": [PodSet(18, {"cpu": 140, "memory": "850Gi", "ephemeral-storage": "1Ti",
                                  "nvidia.com/gpu": 4, "rdma/ib": 1})],
}
EXPECTED_GPU_FLAVOR = {"cw-demo-h100": "cwdemo-h100-flavor", "cw-demo-gb200": "cwgb-gb200-flavor"}
# A CPU-only job lands on the CPU pool where there is one; the GB200 cluster has none (its
# cpu-login group is scheduler-only), so it runs on the GPU pool's spare cores.
EXPECTED_CPU_FLAVOR = {"cw-demo-h100": "cwdemo-cpu-general-flavor", "cw-demo-gb200": "cwgb-gb200-flavor"}


@pytest.mark.parametrize("stack", COREWEAVE)
def test_a_gpu_workload_requesting_cpu_memory_and_gpus_is_admitted(example_plans, stack):
    plan = example_plans[stack]
    queue = plan.outputs["cluster_queue"]
    assert admit(plan, NAMESPACE, queue, GPU_JOBS[stack]) == (EXPECTED_GPU_FLAVOR[stack], "admitted")


@pytest.mark.parametrize("stack", COREWEAVE)
def test_a_cpu_only_workload_is_admitted(example_plans, stack):
    plan = example_plans[stack]
    job = [PodSet(2, {"cpu": 4, "memory": "16Gi", "ephemeral-storage": "20Gi"})]
    assert admit(plan, NAMESPACE, plan.outputs["cluster_queue"], job) == (EXPECTED_CPU_FLAVOR[stack], "admitted")


@pytest.mark.parametrize("stack", COREWEAVE)
def test_quota_is_the_fleet_and_nothing_more(example_plans, stack):
    """The checker can say no: beyond the pools' capacity, an uncovered resource, another
    namespace."""
    plan = example_plans[stack]
    queue = plan.outputs["cluster_queue"]
    too_many = [PodSet(1000, GPU_JOBS[stack][0].requests)]
    assert admit(plan, NAMESPACE, queue, too_many)[0] is None
    fpga = [PodSet(1, {"cpu": 1, "memory": "1Gi", "example.com/fpga": 1})]
    assert admit(plan, NAMESPACE, queue, fpga) == (None, "resource example.com/fpga unavailable in ClusterQueue")
    assert admit(plan, "default", queue, GPU_JOBS[stack])[0] is None


def test_gpus_do_not_fit_the_cpu_pool(example_plans):
    plan = example_plans["cw-demo-h100"]
    (cq,) = objects(plan, "ClusterQueue")
    (rg,) = cq["spec"]["resourceGroups"]
    cpu = next(f for f in rg["flavors"] if f["name"] == "cwdemo-cpu-general-flavor")
    assert {r["name"]: r["nominalQuota"] for r in cpu["resources"]}["nvidia.com/gpu"] == 0
    flavors = {f["metadata"]["name"]: f["spec"] for f in objects(plan, "ResourceFlavor")}
    # each flavor selects exactly its own pool's nodes (the NodePool's scale-group label)
    pools = {p["metadata"]["name"]: p["spec"]["nodeLabels"] for p in objects(plan, "NodePool")}
    for pool, labels in pools.items():
        assert flavors[f"{pool}-flavor"]["nodeLabels"].items() <= labels.items()
    assert flavors["cwdemo-cpu-general-flavor"]["nodeLabels"] != flavors["cwdemo-h100-flavor"]["nodeLabels"]


# --- RBAC --------------------------------------------------------------------------------

def allowed(plan, namespace: str, sa: str, verb: str, group: str, resource: str, in_namespace: str | None) -> bool:
    """Kubernetes RBAC: may ServiceAccount ``namespace/sa`` ``verb`` ``group/resource`` in
    ``in_namespace`` (None: cluster-scoped)?"""
    subject = {"kind": "ServiceAccount", "name": sa, "namespace": namespace}

    def matches(rule: dict) -> bool:
        return (any(g in (group, "*") for g in rule["apiGroups"])
                and any(r in (resource, "*") for r in rule["resources"])
                and any(v in (verb, "*") for v in rule["verbs"]))

    roles = {("Role", r["metadata"]["namespace"], r["metadata"]["name"]): r["rules"] for r in objects(plan, "Role")}
    roles |= {("ClusterRole", None, r["metadata"]["name"]): r["rules"] for r in objects(plan, "ClusterRole")}
    bindings = [(b["roleRef"], None, b["subjects"]) for b in objects(plan, "ClusterRoleBinding")]
    bindings += [(b["roleRef"], b["metadata"]["namespace"], b["subjects"]) for b in objects(plan, "RoleBinding")]
    for ref, bound_ns, subjects in bindings:
        if subject not in subjects or (bound_ns is not None and bound_ns != in_namespace):
            continue
        key = (ref["kind"], bound_ns if ref["kind"] == "Role" else None, ref["name"])
        if any(matches(rule) for rule in roles.get(key, [])):
            return True
    return False


@pytest.mark.parametrize("stack", COREWEAVE)
def test_the_controller_cannot_delete_or_change_a_nodepool(example_plans, stack):
    plan = example_plans[stack]
    can = lambda verb, group, res, ns=None: allowed(plan, NAMESPACE, "controller", verb, group, res, ns)  # noqa: E731
    for verb in ("delete", "deletecollection", "create", "update", "patch"):
        assert not can(verb, "compute.coreweave.com", "nodepools")
    assert can("list", "compute.coreweave.com", "nodepools") and can("watch", "", "nodes")
    # pods, exec, logs, configmaps: in the workload namespace, nowhere else
    for verb, res in (("create", "pods"), ("create", "pods/exec"), ("get", "pods/log"), ("update", "configmaps")):
        assert can(verb, "", res, NAMESPACE)
        assert not can(verb, "", res, "kube-system") and not can(verb, "", res, None)
    assert not can("update", "kueue.x-k8s.io", "workloads/status", NAMESPACE)  # would bypass quota
    assert not can("delete", "", "nodes")


def test_every_controller_rule_names_the_action_that_needs_it():
    """Each controller rule in rbac.py is directly preceded by a comment."""
    import inspect

    from clusterstack.components.coreweave import rbac

    source = inspect.getsource(rbac)
    block = source[source.index("CONTROLLER_NAMESPACED_RULES"):source.index("OBSERVER_RULES")].splitlines()
    starts = [i for i, line in enumerate(block) if line.strip().startswith('{"apiGroups"')]
    assert len(starts) == len(rbac.CONTROLLER_NAMESPACED_RULES) + len(rbac.CONTROLLER_CLUSTER_RULES)
    for i in starts:
        assert block[i - 1].strip().startswith("#"), block[i]


# --- ingress and DNS ---------------------------------------------------------------------

@pytest.mark.parametrize("stack", COREWEAVE)
def test_federation_service_is_public_and_dns_targets_its_coreweave_name(example_plans, stack):
    plan = example_plans[stack]
    traefik = next(r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "traefik")
    service = traefik.inputs["values"]["service"]
    assert service["annotations"]["service.beta.kubernetes.io/coreweave-load-balancer-type"] == "public"
    assert service["spec"] == {"externalTrafficPolicy": "Local"}
    (record,) = [r for r in plan.resources if r.type == "cloudflare:index/dnsRecord:DnsRecord"]
    external = service["annotations"]["service.beta.kubernetes.io/external-hostname"]
    assert record.inputs["content"] == external
    assert external.endswith(f"-{plan.outputs['cks_cluster']}.coreweave.app")


# --- the Topology alias ------------------------------------------------------------------

def test_topology_is_aliased_from_its_v1alpha1_type():
    """State written by earlier versions holds the Topology under the v1alpha1 type token; the
    alias makes the engine rename it in place (Pulumi "Aliases")."""
    from clusterstack.components.coreweave.kueue import Kueue, KueueArgs
    from clusterstack.pulumi.tokens import KUEUE_TOPOLOGY_V1ALPHA1 as OLD_TOPOLOGY_TYPE
    import pulumi_kubernetes as k8s

    seen: dict[str, tuple] = {}

    def capture(request):
        seen[request.type] = (tuple(request.aliases), tuple(request.aliasURNs))

    args = KueueArgs(name_prefix="lab", cluster_queue="cq", namespace="training", flavor_topology="infiniband",
                     manager_memory_limit="4Gi", qps=1, burst=1, flavors=())
    run_program("unit", "test", {}, lambda: Kueue("kueue", args, provider=k8s.Provider(
        "k8s", context="ctx", kubeconfig="")), observe=capture)
    specs, urns = seen["kubernetes:kueue.x-k8s.io/v1beta1:Topology"]
    # one alias spec: the old type; name, project, stack and parent default to the resource's
    (alias,) = specs
    assert urns == () and alias.spec.type == OLD_TOPOLOGY_TYPE
    assert (alias.spec.name, alias.spec.project, alias.spec.stack) == ("", "", "")
    assert not alias.spec.noParent and alias.spec.parentUrn == ""


# --- bad input at load time --------------------------------------------------------------

@pytest.mark.parametrize("old,new,needle", [
    # the ClusterQueue quota needs every per-node figure of every pool
    ("disk: 6.98TiB, ", "", "scale_groups.cpu-general.resources.disk"),
    ("ram: 2048GB, ", "ram: lots, ", "scale_groups.h100.resources.ram"),
    # the DNS target is CoreWeave's name for this cluster's Service: <host>.<org>-<cluster>.coreweave.app
    ("ctl.abc123-demo-h100.coreweave.app", "ctl.demo-h100.coreweave.app", "federation_dns.target"),
    ("ctl.abc123-demo-h100.coreweave.app", "ctl.abc123-other.coreweave.app", "federation_dns.target"),
])
def test_bad_coreweave_config_is_a_located_error(workspace_copy, old, new, needle):
    from clusterstack.validation import load_cluster
    from clusterstack.errors import ConfigError
    from clusterstack.workspace import Workspace

    path = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ConfigError) as ei:
        load_cluster(Workspace.load(workspace_copy), "cw-demo-h100")
    rendered = ei.value.render()
    assert "cw-demo-h100.yaml:" in rendered and needle in rendered, rendered
