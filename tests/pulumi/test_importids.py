"""Import IDs declared next to the resources (clusterstack.pulumi.importids) and carried into the plan."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest
from conftest import REPO

from clusterstack.pulumi import tokens
from clusterstack.pulumi import importids as ids
from clusterstack.plan import plan_stack, run_program
from clusterstack.plan.model import dumps, loads
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.workspace import ProjectInfo


@pytest.fixture(scope="module")
def all_plans(example_plans):
    """Every stack of the shipped project (not only the three original examples: a component
    added later must register its IDs too); the session's plans where it has them."""
    info = ProjectInfo.load(REPO / "infra")
    return {s: example_plans[s] if s in example_plans else plan_stack(REPO / "infra", s)
            for s in info.stacks()}


def _leaves(plan):
    return [r for r in plan.resources if r.custom and not r.is_provider]


def test_every_leaf_of_every_shipped_stack_has_a_registered_id(all_plans):
    assert len(all_plans) >= 3
    missing = [r.urn for p in all_plans.values() for r in _leaves(p) if not r.adopt_id]
    assert missing == [], "declare these with clusterstack.pulumi.importids.importable next to the resource"


def test_providers_components_and_stack_have_none(all_plans):
    for plan in all_plans.values():
        for r in plan.resources:
            if r.is_provider or not r.custom or r.type == STACK_TYPE:
                assert r.adopt_id is None, r.urn


def test_the_id_never_becomes_pulumis_import_option(all_plans):
    # an `import_` option would make every `up` an import
    for plan in all_plans.values():
        assert all(r.import_id is None for r in plan.resources)


def test_kubernetes_ids_agree_with_the_declared_metadata(all_plans):
    """The rule and the declaration use the same values: cluster-scoped objects are
    `<metadata.name>`, namespaced ones `<metadata.namespace>/<metadata.name>`, Helm releases
    `<namespace>/<name>`."""
    checked = 0
    for plan in all_plans.values():
        for r in _leaves(plan):
            if r.type == tokens.HELM_RELEASE:
                assert r.adopt_id == f"{r.inputs['namespace']}/{r.inputs['name']}", r.urn
                checked += 1
            elif r.type.startswith("kubernetes:"):
                md = r.inputs["metadata"]
                want = f"{md['namespace']}/{md['name']}" if md.get("namespace") else md["name"]
                assert r.adopt_id == want, r.urn
                checked += 1
    assert checked > 30


def test_gcp_ids_agree_with_the_declared_inputs(all_plans):
    seen = set()
    for plan in all_plans.values():
        for r in _leaves(plan):
            i = r.inputs
            if r.type == tokens.ADDRESS:
                assert r.adopt_id == f"projects/{i['project']}/regions/{i['region']}/addresses/{i['name']}"
                seen.add(r.type)
            elif r.type == tokens.ARTIFACT_REPOSITORY:
                assert r.adopt_id == (f"projects/{i['project']}/locations/{i['location']}"
                                      f"/repositories/{i['repositoryId']}")
                seen.add(r.type)
            elif r.type == tokens.GCP_SERVICE_ACCOUNT:
                assert r.adopt_id == (f"projects/{i['project']}/serviceAccounts/"
                                      f"{i['accountId']}@{i['project']}.iam.gserviceaccount.com")
                seen.add(r.type)
    assert {"gcp:compute/address:Address", tokens.ARTIFACT_REPOSITORY} <= seen


def test_cloudflare_record_is_a_template_with_the_zone_filled_in(all_plans):
    recs = [r for p in all_plans.values() for r in _leaves(p)
            if r.type == tokens.DNS_RECORD]
    assert recs
    for r in recs:
        assert r.adopt_id == f"{r.inputs['zoneId']}/<record_id>"
        assert ids.is_template(r.adopt_id)


def test_plan_json_carries_adopt_id_and_round_trips(all_plans):
    plan = all_plans["cw-demo-h100"]
    text = dumps([plan])
    assert '"adoptId": "cwdemo-h100"' in text
    assert loads(text)[0] == plan
    assert dumps(loads(text)) == text


