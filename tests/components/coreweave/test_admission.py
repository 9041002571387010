"""What a shipped CoreWeave stack declares works once applied: Kueue admits real
workloads, the controller's RBAC cannot delete a NodePool, the federation Service is public
with the DNS record pointing at CoreWeave's name for it, and existing Topology state is aliased
rather than replaced.

Kueue admission is decided by the Kueue 0.14.4 oracle (tests/oracles/kueue.py: coverage,
quota, flavor order, taints, the TAS-implied rule and topology placement on the nodes the
NodePools deliver, tests/oracles/coreweave.py), run on every shipped CoreWeave stack: the
examples, Marin's four clusters (examples/marin) and what ``clusterstack init`` writes.

RBAC evaluation: Kubernetes "Using RBAC Authorization" — a request is allowed when some rule
of a Role bound in the request's namespace, or of a ClusterRole bound cluster-wide, matches its
apiGroup, resource and verb (``*`` matching anything).
"""

from __future__ import annotations

import pytest

from oracles.coreweave import HOSTNAME, LEAFGROUP, NVLINK_DOMAIN, delivered_nodes, shapes_from_config, warm_nodes
from oracles.helm import RELEASE_TYPE, landing, pod_placements
from oracles.kueue import Objects, PodSet, admit, landing_nodes

from clusterstack.plan import run_program

COREWEAVE = ("cw-demo-gb200", "cw-demo-h100", "cw-demo-teams")
SHIPPED = ("cw-demo-h100", "cw-demo-gb200", "cw-demo-teams", "cw-rno2a", "cw-us-east-02a", "cw-us-east-08a",
           "cw-us-west-04a", "init:cw-new-lab", "init:cw-new-gb")
NAMESPACE = "training"


def objects(plan, kind: str) -> list[dict]:
    return [r.inputs for r in plan.resources if r.type.startswith("kubernetes:") and r.inputs.get("kind") == kind]


# --- Kueue -------------------------------------------------------------------------------

def stack(coreweave_stacks, name):
    if name not in coreweave_stacks:
        pytest.skip("Marin's configs are not in ../shared/reference/marin/lib/iris/config")
    return coreweave_stacks[name]


def gpu_group(cfg):
    """(scale group, warm nodes) of the stack's GPU pool (the largest by GPUs)."""
    from clusterstack.derive import derive_nodepools

    pools = [p for p in derive_nodepools(cfg) if p.gpu]
    pool = max(pools, key=lambda p: p.max_nodes)
    return cfg.scale_groups[pool.scale_group], pool


def workloads(cfg, plan):
    """A plain GPU job (no annotation), a plain CPU job and a TAS gang (one NVL72 rack, four
    nodes in one InfiniBand leaf group, or — on the hostname-only Topology, which has no fabric
    level to ask for — four nodes with the hostname level preferred), sized to the GPU pool's
    warm nodes."""
    sg, pool = gpu_group(cfg)
    spec = next(p for p in objects(plan, "NodePool") if p["metadata"]["name"] == pool.name)["spec"]
    warm = warm_nodes(spec)
    gpu_pod = {"cpu": 16, "memory": "64Gi", "ephemeral-storage": "100Gi",
               "nvidia.com/gpu": sg.resources.device_count, "rdma/ib": 1}
    topology = cfg.provisioning.coreweave.kueue.flavor_topology
    nvl72 = topology == "multinode-nvlink-ib"
    if topology == "hostname":
        gang = PodSet(min(4, warm), gpu_pod, preferred=HOSTNAME)
    else:
        gang = PodSet(min(18, warm) if nvl72 else min(4, warm), gpu_pod,
                      required=NVLINK_DOMAIN if nvl72 else LEAFGROUP)
    return {"gpu": PodSet(min(2, warm), gpu_pod),
            "cpu": PodSet(2, {"cpu": 4, "memory": "16Gi", "ephemeral-storage": "20Gi"}),
            "tas-gang": gang}


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("job", ["gpu", "cpu", "tas-gang"])
def test_a_plain_gpu_job_a_plain_cpu_job_and_a_tas_gang_are_admitted(coreweave_stacks, name, job):
    plan, cfg, conv = stack(coreweave_stacks, name)
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    ns, queue = cfg.kubernetes_provider.namespace, cfg.kubernetes_provider.kueue.cluster_queue
    found = Objects.from_plan(plan)
    if not conv.local_queue:
        # No LocalQueue declared ([conventions] local_queue = false, Marin's): the scheduler
        # reconciles its own, <label_prefix>-lq on the ClusterQueue, at controller start
        # (marin-community/marin lib/iris/config/cw-us-west-04a.yaml@0379ee52
        # kubernetes_provider.kueue: "Iris reconciles the namespaced LocalQueue").
        assert (ns, queue) not in found.local_queues
        lq = f"{cfg.platform.label_prefix}-lq"
        found.local_queues[(ns, lq)] = {"metadata": {"name": lq, "namespace": ns},
                                          "spec": {"clusterQueue": queue}}
        queue = lq
    verdict = admit(found, nodes, ns, queue, workloads(cfg, plan)[job])
    assert verdict.admitted, f"{name}: {job} not admitted: {verdict.reason}"
    flavor = next(f for f in objects(plan, "ResourceFlavor") if f["metadata"]["name"] == verdict.flavor)
    gpu_nodes = [n for n in nodes if n.allocatable.get("nvidia.com/gpu")]
    # the flavor it got selects GPU nodes for GPU work
    if job != "cpu":
        assert any(all(n.labels.get(k) == v for k, v in flavor["spec"]["nodeLabels"].items()) for n in gpu_nodes)


