"""Types shared by every deploy backend: revisions, snapshots, rollback plans, typed outcomes,
the :class:`Backend` protocol and the bounded :class:`Waiter`.

A *backend* is one way a service runs — a Kubernetes Deployment, a Cloud Run service, or a
plain Pulumi stack — behind the same protocol, so ``history``, the rollback planner and the
rollback executor (:mod:`clusterstack.deploy.rollback`) are written once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, ClassVar, Literal, Protocol, TypeVar

from clusterstack.errors import ClusterstackError
from clusterstack.guard import Verdict

HEALTHY, UNHEALTHY, ROLLED_BACK, UNKNOWN = "healthy", "unhealthy", "rolled-back", "unknown"

Which = Literal["target", "source"]


@dataclass(frozen=True)
class Revision:
    """One retained revision of a service.

    ``number``: Kubernetes ``deployment.kubernetes.io/revision`` of the ReplicaSet; Cloud Run
    the revision's generation (``<service>-<NNNNN>-<suffix>``); Pulumi the update version.
    ``name``: the ReplicaSet / Cloud Run revision name, or ``version N``. ``created``: UTC.
    ``health``: healthy / unhealthy / rolled-back / unknown (how each backend knows: see its
    module). ``serving``: it takes traffic now. ``git_commit``: the commit it was rolled out
    from (None when not recorded). ``detail``: backend facts worth showing (image, traffic %,
    update result).
    """

    number: int
    name: str
    created: datetime | None
    health: str
    serving: bool
    git_commit: str | None
    message: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.number, "name": self.name,
                "time": self.created.strftime("%Y-%m-%dT%H:%M:%SZ") if self.created else None,
                "health": self.health, "serving": self.serving, "git_commit": self.git_commit,
                "message": self.message, "detail": self.detail}


@dataclass(frozen=True)
class Snapshot:
    """What a backend sees now. ``revisions`` newest first; ``world``: the facts that must not
    change between planning and acting (e.g. ``(("deployment uid", …), ("revision", "5"))``);
    ``state``: the backend's own data for planning (raw API objects)."""

    service: str
    kind: str
    revisions: tuple[Revision, ...]
    world: tuple[tuple[str, str], ...]
    state: Any = None

    @property
    def serving(self) -> tuple[Revision, ...]:
        return tuple(r for r in self.revisions if r.serving)

    def get(self, number: int) -> Revision | None:
        return next((r for r in self.revisions if r.number == number), None)


@dataclass(frozen=True)
class RollbackPlan:
    """A planned rollback: from the serving ``source`` to ``target``. ``world``: the facts the
    executor re-checks before acting. ``restore``: what the backend needs to put the source
    back (a template, a traffic split, an update's commit and config). ``notes``: lines that
    describe the change for the operator; ``verdict``: the guard's verdict on the change, for
    backends whose activation is a Pulumi update (None otherwise)."""

    service: str
    kind: str
    source: Revision
    target: Revision
    world: tuple[tuple[str, str], ...]
    restore: Any = None
    activate: Any = None
    notes: tuple[str, ...] = ()
    verdict: Verdict | None = None

    def to_json(self) -> dict[str, Any]:
        return {"service": self.service, "kind": self.kind, "source": self.source.to_json(),
                "target": self.target.to_json(), "world": dict(self.world), "notes": list(self.notes)}


