"""The pure static plan diff (clusterstack.plan.diff): changes, classifications, state files."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from clusterstack.guard import CapacityPolicy, GuardPolicy
from clusterstack.plan import PlannedResource, StackPlan, loads
from clusterstack.plan.diff import (MISSING, STATE_OPTIONS, diff_json, diff_plans, diff_values,
                                    load_state_file, plan_from_state)
from clusterstack.pulumi import tokens
from clusterstack.pulumi.paths import format_path, parse_path
from clusterstack.pulumi.state import StateFileError
from clusterstack.pulumi.tokens import ADDRESS, HELM_RELEASE as HELM, NODEPOOL
from clusterstack.pulumi.urn import new_urn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "state"
STACK, PROJECT = "s1", "clusterstack"
ROOT = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"
POOLS = f"urn:pulumi:{STACK}::{PROJECT}::clusterstack:coreweave:NodePools::nodepools"
ADDRS = f"urn:pulumi:{STACK}::{PROJECT}::clusterstack:gcp:StaticAddresses::addresses"
K8S = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:kubernetes::k8s"


def urn(parent_type: str | None, type_: str, name: str) -> str:
    return new_urn(STACK, PROJECT, parent_type or "", type_, name)


def nodepool(name: str, instance_type: str = "gd-8xh100ib-i128", *, max_nodes: int = 32,
             target: int = 4, group: str | None = None, **opts) -> PlannedResource:
    opts.setdefault("protect", True)
    opts.setdefault("ignore_changes", ("spec.targetNodes",))
    return PlannedResource(
        urn=urn(tokens.NODEPOOLS_COMPONENT, NODEPOOL, name), type=NODEPOOL, name=name,
        custom=True, parent=POOLS, provider=opts.pop("provider", K8S), dependencies=(),
        inputs={"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {"autoscaling": True, "computeClass": "default",
                         "instanceType": instance_type, "maxNodes": max_nodes, "minNodes": 4,
                         "targetNodes": target,
                         "nodeLabels": {"cwdemo/managed": "true",
                                        "cwdemo/scale-group": group or name.split("-", 1)[1]}}},
        **opts)


def address(name: str, description: str | None = "pinned", *, region: str = "us-central1",
            **opts) -> PlannedResource:
    opts.setdefault("protect", True)
    opts.setdefault("retain_on_delete", True)
    inputs = {"name": name, "region": region, "address": "34.16.10.20", "project": "p",
              "addressType": "EXTERNAL", "description": description}
    return PlannedResource(urn=urn(tokens.STATIC_ADDRESSES_COMPONENT, ADDRESS, name), type=ADDRESS,
                           name=name, custom=True, parent=ADDRS, provider=None,
                           inputs={k: v for k, v in inputs.items() if v is not None},
                           dependencies=(), **opts)


def release(name: str = "traefik", version: str = "34.1.0", **opts) -> PlannedResource:
    return PlannedResource(urn=urn(None, HELM, name), type=HELM, name=name, custom=True,
                           parent=ROOT, provider=K8S, dependencies=(),
                           inputs={"chart": name, "version": version,
                                   "values": {"ports": {"web": {"port": 8000}}}}, **opts)


def k8s_provider(name: str = "k8s", context: str = "demo-h100_US-EAST-04A") -> PlannedResource:
    return PlannedResource(urn=urn(None, tokens.KUBERNETES_PROVIDER, name),
                           type=tokens.KUBERNETES_PROVIDER, name=name, custom=True, parent=ROOT,
                           provider=None, dependencies=(),
                           inputs={"context": context, "kubeconfig": ""})


def component(type_: str, name: str) -> PlannedResource:
    return PlannedResource(urn=urn(None, type_, name), type=type_, name=name, custom=False,
                           parent=ROOT, provider=None, inputs={}, dependencies=())


def plan(*resources: PlannedResource, outputs: dict | None = None) -> StackPlan:
    base = [PlannedResource(urn=ROOT, type=tokens.STACK_TYPE, name=f"{PROJECT}-{STACK}",
                            custom=False, parent=None, provider=None, inputs={}, dependencies=()),
            component(tokens.NODEPOOLS_COMPONENT, "nodepools"),
            component(tokens.STATIC_ADDRESSES_COMPONENT, "addresses")]
    rs = {r.urn: r for r in (*base, *resources)}
    return StackPlan(project=PROJECT, stack=STACK, resources=tuple(rs[u] for u in sorted(rs)),
                     outputs=outputs or {})


BASE = (k8s_provider(), nodepool("cwdemo-h100"), nodepool("cwdemo-cpu", "cd-gp-i64", max_nodes=4),
        address("controller-ingress"), release())


def base_plan() -> StackPlan:
    return plan(*BASE)


def head_with(*changed: PlannedResource, drop: tuple[str, ...] = ()) -> StackPlan:
    rs = {r.name: r for r in BASE if r.name not in drop}
    rs.update({r.name: r for r in changed})
    return plan(*rs.values())


def kinds(d) -> list[tuple[str, str, str]]:
    return [(f.kind, f.urn.rsplit("::", 1)[1], f.path) for f in d.findings]


# --- the classifications ------------------------------------------------------------------


def test_identical_plans_have_no_changes():
    d = diff_plans(base_plan(), base_plan())
    assert d.empty and not d.findings and not d.destructive


def test_harmless_change_is_listed_not_destructive():
    d = diff_plans(base_plan(), head_with(nodepool("cwdemo-cpu", "cd-gp-i64", max_nodes=6)))
    assert not d.findings
    (c,) = d.changed
    assert c.name == "cwdemo-cpu" and not c.replace
    assert [(p.path, p.old, p.new, p.kind, p.forces_replace) for p in c.properties] == [
        ("spec.maxNodes", 4, 6, "update", False)]


def test_removed_nodepool_is_destructive():
    d = diff_plans(base_plan(), head_with(drop=("cwdemo-cpu",)))
    assert [r.name for r in d.removed] == ["cwdemo-cpu"]
    assert kinds(d) == [("removed", "cwdemo-cpu", "")]
    f = d.findings[0]
    assert f.op == "delete" and "may never be deleted" in f.rule
    assert f.urn in f.hint  # the unprotect command names the URN
    assert "typed confirmation" not in f.hint and f"a deliberate delete of '{f.urn}'" in f.hint
    assert "pulumi state" not in f.hint and "--target" not in f.hint   # never raw Pulumi
    assert f.old is MISSING and f.new is MISSING


def test_renamed_nodepool_pairs_old_and_new_urn():
    renamed = nodepool("cwdemo-h100ib", group="h100")
    d = diff_plans(base_plan(), head_with(renamed, drop=("cwdemo-h100",)))
    assert d.renames == ((nodepool("cwdemo-h100").urn, renamed.urn),)
    assert kinds(d) == [("renamed", "cwdemo-h100", "")]
    assert d.findings[0].new == renamed.urn and d.findings[0].op == "delete"
    assert "renamed" not in kinds(diff_plans(base_plan(), head_with(drop=("cwdemo-h100",))))[0]


def test_unrelated_pool_swap_is_removed_not_renamed():
    other = nodepool("cwdemo-b200", "b200-8x", max_nodes=128, group="b200")
    other = dataclasses.replace(other, inputs={**other.inputs, "spec": {
        "instanceType": "b200-8x", "targetRacks": 2}})
    d = diff_plans(base_plan(), head_with(other, drop=("cwdemo-h100",)))
    assert d.renames == ()
    assert kinds(d) == [("removed", "cwdemo-h100", "")]


@pytest.mark.parametrize("changed, path, old, new", [
    (nodepool("cwdemo-h100", "gd-8xh100ib-i256"), "spec.instanceType", "gd-8xh100ib-i128",
     "gd-8xh100ib-i256"),
    (dataclasses.replace(nodepool("cwdemo-h100"), inputs={
        **nodepool("cwdemo-h100").inputs, "metadata": {"name": "other"}}), "metadata.name",
     "cwdemo-h100", "other"),
    (address("controller-ingress", "new text"), "description", "pinned", "new text"),
    (address("controller-ingress", None), "description", "pinned", MISSING),
    (address("controller-ingress", region="us-east5"), "region", "us-central1", "us-east5"),
])
def test_replace_property_change_is_destructive(changed, path, old, new):
    d = diff_plans(base_plan(), head_with(changed))
    assert kinds(d) == [("replace", changed.name, path)]
    f = d.findings[0]
    assert (f.op, f.old, f.new) == ("replace", old, new)
    assert "may never be replaced" in f.rule and path in f.hint
    assert "typed confirmation" not in f.hint and f"a deliberate replace of '{f.urn}'" in f.hint
    assert "pulumi state" not in f.hint and "--target" not in f.hint   # never raw Pulumi
    (c,) = d.changed
    assert c.replace and [p.path for p in c.properties if p.forces_replace] == [path]


def test_replace_property_under_ignore_changes_is_not_destructive():
    head = nodepool("cwdemo-h100", "gd-8xh100ib-i256",
                    ignore_changes=("spec.targetNodes", "spec.instanceType"))
    d = diff_plans(base_plan(), head_with(head))
    assert not d.findings
    (c,) = d.changed
    props = {p.path: p for p in c.properties}
    assert props["spec.instanceType"].ignored and props["spec.instanceType"].forces_replace
    assert not c.replace
    assert [(o.option, o.old, o.new) for o in c.options] == [
        ("ignoreChanges", ["spec.targetNodes"], ["spec.instanceType", "spec.targetNodes"])]


def test_ignored_property_is_marked():
    d = diff_plans(base_plan(), head_with(nodepool("cwdemo-h100", target=9)))
    (p,) = d.changed[0].properties
    assert (p.path, p.ignored, p.forces_replace) == ("spec.targetNodes", True, False)
    assert not d.findings


def test_protect_dropped_is_destructive_on_any_type():
    base = plan(*BASE[:-1], release(protect=True))
    d = diff_plans(base, head_with(release(protect=False)))
    assert kinds(d) == [("unprotect", "traefik", "protect")]
    assert d.findings[0].old is True and d.findings[0].new is False
    assert [(o.option, o.old, o.new) for o in d.changed[0].options] == [("protect", True, False)]


def test_protect_added_and_retain_dropped_are_listed_not_destructive():
    d = diff_plans(base_plan(), head_with(release(protect=True),
                                          address("controller-ingress", retain_on_delete=False)))
    assert not d.findings
    opts = {(c.name, o.option): (o.old, o.new) for c in d.changed for o in c.options}
    assert opts == {("traefik", "protect"): (False, True),
                    ("controller-ingress", "retainOnDelete"): (True, False)}


def test_removed_protected_address_is_destructive_unprotected_retained_is_not():
    d = diff_plans(base_plan(), head_with(drop=("controller-ingress",)))
    assert kinds(d) == [("removed", "controller-ingress", "")]
    assert "protected" in d.findings[0].rule
    unprotected = plan(*BASE[:3], address("controller-ingress", protect=False), release())
    assert not diff_plans(unprotected, head_with(drop=("controller-ingress",))).findings
    # ... unless it would not be retained: deleting it releases the pinned IP
    bare = plan(*BASE[:3], address("controller-ingress", protect=False, retain_on_delete=False),
                release())
    assert kinds(diff_plans(bare, head_with(drop=("controller-ingress",)))) == [
        ("removed", "controller-ingress", "")]


def test_removed_unguarded_resource_is_listed_only():
    d = diff_plans(base_plan(), head_with(drop=("traefik",)))
    assert [r.name for r in d.removed] == ["traefik"] and not d.findings


def test_provider_context_change_replaces_every_resource_of_the_provider():
    d = diff_plans(base_plan(), head_with(k8s_provider(context="other-cluster")))
    assert kinds(d) == [("replace", "cwdemo-cpu", "context"), ("replace", "cwdemo-h100", "context")]
    assert all(f.provider == K8S for f in d.findings)
    changed = {c.name: c for c in d.changed}
    assert changed["k8s"].properties[0].forces_replace  # the provider's own change
    assert changed["traefik"].replace  # unguarded: listed as a replace, no finding


def test_provider_renamed_with_same_config_is_no_replace():
    new_k8s = k8s_provider("k8s-main")
    moved = [dataclasses.replace(r, provider=new_k8s.urn) for r in BASE if r.provider == K8S]
    head = plan(new_k8s, *moved, address("controller-ingress"))
    d = diff_plans(base_plan(), head)
    assert not d.findings
    assert {(c.name, o.option) for c in d.changed for o in c.options} == {
        ("cwdemo-cpu", "provider"), ("cwdemo-h100", "provider"), ("traefik", "provider")}


def test_stack_on_one_side_only():
    added = diff_plans(None, base_plan())
    assert not added.base_present and len(added.added) == len(base_plan().resources)
    assert not added.findings
    gone = diff_plans(base_plan(), None)
    assert not gone.head_present and len(gone.removed) == len(base_plan().resources)
    assert sorted(k for k, _, _ in kinds(gone)) == ["removed", "removed", "removed"]
    with pytest.raises(ValueError):
        diff_plans(None, None)


def test_plans_of_different_stacks_are_refused():
    other = dataclasses.replace(base_plan(), stack="s2")
    with pytest.raises(ValueError, match="different stacks"):
        diff_plans(base_plan(), other)


def test_policy_drives_the_classification():
    no_guard = GuardPolicy(forbid_replace=frozenset(), forbid_delete=frozenset(),
                           forbid_delete_unretained=frozenset(), protected_state=False,
                           capacity=CapacityPolicy(block=frozenset()))
    assert not diff_plans(base_plan(), head_with(drop=("cwdemo-cpu",)), no_guard).findings
    # the capacity rule alone still refuses the pool's delete, stating the nodes it destroys
    no_capacity = no_guard.model_copy(update={"capacity": CapacityPolicy()})
    [f] = diff_plans(base_plan(), head_with(drop=("cwdemo-cpu",)), no_capacity).findings
    assert (f.kind, f.op, f.capacity.nodes_lost) == ("removed", "delete", 4)
    helm = GuardPolicy.from_toml({"forbid_replace": [HELM],
                                  "replace_properties": {HELM: ["chart"]}})
    changed = dataclasses.replace(release(), inputs={**release().inputs, "chart": "traefik2"})
    assert kinds(diff_plans(base_plan(), head_with(changed), helm)) == [
        ("replace", "traefik", "chart")]
    assert not diff_plans(base_plan(), head_with(changed)).findings  # default policy


def test_secrets_are_masked_on_both_sides():
    base = plan(*BASE, dataclasses.replace(k8s_provider("cf"), inputs={"apiToken": "[secret]"}))
    head = plan(*BASE, dataclasses.replace(k8s_provider("cf"), inputs={"apiToken": "plain-token"}))
    (c,) = diff_plans(base, head).changed
    assert [(p.path, p.old, p.new) for p in c.properties] == [("apiToken", "[secret]", "[secret]")]
    text = diff_json([diff_plans(base, head)], {"kind": "git", "ref": "x", "commit": "0"})
    assert "plain-token" not in text
    same = plan(*BASE, dataclasses.replace(k8s_provider("cf"), inputs={"apiToken": "[secret]"}))
    assert diff_plans(base, same).empty


def test_stack_outputs_are_compared():
    d = diff_plans(plan(*BASE, outputs={"nodepools": ["a", "b"]}),
                   plan(*BASE, outputs={"nodepools": ["a", "c"], "cluster": "x"}))
    assert [(p.path, p.old, p.new) for p in d.outputs] == [
        ("cluster", MISSING, "x"), ("nodepools", ["a", "b"], ["a", "c"])]
    assert not d.findings


def test_a_list_of_names_in_the_outputs_is_compared_whole_not_by_position():
    # removing the first of three pools read as two renames and a removal
    # (`nodepools[0]: "cwdemo-cpu-b" → "cwdemo-cpu-general"` …): the list is one value
    old = {"nodepools": ["cwdemo-cpu-b", "cwdemo-cpu-general", "cwdemo-h100"],
           "envs": {"prod": {"names": ["A", "B"]}}, "rows": [{"n": 1}, {"n": 2}]}
    new = {"nodepools": ["cwdemo-cpu-general", "cwdemo-h100"],
           "envs": {"prod": {"names": ["B"]}}, "rows": [{"n": 1}, {"n": 3}]}
    d = diff_plans(plan(*BASE, outputs=old), plan(*BASE, outputs=new))
    assert [(p.path, p.old, p.new) for p in d.outputs] == [
        ("envs.prod.names", ["A", "B"], ["B"]),
        ("nodepools", ["cwdemo-cpu-b", "cwdemo-cpu-general", "cwdemo-h100"], ["cwdemo-cpu-general", "cwdemo-h100"]),
        ("rows[1].n", 2, 3)]
    doc = json.loads(diff_json([d], {"kind": "git", "ref": "main", "commit": "0" * 40}))
    [stack] = doc["stacks"]
    assert {"path": "envs.prod.names", "old": ["A", "B"], "new": ["B"]}.items() <= stack["outputs"][0].items()


def test_ordering_and_json_are_deterministic():
    head = head_with(nodepool("cwdemo-h100", "x"), address("controller-ingress", "y"),
                     nodepool("cwdemo-zzz", group="zzz"), drop=("cwdemo-cpu", "traefik"))
    a = diff_json([diff_plans(base_plan(), head)], {"kind": "git", "ref": "r", "commit": "c"})
    b = diff_json([diff_plans(base_plan(), head)], {"kind": "git", "ref": "r", "commit": "c"})
    assert a == b
    doc = json.loads(a)
    assert doc["format"] == "clusterstack.diff/v1" and doc["destructive"] == 3
    (s,) = doc["stacks"]
    for key in ("added", "removed", "changed"):
        urns = [r["urn"] for r in s[key]]
        assert urns == sorted(urns)
    assert [f["urn"] for f in s["findings"]] == sorted(f["urn"] for f in s["findings"])
    removed_finding = next(f for f in s["findings"] if f["kind"] == "removed")
    assert "old" not in removed_finding and "new" not in removed_finding


# --- values and paths ---------------------------------------------------------------------


def test_diff_values_leaves():
    assert diff_values({"a": {"b": 1, "c": None}}, {"a": {"b": 1}}) == []
    assert diff_values({"l": [1, 2, 3]}, {"l": [1, 5]}) == [
        (("l", 1), 2, 5), (("l", 2), 3, MISSING)]
    assert diff_values({"x": True}, {"x": 1}) == [(("x",), True, 1)]
    assert diff_values({"x": {"y": 1}}, {"x": "s"}) == [(("x",), {"y": 1}, "s")]


@pytest.mark.parametrize("segments, text", [
    (("spec", "instanceType"), "spec.instanceType"),
    (("spec", "nodeLabels", "cwdemo/scale-group"), 'spec.nodeLabels["cwdemo/scale-group"]'),
    (("items", 0, "name"), "items[0].name"),
    (("a.b", "c"), '["a.b"].c'),
    (("metadata", "annotations", 'say "hi"'), 'metadata.annotations["say \\"hi\\""]'),
])
def test_paths_round_trip(segments, text):
    assert format_path(segments) == text
    assert parse_path(text) == segments


def test_parse_path_wildcards_and_errors():
    assert parse_path("spec.*.x") == ("spec", "*", "x")
    assert parse_path("items[*]") == ("items", "*")
    with pytest.raises(ValueError):
        parse_path("a[0")


# --- state files --------------------------------------------------------------------------


def deployed(stack: str) -> StackPlan:
    """The plan the state fixtures were deployed from (tests/fixtures/state/deployed.plan.json)."""
    return {p.stack: p for p in loads((FIXTURES / "deployed.plan.json").read_text())}[stack]


@pytest.mark.parametrize("file, stack", [("gcp-demo.export.json", "gcp-demo"),
                                         ("cw-demo-h100.checkpoint.json", "cw-demo-h100")])
def test_state_of_a_deployed_plan_diffs_clean(file, stack):
    state = load_state_file(FIXTURES / file)
    assert (state.project, state.stack) == ("clusterstack", stack)
    d = diff_plans(state, deployed(stack), options=STATE_OPTIONS)
    assert d.empty and not d.findings, d


def test_state_values_are_normalised():
    state = load_state_file(FIXTURES / "cw-demo-h100.checkpoint.json").by_urn()
    cf = next(r for r in state.values() if r.type == tokens.CLOUDFLARE_PROVIDER)
    assert cf.inputs["apiToken"] == "[secret]"
    assert "ciphertext" not in json.dumps([r.inputs for r in state.values()])
    pool = next(r for r in state.values() if r.name == "cwdemo-h100")
    assert pool.provider == "urn:pulumi:cw-demo-h100::clusterstack::pulumi:providers:kubernetes::k8s"
    assert pool.protect and pool.ignore_changes == ("spec.targetNodes",)
    addr = load_state_file(FIXTURES / "gcp-demo.export.json").by_urn()
    a = next(r for r in addr.values() if r.name == "controller-ingress")
    assert a.protect and a.retain_on_delete and a.custom


def _export() -> dict:
    return json.loads((FIXTURES / "gcp-demo.export.json").read_text())


def test_state_skips_pending_deletes_and_external_reads():
    doc = _export()
    res = doc["deployment"]["resources"]
    addr = next(r for r in res if r["urn"].endswith("::controller-ingress"))
    stale = {**copy.deepcopy(addr), "delete": True, "inputs": {**addr["inputs"], "region": "x"}}
    read = {"urn": addr["urn"].replace("controller-ingress", "legacy"), "custom": True,
            "external": True, "id": "projects/p/regions/r/addresses/legacy",
            "type": addr["type"], "inputs": {}, "outputs": {}}
    res[:0] = [stale, read]
    state = plan_from_state(doc)
    assert not diff_plans(state, deployed("gcp-demo"), options=STATE_OPTIONS).findings
    assert addr["urn"] in state.by_urn() and read["urn"] not in state.by_urn()


def test_state_bridged_defaults_are_not_reported_when_the_program_omits_them():
    doc = _export()
    addr = next(r for r in doc["deployment"]["resources"] if r["urn"].endswith("::log-relay"))
    addr["inputs"]["networkTier"] = "PREMIUM"
    addr["inputs"]["__defaults"] = ["networkTier"]
    d = diff_plans(plan_from_state(doc), deployed("gcp-demo"), options=STATE_OPTIONS)
    assert d.empty
    addr["inputs"]["__defaults"] = []
    (c,) = diff_plans(plan_from_state(doc), deployed("gcp-demo"), options=STATE_OPTIONS).changed
    assert [(p.path, p.old, p.new) for p in c.properties] == [("networkTier", "PREMIUM", MISSING)]


def test_state_protect_drop_and_replace_against_state():
    doc = _export()
    res = doc["deployment"]["resources"]
    repo = next(r for r in res if r["urn"].endswith("::ghcr-mirror-us"))
    repo["protect"] = True
    addr = next(r for r in res if r["urn"].endswith("::controller-ingress"))
    addr["inputs"]["description"] = "what was deployed"
    d = diff_plans(plan_from_state(doc), deployed("gcp-demo"), options=STATE_OPTIONS)
    assert kinds(d) == [("unprotect", "ghcr-mirror-us", "protect"),  # sorted by URN
                        ("replace", "controller-ingress", "description")]


def test_empty_checkpoint_names_its_stack():
    doc = {"version": 3, "checkpoint": {"stack": "organization/clusterstack/gcp-demo",
                                        "latest": None}}
    state = plan_from_state(doc)
    assert (state.project, state.stack, state.resources) == ("clusterstack", "gcp-demo", ())


@pytest.mark.parametrize("doc, message", [
    ({"version": 2, "deployment": {"resources": []}}, "unsupported state version 2"),
    ({"version": 3, "something": {}}, "neither `deployment`"),
    ([1, 2], "expected a JSON object"),
    ({"version": 3, "deployment": {"resources": [{"urn": "nope", "type": "t"}]}}, "malformed URN"),
    ({"version": 3, "deployment": {"resources": [{"type": "t"}]}}, "no urn/type"),
    ({"version": 3, "deployment": {"resources": [
        {"urn": "urn:pulumi:a::p::t::n", "type": "t"},
        {"urn": "urn:pulumi:b::p::t::n", "type": "t"}]}}, "resources of 2 stacks"),
])
def test_bad_state_documents_are_refused(doc, message):
    with pytest.raises(StateFileError, match=message):
        plan_from_state(doc)


def test_state_file_errors_name_the_file(tmp_path):
    with pytest.raises(StateFileError, match="not found"):
        load_state_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 3,\n  "deployment": ')
    with pytest.raises(StateFileError) as exc:
        load_state_file(bad)
    assert exc.value.problems[0].file == bad and exc.value.problems[0].line == 2


def test_a_change_the_heads_replace_on_changes_covers_is_a_replace(example_plans):
    """The engine plans a change under ``replaceOnChanges`` as a replace (pulumi/pulumi
    step_generator.go ``applyReplaceOnChanges``); the static diff says so: a Topology's levels
    (immutable, Kueue's CRD CEL) — a replace the guard does not forbid, but a reviewer sees."""
    import copy
    from dataclasses import replace as with_

    base = example_plans["cw-demo-h100"]
    topo = next(r for r in base.resources if r.type.endswith(":Topology") and r.name == "infiniband")
    inputs = copy.deepcopy(topo.inputs)
    inputs["spec"]["levels"].insert(1, {"nodeLabel": "backend.coreweave.cloud/superpod"})
    head = StackPlan(base.project, base.stack, tuple(with_(r, inputs=inputs) if r.urn == topo.urn else r
                                                     for r in base.resources), base.outputs)
    d = diff_plans(base, head)
    (c,) = d.changed
    assert c.urn == topo.urn and c.replace and all(p.forces_replace for p in c.properties)
    assert not d.findings     # [guard] forbids no Kueue replace by default
    # without the option it would be an update the API server refuses
    bare = StackPlan(base.project, base.stack, tuple(with_(r, inputs=inputs, replace_on_changes=())
                                                     if r.urn == topo.urn else r for r in base.resources))
    assert not diff_plans(base, bare).changed[0].replace


def test_a_list_of_scalars_in_the_inputs_is_one_change_shown_whole():
    """Removing the first of two allowed sources read `sourceRange[0]: "203.0.113.10/32" →
    "198.51.100.0/24"`, `sourceRange[1]: "198.51.100.0/24" → (none)` — a source changed that was
    not. No key identifies these items (Traefik's Middleware CRD: a plain string list), so the
    list is one change, both sides whole; items that force a replacement stay per item."""
    mw = "kubernetes:traefik.io/v1alpha1:Middleware"

    def middleware(*sources: str) -> PlannedResource:
        return PlannedResource(urn=urn(None, mw, "allow"), type=mw, name="allow", custom=True,
                               parent=ROOT, provider=K8S, dependencies=(),
                               inputs={"spec": {"ipAllowList": {"sourceRange": list(sources)}}})

    d = diff_plans(plan(*BASE, middleware("203.0.113.10/32", "198.51.100.0/24")),
                   plan(*BASE, middleware("198.51.100.0/24")))
    [c] = d.changed
    assert [(p.path, p.old, p.new) for p in c.properties] == [
        ("spec.ipAllowList.sourceRange", ["203.0.113.10/32", "198.51.100.0/24"], ["198.51.100.0/24"])]
    # a replace path's list (a NodePool's is none; the policy's own) is still judged per item
    policy = GuardPolicy.from_toml({"replace_properties": {mw: ["spec.ipAllowList.sourceRange[0]"]}})
    d = diff_plans(plan(*BASE, middleware("a", "b")), plan(*BASE, middleware("b")), policy)
    assert [p.path for p in d.changed[0].properties] == [
        "spec.ipAllowList.sourceRange[0]", "spec.ipAllowList.sourceRange[1]"]
