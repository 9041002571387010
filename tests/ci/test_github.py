"""The comment upsert through the real PyGithub client against a local GitHub REST fake:
exactly one marker comment per PR, whatever happens."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from ci_support import severity_engine
from clusterstack.ci.comment import MARKER
from clusterstack.adapters.github import GitHub, GitHubError, Repository
from clusterstack.ci.github import upsert_comment
from clusterstack.cli import main
from fakes.clients import fake_clients

REPO = "example-lab/infra"
CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]


@pytest.fixture
def gh():
    with FakeGitHub() as server:
        server.add_repo(REPO)
        server.add_pull(REPO, 7)
        yield server


@pytest.fixture
def repo(gh) -> Repository:
    return GitHub(token=gh.token, base_url=gh.base_url, throttle=False, retry=None).repository(REPO)


def body(text: str) -> str:
    return f"{MARKER}\n{text}\n"


def test_create_then_update_the_same_comment(gh, repo):
    gh.add_comment(REPO, 7, "LGTM", human=True)
    first = upsert_comment(repo, 7, body("run 1"), marker=MARKER)
    assert first.action == "created"
    second = upsert_comment(repo, 7, body("run 2"), marker=MARKER)
    assert second.action == "updated" and second.comment_id == first.comment_id
    assert gh.thread(REPO, 7) == ["LGTM", body("run 2")]
    writes = gh.writes()
    assert writes == [("POST", f"/repos/{REPO}/issues/7/comments"),
                      ("PATCH", f"/repos/{REPO}/issues/comments/{first.comment_id}")]


def test_an_identical_body_sends_nothing(gh, repo):
    upsert_comment(repo, 7, body("same"), marker=MARKER)
    n = len(gh.writes())
    assert upsert_comment(repo, 7, body("same"), marker=MARKER).action == "unchanged"
    assert len(gh.writes()) == n


def test_the_marker_comment_is_found_on_a_later_page(gh, repo):
    cid = gh.add_comment(REPO, 7, body("old"))
    for i in range(45):  # GitHub pages comments 30 at a time
        gh.add_comment(REPO, 7, f"review comment {i}", human=True)
    res = upsert_comment(repo, 7, body("new"), marker=MARKER)
    assert res.action == "updated" and res.comment_id == cid
    assert sum(1 for b in gh.thread(REPO, 7) if b.startswith(MARKER)) == 1
    assert gh.requests.count(("GET", f"/repos/{REPO}/issues/7/comments")) == 2  # both pages read


def test_duplicates_from_a_race_are_collapsed_to_the_oldest(gh, repo):
    a = gh.add_comment(REPO, 7, body("run A"))
    gh.add_comment(REPO, 7, "a human reply quoting it:\n> " + MARKER, human=True)
    b = gh.add_comment(REPO, 7, body("run B"))
    res = upsert_comment(repo, 7, body("run C"), marker=MARKER)
    assert (res.action, res.comment_id, res.deleted) == ("updated", a, (b,))
    assert gh.thread(REPO, 7) == [body("run C"), "a human reply quoting it:\n> " + MARKER]


def test_a_body_without_the_marker_is_refused(repo):
    with pytest.raises(ValueError):
        upsert_comment(repo, 7, "no marker", marker=MARKER)


def test_api_errors_become_user_errors_with_a_hint(gh, repo):
    gh.forbidden.add(("POST", f"/repos/{REPO}/issues/7/comments"))
    with pytest.raises(GitHubError) as exc:
        upsert_comment(repo, 7, body("x"), marker=MARKER)
    assert "the token lacks permission (403)" in exc.value.render() and "pull-requests: write" in exc.value.render()
    assert exc.value.exit_code == 2
    bad = GitHub(token="wrong", base_url=gh.base_url, throttle=False, retry=None).repository(REPO)
    with pytest.raises(GitHubError, match="401"):
        bad.comments(7)
    with pytest.raises(GitHubError, match="bad repository"):
        GitHub(token="t").repository("not-a-repo")


def test_the_connection_reads_the_actions_environment(gh):
    with pytest.raises(GitHubError, match="GITHUB_TOKEN"):
        GitHub.from_env({})
    r = GitHub.from_env({"GH_TOKEN": gh.token, "GITHUB_API_URL": gh.base_url}, throttle=False).repository(REPO)
    assert r.comments(7) == []


def test_cli_posts_one_comment_and_updates_it(gh, workspace_copy, tmp_path, monkeypatch, capsys):
    eng = severity_engine(CLUSTERS)
    clients = fake_clients(engine=eng, github=lambda api_url=None: GitHub.from_env(
        base_url=api_url, throttle=False, retry=None))
    monkeypatch.setenv("GITHUB_TOKEN", gh.token)
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    out = tmp_path / "p"
    main(["--root", str(workspace_copy), "ci", "preview", "cw-demo-gb200", "gcp-demo", "--out", str(out)], clients=clients)
    args = ["ci", "comment", str(out), "--post", "--repo", REPO, "--pr", "7", "--sha", "abc123"]
    capsys.readouterr()
    assert main(args, clients=clients) == 0
    assert "preview comment created" in capsys.readouterr().out
    eng.stacks["gcp-demo"].steps = ()
    main(["--root", str(workspace_copy), "ci", "preview", "gcp-demo", "--out", str(out)], clients=clients)
    assert main(args, clients=clients) == 0
    assert "preview comment updated" in capsys.readouterr().out
    [only] = gh.thread(REPO, 7)
    assert only.startswith(MARKER) and "- ✅ `gcp-demo` — no changes" in only
    assert main(["ci", "comment", str(out), "--post"], clients=clients) == 2  # --repo and --pr are required


def test_cli_posts_nothing_for_a_meta_json_of_another_shape(gh, tmp_path, monkeypatch, capsys):
    clients = fake_clients(github=lambda api_url=None: GitHub.from_env(base_url=api_url, throttle=False, retry=None))
    monkeypatch.setenv("GITHUB_TOKEN", gh.token)
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    gh.add_comment(REPO, 7, MARKER + "\nthe last good comment")
    (tmp_path / "p" / "x").mkdir(parents=True)
    (tmp_path / "p" / "x" / "meta.json").write_text(
        '{"schema": 2, "stack": "x", "severity": "change", "guard": {"format": "clusterstack.verdict/v1", '
        '"violations": [], "destructive": 5}}')
    capsys.readouterr()
    assert main(["ci", "comment", str(tmp_path / "p"), "--post", "--repo", REPO, "--pr", "7"], clients=clients) == 2
    err = capsys.readouterr().err
    assert "meta.json: guard: guard.destructive is not a list of objects" in err and "internal error" not in err
    assert gh.thread(REPO, 7) == [MARKER + "\nthe last good comment"]   # nothing posted, nothing updated
