"""The Cloud Run backend: a service and its retained revisions, through the Cloud Run adapter
(:class:`clusterstack.adapters.gcp.CloudRunApi`: Cloud Run Admin API v2, services and revisions).

Revisions (Cloud Run "Rollbacks, gradual rollouts, and traffic migration"; Admin API v2
reference for ``Service``, ``Revision``, ``TrafficTarget``):

- every revision of the service (``revisions.list``) is retained and can take traffic again;
- numbered by the generation in its generated name ``<service>-<NNNNN>-<suffix>``; when any
  revision has a custom name, by creation order instead (1 = oldest);
- serving: the revisions in ``traffic_statuses`` with a percent above 0 (a ``LATEST`` status
  is resolved to ``latest_ready_revision``);
- health: the revision's ``Ready`` condition — ``CONDITION_SUCCEEDED`` means it passed its
  startup probe and served, ``CONDITION_FAILED`` that it never became ready.

Activation: ``services.patch`` with ``traffic = [{REVISION, <target>, 100}]`` and the etag of
the planned read as precondition (the API answers 409 ``ABORTED`` / 412 when the service
changed since — nothing is written), then the long-running operation. "Active":
not reconciling, ``terminal_condition`` succeeded, and ``traffic_statuses`` equal to the split
asked for. Restore puts back the exact ``traffic`` list the service had.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

from clusterstack.components.services import marks
from clusterstack.deploy.health import http_check
from clusterstack.deploy.model import (
    HEALTHY,
    UNHEALTHY,
    UNKNOWN,
    ActivationFailed,
    ActivationRejected,
    ApiUnreachable,
    BackendError,
    CredentialsUnavailable,
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
from clusterstack.config.services import CloudRunTarget, HttpCheck
from clusterstack.adapters.gcp import (CONFLICT, CREDENTIALS, LOGIN_HINT, NOT_FOUND, PERMISSION_DENIED,
    UNREACHABLE, CloudRunApi, GcpApiError, GcpCredentialsError, RunCondition, RunRevision, RunService,
    call_errors, classify, run_service, run_service_json, run_traffic, run_traffic_json)

#: Seconds ``GetService`` is retried while the API answers 503: google-cloud-run's own default
#: (0.16.2, ``run_v2/services/services/transports/base.py``, ``get_service`` ``default_retry``:
#: initial 1 s, ×1.3, at most 10 s apart, deadline 10 s), passed explicitly so that the message
#: of a read that runs out states the budget it had. ``ListRevisions`` has no default retry.
GET_SERVICE_RETRY_S = 10.0

_GENERATED = re.compile(r"-(\d{5,})-[a-z0-9]{3}$")
REVISION_TYPE = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
LATEST_TYPE = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
T = TypeVar("T")


def short_name(name: str) -> str:
    """``projects/…/revisions/echo-00003-abc`` → ``echo-00003-abc``."""
    return name.rsplit("/", 1)[-1]


def _utc(ts: Any) -> datetime | None:
    if ts is None:
        return None
    if isinstance(ts, datetime):
        return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)
    return None


def _condition(obj: RunRevision, type_: str) -> RunCondition | None:
    return next((c for c in obj.conditions if c.type_ == type_), None)


def _state(cond: RunCondition | None) -> str:
    return cond.state.name if cond is not None else "STATE_UNSPECIFIED"


def _type_name(t: Any) -> str:
    return getattr(t, "name", str(t))


class CloudRunBackend(RefreshAfterRollback):
    """:class:`~clusterstack.deploy.model.Backend` over one Cloud Run service.

    ``api``: :class:`~clusterstack.adapters.gcp.CloudRunApi`; ``http``: the registry's URL health check; ``refresh``: called after a successful rollback
    (``engine.refresh``); ``timeout``: seconds per API call and for the operation;
    ``get_retry_s``: seconds ``GetService`` is retried on 503 (:data:`GET_SERVICE_RETRY_S`).
    """

    kind = "cloud-run"

    def __init__(self, service: str, api: CloudRunApi, *, target: CloudRunTarget,
                 http: HttpCheck | None = None, refresh: Callable[[], Any] | None = None,
                 timeout: float = 60.0, get_retry_s: float = GET_SERVICE_RETRY_S) -> None:
        self.service = service
        self.target = target
        self.http = http
        self._api = api
        self._refresh = refresh
        self._timeout = timeout
        self._get_retry_s = get_retry_s

    # -- reading ---------------------------------------------------------------------------
    def _call(self, fn: Callable[[], T], what: str, unreachable: str | None = None) -> T:
        """``fn()``, a read; a failure of the API as :func:`clusterstack.adapters.gcp.call_errors`
        sorts it: missing or refused credentials (401) and a refused read (403: the operator's
        account lacks the role) → CredentialsUnavailable (exit 2: nothing was read, nothing
        changed), an API that cannot be reached → ApiUnreachable (exit 2: nothing changed
        either), anything else → BackendError (exit 1), all on field ``service <name>``.
        ``unreachable``: the hint when the API cannot be reached (what was retried)."""
        hints = {NOT_FOUND: f"check cloud_run of {self.service} in services.yaml",
                 CREDENTIALS: f"check your credentials: {LOGIN_HINT}",
                 PERMISSION_DENIED: f"check your credentials/role: the account of your Google "
                                    f"credentials needs run.services.get and run.revisions.list on "
                                    f"project {self.target.project} (roles/run.viewer)",
                 **({UNREACHABLE: unreachable} if unreachable else {})}
        try:
            with call_errors("Cloud Run API", f"reading {what}", hints):
                return fn()
        except GcpCredentialsError as exc:
            p = exc.problems[0]
            raise CredentialsUnavailable(p.message, p.hint, field=f"service {self.service}") from None
        except GcpApiError as exc:
            p = exc.problems[0]
            cls = (CredentialsUnavailable if exc.kind == PERMISSION_DENIED
                   else ApiUnreachable if exc.kind == UNREACHABLE else BackendError)
            raise cls(p.message, p.hint, field=f"service {self.service}") from None

    def _get(self) -> RunService:
        # google-cloud-run's default retry of GetService (GET_SERVICE_RETRY_S), its budget ours
        budget = f"{self._get_retry_s:g} s"
        return self._call(lambda: self._api.get_service(self.target.resource_name, retry_s=self._get_retry_s,
                                                        timeout=self._timeout),
                          f"service {self.target.resource_name}",
                          unreachable=f"GetService was retried for {budget} while the API answered "
                                      "503; check the network (and a proxy, if any) and Cloud Run's "
                                      "status, then run it again")

    @staticmethod
    def serving_split(svc: RunService) -> dict[str, int]:
        """``{revision short name: percent}`` of ``svc.traffic_statuses`` (percent > 0)."""
        out: dict[str, int] = {}
        for ts in svc.traffic_statuses:
            name = ts.revision or (short_name(svc.latest_ready_revision)
                                   if _type_name(ts.type_) == LATEST_TYPE else "")
            if name and ts.percent > 0:
                out[short_name(name)] = out.get(short_name(name), 0) + ts.percent
        return dict(sorted(out.items()))

    def _world(self, svc: RunService) -> tuple[tuple[str, str], ...]:
        split = ",".join(f"{k}={v}" for k, v in self.serving_split(svc).items())
        return (("serving", split), ("etag", svc.etag))

    def snapshot(self) -> Snapshot:
        svc = self._get()
        revs = self._call(lambda: self._api.list_revisions(self.target.resource_name, timeout=self._timeout),
                          "revisions")
        split = self.serving_split(svc)
        numbered = all(_GENERATED.search(short_name(r.name)) for r in revs)
        by_time = {r.name: i + 1 for i, r in enumerate(sorted(revs, key=lambda r: (_utc(r.create_time) or datetime.min.replace(tzinfo=timezone.utc), r.name)))}
        revisions = []
        for r in revs:
            short = short_name(r.name)
            generated = _GENERATED.search(short) if numbered else None
            number = int(generated.group(1)) if generated else by_time[r.name]
            ready = _state(_condition(r, "Ready"))
            health = HEALTHY if ready == "CONDITION_SUCCEEDED" else UNHEALTHY if ready == "CONDITION_FAILED" else UNKNOWN
            commit = r.annotations.get(marks.SOURCE_REVISION)
            image = ", ".join(c.image for c in r.containers)
            pct = split.get(short, 0)
            revisions.append(Revision(
                number=number, name=short, created=_utc(r.create_time), health=health,
                serving=pct > 0, git_commit=None if commit in (None, "", marks.UNRELEASED) else commit,
                message=r.annotations.get(marks.CLOUD_RUN_CHANGE_CAUSE, ""),
                detail=f"{image}; traffic {pct}%"))
        revisions.sort(key=lambda r: r.number, reverse=True)
        return Snapshot(service=self.service, kind=self.kind, revisions=tuple(revisions),
                        world=self._world(svc), state={"service": svc, "split": split})

    # -- planning --------------------------------------------------------------------------
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None:
        return None

    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan:
        svc = snap.state["service"]
        split = snap.state["split"]
        now = ", ".join(f"{k} {v}%" for k, v in split.items()) or "nothing"
        notes = (f"traffic: {now} → {target.name} 100%",
                 f"commit: {source.git_commit or 'unrecorded'} → {target.git_commit or 'unrecorded'}",
                 f"precondition: service etag {svc.etag}")
        return RollbackPlan(
            service=self.service, kind=self.kind, source=source, target=target, world=snap.world,
            activate={"service": run_service_json(svc), "split": {target.name: 100}},
            restore={"traffic": [run_traffic_json(t) for t in svc.traffic], "split": split},
            notes=notes)

    def recheck(self, plan: RollbackPlan) -> None:
        now = self._world(self._get())
        if now != plan.world:
            before = dict(plan.world)
            moved = "; ".join(f"{k} {before.get(k)!r} → {v!r}" for k, v in now if before.get(k) != v)
            raise WorldMoved(self.service, moved)

    # -- acting ----------------------------------------------------------------------------
    def _update(self, svc: RunService) -> None:
        """``services.patch`` + its operation, errors sorted by what they mean."""
        import concurrent.futures


        try:
            op = self._api.update_service(svc, timeout=self._timeout)
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.kind == CONFLICT:
                raise WorldMoved(self.service, f"the etag precondition failed ({failure.code} "
                                               f"{failure.detail})") from None
            if failure.kind == UNREACHABLE:  # the write may or may not have happened
                raise LostResponse(f"no usable response to services.patch ({type(exc).__name__})") from None
            raise ActivationRejected(f"{failure.code} {failure.detail}") from None
        try:
            op.result(timeout=self._timeout)
        except concurrent.futures.TimeoutError:
            return  # still running; wait_active watches the service itself
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.kind == UNREACHABLE:
                raise LostResponse(f"lost the update operation ({type(exc).__name__})") from None
            raise ActivationFailed(f"the update operation failed: {failure.detail}") from None

    def activate(self, plan: RollbackPlan) -> None:
        svc = run_service(plan.activate["service"])  # the planned read: its etag
        svc.traffic = [run_traffic(type_=REVISION_TYPE, revision=plan.target.name, percent=100)]
        self._update(svc)

    def restore(self, plan: RollbackPlan) -> None:
        try:
            svc = self._get()
            svc.traffic = [run_traffic(t) for t in plan.restore["traffic"]]
            self._update(svc)
        except (BackendError, ActivationRejected, ActivationFailed, LostResponse, WorldMoved) as exc:
            msg = exc.problems[0].message if isinstance(exc, BackendError) else str(exc)
            raise NotActive(f"restore failed: {msg}") from None

    def observe(self, plan: RollbackPlan) -> str:
        svc = self._get()
        traffic = [(_type_name(t.type_), t.revision, t.percent) for t in svc.traffic]
        if traffic == [(REVISION_TYPE, plan.target.name, 100)]:
            return "target"
        before = [run_traffic(t) for t in plan.restore["traffic"]]
        if traffic == [(_type_name(t.type_), t.revision, t.percent) for t in before]:
            return "source"
        return "other"

    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None:
        def judge(svc: RunService, want: dict[str, int], revision: Revision) -> str | None:
            terminal = _state(svc.terminal_condition if "terminal_condition" in svc else None)
            if terminal == "CONDITION_FAILED":
                raise NotActive(f"service not ready: {svc.terminal_condition.message}")
            if svc.reconciling:
                return "reconciling"
            split = self.serving_split(svc)
            if split != want:
                return f"traffic {split}, want {want}"
            if terminal != "CONDITION_SUCCEEDED":
                return f"terminal condition {terminal}"
            return None

        wait_serving(waiter, plan, which, key="split", read=self._get, reading="the service",
                     judge=judge, where=self.target.service)

    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult:
        names = [plan.target.name] if which == "target" else list(plan.restore["split"])
        for name in names:
            full = f"{self.target.resource_name}/revisions/{name}"
            try:
                rev = self._call(lambda full=full: self._api.get_revision(full, timeout=self._timeout),
                                 f"revision {name}")
            except BackendError as exc:
                return HealthResult(False, exc.problems[0].message)
            ready = _condition(rev, "Ready")
            if _state(ready) != "CONDITION_SUCCEEDED":
                return HealthResult(False, f"revision {name} Ready={_state(ready)}"
                                           + (f": {ready.message}" if ready is not None and ready.message else ""))
        if self.http is not None and self.http.url:
            return http_check(self.http.url, expect_status=self.http.expect_status,
                              expect_json=self.http.expect_json, timeout=min(self._timeout, 30.0))
        return HealthResult(True, f"revision(s) {', '.join(names)} Ready")

    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None:
        """Revisions are immutable; their Ready condition is the record."""

    def serving_plan(self) -> RollbackPlan:
        """A degenerate plan whose target is the serving split (verifies a rollout)."""
        snap = self.snapshot()
        svc, split = snap.state["service"], snap.state["split"]
        if not snap.serving:
            raise BackendError(f"service {self.target.service} serves no revision",
                               "check the service in the console", field=f"service {self.service}")
        top = max(snap.serving, key=lambda r: (split.get(r.name, 0), r.number))
        traffic = [run_traffic_json(t) for t in svc.traffic]
        return RollbackPlan(service=self.service, kind=self.kind, source=top, target=top,
                            world=snap.world, activate={"service": run_service_json(svc), "split": split},
                            restore={"traffic": traffic, "split": split})
