"""`ci drift`: the fingerprint is stable across runs and changes only with the drift; the
tracking issue goes through create → unchanged → updated → closed against the GitHub fake."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from ci_support import change_steps, delete_steps
from clusterstack.ci.comment import StackReport
from clusterstack.ci.drift import LABEL, MARKER, fingerprint, issue_fingerprint, sync_issue
from clusterstack.adapters.github import GitHub, Repository
from clusterstack.cli import main
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack

REPO = "example-lab/infra"
CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]


def rep(stack: str, severity: str, **counts: int) -> StackReport:
    return StackReport(stack=stack, severity=severity, counts=counts, guard={"ok": True})


def test_fingerprint_is_stable_and_covers_only_stack_severity_and_counts():
    a = [rep("gcp-demo", "change", update=2, same=40), rep("cw-demo-h100", "none", same=12)]
    b = [rep("cw-demo-h100", "none", same=13), rep("gcp-demo", "change", update=2, same=41)]
    assert fingerprint(a) == fingerprint(b)                       # order and `same` do not matter
    assert fingerprint(a) == fingerprint([rep("gcp-demo", "change", update=2)])   # clean stacks neither
    assert fingerprint(a) != fingerprint([rep("gcp-demo", "change", update=3)])
    assert fingerprint(a) != fingerprint([rep("gcp-demo", "delete", update=2)])
    assert fingerprint(a) != fingerprint([rep("gcp-tpu-a", "change", update=2)])
    assert fingerprint([]) == fingerprint([rep("x", "none", same=1)])
    assert len(fingerprint(a)) == 64


@pytest.fixture
def gh():
    with FakeGitHub() as server:
        server.add_repo(REPO)
        yield server


@pytest.fixture
def repo(gh) -> Repository:
    return GitHub(token=gh.token, base_url=gh.base_url, throttle=False, retry=None).repository(REPO)


def issues(gh) -> dict:
    return gh.repos[REPO]["issues"]


def test_the_tracking_issue_state_machine(gh, repo):
    clean = [rep("gcp-demo", "none", same=3), rep("cw-demo-h100", "none")]
    assert sync_issue(repo, clean).action == "clean" and issues(gh) == {} and gh.writes() == []

    drift1 = [rep("gcp-demo", "change", update=1, same=2), rep("cw-demo-h100", "none")]
    created = sync_issue(repo, drift1, run_url="https://ci/run/1")
    assert created.action == "created"
    issue = issues(gh)[created.issue]
    assert issue["labels"] == [LABEL] and issue["state"] == "open"
    assert issue["body"].startswith(MARKER) and issue_fingerprint(issue["body"]) == fingerprint(drift1)
    assert "- ✏️ `gcp-demo` — 1 to update (2 unchanged) · guard: ok" in issue["body"]

    n = len(gh.writes())
    same_again = [rep("cw-demo-h100", "none", same=9), rep("gcp-demo", "change", update=1, same=3)]
    assert sync_issue(repo, same_again, run_url="https://ci/run/2").action == "unchanged"
    assert len(gh.writes()) == n  # no edit, no comment: nobody is notified of nothing new

    drift2 = [rep("gcp-demo", "change", update=1), rep("cw-demo-h100", "blocked", replace=1)]
    updated = sync_issue(repo, drift2, run_url="https://ci/run/3")
    assert (updated.action, updated.issue) == ("updated", created.issue)
    assert issue_fingerprint(issues(gh)[created.issue]["body"]) == fingerprint(drift2)
    [note] = gh.thread(REPO, created.issue)
    assert "now drifting: `cw-demo-h100`" in note

    closed = sync_issue(repo, clean, run_url="https://ci/run/4")
    assert (closed.action, closed.issue) == ("closed", created.issue)
    assert issues(gh)[created.issue]["state"] == "closed"
    assert issues(gh)[created.issue]["state_reason"] == "completed"
    assert "Every stack matches the code again" in gh.thread(REPO, created.issue)[-1]
    # drift returns later: a new issue (the closed one stays closed, with its history)
    again = sync_issue(repo, drift1)
    assert again.action == "created" and again.issue != created.issue
    assert len(issues(gh)) == 2


def test_an_open_issue_without_the_marker_is_not_the_tracking_issue(gh, repo):
    issues(gh)[1] = {"title": "discuss drift", "body": "a human's issue", "state": "open",
                     "state_reason": None, "labels": [LABEL]}
    res = sync_issue(repo, [rep("gcp-demo", "change", update=1)])
    assert res.action == "created" and res.issue == 2
    assert issues(gh)[1]["body"] == "a human's issue"


def test_cli_drift_previews_with_refresh_writes_a_stable_fingerprint_and_syncs_the_issue(
        gh, workspace_copy, tmp_path, monkeypatch, capsys):
    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    eng.stacks["gcp-demo"].steps = delete_steps("gcp-demo")
    eng.stacks["cw-demo-gb200"].steps = change_steps("cw-demo-gb200")
    clients = fake_clients(
        engine=lambda _ws, *, project_dir=None, **_kw: eng if project_dir is None else FakeEngine(
            {"lab": FakeStack(), "repo": FakeStack()}),
        github=lambda api_url=None: GitHub.from_env(base_url=api_url, throttle=False, retry=None))
    monkeypatch.setenv("GITHUB_TOKEN", gh.token)
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    root = str(workspace_copy)
    args = ["--root", root, "ci", "drift", "--issue", "--repo", REPO]
    assert main(args + ["--out", str(tmp_path / "d1")], clients=clients) == 0
    assert all(kw.get("refresh") is True for op, _, kw in eng.calls if op == "preview")
    doc1 = json.loads((tmp_path / "d1" / "drift.json").read_text())
    assert [e["stack"] for e in doc1["stacks"]] == ["cw-demo-gb200", "gcp-demo"]
    assert main(args + ["--out", str(tmp_path / "d2")], clients=clients) == 0
    doc2 = json.loads((tmp_path / "d2" / "drift.json").read_text())
    assert doc1 == doc2
    out = capsys.readouterr().out
    assert "tracking issue #1 created" in out and "tracking issue #1 unchanged" in out
    eng.stacks["gcp-demo"].steps = ()
    eng.stacks["cw-demo-gb200"].steps = ()
    assert main(args + ["--out", str(tmp_path / "d3")], clients=clients) == 0
    assert "tracking issue #1 closed" in capsys.readouterr().out
    assert main(["--root", root, "ci", "drift", "--issue", "--out", str(tmp_path / "d4")], clients=clients) == 2  # --repo


# ---------------------------------------------------------------------------------------
# a failed preview is "not checked": not drift, not clean; the issue says why; the run fails

def failed(stack: str, message: str) -> StackReport:
    return StackReport(stack=stack, severity="error",
                       error={"kind": "StackLockedError", "message": message, "internal": False})


def test_a_failed_preview_is_not_drift_but_changes_the_fingerprint():
    from clusterstack.ci.drift import drift_entries, unchecked_entries

    drift = [rep("gcp-demo", "change", update=1)]
    with_failure = drift + [failed("gcp-tpu-a", "stack gcp-tpu-a: locked\nmore")]
    assert drift_entries(with_failure) == drift_entries(drift)
    assert unchecked_entries(with_failure) == [{"stack": "gcp-tpu-a", "reason": "stack gcp-tpu-a: locked"}]
    assert fingerprint(with_failure) != fingerprint(drift)
    # the reason's text is not part of it: the same stack failing differently is the same state
    assert fingerprint(with_failure) == fingerprint(drift + [failed("gcp-tpu-a", "timeout")])


def test_the_issue_lists_unchecked_stacks_and_stays_open(gh, repo):
    reports = [rep("gcp-demo", "none"), failed("gcp-tpu-a", "cannot reach the backend: timeout")]
    created = sync_issue(repo, reports)
    assert created.action == "created"       # nothing drifts, but nothing says it is clean either
    body = issues(gh)[created.issue]["body"]
    assert "**0 of 1 checked stacks** differ" in body
    assert "**1 stack could not be checked**" in body
    assert "- ❌ `gcp-tpu-a` — not checked: cannot reach the backend: timeout" in body
    # checked again and clean: closed
    assert sync_issue(repo, [rep("gcp-demo", "none"), rep("gcp-tpu-a", "none")]).action == "closed"


def test_the_update_note_says_which_stacks_are_not_checked_now(gh, repo):
    first = sync_issue(repo, [rep("gcp-demo", "change", update=1)])
    assert sync_issue(repo, [rep("gcp-demo", "change", update=1), failed("gcp-tpu-b", "locked")]).action == "updated"
    [note] = gh.thread(REPO, first.issue)
    assert "not checked now: `gcp-tpu-b`" in note and "now drifting" not in note


def test_cli_drift_with_a_failed_preview_fails_and_reports_it(gh, workspace_copy, tmp_path, monkeypatch, capsys):
    from clusterstack.engine.errors import StackLockedError

    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    eng.stacks["gcp-demo"].steps = change_steps("gcp-demo")
    eng.fail("preview", "gcp-tpu-b", StackLockedError("gcp-tpu-b"))
    clients = fake_clients(
        engine=lambda _ws, *, project_dir=None, **_kw: eng if project_dir is None else FakeEngine(
            {"lab": FakeStack(), "repo": FakeStack()}),
        github=lambda api_url=None: GitHub.from_env(base_url=api_url, throttle=False, retry=None))
    monkeypatch.setenv("GITHUB_TOKEN", gh.token)
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    out_dir = tmp_path / "d"
    assert main(["--root", str(workspace_copy), "ci", "drift", "--issue", "--repo", REPO, "--out", str(out_dir)],
                clients=clients) == 2
    cap = capsys.readouterr()
    assert "drift: 1 of 7 checked stacks differ; 1 not checked" in cap.out
    assert "error: stack gcp-tpu-b: not checked:" in cap.err
    doc = json.loads((out_dir / "drift.json").read_text())
    assert [e["stack"] for e in doc["stacks"]] == ["gcp-demo"]
    assert [e["stack"] for e in doc["not_checked"]] == ["gcp-tpu-b"]
    (issue,) = issues(gh).values()
    assert "`gcp-tpu-b` — not checked:" in issue["body"]


def test_cli_drift_issue_without_a_token_fails_before_any_preview(workspace_copy, tmp_path, monkeypatch, capsys):
    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    clients = fake_clients(engine=lambda _ws, **_kw: eng,
                           github=lambda api_url=None: GitHub.from_env({}, base_url=api_url))
    assert main(["--root", str(workspace_copy), "ci", "drift", "--issue", "--repo", REPO,
                 "--out", str(tmp_path / "d")], clients=clients) == 2
    assert "GITHUB_TOKEN is not set" in capsys.readouterr().err
    assert eng.calls == [] and not (tmp_path / "d").exists()


def test_cli_drift_warns_ahead_of_a_reservation_end(workspace_copy, tmp_path, capsys):
    """clusters/cw-demo-teams.yaml: the h100 pool's reservation cw-res-demo-0001 ends 2027-03-31;
    [cost] reservation_warn_days defaults to 30 (the drift run and inventory say the same)."""
    from datetime import datetime, timezone

    from fakes.clock import FakeClock

    def run(day: datetime) -> str:
        eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
        clients = fake_clients(
            engine=lambda _ws, *, project_dir=None, **_kw: eng if project_dir is None else FakeEngine(
                {"lab": FakeStack(), "repo": FakeStack()}), clock=FakeClock(day))
        assert main(["--root", str(workspace_copy), "ci", "drift", "--out", str(tmp_path / day.date().isoformat())],
                    clients=clients) == 0
        return capsys.readouterr().err

    near = run(datetime(2027, 3, 20, tzinfo=timezone.utc))
    assert ("warning: cw-demo-teams/h100: reservation cw-res-demo-0001 ends on 2027-03-31, in 11 days "
            "(warn_days 30)") in near
    assert "reservation" not in run(datetime(2027, 1, 2, tzinfo=timezone.utc))
    assert "ended on 2027-03-31 (1 day ago)" in run(datetime(2027, 4, 1, tzinfo=timezone.utc))
