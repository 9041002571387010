"""Plans of a workspace as of a git ref, for ``clusterstack diff --base REF``.

How: ``git worktree add --detach <tmp> <commit>`` checks REF out next to the repository (the
working tree is never touched); the stacks are planned from there, so REF's configs, stack files
and project entry points (``infra/__main__.py`` …, run by path with ``runpy``) are the ones
planned. Which ``clusterstack`` package runs them decides where:

- **In this process** (the usual case: every pull request that changes only reviewed inputs)
  when REF's ``src/clusterstack`` is byte-for-byte the running package (git blob ids of every
  file compared, :func:`clusterstack.plan.treeview.same_code`), or REF has no ``src/clusterstack`` at all (a
  configuration-only repository, which the installed package plans either way). The plans come
  from :func:`clusterstack.plan.__main__.plan_root`, exactly what the child below runs, so the
  output is the same — without a second interpreter importing the Pulumi SDKs again (measured:
  the two diff test files 88 → 28 s, ``diff --all --base HEAD`` 19 → 12 s cold). The
  project entry points need no comparison: they are REF's files in both modes.
- **Without a checkout** (in this process, with the cache): when every stack REF's run
  plans is in the plan cache (:mod:`clusterstack.plan.cache`) its address is computed from
  git's objects — ``git ls-tree`` once for every path and ``git cat-file --batch`` once for
  the few files the cached stacks read (:class:`clusterstack.plan.treeview.TreeView`) — and no worktree is made: a diff
  whose base is cached (CI restoring the cache for a pull request against ``main``, a second
  ``diff --base main``) runs 10 short git processes (counted for ``diff --all``), none of
  them a checkout, and does not load REF's workspace a second time. Only a miss makes the worktree. A tree whose entries under the
  workspace root include a symlink or a submodule is always checked out (what a checkout reads
  there is not the blob: the git view would have to re-implement the checkout), and so is
  every REF when git may convert on checkout (a ``.gitattributes`` in the tree, an
  attributes file of the repository, user or system, or config ``filter.*``,
  ``core.autocrlf``, ``core.eol``, ``core.attributesFile``: :meth:`Git.checkout_converts`) —
  then a blob is not the bytes a checkout reads, and a blob equal to another commit's checkout
  would be a wrong hit; so is a REF whose code is not the running package (the child needs
  files on disk).
- **In a child interpreter** (this venv's ``sys.executable``) with ``PYTHONPATH=<worktree>/src``
  when REF's package differs, so the program *as of REF* runs. The child runs this package's
  ``plan/__main__.py`` via ``runpy`` and the two speak the declared, versioned protocol of
  :mod:`clusterstack.plan.refproto`: one Request on its stdin, one Response on its stdout; of
  REF's package the driver uses only the names of its stable surface
  (:data:`~clusterstack.plan.refproto.SURFACE`; REF's package lacking an optional one —
  the read record of an older package — plans uncached, :attr:`RefPlanner.ref_missing`). A subprocess,
  not an import, because Python caches modules: two versions of the program cannot run in one
  process. The head side is planned by the caller while the child runs (:class:`RefPlanner`
  starts the child first), so the two SDK imports overlap.

:attr:`RefPlans.code` says which package planned: ``"ref"`` or ``"installed"`` (REF has none).
The worktree is removed on every path (success, error, interrupt). A run killed outright
(SIGKILL, power loss) leaves its checkout behind; each worktree records its owner's process id
(``owner.pid`` beside it) and the next run removes every ``clusterstack-diff-`` worktree of this
repository whose owner is gone (:func:`reap_stale_worktrees`). git is run through the one
adapter, :class:`clusterstack.adapters.git.Git` (errors: :class:`GitError`, exit 2).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterstack.adapters.git import Git, GitError, GitRepo
from clusterstack.errors import ClusterstackError
from clusterstack.plan.model import StackPlan, dumps, loads
from clusterstack.plan.refproto import ProtocolError, Request, Response
from clusterstack.plan.treeview import TreeView, ref_package_tree, running_package_tree
from clusterstack.workspace import WORKSPACE_FILE, Workspace
from clusterstack.plan.__main__ import plan_root, stack_list
from clusterstack.plan.cache import PlanCache, program_key

_BOOT = ("import runpy, sys; driver = sys.argv[1]; sys.argv = [driver] + sys.argv[2:]; "
         "runpy.run_path(driver, run_name='__main__')")
_DRIVER = Path(__file__).resolve().parent / "__main__.py"
_PREFIX = "clusterstack-diff-"
_OWNER = "owner.pid"
_GRACE_S = 600  # a worktree without an owner file younger than this may be mid-creation
CACHE_DIR = ".clusterstack-cache/plans"  # under the workspace root, beside the .gitignore init writes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def reap_stale_worktrees(git: GitRepo, top: Path) -> list[Path]:
    """Remove the ``diff --base`` worktrees of this repository left by killed runs: each
    ``<tmp>/clusterstack-diff-*/tree`` entry of ``git worktree list`` whose ``owner.pid`` names
    a process that no longer exists (or that has no owner file and is older than 10 minutes).
    Returns the removed paths. Never raises for a worktree it cannot remove."""
    listed = git.run("worktree", "list", "--porcelain", check=False, cwd=top)
    removed = []
    for line in listed.stdout.decode(errors="replace").splitlines():
        if not line.startswith("worktree "):
            continue
        tree = Path(line.removeprefix("worktree "))
        if tree.name != "tree" or not tree.parent.name.startswith(_PREFIX):
            continue
        owner = tree.parent / _OWNER
        try:
            stale = not _alive(int(owner.read_text().strip()))
        except (OSError, ValueError):
            try:
                stale = time.time() - tree.parent.stat().st_mtime > _GRACE_S
            except OSError:
                stale = True  # the directory is gone: prune clears the entry
        if stale:
            git.run("worktree", "remove", "--force", str(tree), check=False, cwd=top)
            shutil.rmtree(tree.parent, ignore_errors=True)
            removed.append(tree)
    if removed:
        git.run("worktree", "prune", check=False, cwd=top)
    return removed


@dataclass(frozen=True)
class RefPlans:
    """Plans at a ref. ``plans``: stack → plan for the stacks that exist there (a stack missing
    from it does not exist at REF); ``workspace_present``: REF has the workspace's
    ``clusterstack.toml`` at all; ``code``: ``"ref"`` (REF's ``src/clusterstack``) or
    ``"installed"`` (REF has none, the installed package planned it); ``project_plans``:
    (Pulumi project, stack) → plan of the other projects' stacks (``[projects]``), when asked
    for with ``projects``."""

    ref: str
    commit: str
    plans: dict[str, StackPlan] = field(default_factory=dict)
    workspace_present: bool = True
    code: str = "ref"
    project_plans: dict[tuple[str, str], StackPlan] = field(default_factory=dict)


def resolve_ref(root: Path, ref: str, *, git: GitRepo | None = None) -> tuple[Path, str]:
    """``(repository top level, full commit SHA)`` of ``ref`` in the repository holding ``root``.

    Raises GitError when ``root`` is not inside a git work tree or ``ref`` names no commit.
    """
    git = git or Git(root)
    return git.toplevel(), git.resolve(ref, field="--base")


def guard_section_at_ref(root: Path, ref: str, *, git: GitRepo | None = None) -> dict[str, Any] | None:
    """The ``[guard]`` table of ``clusterstack.toml`` as of ``ref`` (``git show
    REF:./clusterstack.toml`` from ``root``): ``{}`` when the file has no ``[guard]``, ``None``
    when REF has no such file. Raises GitError for an unknown ref or unparsable TOML."""
    import tomllib

    git = git or Git(root)
    _, sha = resolve_ref(root, ref, git=git)
    shown = git.show(sha, f"./{WORKSPACE_FILE}")
    if shown is None:
        return None
    try:
        data = tomllib.loads(shown)
    except tomllib.TOMLDecodeError as exc:
        raise GitError(f"{WORKSPACE_FILE} at {ref} is not valid TOML: {exc}",
                       "compare against a ref whose clusterstack.toml parses",
                       field="--base") from None
    guard = data.get("guard", {})
    return dict(guard) if isinstance(guard, dict) else {"guard": guard}


class RefPlanner:
    """Start planning ``stacks`` (``None``: every stack) of the workspace at ``root`` as of
    ``ref``; collect with :meth:`result`; always :meth:`close` (or use ``with``).

    ``projects``: also plan the stacks of the other projects (``[projects]`` of REF's
    ``clusterstack.toml``): ``"all"`` or a list of project handles; ``None`` (default): none.
    Plans whose Pulumi project is not the cluster project (this workspace's ``project_name``)
    land in :attr:`RefPlans.project_plans`.

    ``cache``: REF's plans are kept per stack under ``<workspace root>/.clusterstack-cache/plans/``
    (the root's own ``.gitignore`` — ``init`` writes the entry — ignores it, also for a workspace
    in a subdirectory of its repository)
    (:mod:`clusterstack.plan.cache`: addressed by the planning code — REF's package, the driver,
    the installed distributions — and the files that stack read at REF), in this process and in
    the child alike; a later run reads every stack whose address is unchanged, so a pull
    request that edits one cluster re-plans one stack of its base, and CI plans a ``main``
    commit once for all the pull requests against it. ``False`` (``diff --no-cache``) neither
    reads nor writes. After :meth:`result`, :attr:`cache_hits` / :attr:`cache_misses` list the
    stacks (``<project dir>/<stack>``) read and planned; :attr:`cache_hit`: every one was read.

    ``in_process``: ``None`` (default) plans in this process exactly when :func:`~clusterstack.plan.treeview.same_code`
    holds; ``False`` always uses the child; ``True`` always this process (tests compare the two).
    :attr:`in_process` tells, after :meth:`start`, which one runs; :attr:`checked_out`
    whether REF was checked out (not when every stack was read through git's objects).

    Raises GitError (bad ref / no repository) from :meth:`start`, and ClusterstackError from
    :meth:`result` when the program at REF fails (its own ``error:`` lines in the message).
    """

    def __init__(self, root: Path, ref: str, stacks: list[str] | None,
                 projects: str | list[str] | None = None, *, git: GitRepo | None = None,
                 in_process: bool | None = None, cache: bool = True) -> None:
        self.root = Path(root).resolve()
        self.ref = ref
        self.stacks = stacks
        self.projects = projects
        self._git = git or Git(self.root)
        self._cleanup = contextlib.ExitStack()
        self._top: Path | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._commit = ""
        self._immediate: RefPlans | None = None
        self._code = "ref"
        self._base_root: Path | None = None
        self._force = in_process
        self._use_cache = cache
        self._cache: Any = None
        self._plans: list[StackPlan] | None = None  # REF's plans, when read from the cache
        self._paths = ""                                 # TreeView.paths of REF's root
        self.cache_hits: list[str] = []
        self.cache_misses: list[str] = []
        self.in_process = False
        self.ref_missing: list[str] = []  # optional names of refproto.SURFACE REF's package lacks
        self.checked_out = False  # a worktree of REF was made (False: read from git's objects)

    def __enter__(self) -> "RefPlanner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Resolve REF; when every stack it plans is in the cache, read them from git's objects
        (no checkout: :meth:`_from_tree`); else check REF out in a temporary worktree and, when
        REF's code is not the running code, launch the planner child (else :meth:`result`
        plans in-process)."""
        self._top, self._commit = resolve_ref(self.root, self.ref, git=self._git)
        rel = self.root.relative_to(self._top.resolve())
        prefix = "" if rel == Path(".") else f"{rel.as_posix()}/"
        entries = self._git.tree(self._commit)
        ref_tree = ref_package_tree(self._git, self._top, self._commit, entries)
        toml = entries.get(f"{prefix}{WORKSPACE_FILE}")
        reap_stale_worktrees(self._git, self._top)
        if toml is None or toml.kind != "blob":
            self._immediate = RefPlans(self.ref, self._commit, {}, workspace_present=False,
                                       code="ref")
            return  # no workspace at REF: nothing to check out
        in_process = self._force if self._force is not None else (
            ref_tree is None or ref_tree == running_package_tree())
        view = TreeView(entries, prefix, self._git)
        self._paths = view.paths
        if in_process and self._use_cache:
            self._cache = PlanCache(self.root / CACHE_DIR, program_key(
                running_package_tree(), _DRIVER.read_bytes()))
            self._code = "ref" if "src/clusterstack/__init__.py" in entries else "installed"
            if view.plain and not self._git.checkout_converts(entries) and self._from_tree(view):
                self.in_process = True
                return  # every stack read from the cache: no worktree
        # no hooks (the adapter's rule): a post-checkout hook must not run in a read-only diff
        tree = self._cleanup.enter_context(self._git.worktree(self._commit, prefix=_PREFIX))
        self.checked_out = True
        (tree.parent / _OWNER).write_text(f"{os.getpid()}\n", encoding="utf-8")
        base_root = tree / rel
        if not (base_root / WORKSPACE_FILE).is_file():
            self._cache = None
            self._immediate = RefPlans(self.ref, self._commit, {}, workspace_present=False,
                                       code="ref")
            return
        src = tree / "src"
        self._base_root = base_root
        if in_process:
            self.in_process = True
            self._code = "ref" if (src / "clusterstack" / "__init__.py").is_file() else "installed"
            return
        env = dict(os.environ)
        code = "installed"
        if (src / "clusterstack" / "__init__.py").is_file():
            code = "ref"
            env["PYTHONPATH"] = os.pathsep.join(
                [str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["PYTHONSAFEPATH"] = "1"           # no cwd on sys.path: only PYTHONPATH + site
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the worktree
        self._code = code
        cache_dir = program = None
        if self._use_cache:
            program = program_key(ref_tree or running_package_tree(), _DRIVER.read_bytes())
            if self._all_cached(PlanCache(self.root / CACHE_DIR, program), base_root):
                return  # every stack read: no child, no second SDK import
            cache_dir = str(self.root / CACHE_DIR)
        request = Request(root=str(base_root), skip_missing=True,
                          stacks=None if self.stacks is None else list(self.stacks),
                          projects=self.projects if self.projects in (None, "all") else list(self.projects),
                          cache_dir=cache_dir, cache_program=program)
        self._proc = subprocess.Popen([sys.executable, "-c", _BOOT, str(_DRIVER), "--request", "-"],
                                      cwd=base_root, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      encoding="utf-8")
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # a child that died at once: result() says why
            self._proc.stdin.write(request.dumps())
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        self._proc.stdin = None  # written and closed: communicate() must not flush it again

    def _listing_args(self) -> dict[str, Any]:
        """What decides the stack list besides the files (the key of :meth:`PlanCache.listing`)."""
        stacks = self.stacks
        return {"stacks": None if stacks is None else list(dict.fromkeys(stacks)),
                "projects": self.projects, "skip_missing": True}

    def _from_tree(self, view: TreeView) -> bool:
        """Fill :attr:`_plans` from the cache when the stack list and every stack of it are
        stored under their addresses as of REF, computed from ``view`` (no checkout); False on
        any miss (the caller checks out and plans). A stored stack list and each stack's entry
        hold the paths they read; their digests come from one ``git cat-file --batch``."""
        cache = self._cache
        what = self._listing_args()
        reads = cache.listing_reads(what, view.paths)
        if reads is None:
            return False
        view.fetch([r for k, r in reads if k == "file"])
        listed = cache.lookup_listing(what, view.paths, view.digest, reads)
        if not listed:
            return False
        stack_reads = [cache.stack_reads(d, n) for d, n in listed]
        if any(r is None for r in stack_reads):
            return False
        view.fetch([r for rs in stack_reads for k, r in rs if k == "file"])
        texts = [cache.lookup_at(d, n, view.digest, rs) for (d, n), rs in zip(listed, stack_reads)]
        if any(t is None for t in texts):
            return False
        try:
            self._plans = [p for t in texts for p in loads(t)]
        except ValueError:  # a damaged entry is a miss: the child plans
            return False
        self.cache_hits = [f"{d}/{n}" for d, n in listed]
        return True

    def _all_cached(self, cache: Any, base_root: Path) -> bool:
        """Fill :attr:`_plans` when the cache holds every stack REF's driver would plan
        (listed with this package's workspace loader; when that fails on REF's files, the child
        decides). Output: the plans the child would write, read back."""
        try:
            wanted = stack_list(base_root, self.stacks, skip_missing=True, projects=self.projects)
        except ClusterstackError:
            return False
        texts = [cache.lookup(base_root, d, n) for d, n in wanted]
        if not wanted or any(t is None for t in texts):
            return False
        try:
            self._plans = [p for t in texts for p in loads(t)]
        except ValueError:  # a damaged entry is a miss: the child plans
            return False
        root = base_root.resolve()
        self.cache_hits = [f"{Path(d).resolve().relative_to(root).as_posix()}/{n}" for d, n in wanted]
        return True

    def result(self) -> RefPlans:
        """Wait for the child and parse its plans."""
        if self._immediate is not None:
            return self._immediate
        if self._plans is not None:
            plans = self._plans
        elif self.in_process:
            plans = self._plan_in_process()
            if self._cache is not None:
                self.cache_hits, self.cache_misses = self._cache.hits, self._cache.misses
        elif self._proc is None:
            raise RuntimeError("RefPlanner.start() was not called")
        else:
            out, errtext = self._proc.communicate()
            try:
                response = Response.loads(out)
            except ProtocolError as exc:
                if self._proc.returncode != 0:
                    self._failed(errtext, self._proc.returncode)
                raise ClusterstackError(f"planning at {self.ref} gave no answer: {exc}",
                                        "that ref's clusterstack is too old or too new to diff "
                                        "against", field="--base") from None
            if response.error is not None:
                self._failed("\n".join(response.error["lines"]), response.error["exit_code"])
            self.cache_hits, self.cache_misses = response.hits, response.misses
            self.ref_missing = response.missing
            try:
                plans = loads(response.plans)
            except ValueError as exc:
                raise ClusterstackError(f"planning at {self.ref} gave no plan: {exc}",
                                        "that ref's clusterstack is too old or too new to diff "
                                        "against", field="--base") from None

        # Without projects every plan is a cluster stack (as before [projects] existed).
        cluster_project = Workspace.load(self.root).project_name if self.projects else None
        return RefPlans(self.ref, self._commit,
                        {p.stack: p for p in plans if cluster_project in (None, p.project)},
                        workspace_present=True, code=self._code,
                        project_plans={(p.project, p.stack): p for p in plans
                                       if cluster_project not in (None, p.project)})

    def _failed(self, errtext: str, code: int) -> None:
        lines = [ln.removeprefix("error: ") for ln in errtext.strip().splitlines() if ln.strip()]
        detail = "; ".join(lines[-5:]) if lines else f"exit code {code}"
        raise ClusterstackError(f"planning at {self.ref} ({self._commit[:12]}) failed: {detail}",
                                "the program or configs at that ref do not plan; pick "
                                "another --base", field="--base")

    def _plan_in_process(self) -> list[StackPlan]:
        """REF's plans from the running package, as read back from the canonical JSON the
        child would write (the same driver function, the same serialisation: with the cache
        every plan already is — :func:`plan_root` returns what it stored — so it is not
        written and read a second time). With the cache the stack list is stored too
        (:meth:`PlanCache.listing`), for the next run's :meth:`_from_tree`."""
        root = self._base_root
        assert root is not None
        try:
            if self._cache is None:
                return loads(dumps(plan_root(root, self.stacks, skip_missing=True,
                                             projects=self.projects)))
            self._cache.listing(root, self._listing_args(), self._paths,
                                lambda: stack_list(root, self.stacks,
                                                   skip_missing=True, projects=self.projects))
            return plan_root(root, self.stacks, skip_missing=True,
                             projects=self.projects, cache=self._cache)
        except ClusterstackError as exc:
            self._failed(str(exc), exc.exit_code)
            raise  # unreachable: _failed raises

    @property
    def cache_hit(self) -> bool:
        """Every stack of REF was read from the cache (none planned)."""
        return bool(self.cache_hits) and not self.cache_misses

    def close(self) -> None:
        """Stop the child if it still runs and remove the worktree and temp directory."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.communicate()
        self._cleanup.close()


def plans_at_ref(root: Path, ref: str, stacks: list[str] | None = None) -> RefPlans:
    """Convenience: plan ``stacks`` (``None``: all) of the workspace at ``root`` as of ``ref``
    and clean up. Raises GitError / ClusterstackError as :class:`RefPlanner`."""
    with RefPlanner(root, ref, stacks) as planner:
        planner.start()
        return planner.result()
