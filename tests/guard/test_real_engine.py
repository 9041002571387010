"""The guard against the real engine's behaviour: the pinned op list, Pulumi's recorded
lifecycle streams (``../shared/reference/pulumi``), rules per resource family, refresh drift and
pending-replacement recovery, and unusable documents refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.components.coreweave.nodepools import IMMUTABLE_FIELDS
from clusterstack.errors import ClusterstackError
from clusterstack.guard import GuardPolicy, check, check_document
from clusterstack.pulumi.documents import parse_file, parse_text
from clusterstack.pulumi.steps import INTERNAL_OPS, KNOWN_OPS, RESOURCE_OPS, Step
from clusterstack.pulumi.tokens import NODEPOOL, kubernetes_token
from k8s_schemas import reference_dir

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"
REF = reference_dir()
OUTPUT = REF / "pulumi/pkg/engine/lifecycletest/testdata/output" if REF else None
needs_reference = pytest.mark.skipif(REF is None, reason="../shared/reference (Pulumi's recorded engine outputs) is absent")
STACK = "cw-demo-h100"


def _np(name: str, typ: str = NODEPOOL) -> str:
    return f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${typ}::{name}"


# --- ops ---------------------------------------------------------------------------------------

def test_resource_ops_are_the_pinned_sdks_optype_enum():
    # step.go StepOps @004205f26edf == pulumi.automation.events.OpType of the pinned SDK 3.272.0
    from pulumi.automation.events import OpType

    assert RESOURCE_OPS == {o.value for o in OpType}
    assert INTERNAL_OPS == {"extend-parameterize", "diff"} and not INTERNAL_OPS & RESOURCE_OPS


@needs_reference
def test_every_op_in_the_recorded_lifecycle_streams_is_known():
    seen = set()
    for f in OUTPUT.glob("*/*/eventstream.json"):
        for line in f.read_text(encoding="utf-8").splitlines():
            e = json.loads(line)
            for k in ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent"):
                if k in e:
                    seen.add(e[k]["metadata"]["op"])
    assert seen and seen <= KNOWN_OPS


def test_an_internal_op_is_skipped_and_an_unknown_one_refused():
    def doc(op):
        return json.dumps({"steps": [{"op": op, "urn": _np("a")}], "changeSummary": {}})
    assert parse_text(doc("extend-parameterize")).steps == ()
    with pytest.raises(ClusterstackError, match="unknown step op 'obliterate'"):
        parse_text(doc("obliterate"))


# --- recorded runs ---------------------------------------------------------------------------

def _recorded(test: str) -> str:
    return (OUTPUT / test / "eventstream.json").read_text(encoding="utf-8")


@needs_reference
@pytest.mark.parametrize("test,refused", [
    ("TestMultipleProtectedDeletes/1", [("delete", "resA"), ("delete", "resB")]),
    ("TestProtect/1", [("replace", "resA")]),
    ("TestDBRProtect/1", [("replace", "resB")]),
])
def test_recorded_protect_failures_are_blocked_verdicts(test, refused):
    parsed = parse_text(_recorded(test))
    assert parsed.failed and parsed.result == "failed"
    v = check_document(parsed, GuardPolicy(protected_state=False, forbid_replace=frozenset(),
                                           forbid_delete=frozenset()))
    assert [(x.op, x.urn.rsplit("::", 1)[1]) for x in v.violations] == refused
    assert all("Pulumi refused" in x.rule or "protect" in x.rule for x in v.violations)


@needs_reference
def test_recorded_refresh_of_a_gone_resource_is_drift_not_a_delete():
    # TestRefreshBasics 3-0-0-preview: pre op `refresh`, outputs op `delete`
    parsed = parse_text(_recorded("TestRefreshBasics/3-0-0-preview"))
    assert parsed.gone and all(s.op != "delete" for s in parsed.steps)
    v = check_document(parsed)
    assert v.ok and v.drift == parsed.gone and v.destructive == ()


@needs_reference
def test_a_recorded_complete_success_is_exit_0_material():
    parsed = parse_text(_recorded("TestProtect/0"))
    assert parsed.complete and not parsed.failed and check_document(parsed).ok


# --- the guard's own rules -------------------------------------------------------------------

def test_an_instance_type_update_is_a_blocked_replace_and_a_max_nodes_update_is_not():
    dd = {"spec.instanceType": {"kind": "update", "inputDiff": True}}
    v = check([Step(op="update", urn=_np("h100"), type=NODEPOOL, old_protect=True, detailed_diff=dd)])
    assert [(x.op, x.reasons) for x in v.violations] == [("replace", ("spec.instanceType",))]
    ok = check([Step(op="update", urn=_np("h100"), type=NODEPOOL, old_protect=True,
                     detailed_diff={"spec.maxNodes": {"kind": "update", "inputDiff": True}})])
    assert ok.ok and ok.destructive == ()


def test_without_a_detailed_diff_the_inputs_tell():
    old = {"spec": {"instanceType": "a", "maxNodes": 1}}
    new = {"spec": {"instanceType": "b", "maxNodes": 1}}
    v = check([Step(op="update", urn=_np("h100"), type=NODEPOOL, old_inputs=old, new_inputs=new)])
    assert [x.reasons for x in v.violations] == [("spec.instanceType",)]


def test_the_component_declares_replace_on_changes_for_what_the_guard_calls_immutable():
    assert set(IMMUTABLE_FIELDS) <= set(GuardPolicy().replace_paths(NODEPOOL))


def test_every_rule_holds_after_the_nodepool_moves_to_a_new_api_version():
    # CoreWeave serves the CRD at a new version; the program aliases the old type
    v1 = kubernetes_token("compute.coreweave.com/v1beta1", "NodePool")
    assert v1 != NODEPOOL
    p = GuardPolicy()
    assert p.forbids("forbid_replace", v1) and p.forbids("forbid_delete", v1)
    assert p.replace_paths(v1) == p.replace_paths(NODEPOOL)
    u = _np("h100", v1)
    for op, want in (("delete", "delete"), ("replace", "replace")):
        [x] = check([Step(op=op, urn=u, type=v1)]).violations  # unprotected: the type rule alone
        assert x.op == want
    [x] = check([Step(op="update", urn=u, type=v1,
                      detailed_diff={"spec.instanceType": {"kind": "update", "inputDiff": True}})]).violations
    assert x.reasons == ("spec.instanceType",)


def test_pending_replacement_is_recovery_and_discard_replaced_no_replace():
    u = _np("h100")
    v = check([Step(op="create-replacement", urn=u, type=NODEPOOL, old_pending_replacement=True),
               Step(op="replace", urn=u, type=NODEPOOL, old_pending_replacement=True)],
              GuardPolicy(forbid_replace=frozenset()))
    assert v.ok and v.recovery == (u,)
    assert check([Step(op="discard-replaced", urn=u, type=NODEPOOL)]).destructive == ()


# --- unusable documents: exit 2 --------------------------------------------------------------

def _preview(**over):
    d = json.loads((FIX / "preview-update-in-place.json").read_text())
    d.update(over)
    return d


def _step0(doc):
    return next(s for s in doc["steps"] if s["op"] == "update")


def _cases():
    bad_flag = _preview()
    _step0(bad_flag)["oldState"]["retainOnDelete"] = "false"
    bad_type = _preview()
    _step0(bad_type)["oldState"]["type"] = "kubernetes:core/v1:ConfigMap"
    bad_state = _preview()
    _step0(bad_state)["oldState"] = ["not", "an", "object"]
    events = (FIX / "events-up-clean.jsonl").read_text().splitlines()
    failed = [json.loads(x) for x in events]
    for e in failed:
        if "summaryEvent" in e:
            e["summaryEvent"]["result"] = "failed"
    return {
        "steps-not-a-list": (json.dumps(_preview(steps={"op": "delete"})), "must be a list of steps"),
        "retainOnDelete-a-string": (json.dumps(bad_flag), "retainOnDelete must be true or false"),
        "type-contradicts-urn": (json.dumps(bad_type), "contradicts the URN"),
        "state-not-an-object": (json.dumps(bad_state), "must be a resource state object"),
        "summary-counts-a-hidden-delete": (json.dumps(_preview(changeSummary={"same": 26, "delete": 1})),
                                           "counts 1 delete(s) but the steps show 0"),
        "error-diagnostic": (json.dumps(_preview(diagnostics=[{"message": "error: boom", "severity": "error"}])),
                             "the Pulumi run failed"),
        "truncated-log": ("\n".join(x for x in events if "summaryEvent" not in x and "cancelEvent" not in x),
                          "no summaryEvent"),
        # an `up` log (events-up-clean.jsonl) whose summary says failed: refused as the update it is
        "failed-summary": ("\n".join(json.dumps(e) for e in failed), "the Pulumi update failed"),
    }


@pytest.mark.parametrize("case", sorted(_cases()))
def test_guard_file_refuses_unusable_input_with_exit_2(case, tmp_path, capsys):
    text, problem = _cases()[case]
    f = tmp_path / "doc.json"
    f.write_text(text)
    (tmp_path / "clusterstack.toml").write_text("[workspace]\n")
    rc = main(["--root", str(tmp_path), "guard", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and problem in err, err
    assert "Traceback" not in err
