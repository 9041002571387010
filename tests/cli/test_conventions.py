"""CLI habits: --version and shell completion from the installed entry point, --debug
anywhere, the workspace found from a subdirectory, --json on read commands, every project's
stacks, NO_COLOR, progress only on a terminal and never with --json, `deploy <service> --help`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from helpers import REPO
from clusterstack.cli import main

ENTRY = Path(sys.executable).parent / "clusterstack"   # the console script of [project.scripts]


def run_entry(*argv: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    if not ENTRY.is_file():
        pytest.skip(f"no installed entry point at {ENTRY}")
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([str(ENTRY), *argv], env={**base, **(env or {})}, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_version_from_the_installed_entry_point():
    r = run_entry("--version")
    assert r.returncode == 0 and r.stdout == f"clusterstack {version('clusterstack')}\n"


def test_completion_from_the_installed_entry_point():
    # click's bash protocol (click/shell_completion.py BashComplete): COMP_WORDS / COMP_CWORD,
    # one candidate per line.
    r = run_entry(env={"_CLUSTERSTACK_COMPLETE": "complete_bash", "COMP_WORDS": "clusterstack sta",
                       "COMP_CWORD": "1"})
    assert r.returncode == 0 and set(r.stdout.split()) == {"stacks", "stack"}
    # The script itself, by the instruction variable (typer/completion.py shell_complete:
    # "source_bash"); `--show-completion` alone detects the shell from the parent process
    # (shellingham), which under a test runner need not be a shell.
    r = run_entry(env={"_CLUSTERSTACK_COMPLETE": "source_bash"})
    assert r.returncode == 0 and "_CLUSTERSTACK_COMPLETE=complete_bash" in r.stdout


def test_debug_is_accepted_after_the_subcommand(repo_root, capsys):
    assert main(["--root", str(repo_root), "validate", "no-such-cluster", "--debug"]) == 2
    cap = capsys.readouterr()
    assert "Traceback" in cap.err and "unknown cluster 'no-such-cluster'" in cap.err
    assert main(["--root", str(repo_root), "validate", "no-such-cluster"]) == 2
    assert "Traceback" not in capsys.readouterr().err      # not sticky across runs


def test_workspace_is_found_from_a_subdirectory(repo_root, monkeypatch, capsys):
    monkeypatch.chdir(repo_root / "clusters")
    assert main(["validate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    monkeypatch.chdir(repo_root.parent)
    assert main(["validate"]) == 2
    assert "no clusterstack.toml found at or above" in capsys.readouterr().err


def test_validate_json_lists_every_problem(workspace_copy, capsys):
    from helpers import edit
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", "max_slices: 32", "max_slices: 2")
    assert main(["--root", str(workspace_copy), "validate", "--json"]) == 2
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["ok"] is False and doc["problems"]
    p = doc["problems"][0]
    assert p["file"] == "clusters/cw-demo-h100.yaml" and isinstance(p["line"], int)
    assert "buffer_slices" in p["message"]
    # the same problems as the plain run's error lines, on stderr (the --json convention)
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    plain = capsys.readouterr().err
    assert cap.err == plain and len(plain.splitlines()) == len(doc["problems"])
    assert plain.startswith(f"error: {p['file']}:{p['line']}: ")


def test_stacks_lists_every_projects_stacks(repo_root, capsys):
    from clusterstack.workspace import ProjectInfo, Workspace

    ws = Workspace.load(repo_root)
    assert main(["--root", str(repo_root), "stacks", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["key"] for p in doc["projects"]] == [p.key for p in ws.projects]
    for p, ref in zip(doc["projects"], ws.projects):
        assert [s["stack"] for s in p["stacks"]] == ProjectInfo.load(ref.directory).stacks()
    assert main(["--root", str(repo_root), "stacks"]) == 0
    text = capsys.readouterr().out
    for p in doc["projects"]:
        assert f"[projects.{p['key']}]" in text and all(s["stack_file"] in text for s in p["stacks"])


def test_no_color_drops_every_style():
    styled = run_entry("stacks", env={"FORCE_COLOR": "1"})
    assert styled.returncode == 0 and "\x1b[1m" in styled.stdout       # bold headers on a terminal
    plain = run_entry("stacks", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.returncode == 0 and "\x1b[" not in plain.stdout + plain.stderr


def test_progress_only_on_a_terminal_and_never_with_json():
    # the smallest project to plan (one SDK): the spinner wraps every plan alike
    shown = run_entry("plan", "--project", "github", env={"FORCE_COLOR": "1"})
    assert shown.returncode == 0 and "planning github" in shown.stderr
    quiet = run_entry("plan", "--project", "github", "--json", env={"FORCE_COLOR": "1"})
    assert quiet.returncode == 0 and quiet.stderr == "" and '"project": "clusterstack-github"' in quiet.stdout
    piped = run_entry("plan", "--project", "github")
    assert piped.returncode == 0 and "planning" not in piped.stderr


def test_deploy_service_help(repo_root, capsys):
    assert main(["--root", str(repo_root), "deploy", "echo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "rollout" in out and "rollback" in out and "history" in out


@pytest.mark.parametrize("argv, said", [
    (["echo", "rolout"], "No such command 'rolout'. Did you mean 'rollout'?"),   # the verb, not the service
    (["echo"], "`deploy echo` needs a verb: rollout, history or rollback"),
    (["lsit"], "No such command 'lsit'. Did you mean 'list'?"),
])
def test_deploy_names_the_mistyped_or_missing_verb(repo_root, capsys, argv, said):
    assert main(["--root", str(repo_root), "deploy", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "No such command 'echo'" not in err
