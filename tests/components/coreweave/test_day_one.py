"""Day one as a tested property: from an empty cluster, the plan's dependency graph lets the
engine create everything in one ``up`` (tests/oracles/helm.py, rules H1–H4): every release
that runs pods after a CPU NodePool with warm nodes its pods can use, waiting longer than
bare metal takes to deliver them; every custom resource after the release installing its CRD
(ClusterIssuers after cert-manager, Kueue objects after Kueue, the Middleware after Traefik);
every namespaced object after its Namespace. And the reverse on ``destroy``: the workload
Namespace goes while Kueue still runs, and it is protected.

The examples and ``init``'s output are new labs (an empty cluster on the first ``up``); Marin's
clusters are adopted live (examples/marin keeps Marin's 300 s, non-atomic releases), so only
their ordering rules are checked.
"""

from __future__ import annotations

import pytest

from oracles.coreweave import shapes_from_config
from oracles.helm import (NAMESPACE_TYPE, NODE_DELIVERY_SECONDS, RELEASE_TYPE, closure, day_one_problems,
                          deleted_before)

NEW_LABS = ("cw-demo-h100", "cw-demo-gb200", "init:cw-new-lab", "init:cw-new-gb")
ADOPTED = ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a")


def stack(coreweave_stacks, name):
    if name not in coreweave_stacks:
        pytest.skip("Marin's configs are not in ../shared/reference/marin/lib/iris/config")
    return coreweave_stacks[name]


@pytest.mark.parametrize("name", NEW_LABS)
def test_one_up_on_an_empty_cluster_converges(coreweave_stacks, name):
    plan, cfg, _ = stack(coreweave_stacks, name)
    assert day_one_problems(plan, shapes_from_config(cfg)) == []


@pytest.mark.parametrize("name", ADOPTED)
def test_an_adopted_cluster_keeps_the_creation_order(coreweave_stacks, name):
    """Marin's releases wait 300 s (its own choice, examples/marin: helm_timeout_seconds), which
    an empty cluster would not survive; every ordering rule still holds."""
    plan, cfg, _ = stack(coreweave_stacks, name)
    problems = day_one_problems(plan, shapes_from_config(cfg))
    assert problems and all("waits 300 s" in p for p in problems), problems


@pytest.mark.parametrize("name", NEW_LABS + ADOPTED)
def test_every_release_depends_on_a_cpu_nodepool_with_nodes(coreweave_stacks, name):
    """Every release depends directly on a CPU pool (no GPUs per its scale group) with warm
    nodes; a new lab's waits outlast the slowest bare-metal delivery (NODE_DELIVERY_SECONDS)."""
    plan, cfg, conv = stack(coreweave_stacks, name)
    shapes = shapes_from_config(cfg)
    pools = {r.urn: r for r in plan.resources if r.type.endswith(":NodePool")}
    for r in plan.resources:
        if r.type != RELEASE_TYPE:
            continue
        warm_cpu = [p for u, p in pools.items() if u in r.dependencies
                    and not shapes[p.inputs["spec"]["instanceType"]].gpus
                    and (p.inputs["spec"].get("minNodes", 0) or p.inputs["spec"].get("targetRacks", 0))]
        assert warm_cpu, f"{r.name}: no direct dependency on a CPU NodePool with warm nodes"
        if name in NEW_LABS:
            assert r.inputs["timeout"] > NODE_DELIVERY_SECONDS >= 900 and r.inputs["atomic"] is True
        else:
            assert "timeout" not in r.inputs and "atomic" not in r.inputs   # Marin's inputs, unchanged


