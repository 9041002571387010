"""Plans of a workspace as of a git ref, for ``clusterstack diff --base REF``.

How: ``git worktree add --detach <tmp> <commit>`` checks REF out next to the repository (the
working tree is never touched), then a child interpreter (this venv's ``sys.executable``) plans
the stacks there with ``PYTHONPATH=<worktree>/src``, so the program *as of REF* runs — its
``clusterstack`` package, configs, stack files and ``infra/__main__.py``. The child runs this
package's ``plan/__main__.py`` via ``runpy`` (it relies only on ``Workspace.load``,
``plan_stack`` and ``dumps``, which every version has) and writes canonical plan JSON to stdout.
A subprocess, not an import, because the Pulumi SDK's mock runtime keeps process-global state
and Python caches modules: two versions of the program cannot run in one process.

When REF has no ``src/clusterstack`` (a configuration-only repository) the child falls back to
the installed package, and :attr:`RefPlans.code` says so. The worktree is removed on every path
(success, error, interrupt); a crash that skips even that leaves an entry that the next
``git worktree prune`` (run here after each removal) clears.

The head side is planned by the caller, in-process, while the child runs (:class:`RefPlanner`
starts the child first), so the two ~5 s Pulumi SDK imports overlap. git is run through the
one adapter, :class:`clusterstack.adapters.git.Git` (errors: :class:`GitError`, exit 2).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterstack.adapters.git import Git, GitError
from clusterstack.errors import ClusterstackError
from clusterstack.plan.model import StackPlan, loads
from clusterstack.workspace import WORKSPACE_FILE

_BOOT = ("import runpy, sys; driver = sys.argv[1]; sys.argv = [driver] + sys.argv[2:]; "
         "runpy.run_path(driver, run_name='__main__')")
_DRIVER = Path(__file__).resolve().parent / "__main__.py"


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


def resolve_ref(root: Path, ref: str, *, git: Git | None = None) -> tuple[Path, str]:
    """``(repository top level, full commit SHA)`` of ``ref`` in the repository holding ``root``.

    Raises GitError when ``root`` is not inside a git work tree or ``ref`` names no commit.
    """
    git = git or Git(root)
    return git.toplevel(), git.resolve(ref, field="--base")


def guard_section_at_ref(root: Path, ref: str, *, git: Git | None = None) -> dict[str, Any] | None:
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

    Raises GitError (bad ref / no repository) from :meth:`start`, and ClusterstackError from
    :meth:`result` when the program at REF fails (its own ``error:`` lines in the message).
    """

    def __init__(self, root: Path, ref: str, stacks: list[str] | None,
                 projects: str | list[str] | None = None, *, git: Git | None = None) -> None:
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

    def __enter__(self) -> "RefPlanner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Resolve REF, check it out in a temporary worktree and launch the planner child."""
        self._top, self._commit = resolve_ref(self.root, self.ref, git=self._git)
        rel = self.root.relative_to(self._top.resolve())
        # no hooks (the adapter's rule): a post-checkout hook must not run in a read-only diff
        tree = self._cleanup.enter_context(self._git.worktree(self._commit, prefix="clusterstack-diff-"))
        base_root = tree / rel
        if not (base_root / WORKSPACE_FILE).is_file():
            self._immediate = RefPlans(self.ref, self._commit, {}, workspace_present=False,
                                       code="ref")
            return
        src = tree / "src"
        env = dict(os.environ)
        code = "installed"
        if (src / "clusterstack" / "__init__.py").is_file():
            code = "ref"
            env["PYTHONPATH"] = os.pathsep.join(
                [str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["PYTHONSAFEPATH"] = "1"           # no cwd on sys.path: only PYTHONPATH + site
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the worktree
        self._code = code
        args = ["--root", str(base_root), "--skip-missing"]
        args += ["--all"] if self.stacks is None else list(self.stacks)
        if self.projects == "all":
            args.append("--with-projects")
        elif self.projects:
            args += [a for key in self.projects for a in ("--project", key)]
        self._proc = subprocess.Popen([sys.executable, "-c", _BOOT, str(_DRIVER), *args],
                                      cwd=base_root, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, encoding="utf-8")

    def result(self) -> RefPlans:
        """Wait for the child and parse its plans."""
        if self._immediate is not None:
            return self._immediate
        if self._proc is None:
            raise RuntimeError("RefPlanner.start() was not called")
        out, errtext = self._proc.communicate()
        if self._proc.returncode != 0:
            lines = [ln.removeprefix("error: ") for ln in errtext.strip().splitlines()
                     if ln.strip()]
            detail = "; ".join(lines[-5:]) if lines else f"exit code {self._proc.returncode}"
            raise ClusterstackError(f"planning at {self.ref} ({self._commit[:12]}) failed: {detail}",
                                    "the program or configs at that ref do not plan; pick "
                                    "another --base", field="--base")
        try:
            plans = loads(out)
        except ValueError as exc:
            raise ClusterstackError(f"planning at {self.ref} gave no plan: {exc}",
                                    "that ref's clusterstack is too old or too new to diff "
                                    "against", field="--base") from None
        from clusterstack.workspace import Workspace

        # Without projects every plan is a cluster stack (as before [projects] existed).
        cluster_project = Workspace.load(self.root).project_name if self.projects else None
        return RefPlans(self.ref, self._commit,
                        {p.stack: p for p in plans if cluster_project in (None, p.project)},
                        workspace_present=True, code=self._code,
                        project_plans={(p.project, p.stack): p for p in plans
                                       if cluster_project not in (None, p.project)})

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
