"""``clusterstack diff``: the static plan diff, offline and without credentials.

    clusterstack diff CLUSTER… | --all  [--base REF]    [--json] [--no-cache]
    clusterstack diff [CLUSTER]         --state FILE    [--json]

    clusterstack diff --project NAME…   --base REF      [--json]

Stacks are those of every project of the workspace (:meth:`Workspace.all_projects`): ``--all``
covers the cluster stacks and every ``[projects]`` project (buckets, github), ``--project NAME``
one of the latter; a ``--state`` file of another project is compared with that project's stack.

``--base REF`` (default: ``[workspace] release_branch``, :func:`default_base`) plans the stacks as of REF in a temporary git worktree (with REF's own code, see
:mod:`clusterstack.plan.at_ref`: in-process when that is the running package, else a child;
REF's plans are cached per stack under the workspace root's ``.clusterstack-cache/`` —
``--no-cache`` plans afresh) and the working tree in this process, then compares them per stack (:func:`clusterstack.plan.diff.diff_plans`). ``--state FILE`` compares the working tree with
the last deployment in a ``pulumi stack export`` file or a file-backend checkpoint; the stack is
the one the state names (a CLUSTER, if given, must match it). The flow is
:func:`clusterstack.flows.diff.diff`; this module renders its result.

Output: per stack the resources added / removed / changed with property paths old → new
(secrets masked), then the destructive findings. Exit codes: 0 no destructive change; 3 at least
one destructive finding; 2 bad input (unknown REF, unknown cluster, unreadable state file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer
from rich.text import Text

from clusterstack.cli import clients, err, out, status, warn, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.flows.diff import diff as diff_flow
from clusterstack.guard import GUARD_EXIT_CODE
from clusterstack.plan.diff import render_value
from clusterstack.pulumi.urn import name_of

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


def _short(value) -> str:
    """A value for the text view, whole: a review never crops (a long value is one long line;
    lists the receiving system keys are split into one line per leaf)."""
    return render_value(value)


def _render_stack(d, base_label: str) -> None:
    """Print one stack's diff (a :class:`clusterstack.plan.diff.StackDiff`) with rich: header,
    added (+), removed (-), changed (~, or +- for a replacement) with property paths, options,
    stack outputs, then the DESTRUCTIVE findings. Values are shown whole."""

    head = Text(f"stack {d.project}/{d.stack}", style="bold")
    if d.renamed_from:
        head.append(f"  (renamed from {d.renamed_from}: compared as `pulumi stack rename` leaves "
                    f"its state; `clusterstack stack rename {d.renamed_from} {d.stack}` moves it)",
                    style="cyan")
    elif not d.base_present:
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
            if p.note == "order":
                line.append("  (order of the items)")
            if p.size:
                line.append(f"  ({p.size})")
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
    for f in d.intended:   # let through by a reviewed intent of the cluster file
        entry, *rest = f.render().splitlines()
        out.print(Text(f"  {entry}", style="bold yellow"))
        for line in rest:
            out.print(Text(f"  {line}"))
    for f in d.findings:   # the entry on one line, then what to do (guard.entry_lines)
        entry, *todo = f.render().splitlines()
        out.print(Text(f"  {entry}", style="bold red"))
        for line in todo:
            out.print(Text(f"  {line}"))
    out.print()


@app.command()
def diff(clusters: list[str] = typer.Argument(None, help="Clusters (= stacks) to compare."),
         all_: bool = typer.Option(False, "--all", help="Every stack on either side, of every "
                                   "project (the clusters, then [projects])."),
         projects: list[str] = typer.Option(None, "--project", metavar="NAME",
                                            help="Every stack of this [projects] project "
                                                 "(repeatable; e.g. buckets, github)."),
         base: str = typer.Option(None, "--base", metavar="REF",
                                  help="Git ref to compare the working tree against (default: "
                                       "[workspace] release_branch, e.g. main — or "
                                       "origin/<it> when there is no local branch of that name)."),
         state: Path = typer.Option(None, "--state", metavar="FILE",
                                    help="`pulumi stack export` output or a file-backend "
                                         "checkpoint to compare the working tree against."),
         as_json: bool = typer.Option(False, "--json", help="Print the canonical JSON diff."),
         no_cache: bool = typer.Option(False, "--no-cache",
                                       help="Plan REF afresh: neither read nor write the plan "
                                            "cache (.clusterstack-cache/).")) -> None:
    """Static plan diff: what changes between REF (or a state file) and the working tree, and
    which changes would be destructive on apply (exit 3). Offline, no credentials."""
    ws = workspace()
    if base is None and state is None:
        base = default_base(ws)
        if not as_json:
            warn(f"comparing with {base} ([workspace] release_branch; --base REF for another)")
    result = diff_flow(ws, clients=clients(), names=clusters or [], all_=all_,
                       projects=list(projects or []), base=base, state=state, warn=warn,
                       progress=status(as_json), cache=not no_cache)
    if as_json:
        out.file.write(result.to_json())
    else:
        for d in result.diffs:
            _render_stack(d, result.label)
        for line in result.weakened:
            out.print(Text(f"  DESTRUCTIVE [guard] policy weakened against {base} "
                           f"(clusterstack.toml): {line} — the guard judged this diff with "
                           f"{base}'s stricter rule; weakening the guard is itself a "
                           "destructive change: review it on its own",
                           style="bold red"))
        for line in result.capacity:   # what the change does to the fleet, in words
            out.print(Text(f"capacity {line}", style="bold"))
        if not result.findings:
            err.print("no destructive change")
    if result.findings:
        in_projects = sorted({d.project for d in result.diffs
                              if d.findings and d.project != ws.project_name})
        raise DestructiveChanges(result.findings, as_json, in_projects)


def default_base(ws) -> str:
    """The ref ``diff`` compares against without ``--base``: ``[workspace] release_branch``
    when it names a commit here, else ``origin/<release_branch>`` when that does (a CI checkout
    of a pull request often has only the remote-tracking branch), else the name as given (the
    diff then says it is unknown, exit 2)."""
    git = clients().git(ws.root)
    branch = ws.release_branch
    return next((ref for ref in (branch, f"origin/{branch}") if git.commit_of(ref)), branch)


class DestructiveChanges(ClusterstackError):
    """The diff found destructive changes: exit code 3 (:data:`clusterstack.guard.GUARD_EXIT_CODE`).
    ``projects``: the ``[projects]`` projects (not the cluster project) with findings — only
    they need the `guard` route, and only they are named."""

    def __init__(self, count: int, as_json: bool, projects: Sequence[str] = ()) -> None:
        self.exit_code = GUARD_EXIT_CODE
        where = 'see "findings" in the JSON above' if as_json else "see the DESTRUCTIVE lines above"
        route = "`clusterstack preview`/`up` block them on the cluster stacks"
        if projects:
            route += (f"; for {', '.join(projects)} (a [projects] project) run `clusterstack guard` "
                      "on its saved `pulumi preview --json` (docs/buckets.md)")
        super().__init__(f"{count} destructive change(s) on apply", f"{where}; {route}")
