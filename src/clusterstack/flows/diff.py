"""The static plan diff (``clusterstack diff``), offline and without credentials: the working
tree against a git ref or against a state file.

Stacks are those of every project of the workspace (:meth:`Workspace.all_projects`): ``all_``
covers the cluster stacks and every ``[projects]`` project (buckets, github), ``projects`` some
of the latter; a state file of another project is compared with that project's stack.

- :func:`diff_ref` plans the stacks as of REF in a temporary git worktree (with REF's own code:
  in this process when that is the running package, else in a child interpreter; each REF
  stack's plan cached per stack, see :mod:`clusterstack.plan.cache`; when every one is cached,
  read through git's objects without a worktree) and the working tree in this process, then
  compares them
  per stack (:func:`clusterstack.plan.diff.diff_plans`). The change may not relax the guard that
  judges it: the stricter of REF's and the working tree's ``[guard]`` classifies, and a
  weakened policy is itself reported (``weakened``).
- :func:`diff_state` compares the working tree with the last deployment in a ``pulumi stack
  export`` file or a file-backend checkpoint; the stack is the one the state names (a name, if
  given, must match it).

Both return a :class:`DiffResult`; the caller renders it and exits 3 when ``findings`` > 0.
Bad input (unknown REF, unknown cluster, unreadable state file) raises ClusterstackError
(exit 2) before any program runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from clusterstack.clients import Clients
from clusterstack.errors import ClusterstackError
from clusterstack.workspace import ProjectInfo, Workspace, check_stacks
from clusterstack.flows.plan import check_before_planning, one_load_per_file, project_stacks
from clusterstack.flows.intent import intent_rules
from clusterstack.guard import GuardPolicy
from clusterstack.inventory import CapacityChange, capacity_change
from clusterstack.config.types import STACK_NAME_RE

if TYPE_CHECKING:  # the git adapter comes from Clients; plan/ (the Pulumi SDK's mock runtime) is
    # imported where a diff plans
    from clusterstack.adapters.git import GitRepo
    from clusterstack.plan.diff import StackDiff
    from clusterstack.plan.model import StackPlan

Report = Callable[[str], None]


def _quiet(_line: str) -> None:
    pass


def _no_progress(_text: str) -> ContextManager[object]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class DiffResult:
    """``diffs``: one :class:`clusterstack.plan.diff.StackDiff` per stack (clusters by name,
    then the ``[projects]`` stacks by (project, stack)); ``base``: what was compared against —
    ``{"kind": "git", "ref", "commit"}`` or ``{"kind": "state", "file"}`` (the ``base`` of the
    JSON document); ``label``: the base as shown in text (the ref or the file); ``weakened``:
    how the working tree's ``[guard]`` is weaker than REF's (each a destructive finding)."""

    diffs: tuple[StackDiff, ...]
    base: dict[str, Any]
    label: str
    weakened: tuple[str, ...] = ()
    #: what the change does to the fleet (:class:`clusterstack.inventory.CapacityChange`, one per
    #: stack whose capacity changes)
    capacity_changes: tuple[CapacityChange, ...] = ()

    @property
    def capacity(self) -> tuple[str, ...]:
        """The capacity changes in words, one line per stack (what ``diff`` prints)."""
        return tuple(line for c in self.capacity_changes for line in c.lines())

    def to_json(self) -> str:
        """The canonical JSON of the run (:func:`clusterstack.plan.diff.diff_json`), with
        ``capacity``: the same facts as :attr:`capacity` per stack
        (:meth:`clusterstack.inventory.CapacityChange.to_json`)."""
        from clusterstack.plan.diff import diff_json

        return diff_json(list(self.diffs), self.base, list(self.weakened),
                         capacity=[c.to_json() for c in self.capacity_changes])

    @property
    def findings(self) -> int:
        """Destructive findings in all: the stacks' and one per weakened guard rule."""
        return sum(len(d.findings) for d in self.diffs) + len(self.weakened)


def _policy(ws: Workspace) -> GuardPolicy:
    return ws.guard


