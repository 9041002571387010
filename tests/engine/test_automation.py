"""The Automation API adapter (clusterstack.engine.automation) against Pulumi's real formats.

No Pulumi binary is needed: ``tests/fakes/pulumi_cli.py`` stands in for the
``pulumi`` executable on PATH and answers with fixtures in Pulumi's formats (engine event
logs, ``stack history --json``, ``stack ls --json``, ``stack export``, the CLI's stderr). The
whole adapter path runs for real: argument building, the ``--event-log`` the adapter reads with
the one stream reader (the same file whatever the CLI version: the SDK's own event server, a
file up to 3.205 and gRPC above, is not used), error classification, and the SIGINT cancel.
A last test runs a real preview/up when a ``pulumi`` binary is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from clusterstack.engine import (
    ProtectRefusedError,
    EngineCommandError,
    PassphraseMissingError,
    ProgramFailedError,
    PulumiMissingError,
    ResourceFailedError,
    StackLockedError,
    StackNotFoundError,
    UpdateCancelledError,
)
from clusterstack.engine.automation import AutomationEngine, diagnostics_from_output, resolve_backend_url
from clusterstack.engine.events import LiveStream, strip_color
from clusterstack.guard import check
from clusterstack.pulumi.tokens import NODEPOOL
from clusterstack.workspace import Workspace
from fakes.pulumi import FIXTURES as FIX
from fakes.pulumi import FakeCli


STACK = "cw-demo-h100"
H100 = f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
FILE_LOG, GRPC_LOG = "3.205.0", "3.210.0"  # where the SDK would switch from a log file to gRPC


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


@pytest.fixture
def ws(workspace_copy) -> Workspace:
    return Workspace.load(workspace_copy)


def text(name: str) -> str:
    return (FIX / name).read_text()


# --- backend and secrets ---------------------------------------------------------------------

def test_relative_file_backend_is_resolved_against_the_repo_root(tmp_path):
    assert resolve_backend_url("file://.pulumi-state", tmp_path) == f"file://{tmp_path.resolve()}/.pulumi-state"
    assert resolve_backend_url("file://state/x?no_tmp_dir=true", tmp_path) == \
        f"file://{tmp_path.resolve()}/state/x?no_tmp_dir=true"
    for unchanged in ("file:///abs/state", "file://~", "gs://lab-state", "https://api.pulumi.com"):
        assert resolve_backend_url(unchanged, tmp_path) == unchanged


def test_every_cli_call_gets_the_resolved_backend_and_runs_in_the_project(cli, ws):
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    AutomationEngine(ws).preview(STACK)
    call = cli.call("preview")
    assert call["env"]["PULUMI_BACKEND_URL"] == f"file://{ws.root}/.pulumi-state"
    assert Path(call["cwd"]) == ws.project_dir
    assert call["argv"][call["argv"].index("--stack") + 1] == STACK
    assert (ws.root / ".pulumi-state").is_dir()  # the file backend's directory exists


def test_missing_passphrase_is_reported_before_the_cli_runs(cli, ws, monkeypatch):
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    with pytest.raises(PassphraseMissingError) as e:
        AutomationEngine(ws).preview(STACK)
    assert "PULUMI_CONFIG_PASSPHRASE" in e.value.render() and e.value.exit_code == 2
    assert cli.calls() == []


def test_passphrase_error_from_the_cli_is_mapped(cli, ws):
    cli.scenario(preview={"stderr": text("stderr-passphrase.txt"), "code": 255})
    with pytest.raises(PassphraseMissingError):
        AutomationEngine(ws).preview(STACK)


def test_missing_cli_says_how_to_install(ws, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    with pytest.raises(PulumiMissingError) as e:
        AutomationEngine(ws).preview(STACK)
    msg = e.value.render()
    assert "https://www.pulumi.com/docs/install/" in msg and "curl -fsSL https://get.pulumi.com | sh" in msg
    assert not (ws.root / ".pulumi-state").exists()  # nothing created without a CLI


def test_both_engines_implement_the_protocol(ws):
    from clusterstack.engine import Engine
    from fakes.pulumi import FakeEngine

    assert isinstance(AutomationEngine(ws), Engine) and isinstance(FakeEngine(), Engine)


# --- preview ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [FILE_LOG, GRPC_LOG], ids=["event-log-file", "event-log-grpc"])
def test_preview_collects_typed_steps_from_the_event_stream(cli, ws, version):
    cli.scenario(version=version, preview={"events": "events/preview-update.jsonl",
                                           "stdout": "Previewing update (cw-demo-h100):"})
    res = AutomationEngine(ws).preview(STACK)
    assert res.counts == {"create": 1, "same": 6, "update": 2}
    assert [s.op for s in res.changes] == ["update", "update", "create"]
    np = next(s for s in res.steps if s.urn == H100)
    assert np.op == "update" and np.type == NODEPOOL and np.old_protect
    assert np.detailed_diff == {"spec.maxNodes": {"kind": "update", "inputDiff": True}}
    assert np.old_inputs["spec"]["maxNodes"] == 16 and np.new_inputs["spec"]["maxNodes"] == 24
    assert res.stdout.startswith("Previewing update")
    assert check(res.steps).ok


def test_preview_with_refresh_passes_the_flag(cli, ws):
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    res = AutomationEngine(ws).preview(STACK, refresh=True)
    assert "--refresh" in cli.call("preview")["argv"]
    assert not res.has_changes and res.counts == {"same": 7}


def test_nodepool_replace_in_a_preview_is_a_guard_violation(cli, ws):
    # replaceOnChanges makes the engine plan the replace; protect makes it refuse (TestProtect/1)
    cli.scenario(preview={"events": "events/preview-nodepool-replace.jsonl", "code": 255})
    with pytest.raises(ProtectRefusedError) as e:
        AutomationEngine(ws).preview(STACK)
    res = e.value.result
    assert [s.op for s in res.changes] == ["create-replacement", "replace", "delete-replaced"]
    verdict = check(res.steps)
    assert [(v.op, v.urn) for v in verdict.violations] == [("replace", H100)]
    assert res.changes[0].detailed_diff == {"spec.instanceType": {"kind": "update-replace", "inputDiff": True}}


@pytest.mark.parametrize("stderr", ["stderr-conflict-cloud.txt", "stderr-locked-file-backend.txt"])
def test_a_locked_stack_is_a_typed_error(cli, ws, stderr):
    cli.scenario(preview={"stderr": text(stderr), "code": 255})
    with pytest.raises(StackLockedError) as e:
        AutomationEngine(ws).preview(STACK)
    assert e.value.render().startswith(f"stack {STACK}: another update is currently in progress")
    assert "pulumi cancel" in e.value.render()


def test_an_unknown_stack_is_a_typed_error(cli, ws):
    cli.scenario(stacks=())
    with pytest.raises(StackNotFoundError) as e:
        AutomationEngine(ws).preview(STACK)
    assert f"clusterstack stack init {STACK}" in e.value.render()


def test_program_failure_carries_the_programs_own_error(cli, ws):
    cli.scenario(preview={"events": "events/preview-program-error.jsonl",
                          "stdout": text("stdout-program-failed.txt"), "code": 255})
    with pytest.raises(ProgramFailedError) as e:
        AutomationEngine(ws).preview(STACK)
    assert e.value.program_error.startswith("clusters/cw-demo-h100.yaml:14: provisioning.coreweave")
    assert "<{%" not in e.value.program_error  # colour directives stripped
    assert "must be >= min_nodes (4)" in e.value.render()


def test_program_traceback_without_events_comes_from_the_cli_output(cli, ws):
    cli.scenario(preview={"stdout": text("stdout-program-traceback.txt"), "code": 255})
    with pytest.raises(ProgramFailedError) as e:
        AutomationEngine(ws).preview(STACK)
    assert "Traceback (most recent call last):" in e.value.program_error
    assert "the Pulumi program failed: KeyError: 'h100'" in e.value.render()


def test_unclassified_cli_failure_keeps_the_cli_error_lines(cli, ws):
    cli.scenario(preview={"stderr": "error: failed to load plugin: boom", "code": 255})
    with pytest.raises(EngineCommandError) as e:
        AutomationEngine(ws).preview(STACK)
    assert "failed to load plugin: boom" in e.value.render() and e.value.exit_code == 1


def test_an_engine_wide_error_is_not_blamed_on_the_program(cli, ws, tmp_path):
    log = tmp_path / "engine-error.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in [
        {"sequence": 0, "timestamp": 1736848931, "preludeEvent": {"config": {}}},
        {"sequence": 1, "timestamp": 1736848932, "diagnosticEvent": {
            "message": "<{%fg 1%}>failed to verify snapshot: resource urn:x refers to unknown provider<{%reset%}>\n",
            "color": "raw", "severity": "error"}},
        {"sequence": 2, "timestamp": 1736848933, "cancelEvent": {}}]) + "\n")
    cli.scenario(preview={"events": str(log), "code": 255})
    with pytest.raises(EngineCommandError) as e:
        AutomationEngine(ws).preview(STACK)
    assert "failed to verify snapshot" in e.value.render()


# --- up --------------------------------------------------------------------------------------

def test_up_streams_steps_and_returns_the_recorded_update(cli, ws):
    cli.scenario(up={"events": "events/up-update.jsonl", "stdout": "Updating (cw-demo-h100):"},
                 stack_history={"stdout_file": "history.json"})
    seen = []
    res = AutomationEngine(ws).up(STACK, message="raise h100 max nodes", on_step=lambda s: seen.append(s) or True)
    assert [s.op for s in seen if s.op != "same"] == ["update"]
    assert res.version == 3 and res.result == "succeeded" and res.counts == {"same": 27, "update": 1}
    argv = cli.call("up")["argv"]
    assert argv[argv.index("--message") + 1] == "raise h100 max nodes"
    assert "--skip-preview" in argv and "--yes" in argv


@pytest.mark.parametrize("version", [FILE_LOG, GRPC_LOG], ids=["event-log-file", "event-log-grpc"])
def test_a_guarded_step_mid_update_interrupts_the_cli(cli, ws, version):
    # fake_pulumi waits for SIGINT right after announcing the create-replacement (sequence 11)
    cli.scenario(version=version, up={"events": "events/up-guarded-midupdate.jsonl",
                                      "interrupt_after_sequence": 11})
    seen = []

    def on_step(step):
        seen.append(step.op)
        return check([step]).ok

    with pytest.raises(UpdateCancelledError) as e:
        AutomationEngine(ws).up(STACK, message="m", on_step=on_step)
    err = e.value
    assert (err.step.op, err.step.urn) == ("create-replacement", H100)
    assert not err.finished and err.exit_code == 3
    assert "update canceled" in err.output  # the CLI took the SIGINT as Pulumi's graceful cancel
    assert "replace" not in seen and "delete-replaced" not in seen  # nothing after the guarded step
    assert [(s.op, s.urn.rsplit("::", 1)[-1]) for s in err.applied if s.op != "same"] == \
        [("update", "cwdemo-controller")]


def test_an_exception_in_the_step_check_stops_the_update(cli, ws):
    cli.scenario(up={"events": "events/up-guarded-midupdate.jsonl", "interrupt_after_sequence": 1})

    def broken(step):
        raise ValueError("bug in the check")

    with pytest.raises(UpdateCancelledError):
        AutomationEngine(ws).up(STACK, message="m", on_step=broken)


def test_a_failed_resource_operation_is_reported_with_the_provider_message(cli, ws):
    cli.scenario(up={"events": "events/up-resource-error.jsonl", "stderr": "error: update failed", "code": 255})
    with pytest.raises(ResourceFailedError) as e:
        AutomationEngine(ws).up(STACK, message="m")
    assert "admission webhook" in e.value.render() and "cwdemo-h100" in e.value.render()
    assert e.value.exit_code == 1


# --- stacks, history, export -----------------------------------------------------------------

def test_init_stack_uses_the_configured_secrets_provider(cli, ws):
    cli.scenario(stacks=())
    assert AutomationEngine(ws).init_stack(STACK) is True
    argv = cli.call("init")["argv"]
    assert argv[argv.index("--secrets-provider") + 1] == "passphrase" and STACK in argv
    cli.scenario(stacks=(STACK,))
    assert AutomationEngine(ws).init_stack(STACK) is False


def test_history_is_parsed_from_stack_history_json(cli, ws):
    cli.scenario(stack_history={"stdout_file": "history.json"})
    h = AutomationEngine(ws).history(STACK)
    assert [e.version for e in h] == [3, 2, 1]
    assert h[0].start_time == datetime(2025, 1, 14, 10, 2, 11, tzinfo=timezone.utc)
    assert h[0].end_time == datetime(2025, 1, 14, 10, 4, 40, tzinfo=timezone.utc)
    assert h[0].git_commit == "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d" and h[0].git_dirty is False
    assert (h[1].result, h[1].git_dirty) == ("failed", True)
    assert h[2].resource_changes == {"create": 28}
    assert "--show-secrets" not in cli.call("history")["argv"]  # no passphrase needed to read history


def test_list_stacks_adds_the_last_result_from_history(cli, ws):
    cli.scenario(stacks=("cw-demo-gb200", STACK), stack_ls={"stdout_file": "stack-ls.json"},
                 stack_history={"stdout_file": "history.json"})
    gb200, h100 = AutomationEngine(ws).list_stacks()
    assert (gb200.name, gb200.last_update, gb200.last_result) == ("cw-demo-gb200", None, None)
    assert h100.current and h100.resource_count == 28 and h100.last_result == "succeeded"
    assert h100.last_update == datetime(2025, 1, 14, 10, 4, 40, tzinfo=timezone.utc)


def test_export_keeps_secrets_encrypted(cli, ws):
    cli.scenario(stack_export={"stdout_file": "export.json"})
    doc = AutomationEngine(ws).export(STACK)
    assert doc == json.loads(text("export.json"))
    assert "--show-secrets" not in cli.call("export")["argv"]


_HOSTILE_STDOUT = [
    ('{"version": 3, "deployment": {"resources": [], "n": ' + "9" * 5000 + "}}", "out of range"),
    ('{"version": 3, "deployment": {"n": NaN}}', "NaN is not a JSON number"),
    ('{"version": 3, "deployment": {"resources": [', "JSON that is not whole"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("Exporting stack…", "no JSON"),
    ("[1, 2]", "a JSON list, not a deployment object"),
]


@pytest.mark.parametrize("stdout, problem", _HOSTILE_STDOUT,
                         ids=["5000-digits", "nan", "truncated", "deep", "text", "list"])
def test_export_of_garbage_is_a_user_error_naming_the_command(cli, ws, stdout, problem):
    from clusterstack.engine import EngineOutputError

    cli.scenario(stack_export={"stdout": stdout})
    with pytest.raises(EngineOutputError) as exc:
        AutomationEngine(ws).export(STACK)
    assert exc.value.exit_code == 2
    assert f"stack {STACK}: `pulumi stack export` printed " in str(exc.value)
    assert problem in str(exc.value)


@pytest.mark.parametrize("stdout, problem", [
    ("Fetching history…", "printed no JSON"),
    ('[{"version": ' + "9" * 5000 + "}]", "printed JSON clusterstack does not accept: integer"),
    ('[{"version": 1, "kind": "update"', "printed JSON that is not whole"),
    ("[1, 2]", "printed a document of another shape: [0] is not an object"),
    ('[{"name": "x", "name": "y"}]', "printed JSON clusterstack does not accept: the key 'name' appears twice"),
], ids=["text", "5000-digits", "truncated", "other-shape", "repeated-key"])
@pytest.mark.parametrize("command", ["history", "list_stacks"])
def test_history_and_stack_list_of_garbage_are_user_errors_naming_the_command(cli, ws, stdout, problem,
                                                                              command):
    """Decoded by the one JSON reader (not the SDK's plain json.loads): what it cannot read is
    an exit-2 error naming the Pulumi command, never an internal error."""
    from clusterstack.engine import EngineOutputError

    if command == "history":
        cli.scenario(stack_history={"stdout": stdout})
        call, shown = (lambda: AutomationEngine(ws).history(STACK)), "pulumi stack history --json"
    else:
        cli.scenario(stack_ls={"stdout": stdout})
        call, shown = (lambda: AutomationEngine(ws).list_stacks()), "pulumi stack ls --json"
    with pytest.raises(EngineOutputError) as exc:
        call()
    assert exc.value.exit_code == 2
    assert f"`{shown}` {problem}" in str(exc.value), str(exc.value)


def test_a_history_record_of_another_shape_names_the_field(cli, ws):
    from clusterstack.engine import EngineOutputError

    record = json.loads(text("history.json"))[0]
    record["startTime"] = "yesterday"
    cli.scenario(stack_history={"stdout": json.dumps([record])})
    with pytest.raises(EngineOutputError, match=r"another shape: \[0\]\.startTime is not a time"):
        AutomationEngine(ws).history(STACK)


def test_export_of_bytes_that_are_not_utf8_is_a_user_error_and_the_pipe_is_drained(cli, ws):
    """Not UTF-8 on stdout: refused naming the command, and the reader keeps reading (200 kB,
    over a pipe's buffer, after the bad byte: the CLI would block on a dead reader)."""
    import base64

    from clusterstack.engine import EngineOutputError

    raw = b'{"version": 3, "deployment": {"n": "\xff"}, "pad": "' + b"x" * 200_000 + b'"}\n'
    cli.scenario(stack_export={"stdout_base64": base64.b64encode(raw).decode()})
    with pytest.raises(EngineOutputError) as exc:
        AutomationEngine(ws).export(STACK)
    assert exc.value.exit_code == 2
    assert "`pulumi stack export` printed bytes that are not UTF-8" in str(exc.value)
    assert len(exc.value.output) > 200_000


# --- event and output parsing ----------------------------------------------------------------

def _live(name: str, **kw) -> LiveStream:
    live = LiveStream(**kw)
    for line in text(name).splitlines():
        live.line(line)
    return live


def test_the_live_stream_reads_the_log_with_the_one_reader():
    live = _live("events/up-resource-error.jsonl")
    assert live.error is None
    assert [d.severity for d in live.errors()] == ["error"] and not live.program_errors()
    assert live.errors()[0].message.startswith("1 error occurred:")  # the "error: " prefix removed
    assert [(s.op, s.urn) for s in live.failed] == [("update", H100)]
    parsed = live.result()
    assert parsed.change_summary == {"same": 4} and parsed.result == "failed" and parsed.prelude
    bad = LiveStream()
    bad.line('{"sequence": 0, "timestamp": 1, "cancelEvent": {}}')
    bad.line("not json")
    assert bad.error is not None and "pulumi --event-log:2: not a JSON event" in bad.error.render()


def test_unknown_step_op_is_refused_not_ignored():
    line = json.loads(text("events/up-update.jsonl").splitlines()[9])
    assert line["resourcePreEvent"]["metadata"]["op"] == "update"
    line["resourcePreEvent"]["metadata"]["op"] = "teleport"  # an op this clusterstack does not know
    stops = []
    c = LiveStream(on_step=lambda s: True, on_stop=stops.append)
    c.line(json.dumps(line))
    assert "unknown step op 'teleport'" in c.error.render() and stops and stops[0].op == "teleport"


@pytest.mark.parametrize("value", ["9" * 5000, "NaN"])
def test_a_step_event_past_the_json_limits_stops_an_update(value):
    """An event line the one JSON reader refuses is a step the guard cannot read: it stops
    the update (fail closed) instead of passing unseen."""
    raw = text("events/up-update.jsonl").splitlines()[9]
    line = json.loads(raw)
    assert line["resourcePreEvent"]["metadata"]["op"] == "update"
    line["resourcePreEvent"]["metadata"]["new"]["inputs"]["nodeCount"] = "@@"
    hostile = json.dumps(line).replace('"@@"', value)
    stops = []
    c = LiveStream(on_step=lambda s: True, on_stop=stops.append)
    c.line(hostile)
    assert "pulumi --event-log:1: not accepted JSON" in c.error.render()
    assert stops and stops[0].op == "update" and stops[0].urn == line["resourcePreEvent"]["metadata"]["urn"]
    c2 = LiveStream(on_step=lambda s: True, on_stop=stops.append)
    c2.line(raw[:-10], cut=True)  # the log ended inside an event: refused, the update stopped
    assert "ends inside an event" in c2.error.render() and len(stops) == 2


def test_a_step_event_that_was_not_utf8_stops_an_update():
    """The log tee reads bytes that are not UTF-8 as U+FFFD and says so: that event stops the
    update although its text now parses, and nothing after it is read."""
    raw = text("events/up-update.jsonl").splitlines()[9]
    stops = []
    c = LiveStream(on_step=lambda s: True, on_stop=stops.append)
    c.line(raw, not_utf8=True)
    assert "not UTF-8" in c.error.render() and stops and stops[0].op == "update"
    c.line(raw)
    assert len(stops) == 1 and c.result().steps == ()


def test_strip_color_and_cli_diagnostics_section():
    assert strip_color("<{%fg 1%}>error: <{%reset%}>boom<{%reset%}>") == "error: boom"
    d = diagnostics_from_output(text("stdout-program-traceback.txt"))
    assert list(d) == ["pulumi:pulumi:Stack"]
    assert d["pulumi:pulumi:Stack"][0] == "error: Program failed with an unhandled exception:"
    assert d["pulumi:pulumi:Stack"][-1] == "KeyError: 'h100'"


# --- the CLI on the real adapter -------------------------------------------------------------

def test_preview_command_end_to_end_through_the_adapter(cli, workspace_copy, capsys):
    from clusterstack.cli import main

    cli.scenario(preview={"events": "events/preview-nodepool-replace.jsonl"})
    assert main(["--root", str(workspace_copy), "preview", STACK]) == 3
    o = capsys.readouterr()
    assert "replaces (1):" in o.out
    assert '~ spec.instanceType: "gd-8xh100ib-i128" → "gd-8xh200ib-i128"  (forces replacement)' in o.out
    assert "BLOCKED replace NodePool cwdemo-h100 — forced by spec.instanceType" in o.out
    # one line per entry, without its URN; the URN once more, in what to do (besides Pulumi's
    # own diagnostic, shown as it printed it)
    assert not any(H100 in ln for ln in o.out.splitlines() if ln.lstrip().startswith("BLOCKED"))
    assert sum(H100 in ln for ln in o.out.splitlines() if "to do:" in ln) == 1
    assert "1 guarded change(s) blocked" in o.err


# --- a real Pulumi CLI -----------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("pulumi") is None,
                    reason="pulumi CLI not installed: install it (https://www.pulumi.com/docs/install/) "
                           "to run a real preview/up on a temporary file backend")
def test_real_pulumi_preview_and_up_of_a_tiny_stack(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "Pulumi.yaml").write_text("name: tiny\nruntime: yaml\noutputs:\n  greeting: hello\n")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    ws = Workspace.from_mapping(tmp_path, {"workspace": {
        "clusters_dir": "clusters", "project_dir": "proj", "project_name": "tiny",
        "backend_url": "file://state", "secrets_provider": "passphrase"}})
    eng = AutomationEngine(ws)
    assert eng.init_stack("dev") is True
    res = eng.preview("dev")
    assert [(s.op, s.type) for s in res.changes] == [("create", "pulumi:pulumi:Stack")]
    up = eng.up("dev", message="tiny test", on_step=lambda s: True)
    assert up.result == "succeeded" and up.outputs == {"greeting": "hello"}
    [entry] = eng.history("dev")
    assert entry.message == "tiny test" and entry.kind == "update"
    assert eng.export("dev")["version"] == 3
    assert (tmp_path / "state" / ".pulumi").is_dir()


# --- unexpected pulumi output is exit 2, never an internal error ----------------------

@pytest.mark.parametrize("printed", [b"v3.210.0\xff\xfe", b"pulumi: command not found\n", b""],
                         ids=["not-utf8", "not-a-version", "nothing"])
def test_a_pulumi_version_that_is_no_version_is_a_user_error(cli, ws, printed):
    from clusterstack.engine import PulumiVersionError

    cli.scenario(version_bytes=printed, preview={"events": "events/preview-update.jsonl"})
    with pytest.raises(PulumiVersionError) as exc:
        AutomationEngine(ws).preview(STACK)
    assert exc.value.exit_code == 2 and "version" in str(exc.value)


@pytest.mark.parametrize("printed, shown", [
    (b"v3.210.0\xff\xfe", "unreadable (`pulumi version` printed bytes that are not UTF-8"),
    (b"\x1b]0;owned\x07pulumi: command not found\n", "unreadable (`pulumi version` printed no version"),
    (b"v3.210.0\n", "v3.210.0")], ids=["not-utf8", "not-a-version", "a-version"])
def test_clusterstack_version_with_a_pulumi_that_prints_no_version_says_so(cli, capsys, printed, shown):
    # `clusterstack version` was an internal error (UnicodeDecodeError, exit 1) on the first
    # case; the answer is reported, never echoed when it is no version (control sequences)
    from clusterstack.cli import main

    cli.scenario(version_bytes=printed)
    assert main(["version"]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("pulumi-cli ")]
    assert line.startswith(f"pulumi-cli {shown}") and "\x1b" not in out and "owned" not in out
    assert main(["version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pulumi-cli"].startswith(shown)


def test_ci_preview_with_a_pulumi_that_prints_no_version_exits_2(cli, workspace_copy, tmp_path, capsys):
    from clusterstack.cli import main

    cli.scenario(version_bytes=b"v3.210.0\xff", preview={"events": "events/preview-update.jsonl"})
    assert main(["--root", str(workspace_copy), "ci", "preview", STACK, "--out", str(tmp_path / "p")]) == 2
    meta = json.loads((tmp_path / "p" / STACK / "meta.json").read_text())
    assert meta["error"]["internal"] is False and meta["error"]["kind"] == "PulumiVersionError"


@pytest.mark.parametrize("mutate", [
    lambda d: d[0].update(resourceChanges={"create": "x"}),   # not a count
    lambda d: d[0].update(resourceChanges=[1]),               # not a mapping
], ids=["count-not-a-number", "changes-not-a-mapping"])
def test_history_values_the_sdk_passes_but_we_cannot_read_are_user_errors(cli, ws, mutate):
    from clusterstack.engine import EngineOutputError

    doc = json.loads(text("history.json"))
    mutate(doc)
    cli.scenario(stack_history={"stdout": json.dumps(doc)})
    with pytest.raises(EngineOutputError) as exc:
        AutomationEngine(ws).history(STACK)
    assert exc.value.exit_code == 2 and "pulumi stack history --json" in str(exc.value)


@pytest.mark.parametrize("stdout", ["garbage{", "[1, 2]"])
def test_an_odd_stack_output_after_an_update_is_a_user_error(cli, ws, stdout):
    from clusterstack.engine import EngineOutputError

    cli.scenario(up={"events": "events/up-update.jsonl"}, stack_history={"stdout_file": "history.json"},
                 stack_output={"stdout": stdout})
    with pytest.raises(EngineOutputError) as exc:
        AutomationEngine(ws).up(STACK, message="m")
    assert exc.value.exit_code == 2 and "`pulumi stack output --json` printed" in str(exc.value)