def _gpu_types() -> list[str]:
    from clusterstack.config.instances import INSTANCE_TYPES

    return sorted(name for name, t in INSTANCE_TYPES.items() if t.gpus)


@pytest.mark.parametrize("itype", _gpu_types())
def test_init_labs_of_every_gpu_type_admit_gpu_cpu_and_gang(tmp_path, itype):
    """What ``clusterstack init`` writes for each GPU type of the instance table (its own
    ``--help`` example is ``b200-8x``) admits a plain GPU job, a plain CPU job and a TAS gang
    on the nodes CoreWeave delivers. The oracle's nodes carry fabric labels only when the type's
    name says InfiniBand (tests/oracles/coreweave.py ``is_infiniband``): under the
    ``infiniband`` Topology the others would be listed by no TAS snapshot (kueue v0.14.4
    pkg/cache/scheduler/tas_flavor.go L107-113), so init binds them to ``hostname``."""
    from clusterstack.cli import main
    from clusterstack.config.instances import rack_size
    from clusterstack.plan import plan_stack
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace

    sizing = ["--racks", "1"] if rack_size(itype) else ["--nodes", "4"]
    lab = tmp_path / "lab"
    assert main(["init", str(lab), "--cluster", "cw-lab", "--provider", "coreweave", "--region", "US-EAST-04A",
                 "--instance-type", itype, *sizing, "--acme-email", "ops@example.org",
                 "--allow-source", "203.0.113.10"]) == 0
    ws = Workspace.load(lab)
    plan, cfg = plan_stack(ws.project_dir, "cw-lab"), load_cluster(ws, "cw-lab").config
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    found = Objects.from_plan(plan)
    ns, queue = cfg.kubernetes_provider.namespace, cfg.kubernetes_provider.kueue.cluster_queue
    verdicts = {job: admit(found, nodes, ns, queue, podset) for job, podset in workloads(cfg, plan).items()}
    assert {job: v.reason for job, v in verdicts.items()} == dict.fromkeys(("gpu", "cpu", "tas-gang"), "admitted")
    assert gpu_work_problems(plan, cfg) == []


def test_the_oracle_refuses_gpu_work_on_nodes_without_the_topology_levels(tmp_path):
    """It can fail: the same b200-8x lab with its flavor put back on the ``infiniband``
    Topology (what init wrote before) admits no GPU job — its nodes carry no fabric level."""
    from clusterstack.cli import main
    from clusterstack.plan import plan_stack
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace

    lab = tmp_path / "lab"
    assert main(["init", str(lab), "--cluster", "cw-lab", "--provider", "coreweave", "--region", "US-EAST-04A",
                 "--instance-type", "b200-8x", "--nodes", "4", "--acme-email", "ops@example.org",
                 "--allow-source", "203.0.113.10"]) == 0
    path = lab / "clusters" / "cw-lab.yaml"
    text = path.read_text()
    assert text.count("flavor_topology: hostname") == 1
    path.write_text(text.replace("flavor_topology: hostname", "flavor_topology: infiniband"))
    ws = Workspace.load(lab)
    plan, cfg = plan_stack(ws.project_dir, "cw-lab"), load_cluster(ws, "cw-lab").config
    verdict = admit(Objects.from_plan(plan), delivered_nodes(plan, shapes_from_config(cfg)),
                    cfg.kubernetes_provider.namespace, cfg.kubernetes_provider.kueue.cluster_queue,
                    workloads(cfg, plan)["gpu"])
    assert not verdict.admitted and "0 listed with every level" in verdict.reason


