"""The engine operations `import apply` added to the adapter (preview_import, protect, targets),
run through the Automation API against the fake `pulumi` executable of
tests/fakes/pulumi_cli.py (real argument building, real output parsing)."""

from __future__ import annotations

import json

import pytest
from fakes.pulumi import FakeCli
STACK = "cw-demo-h100"

from clusterstack.engine import EngineOutputError, StackNotFoundError
from clusterstack.engine.automation import AutomationEngine
from clusterstack.guard import check
from clusterstack.pulumi.tokens import NODEPOOL
from clusterstack.workspace import Workspace

PREVIEW_IMPORT = "../pulumi/preview-import.json"  # a `pulumi import --preview-only --json` document


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


@pytest.fixture
def ws(workspace_copy) -> Workspace:
    return Workspace.load(workspace_copy)


@pytest.fixture
def import_file(tmp_path):
    path = tmp_path / "import.json"
    path.write_text(json.dumps({"nameTable": {}, "resources": []}))
    return path


def test_preview_import_runs_the_cli_preview_only_and_parses_its_json(cli, ws, import_file):
    cli.scenario(**{"import": {"stdout_file": PREVIEW_IMPORT}})
    res = AutomationEngine(ws).preview_import(STACK, str(import_file))
    argv = cli.call("import")["argv"]
    assert argv[argv.index("--file") + 1] == str(import_file)
    assert {"--preview-only", "--json", "--generate-code=false"} <= set(argv)
    assert "--yes" not in argv and "--skip-preview" not in argv
    assert argv[argv.index("--stack") + 1] == STACK
    ops = {s.op for s in res.steps}
    assert "import" in ops
    pool = next(s for s in res.steps if s.type == NODEPOOL)
    assert pool.op == "import"
    assert check(res.steps).ok


def test_preview_import_of_an_unknown_stack(cli, ws, import_file):
    cli.scenario(stacks=())
    with pytest.raises(StackNotFoundError):
        AutomationEngine(ws).preview_import(STACK, str(import_file))


@pytest.mark.parametrize("stdout, problem", [
    ("Previewing import (cw-demo-h100):", "printed no JSON"),
    ('{"steps": [], "changeSummary": {"same": ' + "9" * 5000 + "}}", "out of range"),
    ('{"steps": [], "changeSummary": {"same": NaN}}', "NaN is not a JSON number"),
    ('{"steps": [{"op": "import"', "JSON that is not whole"),
])
def test_preview_import_of_garbage_output_is_a_user_error_naming_the_command(cli, ws, import_file,
                                                                             stdout, problem):
    cli.scenario(**{"import": {"stdout": stdout}})
    with pytest.raises(EngineOutputError) as exc:
        AutomationEngine(ws).preview_import(STACK, str(import_file))
    assert exc.value.exit_code == 2
    assert "`pulumi import --preview-only --json` printed " in str(exc.value) and problem in str(exc.value)


@pytest.mark.parametrize("raw, problem", [
    (b'{"resources": [], "n": ' + b"9" * 5000 + b"}", "out of range"),
    (b'{"resources": [{"type": "a:b:C", "name": "x", "id": NaN}]}', "NaN is not a JSON number"),
    (b'{"resources": [', "not JSON"),
    (b'{"resources": [], "name": "\xff"}', "not UTF-8"),
    (b"[]", "a JSON list, not an import file object"),
])
def test_import_file_refuses_a_hostile_file_before_running_pulumi(cli, ws, tmp_path, raw, problem):
    from clusterstack.pulumi.importfile import ImportFileError

    cli.scenario(**{"import": {"stdout": "Importing (cw-demo-h100):"}},
                 stack_history={"stdout_file": "history.json"})
    path = tmp_path / "hostile.json"
    path.write_bytes(raw)
    with pytest.raises(ImportFileError) as exc:
        AutomationEngine(ws).import_file(STACK, str(path), message="adopt")
    assert exc.value.exit_code == 2 and str(path) in str(exc.value) and problem in str(exc.value)
    assert not [c for c in cli.calls() if "import" in c["argv"]]


@pytest.mark.parametrize("protect, flag", [(True, "--protect=true"), (False, "--protect=false")])
def test_import_file_passes_protect(cli, ws, import_file, protect, flag):
    cli.scenario(**{"import": {"stdout": "Importing (cw-demo-h100):",
                               "events": "events/import-nodepool.jsonl"}},
                 stack_history={"stdout_file": "history.json"})
    res = AutomationEngine(ws).import_file(STACK, str(import_file), message="adopt", protect=protect)
    argv = cli.call("import")["argv"]
    assert flag in argv and "--generate-code=false" in argv and "--event-log" in argv
    # the import's steps come from its event stream, read by the one reader
    assert [(s.op, s.type) for s in res.steps if s.op != "same"] == [("import", NODEPOOL)]


def test_an_import_without_an_event_stream_is_refused(cli, ws, import_file):
    cli.scenario(**{"import": {"stdout": "Importing (cw-demo-h100):"}},
                 stack_history={"stdout_file": "history.json"})
    with pytest.raises(EngineOutputError, match="no engine event"):
        AutomationEngine(ws).import_file(STACK, str(import_file), message="adopt")


def test_targets_reach_preview(cli, ws):
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    targets = [f"urn:pulumi:{STACK}::clusterstack::pulumi:providers:kubernetes::k8s",
               f"urn:pulumi:{STACK}::clusterstack::pulumi:pulumi:Stack::clusterstack-{STACK}"]
    AutomationEngine(ws).preview(STACK, targets=targets)
    argv = cli.call("preview")["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--target"] == targets
