"""The adapter over Pulumi's real failure modes: a protect refusal is the guard's verdict (exit
3), an immutable-field update is blocked, an op the SDK would drop is seen in the raw log.

Streams are Pulumi's own recorded lifecycle runs (``../shared/reference/pulumi``, replayed by the
fake CLI) or fixtures of this project's resources built by the same rules
(tests/fixtures/pulumi/README.md)."""

from __future__ import annotations

import json

import pytest

from clusterstack.engine import ProtectRefusedError
from clusterstack.engine.automation import AutomationEngine
from clusterstack.errors import ClusterstackError
from clusterstack.guard import check_result
from fakes.pulumi import FakeCli
from k8s_schemas import reference_dir

STACK = "cw-demo-h100"
NP = "clusterstack:coreweave:NodePools$kubernetes:compute.coreweave.com/v1alpha1:NodePool"
H100 = f"urn:pulumi:{STACK}::clusterstack::{NP}::cwdemo-h100"
CPU = f"urn:pulumi:{STACK}::clusterstack::{NP}::cwdemo-cpu-general"
needs_reference = pytest.mark.skipif(reference_dir() is None,
                                     reason="../shared/reference (Pulumi's recorded engine outputs) is absent")


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


@pytest.fixture
def ws(workspace_copy):
    from clusterstack.workspace import Workspace

    return Workspace.load(workspace_copy)


def _refused(ws):
    with pytest.raises(ProtectRefusedError) as e:
        AutomationEngine(ws).preview(STACK)
    assert e.value.exit_code == 3
    return e.value


@needs_reference
@pytest.mark.parametrize("version", ["3.205.0", "3.210.0"], ids=["event-log-file", "event-log-grpc"])
def test_recorded_protected_deletes_are_a_verdict_not_a_program_failure(cli, ws, version):
    cli.scenario(version=version, preview={"recorded": "TestMultipleProtectedDeletes/1", "code": 255})
    err = _refused(ws)
    a, b = "urn:pulumi:test::test::pkgA:m:typA::resA", "urn:pulumi:test::test::pkgA:m:typA::resB"
    assert [(r.op, r.urn) for r in err.result.refusals] == [("delete", a), ("delete", b)]
    verdict = check_result(err.result)
    assert [(v.op, v.urn) for v in verdict.violations] == [("delete", a), ("delete", b)]


@needs_reference
def test_recorded_protected_replace_keeps_the_streamed_steps(cli, ws):
    cli.scenario(preview={"recorded": "TestProtect/1", "code": 255})
    err = _refused(ws)
    a = "urn:pulumi:test::test::pkgA:m:typA::resA"
    assert [(r.op, r.urn) for r in err.result.refusals] == [("replace", a)]
    assert {s.op for s in err.result.steps if s.urn == a} == {"create-replacement", "replace", "delete-replaced"}
    assert not check_result(err.result).ok


@needs_reference
def test_recorded_protected_replace_in_an_update_bails_before_any_step(cli, ws):
    # TestDBRProtect/1: the update refuses before a single step event; the verdict still names it
    cli.scenario(up={"recorded": "TestDBRProtect/1", "code": 255})
    with pytest.raises(ProtectRefusedError) as e:
        AutomationEngine(ws).up(STACK, message="m")
    assert [r.op for r in e.value.result.refusals] == ["replace"]
    assert e.value.result.steps == ()


def test_nodepool_delete_is_refused_naming_both_pools(cli, ws):
    cli.scenario(preview={"events": "events/preview-nodepool-delete.jsonl", "code": 255})
    err = _refused(ws)
    v = check_result(err.result)
    assert sorted((x.op, x.urn) for x in v.violations) == [("delete", CPU), ("delete", H100)]
    assert "cwdemo-h100" in err.render()


def test_nodepool_replace_is_refused_with_its_forcing_property(cli, ws):
    cli.scenario(preview={"events": "events/preview-nodepool-replace.jsonl", "code": 255})
    err = _refused(ws)
    [v] = check_result(err.result).violations
    assert (v.op, v.urn, v.reasons) == ("replace", H100, ("spec.instanceType",))