@pytest.mark.parametrize("name", SHIPPED)
def test_gpu_nodes_carry_only_admitted_gpu_work(coreweave_stacks, name):
    """No GPU NodePool without a NoSchedule taint whose key its ResourceFlavor tolerates (a new
    lab's default; Marin's pools are untainted: [conventions] gpu_node_taint = "")."""
    plan, cfg, conv = stack(coreweave_stacks, name)
    flavors = objects(plan, "ResourceFlavor")
    for pool in objects(plan, "NodePool"):
        gpus = shapes_from_config(cfg)[pool["spec"]["instanceType"]].gpus
        taints = pool["spec"].get("nodeTaints", [])
        if not gpus:
            assert taints == [], pool["metadata"]["name"]
            continue
        if not conv.gpu_node_taint:
            continue
        assert [(t["key"], t["effect"]) for t in taints] == [(conv.gpu_node_taint, "NoSchedule")]
        selecting = [f for f in flavors if all(pool["spec"]["nodeLabels"].get(k) == v
                                               for k, v in f["spec"].get("nodeLabels", {}).items())]
        assert selecting and all(any(t["key"] == conv.gpu_node_taint and t["operator"] == "Exists"
                                     for t in f["spec"].get("tolerations", ())) for f in selecting)


NEW_LABS = ("cw-demo-h100", "cw-demo-gb200", "init:cw-new-lab", "init:cw-new-gb")


def is_gpu(node) -> bool:
    return bool(node.allocatable.get("nvidia.com/gpu"))


def gpu_work_problems(plan, cfg) -> list[str]:
    """Where pods can land (the Kueue oracle's Q6, the Helm oracle's H2): every pod kind of every
    chart, and a plain CPU job as Kueue admits it, must be unable to land on a GPU node; a plain
    GPU job must land on GPU nodes only."""
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    objs = Objects.from_plan(plan)
    ns, queue = cfg.kubernetes_provider.namespace, cfg.kubernetes_provider.kueue.cluster_queue
    out = []
    for r in plan.resources:
        if r.type == RELEASE_TYPE:
            for part, (selector, tolerations) in sorted(pod_placements(r).items()):
                on_gpu = [n.name for n in nodes if is_gpu(n) and landing(n, selector, tolerations)]
                if on_gpu:
                    out.append(f"{r.name} {part} pods may land on GPU nodes {on_gpu[:2]}…")
    for job, want_gpu in (("cpu", False), ("gpu", True)):
        podset = workloads(cfg, plan)[job]
        verdict = admit(objs, nodes, ns, queue, podset)
        assert verdict.admitted, verdict.reason
        land = landing_nodes(objs, nodes, objs.flavors[verdict.flavor], podset)
        wrong = [n.name for n in land if is_gpu(n) != want_gpu]
        if wrong:
            out.append(f"a plain {job} job admitted to {verdict.flavor} may land on {wrong[:2]}…")
    return out


@pytest.mark.parametrize("name", NEW_LABS)
def test_gpu_nodes_take_only_admitted_gpu_work(coreweave_stacks, name):
    """By behaviour: no chart pod and no admitted CPU pod can be bound to a GPU
    node (TAS would count it as usage there: kueue v0.14.4 tas_flavor.go L117-123), and GPU work
    goes to GPU nodes. New labs only: Marin's GPU pools are untainted by its own choice
    ([conventions] gpu_node_taint = "")."""
    plan, cfg, _ = stack(coreweave_stacks, name)
    assert gpu_work_problems(plan, cfg) == []