@pytest.mark.parametrize("name", NEW_LABS + ADOPTED)
def test_the_workload_namespace_is_protected_and_deleted_while_kueue_runs(coreweave_stacks, name):
    plan, cfg, _ = stack(coreweave_stacks, name)
    (ns,) = [r for r in plan.resources if r.type == NAMESPACE_TYPE]
    assert ns.protect
    (kueue,) = [r for r in plan.resources if r.type == RELEASE_TYPE and r.inputs["namespace"] == "kueue-system"]
    assert deleted_before(plan, ns.urn, kueue.urn)
    # ... and nothing Kueue needs to run depends on the namespace (no cycle, no deadlock)
    assert ns.urn not in closure(plan, kueue.urn)


def test_the_oracle_sees_a_release_that_does_not_wait_for_its_pool(example_plans):
    """releases with no NodePool dependency, the provider's 300 s, atomic."""
    from dataclasses import replace

    from clusterstack.plan import StackPlan
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace
    from helpers import REPO

    plan = example_plans["cw-demo-h100"]
    pools = {r.urn for r in plan.resources if r.type.endswith(":NodePool")}
    broken = StackPlan(plan.project, plan.stack, tuple(
        replace(r, dependencies=tuple(d for d in r.dependencies if d not in pools),
                inputs={k: v for k, v in r.inputs.items() if k != "timeout"})
        if r.type == RELEASE_TYPE else r for r in plan.resources), plan.outputs)
    cfg = load_cluster(Workspace.load(REPO), "cw-demo-h100").config
    problems = day_one_problems(broken, shapes_from_config(cfg))
    assert sum("depend on no CPU NodePool" in p for p in problems) == 6     # kueue 1, cert-manager 4, traefik 1
    assert sum("waits 300 s" in p and "atomic" in p for p in problems) == 3
    # a ClusterIssuer that does not wait for cert-manager, a LocalQueue for its Namespace
    issuers = {r.urn for r in plan.resources if r.type.endswith(":ClusterIssuer")}
    cm = next(r.urn for r in plan.resources if r.type == RELEASE_TYPE and r.name == "cert-manager")
    broken = StackPlan(plan.project, plan.stack, tuple(
        replace(r, dependencies=tuple(d for d in r.dependencies if d != cm)) if r.urn in issuers else r
        for r in plan.resources), plan.outputs)
    assert [p for p in day_one_problems(broken, shapes_from_config(cfg)) if "ClusterIssuer" in p] == [
        "ClusterIssuer letsencrypt-http01-prod: created with no dependency on the cert-manager release "
        "that installs its CRD (API group cert-manager.io)",
        "ClusterIssuer letsencrypt-http01-staging: created with no dependency on the cert-manager release "
        "that installs its CRD (API group cert-manager.io)"]
    # H4: a namespaced object created with no dependency on its Namespace
    ns = next(r.urn for r in plan.resources if r.type == NAMESPACE_TYPE)
    broken = StackPlan(plan.project, plan.stack, tuple(
        replace(r, dependencies=tuple(d for d in r.dependencies if d != ns)) if r.type.endswith(":LocalQueue") else r
        for r in plan.resources), plan.outputs)
    assert day_one_problems(broken, shapes_from_config(cfg)) == [
        "LocalQueue training/training-cq: created with no dependency on its Namespace training"]


