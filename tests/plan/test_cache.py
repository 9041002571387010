"""The plan cache's addresses as of a git ref: computed from git's objects they are the ones a
checkout gives, so a base whose every stack is cached is read without a worktree; a stack is
keyed on what it read (adding a cluster misses no other stack; editing one it reads misses
it); a damaged entry is a miss, never an error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusterstack.adapters.git import Git, GitError
from clusterstack.plan.at_ref import RefPlanner
from clusterstack.plan.treeview import TreeView
from clusterstack.plan.cache import LISTS, _digest, entries
from clusterstack.plan.model import dumps
from helpers import commit_all, edit, git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, str]:
    """``make_repo``'s workspace with its cache filled by one run (``_base``), and its plans
    planned uncached (the bytes every run of an unedited copy must give). Made once per
    module and process: planning every stack costs seconds, and several tests start from
    exactly this state. The addresses are relative to the workspace root and its git objects
    are path-free, so a copy (:func:`warm_repo`) hits the same entries."""
    root = make_repo(tmp_path_factory.mktemp("pristine") / "ws")
    uncached, _ = _base(root, cache=False)
    _, planner = _base(root)
    assert planner.checked_out and planner.cache_misses and not planner.cache_hits
    return root, uncached


@pytest.fixture
def warm_repo(tmp_path: Path, pristine: tuple[Path, str]) -> Path:
    """A copy of :func:`pristine`'s repository and filled cache (what ``make_repo`` then
    ``_base`` gives), for the tests that begin by filling the cache."""
    copy = tmp_path / "ws"
    shutil.copytree(pristine[0], copy, symlinks=True)
    assert git(copy, "status", "--porcelain", "--untracked-files=no") == ""
    return copy


def _tiny_repo(root: Path) -> Path:
    """Files, an executable, nested and same-named directories, a name with a space."""
    for rel, text in {"a/b.txt": "b\n", "a/c/d.yaml": "d: 1\n", "e.toml": "x = 1\n",
                      "a/c/e f.txt": "", "g/a/b.txt": "other\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "tiny")
    return root


@pytest.mark.parametrize("prefix", ["", "a/"])
def test_the_git_view_digests_what_a_checkout_digests(tmp_path, prefix):
    """Every path of the tree, as file and as directory, plus absent ones and paths below a
    file: the same digest from the objects as from a worktree of the commit."""
    root = _tiny_repo(tmp_path / "r")
    g = Git(root)
    commit = g.resolve("HEAD")
    tree = g.tree(commit)
    view = TreeView(tree, prefix, g)
    assert view.plain
    rels = sorted({p[len(prefix):] for p in tree if p.startswith(prefix)}) + [
        ".", "missing", "a/missing", "b.txt/below", "c/d.yaml/x", "a/c/../b.txt", "./e.toml"]
    with g.worktree(commit) as checkout:
        base = checkout / prefix
        for rel in rels:
            for kind in ("file", "dir"):
                assert view.digest(kind, rel) == _digest(base, kind, rel), (kind, rel)


def test_a_symlink_or_submodule_makes_the_view_not_plain(tmp_path):
    root = _tiny_repo(tmp_path / "r")
    os.symlink("e.toml", root / "link.toml")
    commit_all(root, "a link")
    g = Git(root)
    assert not TreeView(g.tree(g.resolve("HEAD")), "", g).plain
    assert TreeView(g.tree(g.resolve("HEAD")), "a/", g).plain   # the link is not under a/


def test_blobs_reads_many_in_one_process_and_refuses_a_missing_one(tmp_path):
    root = _tiny_repo(tmp_path / "r")
    g = Git(root)
    tree = g.tree(g.resolve("HEAD"))
    shas = [tree["a/b.txt"].sha, tree["e.toml"].sha, tree["a/c/e f.txt"].sha]
    assert g.blobs(shas) == {shas[0]: b"b\n", shas[1]: b"x = 1\n", shas[2]: b""}
    assert tree["run.sh"].mode == "100755" and tree["a/c"].kind == "tree"
    with pytest.raises(GitError, match="not a blob"):
        g.blobs(["0" * 40])
    with pytest.raises(GitError, match="not a blob"):
        g.blobs([tree["a"].sha])


def _base(repo: Path, **kw) -> tuple[str, RefPlanner]:
    with RefPlanner(repo, "HEAD", None, projects="all", **kw) as planner:
        planner.start()
        at_ref = planner.result()
        return dumps([*at_ref.plans.values(), *at_ref.project_plans.values()]), planner


def test_a_cached_base_is_read_without_a_checkout_and_the_bytes_do_not_change(repo, pristine):
    uncached = pristine[1]   # the same workspace, planned uncached (in another directory)
    cold, planner = _base(repo)
    assert planner.checked_out and planner.cache_misses and not planner.cache_hits
    warm, planner = _base(repo)
    assert not planner.checked_out and planner.in_process and planner.cache_hit
    assert uncached == cold == warm
    # a working-tree edit changes nothing at REF: still no checkout
    edit(repo / "clusters" / "cw-demo-h100.yaml", "manager_memory_limit: 4Gi", "manager_memory_limit: 5Gi")
    assert _base(repo)[1].checked_out is False


def test_adding_a_cluster_misses_only_the_stack_list_and_the_new_stack(warm_repo):
    """A new cluster file and stack file change which stacks exist (the list is planned
    again, from a checkout) but no other stack's address: they are read from the cache."""
    repo = warm_repo   # the cache filled
    every = sorted(_base(repo)[1].cache_hits)
    text = (repo / "clusters" / "cw-demo-h100.yaml").read_text()
    (repo / "clusters" / "cw-extra.yaml").write_text(
        text.replace("cw-demo-h100", "cw-extra").replace("demo-h100", "extra-cks")
        .replace("label_prefix: cwdemo", "label_prefix: cwextra"))
    (repo / "infra" / "Pulumi.cw-extra.yaml").write_text("config:\n  clusterstack:cluster: cw-extra\n")
    commit_all(repo, "a cluster added")
    added, planner = _base(repo)
    assert planner.checked_out and planner.cache_misses == ["infra/cw-extra"]
    assert sorted(planner.cache_hits) == every
    assert added == _base(repo, cache=False)[0]
    assert _base(repo)[1].checked_out is False


