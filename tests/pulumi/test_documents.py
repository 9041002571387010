"""Parsers of Pulumi's preview document and engine event stream (clusterstack.pulumi.preview, .events, .documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.errors import ClusterstackError
from clusterstack.guard import GuardPolicy, check
from clusterstack.pulumi import tokens
from clusterstack.pulumi.documents import parse_document, parse_file, parse_text
from clusterstack.pulumi.events import step_from_event
from clusterstack.pulumi.preview import step_from_preview_step
from clusterstack.pulumi.steps import EVENTS, PREVIEW
from clusterstack.pulumi.tokens import NODEPOOL as NP
from clusterstack.pulumi.urn import type_of as type_of_urn

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"
H100 = ("urn:pulumi:cw-demo-h100::clusterstack::clusterstack:coreweave:NodePools$"
        f"{NP}::cwdemo-h100")


def _events(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (FIX / name).read_text().splitlines()]


def _key(s):
    return (s.op, s.urn, s.type, s.old_protect, s.old_retain_on_delete, s.replace_reasons, s.diffs,
            dict(s.detailed_diff or {}))


# --- single records -------------------------------------------------------------------------

def test_type_of_urn_takes_the_last_qualified_type_and_allows_colons_in_names():
    assert type_of_urn(H100) == NP
    assert type_of_urn("urn:pulumi:s::p::pulumi:pulumi:Stack::p-s") == tokens.STACK_TYPE
    assert type_of_urn("urn:pulumi:s::p::a:b:C$d:e:F::name::with::colons") == "d:e:F"
    assert type_of_urn("not-a-urn") == ""


def test_preview_step_fields():
    doc = json.loads((FIX / "preview-nodepool-replace.json").read_text())
    s = step_from_preview_step(doc["steps"][1])
    assert (s.op, s.urn, s.type) == ("replace", H100, NP)
    assert s.old_protect is True and s.old_retain_on_delete is False
    assert s.replace_reasons == ("spec",) and s.diffs == ("spec",)
    assert s.detailed_diff == {"spec.instanceType": {"kind": "update-replace", "inputDiff": False}}
    assert s.old_inputs["spec"]["instanceType"] == "gd-8xh100ib-i128"
    assert s.new_inputs["spec"]["instanceType"] == "gd-8xh200ib-i128"


def test_preview_step_type_falls_back_to_the_urn():
    s = step_from_preview_step({"op": "delete", "urn": H100, "detailedDiff": None})
    assert s.type == NP and s.old_protect is False


def test_event_detailed_diff_uses_diffKind_and_is_normalised():
    ev = _events("events-up-guarded.jsonl")
    pre = next(e for e in ev if e.get("resourcePreEvent", {}).get("metadata", {}).get("op") == "replace")
    s = step_from_event(pre)
    assert s.detailed_diff == {"spec.instanceType": {"kind": "update-replace", "inputDiff": False}}
    assert s.replace_reasons == ("spec",) and s.old_protect is True


def test_only_resource_pre_events_announce_steps():
    kinds = {}
    for e in _events("events-up-guarded.jsonl"):
        kind = next(k for k in e if k not in ("sequence", "timestamp"))
        kinds.setdefault(kind, set()).add(step_from_event(e) is not None)
    assert kinds.pop("resourcePreEvent") == {True}
    assert all(v == {False} for v in kinds.values()), kinds  # outputs, prelude, summary, cancel …


def test_the_stream_reader_never_uses_the_sdks_event_parser():
    """The one reader reads raw JSON; the Automation API's ``EngineEvent.from_json`` (which drops
    an op its enum lacks with a UserWarning) is not imported by reading a stream."""
    import subprocess
    import sys

    code = ("import sys, json; from clusterstack.pulumi.documents import parse_file; "
            f"parse_file({str(FIX / 'events-preview.jsonl')!r}); "
            "print('pulumi.automation.events' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_streaming_check_cancels_mid_update_at_the_first_guarded_announcement():
    """What `up` does: check each event as it arrives; the NodePool replacement is caught at its
    first (create-replacement) announcement — after the ClusterQueue update completed, before
    the old NodePool's delete is announced."""
    events = _events("events-up-guarded.jsonl")
    policy = GuardPolicy()
    caught_at = None
    for e in events:
        step = step_from_event(e)
        if step is not None and not check([step], policy).ok:
            caught_at = e
            break
    assert caught_at is not None
    meta = caught_at["resourcePreEvent"]["metadata"]
    assert (meta["op"], meta["urn"]) == ("create-replacement", H100)
    seq = caught_at["sequence"]
    done_before = [e["resOutputsEvent"]["metadata"]["op"] for e in events
                   if e["sequence"] < seq and "resOutputsEvent" in e]
    assert "update" in done_before  # mid-update: something was already applied
    delete_seq = next(e["sequence"] for e in events
                      if e.get("resourcePreEvent", {}).get("metadata", {}).get("op") == "delete-replaced")
    assert delete_seq > seq


