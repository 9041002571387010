"""`ci deployment-check`: after a merge, every stack the PR's comment listed as changed must
have a successful update that started after the merge; otherwise one reminder comment."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from fakes.github_api import FakeGitHub
from ci_support import blocked_steps, change_steps
from clusterstack.ci.comment import load_reports, render_comment
from clusterstack.ci.deployment import MARKER, apply_command, first_update_after
from clusterstack.adapters.github import GitHub
from clusterstack.cli import main
from clusterstack.engine.errors import StackNotFoundError
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack
from clusterstack.engine.model import HistoryEntry

REPO = "example-lab/infra"
MERGED = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]


def entry(version: int, at: datetime, *, kind: str = "update", result: str = "succeeded") -> HistoryEntry:
    return HistoryEntry(version=version, kind=kind, result=result, start_time=at,
                        end_time=at + timedelta(minutes=3), message="clusterstack up")


def test_only_a_successful_update_that_started_after_the_merge_counts():
    h = [entry(5, MERGED + timedelta(hours=2), kind="preview"),
         entry(4, MERGED + timedelta(hours=1), result="failed"),
         entry(3, MERGED - timedelta(minutes=1)),   # started before the merge: cannot hold it
         entry(2, MERGED - timedelta(days=1))]
    assert first_update_after(h, MERGED) is None
    ok = entry(6, MERGED + timedelta(hours=3))
    later = entry(7, MERGED + timedelta(hours=4))
    assert first_update_after([later, ok, *h], MERGED) is ok
    assert first_update_after([entry(1, MERGED)], MERGED).version == 1
    assert apply_command("cw-demo-h100") == "clusterstack up cw-demo-h100"
    assert apply_command("buckets/lab", "buckets") == "pulumi up --cwd buckets --stack lab"


@pytest.fixture
def setup(workspace_copy, tmp_path, monkeypatch):
    """PR #7 merged at MERGED, with the preview comment CI posted on it (cw-demo-h100 and
    gcp-demo changed, gcp-tpu-a failed); the engine's histories as given by each test."""
    from clusterstack.ci.discover import StackTarget
    from clusterstack.ci.preview import preview_target, write_outcome
    from clusterstack.ci.redaction import Redactor
    from clusterstack.guard import GuardPolicy

    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    eng.stacks["cw-demo-h100"].steps = blocked_steps("cw-demo-h100")
    eng.stacks["gcp-demo"].steps = change_steps("gcp-demo")
    eng.fail("preview", "gcp-tpu-a", StackNotFoundError("gcp-tpu-a"))
    out = tmp_path / "p"
    for s in CLUSTERS:
        write_outcome(out, preview_target(StackTarget("clusters", s), engine=lambda _: eng, policy=GuardPolicy()),
                      Redactor())
    comment = render_comment(load_reports(out)).body
    with FakeGitHub() as gh:
        gh.add_repo(REPO)
        gh.add_pull(REPO, 7, merged_at=MERGED.strftime("%Y-%m-%dT%H:%M:%SZ"))
        gh.add_pull(REPO, 8)
        gh.add_comment(REPO, 7, comment)
        clients = fake_clients(engine=eng, github=lambda api_url=None: GitHub.from_env(
            base_url=api_url, throttle=False, retry=None))
        monkeypatch.setenv("GITHUB_TOKEN", gh.token)
        monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
        yield gh, eng, ["--root", str(workspace_copy), "ci", "deployment-check", "--repo", REPO], clients


def test_a_reminder_then_the_same_comment_turns_green(setup, capsys):
    gh, eng, args, clients = setup
    eng.stacks["gcp-demo"].history = [entry(9, MERGED + timedelta(minutes=30))]
    eng.stacks["cw-demo-h100"].history = [entry(4, MERGED - timedelta(hours=2))]
    capsys.readouterr()
    assert main(args + ["--pr", "7"], clients=clients) == 0
    out = capsys.readouterr().out
    assert "gcp-demo: applied" in out and "cw-demo-h100: NOT applied" in out
    reminder = gh.thread(REPO, 7)[-1]
    assert reminder.startswith(MARKER)
    assert "### ⏳ Not applied yet: 1 of 2 changed stacks" in reminder
    assert "clusterstack up cw-demo-h100" in reminder and "clusterstack up gcp-demo" not in reminder
    assert "- ✅ `gcp-demo`: update version 9 started 2026-03-01 12:30 UTC" in reminder
    assert "The preview of `gcp-tpu-a` failed on the PR" in reminder
    # the operator applies cw-demo-h100 from main; the next check edits the same comment
    eng.stacks["cw-demo-h100"].history.insert(0, entry(5, MERGED + timedelta(hours=1)))
    n_comments = len(gh.thread(REPO, 7))
    assert main(args + ["--pr", "7"], clients=clients) == 0
    thread = gh.thread(REPO, 7)
    assert len(thread) == n_comments
    assert "### ✅ Applied: every stack #7 changed was updated after the merge" in thread[-1]


def test_a_stack_missing_from_the_backend_is_reported_not_crashed(setup):
    gh, eng, args, clients = setup
    eng.fail("history", "gcp-demo", StackNotFoundError("gcp-demo"))
    assert main(args + ["--pr", "7", "--dry-run"], clients=clients) == 0
    assert len(gh.thread(REPO, 7)) == 1  # dry run: nothing posted


def test_everything_applied_and_no_earlier_reminder_posts_nothing(setup, capsys):
    gh, eng, args, clients = setup
    eng.stacks["gcp-demo"].history = [entry(9, MERGED + timedelta(minutes=30))]
    eng.stacks["cw-demo-h100"].history = [entry(5, MERGED + timedelta(minutes=40))]
    # without the failed stack in the comment, there is nothing to say
    first = gh.thread(REPO, 7)[0]
    cid = next(i for i, c in gh.comments.items() if c["body"] == first)
    gh.comments[cid]["body"] = first.replace('"errors":["gcp-tpu-a"]', '"errors":[]')
    assert main(args + ["--pr", "7"], clients=clients) == 0
    assert "every changed stack was applied" in capsys.readouterr().out
    assert gh.writes() == []


def test_an_open_pr_is_a_user_error_and_no_comment_means_nothing_to_check(setup, capsys):
    gh, eng, args, clients = setup
    assert main(args + ["--pr", "8"], clients=clients) == 2
    assert "pull request #8 is not merged" in capsys.readouterr().err
    gh.add_pull(REPO, 9, merged_at="2026-03-02T08:00:00Z")
    assert main(args + ["--pr", "9"], clients=clients) == 0
    assert "no preview comment" in capsys.readouterr().out
