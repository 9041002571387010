"""``clusterstack deploy``: list services, and per service ``rollout``, ``history``, ``rollback``.

Usage::

    clusterstack deploy list [--json]
    clusterstack deploy <service> rollout [--config KEY=VALUE]… [--yes] [--message TEXT]
    clusterstack deploy <service> history [--json]
    clusterstack deploy <service> rollback [--to-revision N] [--yes] [--json]

(``deploy <verb> <service>`` works too.) One service per invocation.

The flows are :mod:`clusterstack.deploy.service` (rollout, rollback, history) over the run's
:class:`~clusterstack.clients.Clients` (the engine over a service project, the Kubernetes and
Cloud Run clients, Secret Manager, the clock the executor waits on); nothing here talks to a
cloud directly.
"""

from __future__ import annotations

import difflib


import typer
from typer._click.exceptions import UsageError
from typer.core import TyperGroup

from clusterstack.cli import ask, clients, emit_json, err, out, say, warn, workspace
from clusterstack.cli.help import _workspace, service_names
from clusterstack.deploy.registry import load_registry
from clusterstack.deploy.service import (history as history_flow, plan_service_rollback,
                                         rollback as rollback_flow, rollout as rollout_flow)

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


class _ServiceFirstGroup(TyperGroup):
    """Accepts ``deploy <service> <verb> …`` by reading it as ``deploy <verb> <service> …``."""

    def parse_args(self, ctx, args):  # noqa: D102 — see class docstring
        first = args[0] if args and args[0] not in self.commands and not args[0].startswith("-") else None
        if first is not None and len(args) >= 2 and (
                args[1] in self.commands
                or (not args[1].startswith("-") and difflib.get_close_matches(args[1], self.commands))):
            # `deploy <service> <verb>`, or a mistyped verb (`deploy echo rolout`): read as
            # `deploy <verb> <service>`, so a typo is named with its suggestion, not the service
            args = [args[1], args[0], *args[2:]]
        elif first is not None and len(args) == 2 and args[1] in ("--help", "-h"):
            args = ["--help"]   # `deploy <service> --help`: the verbs a service has
        elif first is not None and len(args) == 1 and not ctx.resilient_parsing \
                and first in _services(ctx):   # (completing `deploy <service> <TAB>`: no refusal)
            raise UsageError(f"`deploy {first}` needs a verb: rollout, history or rollback "
                                   f"(e.g. `clusterstack deploy {first} history`)", ctx)
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx, incomplete):  # noqa: D102 — `deploy <TAB>`: verbs and services
        from typer._click.shell_completion import CompletionItem

        items = super().shell_complete(ctx, incomplete)
        return items + [CompletionItem(n) for n in _services(ctx) if n.startswith(incomplete)]


def _services(ctx) -> list[str]:
    """The registered services' names, or none when the workspace or services.yaml cannot be
    read (a broken services.yaml is reported by the command that reads it)."""
    ws = _workspace(ctx)
    try:
        return service_names(ws) if ws is not None else []
    except Exception:
        return []


deploy_app = typer.Typer(cls=_ServiceFirstGroup, no_args_is_help=True,
                         help="Roll services out and back: `deploy <service> rollout|history|rollback`, `deploy list`.")
app.add_typer(deploy_app, name="deploy")


def _emit(line: str) -> None:
    """GitHub Actions mask commands: straight to stdout, flushed (before anything can print a secret)."""
    out.file.write(line + "\n")
    out.file.flush()


# --- commands -------------------------------------------------------------------------------

@deploy_app.command("list")
def list_services(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Registered services: kind, project, production stack, rollback target."""
    from rich.table import Table

    ws = workspace()
    reg = load_registry(ws)
    rows = [{"service": e.name, "kind": e.kind, "project_dir": str(e.project_dir.relative_to(ws.root)),
             "stack": e.stack, "target": e.target_text(), "secrets": sorted(e.spec.secrets)}
            for e in reg.services.values()]
    if as_json:
        emit_json({"services": rows})
        return
    table = Table(title=f"services ({reg.file.name})", title_justify="left", show_edge=False)
    for col in ("service", "kind", "project", "stack", "rollback target", "secrets"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["service"], r["kind"], r["project_dir"], r["stack"], r["target"],
                      ", ".join(r["secrets"]) or "-")
    out.print(table)


@deploy_app.command("history")
def history(service: str = typer.Argument(..., help="Service name (services.yaml)."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Numbered revisions, newest first: time, health/result, git commit, message."""
    from rich.table import Table

    svc, snap = history_flow(workspace(), service, clients=clients())
    if as_json:
        emit_json({"service": service, "kind": svc.entry.kind,
                                   "revisions": [r.to_json() for r in snap.revisions]})
        return
    table = Table(title=f"{service} ({svc.entry.kind}, {svc.entry.target_text()})", title_justify="left",
                  show_edge=False)
    for col in ("rev", "", "time (UTC)", "health", "commit", "message", "name", "detail"):
        table.add_column(col)
    for r in snap.revisions:
        table.add_row(str(r.number), "serving" if r.serving else "",
                      r.created.strftime("%Y-%m-%d %H:%M:%S") if r.created else "-", r.health,
                      (r.git_commit or "-")[:12], r.message or "-", r.name, r.detail)
    out.print(table)


@deploy_app.command("rollout")
def rollout(service: str = typer.Argument(..., help="Service name (services.yaml)."),
            config: list[str] = typer.Option(None, "--config", "-c",
                                             help="KEY=VALUE override for this rollout only (repeatable); "
                                                  "the checked-in stack file is not changed."),
            yes: bool = typer.Option(False, "--yes", "-y",
                                     help="Skip typing the service name — only when the preview has no "
                                          "destructive change."),
            message: str = typer.Option(None, "--message", "-m", help="Rollout message.")) -> None:
    """Resolve secrets → temporary config copy → preview → guard → confirm → update → verify."""
    rollout_flow(workspace(), service, clients=clients(), config=list(config or []), yes=yes,
                 message=message, prompt=ask, report=say, warn=warn, progress=err.status, emit=_emit)


@deploy_app.command("rollback")
def rollback(service: str = typer.Argument(..., help="Service name (services.yaml)."),
             to_revision: int = typer.Option(None, "--to-revision", min=1,
                                             help="Revision to return to (default: the next older healthy one)."),
             yes: bool = typer.Option(False, "--yes", "-y", help="Skip typing the service name."),
             as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON.")) -> None:
    """Plan → confirm → re-check → activate → wait → verify (restore the source on failure)."""
    planned = plan_service_rollback(workspace(), service, clients=clients(), to_revision=to_revision,
                                    report=say)
    show = warn if as_json else say  # with --json, stdout carries only the outcome document
    for line in planned.describe():
        show(line)
    outcome = rollback_flow(planned, yes=yes, prompt=ask, warn=warn, log=lambda line: warn(f"  {line}"))
    if as_json:
        emit_json(outcome.to_json())
    (warn if as_json or outcome.exit_code else say)(outcome.summary())
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