# --- whole documents: detection ---------------------------------------------------------------

def test_event_stream_variants_parse_to_the_same_steps(tmp_path):
    events = _events("events-preview.jsonl")
    lines = parse_file(FIX / "events-preview.jsonl")
    variants = {
        "array.json": json.dumps(events, indent=2),
        "batch.json": json.dumps({"events": events}),
        "crlf-blank.jsonl": "\r\n".join(json.dumps(e) for e in events) + "\r\n\r\n",
        "shuffled.jsonl": "\n".join(json.dumps(e) for e in reversed(events)),  # sequence orders
    }
    for name, text in variants.items():
        (tmp_path / name).write_text(text)
        got = parse_file(tmp_path / name)
        assert got.format == EVENTS, name
        assert [_key(s) for s in got.steps] == [_key(s) for s in lines.steps], name
        assert got.change_summary == {"same": 6, "replace": 1, "delete": 1}
        assert got.is_preview is True


def test_a_single_line_event_log_is_an_event_stream():
    events = _events("events-up-guarded.jsonl")
    one = next(e for e in events if e.get("resourcePreEvent", {}).get("metadata", {}).get("op") == "replace")
    got = parse_text(json.dumps(one))
    assert got.format == EVENTS and [s.op for s in got.steps] == ["replace"]
    assert not check(got.steps).ok


def test_each_event_step_counts_once_and_outputs_cover_a_truncated_log():
    full = parse_file(FIX / "events-up-guarded.jsonl")
    assert [s.op for s in full.steps] == ["same", "same", "update", "create-replacement", "replace",
                                          "delete-replaced"]
    # Drop every resourcePreEvent (a log cut to completions only): steps still come through.
    outputs_only = [e for e in _events("events-up-guarded.jsonl") if "resourcePreEvent" not in e]
    got = parse_document(outputs_only)
    assert {(s.op, s.urn) for s in got.steps} == {(s.op, s.urn) for s in full.steps}
    assert not check(got.steps).ok


def test_a_failed_step_is_seen_through_res_op_failed():
    failed = {"sequence": 3, "timestamp": 1, "resOpFailedEvent": {"status": 1, "steps": 0, "metadata": {
        "op": "delete", "urn": H100, "type": NP, "old": {"type": NP, "urn": H100, "protect": True},
        "new": None, "detailedDiff": None, "provider": ""}}}
    got = parse_document([failed])
    assert [(s.op, s.old_protect) for s in got.steps] == [("delete", True)]
    assert got.is_preview is None  # no summary: an update still running or killed


def test_a_preview_document_without_steps_is_refused():
    # pkg/backend/display/json.go:210 always shows the root stack's step: "steps" is never absent
    with pytest.raises(ClusterstackError, match='a preview document without "steps"'):
        parse_text(json.dumps({"config": {}, "changeSummary": {"same": 3}, "duration": 1}))


def test_future_event_kinds_are_accepted_and_ignored():
    got = parse_text('{"sequence":0,"timestamp":1,"someFutureEvent":{"x":1}}\n'
                     '{"sequence":1,"timestamp":1,"cancelEvent":{}}\n')
    assert got.format == EVENTS and got.steps == ()


# --- errors: exit 2, naming the file ----------------------------------------------------------

