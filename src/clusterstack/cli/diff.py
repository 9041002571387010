"""``clusterstack diff``: the static plan diff (issue 3 §4), offline and without credentials.

    clusterstack diff CLUSTER… | --all  --base REF      [--json]
    clusterstack diff [CLUSTER]         --state FILE    [--json]

    clusterstack diff --project NAME…   --base REF      [--json]

Stacks are those of every project of the workspace (:meth:`Workspace.all_projects`): ``--all``
covers the cluster stacks and every ``[projects]`` project (buckets, github), ``--project NAME``
one of the latter; a ``--state`` file of another project is compared with that project's stack.

``--base REF`` plans the stacks as of REF in a temporary git worktree (with REF's own code, see
:mod:`clusterstack.plan.at_ref`) and the working tree in this process, then compares them per
stack (:func:`clusterstack.plan.diff.diff_plans`). ``--state FILE`` compares the working tree with
the last deployment in a ``pulumi stack export`` file or a file-backend checkpoint; the stack is
the one the state names (a CLUSTER, if given, must match it).

Output: per stack the resources added / removed / changed with property paths old → new
(secrets masked), then the destructive findings. Exit codes: 0 no destructive change; 3 at least
one destructive finding; 2 bad input (unknown REF, unknown cluster, unreadable state file).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer
from rich.text import Text

from clusterstack.cli import app, err, out, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.urn import name_of


_WIDTH = 160  # longest value shown in the text view; --json has every value in full


def _short(value) -> str:
    from clusterstack.plan.diff import render_value

    text = render_value(value)
    return text if len(text) <= _WIDTH else text[:_WIDTH - 1] + "…"


def _render_stack(d, base_label: str) -> None:
    """Print one stack's diff (a :class:`clusterstack.plan.diff.StackDiff`) with rich: header,
    added (+), removed (-), changed (~, or +- for a replacement) with property paths, options,
    stack outputs, then the DESTRUCTIVE findings. Long values are cut at 160 characters."""

    head = Text(f"stack {d.project}/{d.stack}", style="bold")
    if not d.base_present:
        head.append(f"  (new: not in {base_label})", style="green")
    elif not d.head_present:
        head.append("  (gone: not in the working tree)", style="red")
    head.append(f"  +{len(d.added)} -{len(d.removed)} ~{len(d.changed)}")
    out.print(head)
    if d.empty:
        out.print("  no changes")
    renamed_to = dict(d.renames)
    renamed_from = {n: o for o, n in d.renames}
    for r in d.added:
        line = Text(f"  + {r.type}  {r.name}", style="green")
        if r.urn in renamed_from:
            line.append(f"  (renamed from {name_of(renamed_from[r.urn])})")
        out.print(line)
    for r in d.removed:
        line = Text(f"  - {r.type}  {r.name}", style="red")
        if r.protect:
            line.append("  [protect]", style="yellow")
        if r.urn in renamed_to:
            line.append(f"  (renamed to {name_of(renamed_to[r.urn])})")
        out.print(line)
    for c in d.changed:
        out.print(Text(f"  {'+-' if c.replace else '~ '} {c.type}  {c.name}",
                       style="magenta" if c.replace else "yellow"))
        for p in c.properties:
            line = Text(f"      {p.path}: {_short(p.old)} → {_short(p.new)}")
            if p.forces_replace and not p.ignored:
                line.append("  (forces replacement)", style="bold red")
            if p.ignored:
                line.append("  (ignored: ignoreChanges)", style="dim")
            out.print(line)
        for o in c.options:
            out.print(Text(f"      [option] {o.option}: {_short(o.old)} → "
                           f"{_short(o.new)}", style="cyan"))
        for prov, key, o, n in c.provider_reasons:
            out.print(Text(f"      provider {name_of(prov)} {key}: {_short(o)} → "
                           f"{_short(n)}  (forces replacement)", style="bold red"))
    for p in d.outputs:
        out.print(Text(f"  output {p.path}: {_short(p.old)} → {_short(p.new)}",
                       style="dim"))
    for f in d.findings:
        out.print(Text(f"  {f.render()}", style="bold red"))
    out.print()


@app.command()
def diff(clusters: list[str] = typer.Argument(None, help="Clusters (= stacks) to compare."),
         all_: bool = typer.Option(False, "--all", help="Every stack on either side, of every "
                                   "project (the clusters, then [projects])."),
         projects: list[str] = typer.Option(None, "--project", metavar="NAME",
                                            help="Every stack of this [projects] project "
                                                 "(repeatable; e.g. buckets, github)."),
         base: str = typer.Option(None, "--base", metavar="REF",
                                  help="Git ref to compare the working tree against."),
         state: Path = typer.Option(None, "--state", metavar="FILE",
                                    help="`pulumi stack export` output or a file-backend "
                                         "checkpoint to compare the working tree against."),
         as_json: bool = typer.Option(False, "--json", help="Print the canonical JSON diff.")) -> None:
    """Static plan diff: what changes between REF (or a state file) and the working tree, and
    which changes would be destructive on apply (exit 3). Offline, no credentials."""
    from clusterstack.validation import load_cluster
    from clusterstack.guard import GuardPolicy
    from clusterstack.plan.diff import STATE_OPTIONS, diff_json, diff_plans, load_state_file
    from clusterstack.workspace import check_stacks

    names = list(dict.fromkeys(clusters or []))
    if (base is None) == (state is None):
        raise ClusterstackError("give exactly one of --base REF or --state FILE",
                                "e.g. `clusterstack diff --all --base origin/main`")
    if all_ and names:
        raise ClusterstackError("give cluster names or --all, not both", "drop one of them")
    if all_ and projects:
        raise ClusterstackError("give --project or --all, not both", "--all covers every project")
    ws = workspace()
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file)
    weakened: tuple[str, ...] = ()  # how the working tree's [guard] is weaker than REF's
    head_stacks = {p.stack for p in check_stacks(ws)}

    def plan_head(name: str):
        from clusterstack.plan import plan_stack
        load_cluster(ws, name)  # located config errors before any program runs
        return plan_stack(ws.project_dir, name)

    if state is not None:
        if all_ or len(names) > 1 or projects:
            raise ClusterstackError("a state file holds one stack", "name at most one cluster "
                                    "with --state (or none: the state names its stack and "
                                    "project)")
        base_plan = load_state_file(state)
        stack = base_plan.stack or (names[0] if names else "")
        if not stack:
            raise ClusterstackError("the state file has no resources to name its stack",
                                    "name the cluster: clusterstack diff CLUSTER --state FILE",
                                    file=state)
        if names and base_plan.stack and names[0] != base_plan.stack:
            raise ClusterstackError(f"the state file is of stack {base_plan.stack!r}, not "
                                    f"{names[0]!r}", "pass the matching cluster or state file",
                                    file=state)
        other = _other_project(ws, base_plan.project) if base_plan.project else None
        if base_plan.project and base_plan.project != ws.project_name and other is None:
            raise ClusterstackError(f"the state file is of project {base_plan.project!r}, this "
                                    f"workspace is {ws.project_name!r}",
                                    "pass a state file of this project", file=state)
        if other is not None:
            from clusterstack.plan import plan_stack
            from clusterstack.workspace import ProjectInfo
            if stack not in ProjectInfo.load(other).stacks():
                raise ClusterstackError(f"unknown stack {stack!r} of project {base_plan.project}",
                                        f"it has no Pulumi.{stack}.yaml in {other.name}/")
            head_plan = plan_stack(other, stack)
        elif stack not in head_stacks:
            raise ClusterstackError(f"unknown cluster {stack!r}", "it has no stack file in "
                                    f"{ws.project_dir.name}/ (clusterstack stacks lists them)")
        else:
            head_plan = plan_head(stack)
        base_plan = dataclasses.replace(base_plan, project=head_plan.project, stack=stack)
        diffs = [diff_plans(base_plan if base_plan.resources else None, head_plan, policy,
                            options=STATE_OPTIONS)]
        meta = {"kind": "state", "file": str(state)}
        label = str(state)
    else:
        if not all_ and not names and not projects:
            raise ClusterstackError("no cluster given", "name one or more clusters, or pass --all")
        from clusterstack.cli.commands import project_stacks
        from clusterstack.plan import plan_stack
        from clusterstack.plan.at_ref import RefPlanner, guard_section_at_ref

        # the change may not relax the guard that judges it: classify with the stricter of
        # REF's and the working tree's [guard], and report a weakened policy as destructive
        base_section = guard_section_at_ref(ws.root, base)
        if base_section is not None:
            base_policy = GuardPolicy.from_toml(base_section, file=Path(f"{base}:clusterstack.toml"))
            weakened = policy.weakened_from(base_policy)
            policy = policy.union(base_policy)

        what = "every stack" if all_ else ", ".join(names + [f"project {p}" for p in projects or []])
        keys = "all" if all_ else list(projects or []) or None
        with RefPlanner(ws.root, base, None if all_ else names, projects=keys) as planner, \
                err.status(f"planning {what} at {base} and in the working tree…"):
            planner.start()
            head_names = sorted(head_stacks) if all_ else [n for n in names if n in head_stacks]
            head = {n: plan_head(n) for n in head_names}
            head_projects = {(p.project, p.stack): p for p in (
                plan_stack(d, st) for d, st in (project_stacks(ws, None if all_ else projects)
                                                if keys else []))}
            at_ref = planner.result()
        wanted = sorted(set(head) | set(at_ref.plans)) if all_ else names
        unknown = [n for n in wanted if n not in head and n not in at_ref.plans]
        if unknown:
            raise ClusterstackError(f"unknown cluster {unknown[0]!r}: no stack file in the "
                                    f"working tree nor at {base}",
                                    "check the name (clusterstack stacks lists them)")
        if not at_ref.workspace_present:
            err.print(f"note: {base} has no clusterstack.toml for this workspace: every stack is new")
        elif at_ref.code == "installed":
            err.print(f"note: {base} has no src/clusterstack; planned it with the installed "
                      "clusterstack")
        diffs = [diff_plans(at_ref.plans.get(n), head.get(n), policy) for n in wanted]
        diffs += [diff_plans(at_ref.project_plans.get(k), head_projects.get(k), policy)
                  for k in sorted(set(head_projects) | set(at_ref.project_plans))]
        meta = {"kind": "git", "ref": base, "commit": at_ref.commit}
        label = base

    findings = sum(len(d.findings) for d in diffs) + len(weakened)
    if as_json:
        out.file.write(diff_json(diffs, meta, weakened))
    else:
        for d in diffs:
            _render_stack(d, label)
        for line in weakened:
            out.print(Text(f"  DESTRUCTIVE [guard] policy weakened against {base} "
                           f"(clusterstack.toml): {line} — the guard judged this diff with "
                           f"{base}'s stricter rule; weakening the guard is itself a "
                           "destructive change: review it on its own",
                           style="bold red"))
        if not findings:
            err.print("no destructive change")
    if findings:
        raise DestructiveChanges(findings, as_json)


def _other_project(ws, pulumi_name: str) -> Path | None:
    """The directory of the ``[projects]`` project whose Pulumi.yaml ``name:`` is
    ``pulumi_name`` (None when none is)."""
    from clusterstack.workspace import ProjectInfo

    for ref in ws.projects:
        if (ref.directory / "Pulumi.yaml").is_file() and \
                ProjectInfo.load(ref.directory).name == pulumi_name:
            return ref.directory
    return None


class DestructiveChanges(ClusterstackError):
    """The diff found destructive changes: exit code 3 (:data:`clusterstack.guard.GUARD_EXIT_CODE`)."""

    def __init__(self, count: int, as_json: bool) -> None:
        from clusterstack.guard import GUARD_EXIT_CODE

        self.exit_code = GUARD_EXIT_CODE
        where = 'see "findings" in the JSON above' if as_json else "see the DESTRUCTIVE lines above"
        super().__init__(f"{count} destructive change(s) on apply",
                         f"{where}; `clusterstack preview`/`up` block them on the cluster "
                         "stacks; for a [projects] project (buckets, github) run `clusterstack "
                         "guard` on its saved `pulumi preview --json` (docs/buckets.md)")