# --- typed outcomes -------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """How a rollback ended. ``log``: what the executor did, in order. ``exit_code``: 0 only
    for :class:`RolledBack`."""

    plan: RollbackPlan
    log: tuple[str, ...] = ()
    kind: ClassVar[str] = ""
    exit_code: ClassVar[int] = 1

    def summary(self) -> str:
        """One line for the operator; every concrete outcome below says more."""
        return f"rollback {self.kind or 'ended'}"

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in ("plan", "log")}
        return {"outcome": self.kind, "exit_code": self.exit_code, "plan": self.plan.to_json(),
                "log": list(self.log), **data}


@dataclass(frozen=True)
class RolledBack(Outcome):
    """The target is active and healthy. ``refreshed``: the Pulumi state was refreshed to
    match (None when the backend is Pulumi itself: the update wrote the state);
    ``refresh_error`` when that refresh failed (the rollback still stands)."""

    refreshed: bool | None = None
    refresh_error: str = ""
    kind: ClassVar[str] = "rolled-back"
    exit_code: ClassVar[int] = 0

    def summary(self) -> str:
        s = f"{self.plan.service}: rolled back to revision {self.plan.target.number} ({self.plan.target.name})"
        if self.refreshed is False:
            s += f"; pulumi refresh failed ({self.refresh_error}) — run it before the next rollout"
        return s


@dataclass(frozen=True)
class FailedRestored(Outcome):
    """Activating the target failed (``reason``); the source was restored and verified."""

    reason: str = ""
    kind: ClassVar[str] = "failed-restored"

    def summary(self) -> str:
        return (f"{self.plan.service}: rollback to revision {self.plan.target.number} failed "
                f"({self.reason}); revision {self.plan.source.number} was restored and is healthy")


@dataclass(frozen=True)
class FailedRestoreFailed(Outcome):
    """Activating the target failed (``reason``) and restoring the source failed too
    (``restore_error``): the service needs a human now."""

    reason: str = ""
    restore_error: str = ""
    kind: ClassVar[str] = "failed-restore-failed"

    def summary(self) -> str:
        return (f"{self.plan.service}: rollback to revision {self.plan.target.number} failed "
                f"({self.reason}) AND restoring revision {self.plan.source.number} failed "
                f"({self.restore_error}) — the service may be down; inspect it now")


@dataclass(frozen=True)
class ActivationUncertain(Outcome):
    """The activation request got no response (``reason``) and the world does not show the
    target active: it may or may not land later. ``observed``: what a re-read showed
    (``source`` still active, ``other``, or ``unreadable``). Nothing else was done."""

    reason: str = ""
    observed: str = ""
    kind: ClassVar[str] = "activation-uncertain"

    def summary(self) -> str:
        return (f"{self.plan.service}: activation of revision {self.plan.target.number} is "
                f"uncertain ({self.reason}); a re-read shows {self.observed}. Do not retry "
                "blindly: check `history`, then plan again")


# --- errors ---------------------------------------------------------------------------------

class RollbackRefused(ClusterstackError):
    """The rollback cannot be planned or started (no eligible target, bad ``--to-revision``,
    paused Deployment …). Nothing was changed. Exit 2."""


class WorldMoved(RollbackRefused):
    """What the plan was made against changed before the executor acted. Nothing was changed."""

    def __init__(self, service: str, what: str) -> None:
        super().__init__(f"the service changed since the rollback was planned: {what}",
                         "plan again (run the rollback command again and review the new plan)",
                         field=f"service {service}")


class BackendError(ClusterstackError):
    """A platform API failed in a way the operator must look at (unreachable, forbidden, an
    unexpected answer). Exit 1."""

    exit_code = 1


class ApiUnreachable(BackendError):
    """The platform API could not be reached while reading — no connection, a timeout, Google's
    503/504 after its retries — so nothing was read and nothing changed: exit 2, as ``verify``
    and ``github audit`` answer the same situation (one exit-code table,
    :mod:`clusterstack.cli.help`). A BackendError subclass, so the executor's handlers — which
    turn a failed read after an activation into an uncertain or failed outcome (exit 1) — still
    catch it."""

    exit_code = 2


class CredentialsUnavailable(BackendError):
    """No usable credentials or kube context for the platform API — a missing or unreadable
    kubeconfig, a context it lacks, no Application Default Credentials, or a 401 from the API.
    Raised while reading, before anything was changed, so exit 2 like every other "nothing
    changed" refusal (docs/rolling-back.md §3: exit 1 means "failed and restored" or
    "uncertain"). A BackendError subclass, so the executor's handlers still catch it."""

    exit_code = 2


class ActivationRejected(Exception):
    """The API refused the activation request: nothing was applied (a definite 4xx)."""


class ActivationFailed(Exception):
    """The activation started and failed (an operation that ended in error, a Pulumi update
    that stopped half-way): the source must be restored."""


class LostResponse(Exception):
    """The activation request was sent and no response came back (connection dropped,
    timeout): it may or may not have been applied."""


class NotActive(Exception):
    """A revision did not become active (or healthy) in time, or failed for good."""


@dataclass(frozen=True)
class HealthResult:
    ok: bool
    detail: str


# --- waiting --------------------------------------------------------------------------------

@dataclass
class Waiter:
    """A bounded poll: :meth:`until` calls ``probe`` every ``interval`` seconds until it returns
    None (done) or ``timeout`` seconds pass (NotActive with the probe's last status). A probe
    raises NotActive itself for a failure that waiting cannot fix. ``clock`` and ``sleep`` are
    injectable (tests use a fake clock; nothing waits on wall time)."""

    timeout: float
    interval: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def until(self, probe: Callable[[], str | None], what: str) -> None:
        deadline = self.clock() + self.timeout
        while True:
            status = probe()
            if status is None:
                return
            if self.clock() >= deadline:
                raise NotActive(f"{what}: not done after {self.timeout:g}s ({status})")
            self.sleep(self.interval)


State = TypeVar("State")


