"""The oracles can say no: each rule, on a shipped plan changed back to what the stacks
once declared (a CPU flavor without a Topology, an autoscaled TAS pool, a GPU taint no flavor
tolerates, a missing Topology), refuses what Kueue refuses, in Kueue's words."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from oracles.coreweave import LEAFGROUP, delivered_nodes, shapes_from_config
from oracles.kueue import Objects, PodSet, admit, selector_matches, tolerated

from clusterstack.plan import StackPlan

GPU_POD = {"cpu": 16, "memory": "64Gi", "ephemeral-storage": "100Gi", "nvidia.com/gpu": 8, "rdma/ib": 1}
CPU_POD = {"cpu": 4, "memory": "16Gi"}


@pytest.fixture(scope="module")
def h100(coreweave_stacks):
    plan, cfg, _ = coreweave_stacks["cw-demo-h100"]
    return plan, shapes_from_config(cfg)


def edit(plan: StackPlan, kind: str, name: str, change) -> StackPlan:
    """The plan with ``change(inputs)`` applied to a deep copy of one object's inputs."""
    out = []
    for r in plan.resources:
        if r.inputs.get("kind") == kind and r.inputs.get("metadata", {}).get("name") == name:
            inputs = copy.deepcopy(r.inputs)
            change(inputs)
            r = replace(r, inputs=inputs)
        out.append(r)
    return StackPlan(plan.project, plan.stack, tuple(out), plan.outputs)


def verdict(plan, shapes, podset, namespace="training"):
    return admit(Objects.from_plan(plan), delivered_nodes(plan, shapes), namespace, "training-cq", podset)


def test_a_queue_mixing_tas_and_plain_flavors_never_admits_a_plain_gpu_job(h100):
    """Why 2: the CPU flavor without topologyName makes the queue not TAS-only, so a GPU PodSet
    without an annotation gets no TAS; the GPU flavor supports only TAS (tas_flavorassigner.go
    L157-160). A TAS-annotated gang is still admitted; a plain CPU job lands on the plain flavor."""
    plan, shapes = h100
    mixed = edit(plan, "ResourceFlavor", "cwdemo-cpu-general-flavor", lambda i: i["spec"].pop("topologyName"))
    v = verdict(mixed, shapes, PodSet(2, GPU_POD))
    assert not v.admitted
    assert v.reason == ("insufficient quota for nvidia.com/gpu in flavor cwdemo-cpu-general-flavor, "
                        "16 > maximum capacity (0); "
                        "Flavor 'cwdemo-h100-flavor' supports only TopologyAwareScheduling")
    assert verdict(mixed, shapes, PodSet(4, GPU_POD, required=LEAFGROUP)).flavor == "cwdemo-h100-flavor"
    assert verdict(mixed, shapes, PodSet(2, CPU_POD)).flavor == "cwdemo-cpu-general-flavor"
    # the all-TAS queue as shipped admits all three
    assert verdict(plan, shapes, PodSet(2, GPU_POD)).flavor == "cwdemo-h100-flavor"


def test_tas_uses_only_nodes_that_exist(h100):
    """Why 3: an autoscaled pool's capacity above minNodes does not exist, and TAS never asks
    for it (tas_flavor.go L107-113): quota for 32 nodes, 2 delivered, a 4-node gang waits."""
    plan, shapes = h100
    small = edit(plan, "NodePool", "cwdemo-h100", lambda i: i["spec"].update(minNodes=2, targetNodes=2))
    v = verdict(small, shapes, PodSet(4, GPU_POD, required=LEAFGROUP))
    assert v.reason == "TAS: no backend.coreweave.cloud/leafgroup domain fits 4 pods (at most 2)"
    assert verdict(small, shapes, PodSet(3, GPU_POD)).reason == "TAS: existing nodes fit 2 of 3 pods"


