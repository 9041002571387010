"""One rollback planner and one executor for every backend.

Planner (:func:`plan_rollback`):

- the *source* is the serving revision (with split traffic: the one with the most traffic,
  newest on a tie);
- default target: the next revision *older than the source* whose health is ``healthy``
  (and that the backend can activate);
- ``--to-revision N``: N must be retained (listed), not serving, and healthy; otherwise the
  refusal says which rule failed. Nothing is changed while planning.

Executor (:func:`execute`), in order:

1. re-check the world (Kubernetes: Deployment uid + current revision; Cloud Run: serving
   split + etag; Pulumi: latest update version) — moved → :class:`WorldMoved` ("plan
   again"), nothing changed;
2. activate the target (a definite refusal → :class:`RollbackRefused`, nothing changed; a
   lost response → re-read the world: the target visible → carry on, else
   :class:`ActivationUncertain`);
3. wait until the target is active (bounded), then poll its health until healthy (bounded);
4. on any failure after activation may have started (failed operation, not active in time,
   unhealthy): mark the target unhealthy, restore the source, wait for it, verify its health
   → :class:`FailedRestored`, or :class:`FailedRestoreFailed` when any of that fails;
5. success: mark target healthy and source rolled-back, then ``pulumi refresh`` the service's
   stack (Kubernetes, Cloud Run) so state matches what runs → :class:`RolledBack`.
"""

from __future__ import annotations

from typing import Callable

from clusterstack.errors import ClusterstackError
from clusterstack.deploy.model import (
    HEALTHY,
    ROLLED_BACK,
    UNHEALTHY,
    ActivationFailed,
    ActivationRejected,
    ActivationUncertain,
    Backend,
    BackendError,
    FailedRestored,
    FailedRestoreFailed,
    LostResponse,
    NotActive,
    Outcome,
    Revision,
    RollbackPlan,
    RollbackRefused,
    RolledBack,
    Snapshot,
    Timing,
    Which,
)


def source_of(snap: Snapshot) -> Revision:
    """The serving revision a rollback starts from. Raises RollbackRefused when none serves."""
    serving = snap.serving
    if not serving:
        raise RollbackRefused("no revision is serving", "nothing to roll back from; check the "
                              "service with `deploy <service> history`", field=f"service {snap.service}")
    if len(serving) == 1:
        return serving[0]
    split = (snap.state or {}).get("split", {}) if isinstance(snap.state, dict) else {}
    return max(serving, key=lambda r: (split.get(r.name, 0), r.number))


def choose_target(backend: Backend, snap: Snapshot, to_revision: int | None) -> tuple[Revision, Revision]:
    """``(source, target)`` by the planner's rules (module docstring). Raises RollbackRefused."""
    source = source_of(snap)
    where = f"service {snap.service}"
    if to_revision is not None:
        target = snap.get(to_revision)
        retained = ", ".join(str(r.number) for r in snap.revisions) or "none"
        if target is None:
            raise RollbackRefused(f"revision {to_revision} is not retained", f"retained: {retained} "
                                  "(see `deploy <service> history`)", field=where)
        if target.serving:
            raise RollbackRefused(f"revision {to_revision} is serving already", "nothing to roll back to",
                                  field=where)
        if target.health != HEALTHY:
            raise RollbackRefused(f"revision {to_revision} is not known healthy (health: {target.health})",
                                  "pick a healthy revision from `deploy <service> history`", field=where)
        reason = backend.ineligible(snap, target)
        if reason:
            raise RollbackRefused(f"revision {to_revision} cannot be activated: {reason}",
                                  "pick another revision", field=where)
        return source, target
    skipped = []
    for r in snap.revisions:  # newest first
        if r.number >= source.number or r.serving:
            continue
        if r.health != HEALTHY:
            skipped.append(f"{r.number} ({r.health})")
            continue
        reason = backend.ineligible(snap, r)
        if reason:
            skipped.append(f"{r.number} ({reason})")
            continue
        return source, r
    raise RollbackRefused(f"no revision older than the serving one ({source.number}) is known healthy",
                          ("skipped: " + "; ".join(skipped) + ". " if skipped else "no older revision is retained. ")
                          + "Choose one with --to-revision N after checking `deploy <service> history`, "
                          "or roll out a fix", field=where)