def wait_serving(waiter: Waiter, plan: RollbackPlan, which: Which, *, key: str,
                 read: Callable[[], State], reading: str,
                 judge: Callable[[State, Any, Revision], str | None], where: str) -> None:
    """THE probe/wait skeleton of every backend's :meth:`Backend.wait_active`: until ``which``
    of ``plan`` serves, poll (``waiter``) — read the platform's object (``read()``; a
    BackendError while reading is a status to wait on, ``cannot read <reading>: …``, not a
    failure: an API that blinks during a rollout is normal), then ask ``judge(state, want,
    revision)`` — ``want`` is ``plan.activate[key]`` (target) or ``plan.restore[key]``
    (source), ``revision`` the plan's target or source — which returns None (serving), a
    status to wait on, or raises NotActive for what waiting cannot fix. Raises NotActive
    (``revision <n> of <where>: not done after <timeout>s (<last status>)``) on timeout."""
    want = plan.activate[key] if which == "target" else plan.restore[key]
    revision = plan.target if which == "target" else plan.source

    def probe() -> str | None:
        try:
            state = read()
        except BackendError as exc:
            return f"cannot read {reading}: {exc.problems[0].message}"
        return judge(state, want, revision)

    waiter.until(probe, f"revision {revision.number} of {where}")


class RefreshAfterRollback:
    """:meth:`Backend.after_rollback` of every backend whose Pulumi state is brought in line by
    a refresh: ``_refresh`` (``pulumi refresh`` of the service's stack, or None where no stack
    declares the service: then not applicable)."""

    _refresh: Callable[[], Any] | None

    def after_rollback(self, plan: RollbackPlan) -> bool | None:
        if self._refresh is None:
            return None
        self._refresh()
        return True


class Backend(Protocol):
    """One way a service runs. Implementations: :mod:`clusterstack.deploy.kubernetes`,
    :mod:`clusterstack.deploy.cloudrun`, :mod:`clusterstack.deploy.cloudrunjob`,
    :mod:`clusterstack.deploy.gce`, :mod:`clusterstack.deploy.stack`.

    Contract used by the planner and executor (:mod:`clusterstack.deploy.rollback`):

    - :meth:`snapshot` — revisions (newest first) and the world facts; BackendError when the
      API cannot be read.
    - :meth:`ineligible` — a backend reason why a revision cannot be a rollback target, or None.
    - :meth:`prepare` — complete a plan (restore data, notes, guard verdict).
    - :meth:`recheck` — raise WorldMoved when the world facts changed.
    - :meth:`activate` — make the target serve; raises ActivationRejected (nothing applied),
      WorldMoved (a precondition failed on the server), ActivationFailed (started, failed) or
      LostResponse (unknown).
    - :meth:`observe` — after a lost response: ``"target"`` when the target is (being)
      activated, ``"source"`` when nothing changed, ``"other"``; BackendError if unreadable.
    - :meth:`wait_active` — block (``waiter``) until ``which`` serves; NotActive otherwise.
    - :meth:`check_health` — one health probe of ``which``.
    - :meth:`restore` — put the source back (like :meth:`activate`, raising the same types).
    - :meth:`record` — remember a health verdict where the platform allows (no-op elsewhere).
    - :meth:`after_rollback` — bring Pulumi's state in line (``pulumi refresh``); returns True
      when it ran, None when not applicable; raises on failure.
    """

    kind: str

    def snapshot(self) -> Snapshot: ...
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None: ...
    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan: ...
    def recheck(self, plan: RollbackPlan) -> None: ...
    def activate(self, plan: RollbackPlan) -> None: ...
    def observe(self, plan: RollbackPlan) -> str: ...
    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None: ...
    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult: ...
    def restore(self, plan: RollbackPlan) -> None: ...
    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None: ...
    def after_rollback(self, plan: RollbackPlan) -> bool | None: ...


class PlatformBackend(Backend, Protocol):
    """A :class:`Backend` whose platform keeps revisions of its own (Kubernetes, Cloud Run
    service and job, GCE VM — not a Pulumi stack): a rollout is verified on it."""

    def serving_plan(self) -> RollbackPlan:
        """A degenerate plan whose target is the serving revision: a rollout is verified with
        the same wait / health / record steps as a rollback."""
        ...


@dataclass(frozen=True)
class Timing:
    """How long the executor waits: ``timeout`` seconds per wait (activation, then restore),
    polling every ``interval``; ``clock``/``sleep`` injectable for tests."""

    timeout: float
    interval: float
    clock: Callable[[], float] = field(default=time.monotonic)
    sleep: Callable[[float], None] = field(default=time.sleep)

    def waiter(self) -> Waiter:
        return Waiter(self.timeout, self.interval, self.clock, self.sleep)
