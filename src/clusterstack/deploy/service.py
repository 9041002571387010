"""The deploy flows of one registered service: wiring (:class:`Service`), ``rollout`` and
``rollback``, as library functions over the run's :class:`~clusterstack.clients.Clients`.

- :func:`rollout` — resolve secrets → temporary config copy (overrides and the provenance keys)
  → (``gce-vm``: ``pulumi refresh``) → :func:`clusterstack.flows.up.guarded_up` over the
  service's project (preview, guard, typed confirmation of the service name, update with every
  step checked) → for every kind but ``pulumi``, wait until the new revision is active and
  healthy and record the verdict;
- :func:`plan_service_rollback` and :func:`rollback` — plan → confirm → re-check → activate →
  wait → verify, restoring the source on failure (:mod:`clusterstack.deploy.rollback`).

Callbacks as in :mod:`clusterstack.flows.up`: ``prompt(text) -> answer | None``,
``report(line)``, ``warn(line)``, ``progress(text)``; ``emit(line)`` writes GitHub Actions mask
commands (stdout, flushed, before anything else can print a secret).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from clusterstack.clients import Clients
from clusterstack.config.services import Health
from clusterstack.engine.model import Engine, UpResult
from clusterstack.errors import ClusterstackError
from clusterstack.flows.up import Progress, Prompt, Report, _no_progress, _quiet, guarded_up
from clusterstack.workspace import Workspace
from clusterstack.adapters.gcp import (GcpCredentialsError, GoogleCloudRun, GoogleCompute,
    LazySecretManager)
from clusterstack.adapters.kubernetes import KubeconfigError, KubernetesApi
from clusterstack.deploy.cloudrun import CloudRunBackend
from clusterstack.deploy.cloudrunjob import CloudRunJobBackend
from clusterstack.deploy.gce import GUEST_POLL_MIN_S, GceVmBackend
from clusterstack.deploy.kubernetes import KubernetesBackend
from clusterstack.deploy.model import (Backend, CredentialsUnavailable, HEALTHY, NotActive, Outcome,
    PlatformBackend, RollbackPlan, Snapshot, Timing, UNHEALTHY)
from clusterstack.deploy.registry import load_registry
from clusterstack.deploy.rollback import execute, plan_rollback, verify_active
from clusterstack.deploy.rollout import (CHANGE_CAUSE_KEY, SOURCE_REVISION_KEY, config_copy,
    parse_overrides, resolve_secrets)
from clusterstack.deploy.stack import PulumiStackBackend
from clusterstack.guard import GuardBlocked
from clusterstack.validation.ownership import check_service_grants


def timing(health: Health, clients: Clients) -> Timing:
    """The executor's :class:`~clusterstack.deploy.model.Timing`: the registry's
    ``health.timeout_seconds`` / ``poll_seconds`` on the run's clock."""
    return Timing(timeout=float(health.timeout_seconds), interval=float(health.poll_seconds),
                  clock=clients.clock.monotonic, sleep=clients.clock.sleep)