def test_editing_a_referenced_cluster_misses_the_stack_that_references_it(warm_repo):
    """gcp-demo's load balancer names gcp-tpu-a and gcp-tpu-b: their files are its inputs."""
    repo = warm_repo   # the cache filled
    other = repo / "clusters" / "gcp-tpu-b.yaml"
    other.write_text(other.read_text() + "# edited\n")
    commit_all(repo, "a referenced cluster edited")
    _, planner = _base(repo)
    assert planner.checked_out
    assert sorted(planner.cache_misses) == ["infra/gcp-demo", "infra/gcp-tpu-b"]


@pytest.mark.parametrize("damaged", ["stack", "list"])
def test_a_damaged_entry_read_through_git_is_a_miss(warm_repo, pristine, damaged):
    repo, uncached = warm_repo, pristine[1]   # the cache filled; the bytes planned uncached
    plans = repo / ".clusterstack-cache" / "plans"
    for entry in (entries(plans) if damaged == "stack" else entries(plans / LISTS)):
        entry.write_text("{not json")
    again, planner = _base(repo)
    assert planner.checked_out and again == uncached
    if damaged == "stack":
        assert not planner.cache_hits and planner.cache_misses
    else:  # the stacks themselves are still read
        assert planner.cache_hit
    assert _base(repo)[1].checked_out is False


def test_a_stack_removed_at_ref_is_not_read_from_a_stale_list(warm_repo):
    """The stack list is keyed on every path under the root: a deleted stack file is a miss
    of the list (planned again from a checkout), never a stale hit naming the stack."""
    repo = warm_repo   # the cache filled
    assert "gcp-tpu-a" in _base(repo)[0]
    git(repo, "rm", "-q", "infra/Pulumi.gcp-tpu-a.yaml")
    commit_all(repo, "a stack removed")
    _, planner = _base(repo)
    assert planner.checked_out and "infra/gcp-tpu-a" not in planner.cache_hits
    with RefPlanner(repo, "HEAD", None) as again:
        again.start()
        assert "gcp-tpu-a" not in again.result().plans


