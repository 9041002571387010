"""Commands that talk to the Pulumi engine: ``preview``, ``up``, ``stack init``, ``stack ls``.

The engine comes from the run's :class:`~clusterstack.clients.Clients` (``clients().engine``;
tests give a FakeEngine); nothing here runs the Pulumi CLI directly. ``preview`` and ``up`` are
the library flows of :mod:`clusterstack.flows.up` (the safety rules of ``up`` are listed there),
rendered here.
"""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.cli import ask, clients, emit_json, err, out, say, status, warn, workspace
from clusterstack.errors import ConfigError
from clusterstack.flows.up import preview as preview_flow, up as up_flow
from clusterstack.guard import GuardBlocked, Verdict
from clusterstack.views.preview import preview_document, preview_json, render_changes
from clusterstack.views.verdict import verdict_lines
from clusterstack.workspace import POINTER_KEY, read_pointers, write_pointer

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


@app.command()
def preview(clusters: list[str] = typer.Argument(None, help="Clusters (= stacks) to preview."),
            all_: bool = typer.Option(False, "--all", help="Preview every stack."),
            refresh: bool = typer.Option(False, "--refresh", help="Refresh state from the cloud first."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON (changes + guard verdict)."),
            record: Path = typer.Option(None, "--record", metavar="DIR",
                                        help="Write each stack's review record to DIR/<stack>.review.json "
                                             "(for `up --reviewed`).")) -> None:
    """Engine preview per stack: grouped diff, then the guard verdict. Exit 3 on any violation."""
    docs, violations = [], []
    for sp in preview_flow(workspace(), clusters or [], clients=clients(), all_=all_, refresh=refresh,
                           progress=status(as_json), record_dir=record):
        violations.extend(sp.verdict.violations)
        if as_json:
            doc = preview_json(sp.result, sp.verdict)
            if sp.record is not None:
                doc["review"] = {"file": str(sp.record_file), "digest": sp.record.digest}
            docs.append(doc)
        else:
            for line in render_changes(sp.result) + verdict_lines(sp.verdict, sp.result.steps):
                say(line)
            if sp.record is not None:
                say(f"review record: {sp.record_file} ({sp.record.digest})")
            out.print()
    if as_json:
        emit_json(preview_document(docs))
    if violations:
        raise GuardBlocked(Verdict(violations=tuple(violations)))


@app.command()
def up(cluster: str = typer.Argument(..., help="Cluster (= stack) to update."),
       yes: bool = typer.Option(False, "--yes", "-y",
                                help="Skip typing the stack name — only when the preview has no "
                                     "destructive change at all."),
       message: str = typer.Option(None, "--message", "-m",
                                   help="Update message (the git commit is appended)."),
       reviewed: Path = typer.Option(None, "--reviewed", metavar="RECORD",
                                     help="Apply exactly what this review record (from `preview "
                                          "--record` or `ci preview`) shows: same commit and state, "
                                          "no other step or changed path (exit 3 otherwise).")) -> None:
    """Preview → guard → summary → confirmation → update, with every step checked again."""
    up_flow(workspace(), cluster, clients=clients(), yes=yes, message=message, prompt=ask,
            report=say, warn=warn, progress=err.status, reviewed=reviewed)


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
    created = clients().engine(ws).init_stack(cluster)
    wrote = write_pointer(pointer, cluster)
    rel = pointer.relative_to(ws.root)
    out.print(f"{'wrote' if wrote else 'kept'} {rel}", markup=False)
    out.print(f"stack {cluster}: {'created' if created else 'already exists'} in {ws.backend_url} "
              f"(secrets provider {ws.secrets_provider})", markup=False)


@stack_app.command("ls")
def stack_ls(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Stacks in the backend and stack files in the project, with last update time and result."""
    from rich.table import Table

    ws = workspace()
    pointers = {p.stack for p in read_pointers(ws)}
    summaries = {s.name: s for s in clients().engine(ws).list_stacks()}
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
        emit_json({"backend": ws.backend_url, "project": ws.project_name, "stacks": rows})
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
