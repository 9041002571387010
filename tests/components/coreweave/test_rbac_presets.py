"""The RBAC presets of ``[conventions]`` (components/coreweave/rbac.py): one table of names
(the Conventions Literals equal the preset tables), and what each declares under Pulumi's mocks —
the scheduler's own ClusterRole and no namespaced Role ("iris": marin-community/marin
lib/iris/.../k8s/rbac_manifests.py@33283163), the Grafana observer with NodePool read and
Marin's labels ("marin-grafana": infra/pulumi/src/iac/coreweave/rbac.py@17c9466c,
infra/pulumi/tests/test_coreweave_rbac.py@5206448e), the Loom session Role only when named."""

from __future__ import annotations

import typing

import pulumi_kubernetes as k8s
import pytest
from pydantic import ValidationError

from clusterstack.components.coreweave.rbac import (CONTROLLER_RBAC, IRIS_CLUSTER_RULES, LOOM_SESSION_RBAC,
                                                    OBSERVER_RBAC, Rbac, RbacArgs)
from clusterstack.plan import run_program
from clusterstack.workspace.model import Conventions

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"


def plan(**kw):
    def program():
        Rbac("rbac", RbacArgs(namespace="iris", service_account="iris-controller", name_prefix="lab",
                              role_name="iris-controller-iris", **kw),
             provider=k8s.Provider("k8s", context="ctx", kubeconfig=""))
    return run_program("unit", "test", {}, program)


def of(p, type_):
    return {r.name: r for r in p.resources if r.type == type_}


@pytest.mark.parametrize("field, table", [("controller_rbac", CONTROLLER_RBAC), ("observer_rbac", OBSERVER_RBAC),
                                          ("loom_session_rbac", LOOM_SESSION_RBAC)])
def test_each_convention_names_exactly_the_presets(field, table):
    assert set(typing.get_args(Conventions.model_fields[field].annotation)) == set(table)


def test_iris_preset_is_the_schedulers_clusterrole_and_no_namespaced_role():
    p = plan(controller=CONTROLLER_RBAC["iris"])
    assert of(p, ROLE) == {} and of(p, ROLE_BINDING) == {}
    (role,) = of(p, CLUSTER_ROLE).values()
    assert role.inputs["rules"] == list(IRIS_CLUSTER_RULES) and len(IRIS_CLUSTER_RULES) == 8
    grants = {(g, r): set(rule["verbs"]) for rule in role.inputs["rules"]
              for g in rule["apiGroups"] for r in rule["resources"]}
    # what the scheduler does with them (rbac_manifests.py@33283163 comments)
    assert {"create", "update", "patch", "delete"} <= grants[("compute.coreweave.com", "nodepools")]
    assert "delete" in grants[("", "pods")]                     # evicts blockers in preempt_namespaces
    assert grants[("", "nodes/proxy")] == {"get"}
    assert "create" in grants[("scheduling.k8s.io", "priorityclasses")]
    (binding,) = of(p, CLUSTER_ROLE_BINDING).values()
    assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": "iris-controller", "namespace": "iris"}]


def test_minimal_preset_keeps_the_namespaced_role():
    p = plan()
    assert set(of(p, ROLE)) == set(of(p, ROLE_BINDING)) == {"iris-iris-controller-iris"}


def test_marin_grafana_observer_reads_nodepools_and_carries_marins_labels():
    p = plan(observer_usernames=("tok-b", "tok-a"), observer_role_name="marin-grafana-node-reader",
             observer=OBSERVER_RBAC["marin-grafana"])
    role, binding = of(p, CLUSTER_ROLE)["marin-grafana-node-reader"], of(p, CLUSTER_ROLE_BINDING)["marin-grafana-node-reader"]
    labels = {"app.kubernetes.io/name": "marin-grafana", "app.kubernetes.io/component": "k8s-observer"}
    assert role.inputs["metadata"] == binding.inputs["metadata"] == {"name": "marin-grafana-node-reader",
                                                                     "labels": labels}
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"], "verbs": ["get", "list", "watch"]}]
    assert [s["name"] for s in binding.inputs["subjects"]] == ["tok-b", "tok-a"]   # the config's order


@pytest.mark.parametrize("usernames, name, declared", [(("loom-a",), "loom-session", True),
                                                       (("loom-a",), "", False), ((), "loom-session", False)])
def test_loom_session_role_needs_usernames_and_a_name(usernames, name, declared):
    p = plan(loom_usernames=usernames, loom_role_name=name, loom=LOOM_SESSION_RBAC["marin-loom"])
    roles = {r.inputs["metadata"]["name"]: r for r in of(p, ROLE).values()}
    assert ("loom-session" in roles) is declared
    if declared:
        assert roles["loom-session"].inputs["rules"] == [
            {"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"], "verbs": ["create"]}]
        (binding,) = [r for r in of(p, ROLE_BINDING).values() if r.inputs["metadata"]["name"] == "loom-session"]
        assert binding.inputs["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                             "name": "loom-session"}
        assert binding.inputs["metadata"]["labels"]["app.kubernetes.io/name"] == "marin-loom"


@pytest.mark.parametrize("field, value", [("loom_session_role", "{prefx}-loom"),
                                          ("registry_upstream_description", "{upstreem} mirror"),
                                          ("controller_rbac", "admin")])
def test_a_bad_knob_is_refused(field, value):
    with pytest.raises(ValidationError, match=field):
        Conventions.model_validate({field: value})