def test_a_gpu_taint_needs_the_flavors_toleration(h100):
    """Why 4: the GPU nodes' NoSchedule taint keeps plain pods off them; only the flavor's
    toleration, which Kueue adds to the pods it admits there, lets GPU work in."""
    plan, shapes = h100
    untolerating = edit(plan, "ResourceFlavor", "cwdemo-h100-flavor", lambda i: i["spec"].pop("tolerations"))
    v = verdict(untolerating, shapes, PodSet(2, GPU_POD))
    assert "untolerated taint ('nvidia.com/gpu', 'present', 'NoSchedule') in flavor cwdemo-h100-flavor" in v.reason
    # the pod's own toleration counts too (flavorassigner.go L817)
    pod_tolerates = PodSet(2, GPU_POD, tolerations=({"key": "nvidia.com/gpu", "operator": "Exists"},))
    assert verdict(untolerating, shapes, pod_tolerates).admitted


def test_a_missing_topology_or_flavor_leaves_the_queue_inactive(h100):
    plan, shapes = h100
    no_topo = StackPlan(plan.project, plan.stack, tuple(r for r in plan.resources if r.name != "hostname"),
                        plan.outputs)
    assert verdict(no_topo, shapes, PodSet(1, CPU_POD)).reason == (
        "ClusterQueue is inactive: there is no Topology 'hostname' for TAS flavor 'cwdemo-cpu-general-flavor'")
    no_flavor = StackPlan(plan.project, plan.stack, tuple(r for r in plan.resources if r.name != "cwdemo-h100-flavor"),
                          plan.outputs)
    assert "references missing ResourceFlavor(s): ['cwdemo-h100-flavor']" in verdict(no_flavor, shapes, PodSet(1, CPU_POD)).reason
    assert verdict(plan, shapes, PodSet(1, CPU_POD), namespace="other").reason == \
        "LocalQueue other/training-cq doesn't exist"


def test_an_explicit_level_the_topology_lacks_is_refused(h100):
    plan, shapes = h100
    v = verdict(plan, shapes, PodSet(2, GPU_POD, required="ds.coreweave.com/nvlink.domain"))
    assert v.reason == ("Flavor 'cwdemo-cpu-general-flavor' does not contain the requested level; "
                        "Flavor 'cwdemo-h100-flavor' does not contain the requested level")


@pytest.mark.parametrize("selector,labels,expected", [
    ({}, {"a": "1"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
])
def test_label_selectors(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


@pytest.mark.parametrize("toleration,expected", [
    ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "k", "operator": "Equal", "value": "v"}, True),
    ({"key": "k", "value": "other"}, False),
    ({"operator": "Exists"}, True),                       # empty key + Exists tolerates everything
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"value": "v"}, False),                              # empty key needs Exists
])
def test_tolerations(toleration, expected):
    assert tolerated(("k", "v", "NoSchedule"), [toleration]) is expected


def test_a_namespace_the_queue_does_not_select_is_refused(h100):
    """Q1: a LocalQueue in a namespace the ClusterQueue's namespaceSelector does not match
    (the shipped queue selects the workload namespace only) admits nothing."""
    plan, shapes = h100
    lq = next(r for r in plan.resources if r.inputs.get("kind") == "LocalQueue")
    inputs = copy.deepcopy(lq.inputs)
    inputs["metadata"]["namespace"] = "other"
    elsewhere = StackPlan(plan.project, plan.stack, (*plan.resources, replace(lq, urn=lq.urn + "-other", inputs=inputs)),
                          plan.outputs)
    assert verdict(elsewhere, shapes, PodSet(1, CPU_POD), namespace="other").reason == \
        "Workload namespace doesn't match ClusterQueue selector"
    assert verdict(elsewhere, shapes, PodSet(1, CPU_POD)).admitted


def test_a_node_selector_no_flavor_matches_is_refused(h100):
    """Q4c: the PodSet's nodeSelector, on the resource group's label keys, must match a flavor's
    nodeLabels (flavorassigner.go L826-832); a key no flavor uses is left to kube-scheduler
    and, in TAS, to the node filter (tas_flavor_snapshot.go L1297-1322)."""
    plan, shapes = h100
    v = verdict(plan, shapes, PodSet(1, GPU_POD, node_selector={"cwdemo/scale-group": "h200"}))
    assert v.reason == ("flavor cwdemo-cpu-general-flavor doesn't match node affinity; "
                        "flavor cwdemo-h100-flavor doesn't match node affinity")
    v = verdict(plan, shapes, PodSet(1, GPU_POD, node_selector={"example.org/rack": "r1"}))
    assert v.reason.startswith("TAS: no node of flavor 'cwdemo-h100-flavor' can take the pods")