def test_the_oracle_sees_charts_waiting_on_a_gpu_pool_or_too_short(example_plans):
    """H2 wants a *CPU* pool: charts pinned to an untainted GPU pool they depend on would run,
    but take GPU nodes' room (TAS usage); and a wait of exactly the slowest delivery (30 min)
    is too short."""
    from dataclasses import replace

    from clusterstack.plan import StackPlan
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace
    from helpers import REPO

    plan = example_plans["cw-demo-h100"]
    cfg = load_cluster(Workspace.load(REPO), "cw-demo-h100").config
    by_name = {r.name: r for r in plan.resources if r.type.endswith(":NodePool")}
    cpu, gpu = by_name["cwdemo-cpu-general"], by_name["cwdemo-h100"]

    def on_gpu(r):
        if r.urn == gpu.urn:   # an untainted GPU pool
            spec = {k: v for k, v in r.inputs["spec"].items() if k != "nodeTaints"}
            return replace(r, inputs={**r.inputs, "spec": spec})
        if r.type == RELEASE_TYPE and r.name == "traefik":
            values = {**r.inputs["values"], "nodeSelector": {"cwdemo/scale-group": "h100"}}
            return replace(r, dependencies=tuple(gpu.urn if d == cpu.urn else d for d in r.dependencies),
                           inputs={**r.inputs, "values": values, "timeout": NODE_DELIVERY_SECONDS})
        return r

    broken = StackPlan(plan.project, plan.stack, tuple(on_gpu(r) for r in plan.resources), plan.outputs)
    assert day_one_problems(broken, shapes_from_config(cfg)) == [
        "release traefik: its traefik pods depend on no CPU NodePool with warm nodes they can run on "
        "(nodeSelector {'cwdemo/scale-group': 'h100'}), so on an empty cluster they wait for nodes the "
        "engine may not have asked for yet",
        "release traefik: waits 1800 s for pods whose first node may take 1800 s to deliver — atomic: "
        "it uninstalls itself"]


#: The labels each chart puts on its replicated pods, read in the chart at its pinned version:
#: kueue v0.14.4 charts/kueue/templates/_helpers.tpl "kueue.selectorLabels" L48-51; traefik-helm-chart
#: v37.2.0 traefik/templates/_helpers.tpl "traefik.labelselector" L65-68 with "traefik.instance-name"
#: L59-61 (<release>-<namespace>); cert-manager v1.19.1 deploy/charts/cert-manager/templates/
#: webhook-deployment.yaml L33-37.
REPLICATED = {
    "kueue": (("controllerManager", "replicas"), ("controllerManager", "topologySpreadConstraints"),
              {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/instance": "kueue",
               "control-plane": "controller-manager"}),
    "traefik": (("deployment", "replicas"), ("topologySpreadConstraints",),
                {"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-traefik"}),
    "cert-manager": (("webhook", "replicaCount"), ("webhook", "topologySpreadConstraints"),
                     {"app.kubernetes.io/name": "webhook", "app.kubernetes.io/instance": "cert-manager",
                      "app.kubernetes.io/component": "webhook"}),
}


def dig(values, path):
    for key in path:
        values = values.get(key, {}) if isinstance(values, dict) else {}
    return values


@pytest.mark.parametrize("name", NEW_LABS)
def test_replicated_webhooks_can_survive_a_node(coreweave_stacks, name):
    """Kueue's manager, Traefik and cert-manager's webhook run 2 replicas with a
    PodDisruptionBudget, spread over nodes by a constraint that selects exactly their pods, on a
    CPU pool with at least as many warm nodes as replicas — so one node's loss leaves one."""
    from oracles.coreweave import delivered_nodes
    from oracles.helm import chart_of, landing, pod_placements

    plan, cfg, conv = stack(coreweave_stacks, name)
    nodes = delivered_nodes(plan, shapes_from_config(cfg))
    for r in (r for r in plan.resources if r.type == RELEASE_TYPE):
        replicas_at, spread_at, labels = REPLICATED[chart_of(r)]
        values = r.inputs["values"]
        assert dig(values, replicas_at) == conv.ha_replicas >= 2
        (constraint,) = dig(values, spread_at)
        assert constraint["topologyKey"] == "kubernetes.io/hostname" and constraint["maxSkew"] == 1
        assert constraint["labelSelector"] == {"matchLabels": labels}
        part = {"kueue": "controller-manager", "traefik": "traefik", "cert-manager": "webhook"}[chart_of(r)]
        selector, tolerations = pod_placements(r)[part]
        hosts = [n for n in nodes if landing(n, selector, tolerations)]
        assert len(hosts) >= conv.ha_replicas and not any(n.allocatable.get("nvidia.com/gpu") for n in hosts)
