"""One stack per Kubernetes object (clusterstack.validation.objects): a Kubernetes service
declaring an object its cluster's stack declares in the same cluster is refused by `plan --all`
(before: planned and validated without a word, and each `up` of either stack would undo the
other's)."""

from __future__ import annotations

import pytest

from clusterstack.cli import main
from clusterstack.errors import Problem
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens
from clusterstack.validation.objects import declared_objects, shared_object_problems
from helpers import copy_workspace, edit

CTX = "demo-h100_US-EAST-04A"   # clusters/cw-demo-h100.yaml platform.coreweave.kube_context


@pytest.fixture
def ws(tmp_path):
    return copy_workspace(tmp_path / "ws", services=True)


def _namespace(ws, ns: str) -> None:
    edit(ws / "services" / "logrelay" / "Pulumi.cw-demo-h100.yaml", "logrelay:namespace: logging",
         f"logrelay:namespace: {ns}")
    edit(ws / "services.yaml", "namespace: logging,", f"namespace: {ns},")


def test_the_shipped_services_declare_nothing_their_cluster_declares(ws, capsys):
    assert main(["--root", str(ws), "plan", "--all"]) == 0


@pytest.mark.parametrize("ns, shown", [
    ("training", "Namespace 'training'"),      # the controller's namespace (Rbac)
    ("kueue-system", "Namespace 'kueue-system'"),  # a chart's, created by its Helm release
])
def test_a_service_in_a_namespace_its_cluster_stack_declares_is_refused(ws, capsys, ns, shown):
    _namespace(ws, ns)
    assert main(["--root", str(ws), "plan", "--all", "-o", str(ws / "plan.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not (ws / "plan.json").exists()   # nothing printed, nothing written
    assert (f"services.yaml:18: services.logrelay: service logrelay declares {shown} in kube context "
            f"'{CTX}', which stack cw-demo-h100 declares too") in err
    assert "Traceback" not in err


def _res(type_: str, name: str, inputs: dict, custom: bool = True) -> PlannedResource:
    return PlannedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=custom,
                           parent=None, provider=None, inputs=inputs, dependencies=())


def test_identity_is_group_kind_namespace_name_whatever_the_version():
    a = StackPlan("p", "a", (
        _res("kubernetes:apps/v1:Deployment", "d", {"metadata": {"name": "relay", "namespace": "logging"}}),
        _res("kubernetes:core/v1:ConfigMap", "c", {"metadata": {"name": "cfg", "namespace": "logging"}}),
        _res(tokens.HELM_RELEASE, "kueue", {"name": "kueue", "namespace": "kueue-system", "createNamespace": True}),
        _res("pulumi:providers:kubernetes", "k8s", {"context": CTX}),
        _res("clusterstack:x:Y", "comp", {}, custom=False)))
    assert sorted(declared_objects(a)) == [
        ("", "ConfigMap", "logging", "cfg"), ("", "Namespace", "", "kueue-system"),
        ("apps", "Deployment", "logging", "relay"), ("helm.sh", "Release", "kueue-system", "kueue")]
    b = StackPlan("p", "b", (   # same Deployment at another version; a ConfigMap in another namespace
        _res("kubernetes:apps/v1beta2:Deployment", "d", {"metadata": {"name": "relay", "namespace": "logging"}}),
        _res("kubernetes:core/v1:ConfigMap", "c", {"metadata": {"name": "cfg", "namespace": "other"}})))
    at = Problem("", field="services.b")
    [p] = shared_object_problems([(CTX, "stack a", a, Problem("")), (CTX, "service b", b, at)])
    assert p.message.startswith("service b declares apps/Deployment logging/relay in kube context")
    assert p.field == "services.b"
    # another cluster (context): no clash
    assert shared_object_problems([(CTX, "stack a", a, Problem("")), ("other", "service b", b, at)]) == []
