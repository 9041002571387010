"""The Google Cloud REST APIs fake (on :mod:`fakes.http`), for ``clusterstack verify`` and
``clusterstack deploy`` with Google's client libraries (REST transport, anonymous credentials,
``GcpClients(api_endpoint=srv.url)``).

What it serves:

- Compute Engine API v1 (``/compute/v1/projects/{p}/{global|regions/r|zones/z}/{collection}/{name}``)
  and Artifact Registry API v1 (``/v1/projects/{p}/locations/{l}/repositories/{r}``): any object
  put in :attr:`FakeGcp.objects` (keyed by path, see :func:`gce_path`) answered by ``GET``, and
  ``POST …/networkEndpointGroups/{neg}/listNetworkEndpoints`` (``items`` from
  ``objects[neg + "#endpoints"]``);
- Cloud Run Admin API v2 (``/v2/projects/{p}/locations/{r}/services/{s}``), one service once
  :meth:`FakeGcp.seed` ed: ``GET|PATCH`` the Service (``etag`` precondition: a stale etag is
  409 ``ABORTED``), ``GET …/revisions`` and ``…/revisions/{r}``, long-running ``Operation``
  objects (``GET /v2/projects/{p}/locations/{r}/operations/{id}``), and ``GET /healthz`` of
  the revision that serves the most traffic;
- Resource Manager API v3 ``POST /v3/projects/{p}:getIamPolicy``: the policy in
  :attr:`FakeGcp.iam_policies` (project → ``Policy`` JSON, see :func:`iam_policy`); a request
  for a version below 3 gets what IAM returns then for a conditional binding (IAM "Policy
  versions": the condition dropped and the role suffixed ``_withcond_<hash>``, version 1);
  an unknown project is 403 ``PERMISSION_DENIED`` (Resource Manager answers 403, not 404, for a
  project the caller cannot see: "projects.getIamPolicy" reference, "Authorization");
- a missing object: Google's ``{"error": {code, message, status, errors[]}}`` with 404;
  :attr:`failures` (path → ``(status, body)``) answered instead (e.g. :func:`google_error`).

- Compute Engine API v1 instances of a ``gce-vm`` service (:meth:`FakeGcp.add_vm`, a
  :class:`FakeVm`): ``GET`` the Instance, ``POST …/setMetadata`` (metadata fingerprint
  precondition), ``GET …/getGuestAttributes?queryPath=ns/``, ``POST …/stop`` and ``…/start``,
  each write answered with a zone ``Operation`` (RUNNING) that ``GET|POST
  …/zones/{z}/operations/{op}[/wait]`` answers DONE (with its ``error`` if it failed);
  the guest is simulated (see :class:`FakeVm`) and serves ``GET /vm/{instance}/api/ready``;
- Cloud Run Admin API v2 jobs (:meth:`FakeGcp.add_job`): ``GET|PATCH`` the Job (``etag``
  precondition: 409 ``ABORTED``), ``POST …:run`` (an Operation whose metadata is the new
  Execution), ``GET …/executions`` and ``…/executions/{e}`` (an execution finishes at its
  second read, as :attr:`FakeGcp.run_outcomes` says);

It can be told to misbehave on the Service PATCH: ``faults`` (``"drop"``, ``"apply-drop"``,
``(status, body)``, ``"op-error"`` = accepted, but the operation ends with an error and
nothing changes), ``before_write`` (a callable run just before the write), ``unhealthy``
(revision names whose health endpoint answers 503).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import tink
from google.api_core import exceptions as gexc
from google.cloud import iam_admin_v1, kms_v1, secretmanager
from google.cloud.iam_admin_v1.services.iam import pagers
from tink import aead

from clusterstack.adapters.gcp import ServiceAccountKey, ServiceAccountKeys
from fakes.http import DROP, FakeServer

GCE = "https://www.googleapis.com/compute/v1"


def google_error(code: int, message: str, reason: str) -> dict:
    """The error document of Google REST APIs (``{"error": {code, message, errors[]}}``)."""
    status = {403: "PERMISSION_DENIED", 404: "NOT_FOUND"}.get(code, "UNKNOWN")
    return {"error": {"code": code, "message": message, "status": status,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}


# --- GCP objects -----------------------------------------------------------------------------

def gce_path(project: str, collection: str, name: str, *, region: str | None = None,
             zone: str | None = None) -> str:
    where = f"regions/{region}" if region else f"zones/{zone}" if zone else "global"
    return f"/compute/v1/projects/{project}/{where}/{collection}/{name}"


def gce_object(kind: str, project: str, collection: str, name: str, *, region: str | None = None,
               zone: str | None = None, **body: Any) -> dict:
    path = gce_path(project, collection, name, region=region, zone=zone)
    obj: dict[str, Any] = {"kind": f"compute#{kind}", "id": str(abs(hash(path)) % 10**18),
                           "creationTimestamp": "2025-01-01T00:00:00.000-08:00", "name": name,
                           "selfLink": GCE + path.removeprefix("/compute/v1")}
    if region:
        obj["region"] = f"{GCE}/projects/{project}/regions/{region}"
    if zone:
        obj["zone"] = f"{GCE}/projects/{project}/zones/{zone}"
    obj.update(body)
    return obj


def repository(project: str, location: str, name: str, *, mode: str = "REMOTE_REPOSITORY") -> dict:
    """An Artifact Registry repository (REST ``v1`` shape)."""
    return {"name": f"projects/{project}/locations/{location}/repositories/{name}",
            "format": "DOCKER", "mode": mode, "description": "pull-through cache",
            "createTime": "2025-01-01T00:00:00Z", "updateTime": "2025-01-01T00:00:00Z",
            "remoteRepositoryConfig": {"dockerRepository": {"publicRepository": "DOCKER_HUB"}},
            "sizeBytes": "1024"}


def iam_policy(bindings: list[dict], *, etag: str = "BwWWja0YfJA=", version: int = 3) -> dict:
    """A ``Policy`` as ``getIamPolicy`` returns it: ``{"version", "etag", "bindings"}``, each
    binding ``{"role", "members", "condition"?}`` (Resource Manager API reference,
    ``Shared.Types/Policy``: its example is ``{"bindings": [{"members": [...], "role":
    "roles/resourcemanager.organizationAdmin"}, {"members": ["user:eve@example.com"], "role":
    …, "condition": {"title": "expirable access", "description": …, "expression":
    "request.time < timestamp('2020-10-01T00:00:00.000Z')"}}], "etag": "BwWWja0YfJA=",
    "version": 3}``; the etag is base64 of the policy's version stamp)."""
    return {"version": version, "etag": etag, "bindings": bindings}


def grpc_error(code: int, status: str, message: str) -> dict:
    """The error document of Google REST APIs for a gRPC status (Cloud Run v2)."""
    return {"error": {"code": code, "message": message, "status": status}}


# --- Compute Engine instances and Cloud Run jobs (deploy: gce-vm, cloud-run-job) -------------
#
# Formats: Compute Engine API v1 reference — ``Instance`` (``status``, ``metadata {kind:
# compute#metadata, fingerprint, items[{key, value}]}``, ``lastStartTimestamp``),
# ``instances.setMetadata`` ("fingerprint … must be provided in order to update metadata";
# a stale one: HTTP 412, reason ``conditionNotMet``, "Supplied fingerprint does not match
# current metadata fingerprint."), ``instances.getGuestAttributes`` (``queryPath``,
# ``queryValue.items[{namespace, key, value}]``; 404 when nothing was written there),
# ``instances.stop``/``start`` and the zone ``Operation`` (``status`` PENDING/RUNNING/DONE,
# ``error.errors[]`` with ``httpErrorStatusCode``); Compute Engine "Setting and querying guest
# attributes" (only the guest writes them). Cloud Run Admin API v2 reference — ``Job``
# (``template.template`` TaskTemplate, ``terminalCondition``, ``reconciling``, ``etag``),
# ``Execution`` (``template``, ``taskCount``, ``succeededCount``, ``failedCount``,
# ``completionTime``), ``jobs.patch`` (etag: 409 ABORTED), ``jobs.run`` (an Operation whose
# metadata is the Execution).

def _compute_error(code: int, reason: str, message: str) -> dict:
    return {"error": {"code": code, "message": message,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}


class FakeVm:
    """One Compute Engine VM and the guest on it.

    ``image_key``: the metadata key that names its image; ``activation``: ``"watch"`` (the
    launcher of :class:`clusterstack.components.services.gce.GceVmService` applies a changed key
    and writes guest attributes ``clusterstack/image`` and ``clusterstack/health``) or
    ``"restart"`` (the startup script reads the key at boot; ``/vm/<name>/api/ready`` answers
    ``{"status": "ready"}`` for a healthy image, Loom's readiness shape). Knobs: ``lag`` —
    guest-attribute reads after a change before the launcher reports it; ``broken`` — images
    whose health is failing; ``dead`` — the launcher never applies a change."""

    def __init__(self, path: str, project: str, zone: str, name: str, *, image_key: str, image: str,
                 items: dict[str, str], activation: str) -> None:
        self.path, self.image_key, self.activation = path, image_key, activation
        self.lag, self.broken, self.dead = 1, set(), False
        self.fingerprint_no = 1
        self.instance = gce_object("instance", project, "instances", name, zone=zone, status="RUNNING",
                                   lastStartTimestamp="2025-03-01T09:00:00.000-08:00",
                                   metadata={"kind": "compute#metadata"})
        self.items = {**items, image_key: image}
        self.running = image          # what the guest runs
        self._pending = 0
        self._sync()

    def _sync(self) -> None:
        self.instance["metadata"] = {"kind": "compute#metadata", "fingerprint": f"fp-{self.fingerprint_no}=",
                                     "items": [{"key": k, "value": v} for k, v in sorted(self.items.items())]}

    @property
    def fingerprint(self) -> str:
        return self.instance["metadata"]["fingerprint"]

    def set_items(self, items: dict[str, str]) -> None:
        changed = items.get(self.image_key) != self.items.get(self.image_key)
        self.items = dict(items)
        self.fingerprint_no += 1
        self._sync()
        if changed and self.activation == "watch" and not self.dead:
            self._pending = self.lag + 1

    def guest(self) -> dict[str, str] | None:
        if self.activation != "watch":
            return None
        if self._pending:
            self._pending -= 1
            if self._pending == 0:
                self.running = self.items.get(self.image_key, "")
        health = "failing: GET /healthz: 503" if self.running in self.broken else "ok"
        return {"image": self.running, "health": health}


class FakeGcpComputeJobs:
    """The Compute Engine instance and Cloud Run job halves of :class:`FakeGcp` (a mixin)."""

    vms: dict
    jobs: dict
    executions: dict
    run_outcomes: list
    operations: dict
    _serial: int

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    # -- Compute Engine --------------------------------------------------------------------
    def add_vm(self, project: str, zone: str, name: str, *, image: str, image_key: str = "clusterstack-image",
               items: dict[str, str] | None = None, activation: str = "watch") -> FakeVm:
        path = gce_path(project, "instances", name, zone=zone)
        vm = FakeVm(path, project, zone, name, image_key=image_key, image=image, items=items or {},
                    activation=activation)
        self.vms[path] = vm
        return vm

    def _zone_op(self, vm: FakeVm, kind: str, error: tuple[int, str] | None = None) -> dict:
        zone_path = vm.path.rsplit("/instances/", 1)[0]
        name = f"operation-{self._next()}"
        op = {"kind": "compute#operation", "id": str(10**12 + self._serial), "name": name,
              "zone": GCE + zone_path.removeprefix("/compute/v1"), "operationType": kind,
              "targetLink": vm.instance["selfLink"], "targetId": vm.instance["id"], "status": "DONE",
              "progress": 100, "insertTime": "2025-03-09T10:00:00.000-08:00",
              "selfLink": f"{GCE}{zone_path.removeprefix('/compute/v1')}/operations/{name}"}
        if error is not None:
            op["error"] = {"errors": [{"code": "RESOURCE_OPERATION_FAILED", "message": error[1]}]}
            op["httpErrorStatusCode"], op["httpErrorMessage"] = error[0], "BAD REQUEST"
        self.operations[f"{zone_path}/operations/{name}"] = op
        # the write answers with the operation still running; its error shows when polled
        return {k: v for k, v in {**op, "status": "RUNNING", "progress": 0}.items()
                if k not in ("error", "httpErrorStatusCode", "httpErrorMessage")}

    def _compute(self, method: str, path: str, query: dict, raw: bytes):
        if path.startswith("/vm/"):
            name, _, rest = path.removeprefix("/vm/").partition("/")
            vm = next((v for v in self.vms.values() if v.instance["name"] == name), None)
            if vm is None or method != "GET" or rest != "api/ready":
                return 404, "not found"
            if vm.instance["status"] != "RUNNING":
                return DROP
            return 200, {"status": "starting" if vm.running in vm.broken else "ready"}
        if "/operations/" in path and method in ("GET", "POST"):   # zoneOperations.get / .wait
            op = self.operations.get(path.removesuffix("/wait"))
            return (200, op) if op is not None else None
        base, _, verb = path.rpartition("/")
        vm = self.vms.get(path) or self.vms.get(base)
        if vm is None:
            return None
        if path == vm.path and method == "GET":
            return 200, vm.instance
        if verb == "getGuestAttributes" and method == "GET":
            attrs = vm.guest()
            namespace = (query.get("queryPath") or [""])[0].rstrip("/")
            if not attrs or namespace != "clusterstack":
                return 404, _compute_error(404, "notFound", f"The resource '{path.split('/v1/', 1)[-1]}' "
                                                            "was not found")
            return 200, {"kind": "compute#guestAttributes", "queryPath": f"{namespace}/",
                         "queryValue": {"items": [{"namespace": namespace, "key": k, "value": v}
                                                  for k, v in sorted(attrs.items())]},
                         "selfLink": vm.instance["selfLink"] + "/guestAttributes"}
        if method != "POST" or verb not in ("setMetadata", "stop", "start"):
            return None
        answer, fault = self.begin_write()
        if answer is not None:
            return answer
        if verb == "setMetadata":
            body = json.loads(raw or b"{}")
            if body.get("fingerprint") != vm.fingerprint:
                return 412, _compute_error(412, "conditionNotMet", "Supplied fingerprint does not match current "
                                                                   "metadata fingerprint.")
            if fault == "op-error":
                return 200, self._zone_op(vm, "setMetadata", (400, "Metadata update failed"))
            vm.set_items({i["key"]: i.get("value", "") for i in body.get("items") or []})
            op = self._zone_op(vm, "setMetadata")
            return DROP if fault == "apply-drop" else (200, op)
        if verb == "stop":
            vm.instance["status"] = "TERMINATED"
            return 200, self._zone_op(vm, "stop")
        vm.instance["status"] = "RUNNING"
        vm.instance["lastStartTimestamp"] = f"2025-03-09T10:{self._serial % 60:02d}:00.000-08:00"
        vm.running = vm.items.get(vm.image_key, "")
        return 200, self._zone_op(vm, "start")

    # -- Cloud Run jobs --------------------------------------------------------------------
    def add_job(self, name: str, *, revisions: list[dict], schedule_runs: list[tuple[int, str]]) -> dict:
        """A job whose task template is the last of ``revisions`` (``{"image", "commit",
        "message"}``: TaskTemplates with those in the container's env) and whose retained
        executions are ``schedule_runs``: ``(index into revisions, "succeeded"|"failed"|"running")``
        in creation order (one a day from 2025-03-01)."""
        templates = [self.task_template(r) for r in revisions]
        self.jobs[name] = {
            "name": name, "uid": str(uuid.uuid4()), "generation": str(len(revisions)),
            "createTime": "2025-03-01T09:00:00Z", "updateTime": _stamp(len(revisions)),
            "creator": "deploy@example.org", "lastModifier": "deploy@example.org", "launchStage": "GA",
            "template": {"taskCount": 1, "parallelism": 1, "template": templates[-1]},
            "observedGeneration": str(len(revisions)), "reconciling": False, "etag": self._new_etag(),
            "terminalCondition": {"type": "Ready", "state": "CONDITION_SUCCEEDED",
                                  "lastTransitionTime": _stamp(len(revisions))},
            "conditions": [], "executionCount": len(schedule_runs)}
        for day, (index, outcome) in enumerate(schedule_runs, 1):
            self._execution(name, templates[index], outcome, created=_stamp(day, minutes=30))
        return self.jobs[name]

    @staticmethod
    def task_template(r: dict) -> dict:
        env = [{"name": "CLUSTERSTACK_SOURCE_REVISION", "value": r.get("commit", "unreleased")}]
        if r.get("message"):
            env.append({"name": "CLUSTERSTACK_CHANGE_CAUSE", "value": r["message"]})
        return {"containers": [{"image": r["image"], "env": env,
                                "resources": {"limits": {"cpu": "4", "memory": "4Gi"}}}],
                "maxRetries": 0, "timeout": "7200s", "serviceAccount": "echo-sync@demo-project.iam.gserviceaccount.com",
                "executionEnvironment": "EXECUTION_ENVIRONMENT_GEN2"}

    def _execution(self, job: str, template: dict, outcome: str, *, created: str) -> dict:
        short = job.rsplit("/", 1)[-1]
        name = f"{job}/executions/{short}-{self._next():05d}"
        done = outcome in ("succeeded", "failed")
        e = {"name": name, "uid": str(uuid.uuid4()), "generation": "1", "createTime": created,
             "startTime": created, "job": short, "parallelism": 1, "taskCount": 1, "template": template,
             "reconciling": False, "observedGeneration": "1", "runningCount": 0 if done else 1,
             "succeededCount": 1 if outcome == "succeeded" else 0, "failedCount": 1 if outcome == "failed" else 0,
             "conditions": [{"type": "Completed", "state": {"succeeded": "CONDITION_SUCCEEDED",
                                                           "failed": "CONDITION_FAILED"}.get(outcome,
                                                                                              "CONDITION_PENDING")}],
             "etag": f'"e{self._serial}"'}
        if done:
            e["completionTime"] = created
        self.executions[name] = e
        return e

    def _jobs_api(self, method: str, path: str, raw: bytes):
        name = path.removeprefix("/v2/")
        if name in self.jobs:
            job = self.jobs[name]
            if method == "GET":
                return 200, job
            if method == "PATCH":
                answer, fault = self.begin_write()
                if answer is not None:
                    return answer
                body = json.loads(raw)
                if body.get("etag") and body["etag"] != job["etag"]:
                    return 409, grpc_error(409, "ABORTED", "Etag mismatch: the job was modified concurrently")
                op_name = f"{self.parent}/operations/{uuid.uuid4()}"
                if fault == "op-error":
                    self.operations[op_name] = {"name": op_name, "done": True, "error": {
                        "code": 3, "message": "Job template is invalid: image not found"}}
                else:
                    job["template"]["template"] = body["template"]["template"]
                    job["generation"] = str(int(job["generation"]) + 1)
                    job["observedGeneration"] = job["generation"]
                    job["etag"] = self._new_etag()
                    self.operations[op_name] = {"name": op_name, "done": True, "response": {
                        "@type": "type.googleapis.com/google.cloud.run.v2.Job", **job}}
                if fault == "apply-drop":
                    return DROP
                return 200, {"name": op_name, "done": False,
                             "metadata": {"@type": "type.googleapis.com/google.cloud.run.v2.Job", **job}}
        if name.endswith(":run") and method == "POST" and name.removesuffix(":run") in self.jobs:
            job = self.jobs[name.removesuffix(":run")]
            outcome = self.run_outcomes.pop(0) if self.run_outcomes else "succeeded"
            e = self._execution(job["name"], job["template"]["template"], "running", created=_stamp(30))
            e["_outcome"] = outcome
            op_name = f"{self.parent}/operations/{uuid.uuid4()}"
            meta = {"@type": "type.googleapis.com/google.cloud.run.v2.Execution",
                    **{k: v for k, v in e.items() if not k.startswith("_")}}
            self.operations[op_name] = {"name": op_name, "done": False, "metadata": meta}
            return 200, {"name": op_name, "done": False, "metadata": meta}
        job_name, _, rest = name.partition("/executions")
        if job_name in self.jobs and method == "GET":
            if rest == "":
                found = [e for e in self.executions.values() if e["name"].startswith(job_name + "/")]
                return 200, {"executions": [{k: v for k, v in e.items() if not k.startswith("_")}
                                            for e in sorted(found, key=lambda e: e["createTime"], reverse=True)]}
            e = self.executions.get(name)
            if e is not None:
                if "_outcome" in e:
                    e["_reads"] = e.get("_reads", 0) + 1
                    if e["_reads"] >= 2:
                        outcome = e.pop("_outcome")
                        e.update(runningCount=0, completionTime=_stamp(30, minutes=5),
                                 succeededCount=1 if outcome == "succeeded" else 0,
                                 failedCount=1 if outcome == "failed" else 0,
                                 conditions=[{"type": "Completed", "state": "CONDITION_SUCCEEDED"
                                              if outcome == "succeeded" else "CONDITION_FAILED"}])
                return 200, {k: v for k, v in e.items() if not k.startswith("_")}
        return 404, grpc_error(404, "NOT_FOUND", f"Resource '{name}' was not found")


# --- Cloud Run --------------------------------------------------------------------------------

def _stamp(n: int, minutes: int = 0) -> str:
    """RFC 3339 UTC time of the n-th revision (one a day from 2025-03-01)."""
    from datetime import datetime, timedelta, timezone

    t = datetime(2025, 3, 1, 10, tzinfo=timezone.utc) + timedelta(days=n - 1, minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


TRAFFIC_TYPES = {0: "TRAFFIC_TARGET_ALLOCATION_TYPE_UNSPECIFIED", 1: "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST",
                 2: "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"}


class FakeGcp(FakeGcpComputeJobs, FakeServer):
    """Compute Engine / Artifact Registry objects by path, and one Cloud Run service
    (``project``/``region``/``service``) once :meth:`seed` ed; see the module docstring."""

    def __init__(self, project: str = "demo-project", region: str = "us-central1", service: str = "echo",
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.parent = f"projects/{project}/locations/{region}"
        self.name = f"{self.parent}/services/{service}"
        self.short = service
        self.service: dict = {}
        self.revisions: dict[str, dict] = {}
        self.operations: dict[str, dict] = {}
        self.unhealthy: set[str] = set()
        self.iam_policies: dict[str, dict] = {}   # project → Policy JSON (iam_policy)
        self._etag = 0
        self.vms: dict[str, FakeVm] = {}          # instance path (gce_path) → the VM (add_vm)
        self.jobs: dict[str, dict] = {}           # job name → Job JSON (add_job)
        self.executions: dict[str, dict] = {}     # execution name → Execution JSON
        self.run_outcomes: list[str] = []         # "succeeded" / "failed" for the next jobs.run
        self._serial = 0

    def _new_etag(self) -> str:
        self._etag += 1
        return f'"etag-{self._etag}"'

    def seed(self, revisions: list[dict], traffic: list[dict]) -> "FakeGcp":
        """``revisions``: ``{"n": 3, "image": …, "commit": …, "ready": True|False, "message": …}``;
        ``traffic``: v2 TrafficTarget JSON (``{"type": …, "revision": …, "percent": …}``)."""
        for r in revisions:
            short = f"{self.short}-{r['n']:05d}-{'abcdefghij'[r['n'] % 10]}{'xyz'[r['n'] % 3]}q"
            ready = r.get("ready", True)
            self.revisions[short] = {
                "name": f"{self.name}/revisions/{short}", "uid": str(uuid.uuid4()), "generation": "1",
                "createTime": _stamp(r["n"]), "updateTime": _stamp(r["n"], minutes=1),
                "launchStage": "BETA", "service": self.name,
                "annotations": {**({"clusterstack.dev/source-revision": r["commit"]} if r.get("commit") else {}),
                                **({"clusterstack.dev/change-cause": r["message"]} if r.get("message") else {})},
                "scaling": {"minInstanceCount": 0, "maxInstanceCount": 3},
                "serviceAccount": "echo-runtime@demo-project.iam.gserviceaccount.com",
                "containers": [{"image": r["image"], "ports": [{"name": "http1", "containerPort": 8080}]}],
                "conditions": [
                    {"type": "Ready", "state": "CONDITION_SUCCEEDED" if ready else "CONDITION_FAILED",
                     "lastTransitionTime": _stamp(r["n"], minutes=1),
                     **({} if ready else {"message": "The user-provided container failed to start and listen on the port"})},
                    {"type": "ContainerHealthy", "state": "CONDITION_SUCCEEDED" if ready else "CONDITION_FAILED"}],
                "observedGeneration": "1", "logUri": "https://console.cloud.google.com/logs", "etag": f'"r{r["n"]}"'}
        latest = max((k for k, v in self.revisions.items() if v["conditions"][0]["state"] == "CONDITION_SUCCEEDED"))
        self.service = {
            "name": self.name, "uid": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "generation": "7",
            "createTime": "2025-03-01T09:00:00Z", "updateTime": "2025-03-09T10:00:00Z",
            "creator": "ops@example.org", "lastModifier": "ops@example.org",
            "ingress": "INGRESS_TRAFFIC_ALL", "launchStage": "BETA", "iapEnabled": True,
            "template": {"serviceAccount": "echo-runtime@demo-project.iam.gserviceaccount.com",
                         "scaling": {"minInstanceCount": 0, "maxInstanceCount": 3},
                         "containers": [{"image": self.revisions[latest]["containers"][0]["image"]}]},
            "traffic": traffic, "observedGeneration": "7",
            "latestReadyRevision": f"{self.name}/revisions/{latest}",
            "latestCreatedRevision": f"{self.name}/revisions/{max(self.revisions)}",
            "uri": "https://echo-3kq7x2-uc.a.run.app", "reconciling": False, "etag": self._new_etag()}
        self._settle()
        return self

    def revision_name(self, n: int) -> str:
        return next(k for k in self.revisions if k.startswith(f"{self.short}-{n:05d}-"))

    def _settle(self) -> None:
        """traffic → trafficStatuses and the terminal condition (what Cloud Run reports)."""
        statuses, ok = [], True
        for t in self.service["traffic"]:
            s = {"type": t["type"], "percent": t.get("percent", 0)}
            if t.get("revision"):
                s["revision"] = t["revision"]
                ok = ok and self.revisions[t["revision"]]["conditions"][0]["state"] == "CONDITION_SUCCEEDED"
            statuses.append(s)
        self.service["trafficStatuses"] = statuses
        self.service["terminalCondition"] = {
            "type": "Ready", "state": "CONDITION_SUCCEEDED" if ok else "CONDITION_FAILED",
            "lastTransitionTime": "2025-03-09T10:00:00Z"}
        self.service["conditions"] = [{"type": "RoutesReady", "state": "CONDITION_SUCCEEDED"}]

    def serving(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.service["trafficStatuses"]:
            name = s.get("revision") or self.service["latestReadyRevision"].rsplit("/", 1)[-1]
            if s.get("percent", 0) > 0:
                out[name] = out.get(name, 0) + s["percent"]
        return out

    def handle(self, method, path, query, raw, headers):
        if path in self.failures:
            return self.failures[path]
        if path.startswith("/v3/projects/") and path.endswith(":getIamPolicy") and method == "POST":
            return self._get_iam_policy(path.removeprefix("/v3/projects/").removesuffix(":getIamPolicy"),
                                        json.loads(raw or b"{}"))
        if "/instances/" in path and path.startswith("/compute/v1/") or "/operations/" in path and \
                path.startswith("/compute/v1/") or path.startswith("/vm/"):
            answer = self._compute(method, path, query, raw)
            if answer is not None:
                return answer
        if path.startswith("/v2/") and "/jobs/" in path:
            return self._jobs_api(method, path, raw)
        if not path.startswith("/v2/") and path != "/healthz":
            return self._objects(method, path)
        if path == f"/v2/{self.name}":
            if method == "GET":
                return 200, self.service
            if method == "PATCH":
                return self._update(json.loads(raw))
        if path == f"/v2/{self.name}/revisions" and method == "GET":
            return 200, {"revisions": [self.revisions[k] for k in sorted(self.revisions)]}
        if path.startswith(f"/v2/{self.name}/revisions/") and method == "GET":
            short = path.rsplit("/", 1)[-1]
            if short in self.revisions:
                return 200, self.revisions[short]
        if path.startswith(f"/v2/{self.parent}/operations/") and method == "GET":
            op = self.operations.get(path.removeprefix("/v2/"))
            if op is not None:
                return 200, op
        if path == "/healthz" and method == "GET":
            serving = self.serving()
            top = max(serving, key=lambda k: serving[k]) if serving else None
            return (503, "unhealthy") if top is None or top in self.unhealthy else (200, "ok")
        return 404, grpc_error(404, "NOT_FOUND", f"Resource '{path}' was not found")

    def _update(self, body: dict):
        answer, fault = self.begin_write()
        if answer is not None:
            return answer
        if body.get("etag") and body["etag"] != self.service["etag"]:
            return 409, grpc_error(409, "ABORTED", "Etag mismatch: the service was modified concurrently")
        op_name = f"{self.parent}/operations/{uuid.uuid4()}"
        if fault == "op-error":
            self.operations[op_name] = {"name": op_name, "done": True,
                                        "metadata": {"@type": "type.googleapis.com/google.cloud.run.v2.Service",
                                                     **self.service},
                                        "error": {"code": 9, "message": "Revision is not ready to serve traffic"}}
        else:
            for t in body.get("traffic", []):
                if t.get("revision") and t["revision"] not in self.revisions:
                    return 400, grpc_error(400, "INVALID_ARGUMENT", f"Revision {t['revision']} not found")
            # the REST transport sends enums as numbers (`$alt=json;enum-encoding=int`); the API
            # stores and answers them by name
            self.service["traffic"] = [{k: (TRAFFIC_TYPES.get(v, v) if k == "type" else v) for k, v in t.items()
                                        if k in ("type", "revision", "percent", "tag")}
                                       for t in body.get("traffic", [])]
            self.service["etag"] = self._new_etag()
            self.service["generation"] = str(int(self.service["generation"]) + 1)
            self.service["observedGeneration"] = self.service["generation"]
            self._settle()
            self.operations[op_name] = {"name": op_name, "done": True,
                                        "metadata": {"@type": "type.googleapis.com/google.cloud.run.v2.Service",
                                                     **self.service},
                                        "response": {"@type": "type.googleapis.com/google.cloud.run.v2.Service",
                                                     **self.service}}
        if fault == "apply-drop":
            return DROP
        return 200, {"name": op_name, "done": False,
                     "metadata": {"@type": "type.googleapis.com/google.cloud.run.v2.Service", **self.service}}

    def _get_iam_policy(self, project: str, body: dict):
        policy = self.iam_policies.get(project)
        if policy is None:
            return 403, google_error(403, "The caller does not have permission", "forbidden")
        requested = int(body.get("options", {}).get("requestedPolicyVersion", 1) or 1)
        if requested >= 3:
            return 200, policy
        bindings = []
        for b in policy["bindings"]:
            if "condition" in b:
                digest = format(abs(hash(json.dumps(b["condition"], sort_keys=True))) % 16**16, "016x")
                b = {"role": f"{b['role']}_withcond_{digest}", "members": b["members"]}
            bindings.append(b)
        return 200, {**policy, "version": 1, "bindings": bindings}

    def _objects(self, method: str, path: str):
        if method == "GET" and path in self.objects:
            return 200, self.objects[path]
        if method == "POST" and path.endswith("/listNetworkEndpoints"):
            neg = path.removesuffix("/listNetworkEndpoints")
            if neg in self.objects:
                return 200, {"kind": "compute#networkEndpointGroupsListNetworkEndpoints",
                             "items": self.objects.get(neg + "#endpoints", [])}
        return 404, google_error(404, f"The resource '{path.split('/v1/', 1)[-1]}' was not found",
                                 "notFound")


# --- IAM Admin (the client's slice, in memory: its default transport is gRPC) ----------------

class FakeIam:
    """``iam_admin_v1.IAMClient`` (IAM Admin API v1) in memory, for ``project`` with the clock at
    ``now``; a created key carries ``key_material``. Requests are parsed into the real request
    types (an unknown field raises, as the real client does); pages of one account exercise the
    pager. ``errors``: call kind (``"create"``, ``"disable"``, ``"delete"``) → the exception the
    gRPC client raises for a refused call (google-api-core ``grpc_helpers.py`` →
    ``exceptions.from_grpc_error``), raised instead of answering; ``fail_create``: a denied
    create (``PermissionDenied``)."""

    def __init__(self, project: str, now: Any, key_material: bytes) -> None:
        self.project, self.now, self.key_material = project, now, key_material
        self.errors: dict[str, BaseException] = {}
        self.accounts: list[iam_admin_v1.ServiceAccount] = []
        self.keys: dict[str, list[iam_admin_v1.ServiceAccountKey]] = {}
        self.requests: list[tuple[str, object]] = []
        self.fail_create = False
        self._next = 100

    def add_account(self, account: str) -> str:
        email = f"{account}@{self.project}.iam.gserviceaccount.com"
        name = f"projects/{self.project}/serviceAccounts/{email}"
        self.accounts.append(iam_admin_v1.ServiceAccount(name=name, project_id=self.project, email=email))
        self.keys[name] = []
        return name

    def add_key(self, sa_name: str, key_id: str, age_days: int, *, disabled=False, system=False) -> None:
        self.keys[sa_name].append(iam_admin_v1.ServiceAccountKey(
            name=f"{sa_name}/keys/{key_id}", valid_after_time=self.now - dt.timedelta(days=age_days, hours=1),
            disabled=disabled, key_type=(iam_admin_v1.ListServiceAccountKeysRequest.KeyType.SYSTEM_MANAGED
                                         if system else iam_admin_v1.ListServiceAccountKeysRequest.KeyType.USER_MANAGED)))

    def _page(self, request, **_):
        start = int(request.page_token or 0)
        nxt = str(start + 1) if start + 1 < len(self.accounts) else ""
        return iam_admin_v1.ListServiceAccountsResponse(accounts=self.accounts[start:start + 1], next_page_token=nxt)

    def list_service_accounts(self, request: dict[str, Any]) -> pagers.ListServiceAccountsPager:
        req = iam_admin_v1.ListServiceAccountsRequest(request)
        assert req.name == f"projects/{self.project}"
        return pagers.ListServiceAccountsPager(self._page, req, self._page(req))

    def list_service_account_keys(self, request: dict[str, Any]) -> ServiceAccountKeys:
        req = iam_admin_v1.ListServiceAccountKeysRequest(request)
        self.requests.append(("list_keys", req))
        keys = [k for k in self.keys[req.name] if not req.key_types or k.key_type in req.key_types]
        # proto-plus stubs type valid_after_time as Timestamp; it reads back as a datetime
        return iam_admin_v1.ListServiceAccountKeysResponse(keys=keys)  # pyright: ignore[reportReturnType]

    def create_service_account_key(self, request: dict[str, Any]) -> ServiceAccountKey:
        req = iam_admin_v1.CreateServiceAccountKeyRequest(request)
        self.requests.append(("create", req))
        if "create" in self.errors:
            raise self.errors["create"]
        if self.fail_create:
            raise gexc.PermissionDenied("iam.serviceAccountKeys.create denied")
        self._next += 1
        key = iam_admin_v1.ServiceAccountKey(name=f"{req.name}/keys/new{self._next}",
                                             private_key_data=self.key_material, valid_after_time=self.now)
        self.keys[req.name].append(iam_admin_v1.ServiceAccountKey(name=key.name, valid_after_time=self.now))
        # proto-plus stubs type valid_after_time as Timestamp; it reads back as a datetime
        return key  # pyright: ignore[reportReturnType]

    def disable_service_account_key(self, request: dict[str, Any]) -> None:
        req = iam_admin_v1.DisableServiceAccountKeyRequest(request)
        self.requests.append(("disable", req))
        if "disable" in self.errors:
            raise self.errors["disable"]
        for keys in self.keys.values():
            for k in keys:
                if k.name == req.name:
                    k.disabled = True

    def delete_service_account_key(self, request: dict[str, Any]) -> None:
        req = iam_admin_v1.DeleteServiceAccountKeyRequest(request)
        self.requests.append(("delete", req))
        if "delete" in self.errors:
            raise self.errors["delete"]
        for sa, keys in self.keys.items():
            self.keys[sa] = [k for k in keys if k.name != req.name]


# --- Secret Manager (the client's slice, in memory: its default transport is gRPC) --------------

class FakeSecretManager:
    """:class:`clusterstack.adapters.gcp.SecretManagerClient` in memory, answering as
    ``SecretManagerServiceClient`` (Secret Manager API v1): ``access_secret_version(name=)``
    returns ``.payload.data`` bytes of ``values[name]`` (``default`` for any other name, else
    NotFound) and records ``names``; ``add_secret_version(request)`` checks the payload's
    ``data_crc32c`` as Secret Manager does and appends a version (``versions``); ``fail``: the
    add is denied (PermissionDenied); ``access_error`` / ``add_error``: raised by every access / add instead — what
    the gRPC client raises for a refused call (google-api-core ``grpc_helpers.py``
    ``_wrap_unary_errors`` → ``exceptions.from_grpc_error``: ``PermissionDenied``,
    ``NotFound``, ``ServiceUnavailable``; ``RetryError`` once its retry gives up; google-auth's
    ``RefreshError`` / ``DefaultCredentialsError`` for credentials)."""

    def __init__(self, values: dict[str, str] | None = None, *, default: str | None = None) -> None:
        self.values = dict(values or {})
        self.default = default
        self.names: list[str] = []
        self.versions: dict[str, list[bytes]] = {}
        self.fail = False
        self.access_error: BaseException | None = None
        self.add_error: BaseException | None = None

    def access_secret_version(self, *, name: str) -> secretmanager.AccessSecretVersionResponse:
        from google.api_core import exceptions as gexc
        from google.cloud import secretmanager

        self.names.append(name)
        if self.access_error is not None:
            raise self.access_error
        value = self.values.get(name, self.default)
        if value is None:
            raise gexc.NotFound(f"Secret Version [{name}] not found.")
        return secretmanager.AccessSecretVersionResponse(
            name=name, payload=secretmanager.SecretPayload(data=value.encode()))

    def add_secret_version(self, request: dict[str, Any]) -> secretmanager.SecretVersion:
        import google_crc32c
        from google.api_core import exceptions as gexc
        from google.cloud import secretmanager

        req = secretmanager.AddSecretVersionRequest(request)
        if self.fail:
            raise gexc.PermissionDenied("secretmanager.versions.add denied")
        if self.add_error is not None:
            raise self.add_error
        assert req.payload.data_crc32c == google_crc32c.value(req.payload.data)
        self.versions.setdefault(req.parent, []).append(req.payload.data)
        return secretmanager.SecretVersion(name=f"{req.parent}/versions/{len(self.versions[req.parent])}",
                                           state=secretmanager.SecretVersion.State.ENABLED)


class FakeKms:
    """Cloud KMS (``google.cloud.kms_v1``, API v1 Encrypt/Decrypt). Stands in for ``kms_v1.KeyManagementServiceClient`` (Tink's gcpkms integration calls
    ``encrypt``/``decrypt`` with request dicts); answers with the real response types, encrypts
    with a local AEAD per key name and enforces the additional authenticated data, as KMS does."""

    keys: dict[str, aead.Aead] = {}
    calls: list[tuple[str, str, bytes]] = []
    deny = False

    def __init__(self, credentials=None, **_):
        self.credentials = credentials

    def _aead(self, name: str) -> aead.Aead:
        if FakeKms.deny:
            raise gexc.PermissionDenied("Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' denied")
        if name not in FakeKms.keys:
            FakeKms.keys[name] = tink.new_keyset_handle(aead.aead_key_templates.AES256_GCM).primitive(aead.Aead)
        return FakeKms.keys[name]

    def encrypt(self, request):
        FakeKms.calls.append(("encrypt", request["name"], request["additional_authenticated_data"]))
        ct = self._aead(request["name"]).encrypt(request["plaintext"], request["additional_authenticated_data"])
        return kms_v1.EncryptResponse(name=request["name"], ciphertext=ct)

    def decrypt(self, request):
        FakeKms.calls.append(("decrypt", request["name"], request["additional_authenticated_data"]))
        try:
            pt = self._aead(request["name"]).decrypt(request["ciphertext"], request["additional_authenticated_data"])
        except tink.TinkError:
            raise gexc.InvalidArgument("Decryption failed") from None
        return kms_v1.DecryptResponse(plaintext=pt)

