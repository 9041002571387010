"""The engine adapter's additions for service deploys, against the stand-in `pulumi` executable
(tests/fakes/pulumi_cli.py, Pulumi's real formats): another project directory,
`--config-file` on preview / up / refresh, extra environment for the CLI (a secret that is
never in os.environ), and the config an update ran with, read from `stack history --json`."""

from __future__ import annotations

import pytest

from clusterstack.engine import PassphraseMissingError
from clusterstack.engine.automation import AutomationEngine
from clusterstack.workspace import Workspace
from fakes.pulumi import FakeCli

STACK = "prod"


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    c = FakeCli(tmp_path, monkeypatch)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    c.scenario(stacks=(STACK,))
    return c


@pytest.fixture
def ws(repo_root) -> Workspace:
    return Workspace.load(repo_root)


def test_service_project_config_file_and_secret_env_reach_the_cli(cli, ws, tmp_path, repo_root):
    cli.scenario(stacks=(STACK,), preview={"events": "events/preview-clean.jsonl"},
                 up={"events": "events/up-update.jsonl"}, refresh={"events": "events/preview-clean.jsonl"},
                 stack_history={"stdout_file": "history.json"})
    config_file = tmp_path / "Pulumi.prod.yaml"
    config_file.write_text("config:\n  echo:maxInstances: '5'\n")
    engine = AutomationEngine(ws, project_dir=repo_root / "services" / "echo", config_file=config_file,
                              env={"PULUMI_CONFIG_PASSPHRASE": "from-secret-manager"})
    engine.preview(STACK)
    engine.up(STACK, message="m")
    engine.refresh(STACK, preview_only=False)
    for word in ("preview", "up", "refresh"):
        call = cli.call(word)
        argv = call["argv"]
        assert argv[argv.index("--config-file") + 1] == str(config_file), word
        assert call["cwd"] == str(repo_root / "services" / "echo")
        assert call["env"]["PULUMI_CONFIG_PASSPHRASE"] == "from-secret-manager"


def test_without_a_config_file_no_flag_is_passed_and_a_missing_passphrase_is_still_caught(cli, ws):
    cli.scenario(stacks=(STACK,), preview={"events": "events/preview-clean.jsonl"})
    with pytest.raises(PassphraseMissingError):
        AutomationEngine(ws).preview(STACK)
    AutomationEngine(ws, env={"PULUMI_CONFIG_PASSPHRASE": "x"}).preview(STACK)
    assert "--config-file" not in cli.call("preview")["argv"]


def test_history_carries_the_config_each_update_ran_with(cli, ws):
    cli.scenario(stacks=(STACK,), stack_history={"stdout_file": "history.json"})
    newest = AutomationEngine(ws).history(STACK)[0]
    assert newest.config == {"clusterstack:cluster": "cw-demo-h100"}
    assert newest.config_secrets == ()
    assert newest.git_commit == "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"


def test_a_secret_config_value_is_not_shown_and_is_named(cli, ws):
    import json

    record = {"version": 7, "kind": "update", "startTime": "2025-03-01T10:00:00.000Z",
              "message": "jobs v7", "environment": {"git.head": "ab" * 20, "git.dirty": "false"},
              "config": {"jobs:replicas": {"value": "3", "secret": False, "object": False},
                         "jobs:apiKey": {"secret": True, "object": False}},
              "result": "succeeded", "endTime": "2025-03-01T10:01:00.000Z", "resourceChanges": {"update": 1}}
    cli.scenario(stacks=(STACK,), stack_history={"stdout": json.dumps([record])})
    (entry,) = AutomationEngine(ws).history(STACK)
    assert entry.config == {"jobs:apiKey": "[secret]", "jobs:replicas": "3"}
    assert entry.config_secrets == ("jobs:apiKey",)