@pytest.mark.parametrize("text, needle, line", [
    ("", "the file is empty", None),
    ("   \n\n", "the file is empty", None),
    ("Previewing update (dev):\n  + create", "not JSON", 1),
    ('{"steps": [', "not JSON", 1),
    ("42", "a JSON int", None),
    ('"steps"', "a JSON str", None),
    ('{"resources": []}', "neither a Pulumi preview document", None),
    ("[]", "an empty list of engine events", None),
    ('{"events": []}', "an empty list of engine events", None),
    ('[{"sequence": 0, "cancelEvent": {}}, {"urn": "x"}]', "not a Pulumi engine event", None),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{}}\n{"sequence":1,', "not a JSON event", 2),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{}}\n{"steps": []}\n', "not a Pulumi engine event", 2),
    ('{"steps": {"op": "create"}}', "must be a list of steps", None),
    ('{"steps": [{"urn": "urn:pulumi:s::p::t:m:T::n"}]}', "missing step op", None),
    ('{"steps": [{"op": "create"}]}', "missing step urn", None),
    ('{"steps": [{"op": "obliterate", "urn": "urn:pulumi:s::p::t:m:T::n"}]}', "unknown step op", None),
    ('{"steps": [{"op": "create", "urn": "nope"}]}', "cannot tell the resource type", None),
    ('{"steps": [{"op": "replace", "urn": "urn:pulumi:s::p::t:m:T::n", "replaceReasons": "spec"}]}',
     "must be a list of property names", None),
    ('{"steps": [{"op": "replace", "urn": "urn:pulumi:s::p::t:m:T::n", "detailedDiff": [1]}]}',
     "must be an object of property path", None),
    ('{"sequence": 0, "resourcePreEvent": {"metadata": null}}', "missing step metadata", None),
    ('{"sequence": 0, "resourcePreEvent": {"metadata": {"op": "delete", "urn": "urn:pulumi:s::p::t:m:T::n",'
     ' "old": "protected"}}}', "must be a resource state object", None),
    # a nesting past the JSON parser's recursion limit (bench/fuzz_bench.py found exit 1)
    ("[" * 5000, "nested too deeply", None),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{}}\n' + "[" * 5000 + "\n", "nested too deeply", 2),
    # the value limits of the one JSON reader (config.document.json_loads): int64, no NaN
    ('{"steps": [], "changeSummary": {"create": ' + "9" * 5000 + "}}", "integer 999999999999… is out of range", None),
    ('{"steps": [], "changeSummary": {"create": NaN}}', "NaN is not a JSON number", None),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{}}\n{"sequence":1,"timestamp":' + "1" * 5000 + "}\n",
     "out of range", 2),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{}}\n{"sequence":Infinity}\n', "Infinity is not a JSON number", 2),
])
def test_bad_input_is_a_user_error_naming_the_file(tmp_path, text, needle, line):
    f = tmp_path / "input.json"
    f.write_text(text)
    with pytest.raises(ClusterstackError) as ei:
        parse_file(f)
    exc = ei.value
    assert exc.exit_code == 2
    p = exc.problems[0]
    assert p.file == f and needle in p.message, p.render()
    assert p.line == line


def test_error_names_the_step_field(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"steps": [{"op": "same", "urn": H100},
                                       {"op": "oops", "urn": H100}]}))
    with pytest.raises(ClusterstackError) as ei:
        parse_file(f)
    assert ei.value.problems[0].field == "steps[1].op"
    assert "upgrade clusterstack" in ei.value.problems[0].hint


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(ClusterstackError, match="no such file"):
        parse_file(tmp_path / "missing.json")
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"steps": ["\xff"]}')
    with pytest.raises(ClusterstackError, match="cannot read"):
        parse_file(bad)


def test_garbage_collector_state_is_restored(tmp_path):
    import gc

    assert gc.isenabled()
    parse_file(FIX / "events-preview.jsonl")
    assert gc.isenabled()
    with pytest.raises(ClusterstackError):
        parse_text('{"steps": [{"op": "obliterate", "urn": "urn:pulumi:s::p::t:m:T::n"}]}')
    assert gc.isenabled()
    gc.disable()
    try:
        parse_file(FIX / "preview-clean.json")
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_a_step_event_without_type_or_states_takes_the_urns_type_fail_closed():
    ev = {"sequence": 3, "timestamp": 1, "resourcePreEvent": {"metadata": {"op": "delete", "urn": H100}}}
    s = step_from_event(ev)
    assert (s.op, s.type, s.old_protect) == ("delete", NP, False)
    assert not check([s]).ok  # a NodePool delete is blocked whatever else is missing
    with pytest.raises(ClusterstackError, match="missing step metadata"):
        step_from_event({"sequence": 3, "timestamp": 1, "resourcePreEvent": {}})
    assert step_from_event({"sequence": 4, "timestamp": 1,
                            "diagnosticEvent": {"message": "hi", "severity": "info"}}) is None


def test_the_event_log_reader_keeps_the_same_limits():
    from clusterstack.pulumi.events import StreamReader

    reader = StreamReader("log.jsonl")
    reader.feed_line('{"sequence": 0, "timestamp": 1, "cancelEvent": {}}', 1)
    with pytest.raises(ClusterstackError, match="not accepted JSON: integer") as e:
        reader.feed_line('{"sequence": ' + "7" * 5000 + "}", 2)
    assert e.value.problems[0].line == 2


def test_each_step_carries_what_a_review_record_lists():
    """Per step the stream carries op, URN, type (the URN's), old and new inputs and the changed
    property paths (the detailed diff's keys, else the changed top-level keys)."""
    parsed = parse_file(FIX.parent / "engine" / "events" / "preview-update.jsonl")
    pool = next(s for s in parsed.steps if s.urn == H100)
    assert (pool.op, pool.type, pool.changed_paths) == ("update", NP, ("spec.maxNodes",))
    assert pool.old_inputs["spec"]["maxNodes"] == 16 and pool.new_inputs["spec"]["maxNodes"] == 24
    keys_only = step_from_preview_step({"op": "update", "urn": H100, "diffReasons": ["spec", "metadata"]})
    assert keys_only.changed_paths == ("metadata", "spec")
