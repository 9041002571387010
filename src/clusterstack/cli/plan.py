"""``clusterstack plan``: what each stack declares, offline — the real programs under Pulumi's
mock runtime (:func:`clusterstack.flows.plan.plan`), as a tree per stack and a fleet table, or
the canonical JSON plan."""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.cli import err, out, status, workspace
from clusterstack.config.document import json_loads
from clusterstack.config.services import REGISTRY_FILE
from clusterstack.deploy.registry import load_registry
from clusterstack.errors import ClusterstackError, ConfigError, display_path, os_error
from clusterstack.flows.plan import one_load_per_file, plan as plan_flow
from clusterstack.fsutil import write_output
from clusterstack.inventory import fleet
from clusterstack.plan import dumps
from clusterstack.plan.model import FORMAT
from clusterstack.plan.render import render_tree
from clusterstack.validation.objects import service_object_problems

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


def _check_plan_output(ws, output: Path) -> None:
    """Refuse a ``plan --output`` path before planning (ClusterstackError, exit 2): a missing
    parent directory; a directory; anything inside the clusters directory or a Pulumi project's
    directory (a new ``clusters/x.yaml`` would be a new cluster, a file beside a program a
    change of it); and, inside the repository, an existing file that is not a clusterstack plan
    — ``clusterstack.toml``, ``iam/iam.yaml``, ``services.yaml`` … are reviewed files, never
    overwritten by a plan. Symbolic links are resolved first, so a link cannot smuggle a
    reviewed file past the rule. Outside the repository any file may be replaced."""
    target = output.resolve()
    hint = "write the plan outside the reviewed files, e.g. `-o plan.json` or a path under /tmp"
    if target.is_dir():
        raise ClusterstackError("cannot write the plan: this is a directory", "pass a file path, "
                                "e.g. -o plan.json", file=output)
    if not target.parent.is_dir():
        raise ClusterstackError("cannot write the plan: the directory does not exist",
                                "pass --output a path in an existing, writable directory",
                                file=output)
    def project(p) -> str:   # the cluster project by its Pulumi name, the others by their table
        shown = display_path(p.directory, ws.root)
        return (f"the directory of Pulumi project {ws.project_name!r} ({shown}/)" if p.clusters
                else f"the directory of project [projects.{p.key}] ({shown}/)")

    for where, d in (("the clusters directory", ws.clusters_dir),
                     *((project(p), p.directory) for p in ws.all_projects())):
        if target.is_relative_to(Path(d).resolve()):
            raise ClusterstackError(f"cannot write the plan into {where}: it holds reviewed files",
                                    hint, file=output)
    if target.is_relative_to(ws.root.resolve()) and target.is_file():  # a pipe or device: written through
        try:
            is_plan = json_loads(target.read_text(encoding="utf-8")).get("format") == FORMAT
        except (OSError, ValueError, AttributeError, RecursionError):
            is_plan = False
        if not is_plan:
            raise ClusterstackError("cannot write the plan: this file of the repository is not a "
                                    "clusterstack plan and would be overwritten", hint, file=output)


@app.command()
def plan(clusters: list[str] = typer.Argument(None, help="Clusters (= stacks) to plan."),
         all_: bool = typer.Option(False, "--all", help="Plan every stack of every project "
                                   "(the clusters, then [projects] in clusterstack.toml)."),
         projects: list[str] = typer.Option(None, "--project", metavar="NAME",
                                            help="Plan every stack of this project of [projects] "
                                                 "(repeatable; e.g. buckets, github)."),
         as_json: bool = typer.Option(False, "--json", help="Print the canonical JSON plan."),
         output: Path = typer.Option(None, "--output", "-o",
                                     help="Also write the canonical JSON plan to this file (atomic).")) -> None:
    """Show what each stack declares, offline: the real program under Pulumi's mock runtime.
    A selection with no stack (a fresh workspace) says so on stderr and exits 0."""
    ws = workspace()
    if output is not None:   # before minutes of planning
        _check_plan_output(ws, output)
    what = "every stack" if all_ else ", ".join([*(clusters or []), *(projects or [])])
    with status(as_json)(f"planning {what} (the real programs under Pulumi's mock runtime)…"), \
            one_load_per_file():   # the plans and the services' check: each cluster loaded once
        plans = plan_flow(ws, clusters or [], all_=all_, projects=list(projects or []))
        if all_:   # every cluster planned: no Kubernetes service may declare one of their objects
            _check_service_objects(ws, {p.stack: p for p in plans if p.project == ws.project_name})
    text = dumps(plans)
    if output is not None:
        try:
            write_output(output, text)   # a pipe, a device, /dev/stdout: written through, never replaced
        except OSError as exc:  # a path the user gave: a user error (exit 2), not a crash
            raise os_error(exc, doing="cannot write the plan") from None
    if not plans:   # a fresh workspace: nothing to plan is no error (exit 0), but said
        err.print(_nothing_to_plan(ws, all_, list(projects or [])), markup=False)
    if as_json:
        out.file.write(text)
        return
    for p in plans:
        out.print(render_tree(p))
        out.print()
    summary = fleet_summary(plans)
    if summary is not None:
        out.print(summary)
    if output is not None:
        err.print(f"wrote {output}")