def plan_rollback(backend: Backend, *, to_revision: int | None = None) -> RollbackPlan:
    """Read the backend, pick the target, and let the backend complete the plan. Changes
    nothing. Raises RollbackRefused (no eligible target) and BackendError (API unreadable)."""
    snap = backend.snapshot()
    source, target = choose_target(backend, snap, to_revision)
    return backend.prepare(snap, source, target)


def verify_active(backend: Backend, plan: RollbackPlan, which: Which, timing: Timing,
            log: Callable[[str], None]) -> None:
    """Wait until ``which`` is active, then poll its health until healthy — each bounded by
    ``timing.timeout``. Raises NotActive with the last reason."""
    backend.wait_active(plan, which, timing.waiter())
    revision = plan.target if which == "target" else plan.source
    log(f"revision {revision.number} is active")
    last: list[str] = []

    def probe() -> str | None:
        result = backend.check_health(plan, which)
        last[:] = [result.detail]
        return None if result.ok else result.detail

    timing.waiter().until(probe, f"health of revision {revision.number}")
    log(f"revision {revision.number} is healthy ({last[0] if last else 'ok'})")


def execute(backend: Backend, plan: RollbackPlan, timing: Timing,
            log: Callable[[str], None] = lambda _line: None) -> Outcome:
    """Carry out ``plan`` (module docstring). Returns a typed :class:`Outcome`; raises
    WorldMoved / RollbackRefused when nothing was changed, BackendError when the API could not
    be read before acting."""
    lines: list[str] = []

    def note(line: str) -> None:
        lines.append(line)
        log(line)

    backend.recheck(plan)
    note(f"world unchanged since planning ({', '.join(f'{k} {v}' for k, v in plan.world)})")
    try:
        backend.activate(plan)
        note(f"activation of revision {plan.target.number} accepted")
    except ActivationRejected as exc:
        raise RollbackRefused(f"the platform refused the activation: {exc}",
                              "nothing was changed; fix the cause and plan again",
                              field=f"service {plan.service}") from None
    except LostResponse as exc:
        note(f"activation response lost: {exc}")
        try:
            observed = backend.observe(plan)
        except BackendError as read_error:
            observed = f"unreadable ({read_error.problems[0].message})"
        note(f"re-read: {observed}")
        if observed != "target":
            return ActivationUncertain(plan=plan, log=tuple(lines), reason=str(exc), observed=observed)
    except ActivationFailed as exc:
        note(f"activation failed: {exc}")
        return _restore(backend, plan, timing, str(exc), lines, note)
    try:
        verify_active(backend, plan, "target", timing, note)
    except NotActive as exc:
        note(f"target not healthy: {exc}")
        return _restore(backend, plan, timing, str(exc), lines, note)
    backend.record(plan, "target", HEALTHY)
    backend.record(plan, "source", ROLLED_BACK)
    refreshed, refresh_error = None, ""
    try:
        refreshed = backend.after_rollback(plan)
        if refreshed:
            note("pulumi refresh: state now matches the running revision")
    except Exception as exc:  # the rollback stands; the operator must refresh later
        refreshed, refresh_error = False, (exc.problems[0].message if isinstance(exc, ClusterstackError) else str(exc))
        note(f"pulumi refresh failed: {refresh_error}")
    return RolledBack(plan=plan, log=tuple(lines), refreshed=refreshed, refresh_error=refresh_error)


def _restore(backend: Backend, plan: RollbackPlan, timing: Timing, reason: str,
             lines: list[str], note: Callable[[str], None]) -> Outcome:
    backend.record(plan, "target", UNHEALTHY)
    note(f"restoring revision {plan.source.number}")
    try:
        backend.restore(plan)
        verify_active(backend, plan, "source", timing, note)
    except (NotActive, BackendError) as exc:
        msg = exc.problems[0].message if isinstance(exc, BackendError) else str(exc)
        note(f"restore failed: {msg}")
        return FailedRestoreFailed(plan=plan, log=tuple(lines), reason=reason, restore_error=msg)
    return FailedRestored(plan=plan, log=tuple(lines), reason=reason)