def test_instance_type_update_previews_clean_but_the_guard_blocks_it(cli, ws):
    # pulumi-kubernetes diff.go: a custom resource is replaced only for metadata.name/namespace,
    # so the engine plans an in-place update — the guard counts it as the replace it is
    cli.scenario(preview={"events": "events/preview-nodepool-instancetype-update.jsonl"})
    res = AutomationEngine(ws).preview(STACK)
    assert [s.op for s in res.changes] == ["update"]
    [v] = check_result(res).violations
    assert (v.op, v.urn, v.reasons) == ("replace", H100, ("spec.instanceType",))
    assert "immutable" in v.rule


def _with_step_op(tmp_path, op: str) -> str:
    from fakes.pulumi import FIXTURES

    lines = (FIXTURES / "events/preview-update.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        e = json.loads(line)
        md = (e.get("resourcePreEvent") or e.get("resOutputsEvent") or {}).get("metadata")
        if md and md["op"] == "update" and md["urn"].endswith("cwdemo-controller"):
            md["op"] = op
        out.append(json.dumps(e))
    p = tmp_path / f"events-{op}.jsonl"
    p.write_text("\n".join(out) + "\n")
    return str(p)


def test_an_op_the_sdk_drops_is_still_seen_and_refused(cli, ws, tmp_path):
    # the SDK's OpType enum cannot parse it: its callbacks never see the step; the raw log does
    cli.scenario(preview={"events": _with_step_op(tmp_path, "obliterate")})
    with pytest.raises(ClusterstackError) as e:
        AutomationEngine(ws).preview(STACK)
    assert e.value.exit_code == 2 and "unknown step op 'obliterate'" in e.value.render()


def _write(tmp_path, name: str, events: list[dict]) -> str:
    p = tmp_path / name
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(p)


def _fixture(name: str) -> list[dict]:
    from fakes.pulumi import FIXTURES

    return [json.loads(x) for x in (FIXTURES / name).read_text().splitlines() if x.strip()]


def _meta(e: dict) -> dict | None:
    body = e.get("resourcePreEvent") or e.get("resOutputsEvent") or e.get("resOpFailedEvent")
    return body["metadata"] if body else None


def test_an_internal_op_with_an_empty_urn_is_skipped_without_a_warning(cli, ws, tmp_path, recwarn):
    # ExtensionParameterizeStep (pkg/resource/deploy/step.go:1813-1821): no URN, no type, no
    # states. The SDK's event server dropped it with "UserWarning: Failed to parse engine
    # event"; the one reader skips it on purpose and nothing else reads the log
    events = _fixture("events/preview-update.jsonl")
    md = {"op": "extend-parameterize", "urn": "", "type": "", "old": None, "new": None,
          "detailedDiff": None, "provider": ""}
    events[1:1] = [{"sequence": 0, "timestamp": 1, "resourcePreEvent": {"metadata": md, "planning": True}},
                   {"sequence": 0, "timestamp": 1, "resOutputsEvent": {"metadata": md, "planning": True}}]
    events = [{**e, "sequence": i} for i, e in enumerate(events)]
    cli.scenario(preview={"events": _write(tmp_path, "ext.jsonl", events)})
    res = AutomationEngine(ws).preview(STACK)
    assert all(s.op != "extend-parameterize" for s in res.steps) and [s.op for s in res.changes] == \
        ["update", "update", "create"]
    assert not [w for w in recwarn if "engine event" in str(w.message)]


def test_a_step_type_that_contradicts_its_urn_is_refused_by_the_adapter(cli, ws, tmp_path):
    # the NodePool's delete labelled ConfigMap: refused, never read as a ConfigMap
    events = _fixture("events/preview-update.jsonl")
    for e in events:
        md = _meta(e)
        if md and md["urn"] == H100:
            md.update(op="delete", type="kubernetes:core/v1:ConfigMap", new=None, detailedDiff=None)
    cli.scenario(preview={"events": _write(tmp_path, "label.jsonl", events)})
    with pytest.raises(ClusterstackError) as e:
        AutomationEngine(ws).preview(STACK)
    assert e.value.exit_code == 2 and "contradicts its URN's type" in e.value.render()


def _up_deleting_the_pool_as_planning(tmp_path) -> tuple[str, int]:
    """up-update.jsonl with the h100 NodePool's step turned into a delete flagged
    ``planning: true`` (which the SDK-callback path never judged)."""
    events = _fixture("events/up-update.jsonl")
    seq = None
    for e in events:
        md = _meta(e)
        if md and md["urn"] == H100:
            md.update(op="delete", new=None, detailedDiff=None)
            md.pop("diffs", None)
            if "resourcePreEvent" in e:
                e["resourcePreEvent"]["planning"] = True
                seq = e["sequence"]
        if "summaryEvent" in e:
            e["summaryEvent"]["resourceChanges"] = {"same": 6, "delete": 1}
    return _write(tmp_path, "up-planning-delete.jsonl", events), seq


def test_every_step_of_an_update_is_judged_planning_or_not(cli, ws, tmp_path):
    from clusterstack.adapters.git import GitState
    from clusterstack.engine import UpdateCancelledError
    from clusterstack.flows.up import guarded_up
    from clusterstack.guard import GuardPolicy

    path, seq = _up_deleting_the_pool_as_planning(tmp_path)
    cli.scenario(preview={"events": "events/preview-update.jsonl"},
                 up={"events": path, "interrupt_after_sequence": seq},
                 stack_history={"stdout_file": "history.json"})
    out: list[str] = []
    with pytest.raises(UpdateCancelledError) as e:
        guarded_up(AutomationEngine(ws), STACK, policy=GuardPolicy(),
                   git=GitState(commit="a" * 40, branch="main", dirty=False), release_branch="main",
                   yes=True, message="m", prompt=lambda _t: None, report=out.append, warn=out.append)
    assert e.value.exit_code == 3 and (e.value.step.op, e.value.step.urn) == ("delete", H100)
    assert "update canceled" in e.value.output  # the CLI was interrupted at the announcement


def test_an_update_that_leaves_no_event_stream_is_not_a_success(cli, ws):
    # a `pulumi` that floods stdout with text and writes no event: nothing says what it did
    cli.scenario(up={"stdout": "\n".join(f"progress line {i}" for i in range(20_000))},
                 stack_history={"stdout_file": "history.json"})
    from clusterstack.engine import EngineOutputError

    with pytest.raises(EngineOutputError) as e:
        AutomationEngine(ws).up(STACK, message="m", on_step=lambda s: True)
    assert e.value.exit_code == 2 and "no engine event in its --event-log" in e.value.render()


def test_text_among_the_events_of_an_update_stops_it(cli, ws, tmp_path):
    from clusterstack.engine import UpdateCancelledError

    events = _fixture("events/up-update.jsonl")
    lines = [json.dumps(e) for e in events]
    lines.insert(5, "Updating (cw-demo-h100):")
    p = tmp_path / "text.jsonl"
    p.write_text("\n".join(lines) + "\n")
    cli.scenario(up={"events": str(p)}, stack_history={"stdout_file": "history.json"})
    with pytest.raises(UpdateCancelledError) as e:
        AutomationEngine(ws).up(STACK, message="m", on_step=lambda s: True)
    assert e.value.exit_code == 3 and "pulumi --event-log:6: not a JSON event" in e.value.render()


@needs_reference
def test_the_older_protect_text_is_a_refusal_through_the_adapter(cli, ws, tmp_path):
    # TestMultipleProtectedDeletes/1 in the wording of CLIs v3.3.0-v3.51 (DeleteStep.Apply,
    # pulumi/pulumi 03e7601301; replaced in bf239e04d0)
    ref = reference_dir() / "pulumi/pkg/engine/lifecycletest/testdata/output/TestMultipleProtectedDeletes/1"
    text = (ref / "eventstream.json").read_text()
    text = text.replace("Preview failed: resource ", "Preview failed: unable to delete resource ")
    text = text.replace(" cannot be deleted\\nbecause it is protected.", "\\nas it is currently marked for protection.")
    events = [{**json.loads(x), "sequence": i} for i, x in enumerate(text.splitlines()) if x.strip()]
    cli.scenario(preview={"events": _write(tmp_path, "old-text.jsonl", events), "code": 255})
    err = _refused(ws)
    assert [r.op for r in err.result.refusals] == ["delete", "delete"]


def test_an_unknown_op_mid_update_stops_the_update(cli, ws, tmp_path):
    path = _with_step_op(tmp_path, "obliterate")
    cli.scenario(up={"events": path}, stack_history={"stdout_file": "history.json"})
    with pytest.raises(ClusterstackError) as e:
        AutomationEngine(ws).up(STACK, message="m", on_step=lambda s: True)
    assert e.value.exit_code == 3 and "obliterate" in e.value.render()
