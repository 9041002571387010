"""Commands that talk to the Pulumi engine: ``preview``, ``up``, ``stack init``, ``stack ls``.

Every command gets its engine from :func:`engine_factory` (tests replace it with a
:class:`clusterstack.engine.fake.FakeEngine`); nothing here runs the Pulumi CLI directly.

Safety rules of ``up`` (issue 3 §3), in order:

1. preview, then the guard over the preview: any violation blocks (exit 3, nothing applied);
2. the grouped diff and a summary line naming the git commit;
3. not a clean checkout of ``[workspace] release_branch``: the operator must type
   ``<stack>@<commit>`` — there is no flag or variable that skips this;
4. confirmation: type the stack name; ``--yes`` skips it only when the guard is clean, i.e.
   no violation *and* no destructive change at all (an allowed replace/delete still asks);
5. the update, with every step event checked again by the same guard; a guarded step
   cancels the update at once (exit 3).
"""

from __future__ import annotations

import json
from typing import Callable

import typer

from clusterstack.cli import app, err, out, workspace
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.workspace import Workspace


def default_engine_factory(ws: Workspace):
    """The production engine (Pulumi Automation API) for ``ws``."""
    from clusterstack.engine import open_engine

    return open_engine(ws)


engine_factory: Callable[[Workspace], object] = default_engine_factory
"""Returns the :class:`clusterstack.engine.Engine` the commands use; tests monkeypatch it."""


def ask(prompt: str) -> str | None:
    """Print ``prompt`` on stderr and read one line from stdin; None when stdin is closed
    (no terminal, CI): a confirmation that cannot be typed is a refusal."""
    err.print(prompt, end="", markup=False)
    try:
        return input().strip()
    except EOFError:
        err.print()
        return None


def _stacks(ws: Workspace, names: list[str], all_: bool) -> list[str]:
    """Validate the requested stacks against the stack pointer files and cluster configs
    (offline, before any engine call) and return them in order."""
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import check_stacks

    pointers = check_stacks(ws)
    known = [p.stack for p in pointers]
    if all_ and names:
        raise ClusterstackError("give cluster names or --all, not both", "drop one of them")
    selected = known if all_ else names
    if not selected:
        raise ClusterstackError("no cluster given", "name one or more clusters, or pass --all")
    for name in selected:
        if name not in known:
            raise ConfigError(f"unknown cluster {name!r}",
                              f"known: {', '.join(known) or 'none'}; add clusters/{name}.yaml and run "
                              f"`clusterstack stack init {name}`", field="cluster")
        load_cluster(ws, name)  # config errors as file:line, before the program runs
    return list(dict.fromkeys(selected))


def _print(lines: list[str], console=None) -> None:
    for line in lines:
        (console or out).print(line, markup=False)


@app.command()
def preview(clusters: list[str] = typer.Argument(None, help="Clusters (= stacks) to preview."),
            all_: bool = typer.Option(False, "--all", help="Preview every stack."),
            refresh: bool = typer.Option(False, "--refresh", help="Refresh state from the cloud first."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON (changes + guard verdict).")) -> None:
    """Engine preview per stack: grouped diff, then the guard verdict. Exit 3 on any violation."""
    from clusterstack.engine.render import preview_json, render_changes, render_verdict
    from clusterstack.guard import GuardBlocked, GuardPolicy, Verdict, check

    ws = workspace()
    names = _stacks(ws, clusters or [], all_)
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file)
    engine = engine_factory(ws)
    docs, violations = [], []
    for i, name in enumerate(names, 1):
        with err.status(f"previewing {name} ({i}/{len(names)})…"):
            result = engine.preview(name, refresh=refresh)
        verdict = check(result.steps, policy)
        violations.extend(verdict.violations)
        if as_json:
            docs.append(preview_json(result, verdict))
        else:
            _print(render_changes(result) + render_verdict(verdict))
            out.print()
    if as_json:
        out.file.write(json.dumps({"stacks": docs}, indent=2, sort_keys=True) + "\n")
    if violations:
        raise GuardBlocked(Verdict(violations=tuple(violations)))


@app.command()
def up(cluster: str = typer.Argument(..., help="Cluster (= stack) to update."),
       yes: bool = typer.Option(False, "--yes", "-y",
                                help="Skip typing the stack name — only when the preview has no "
                                     "destructive change at all."),
       message: str = typer.Option(None, "--message", "-m",
                                   help="Update message (the git commit is appended).")) -> None:
    """Preview → guard → summary → confirmation → update, with every step checked again."""
    from clusterstack.engine.provenance import git_state
    from clusterstack.guard import GuardPolicy

    ws = workspace()
    [name] = _stacks(ws, [cluster], False)
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file)
    guarded_up(engine_factory(ws), name, policy=policy, git=git_state(ws.root),
               release_branch=ws.release_branch, yes=yes,
               message=message or f"clusterstack up {name}")


