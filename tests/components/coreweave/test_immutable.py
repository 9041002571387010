"""Immutable fields replace, and what must replace with them does (tests/oracles/kubernetes.py):
a Topology's levels, a topology-bound ResourceFlavor's spec, a PriorityClass's value and a
NodePool's instance type carry ``replaceOnChanges`` and ``deleteBeforeReplace``; replacing a
Topology deletes the ClusterQueue, then the flavors bound to it, then the Topology, so no
delete waits on Kueue's in-use finalizer. The plan JSON and tree show these options.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from oracles.kubernetes import (CLUSTER_QUEUE, FLAVOR, LOCAL_QUEUE, PRIORITY_CLASS, TOPOLOGY, NODEPOOL, delete_order,
                                finalizer_waits, immutable_paths, replace_problems)

from clusterstack.plan import StackPlan, dumps

SHIPPED = ("cw-demo-h100", "cw-demo-gb200", "cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a",
           "init:cw-new-lab", "init:cw-new-gb")


def stack(coreweave_stacks, name):
    if name not in coreweave_stacks:
        pytest.skip("Marin's configs are not in ../shared/reference/marin/lib/iris/config")
    return coreweave_stacks[name]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_immutable_field_replaces_delete_before_replace(coreweave_stacks, name):
    plan, _, _ = stack(coreweave_stacks, name)
    kinds = {r.type for r in plan.resources if immutable_paths(r)}
    assert {TOPOLOGY, FLAVOR, PRIORITY_CLASS, NODEPOOL} <= kinds
    assert replace_problems(plan) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_replacing_a_topology_deletes_queue_then_flavors_then_topology(coreweave_stacks, name):
    plan, _, _ = stack(coreweave_stacks, name)
    by = plan.by_urn()
    bound = {r.inputs["spec"]["topologyName"] for r in plan.resources if r.type == FLAVOR}
    for topo in (r for r in plan.resources if r.type == TOPOLOGY and r.inputs["metadata"]["name"] in bound):
        order = delete_order(plan, topo.urn)
        kinds = [by[u].type for u in order]
        assert kinds[0] == CLUSTER_QUEUE and kinds[-1] == TOPOLOGY and FLAVOR in kinds, kinds
        assert finalizer_waits(plan, order) == []
    for flavor in (r for r in plan.resources if r.type == FLAVOR):
        order = delete_order(plan, flavor.urn)
        assert [by[u].type for u in order] == [CLUSTER_QUEUE, FLAVOR]
        assert finalizer_waits(plan, order) == []


def test_without_the_chain_a_delete_would_wait_forever(example_plans):
    """The oracle says no: with no replaceWith on the ClusterQueue and a literal topologyName
    (no property dependency), replacing the Topology deletes it while the flavor names it."""
    plan = example_plans["cw-demo-h100"]
    cut = StackPlan(plan.project, plan.stack, tuple(
        replace(r, replace_with=()) if r.type == CLUSTER_QUEUE else
        replace(r, property_dependencies={}) if r.type == FLAVOR else r for r in plan.resources), plan.outputs)
    (topo,) = [r for r in plan.resources if r.type == TOPOLOGY and r.name == "infiniband"]
    order = delete_order(cut, topo.urn)
    assert order == [topo.urn]
    assert finalizer_waits(cut, order) == ["Topology infiniband is deleted while ResourceFlavor "
                                           "cwdemo-h100-flavor still names it"]
    plain = StackPlan(plan.project, plan.stack, tuple(
        replace(r, replace_on_changes=(), delete_before_replace=False) if r.type in (PRIORITY_CLASS, LOCAL_QUEUE)
        else r for r in plan.resources), plan.outputs)
    assert replace_problems(plain) == [
        "LocalQueue training-training-cq: a change of spec.clusterQueue would be an in-place patch the API "
        "server refuses",
        "LocalQueue training-training-cq: replaced create-before-delete, but its replacement has the same name",
        "PriorityClass cwdemo-system: a change of value would be an in-place patch the API server refuses",
        "PriorityClass cwdemo-system: a change of preemptionPolicy would be an in-place patch the API server refuses",
        "PriorityClass cwdemo-system: replaced create-before-delete, but its replacement has the same name"]


def test_plan_json_and_tree_show_replace_on_changes(example_plans):
    from rich.console import Console

    from clusterstack.plan.render import render_tree

    plan = example_plans["cw-demo-h100"]
    doc = json.loads(dumps([plan]))["stacks"][0]
    options = {(r["type"].rsplit(":", 1)[1], r["name"]): r["options"] for r in doc["resources"]}
    assert options[("Topology", "infiniband")]["replaceOnChanges"] == ["spec"]
    assert options[("ResourceFlavor", "cwdemo-h100-flavor")]["replaceOnChanges"] == ["spec"]
    assert options[("PriorityClass", "cwdemo-system")]["replaceOnChanges"] == ["value", "preemptionPolicy"]
    assert options[("NodePool", "cwdemo-h100")]["replaceOnChanges"][0] == "spec.instanceType"
    assert [u.rsplit("::", 1)[1] for u in options[("ClusterQueue", "training-cq")]["replaceWith"]] == [
        "cwdemo-cpu-general-flavor", "cwdemo-h100-flavor", "hostname", "infiniband"]
    flavor = next(r for r in doc["resources"] if r["name"] == "cwdemo-h100-flavor")
    assert [u.rsplit("::", 1)[1] for u in flavor["propertyDependencies"]["spec"]] == ["infiniband"]
    console = Console(width=400, record=True, color_system=None)
    console.print(render_tree(plan))
    text = console.export_text()
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if "PriorityClass  cwdemo-system" in ln)
    assert "delete_before_replace" in lines[at] and "replaces on: value, preemptionPolicy" in lines[at + 1]
    at = next(i for i, ln in enumerate(lines) if "ClusterQueue  training-cq" in ln)
    assert "replaced with: cwdemo-cpu-general-flavor, cwdemo-h100-flavor, hostname, infiniband" in lines[at + 1]


@pytest.mark.parametrize("name", SHIPPED)
def test_plan_json_options_and_tree_show_every_replace_rule(coreweave_stacks, name):
    """the plan JSON's ``options.replaceOnChanges`` lists, for every resource
    that has an immutable field (oracle I1–I5), a path covering it, and the plan tree prints it
    under the resource; every resource with replaceOnChanges or replaceWith shows them in both."""
    from rich.console import Console

    from clusterstack.plan.render import render_tree
    from oracles.kubernetes import replaces_on

    plan, _, _ = stack(coreweave_stacks, name)
    doc = json.loads(dumps([plan]))["stacks"][0]
    options = {r["urn"]: r["options"] for r in doc["resources"]}
    console = Console(width=1000, record=True, color_system=None)
    console.print(render_tree(plan))
    lines = console.export_text().splitlines()
    shown = 0
    for r in plan.resources:
        opts = options[r.urn]
        assert opts["replaceOnChanges"] == list(r.replace_on_changes)
        for p in immutable_paths(r):
            assert replaces_on(replace(r, replace_on_changes=tuple(opts["replaceOnChanges"])), p), (r.name, p)
        if r.replace_on_changes or r.replace_with:
            at = next(i for i, ln in enumerate(lines) if f"{r.type}  {r.name}" in ln)
            below = lines[at + 1]
            if r.replace_on_changes:
                assert "replaces on: " + ", ".join(r.replace_on_changes) in below, (r.name, below)
            else:
                assert "replaced with: " in below, (r.name, below)
            shown += 1
    assert shown >= 6   # NodePools, Topologies, flavors, PriorityClass, ClusterQueue, LocalQueue