class Service:
    """One service's wiring for a command: its registry entry; its secrets, resolved once and
    only when an engine that may need them is made (reading history never touches a secret);
    the engines over its checked-in project, made on first use; its backend.

    Raises ConfigError (unknown service, bad ``services.yaml``) on construction."""

    def __init__(self, ws: Workspace, name: str, *, clients: Clients, report: Report = _quiet,
                 emit: Report | None = None) -> None:
        self.ws = ws
        self.clients = clients
        self.entry = load_registry(ws).get(name)
        self.report = report
        self.emit = emit or report
        self._env: dict[str, str] | None = None
        self._engines: dict[bool, Engine] = {}

    def env(self) -> dict[str, str]:
        """The registry's secrets, resolved (and masked under GitHub Actions) on first call."""
        if self._env is None:
            self._env = resolve_secrets(self.entry.spec.secrets, base_dir=self.ws.root,
                                        secret_manager=LazySecretManager(self.clients.secret_manager),
                                        emit=self.emit)
        return self._env

    def engine(self, secrets: bool = True) -> Engine:
        """The engine over the service's checked-in project; with ``secrets``, its CLI gets the
        registry's secrets (refresh and updates need e.g. the passphrase; history does not)."""
        if secrets not in self._engines:
            self._engines[secrets] = self.clients.engine(self.ws, project_dir=self.entry.project_dir,
                                                         config_file=None,
                                                         env=self.env() if secrets else {})
        return self._engines[secrets]

    def timing(self) -> Timing:
        """The registry's health timing; a ``gce-vm`` with ``activation: watch`` polls no more
        often than its guest attributes allow (:data:`clusterstack.deploy.gce.GUEST_POLL_MIN_S`)."""
        t = timing(self.entry.spec.health, self.clients)
        vm = self.entry.spec.gce_vm
        if vm is not None and vm.activation == "watch" and t.interval < GUEST_POLL_MIN_S:
            t = replace(t, interval=GUEST_POLL_MIN_S)
        return t

    def backend(self) -> Backend:
        """The :class:`~clusterstack.deploy.model.Backend` of the service's kind. Raises
        CredentialsUnavailable (exit 2) when its API has no usable credentials or kube
        context, naming where the context comes from."""
        platform = self.platform_backend()
        return platform if platform is not None else self._stack_backend()

    def platform_backend(self) -> PlatformBackend | None:
        """The backend of a Kubernetes, Cloud Run or GCE service (None for a ``pulumi`` one);
        raises as :meth:`backend`."""
        e = self.entry
        http = e.spec.health.http

        def refresh():
            return self.engine().refresh(e.stack, preview_only=False)

        # the kind's block is present (config.services.Service: the block matches the kind) and
        # a kubernetes service's kube context resolved (deploy.registry.load_registry)
        if e.kind == "kubernetes":
            k = e.spec.kubernetes
            assert k is not None and e.kube_context is not None
            try:
                client = self.clients.kubernetes(e.kube_context)
            except KubeconfigError as exc:
                # name where the context came from: the cluster config, not services.yaml itself
                raise CredentialsUnavailable(
                    exc.problems[0].message,
                    f"the context comes from {e.kube_context_source}; add it to your kubeconfig "
                    "($KUBECONFIG, else ~/.kube/config) or fix it there; nothing was changed",
                    field=f"service {e.name}") from None
            return KubernetesBackend(e.name, KubernetesApi(client, timeout=(5.0, 30.0)), namespace=k.namespace,
                                     deployment=k.deployment, http=http, refresh=refresh)
        if e.kind in ("gce-vm", "cloud-run-job"):
            if e.kind == "gce-vm":
                assert e.spec.gce_vm is not None
                return GceVmBackend(e.name, GoogleCompute(self.clients.gcp), target=e.spec.gce_vm,
                                    http=http, refresh=refresh, now=self.clients.clock.now)

            assert e.spec.cloud_run_job is not None
            return CloudRunJobBackend(e.name, GoogleCloudRun(self.clients.gcp), target=e.spec.cloud_run_job,
                                      refresh=refresh)
        if e.kind == "cloud-run":
            assert e.spec.cloud_run is not None
            try:
                run = self.clients.cloud_run()
            except GcpCredentialsError as exc:
                raise CredentialsUnavailable(exc.problems[0].message, exc.problems[0].hint) from None
            return CloudRunBackend(e.name, GoogleCloudRun(self.clients.gcp, services=run), target=e.spec.cloud_run,
                                   http=http, refresh=refresh)
        return None

    def _stack_backend(self) -> PulumiStackBackend:
        e, ws = self.entry, self.ws
        http = e.spec.health.http

        def on_step(step) -> None:
            if step.op != "same":
                self.report(f"  {step.op:<18} {step.urn}")

        return PulumiStackBackend(
            e.name, self.engine(secrets=False), stack=e.stack, root=ws.root, project_dir=e.project_dir,
            engine_at=lambda project, config_file, env: self.clients.engine(
                ws, project_dir=project, config_file=config_file, env=env),
            policy=ws.guard, env=self.env, http=http,
            on_step=on_step, git=self.clients.git(ws.root))


def rollout(ws: Workspace, service: str, *, clients: Clients, config: Sequence[str] = (), yes: bool = False,
            message: str | None = None, prompt: Prompt, report: Report = _quiet, warn: Report = _quiet,
            progress: Progress = _no_progress, emit: Report | None = None) -> UpResult | None:
    """``clusterstack deploy SERVICE rollout``: secrets → temporary config copy (``config``:
    ``KEY=VALUE`` overrides; the checked-in stack file is never changed) → guarded update →
    verification of a Kubernetes / Cloud Run rollout (:func:`verify_rollout`). Returns the
    :class:`~clusterstack.engine.model.UpResult` (None: nothing to update). Raises
    ConfigError for bad overrides, SecretResolutionError naming the variable (before any
    engine runs), the errors of :func:`~clusterstack.flows.up.guarded_up`, and
    ClusterstackError (exit 1) when the applied revision does not become healthy."""
    from clusterstack.plan.runtime import ProjectInfo


    svc = Service(ws, service, clients=clients, report=report, emit=emit)
    entry = svc.entry
    check_service_grants(ws, service)  # one side owns each Cloud Run grant (before anything runs)
    project = ProjectInfo.load(entry.project_dir)
    overrides = parse_overrides(list(config or []), project.name)
    git = clients.git(ws.root).state()
    text = message or f"clusterstack deploy {service} rollout"
    stamped = {f"{project.name}:{SOURCE_REVISION_KEY}": (git.commit or "unreleased") + ("-dirty" if git.dirty else ""),
               f"{project.name}:{CHANGE_CAUSE_KEY}": text}
    policy = ws.guard
    env = svc.env()  # secrets: resolved (and masked) before anything else runs
    for key, value in sorted(overrides.items()):
        report(f"override {key} = {value}")
    with config_copy(entry.stack_file, {**stamped, **overrides}) as config_file:
        engine = clients.engine(ws, project_dir=entry.project_dir, config_file=config_file, env=env)
        if entry.kind == "gce-vm":
            # the VM's revision record is written outside Pulumi (deploy.gce): the state must
            # carry it before the update, or the program's metadata would drop it
            with progress(f"refreshing {entry.stack}…"):
                engine.refresh(entry.stack, preview_only=False)
        result = guarded_up(engine, entry.stack, policy=policy, git=git, release_branch=ws.release_branch,
                            yes=yes, message=text, confirm=service, prompt=prompt, report=report,
                            warn=warn, progress=progress)
    if result is not None and entry.kind != "pulumi":
        verify_rollout(svc, report=report)
    return result


