"""The adapters of the outside systems (clusterstack.adapters) and Clients: one error class each
with a clear message (exit 2), the one kubeconfig retry rule, and no SDK imported before use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterstack.adapters.git import Git, GitError
from clusterstack.adapters.github import GitHub, GitHubError
from clusterstack.adapters.kubernetes import READ_RETRIES, SAFE_PATH_CHARS, KubeconfigError, configuration
from helpers import git



@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    return root


def test_clients_production_imports_no_sdk():
    code = ("import sys; from clusterstack.clients import Clients; c = Clients.production(); "
            "import json; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('kubernetes', 'github', 'google', 'pulumi', 'urllib3'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_git_state_show_and_refs(repo):
    g = Git(repo)
    head = git(repo, "rev-parse", "HEAD")
    assert g.state().commit == head and g.state().branch == "main" and not g.state().dirty
    (repo / "a.txt").write_text("two\n")
    assert g.state().dirty and g.state().describe() == f"git {head[:12]} dirty on main"
    assert g.show("HEAD", "a.txt") == "one\n" and g.show("HEAD", "./missing.txt") is None
    assert g.resolve("main") == head and g.commit_of("nope") is None
    assert g.changed_files("HEAD") == ("a.txt",)
    [line] = [cl for cl in g.changed_lines("HEAD", None, ["a.txt"]) if cl.sign == "+"]
    assert (line.path, line.line, line.text) == ("a.txt", 1, "two")


def test_git_errors_are_clear_and_exit_2(repo, tmp_path, monkeypatch):
    with pytest.raises(GitError) as e:
        Git(repo).resolve("no-such-branch", field="--base")
    assert e.value.exit_code == 2 and "--base: unknown git ref 'no-such-branch'" in e.value.render()
    with pytest.raises(GitError, match="bad git ref"):
        Git(repo).resolve("--output=x")
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(GitError, match="is not inside a git repository"):
        Git(outside).toplevel()
    assert Git(outside).state().commit is None          # outside git: nothing to record
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no git at all
    with pytest.raises(GitError, match="git is not installed") as e:
        Git(repo).tracked_files()
    assert e.value.exit_code == 2
    assert Git(repo).state().commit is None and not Git(repo).is_repo()


def test_git_worktree_is_removed_on_every_path(repo):
    g = Git(repo)
    with pytest.raises(RuntimeError):
        with g.worktree("HEAD") as tree:
            assert (tree / "a.txt").read_text() == "one\n"
            raise RuntimeError("boom")
    assert not tree.exists() and git(repo, "worktree", "list").count("\n") == 0
    with pytest.raises(GitError, match="worktree add"):
        with g.worktree("0" * 40):
            pass


def test_kubeconfig_loader_names_context_and_file_and_sets_the_retry_rule(tmp_path):
    path = tmp_path / "kubeconfig"
    with pytest.raises(KubeconfigError) as e:
        configuration("lab", config_file=str(path))
    assert e.value.exit_code == 2 and "cannot use kube context 'lab'" in e.value.render() and str(path) in e.value.render()
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}]}))
    cfg = configuration("lab", config_file=str(path))
    assert cfg.host == "https://127.0.0.1:6443" and cfg.safe_chars_for_path_param == SAFE_PATH_CHARS
    assert cfg.retries.total == READ_RETRIES and cfg.retries.allowed_methods == frozenset({"GET"})


def test_github_connection_needs_a_token_and_maps_a_dead_network(unused_port):
    with pytest.raises(GitHubError) as e:
        GitHub.from_env({})
    assert e.value.exit_code == 2 and e.value.render().startswith("GITHUB_TOKEN is not set — export GITHUB_TOKEN")
    repo = GitHub(token="t", base_url=f"http://127.0.0.1:{unused_port}", retry=None, timeout=2).repository("o/r")
    with pytest.raises(GitHubError) as e:
        repo.comments(1)
    assert e.value.render() == (f"cannot reach http://127.0.0.1:{unused_port} to read the comments of #1: "
                                "ConnectionError — check the network and the API URL (--api-url / "
                                "GITHUB_API_URL)")
    assert e.value.exit_code == 2


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