def _plan_cluster(ws: Workspace, name: str) -> StackPlan:
    from clusterstack.plan import plan_stack

    with one_load_per_file():  # the checks and the program: each cluster file loaded once
        check_before_planning(ws, [name])  # located config errors before any program runs
        return plan_stack(ws.project_dir, name)


def other_project(ws: Workspace, pulumi_name: str) -> Path | None:
    """The directory of the ``[projects]`` project whose Pulumi.yaml ``name:`` is
    ``pulumi_name`` (None when none is)."""
    for ref in ws.projects:
        if (ref.directory / "Pulumi.yaml").is_file() and \
                ProjectInfo.load(ref.directory).name == pulumi_name:
            return ref.directory
    return None


def diff_state(ws: Workspace, state: Path, name: str | None = None) -> DiffResult:
    """The working tree against the deployment recorded in ``state`` (a ``pulumi stack
    export`` document or a file-backend checkpoint). ``name``: the stack, when the state has no
    resources to name it (it must match the state's otherwise). Raises ClusterstackError for an
    unreadable state, a stack or project this workspace does not have, or a mismatch."""
    from clusterstack.plan import plan_stack
    from clusterstack.plan.diff import STATE_OPTIONS, diff_plans, load_state_file

    policy = _policy(ws)
    head_stacks = {p.stack for p in check_stacks(ws)}
    base_plan = load_state_file(state)
    stack = base_plan.stack or (name or "")
    if not stack:
        raise ClusterstackError("the state file has no resources to name its stack",
                                "name the cluster: clusterstack diff CLUSTER --state FILE",
                                file=state)
    if name and base_plan.stack and name != base_plan.stack:
        raise ClusterstackError(f"the state file is of stack {base_plan.stack!r}, not "
                                f"{name!r}", "pass the matching cluster or state file",
                                file=state)
    other = other_project(ws, base_plan.project) if base_plan.project else None
    if base_plan.project and base_plan.project != ws.project_name and other is None:
        raise ClusterstackError(f"the state file is of project {base_plan.project!r}, this "
                                f"workspace is {ws.project_name!r}",
                                "pass a state file of this project; to adopt another project's "
                                "stack, map it first: `clusterstack import migrate CLUSTER "
                                f"--export {state} -o <file>`, then diff that file", file=state)
    if other is not None:
        if stack not in ProjectInfo.load(other).stacks():
            raise ClusterstackError(f"unknown stack {stack!r} of project {base_plan.project}",
                                    f"it has no Pulumi.{stack}.yaml in {other.name}/")
        head_plan = plan_stack(other, stack)
    elif stack not in head_stacks:
        raise ClusterstackError(f"unknown cluster {stack!r}", "it has no stack file in "
                                f"{ws.project_dir.name}/ (clusterstack stacks lists them)")
    else:
        head_plan = _plan_cluster(ws, stack)
    base_plan = dataclasses.replace(base_plan, project=head_plan.project, stack=stack)
    diff = diff_plans(base_plan if base_plan.resources else None, head_plan, policy,
                      options=STATE_OPTIONS, intents=intent_rules(ws, stack) if other is None else ())
    change = capacity_change(base_plan if base_plan.resources else None, head_plan, ws.prices)
    return DiffResult((diff,), {"kind": "state", "file": str(state)}, str(state),
                      capacity_changes=(change,) if change is not None else ())