def test_the_program_key_names_every_installed_distribution(tmp_path, monkeypatch):
    """A distribution installed (or upgraded: its directory name carries the version) changes
    the key of every entry."""
    from clusterstack.plan.cache import _distributions, program_key

    assert any(n.startswith("pulumi-") and n.endswith(".dist-info") for n in _distributions())
    before = program_key({"a.py": "1"}, b"driver")
    (tmp_path / "extra_sdk-1.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "extra_sdk-1.0.dist-info" in _distributions()
    assert program_key({"a.py": "1"}, b"driver") != before


def _gb200(repo: Path, **kw) -> tuple[str, RefPlanner]:
    with RefPlanner(repo, "HEAD", ["cw-demo-gb200"], **kw) as planner:
        planner.start()
        return dumps(list(planner.result().plans.values())), planner


def test_repointing_a_symlinked_cluster_file_misses_the_cache(repo):
    """A cluster file that is a link into a shared directory: the link repointed at REF (the
    target files unchanged, the working tree pointing back) must plan REF's target, never
    hit the entry stored for the old one."""
    shared = repo / "shared_cfg"
    shared.mkdir()
    cluster = repo / "clusters" / "cw-demo-gb200.yaml"
    text = cluster.read_text()
    (shared / "a.yaml").write_text(text)
    (shared / "d.yaml").write_text(text.replace("gb200-4x", "gb300-4x").replace("GB200", "GB300"))
    cluster.unlink()
    os.symlink("../shared_cfg/a.yaml", cluster)
    commit_all(repo, "the cluster file a link")
    first, _ = _gb200(repo)                       # fills the cache for the link to a.yaml
    cluster.unlink()
    os.symlink("../shared_cfg/d.yaml", cluster)
    commit_all(repo, "the link repointed")
    cluster.unlink()
    os.symlink("../shared_cfg/a.yaml", cluster)   # the working tree back
    cached, planner = _gb200(repo)
    uncached, _ = _gb200(repo, cache=False)
    assert "gb300-4x" in uncached and cached == uncached and cached != first
    assert planner.cache_misses == ["infra/cw-demo-gb200"]
    assert _gb200(repo)[1].cache_hit                 # the new entry is found again


def test_a_path_through_a_symlink_digests_where_it_leads(tmp_path):
    """Without links the digest is the content's (what the git view computes); through a link
    (the file itself or a directory on the way) it also names the target."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.yaml").write_text("a\n")
    (tmp_path / "real" / "b.yaml").write_text("a\n")
    os.symlink("real", tmp_path / "dirlink")
    os.symlink("real/a.yaml", tmp_path / "to_a.yaml")
    plain = _digest(tmp_path, "file", "real/a.yaml")
    assert plain == _digest(tmp_path, "file", "real/b.yaml")
    assert _digest(tmp_path, "file", "dirlink/a.yaml") not in (plain, _digest(tmp_path, "file", "dirlink/b.yaml"))
    assert _digest(tmp_path, "file", "to_a.yaml") == _digest(tmp_path, "file", "dirlink/../to_a.yaml")
    assert _digest(tmp_path, "file", "to_a.yaml") != plain
    os.symlink("real/missing", tmp_path / "dangling")
    assert _digest(tmp_path, "file", "dangling") not in ("absent", _digest(tmp_path, "file", "nothing"))
    assert _digest(tmp_path, "dir", "dirlink") != _digest(tmp_path, "dir", "real")


def _h100(repo: Path, **kw) -> tuple[str, RefPlanner]:
    with RefPlanner(repo, "HEAD", ["cw-demo-h100"], **kw) as planner:
        planner.start()
        return dumps(list(planner.result().plans.values())), planner


@pytest.mark.parametrize("attributes", [".gitattributes", ".git/info/attributes"])
def test_a_smudge_filter_makes_the_base_be_checked_out(repo, attributes):
    """A real smudge filter doubling every ``max_slices`` and ``buffer_slices`` (git runs it
    on checkout; a pinned pool stays pinned): a later
    commit whose blob (written unfiltered) equals the earlier checkout's bytes must not hit
    the entry stored from that checkout; with attributes git is asked for a checkout."""
    smudge = repo.parent / "dbl.py"
    smudge.write_text("import re, sys\nsys.stdout.write(re.sub(r'(max|buffer)_slices: (\\d+)', "
                      "lambda m: f'{m[1]}_slices: {2 * int(m[2])}', sys.stdin.read()))\n")
    git(repo, "config", "filter.dbl.smudge", f"{sys.executable} {smudge}")
    (repo / attributes).parent.mkdir(parents=True, exist_ok=True)
    (repo / attributes).write_text("clusters/cw-demo-h100.yaml filter=dbl\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "a smudge filter")  # blob 2, checkout 4
    first, planner = _h100(repo)
    assert planner.checked_out
    cluster = repo / "clusters" / "cw-demo-h100.yaml"
    checkout = subprocess.run([sys.executable, str(smudge)], input=cluster.read_text(),
                              capture_output=True, text=True, check=True).stdout
    assert "max_slices: 4 " in checkout
    cluster.write_text(checkout)                        # commit A's checkout, as a blob
    sha = git(repo, "hash-object", "-w", "--no-filters", str(cluster))
    git(repo, "update-index", "--cacheinfo", f"100644,{sha},clusters/cw-demo-h100.yaml")
    git(repo, "commit", "-q", "-m", "the blob is A's checkout")  # a checkout: doubled again
    cached, planner = _h100(repo)
    uncached, _ = _h100(repo, cache=False)
    assert cached == uncached != first
    assert planner.checked_out and planner.cache_misses == ["infra/cw-demo-h100"]