def guarded_up(engine, name: str, *, policy, git, release_branch: str, yes: bool, message: str,
               confirm: str | None = None):
    """The safety flow of ``up`` (module docstring, rules 1–5) over any engine and stack:
    preview → guard → summary → release-branch check → typed confirmation → update with every
    step checked again. Shared by ``up`` and ``deploy <service> rollout`` (factored out of
    ``up`` for issue 6, unchanged in behaviour).

    ``message``: the update message (the git provenance is appended); ``confirm``: the phrase
    the operator types (default: the stack name). Returns the :class:`UpResult`, or None when
    the preview shows nothing to update. Raises GuardBlocked (exit 3), ClusterstackError when
    not confirmed (exit 2), and the engine's typed errors (UpdateCancelledError exit 3, …).
    """
    from clusterstack.engine.errors import UpdateCancelledError
    from clusterstack.engine.render import render_changes, render_verdict
    from clusterstack.guard import GuardBlocked, check

    phrase_name = confirm or name
    with err.status(f"previewing {name}…"):
        result = engine.preview(name)
    verdict = check(result.steps, policy)
    _print(render_changes(result) + render_verdict(verdict))
    if not verdict.ok:
        raise GuardBlocked(verdict)
    if not result.has_changes:
        out.print(f"{name}: nothing to update")
        return None
    out.print(f"update {name} from {git.describe()}", markup=False)

    if not git.is_release(release_branch):
        why = []
        if git.commit is None:
            why.append("no git commit to record")
        elif git.branch != release_branch:
            why.append(f"branch {git.branch or '(detached HEAD)'} is not the release branch {release_branch}")
        if git.dirty:
            why.append("the working tree has uncommitted changes")
        phrase = f"{phrase_name}@{git.short}"
        err.print(f"WARNING: not a clean checkout of {release_branch}: {'; '.join(why)}.", markup=False)
        err.print("An update from here puts unreviewed code on the stack. --yes does not skip this.",
                  markup=False)
        if ask(f"type '{phrase}' to update from this tree anyway: ") != phrase:
            raise ClusterstackError("update from an unreleased tree not confirmed; nothing was applied",
                                    f"merge to {release_branch} and update from a clean checkout, or "
                                    f"type '{phrase}' exactly", field=f"stack {name}")

    clean = verdict.ok and not verdict.destructive
    what = "stack name" if confirm is None else "name"
    if not (yes and clean):
        if yes:
            err.print(f"--yes ignored: the update replaces or deletes {len(verdict.destructive)} "
                      f"resource(s); type the {what} to confirm.", markup=False)
        if ask(f"type the {what} ({phrase_name}) to update it: ") != phrase_name:
            raise ClusterstackError("update not confirmed; nothing was applied",
                                    f"type the {what} `{phrase_name}` exactly to confirm", field=f"stack {name}")

    update_message = f"{message} [clusterstack: {git.describe()}]"
    blocked = []

    def on_step(step) -> bool:
        if step.op != "same":
            out.print(f"  {step.op:<18} {step.urn}", markup=False)
        v = check([step], policy)
        if not v.ok:
            blocked.extend(v.violations)
            for viol in v.violations:
                err.print(viol.render(), markup=False)
            return False
        return True

    try:
        res = engine.up(name, message=update_message, on_step=on_step)
    except UpdateCancelledError:
        err.print(f"{name}: update cancelled by the guard at a step the preview did not show "
                  "(the state changed between preview and update)", markup=False)
        raise
    if blocked:  # an engine that ignored the stop request: steps may have been applied
        raise GuardBlocked(check(res.steps, policy),
                           hint="the update did not stop at the guarded step and steps were applied; "
                                "run `clusterstack preview` now and reconcile the config with reality")
    changes = ", ".join(f"{n} {op}" for op, n in sorted(res.counts.items()) if op != "same") or "no changes"
    version = f" (version {res.version})" if res.version is not None else ""
    out.print(f"{name}: update {res.result}{version}: {changes}", markup=False)
    return res