def test_the_oracle_sees_cpu_work_on_gpu_nodes(coreweave_stacks):
    """It can fail: a flavor that tolerates the GPU taint and selects every managed node (what
    one flavor over all pools with a GPU taint would be — refused by validate) lets a CPU job
    land on GPU nodes; a chart that tolerates the taint, without a nodeSelector, too."""
    import copy
    from dataclasses import replace

    from clusterstack.plan import StackPlan

    plan, cfg, _ = coreweave_stacks["cw-demo-h100"]

    def widen(r):
        if r.inputs.get("kind") == "ResourceFlavor" and r.name == "cwdemo-cpu-general-flavor":
            inputs = copy.deepcopy(r.inputs)
            inputs["spec"] |= {"nodeLabels": {"cwdemo/managed": "true"}, "topologyName": "infiniband",
                               "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
            return replace(r, inputs=inputs)
        if r.type == RELEASE_TYPE and r.name == "traefik":
            values = {k: v for k, v in r.inputs["values"].items() if k != "nodeSelector"}
            values["tolerations"] = [{"operator": "Exists"}]
            return replace(r, inputs={**r.inputs, "values": values})
        return r

    wide = StackPlan(plan.project, plan.stack, tuple(widen(r) for r in plan.resources), plan.outputs)
    problems = gpu_work_problems(wide, cfg)
    assert [p.split(" may land")[0] for p in problems] == [
        "traefik traefik pods", "a plain cpu job admitted to cwdemo-cpu-general-flavor"]


@pytest.mark.xfail(strict=True, reason="open: a CPU job larger than the CPU flavors' quota "
                   "falls through to a GPU flavor (flavorassigner.go L700-760: the next flavor on noFit) and "
                   "gets its toleration; one ClusterQueue cannot keep it off GPU nodes")
def test_a_cpu_job_beyond_the_cpu_quota_stays_off_gpu_nodes(coreweave_stacks):
    plan, cfg, _ = coreweave_stacks["cw-demo-h100"]
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    objs = Objects.from_plan(plan)
    big = PodSet(40, {"cpu": 4, "memory": "16Gi"})      # 160 CPUs; the CPU pool's quota is 128
    verdict = admit(objs, nodes, NAMESPACE, "training-cq", big)
    assert not verdict.admitted or not any(is_gpu(n) for n in landing_nodes(objs, nodes, objs.flavors[verdict.flavor], big))


@pytest.mark.parametrize("stack_name", COREWEAVE)
def test_quota_is_the_fleet_and_nothing_more(coreweave_stacks, stack_name):
    """The oracle can say no: beyond the pools' capacity, an uncovered resource, another namespace."""
    plan, cfg, _ = coreweave_stacks[stack_name]
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    queue = plan.outputs["cluster_queue"]
    gpu = workloads(cfg, plan)["gpu"]
    too_many = PodSet(10_000, gpu.requests)
    verdict = admit(Objects.from_plan(plan), nodes, NAMESPACE, queue, too_many)
    assert not verdict.admitted and "insufficient quota for" in verdict.reason
    fpga = PodSet(1, {"cpu": 1, "memory": "1Gi", "example.com/fpga": 1})
    assert admit(Objects.from_plan(plan), nodes, NAMESPACE, queue, fpga).reason == \
        "resource example.com/fpga unavailable in ClusterQueue"
    assert not admit(Objects.from_plan(plan), nodes, "default", queue, gpu).admitted


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

@pytest.mark.parametrize("stack", ("cw-demo-gb200", "cw-demo-h100"))   # the examples with federation DNS
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

    from clusterstack.derive.kueue import ClusterQueueSpec, TopologySpec
    from clusterstack.derive import TOPOLOGY_LEVELS

    args = KueueArgs(name_prefix="lab", namespace="training", manager_memory_limit="4Gi", qps=1, burst=1,
                     queue=ClusterQueueSpec("cq", (), "training"),
                     topologies=(TopologySpec("infiniband", TOPOLOGY_LEVELS["infiniband"], True),))
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
    # an autoscaled pool under a topology-aware flavor: TAS never asks for the nodes above minNodes
    ("buffer_slices: 2                 # pinned", "buffer_slices: 1                 # pinned",
     "scale_groups.cpu-general.buffer_slices: NodePool cwdemo-cpu-general autoscales 1 → 2 nodes"),
    ("buffer_slices: 32 ", "buffer_slices: 4 ", "tas_autoscaled_pools"),
    # the charts and the controller run on a CPU pool with warm nodes, named by the scheduler's field
    ("scale_group: cpu-general}", "scale_group: h100}", "controller.coreweave.scale_group: 'h100' is a GPU pool"),
    ("scale_group: cpu-general}", "scale_group: cpu-genral}", "'cpu-genral' is not a scale group"),
    (", scale_group: cpu-general}", "}", "controller.coreweave: no scale_group"),
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
