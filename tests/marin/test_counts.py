"""The counter (tests/marin/counts.py) and what it says of examples/marin today: every object
examples/marin declares is declared exactly as Marin declares it, nothing Marin does not run is
created; what remains missing is the Loom session Role/RoleBinding, whose name is in no stored
Marin source."""

from __future__ import annotations

from dataclasses import replace

from clusterstack.plan import PlannedResource, StackPlan
from marin.catalogue import MADE_HERE, catalogue
from marin.counts import OUTCOMES, classify, count, render, totals


def _resource(kind: str, name: str, inputs: dict) -> PlannedResource:
    return PlannedResource(urn=f"urn:pulumi:s::p::kubernetes:rbac.authorization.k8s.io/v1:{kind}::{name}",
                           type=f"kubernetes:rbac.authorization.k8s.io/v1:{kind}", name=name, custom=True,
                           parent=None, provider=None, inputs=inputs, dependencies=())


def test_each_outcome_is_found(marin_configs):
    cfg = marin_configs["cw-us-west-04a"]
    want = {e.key: e for e in catalogue("cw-us-west-04a", cfg)}
    role = want[("ClusterRole", "", "iris-controller-iris-ci")]
    binding = want[("ClusterRoleBinding", "", "iris-controller-iris-ci")]
    changed = {**binding.inputs, "subjects": []}
    extra = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "x", "namespace": "iris-ci"}, "rules": []}
    plan = StackPlan("p", "cw-us-west-04a", (
        _resource("ClusterRole", role.name, role.inputs),
        _resource("ClusterRoleBinding", binding.name, changed),
        _resource("Role", "x", extra)))
    c = classify("cw-us-west-04a", plan, cfg)
    assert c.objects["same"] == ["ClusterRole iris-controller-iris-ci"]
    assert c.objects["changed"] == ["ClusterRoleBinding iris-controller-iris-ci"]
    assert c.changed_fields["ClusterRoleBinding iris-controller-iris-ci"] == ["subjects"]
    assert c.objects["created"] == ["Role iris-ci/x"]
    assert len(c.objects["missing"]) == len(want) - 2
    # protect is state only: listed apart, never a change
    c = classify("cw-us-west-04a", replace(plan, resources=(replace(plan.resources[0], protect=True),)), cfg)
    assert c.objects["same"] == ["ClusterRole iris-controller-iris-ci"]
    assert c.options == {"ClusterRole iris-controller-iris-ci": {"protect": (True, False)}}


def test_every_object_made_exact_here_is_same(marin_plans, marin_configs):
    counts = count(marin_plans)
    by_stack = {c.stack: c for c in counts}
    for stack, cfg in marin_configs.items():
        c = by_stack[stack]
        for e in catalogue(stack, cfg):
            if e.owner == MADE_HERE:
                label = f"{e.kind} {e.namespace + '/' if e.namespace else ''}{e.name}"
                assert label in c.objects["same"], (stack, label, c.changed_fields.get(label))
        assert c.objects["created"] == [] and c.objects["changed"] == [], (stack, c.objects)
        # only the Loom Role/RoleBinding of the one cluster configuring loom_session_rbac
        assert all(o.split(" ", 1)[0] in ("Role", "RoleBinding") for o in c.objects["missing"]), c.objects
    t = totals(counts)
    assert t == {"same": 92, "changed": 0, "created": 0, "missing": 2}
    print(render(counts))


def test_gcp_objects_catalogued_elsewhere_are_not_counted_as_created(marin_configs):
    member = PlannedResource(urn="urn:pulumi:marin::p::gcp:projects/iAMMember:IAMMember::m", custom=True,
                             type="gcp:projects/iAMMember:IAMMember", name="m", parent=None, provider=None,
                             inputs={"project": "p", "role": "roles/viewer", "member": "group:x"}, dependencies=())
    c = classify("marin", StackPlan("p", "marin", (member,)), marin_configs["marin"])
    assert c.objects["created"] == [] and c.uncatalogued == ["gcp:projects/iAMMember:IAMMember m"]