stack_app = typer.Typer(no_args_is_help=True, help="Create and list stacks in the state backend.")
app.add_typer(stack_app, name="stack")


@stack_app.command("init")
def stack_init(cluster: str = typer.Argument(..., help="Cluster to create the stack for.")) -> None:
    """Create the cluster's stack with the configured secrets provider, then make its pointer
    file (``infra/Pulumi.<cluster>.yaml``) name the cluster.

    Order (docs/making-a-change.md): every check first (known cluster, an existing pointer names
    this cluster), then the stack is created/selected in the backend, and only after that
    succeeded is the pointer written (atomically, merged with what ``pulumi stack init`` wrote to
    the same file). A failure — no passphrase, no Pulumi CLI, an unreachable backend — leaves
    no file behind. Raises ConfigError (exit 2) and the engine's ClusterstackErrors."""
    from clusterstack.workspace import POINTER_KEY, read_pointers, write_pointer

    ws = workspace()
    if cluster not in ws.cluster_names():
        raise ConfigError(f"unknown cluster {cluster!r}: no {ws.clusters_dir.name}/{cluster}.yaml",
                          f"add and review the cluster config first (known: {', '.join(ws.cluster_names()) or 'none'})",
                          file=ws.cluster_file(cluster))
    pointer = ws.project_dir / f"Pulumi.{cluster}.yaml"
    if pointer.exists():
        p = next(p for p in read_pointers(ws) if p.stack == cluster)
        if p.cluster is not None and p.cluster != cluster:
            raise ConfigError(f"stack file names cluster {p.cluster!r}, not {cluster!r}",
                              f"set `{POINTER_KEY}: {cluster}`", file=p.file, line=p.line,
                              field=f"config.{POINTER_KEY}")
    created = engine_factory(ws).init_stack(cluster)
    wrote = write_pointer(pointer, cluster)
    rel = pointer.relative_to(ws.root)
    out.print(f"{'wrote' if wrote else 'kept'} {rel}", markup=False)
    out.print(f"stack {cluster}: {'created' if created else 'already exists'} in {ws.backend_url} "
              f"(secrets provider {ws.secrets_provider})", markup=False)


@stack_app.command("ls")
def stack_ls(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Stacks in the backend and stack files in the project, with last update time and result."""
    from rich.table import Table

    from clusterstack.workspace import read_pointers

    ws = workspace()
    pointers = {p.stack for p in read_pointers(ws)}
    summaries = {s.name: s for s in engine_factory(ws).list_stacks()}
    rows = []
    for name in sorted(set(summaries) | pointers):
        s = summaries.get(name)
        rows.append({
            "stack": name,
            "in_backend": s is not None,
            "stack_file": name in pointers,
            "last_update": s.last_update.strftime("%Y-%m-%dT%H:%M:%SZ") if s and s.last_update else None,
            "last_result": (s.last_result if s else None),
            "update_in_progress": bool(s.update_in_progress) if s else False,
            "resource_count": s.resource_count if s else None,
        })
    if as_json:
        out.file.write(json.dumps({"backend": ws.backend_url, "project": ws.project_name, "stacks": rows},
                                  indent=2, sort_keys=True) + "\n")
        return
    table = Table(title=f"project {ws.project_name} — {ws.backend_url}", title_justify="left", show_edge=False)
    for col in ("stack", "last update (UTC)", "result", "resources", "note"):
        table.add_column(col)
    for r in rows:
        note = ("no stack file" if not r["stack_file"] else
                f"not created: clusterstack stack init {r['stack']}" if not r["in_backend"] else
                "update in progress" if r["update_in_progress"] else "")
        table.add_row(r["stack"], r["last_update"] or "never", r["last_result"] or "-",
                      "-" if r["resource_count"] is None else str(r["resource_count"]), note)
    out.print(table)
