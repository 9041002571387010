"""The Kubernetes backend: a Deployment and its retained ReplicaSets, through the Kubernetes
adapter (:class:`clusterstack.adapters.kubernetes.KubeApi`).

Revisions (Kubernetes "Deployments", "Rolling Back a Deployment"; kubectl's
``polymorphichelpers/rollback.go`` and ``deploymentutil.GetAllReplicaSets``):

- a revision is a ReplicaSet *controlled by* the Deployment (an ownerReference with
  ``controller: true`` and the Deployment's uid), numbered by its
  ``deployment.kubernetes.io/revision`` annotation; the controller keeps
  ``revisionHistoryLimit`` old ones;
- the serving one is the ReplicaSet whose pod template equals the Deployment's (ignoring the
  ``pod-template-hash`` label) — kubectl's "new ReplicaSet";
- health: the :data:`~clusterstack.components.services.marks.HEALTH` mark clusterstack writes
  on the ReplicaSet after checking it (Kubernetes keeps no record of whether an old
  ReplicaSet ever became available); a ReplicaSet without the mark is ``unknown``.

Activation is ``kubectl rollout undo --to-revision=N``: a JSON patch that replaces the
Deployment's ``spec.template`` with the target ReplicaSet's template (hash label removed) and
its annotations with kubectl's merge (the Deployment's revision/bookkeeping annotations kept,
the rest from the ReplicaSet). Two JSON-patch ``test`` operations in front — the Deployment's
uid and its current revision — make the re-check and the write one atomic step on the API
server (RFC 6902 §4.6; a failed test is answered 422 and nothing is written). The controller
then reuses the target ReplicaSet and gives it the next revision number.

"Active" is ``kubectl rollout status``: observedGeneration caught up, every replica updated
and available, no old replica left; a ``Progressing=False`` condition with reason
``ProgressDeadlineExceeded`` fails at once.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any, Callable

from clusterstack.components.services import marks
from clusterstack.deploy.model import (
    UNKNOWN,
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
    RollbackRefused,
    Snapshot,
    Waiter,
    Which,
    WorldMoved,
    wait_serving,
)
from clusterstack.config.services import HttpCheck
from clusterstack.adapters.kubernetes import KubeApi, KubeStatusError, KubeTransportError

REVISION = "deployment.kubernetes.io/revision"
HASH_LABEL = "pod-template-hash"
# kubectl rollback.go annotationsToSkip: kept from the Deployment, never copied from the RS.
ANNOTATIONS_TO_SKIP = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration", REVISION,
    "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas", "deprecated.deployment.rollback.to",
})


def _pointer(key: str) -> str:
    """A JSON-pointer segment (RFC 6901: ``~`` → ``~0``, ``/`` → ``~1``)."""
    return key.replace("~", "~0").replace("/", "~1")


def _template_sans_hash(template: dict[str, Any]) -> dict[str, Any]:
    t = copy.deepcopy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return t


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def _images(template: dict[str, Any]) -> str:
    return ", ".join(c.get("image", "?") for c in (template.get("spec") or {}).get("containers", []))


class KubernetesBackend(RefreshAfterRollback):
    """:class:`~clusterstack.deploy.model.Backend` over one Deployment.

    ``api``: the cluster's :class:`~clusterstack.adapters.kubernetes.KubeApi`
    (:class:`~clusterstack.adapters.kubernetes.KubernetesApi`: its retry rule — reads retried,
    a write never — is what makes a lost PATCH response observable; its timeout bounds every
    request); ``http``: the registry's health check (through the API server's service proxy);
    ``refresh``: called after a successful rollback to bring the Pulumi state in line
    (``engine.refresh``).
    """

    kind = "kubernetes"

    def __init__(self, service: str, api: KubeApi, *, namespace: str, deployment: str,
                 http: HttpCheck | None = None, refresh: Callable[[], Any] | None = None) -> None:
        self.service = service
        self.namespace = namespace
        self.deployment = deployment
        self.http = http
        self._refresh = refresh
        self._api = api

    # -- reading ---------------------------------------------------------------------------
    def _call(self, fn: Callable[[], dict[str, Any]], what: str) -> dict[str, Any]:
        try:
            return fn()
        except KubeStatusError as exc:
            if exc.status == 401:
                raise CredentialsUnavailable(f"{what}: HTTP 401 {exc.reason or ''}".strip(),
                                             "the kubeconfig's credentials were rejected: renew the "
                                             "token of the kube context", field=f"service {self.service}") from None
            if exc.status == 404:
                raise BackendError(f"{what}: not found (404)",
                                   f"check namespace/deployment of {self.service} in services.yaml",
                                   field=f"service {self.service}") from None
            raise BackendError(f"{what}: HTTP {exc.status} {exc.reason or ''}".strip(),
                               "check your access to the cluster", field=f"service {self.service}") from None
        except KubeTransportError as exc:
            raise ApiUnreachable(f"{what}: Kubernetes API unreachable ({exc.error})",
                                 "check the kube context and network, then run it again (nothing "
                                 "was changed)", field=f"service {self.service}") from None

    def _read(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        dep = self._call(lambda: self._api.read_deployment(self.namespace, self.deployment),
                         f"deployment {self.namespace}/{self.deployment}")
        labels = ((dep.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
        listing = self._call(lambda: self._api.list_replica_sets(self.namespace, selector),
                             f"replicasets of {self.namespace}/{self.deployment}")
        uid = dep["metadata"]["uid"]
        owned = [rs for rs in listing.get("items") or []
                 if any(o.get("controller") and o.get("uid") == uid
                        for o in rs["metadata"].get("ownerReferences") or [])]
        return dep, owned

    def snapshot(self) -> Snapshot:
        dep, owned = self._read()
        current = _template_sans_hash(dep["spec"]["template"])
        revisions = []
        for rs in owned:
            ann = rs["metadata"].get("annotations") or {}
            if REVISION not in ann:
                continue
            template = rs["spec"].get("template") or {}
            commit = ((template.get("metadata") or {}).get("annotations") or {}).get(marks.SOURCE_REVISION)
            status = rs.get("status") or {}
            revisions.append(Revision(
                number=int(ann[REVISION]), name=rs["metadata"]["name"],
                created=_time(rs["metadata"].get("creationTimestamp")),
                health=ann.get(marks.HEALTH, UNKNOWN),
                serving=_template_sans_hash(template) == current,
                git_commit=None if commit in (None, "", marks.UNRELEASED) else commit,
                message=ann.get(marks.CHANGE_CAUSE, ""),
                detail=f"{_images(template)}; ready {status.get('readyReplicas') or 0}/"
                       f"{(rs['spec'].get('replicas') or 0)}"))
        revisions.sort(key=lambda r: r.number, reverse=True)
        return Snapshot(service=self.service, kind=self.kind, revisions=tuple(revisions),
                        world=self._world(dep), state={"deployment": dep, "replicasets": owned})

    @staticmethod
    def _world(dep: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        ann = dep["metadata"].get("annotations") or {}
        return (("deployment uid", dep["metadata"]["uid"]), ("revision", ann.get(REVISION, "")))

    # -- planning --------------------------------------------------------------------------
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None:
        return None

    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan:
        dep = snap.state["deployment"]
        if (dep.get("spec") or {}).get("paused"):
            raise RollbackRefused(f"deployment {self.namespace}/{self.deployment} is paused",
                                  "resume it first (kubectl rollout resume); a paused Deployment "
                                  "does not roll out", field=f"service {self.service}")
        rs = next(r for r in snap.state["replicasets"] if r["metadata"]["name"] == target.name)
        template = _template_sans_hash(rs["spec"]["template"])
        dep_ann = dep["metadata"].get("annotations") or {}
        annotations = {k: v for k, v in dep_ann.items() if k in ANNOTATIONS_TO_SKIP}
        annotations.update({k: v for k, v in (rs["metadata"].get("annotations") or {}).items()
                            if k not in ANNOTATIONS_TO_SKIP and k != marks.HEALTH})
        notes = [f"image: {_images(dep['spec']['template'])} → {_images(template)}",
                 f"commit: {source.git_commit or 'unrecorded'} → {target.git_commit or 'unrecorded'}",
                 f"patch: Deployment {self.namespace}/{self.deployment} spec.template ← ReplicaSet "
                 f"{target.name} (kubectl rollout undo --to-revision={target.number})"]
        return RollbackPlan(
            service=self.service, kind=self.kind, source=source, target=target, world=snap.world,
            activate={"template": template, "annotations": annotations},
            restore={"template": _template_sans_hash(dep["spec"]["template"]),
                     "annotations": dict(dep_ann)},
            notes=tuple(notes))

    def recheck(self, plan: RollbackPlan) -> None:
        dep, _ = self._read()
        now = self._world(dep)
        if now != plan.world:
            moved = "; ".join(f"{k} {dict(plan.world).get(k)!r} → {v!r}" for k, v in now
                              if dict(plan.world).get(k) != v)
            raise WorldMoved(self.service, moved)

    # -- acting ----------------------------------------------------------------------------
    def _patch(self, ops: list[dict[str, Any]]) -> None:
        """One JSON patch of the Deployment, errors sorted by what they mean for the rollback."""
        try:
            self._api.patch_deployment(self.namespace, self.deployment, ops)
        except KubeStatusError as exc:
            body = exc.body or ""
            # a failed JSON-patch test op: 422 with evanphx/json-patch's "testing value … failed"
            if exc.status == 409 or (exc.status == 422 and ("testing value" in body or "test failed" in body)):
                raise WorldMoved(self.service, f"the API server refused the patch's preconditions "
                                 f"(HTTP {exc.status})") from None
            if exc.status is not None and 400 <= exc.status < 500:
                raise ActivationRejected(f"HTTP {exc.status} {exc.reason or ''}: {body[:300]}".strip()) from None
            raise LostResponse(f"HTTP {exc.status} {exc.reason or ''} from the API server; the "
                               "patch may or may not have been applied") from None
        except KubeTransportError as exc:
            if exc.connect_failed:  # nothing was sent
                raise ActivationRejected(f"cannot connect to the API server ({exc.cause or exc.error})") from None
            if exc.cause is not None:  # the retries ran out: the last attempt's error
                raise LostResponse(f"no response to the patch ({exc.cause})") from None
            raise LostResponse(f"no response to the patch ({exc.error}: {exc.text})") from None

    def activate(self, plan: RollbackPlan) -> None:
        world = dict(plan.world)
        self._patch([
            {"op": "test", "path": "/metadata/uid", "value": world["deployment uid"]},
            {"op": "test", "path": f"/metadata/annotations/{_pointer(REVISION)}", "value": world["revision"]},
            {"op": "replace", "path": "/spec/template", "value": plan.activate["template"]},
            {"op": "replace", "path": "/metadata/annotations", "value": plan.activate["annotations"]},
        ])

    def restore(self, plan: RollbackPlan) -> None:
        dep, _ = self._read()
        annotations = dict(plan.restore["annotations"])
        # the revision bookkeeping is the controller's now; keep its current values
        for k in ANNOTATIONS_TO_SKIP:
            current = (dep["metadata"].get("annotations") or {}).get(k)
            if current is None:
                annotations.pop(k, None)
            else:
                annotations[k] = current
        try:
            self._patch([
                {"op": "test", "path": "/metadata/uid", "value": dict(plan.world)["deployment uid"]},
                {"op": "replace", "path": "/spec/template", "value": plan.restore["template"]},
                {"op": "replace", "path": "/metadata/annotations", "value": annotations},
            ])
        except (ActivationRejected, LostResponse, WorldMoved) as exc:
            raise NotActive(f"restore patch failed: {exc}") from None

    def observe(self, plan: RollbackPlan) -> str:
        dep, _ = self._read()
        current = _template_sans_hash(dep["spec"]["template"])
        if current == plan.activate["template"]:
            return "target"
        if current == plan.restore["template"]:
            return "source"
        return "other"

    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None:
        def judge(read: tuple[dict[str, Any], list[dict[str, Any]]], want: dict[str, Any],
                  revision: Revision) -> str | None:
            dep, owned = read
            if _template_sans_hash(dep["spec"]["template"]) != want:
                raise NotActive("the Deployment's template is no longer the one activated "
                                "(someone else changed it)")
            status = dep.get("status") or {}
            for cond in status.get("conditions") or []:
                if cond.get("type") == "Progressing" and cond.get("status") == "False" and \
                        cond.get("reason") == "ProgressDeadlineExceeded":
                    raise NotActive(f"ProgressDeadlineExceeded: {cond.get('message', '')}".strip())
            desired = dep["spec"].get("replicas", 1)
            meta_gen = dep["metadata"].get("generation") or 0
            if (status.get("observedGeneration") or 0) < meta_gen:
                return "the controller has not observed the change yet"
            updated, total = status.get("updatedReplicas") or 0, status.get("replicas") or 0
            available = status.get("availableReplicas") or 0
            if updated < desired or total > updated or available < updated:
                return f"{updated}/{desired} updated, {available} available, {total - updated} old"
            new = [rs for rs in owned if _template_sans_hash(rs["spec"]["template"]) == want]
            if which == "target" and new and new[0]["metadata"]["name"] != revision.name:
                raise NotActive(f"the Deployment runs ReplicaSet {new[0]['metadata']['name']}, "
                                f"not {revision.name}")
            return None

        wait_serving(waiter, plan, which, key="template", read=self._read, reading="the Deployment",
                     judge=judge, where=f"{self.namespace}/{self.deployment}")

    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult:
        if self.http is None:
            return HealthResult(True, "Deployment available (no HTTP check configured)")
        h = self.http
        # services.yaml's rule (config.services.Service): a kubernetes check has all three
        assert h.service is not None and h.port is not None and h.path is not None
        target = f"services/{h.service}:{h.port}/proxy{h.path}"
        status: int | None
        try:
            self._api.get_service_proxy(self.namespace, f"{h.service}:{h.port}", h.path.lstrip("/"))
            status = 200
        except KubeStatusError as exc:
            status = exc.status
        except KubeTransportError as exc:
            return HealthResult(False, f"GET {target}: {exc.error}")
        if status == h.expect_status or (h.expect_status == 200 and status is not None and 200 <= status < 300):
            return HealthResult(True, f"GET {target}: {status}")
        return HealthResult(False, f"GET {target}: {status}, expected {h.expect_status}")

    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None:
        """Mark the ReplicaSet of ``which`` with ``verdict`` (a merge patch of its annotations).
        Best effort: a failure to record does not change the outcome."""
        name = plan.target.name if which == "target" else plan.source.name
        self.mark(name, verdict)

    def mark(self, replicaset: str, verdict: str) -> bool:
        """Write :data:`marks.HEALTH` = ``verdict`` on ``replicaset``; False when it failed."""
        try:
            self._api.patch_replica_set(self.namespace, replicaset,
                                        {"metadata": {"annotations": {marks.HEALTH: verdict}}})
        except (KubeStatusError, KubeTransportError):
            return False
        return True

    # -- rollout verification --------------------------------------------------------------
    def serving_plan(self) -> RollbackPlan:
        """A degenerate plan whose target is the serving revision (used to verify a rollout
        with the same wait / health / record steps as a rollback)."""
        snap = self.snapshot()
        serving = snap.serving
        if not serving:
            raise BackendError(f"no ReplicaSet of {self.namespace}/{self.deployment} matches its template",
                               "the rollout has not created it yet; check the Deployment",
                               field=f"service {self.service}")
        dep = snap.state["deployment"]
        template = _template_sans_hash(dep["spec"]["template"])
        return RollbackPlan(service=self.service, kind=self.kind, source=serving[0], target=serving[0],
                            world=snap.world, activate={"template": template, "annotations": {}},
                            restore={"template": template, "annotations": {}})