def diff_ref(ws: Workspace, base: str, names: list[str], *, clients: Clients, all_: bool = False,
             projects: list[str] | None = None, warn: Report = _quiet,
             progress: Callable[[str], ContextManager[object]] = _no_progress,
             cache: bool = True) -> DiffResult:
    """The working tree against git ref ``base``: the cluster stacks ``names`` (every stack on
    either side with ``all_``) and the stacks of the ``[projects]`` projects ``projects``
    (every project with ``all_``). ``warn`` gets the notes on how REF was planned; ``progress``
    wraps the planning; ``cache``: use the per-stack plan cache for REF's plans
    (:class:`clusterstack.plan.at_ref.RefPlanner`). Raises GitError (unknown ref, not a repository), ClusterstackError for
    a cluster on neither side or a program that does not plan at REF."""
    from clusterstack.plan import plan_stack
    from clusterstack.plan.at_ref import RefPlanner, guard_section_at_ref
    from clusterstack.plan.diff import diff_plans, pair_stack_renames, renamed_plan

    policy = _policy(ws)
    weakened: tuple[str, ...] = ()
    head_stacks = {p.stack for p in check_stacks(ws)}
    git = clients.git(ws.root)
    # the change may not relax the guard that judges it: classify with the stricter of
    # REF's and the working tree's [guard], and report a weakened policy as destructive
    base_section = guard_section_at_ref(ws.root, base, git=git)
    if base_section is not None:
        base_policy = GuardPolicy.from_toml(base_section, file=Path(f"{base}:clusterstack.toml"),
                                            check_tokens=False)   # REF's own token table
        weakened = tuple(policy.weakened_from(base_policy))
        policy = policy.union(base_policy)

    keys = "all" if all_ else list(projects or []) or None
    # a named cluster on one side only may be a renamed one (`stack rename`): the stacks on the
    # other side only are planned too, so `diff NEW` and `diff OLD` pair them as `--all` does
    extra_ref, extra_head = ([], []) if all_ else _rename_counterparts(ws, git, base, names, head_stacks)
    head_names = sorted(head_stacks) if all_ else [n for n in names + extra_head if n in head_stacks]
    head_others = project_stacks(ws, None if all_ else projects) if keys else []
    what = "every stack" if all_ else ", ".join(names + [f"project {p}" for p in projects or []])
    # the working tree's checks and programs load each cluster file once; the block closes
    # before REF is planned in this process, whose loads must read REF's files, never these
    with contextlib.ExitStack() as head_loads:
        head_loads.enter_context(one_load_per_file())
        check_before_planning(ws, head_names, head_others)   # as plan: nothing validate refuses
        with RefPlanner(ws.root, base, None if all_ else names + extra_ref, projects=keys, git=git,
                        cache=cache) as planner, \
                progress(f"planning {what} at {base} and in the working tree…"):
            planner.start()
            head = {n: plan_stack(ws.project_dir, n) for n in head_names}
            head_projects = {(p.project, p.stack): p for p in (
                plan_stack(d, st) for d, st in head_others)}
            intents = {n: intent_rules(ws, n) for n in head}
            head_loads.close()
            at_ref = planner.result()
    wanted = sorted(set(head) | set(at_ref.plans)) if all_ else names
    unknown = [n for n in wanted if n not in head and n not in at_ref.plans]
    if unknown:
        raise ClusterstackError(f"unknown cluster {unknown[0]!r}: no stack file in the "
                                f"working tree nor at {base}",
                                "check the name (clusterstack stacks lists them)")
    if not at_ref.workspace_present:
        warn(f"note: {base} has no clusterstack.toml for this workspace: every stack is new")
    elif at_ref.code == "installed" and (ws.root / "src" / "clusterstack").is_dir():
        # only news where the working tree carries the package (clusterstack's own repository):
        # a lab's repository never has it, and every diff there is planned this way
        warn(f"note: {base} has no src/clusterstack; planned it with the installed clusterstack")
    # a cluster renamed (its stack on each side under another name) is one stack: compared as
    # `pulumi stack rename` leaves its state, never as every resource deleted and re-created
    pool = wanted + extra_ref + extra_head
    renamed = {old: new for old, new in pair_stack_renames(
        {n: at_ref.plans[n] for n in pool if n in at_ref.plans and n not in head},
        {n: head[n] for n in pool if n in head and n not in at_ref.plans})
        if old in wanted or new in wanted}
    # the pair is shown once, under its new name, whichever of the two names was asked for
    wanted = [n for n in wanted if n not in renamed] + sorted(
        new for new in renamed.values() if new not in wanted)
    base_of = {n: at_ref.plans.get(n) for n in wanted if n not in renamed}
    base_of.update({new: renamed_plan(at_ref.plans[old], new) for old, new in renamed.items()})
    diffs = [dataclasses.replace(diff_plans(base_of[n], head.get(n), policy,
                                            intents=intents.get(n, ())),
                                 renamed_from={v: k for k, v in renamed.items()}.get(n))
             for n in wanted if n not in renamed]
    diffs += [diff_plans(at_ref.project_plans.get(k), head_projects.get(k), policy)
              for k in sorted(set(head_projects) | set(at_ref.project_plans))]
    capacity = tuple(c for c in (capacity_change(base_of[n], head.get(n), ws.prices) for n in wanted
                                 if n not in renamed) if c is not None)
    return DiffResult(tuple(diffs), {"kind": "git", "ref": base, "commit": at_ref.commit}, base, weakened,
                      capacity)