def _check_service_objects(ws, planned: dict) -> None:
    """``plan --all``: refuse (ConfigError, exit 2, at the service's entry in services.yaml) a
    Kubernetes service whose stack declares an object a cluster stack — or another service —
    declares in the same kube context (:func:`clusterstack.validation.objects.service_object_problems`).
    Nothing to check without a services.yaml; an unreadable one is ``validate``'s to report."""
    if not (ws.root / REGISTRY_FILE).is_file():
        return
    try:
        registry = load_registry(ws)
    except ConfigError:
        return
    problems = service_object_problems(ws, registry, planned)
    if problems:
        raise ConfigError(problems=problems)

def fleet_summary(plans):
    """The closing table of a text ``plan``: per cluster with NodePools, its pools, nodes
    (min–max), racks, GPUs and GPU quota, and the totals — the figures of ``clusterstack
    inventory`` (:func:`clusterstack.inventory.fleet`), from the same plans. None when no plan
    declares a NodePool or ClusterQueue (a GCP-only selection)."""
    from rich.table import Table

    inv = fleet(plans)
    stacks = sorted({p.stack for p in inv.pools} | {q.stack for q in inv.queues})
    if not stacks:
        return None
    table = Table(title="fleet: what the plans above declare (details: clusterstack inventory)",
                  title_justify="left", show_edge=False)
    for col in ("cluster", "pools", "nodes (min–max)", "racks", "GPUs", "GPU quota"):
        table.add_column(col, justify="left" if col == "cluster" else "right")
    totals = [0, 0, 0, 0, 0, 0]
    for stack in stacks:
        pools = [p for p in inv.pools if p.stack == stack]
        row = [len(pools), sum(p.min_nodes for p in pools), sum(p.max_nodes for p in pools),
               sum(p.racks or 0 for p in pools), sum(p.gpus for p in pools),
               sum(q.gpus for q in inv.queues if q.stack == stack)]
        totals = [a + b for a, b in zip(totals, row)]
        table.add_row(stack, str(row[0]), f"{row[1]}–{row[2]}", str(row[3]) if row[3] else "",
                      str(row[4]), str(row[5]))
    table.add_row("total", str(totals[0]), f"{totals[1]}–{totals[2]}",
                  str(totals[3]) if totals[3] else "", str(totals[4]), str(totals[5]), style="bold")
    return table


def _nothing_to_plan(ws, all_: bool, projects: list[str]) -> str:
    """The line ``plan`` prints on stderr when the selection holds no stack (a named cluster
    always is one): which places were looked in, and how to add a stack."""
    if all_:
        shown = display_path(ws.clusters_dir, ws.root)
        return (f"no stacks to plan: {shown}/ holds no <cluster>.yaml and no [projects] project "
                "has a Pulumi.<stack>.yaml — add a cluster with `clusterstack cluster new NAME`")
    tables = [f"[projects.{k}]" for k in dict.fromkeys(projects)]
    which = tables[0] if len(tables) == 1 else f"none of {', '.join(tables)}"
    return (f"no stacks to plan: {which} has no Pulumi.<stack>.yaml — add one beside its "
            "Pulumi.yaml to plan a stack of it")
