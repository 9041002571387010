"""``clusterstack deploy``: list services, and per service ``rollout``, ``history``, ``rollback``.

Usage::

    clusterstack deploy list [--json]
    clusterstack deploy <service> rollout [--config KEY=VALUE]… [--yes] [--message TEXT]
    clusterstack deploy <service> history [--json]
    clusterstack deploy <service> rollback [--to-revision N] [--yes] [--json]

(``deploy <verb> <service>`` works too.) One service per invocation.

Seams the tests replace (nothing here talks to a cloud directly):
:data:`engine_factory` (the Pulumi engine over a service project), :data:`kube_client_factory`
(a ``kubernetes.client.ApiClient`` for a context), :data:`cloud_run_clients_factory`
(``ServicesClient``, ``RevisionsClient``), :data:`secret_manager_factory` and
:data:`timing_factory` (how long and how often the executor waits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import typer
from typer.core import TyperGroup

from clusterstack.cli import app, err, out, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.workspace import Workspace


class _ServiceFirstGroup(TyperGroup):
    """Accepts ``deploy <service> <verb> …`` by reading it as ``deploy <verb> <service> …``."""

    def parse_args(self, ctx, args):  # noqa: D102 — see class docstring
        if len(args) >= 2 and args[0] not in self.commands and not args[0].startswith("-") \
                and args[1] in self.commands:
            args = [args[1], args[0], *args[2:]]
        return super().parse_args(ctx, args)


deploy_app = typer.Typer(cls=_ServiceFirstGroup, no_args_is_help=True,
                         help="Roll services out and back: `deploy <service> rollout|history|rollback`, `deploy list`.")
app.add_typer(deploy_app, name="deploy")


# --- seams ----------------------------------------------------------------------------------

def default_engine_factory(ws: Workspace, project_dir: Path, config_file: Path | None,
                           env: dict[str, str]):
    """The production engine over a service project (Automation API)."""
    from clusterstack.engine import open_engine

    return open_engine(ws, project_dir=project_dir, config_file=config_file, env=env)


engine_factory: Callable[..., Any] = default_engine_factory
"""``(workspace, project_dir, config_file, env) -> Engine``; tests monkeypatch it."""


def default_kube_client_factory(context: str):
    from clusterstack.deploy.kubernetes import api_client

    return api_client(context)


kube_client_factory: Callable[[str], Any] = default_kube_client_factory
"""``(kube context) -> kubernetes.client.ApiClient``."""


def default_cloud_run_clients_factory():
    """Cloud Run Admin API v2 clients with Application Default Credentials (REST transport,
    the one the tests drive). Raises CredentialsUnavailable (exit 2) when there are none."""
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import run_v2

    from clusterstack.deploy.model import CredentialsUnavailable

    try:
        return run_v2.ServicesClient(transport="rest"), run_v2.RevisionsClient(transport="rest")
    except DefaultCredentialsError as exc:
        raise CredentialsUnavailable(f"no Google credentials for the Cloud Run API ({exc.args[0].split('.')[0]})",
                           "run `gcloud auth application-default login`, or set "
                           "GOOGLE_APPLICATION_CREDENTIALS") from None


cloud_run_clients_factory: Callable[[], tuple[Any, Any]] = default_cloud_run_clients_factory
"""``() -> (ServicesClient, RevisionsClient)``."""

secret_manager_factory: Callable[[], Any] = lambda: None  # noqa: E731
"""``() -> SecretManagerServiceClient | None`` (None: :func:`clusterstack.secrets.resolve`
creates the real client when a ``gcp-secret://`` spec needs one)."""


def default_timing(health) -> Any:
    from clusterstack.deploy.model import Timing

    return Timing(timeout=float(health.timeout_seconds), interval=float(health.poll_seconds))


timing_factory: Callable[[Any], Any] = default_timing
"""``(registry Health) -> Timing``."""


# --- wiring ---------------------------------------------------------------------------------

def _emit(line: str) -> None:
    out.file.write(line + "\n")
    out.file.flush()


class _Service:
    """One service's wiring for a command: secrets resolved once and only when an engine
    that may need them is made (reading history never touches a secret); the engines over
    the checked-in project made on first use."""

    def __init__(self, ws: Workspace, name: str) -> None:
        from clusterstack.deploy.registry import load_registry

        self.ws = ws
        self.entry = load_registry(ws).get(name)
        self._env: dict[str, str] | None = None
        self._engines: dict[bool, Any] = {}

    def env(self) -> dict[str, str]:
        """The registry's secrets, resolved (and masked under GitHub Actions) on first call."""
        from clusterstack.deploy.rollout import resolve_secrets

        if self._env is None:
            self._env = resolve_secrets(self.entry.spec.secrets, base_dir=self.ws.root,
                                        secret_manager=secret_manager_factory(), emit=_emit)
        return self._env

    def engine(self, secrets: bool = True):
        """The engine over the service's checked-in project; with ``secrets``, its CLI gets the
        registry's secrets (refresh and updates need e.g. the passphrase; history does not)."""
        if secrets not in self._engines:
            self._engines[secrets] = engine_factory(self.ws, self.entry.project_dir, None,
                                                    self.env() if secrets else {})
        return self._engines[secrets]

    def backend(self):
        from clusterstack.guard import GuardPolicy

        e, ws = self.entry, self.ws
        http = e.spec.health.http

        def refresh():
            return self.engine().refresh(e.stack, preview_only=False)

        if e.kind == "kubernetes":
            from clusterstack.deploy.kubernetes import KubernetesBackend

            from clusterstack.deploy.model import CredentialsUnavailable

            k = e.spec.kubernetes
            try:
                client = kube_client_factory(e.kube_context)
            except CredentialsUnavailable as exc:
                # name where the context came from: the cluster config, not services.yaml itself
                raise CredentialsUnavailable(
                    exc.problems[0].message,
                    f"the context comes from {e.kube_context_source}; add it to your kubeconfig "
                    "($KUBECONFIG, else ~/.kube/config) or fix it there; nothing was changed",
                    field=f"service {e.name}") from None
            return KubernetesBackend(e.name, client, namespace=k.namespace,
                                     deployment=k.deployment, http=http, refresh=refresh)
        if e.kind == "cloud-run":
            from clusterstack.deploy.cloudrun import CloudRunBackend

            services, revisions = cloud_run_clients_factory()
            return CloudRunBackend(e.name, services, revisions, target=e.spec.cloud_run, http=http,
                                   refresh=refresh)
        from clusterstack.deploy.stack import PulumiStackBackend

        def on_step(step) -> None:
            if step.op != "same":
                out.print(f"  {step.op:<18} {step.urn}", markup=False)

        return PulumiStackBackend(
            e.name, self.engine(secrets=False), stack=e.stack, root=ws.root, project_dir=e.project_dir,
            engine_at=lambda project, config_file, env: engine_factory(ws, project, config_file, env),
            policy=GuardPolicy.from_toml(ws.guard, file=ws.file), env=self.env, http=http,
            on_step=on_step)


# --- commands -------------------------------------------------------------------------------

@deploy_app.command("list")
def list_services(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Registered services: kind, project, production stack, rollback target."""
    from rich.table import Table

    from clusterstack.deploy.registry import load_registry

    ws = workspace()
    reg = load_registry(ws)
    rows = [{"service": e.name, "kind": e.kind, "project_dir": str(e.project_dir.relative_to(ws.root)),
             "stack": e.stack, "target": e.target_text(), "secrets": sorted(e.spec.secrets)}
            for e in reg.services.values()]
    if as_json:
        out.file.write(json.dumps({"services": rows}, indent=2, sort_keys=True) + "\n")
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

    svc = _Service(workspace(), service)
    snap = svc.backend().snapshot()
    if as_json:
        out.file.write(json.dumps({"service": service, "kind": svc.entry.kind,
                                   "revisions": [r.to_json() for r in snap.revisions]},
                                  indent=2, sort_keys=True) + "\n")
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
    from clusterstack.cli.engine import guarded_up
    from clusterstack.deploy.rollout import CHANGE_CAUSE_KEY, SOURCE_REVISION_KEY, config_copy, parse_overrides
    from clusterstack.engine.provenance import git_state
    from clusterstack.guard import GuardPolicy
    from clusterstack.workspace import ProjectInfo

    ws = workspace()
    svc = _Service(ws, service)
    entry = svc.entry
    project = ProjectInfo.load(entry.project_dir)
    overrides = parse_overrides(config or [], project.name)
    git = git_state(ws.root)
    text = message or f"clusterstack deploy {service} rollout"
    stamped = {f"{project.name}:{SOURCE_REVISION_KEY}": (git.commit or "unreleased") + ("-dirty" if git.dirty else ""),
               f"{project.name}:{CHANGE_CAUSE_KEY}": text}
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file)
    env = svc.env()  # secrets: resolved (and masked) before anything else runs
    for key, value in sorted(overrides.items()):
        out.print(f"override {key} = {value}", markup=False)
    with config_copy(entry.stack_file, {**stamped, **overrides}) as config_file:
        engine = engine_factory(ws, entry.project_dir, config_file, env)
        result = guarded_up(engine, entry.stack, policy=policy, git=git, release_branch=ws.release_branch,
                            yes=yes, message=text, confirm=service)
    if result is None or entry.kind == "pulumi":
        return
    _verify_rollout(svc)


def _verify_rollout(svc: _Service) -> None:
    """After a rollout of a Kubernetes or Cloud Run service: wait until the new revision is
    active and healthy (bounded by the registry's health timeout) and record the verdict."""
    from clusterstack.deploy.model import HEALTHY, UNHEALTHY, NotActive
    from clusterstack.deploy.rollback import verify_active

    backend = svc.backend()
    plan = backend.serving_plan()
    try:
        verify_active(backend, plan, "target", timing_factory(svc.entry.spec.health),
                lambda line: out.print(f"  {line}", markup=False))
    except NotActive as exc:
        backend.record(plan, "target", UNHEALTHY)
        error = ClusterstackError(
            f"rollout applied, but revision {plan.target.number} ({plan.target.name}) is not healthy: {exc}",
            f"roll back: clusterstack deploy {svc.entry.name} rollback", field=f"service {svc.entry.name}")
        error.exit_code = 1
        raise error from None
    backend.record(plan, "target", HEALTHY)
    out.print(f"{svc.entry.name}: revision {plan.target.number} ({plan.target.name}) is serving and healthy",
              markup=False)


@deploy_app.command("rollback")
def rollback(service: str = typer.Argument(..., help="Service name (services.yaml)."),
             to_revision: int = typer.Option(None, "--to-revision", min=1,
                                             help="Revision to return to (default: the next older healthy one)."),
             yes: bool = typer.Option(False, "--yes", "-y", help="Skip typing the service name."),
             as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON.")) -> None:
    """Plan → confirm → re-check → activate → wait → verify (restore the source on failure)."""
    from clusterstack.cli.engine import ask
    from clusterstack.deploy.rollback import execute, plan_rollback
    from clusterstack.guard import GuardBlocked

    svc = _Service(workspace(), service)
    backend = svc.backend()
    plan = plan_rollback(backend, to_revision=to_revision)
    s, t = plan.source, plan.target
    show = err if as_json else out  # with --json, stdout carries only the outcome document
    show.print(f"rollback {service} ({svc.entry.kind}): revision {s.number} ({s.name}) → "
               f"revision {t.number} ({t.name}, {t.created.strftime('%Y-%m-%d %H:%M:%SZ') if t.created else 'time unknown'}, "
               f"{t.message or 'no message'})", markup=False)
    for line in plan.notes:
        show.print(f"  {line}", markup=False)
    verdict = plan.verdict
    if verdict is not None and not verdict.ok:
        raise GuardBlocked(verdict)
    clean = verdict is None or not verdict.destructive
    if not (yes and clean):
        if yes:
            err.print("--yes ignored: the re-apply replaces or deletes resources; type the service name.",
                      markup=False)
        if ask(f"type the service name ({service}) to roll back: ") != service:
            raise ClusterstackError("rollback not confirmed; nothing was changed",
                                    f"type `{service}` exactly to confirm", field=f"service {service}")
    outcome = execute(backend, plan, timing_factory(svc.entry.spec.health),
                      log=lambda line: err.print(f"  {line}", markup=False))
    if as_json:
        out.file.write(json.dumps(outcome.to_json(), indent=2, sort_keys=True, default=str) + "\n")
    (err if as_json or outcome.exit_code else out).print(outcome.summary(), markup=False)
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
