"""Commands of the foundation: ``validate``, ``stacks`` (``plan``: :mod:`clusterstack.cli.plan`)."""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.cli import emit_json, err, out, workspace
from clusterstack.config.services import REGISTRY_FILE
from clusterstack.deploy.registry import load_registry
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.validation import cluster_problems, iam_problems, load_cluster, project_problems
from clusterstack.validation.clusters import cluster_notes, one_load_per_file, stray_problems
from clusterstack.workspace import ProjectInfo, check_name, check_stacks

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


@app.command()
def validate(clusters: list[str] = typer.Argument(None, help="Clusters to check (default: all)."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON: ok, what was checked, "
                                          "and every problem (file, line, field, message, hint); "
                                          "when there is any, also the error: lines on stderr "
                                          "and exit 2.")) -> None:
    """Check offline everything `plan --all` and `deploy` would reject: cluster configs (and,
    for named clusters, the configs that reference them), the clusters directory, stack files
    and program entry points, [guard], [projects] configs, services.yaml and the IAM file."""
    ws = workspace()
    for name in clusters or []:  # a name with path parts: refused before any file is read
        check_name(name)
    with one_load_per_file():  # the checks below share one load of each cluster file
        checked, problems = cluster_problems(ws, clusters or ws.cluster_names())
        problems += stray_problems(ws)
        checks = [lambda: check_stacks(ws), lambda: ws.guard]
        if (ws.root / REGISTRY_FILE).exists():  # deploy reads it: plaintext secrets, bad paths
            checks.append(lambda: load_registry(ws))
        for check in checks:
            try:
                check()
            except ClusterstackError as exc:
                problems.extend(exc.problems)
        n_files, more = project_problems(ws)
        problems += more
        has_iam, more = iam_problems(ws)
        problems += more
        problems = list({p.render(): p for p in problems}.values())
        notes = cluster_notes(ws, checked)   # what is accepted but cannot be checked (labinit)
    if as_json:
        # the problems twice, as every --json command does (emit_json; guard --json): in the
        # document for the program reading stdout, and as the `error: …` lines on stderr for the
        # log, with exit 2
        emit_json({
            "ok": not problems, "clusters": list(checked), "project_configs": n_files, "iam_file": has_iam,
            "problems": [{"file": _rel(p.file, ws.root), "line": p.line, "field": p.field or None,
                          "message": p.message, "hint": p.hint} for p in problems],
            "notes": [{"file": _rel(p.file, ws.root), "line": p.line, "field": p.field or None,
                       "message": p.message, "hint": p.hint} for p in notes]})
    if problems:
        raise ConfigError(problems=problems)
    if as_json:
        return
    for note in notes:
        err.print(f"note: {note.render(ws.root)}", markup=False)
    extra = f", {n_files} project config(s)" + (", the IAM file" if has_iam else "")
    out.print(f"ok: {len(checked)} cluster config(s), their stack files{extra} and the [guard] "
              "policy are valid", markup=False)


def _rel(path: Path | None, root: Path) -> str | None:
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)


@app.command()
def stacks(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the stacks of every project: the cluster stacks (one per cluster, with the cluster
    each stack file points at), then each [projects] project's stacks (what `plan --all`
    covers)."""
    from rich.table import Table
    from rich.text import Text

    ws = workspace()
    pointers = check_stacks(ws)
    rows = []
    with one_load_per_file():  # a GCP stack's load reads the clusters it routes to: once each
        configs = [load_cluster(ws, p.stack).config for p in pointers]
    for p, cfg in zip(pointers, configs):
        rows.append({"stack": p.stack, "cluster": p.cluster, "provider": cfg.provisioning.provider,
                     "stack_file": str(p.file.relative_to(ws.root)),
                     "config": str(ws.cluster_file(p.stack).relative_to(ws.root))})
    others = []
    for ref in ws.projects:
        info = ProjectInfo.load(ref.directory)
        others.append({"key": ref.key, "kind": ref.kind, "project": info.name,
                       "dir": _rel(ref.directory, ws.root),
                       "stacks": [{"stack": s, "stack_file": _rel(info.stack_file(s), ws.root),
                                   "config": _rel(info.document_of(s), ws.root)}
                                  for s in info.stacks()]})
    if as_json:
        emit_json({"project": ws.project_name, "stacks": rows, "projects": others})
        return
    table = Table(title=f"project {ws.project_name}", title_justify="left", show_edge=False)
    for col in ("stack", "provider", "stack_file", "config"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["stack"], r["provider"], r["stack_file"], r["config"])
    out.print(table)
    for p in others:
        out.print()
        table = Table(title=Text(f"project {p['project']} ([projects.{p['key']}], kind {p['kind']})"),
                      title_justify="left", show_edge=False)
        for col in ("stack", "stack_file", "config"):
            table.add_column(col)
        for r in p["stacks"]:
            table.add_row(r["stack"], r["stack_file"], r["config"])
        out.print(table)