def verify_rollout(svc: Service, *, report: Report = _quiet) -> None:
    """After a rollout of a Kubernetes or Cloud Run service: wait until the new revision is
    active and healthy (bounded by the registry's health timeout) and record the verdict on
    the revision. Raises ClusterstackError (exit 1) when it does not become healthy."""
    backend = svc.platform_backend()
    if backend is None:  # a pulumi service: the update itself was the check
        return
    plan = backend.serving_plan()
    try:
        verify_active(backend, plan, "target", svc.timing(), lambda line: report(f"  {line}"))
    except NotActive as exc:
        backend.record(plan, "target", UNHEALTHY)
        error = ClusterstackError(
            f"rollout applied, but revision {plan.target.number} ({plan.target.name}) is not healthy: {exc}",
            f"roll back: clusterstack deploy {svc.entry.name} rollback", field=f"service {svc.entry.name}")
        error.exit_code = 1
        raise error from None
    backend.record(plan, "target", HEALTHY)
    report(f"{svc.entry.name}: revision {plan.target.number} ({plan.target.name}) is serving and healthy")
    if backend.kind == "gce-vm":
        backend.after_rollback(plan)  # the record written above, into the state (pulumi refresh)


@dataclass
class PlannedRollback:
    """A rollback ready to confirm: the service, its backend and the plan."""

    service: Service
    backend: Backend
    plan: RollbackPlan

    def describe(self) -> list[str]:
        """The lines to show before asking: source → target (time, message), then the plan's notes."""
        s, t = self.plan.source, self.plan.target
        when = t.created.strftime('%Y-%m-%d %H:%M:%SZ') if t.created else 'time unknown'
        head = (f"rollback {self.service.entry.name} ({self.service.entry.kind}): revision {s.number} "
                f"({s.name}) → revision {t.number} ({t.name}, {when}, {t.message or 'no message'})")
        return [head, *(f"  {line}" for line in self.plan.notes)]


def plan_service_rollback(ws: Workspace, service: str, *, clients: Clients, to_revision: int | None = None,
                          report: Report = _quiet) -> PlannedRollback:
    """Plan the rollback of ``service`` (nothing changed): the default target or
    ``to_revision``. Raises RollbackRefused (exit 2) naming the rule, CredentialsUnavailable
    (exit 2), BackendError (exit 1)."""
    svc = Service(ws, service, clients=clients, report=report)
    backend = svc.backend()
    return PlannedRollback(svc, backend, plan_rollback(backend, to_revision=to_revision))


def rollback(planned: PlannedRollback, *, yes: bool = False, prompt: Prompt, warn: Report = _quiet,
             log: Report = _quiet) -> Outcome:
    """Confirm and execute ``planned``: the guard's verdict on a re-apply blocks (exit 3); the
    operator types the service name unless ``yes`` and the re-apply destroys nothing; then
    :func:`clusterstack.deploy.rollback.execute` (``log``: its progress lines). Returns the
    :class:`~clusterstack.deploy.model.Outcome` (its ``exit_code`` says how it ended). Raises
    GuardBlocked, ClusterstackError when not confirmed (nothing changed)."""
    name = planned.service.entry.name
    verdict = planned.plan.verdict
    if verdict is not None and not verdict.ok:
        raise GuardBlocked(verdict)
    clean = verdict is None or not verdict.destructive
    if not (yes and clean):
        if yes:
            warn("--yes ignored: the re-apply replaces or deletes resources; type the service name.")
        if prompt(f"type the service name ({name}) to roll back: ") != name:
            raise ClusterstackError("rollback not confirmed; nothing was changed",
                                    f"type `{name}` exactly to confirm", field=f"service {name}")
    return execute(planned.backend, planned.plan, planned.service.timing(), log=log)


def history(ws: Workspace, service: str, *, clients: Clients) -> tuple[Service, Snapshot]:
    """The service and its :class:`~clusterstack.deploy.model.Snapshot` (revisions newest
    first). Raises CredentialsUnavailable / BackendError as the backend."""
    svc = Service(ws, service, clients=clients)
    return svc, svc.backend().snapshot()

