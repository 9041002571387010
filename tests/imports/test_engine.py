"""The engine operations `import apply` added to the adapter (preview_import, protect, targets),
run through the Automation API against the fake `pulumi` executable of
tests/fakes/pulumi_cli.py (real argument building, real output parsing)."""

from __future__ import annotations

import json

import pytest
from fakes.pulumi import FakeCli
STACK = "cw-demo-h100"

from clusterstack.engine import EngineCommandError, StackNotFoundError
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


def test_preview_import_without_json_output_is_an_engine_error(cli, ws, import_file):
    cli.scenario(**{"import": {"stdout": "Previewing import (cw-demo-h100):"}})
    with pytest.raises(EngineCommandError, match="printed no JSON"):
        AutomationEngine(ws).preview_import(STACK, str(import_file))


@pytest.mark.parametrize("protect, flag", [(True, "--protect=true"), (False, "--protect=false")])
def test_import_file_passes_protect(cli, ws, import_file, protect, flag):
    cli.scenario(**{"import": {"stdout": "Importing (cw-demo-h100):"}},
                 stack_history={"stdout_file": "history.json"})
    AutomationEngine(ws).import_file(STACK, str(import_file), message="adopt", protect=protect)
    argv = cli.call("import")["argv"]
    assert flag in argv and "--generate-code=false" in argv


def test_targets_reach_preview(cli, ws):
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    targets = [f"urn:pulumi:{STACK}::clusterstack::pulumi:providers:kubernetes::k8s",
               f"urn:pulumi:{STACK}::clusterstack::pulumi:pulumi:Stack::clusterstack-{STACK}"]
    AutomationEngine(ws).preview(STACK, targets=targets)
    argv = cli.call("preview")["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--target"] == targets
