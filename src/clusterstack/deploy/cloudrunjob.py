"""The Cloud Run job backend (kind ``cloud-run-job``): a job and the executions it ran, through
:class:`~clusterstack.adapters.gcp.CloudRunApi` (Cloud Run Admin API v2 ``jobs``,
``jobs.executions``).

A job has no revisions, but every execution keeps the task template it ran (``Execution.template``,
"Output only. The template used to create tasks for this Execution": Admin API v2 reference,
``Execution``), and Cloud Run retains executions after they end. So:

- a *revision* is one distinct task template, numbered in the order it first ran (1 = the
  oldest); the job's current template, when no execution ran it yet, is the next number;
- *serving*: the revision whose template is the job's ``template.template`` now;
- *health*: the newest finished execution of that template — every task succeeded
  (``completionTime`` set, ``succeededCount == taskCount``) → healthy; a task failed
  (``failedCount > 0``) → unhealthy; none finished (or it was cancelled) → unknown;
- commit and message: the ``CLUSTERSTACK_SOURCE_REVISION`` / ``CLUSTERSTACK_CHANGE_CAUSE``
  environment of the first container (:class:`~clusterstack.components.services.cloudrunjob.CloudRunJob`
  puts them there: a template carries its own provenance).

Activation: ``jobs.patch`` with the target's task template and the etag of the planned read as
precondition (a concurrent change: 409 ``ABORTED``, nothing written), then its operation.
Active: the job is not reconciling, its ``terminalCondition`` succeeded and its template is the
one asked for. Health: with ``run_to_verify``, one execution (``jobs.run``) must finish with every
task succeeded; otherwise the job's Ready condition (the template was accepted: image, secrets,
service account) and the revision's own record, which made it eligible. The Cloud Scheduler
trigger, if any, keeps running the job as it is: a rollback changes what the next run runs.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from typing import Any, Callable

from clusterstack.adapters.gcp import CloudRunApi, GcpCallError, GcpCredentialsError
from clusterstack.components.services import marks
from clusterstack.config.services import CloudRunJobTarget
from clusterstack.deploy import gcperrors
from clusterstack.deploy.model import (
    HEALTHY,
    UNHEALTHY,
    UNKNOWN,
    ActivationFailed,
    ActivationRejected,
    BackendError,
    HealthResult,
    LostResponse,
    NotActive,
    RefreshAfterRollback,
    Revision,
    RollbackPlan,
    Snapshot,
    Waiter,
    Which,
    WorldMoved,
    wait_serving,
)

SOURCE_REVISION_ENV = marks.JOB_SOURCE_REVISION_ENV
"""Container environment variable with the commit a job template was rolled out from."""
CHANGE_CAUSE_ENV = marks.JOB_CHANGE_CAUSE_ENV
"""Container environment variable with the rollout message."""


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _key(template: dict[str, Any]) -> str:
    """The identity of a task template: its canonical JSON."""
    return json.dumps(template or {}, sort_keys=True, separators=(",", ":"))


def _env(template: dict[str, Any], name: str) -> str | None:
    for c in (template or {}).get("containers") or []:
        for e in c.get("env") or []:
            if e.get("name") == name:
                return e.get("value")
    return None


def _images(template: dict[str, Any]) -> str:
    return ", ".join(c.get("image", "?") for c in (template or {}).get("containers") or [])


def _outcome(execution: dict[str, Any]) -> str:
    """healthy / unhealthy / unknown (see the module docstring)."""
    if not execution.get("completionTime"):
        return UNKNOWN
    tasks = int(execution.get("taskCount") or 0)
    if int(execution.get("failedCount") or 0) > 0:
        return UNHEALTHY
    if tasks and int(execution.get("succeededCount") or 0) == tasks:
        return HEALTHY
    return UNKNOWN


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


class CloudRunJobBackend(RefreshAfterRollback):
    """:class:`~clusterstack.deploy.model.Backend` over one Cloud Run job (module docstring).
    ``api``: :class:`~clusterstack.adapters.gcp.CloudRunApi`; ``target``: the registry's
    ``cloud_run_job`` block; ``refresh``: ``pulumi refresh`` of the service's stack after a
    rollback."""

    kind = "cloud-run-job"

    def __init__(self, service: str, api: CloudRunApi, *, target: CloudRunJobTarget,
                 refresh: Callable[[], Any] | None = None) -> None:
        self.service = service
        self.api = api
        self.target = target
        self._refresh = refresh
        self._runs: dict[str, str] = {}  # which → the execution started to verify it

    # -- reading ---------------------------------------------------------------------------
    def _read(self, fn: Callable[[], Any]) -> Any:
        """A read (:func:`clusterstack.deploy.gcperrors.read`)."""
        return gcperrors.read(fn, service=self.service,
                              denied=f"the account needs run.jobs.get and run.executions.list on project "
                                     f"{self.target.project} (roles/run.viewer)",
                              hint=f"check cloud_run_job of {self.service} in services.yaml and the Cloud Run API")

    def _job(self) -> dict[str, Any]:
        return self._read(lambda: self.api.get_job(self.target.resource_name))

    @staticmethod
    def _template(job: dict[str, Any]) -> dict[str, Any]:
        return (job.get("template") or {}).get("template") or {}

    @staticmethod
    def _world(job: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return (("job etag", str(job.get("etag", ""))), ("generation", str(job.get("generation", ""))))

    def snapshot(self) -> Snapshot:
        job = self._job()
        executions = self._read(lambda: self.api.list_executions(self.target.resource_name))
        executions = sorted(executions, key=lambda e: (_time(e.get("createTime")) or datetime.min.replace(
            tzinfo=timezone.utc), e.get("name", "")))
        groups: dict[str, list[dict[str, Any]]] = {}
        for e in executions:
            groups.setdefault(_key(e.get("template") or {}), []).append(e)
        current = self._template(job)
        current_key = _key(current)
        templates = {k: runs[0].get("template") or {} for k, runs in groups.items()}
        order = list(groups)                       # first-run order: oldest first
        if current_key not in groups:
            order.append(current_key)
            templates[current_key] = current
        revisions = []
        for n, k in enumerate(order, 1):
            runs = groups.get(k, [])
            finished = [e for e in runs if _outcome(e) != UNKNOWN]
            health = _outcome(finished[-1]) if finished else UNKNOWN
            template = templates[k]
            commit = _env(template, SOURCE_REVISION_ENV)
            last = runs[-1] if runs else None
            revisions.append(Revision(
                number=n, name=_short(last["name"]) if last else "(not run yet)",
                created=_time(runs[0].get("createTime")) if runs else _time(job.get("updateTime")),
                health=health, serving=k == current_key,
                git_commit=None if commit in (None, "", marks.UNRELEASED) else commit,
                message=_env(template, CHANGE_CAUSE_ENV) or "",
                detail=f"{_images(template)}; {len(runs)} execution(s)"))
        revisions.sort(key=lambda r: r.number, reverse=True)
        return Snapshot(service=self.service, kind=self.kind, revisions=tuple(revisions), world=self._world(job),
                        state={"job": job, "templates": {n: templates[k] for n, k in enumerate(order, 1)}})

    # -- planning --------------------------------------------------------------------------
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None:
        return None

    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan:
        templates = snap.state["templates"]
        notes = (f"image: {_images(templates[source.number])} → {_images(templates[target.number])}",
                 f"commit: {source.git_commit or 'unrecorded'} → {target.git_commit or 'unrecorded'}",
                 f"jobs.patch of {self.target.resource_name}: task template ← the one execution "
                 f"{target.name} ran; precondition: etag {dict(snap.world)['job etag']}")
        return RollbackPlan(service=self.service, kind=self.kind, source=source, target=target, world=snap.world,
                            activate={"job": snap.state["job"], "template": templates[target.number]},
                            restore={"template": templates[source.number]}, notes=notes)

    def recheck(self, plan: RollbackPlan) -> None:
        now = self._world(self._job())
        if now != plan.world:
            before = dict(plan.world)
            raise WorldMoved(self.service, "; ".join(f"{k} {before.get(k)!r} → {v!r}" for k, v in now
                                                     if before.get(k) != v))

    # -- acting ----------------------------------------------------------------------------
    def _update(self, job: dict[str, Any], template: dict[str, Any]) -> None:
        body = copy.deepcopy(job)
        body.setdefault("template", {})["template"] = copy.deepcopy(template)
        try:
            self.api.update_job(body)
        except (GcpCallError, GcpCredentialsError) as exc:
            raise gcperrors.activation_error(exc, service=self.service, call="jobs.patch", precondition="etag") from None

    def activate(self, plan: RollbackPlan) -> None:
        self._update(plan.activate["job"], plan.activate["template"])

    def restore(self, plan: RollbackPlan) -> None:
        try:
            self._update(self._job(), plan.restore["template"])
        except (BackendError, ActivationRejected, ActivationFailed, LostResponse, WorldMoved) as exc:
            msg = exc.problems[0].message if isinstance(exc, BackendError) else str(exc)
            raise NotActive(f"restore failed: {msg}") from None

    def observe(self, plan: RollbackPlan) -> str:
        now = _key(self._template(self._job()))
        if now == _key(plan.activate["template"]):
            return "target"
        if now == _key(plan.restore["template"]):
            return "source"
        return "other"

    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None:
        def judge(job: dict[str, Any], template: dict[str, Any], revision: Revision) -> str | None:
            if _key(self._template(job)) != _key(template):
                if job.get("reconciling"):
                    return "reconciling"
                raise NotActive("the job's template is not the one activated (someone else changed it)")
            terminal = job.get("terminalCondition") or {}
            if terminal.get("state") == "CONDITION_FAILED":
                raise NotActive(f"job not ready: {terminal.get('message', '')}".strip())
            if job.get("reconciling"):
                return "reconciling"
            if terminal.get("state") != "CONDITION_SUCCEEDED":
                return f"terminal condition {terminal.get('state') or 'unknown'}"
            return None

        wait_serving(waiter, plan, which, key="template", read=self._job, reading="the job",
                     judge=judge, where=f"job {self.target.job}")

    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult:
        if not self.target.run_to_verify:
            return HealthResult(True, f"job {self.target.job} Ready with the template of revision "
                                      f"{(plan.target if which == 'target' else plan.source).number}")
        name = self._runs.get(which)
        if name is None:
            job = self._job()
            try:
                name = self.api.run_job(self.target.resource_name, str(job.get("etag", "")))
            except (GcpCallError, GcpCredentialsError) as exc:
                raise NotActive(f"jobs.run failed: {exc.problems[0].message}") from None
            self._runs[which] = name
            return HealthResult(False, f"execution {_short(name)} started")
        try:
            execution = self._read(lambda: self.api.get_execution(name))
        except BackendError as exc:
            return HealthResult(False, exc.problems[0].message)
        outcome = _outcome(execution)
        if outcome == HEALTHY:
            return HealthResult(True, f"execution {_short(name)}: {execution.get('succeededCount')}/"
                                      f"{execution.get('taskCount')} task(s) succeeded")
        if outcome == UNHEALTHY:
            raise NotActive(f"execution {_short(name)} failed: {execution.get('failedCount')} of "
                            f"{execution.get('taskCount')} task(s)")
        if execution.get("completionTime"):
            raise NotActive(f"execution {_short(name)} ended without succeeding (cancelled?)")
        return HealthResult(False, f"execution {_short(name)} running")

    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None:
        """The executions are the record (module docstring)."""

    # -- rollout verification --------------------------------------------------------------
    def serving_plan(self) -> RollbackPlan:
        """A degenerate plan whose target is the job's current template (verifies a rollout)."""
        snap = self.snapshot()
        top = snap.serving[0]
        template = snap.state["templates"][top.number]
        return RollbackPlan(service=self.service, kind=self.kind, source=top, target=top, world=snap.world,
                            activate={"job": snap.state["job"], "template": template},
                            restore={"template": template})
