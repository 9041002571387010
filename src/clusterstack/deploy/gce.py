"""The Compute Engine VM backend (kind ``gce-vm``): a service that is one container image run
by one VM, named by an instance metadata key, through :class:`~clusterstack.adapters.gcp.ComputeApi`.

Compute Engine keeps no record of what a VM ran, so — as for a Kubernetes ReplicaSet's health —
clusterstack writes one: the instance metadata key :data:`REVISIONS_KEY` holds the retained
revisions as JSON (``[{revision, image, commit, message, time, health}]``, oldest first, the
newest :data:`KEEP`; a metadata value may hold 256 KB: Compute Engine "About VM metadata",
limits). Only ``clusterstack deploy`` writes it, always with ``instances.setMetadata`` and the
metadata ``fingerprint`` it read as precondition (Compute Engine API v1 reference,
``instances.setMetadata``: a stale fingerprint is answered 412 ``conditionNotMet`` and nothing
is written) — so a concurrent change is refused, never overwritten. A Pulumi program that
declares the instance must keep that key with ``ignore_changes=['metadata["clusterstack-revisions"]']``
(what :class:`~clusterstack.components.services.gce.GceVmService` does; Marin's Loom program
ignores ``metadata["ssh-keys"]`` the same way, ``infra/loom/infrastructure.py``@002b940b
``_create_instance``), and the stack is refreshed after every write here and before a rollout.

- revisions: the recorded entries; the *serving* one is the newest whose image is the value of
  the target's ``image_key`` now. A VM whose image no entry records shows it as an unrecorded
  revision (number = the next one, health unknown) until a rollout or rollback records it.
- activation: one ``setMetadata`` (the image key set to the target's image, the planned
  fingerprint as precondition); then, with ``activation: restart``, ``instances.stop`` and
  ``instances.start`` (the VM's startup script reads the key at boot; "Stopping and starting a
  VM": stop is a graceful ACPI shutdown); with ``watch``, the component's launcher notices the
  change (metadata server ``?wait_for_change=true``) and restarts the container itself.
- active: the instance is ``RUNNING``, its image key is the image asked for and — ``watch`` —
  the launcher reports it in the guest attribute ``clusterstack/image`` (guest attributes are
  written only from inside the VM and read with ``instances.getGuestAttributes``: Compute
  Engine "Setting and querying guest attributes").
- health: the registry's HTTP check when given, else the launcher's guest attribute
  ``clusterstack/health`` (``ok`` once its local probe of the container passed, for the image in
  ``clusterstack/image``). Guest attributes allow 10 reads a minute per VM (same page): the
  poll interval of a ``watch`` VM is at least :data:`GUEST_POLL_MIN_S`.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

from clusterstack.adapters.gcp import ComputeApi, GcpCallError, GcpCredentialsError
from clusterstack.components.services import marks
from clusterstack.config.document import json_loads
from clusterstack.config.services import GceVmTarget, HttpCheck
from clusterstack.deploy import gcperrors
from clusterstack.deploy.health import http_check
from clusterstack.deploy.model import (
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

REVISIONS_KEY = marks.GCE_REVISIONS_KEY
"""Instance metadata key of the recorded revisions (JSON; see the module docstring)."""
SOURCE_REVISION_KEY = marks.GCE_SOURCE_REVISION_KEY
"""Instance metadata key with the commit of the rollout (written by the component)."""
CHANGE_CAUSE_KEY = marks.GCE_CHANGE_CAUSE_KEY
"""Instance metadata key with the rollout message (written by the component)."""
GUEST_NAMESPACE = marks.GUEST_NAMESPACE
"""Guest-attribute namespace of the launcher: ``image`` (what runs) and ``health``."""
KEEP = 10
"""Recorded revisions kept (as a Deployment's ``revisionHistoryLimit`` of the Kubernetes kind)."""
GUEST_POLL_MIN_S = 6.0
"""Seconds between guest-attribute reads: at most 10 queries a minute per VM (Compute Engine
"Setting and querying guest attributes", "When to use guest attributes")."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _items(instance: dict[str, Any]) -> dict[str, str]:
    return {i["key"]: i.get("value", "") for i in (instance.get("metadata") or {}).get("items") or []}


def _short(image: str) -> str:
    """``repo/path/name@sha256:0123456789ab…`` → ``name@sha256:0123456789ab``."""
    base, _, digest = image.partition("@")
    return f"{base.rsplit('/', 1)[-1]}@{digest[:19]}" if digest else base.rsplit("/", 1)[-1]


class GceVmBackend(RefreshAfterRollback):
    """:class:`~clusterstack.deploy.model.Backend` over one VM (see the module docstring).

    ``api``: :class:`~clusterstack.adapters.gcp.ComputeApi`; ``target``: the registry's
    ``gce_vm`` block; ``http``: its health check; ``refresh``: ``pulumi refresh`` of the
    service's stack (after every metadata write, so the state carries it); ``now``: the clock
    that stamps a recorded revision."""

    kind = "gce-vm"

    def __init__(self, service: str, api: ComputeApi, *, target: GceVmTarget,
                 http: HttpCheck | None = None, refresh: Callable[[], Any] | None = None,
                 now: Callable[[], datetime] = _now) -> None:
        self.service = service
        self.api = api
        self.target = target
        self.http = http
        self._refresh = refresh
        self._now = now

    @property
    def min_poll_seconds(self) -> float:
        """The shortest poll interval this VM allows (guest attributes: :data:`GUEST_POLL_MIN_S`)."""
        return GUEST_POLL_MIN_S if self.target.activation == "watch" else 0.0

    # -- reading ---------------------------------------------------------------------------
    def _where(self) -> str:
        t = self.target
        return f"instance {t.project}/{t.zone}/{t.instance}"

    def _read(self, fn: Callable[[], Any]) -> Any:
        """A read (:func:`clusterstack.deploy.gcperrors.read`)."""
        return gcperrors.read(fn, service=self.service,
                              denied=f"the account needs compute.instances.get and "
                                     f"compute.instances.getGuestAttributes on project "
                                     f"{self.target.project} (roles/compute.viewer)",
                              hint=f"check gce_vm of {self.service} in services.yaml and the Compute Engine API")

    def _instance(self) -> dict[str, Any]:
        t = self.target
        return self._read(lambda: self.api.get_instance(t.project, t.zone, t.instance))

    def _guest(self) -> dict[str, str]:
        t = self.target
        return self._read(lambda: self.api.guest_attributes(t.project, t.zone, t.instance, GUEST_NAMESPACE)) or {}

    def _entries(self, items: dict[str, str]) -> list[dict[str, Any]]:
        raw = items.get(REVISIONS_KEY)
        if not raw:
            return []
        try:
            doc = json_loads(raw)
            if not isinstance(doc, list) or not all(isinstance(e, dict) and isinstance(e.get("revision"), int)
                                                    and isinstance(e.get("image"), str) for e in doc):
                raise ValueError("not a list of {revision, image, …}")
        except (ValueError, RecursionError) as exc:
            raise BackendError(f"{self._where()}: metadata {REVISIONS_KEY} is not clusterstack's record ({exc})",
                               f"inspect it (gcloud compute instances describe {self.target.instance}); remove "
                               "the key to start a new record", field=f"service {self.service}") from None
        return sorted(doc, key=lambda e: e["revision"])

    def _world(self, instance: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        items = _items(instance)
        return (("instance id", str(instance.get("id", ""))),
                ("metadata fingerprint", (instance.get("metadata") or {}).get("fingerprint", "")),
                ("image", items.get(self.target.image_key, "")))

    def snapshot(self) -> Snapshot:
        instance = self._instance()
        items = _items(instance)
        entries = self._entries(items)
        current = items.get(self.target.image_key, "")
        serving_no = next((e["revision"] for e in reversed(entries) if e["image"] == current), None)
        revisions = []
        for e in entries:
            commit = e.get("commit")
            revisions.append(Revision(
                number=e["revision"], name=_short(e["image"]), created=_parse_time(e.get("time")),
                health=e.get("health") or UNKNOWN, serving=e["revision"] == serving_no,
                git_commit=None if commit in (None, "", marks.UNRELEASED) else commit,
                message=e.get("message") or "", detail=e["image"]))
        unrecorded = None
        if serving_no is None and current:
            unrecorded = {"revision": (entries[-1]["revision"] if entries else 0) + 1, "image": current,
                          "commit": items.get(SOURCE_REVISION_KEY), "message": items.get(CHANGE_CAUSE_KEY, ""),
                          "time": None, "health": UNKNOWN}
            revisions.append(Revision(number=unrecorded["revision"], name=_short(current), created=None,
                                      health=UNKNOWN, serving=True, git_commit=None,
                                      message="(not recorded by clusterstack)", detail=current))
        revisions.sort(key=lambda r: r.number, reverse=True)
        return Snapshot(service=self.service, kind=self.kind, revisions=tuple(revisions),
                        world=self._world(instance),
                        state={"instance": instance, "items": items, "entries": entries, "unrecorded": unrecorded})

    # -- planning --------------------------------------------------------------------------
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None:
        if revision.detail == dict(snap.world)["image"]:
            return "its image is the one running"
        return None

    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan:
        t = self.target
        how = ("the launcher restarts the container (no reboot)" if t.activation == "watch"
               else "stop, then start the instance (its startup script reads the key at boot)")
        notes = (f"image ({t.image_key}): {source.detail} → {target.detail}",
                 f"commit: {source.git_commit or 'unrecorded'} → {target.git_commit or 'unrecorded'}",
                 f"activation: instances.setMetadata with fingerprint "
                 f"{dict(snap.world)['metadata fingerprint']}, then {how}")
        return RollbackPlan(
            service=self.service, kind=self.kind, source=source, target=target, world=snap.world,
            activate={"image": target.detail, "items": snap.state["items"],
                      "fingerprint": dict(snap.world)["metadata fingerprint"]},
            restore={"image": source.detail, "unrecorded": snap.state["unrecorded"]},
            notes=notes)

    def recheck(self, plan: RollbackPlan) -> None:
        now = self._world(self._instance())
        if now != plan.world:
            before = dict(plan.world)
            moved = "; ".join(f"{k} {before.get(k)!r} → {v!r}" for k, v in now if before.get(k) != v)
            raise WorldMoved(self.service, moved)

    # -- acting ----------------------------------------------------------------------------
    def _set_image(self, items: dict[str, str], fingerprint: str, image: str) -> None:
        """One ``setMetadata`` of ``items`` with the image key set to ``image`` (then, for a
        ``restart`` VM, stop + start), errors sorted by what they mean for the rollback."""
        t = self.target
        try:
            self.api.set_metadata(t.project, t.zone, t.instance, fingerprint=fingerprint,
                                  items={**items, t.image_key: image})
        except (GcpCallError, GcpCredentialsError) as exc:
            raise gcperrors.activation_error(exc, service=self.service, call="instances.setMetadata",
                                             precondition="metadata fingerprint") from None
        if t.activation == "restart":
            for step, call in (("stop", self.api.stop), ("start", self.api.start)):
                try:
                    call(t.project, t.zone, t.instance)
                except (GcpCallError, GcpCredentialsError) as exc:
                    error = gcperrors.activation_error(exc, service=self.service, call=f"instances.{step}")
                    # the image is set already: a refused stop/start is a failed activation
                    raise (error if isinstance(error, LostResponse) else ActivationFailed(str(error))) from None

    def activate(self, plan: RollbackPlan) -> None:
        self._set_image(dict(plan.activate["items"]), plan.activate["fingerprint"], plan.activate["image"])

    def restore(self, plan: RollbackPlan) -> None:
        try:
            instance = self._instance()
            self._set_image(_items(instance), (instance.get("metadata") or {}).get("fingerprint", ""),
                            plan.restore["image"])
        except (BackendError, ActivationRejected, ActivationFailed, LostResponse, WorldMoved) as exc:
            msg = exc.problems[0].message if isinstance(exc, BackendError) else str(exc)
            raise NotActive(f"restore failed: {msg}") from None

    def observe(self, plan: RollbackPlan) -> str:
        image = _items(self._instance()).get(self.target.image_key, "")
        if image == plan.activate["image"]:
            return "target"
        if image == plan.restore["image"]:
            return "source"
        return "other"

    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None:
        def judge(instance: dict[str, Any], want: str, revision: Revision) -> str | None:
            image = _items(instance).get(self.target.image_key, "")
            if image != want:
                raise NotActive(f"metadata {self.target.image_key} is now {image!r}, not the image "
                                "activated (someone else changed it)")
            status = instance.get("status", "")
            if status != "RUNNING":
                return f"instance {status or 'status unknown'}"
            if self.target.activation == "watch":
                try:
                    running = self._guest().get("image", "")
                except BackendError as exc:
                    return f"cannot read the guest attributes: {exc.problems[0].message}"
                if running != want:
                    return f"the launcher reports {_short(running) if running else 'no image'}"
            return None

        wait_serving(waiter, plan, which, key="image", read=self._instance, reading="the instance",
                     judge=judge, where=self._where())

    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult:
        want = plan.activate["image"] if which == "target" else plan.restore["image"]
        if self.http is not None and self.http.url:
            return http_check(self.http.url, expect_status=self.http.expect_status,
                              expect_json=self.http.expect_json)
        try:
            guest = self._guest()
        except BackendError as exc:
            return HealthResult(False, exc.problems[0].message)
        if guest.get("image") != want:
            return HealthResult(False, f"the launcher reports image {guest.get('image') or 'none'}")
        health = guest.get("health", "")
        if health.split(" ", 1)[0] == "ok":
            return HealthResult(True, f"guest attribute {GUEST_NAMESPACE}/health: {health}")
        return HealthResult(False, f"guest attribute {GUEST_NAMESPACE}/health: {health or 'not reported'}")

    def _write_record(self, update: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> bool:
        """Read, change and write the record (``setMetadata`` with the fingerprint just read);
        False when it could not be written (best effort, like the Kubernetes health mark)."""
        t = self.target
        try:
            instance = self._instance()
            items = _items(instance)
            entries = update(self._entries(items))
            serving = items.get(t.image_key, "")
            keep = entries[-KEEP:]
            dropped_serving = [e for e in entries[:-KEEP] if e["image"] == serving and e not in keep]
            record = json.dumps(sorted(dropped_serving[-1:] + keep, key=lambda e: e["revision"]),
                                sort_keys=True, separators=(",", ":"))
            self.api.set_metadata(t.project, t.zone, t.instance,
                                  fingerprint=(instance.get("metadata") or {}).get("fingerprint", ""),
                                  items={**items, REVISIONS_KEY: record})
        except (BackendError, GcpCallError, GcpCredentialsError):
            return False
        return True

    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None:
        """Write ``verdict`` on the recorded revision of ``which`` (an unrecorded source is
        recorded now). Best effort: a failure to record does not change the outcome."""
        revision = plan.target if which == "target" else plan.source
        unrecorded = plan.restore.get("unrecorded") if which == "source" else None

        def update(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for e in entries:
                if e["revision"] == revision.number and e["image"] == revision.detail:
                    e["health"] = verdict
                    return entries
            if unrecorded is not None and unrecorded["revision"] == revision.number:
                n = (entries[-1]["revision"] if entries else 0) + 1
                entries.append({**unrecorded, "revision": n, "time": _stamp(self._now()), "health": verdict})
            return entries

        self._write_record(update)

    # -- rollout verification --------------------------------------------------------------
    def serving_plan(self) -> RollbackPlan:
        """After a rollout: record the image the update set as a new revision when the newest
        record is another image (the commit and message from the component's metadata keys),
        then a degenerate plan whose target is it (verified like a rollback)."""
        snap = self.snapshot()
        items = snap.state["items"]
        current = items.get(self.target.image_key, "")
        if not current:
            raise BackendError(f"{self._where()} has no metadata {self.target.image_key}",
                               "the rollout did not set the image; check the service's program",
                               field=f"service {self.service}")
        entries = snap.state["entries"]
        if not entries or entries[-1]["image"] != current:
            def update(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
                if not found or found[-1]["image"] != current:
                    found.append({"revision": (found[-1]["revision"] if found else 0) + 1, "image": current,
                                  "commit": items.get(SOURCE_REVISION_KEY), "message": items.get(CHANGE_CAUSE_KEY, ""),
                                  "time": _stamp(self._now()), "health": UNKNOWN})
                return found
            if not self._write_record(update):
                raise BackendError(f"{self._where()}: the new revision could not be recorded in metadata "
                                   f"{REVISIONS_KEY}", "check compute.instances.setMetadata on the instance; "
                                   "roll out again", field=f"service {self.service}")
            snap = self.snapshot()
        top = snap.serving[0]
        return RollbackPlan(service=self.service, kind=self.kind, source=top, target=top, world=snap.world,
                            activate={"image": current, "items": snap.state["items"],
                                      "fingerprint": dict(snap.world)["metadata fingerprint"]},
                            restore={"image": current, "unrecorded": None})