def _rename_counterparts(ws: Workspace, git: GitRepo, base: str, names: list[str],
                         head_stacks: set[str]) -> tuple[list[str], list[str]]:
    """For ``diff NAME…`` without ``--all``: the cluster stacks that could be the other half of
    a rename of a named one — ``(at base only, in the working tree only)``. A named stack in
    the working tree but not at ``base`` may be a stack renamed from one at ``base`` only, and
    the reverse; those are planned too, and :func:`pair_stack_renames` decides. Both lists are
    empty when every named stack is on both sides (no extra planning). The stacks at ``base``
    are its ``Pulumi.<stack>.yaml`` files in the project directory (``git ls-tree``, no
    checkout: :func:`clusterstack.workspace.projects.stack_names`' rule). Raises GitError
    for an unknown ``base``."""
    try:
        prefix = git.rel(ws.project_dir) + "/"
    except ValueError:   # the project is outside the repository: nothing at base to pair with
        return [], []
    prefix = "" if prefix == "./" else prefix
    at_base = set()
    for path, entry in git.tree(git.resolve(base, field="--base")).items():
        rest = path[len(prefix):] if path.startswith(prefix) else ""
        if entry.kind == "blob" and "/" not in rest and rest.startswith("Pulumi.") and rest.endswith(".yaml"):
            name = rest[len("Pulumi."):-len(".yaml")]
            if STACK_NAME_RE.match(name):
                at_base.add(name)
    asked = set(names)
    ref_only = sorted(at_base - head_stacks - asked) if any(
        n in head_stacks and n not in at_base for n in names) else []
    head_only = sorted(head_stacks - at_base - asked) if any(
        n in at_base and n not in head_stacks for n in names) else []
    return ref_only, head_only


def diff(ws: Workspace, *, clients: Clients, names: list[str], all_: bool = False,
         projects: list[str] | None = None, base: str | None = None, state: Path | None = None,
         warn: Report = _quiet, progress: Callable[[str], ContextManager[object]] = _no_progress,
         cache: bool = True) -> DiffResult:
    """``clusterstack diff``: check the combination of arguments, then :func:`diff_ref` or
    :func:`diff_state`. Raises ClusterstackError (exit 2) for exactly-one-of ``base``/``state``
    not given, names with ``all_``, ``projects`` with ``all_``, more than one stack with a
    state file, or no stack at all."""
    names = list(dict.fromkeys(names))
    if (base is None) == (state is None):
        raise ClusterstackError("give exactly one of --base REF or --state FILE",
                                "e.g. `clusterstack diff --all --base origin/main`")
    if all_ and names:
        raise ClusterstackError("give cluster names or --all, not both", "drop one of them")
    if all_ and projects:
        raise ClusterstackError("give --project or --all, not both", "--all covers every project")
    if state is not None:
        if all_ or len(names) > 1 or projects:
            raise ClusterstackError("a state file holds one stack", "name at most one cluster "
                                    "with --state (or none: the state names its stack and "
                                    "project)")
        return diff_state(ws, state, names[0] if names else None)
    if not all_ and not names and not projects:
        raise ClusterstackError("no cluster given", "name one or more clusters, or pass --all")
    assert base is not None
    return diff_ref(ws, base, names, clients=clients, all_=all_, projects=list(projects or []),
                    warn=warn, progress=progress, cache=cache)

