"""One JSON convention for every read command: ``--json`` exists on each (found by walking the
command tree, so a new read command without it fails here), stdout carries exactly one document
with keys sorted at every level, byte-identical across runs, and a user error still goes to
stderr as ``error: …`` with exit 2 and nothing on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import _command, dump_json, main
from clusterstack.cli.help import commands as command_tree

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"
STATE = Path(__file__).resolve().parents[1] / "fixtures" / "state"

#: Commands that change something (files, the backend, the cloud, GitHub) or whose product is
#: itself a document of another format — and why. Every other command is a read command.
NOT_READ = {
    "init": "writes a workspace",
    "cluster new": "writes a cluster file and its stack file",
    "service new": "writes a service project and its services.yaml entry",
    "schema": "its output is a JSON Schema document already",
    "up": "updates a stack",
    "stack init": "creates a stack in the backend and writes its stack file",
    "stack rename": "renames a stack in the backend, its stack file and its cluster file",
    "import apply": "imports resources into a stack",
    "import state": "loads a migrated state into a stack and writes the retirement step",
    "deploy rollout": "updates a service",
    "iam init": "writes the keyset and the IAM file",
    "iam grant": "writes the IAM file",
    "iam revoke": "writes the IAM file",
    "iam decrypt": "writes a private file",
    "iam rotate": "re-encrypts the IAM file",
    "iam fmt": "rewrites the IAM file",
    "ci preview": "writes meta.json and diff.txt per stack under --out",
    "ci drift": "writes drift.json under --out and syncs the tracking issue",
}


def _commands() -> dict[str, object]:
    """Every command that runs (not a group), by path: the whole tree, each command's module
    loaded by the root group."""
    return {path: cmd for path, cmd in command_tree(_command()) if not hasattr(cmd, "commands")}


def test_every_read_command_has_json():
    commands = _commands()
    assert set(NOT_READ) <= set(commands), f"stale entries: {sorted(set(NOT_READ) - set(commands))}"
    missing = sorted(path for path, cmd in commands.items() if path not in NOT_READ
                     and "--json" not in [o for p in cmd.params for o in getattr(p, "opts", [])])
    assert not missing, f"read commands without --json: {missing}"
    # the walk sees the nested groups, not only the top level
    assert {"iam audit-keys", "deploy history", "ci deployment-check", "ci comment"} <= set(commands)


def _sorted_everywhere(text: str) -> object:
    def hook(pairs):
        keys = [k for k, _ in pairs]
        assert keys == sorted(keys), f"keys not sorted: {keys}"
        return dict(pairs)

    return json.loads(text, object_pairs_hook=hook)


def test_dump_json_is_the_one_convention():
    text = dump_json({"b": 1, "a": {"d": "é", "c": Path("x")}})
    assert text == '{\n  "a": {\n    "c": "x",\n    "d": "é"\n  },\n  "b": 1\n}\n'


READS = [
    ("stacks", "--json"),
    ("validate", "--json"),
    ("plan", "gcp-tpu-b", "--json"),
    ("inventory", "cw-demo-h100", "--json"),
    ("deploy", "list", "--json"),
    ("ci", "stacks", "--all", "--json"),
    ("diff", "gcp-demo", "--state", str(STATE / "gcp-demo.export.json"), "--json"),
]


@pytest.mark.parametrize("argv", READS, ids=lambda a: " ".join(a[:2]))
def test_a_read_command_prints_one_sorted_document(repo_root, capsys, argv):
    rc = main(["--root", str(repo_root), *argv])
    first = capsys.readouterr()
    assert rc in (0, 3), first.err
    _sorted_everywhere(first.out)            # exactly one document: json.loads refuses a second
    assert main(["--root", str(repo_root), *argv]) == rc
    assert capsys.readouterr().out == first.out


def test_guard_json_is_one_sorted_document(tmp_path, capsys):
    (tmp_path / "clusterstack.toml").write_text('[workspace]\nproject_name = "clusterstack"\n')
    rc = main(["--root", str(tmp_path), "guard", str(FIX / "preview-nodepool-replace-steps.json"), "--json"])
    cap = capsys.readouterr()
    assert rc == 3 and _sorted_everywhere(cap.out)["ok"] is False
    assert cap.err.startswith("error: ")     # the verdict's exit line goes to stderr, not stdout


@pytest.mark.parametrize("argv", [("inventory", "no-such-cluster", "--json"),
                                  ("plan", "no-such-cluster", "--json"),
                                  ("diff", "no-such-cluster", "--state", "missing.json", "--json"),
                                  ("guard", "missing.json", "--json"),
                                  ("ci", "stacks", "--json")],
                         ids=lambda a: a[0] if a[0] != "ci" else "ci stacks")
def test_a_user_error_under_json_is_on_stderr_with_exit_2(repo_root, capsys, argv):
    assert main(["--root", str(repo_root), *argv]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("error: ") and "Traceback" not in cap.err


def _previews(tmp_path: Path) -> tuple[Path, object]:
    """`ci preview`'s output for two stacks (one blocked, one changed), as CI writes it."""
    from ci_support import blocked_steps, change_steps
    from clusterstack.ci.discover import StackTarget
    from clusterstack.ci.preview import preview_target, write_outcome
    from clusterstack.ci.redaction import Redactor
    from clusterstack.guard import GuardPolicy
    from fakes.pulumi import FakeEngine, FakeStack

    eng = FakeEngine({"cw-demo-h100": FakeStack(steps=blocked_steps("cw-demo-h100")),
                      "gcp-demo": FakeStack(steps=change_steps("gcp-demo"))})
    out = tmp_path / "previews"
    for s in ("cw-demo-h100", "gcp-demo"):
        write_outcome(out, preview_target(StackTarget("clusters", s), engine=lambda _: eng,
                                          policy=GuardPolicy()), Redactor())
    return out, eng


