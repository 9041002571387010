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


def test_an_internal_op_of_the_pinned_cli_is_skipped_deliberately(cli, ws, tmp_path, recwarn):
    cli.scenario(preview={"events": _with_step_op(tmp_path, "extend-parameterize")})
    res = AutomationEngine(ws).preview(STACK)
    assert all(s.op != "extend-parameterize" for s in res.steps)
    # ... and quietly: the SDK's own failed parse of that op (a ~2 KB event dump) is not shown
    assert not [w for w in recwarn if "Failed to parse engine event" in str(w.message)]


def test_an_unknown_op_mid_update_stops_the_update(cli, ws, tmp_path):
    path = _with_step_op(tmp_path, "obliterate")
    cli.scenario(up={"events": path}, stack_history={"stdout_file": "history.json"})
    with pytest.raises(ClusterstackError) as e:
        AutomationEngine(ws).up(STACK, message="m", on_step=lambda s: True)
    assert e.value.exit_code == 3 and "obliterate" in e.value.render()