# --- the rules -----------------------------------------------------------------------------

def test_rules():
    assert ids.k8s_cluster_scoped("cwdemo-h100") == "cwdemo-h100"
    assert ids.k8s_namespaced("training", "controller") == "training/controller"
    assert ids.helm_release("kueue-system", "kueue") == "kueue-system/kueue"
    assert ids.gcp_address("p", "us-east5", "relay") == "projects/p/regions/us-east5/addresses/relay"
    assert ids.gcp_repository("p", "us", "mirror") == "projects/p/locations/us/repositories/mirror"
    assert ids.gcp_global("p", "firewalls", "fw") == "projects/p/global/firewalls/fw"
    assert ids.cloudflare_record("z1") == "z1/<record_id>"
    assert ids.cloudflare_record("z1", "r9") == "z1/r9"
    with pytest.raises(ValueError):
        ids.k8s_namespaced("", "x")


def test_templates():
    assert ids.is_template("z/<record_id>") and ids.is_template(ids.PLACEHOLDER)
    assert not ids.is_template("projects/p/regions/r/addresses/a")
    pat = ids.template_pattern("z1/<record_id>")
    assert pat.match("z1/9f8e7d") and not pat.match("z2/9f8e7d") and not pat.match("z1/a/b")
    assert not pat.match("z1/")
    assert ids.template_pattern(ids.PLACEHOLDER).match("anything/with/slashes")


# --- the registry under the plan runner ------------------------------------------------------

def _run(program):
    return run_program("proj", "dev", {}, program)


def test_registration_under_a_plan_and_nothing_outside():
    def program():
        p = k8s.Provider("k8s", context="ctx", kubeconfig="")
        ns = k8s.core.v1.Namespace("ns", metadata={"name": "team"},
                                   opts=pulumi.ResourceOptions(provider=p))
        ids.importable(ns, ids.k8s_cluster_scoped("team"))
        k8s.core.v1.Namespace("unregistered", metadata={"name": "other"},
                              opts=pulumi.ResourceOptions(provider=p))

    plan = _run(program)
    by_name = {r.name: r for r in plan.resources}
    assert by_name["ns"].adopt_id == "team"
    assert by_name["unregistered"].adopt_id is None
    assert by_name["k8s"].adopt_id is None
    assert ids._REGISTRY.get() is None  # closed after the run: a real `up` records nothing


def test_output_ids_resolve_or_become_the_placeholder():
    import asyncio

    def unknown() -> pulumi.Output[str]:
        loop = asyncio.get_event_loop()
        value, known = loop.create_future(), loop.create_future()
        value.set_result(None)
        known.set_result(False)  # a value only the deployment will know (a VM's IP)
        return pulumi.Output(set(), value, known)

    def program():
        a = k8s.core.v1.Namespace("a", metadata={"name": "a"})
        ids.importable(a, pulumi.Output.from_input("a"))
        b = k8s.core.v1.Namespace("b", metadata={"name": "b"})
        ids.importable(b, unknown())

    by_name = {r.name: r for r in _run(program).resources}
    assert by_name["a"].adopt_id == "a"
    assert by_name["b"].adopt_id == ids.PLACEHOLDER


def test_misuse_is_refused():
    errors: list[Exception] = []

    class Comp(pulumi.ComponentResource):
        def __init__(self):
            super().__init__("test:index:Comp", "c", None, None)

    def program():
        p = k8s.Provider("k8s", kubeconfig="")
        ns = k8s.core.v1.Namespace("ns", metadata={"name": "x"})
        for args in ((p, "x"), (Comp(), "x"), (ns, "")):
            try:
                ids.importable(*args)
            except (TypeError, ValueError) as exc:
                errors.append(exc)
        ids.importable(ns, "x")
        try:
            ids.importable(ns, "x")
        except ValueError as exc:
            errors.append(exc)

    _run(program)
    assert [type(e) for e in errors] == [TypeError, TypeError, ValueError, ValueError]