def test_ci_comment_json_carries_the_body_and_what_was_cut(tmp_path, capsys):
    previews, _ = _previews(tmp_path)
    assert main(["ci", "comment", str(previews)]) == 0
    body = capsys.readouterr().out
    assert main(["ci", "comment", str(previews), "--json"]) == 0
    doc = _sorted_everywhere(capsys.readouterr().out)
    assert doc["body"] == body and doc["bytes"] == len(body.encode()) and doc["posted"] is None
    assert (doc["truncated"], doc["cut"], doc["omitted"]) == (False, [], [])
    assert main(["ci", "comment", str(previews), "--json", "--max-bytes", "1300"]) == 0   # the status lines and the capacity lines (with their cost lines) fit
    cap = capsys.readouterr()
    doc = _sorted_everywhere(cap.out)
    assert doc["truncated"] is True and doc["bytes"] <= 1300 and "comment truncated" in cap.err


def test_ci_deployment_check_json(workspace_copy, tmp_path, monkeypatch, capsys):
    from datetime import datetime, timedelta, timezone

    from clusterstack.adapters.github import GitHub
    from clusterstack.ci.comment import load_reports, render_comment
    from clusterstack.engine.model import HistoryEntry
    from fakes.clients import fake_clients
    from fakes.github_api import FakeGitHub

    merged = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    previews, eng = _previews(tmp_path)
    eng.stacks["gcp-demo"].history = [HistoryEntry(
        version=9, kind="update", result="succeeded", start_time=merged + timedelta(minutes=30),
        end_time=merged + timedelta(minutes=33), message="clusterstack up")]
    with FakeGitHub() as gh:
        gh.add_repo("lab/infra")
        gh.add_pull("lab/infra", 7, merged_at="2026-03-01T12:00:00Z")
        gh.add_comment("lab/infra", 7, render_comment(load_reports(previews)).body)
        clients = fake_clients(engine=eng, github=lambda api_url=None: GitHub.from_env(
            base_url=api_url, throttle=False, retry=None))
        monkeypatch.setenv("GITHUB_TOKEN", gh.token)
        monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
        argv = ["--root", str(workspace_copy), "ci", "deployment-check", "--repo", "lab/infra",
                "--pr", "7", "--json"]
        assert main([*argv, "--dry-run"], clients=clients) == 0
        doc = _sorted_everywhere(capsys.readouterr().out)
        assert doc["merged_at"] == "2026-03-01T12:00:00Z" and doc["previewed"] is True
        assert [(s["stack"], s["applied"], s["update_version"]) for s in doc["stacks"]] == [
            ("cw-demo-h100", False, None), ("gcp-demo", True, 9)]
        assert "clusterstack up cw-demo-h100" in doc["reminder"] and doc["posted"] is None
        assert gh.writes() == []
        assert main(argv, clients=clients) == 0
        doc = _sorted_everywhere(capsys.readouterr().out)
        assert doc["posted"]["action"] == "created" and len(gh.thread("lab/infra", 7)) == 2
