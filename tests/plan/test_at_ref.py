"""Planning a workspace as of a git ref: in this process when REF's package is the running one,
in a child interpreter otherwise (same bytes either way), and the worktrees of killed runs
removed by the next run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clusterstack.adapters.git import Git
from clusterstack.plan.at_ref import RefPlanner, reap_stale_worktrees
from clusterstack.plan.treeview import running_package_tree, same_code
from clusterstack.plan.cache import entries
from clusterstack.plan.model import dumps
from helpers import REPO, commit_all, edit, git, make_repo
from regen_golden import EXAMPLE_STACKS, PROJECT_STACKS, golden_path, project_golden_path


def worktrees(root: Path) -> list[str]:
    return [ln for ln in git(root, "worktree", "list", "--porcelain").splitlines()
            if ln.startswith("worktree ")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws")


def test_same_code_compares_every_file_of_the_package(repo):
    top, head = repo, git(repo, "rev-parse", "HEAD")
    assert same_code(Git(repo), top, head)            # no src/: the installed package plans it
    shutil.copytree(REPO / "src" / "clusterstack", repo / "src" / "clusterstack",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    same = commit_all(repo, "the running package")
    assert same_code(Git(repo), top, same)
    (repo / "src" / "clusterstack" / "extra.py").write_text("")          # one file more
    more = commit_all(repo, "a file more")
    assert not same_code(Git(repo), top, more)
    (repo / "src" / "clusterstack" / "extra.py").unlink()
    edit(repo / "src" / "clusterstack" / "components" / "coreweave" / "nodepools.py",
         '"computeClass": "default"', '"computeClass": "as-of-ref"')      # one byte changed
    edited = commit_all(repo, "an edit")
    assert not same_code(Git(repo), top, edited)
    assert "components/coreweave/nodepools.py" in running_package_tree()


def test_the_child_gives_the_in_process_bytes_for_every_stack(tmp_path):
    """The base planned in the child interpreter is byte-identical, stack for stack, to what
    this process plans: the golden plans (tests/plan/test_runtime.py pins this process's plans
    of every stack of every project to them)."""
    repo = make_repo(tmp_path / "ws", services=True, iam=True)  # the whole shipped workspace, as the goldens
    with RefPlanner(repo, "HEAD", None, projects="all", in_process=False, cache=False) as planner:
        planner.start()
        assert planner.in_process is False
        at_ref = planner.result()
    assert at_ref.code == "installed"
    assert sorted(at_ref.plans) == sorted(EXAMPLE_STACKS)
    for stack, plan in at_ref.plans.items():
        assert dumps([plan]) == golden_path(stack).read_text(encoding="utf-8"), stack
    by_stack = {stack: plan for (_, stack), plan in at_ref.project_plans.items()}
    assert sorted(by_stack) == sorted(stack for _, stack in PROJECT_STACKS)
    for directory, stack in PROJECT_STACKS:
        assert (dumps([by_stack[stack]])
                == project_golden_path(directory, stack).read_text(encoding="utf-8")), stack
    assert worktrees(repo) == [f"worktree {repo.resolve()}"]


def test_auto_mode_plans_in_process_when_the_code_is_the_same(repo):
    with RefPlanner(repo, "HEAD", ["gcp-demo"]) as planner:
        planner.start()
        assert planner.in_process
        assert list(planner.result().plans) == ["gcp-demo"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _leftover(repo: Path, owner: int | None) -> Path:
    """A ``diff --base`` worktree as a killed run leaves it: checked out, registered, owned."""
    tmp = Path(tempfile.mkdtemp(prefix="clusterstack-diff-"))
    git(repo, "worktree", "add", "--detach", "--quiet", str(tmp / "tree"), "HEAD")
    if owner is not None:
        (tmp / "owner.pid").write_text(f"{owner}\n")
    return tmp / "tree"


def test_worktrees_of_dead_owners_are_removed_and_live_ones_kept(repo):
    dead, live = _leftover(repo, _dead_pid()), _leftover(repo, os.getpid())
    young = _leftover(repo, None)                 # being created right now: no owner file yet
    try:
        removed = reap_stale_worktrees(Git(repo), repo)
        assert [p.resolve() for p in removed] == [dead.resolve()]
        assert not dead.parent.exists()
        assert sorted(worktrees(repo)) == sorted(f"worktree {p.resolve()}"
                                                 for p in (repo, live, young))
        old = os.stat(young.parent).st_mtime - 3600
        os.utime(young.parent, (old, old))        # an hour old and still no owner: stale
        assert [p.resolve() for p in reap_stale_worktrees(Git(repo), repo)] == [young.resolve()]
    finally:
        for tree in (live, young):
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=repo,
                           capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)


def test_a_killed_diff_leaves_a_worktree_the_next_run_removes(repo):
    """A run SIGKILLed after checking REF out (no cleanup ran at all) leaves its worktree; the
    next ``diff --base`` removes it before making its own."""
    script = ("import os, signal, sys\n"
              "from clusterstack.plan.at_ref import RefPlanner\n"
              "p = RefPlanner(sys.argv[1], 'HEAD', ['gcp-demo'])\n"
              "p.start()\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(repo)], capture_output=True)
    assert proc.returncode == -9, proc.stderr
    (left,) = [w for w in worktrees(repo) if w != f"worktree {repo.resolve()}"]
    assert Path(left.removeprefix("worktree ")).is_dir()
    with RefPlanner(repo, "HEAD", ["gcp-demo"]) as planner:
        planner.start()
        assert left not in worktrees(repo)
    assert not Path(left.removeprefix("worktree ")).exists()
    assert worktrees(repo) == [f"worktree {repo.resolve()}"]


def test_a_ref_with_other_code_is_planned_once_then_read_from_the_cache(repo):
    """REF runs its own (different) package in the child; each stack's plan lands under its
    address and the next run reads them all without starting a child; a damaged entry and
    ``cache=False`` start the child again. CoreWeave stacks: the child imports one provider
    SDK (Kubernetes), not GCP's."""
    shutil.copytree(REPO / "src" / "clusterstack", repo / "src" / "clusterstack",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    edit(repo / "src" / "clusterstack" / "components" / "gcp" / "addresses.py",
         "Regional external static IPs:", "Regional external static IPs (as of REF):")
    commit_all(repo, "other code at REF")

    def started(**kw) -> tuple[bool, bool]:
        """(read from the cache, a child started) — the child is stopped unread."""
        with RefPlanner(repo, "HEAD", ["cw-demo-h100"], **kw) as planner:
            planner.start()
            assert not planner.in_process
            return planner.cache_hit, planner._proc is not None

    with RefPlanner(repo, "HEAD", ["cw-demo-h100"]) as planner:
        planner.start()
        first = planner.result()
        assert (planner.cache_hits, planner.cache_misses) == ([], ["infra/cw-demo-h100"])
    (entry,) = entries(repo / ".clusterstack-cache" / "plans")
    with RefPlanner(repo, "HEAD", ["cw-demo-h100"]) as planner:
        planner.start()
        again = planner.result()
        assert planner.cache_hit and planner._proc is None
    assert dumps(list(again.plans.values())) == dumps(list(first.plans.values()))
    assert again.code == first.code == "ref" and list(again.plans) == ["cw-demo-h100"]
    with RefPlanner(repo, "HEAD", ["cw-demo-h100", "cw-demo-gb200"]) as planner:
        planner.start()                            # a stack more: the child plans it …
        assert planner._proc is not None
        both = planner.result()                    # … and reads the other
        assert (planner.cache_hits, planner.cache_misses) == (["infra/cw-demo-h100"],
                                                              ["infra/cw-demo-gb200"])
    assert dumps([both.plans["cw-demo-h100"]]) == dumps([first.plans["cw-demo-h100"]])
    assert started(cache=False) == (False, True)  # neither read …
    entry.write_text("{not json")
    assert started() == (False, True)             # … nor trusted when damaged


def test_editing_one_cluster_replans_only_that_stack_and_the_bytes_do_not_change(repo):
    """In this process (REF runs this code): the first diff base plans every stack, the next
    reads them all; a commit that edits one cluster file misses that stack alone; the plans are
    byte-identical to uncached ones throughout."""
    def base(ref: str, **kw) -> tuple[str, list[str], list[str]]:
        with RefPlanner(repo, ref, None, projects="all", **kw) as planner:
            planner.start()
            assert planner.in_process
            at_ref = planner.result()
            return (dumps([*at_ref.plans.values(), *at_ref.project_plans.values()]),
                    planner.cache_hits, planner.cache_misses)

    uncached, hits, misses = base("HEAD", cache=False)
    assert (hits, misses) == ([], []) and not (repo / ".clusterstack-cache").exists()
    cold, hits, misses = base("HEAD")
    assert cold == uncached and hits == [] and "infra/cw-demo-h100" in misses
    every = sorted(misses)
    warm, hits, misses = base("HEAD")
    assert warm == uncached and (sorted(hits), misses) == (every, [])
    edit(repo / "clusters" / "cw-demo-h100.yaml", "manager_memory_limit: 4Gi", "manager_memory_limit: 5Gi")
    commit_all(repo, "one cluster edited")
    edited, hits, misses = base("HEAD")
    assert misses == ["infra/cw-demo-h100"] and sorted(hits) == [s for s in every if s != misses[0]]
    assert edited == base("HEAD", cache=False)[0] != uncached


def test_diff_json_is_byte_identical_with_and_without_the_cache(repo, capsys):
    """``diff --all --base HEAD --json`` with a working-tree edit: uncached, cold cache
    (written), warm cache (read) — the same bytes."""
    from clusterstack.cli import main

    edit(repo / "clusters" / "cw-demo-h100.yaml", "manager_memory_limit: 4Gi", "manager_memory_limit: 5Gi")

    def diff(*extra: str) -> str:
        capsys.readouterr()
        assert main(["--root", str(repo), "diff", "--all", "--base", "HEAD", "--json",
                     *extra]) == 0
        return capsys.readouterr().out

    uncached = diff("--no-cache")
    assert not (repo / ".clusterstack-cache").exists()
    cold = diff()
    assert list(entries(repo / ".clusterstack-cache" / "plans"))
    assert uncached == cold == diff() and "cw-demo-h100" in uncached


def test_the_cache_is_kept_under_the_workspace_root_not_the_repositorys_top(tmp_path):
    """A workspace in a subdirectory of its repository keeps REF's plans beside its own
    clusterstack.toml (where its .gitignore is), not at the repository's top."""
    from helpers import copy_workspace

    top = tmp_path / "repo"
    root = top / "lab"
    copy_workspace(root, services=False, iam=False)
    git(top, "init", "-q", "-b", "main")
    commit_all(top, "workspace in a subdirectory")
    with RefPlanner(root, "HEAD", ["cw-demo-h100"]) as planner:
        planner.start()
        planner.result()
        assert planner.cache_misses == ["infra/cw-demo-h100"]
    assert list(entries(root / ".clusterstack-cache" / "plans"))
    assert not (top / ".clusterstack-cache").exists()
    with RefPlanner(root, "HEAD", ["cw-demo-h100"]) as planner:
        planner.start()
        planner.result()
        assert planner.cache_hit
