"""Local HTTP servers that answer like the Kubernetes API (apps/v1 Deployments and ReplicaSets,
the service proxy) and the Cloud Run Admin API v2 (Service, Revisions, long-running
Operations), for testing ``clusterstack deploy`` with the real client libraries.

Both listen on 127.0.0.1 (ephemeral port), record every request, stop by themselves (a
watchdog shuts the server down after ``deadline`` seconds even if a test never leaves the
``with`` block; each connection has a socket timeout), and can be told to misbehave:

- ``faults``: a queue consumed by the mutating requests (Deployment PATCH / Service PATCH):
  ``None`` = behave, ``"drop"`` = close the connection without applying or answering,
  ``"apply-drop"`` = apply, then close without answering, ``(status, body)`` = answer that,
  ``"op-error"`` (Cloud Run) = accept, but the operation ends with an error and nothing changes;
- ``before_write``: a callable run on the server just before a mutating request is applied
  (to move the world between the client's re-check and its write);
- ``stuck`` (Kubernetes): ReplicaSet names whose pods never become available — the
  Deployment reports ``Progressing=False / ProgressDeadlineExceeded`` when it runs one;
- ``unhealthy``: ReplicaSet / revision names whose health endpoint answers 503.

The Deployment controller is simulated the way ``pkg/controller/deployment`` behaves: a
template change reuses the ReplicaSet whose template matches (ignoring ``pod-template-hash``)
and gives it the next revision number, or creates a new one; the Deployment's revision
annotation follows; Recreate leaves one ReplicaSet scaled up.
"""

from __future__ import annotations

import copy
import hashlib
import json
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

DROP = object()

REVISION = "deployment.kubernetes.io/revision"
HASH = "pod-template-hash"
SKIP_COPY = {"kubectl.kubernetes.io/last-applied-configuration", REVISION,
             "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
             "deployment.kubernetes.io/max-replicas"}


class _Server:
    """Threaded HTTP server plumbing; subclasses implement :meth:`handle`."""

    def __init__(self, *, deadline: float = 60.0) -> None:
        self.requests: list[tuple[str, str]] = []
        self.raw_paths: list[str] = []   # as sent, before percent-decoding
        self.faults: list[Any] = []
        self.before_write: Callable[[], None] | None = None
        self.lock = threading.RLock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                with server.lock:
                    server.raw_paths.append(parts.path)
                    server.requests.append((self.command, unquote(parts.path)))
                    result = server.handle(self.command, unquote(parts.path), parse_qs(parts.query),
                                           raw, self.headers.get("Content-Type", ""))
                if result is DROP:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                status, body = result
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._watchdog = threading.Timer(deadline, self._httpd.shutdown)
        self._watchdog.daemon = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def __enter__(self):
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def next_fault(self) -> Any:
        return self.faults.pop(0) if self.faults else None

    def writes(self, method: str = "PATCH") -> list[str]:
        return [p for m, p in self.requests if m == method]

    def handle(self, method: str, path: str, query: dict, raw: bytes, content_type: str):
        raise NotImplementedError


# --- JSON pointer / patch (RFC 6901, 6902, 7386) ---------------------------------------------

class PatchTestFailed(Exception):
    pass


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def json_patch(doc: Any, ops: list[dict]) -> Any:
    """Apply an RFC 6902 patch (test, replace, add, remove) atomically: on any failure the
    original is untouched. Raises PatchTestFailed with evanphx/json-patch's message."""
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = _tokens(op["path"])
        node = doc
        for t in parents:
            node = node[int(t)] if isinstance(node, list) else node.get(t)
            if node is None:
                raise PatchTestFailed(f"testing value {op['path']} failed: missing path")
        if op["op"] == "test":
            current = node.get(last) if isinstance(node, dict) else node[int(last)]
            if current != op["value"]:
                raise PatchTestFailed(f"testing value {op['path']} failed: test failed")
        elif op["op"] in ("replace", "add"):
            node[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del node[last]
        else:
            raise ValueError(op["op"])
    return doc


def merge_patch(doc: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def kube_status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


# --- Kubernetes -------------------------------------------------------------------------------

def _sans_hash(template: dict) -> dict:
    t = copy.deepcopy(template)
    t.get("metadata", {}).get("labels", {}).pop(HASH, None)
    return t


def _hash(template: dict) -> str:
    digest = hashlib.sha256(json.dumps(_sans_hash(template), sort_keys=True).encode()).hexdigest()
    return "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:10]


def pod_template(image: str, commit: str | None, name: str = "logrelay") -> dict:
    """A pod template as KubernetesService declares it (annotations: source revision)."""
    return {"metadata": {"labels": {"app.kubernetes.io/name": name,
                                    "app.kubernetes.io/managed-by": "clusterstack"},
                         "annotations": {"clusterstack.dev/source-revision": commit} if commit else {}},
            "spec": {"containers": [{"name": name, "image": image,
                                     "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                                     "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                                        "periodSeconds": 5, "failureThreshold": 2,
                                                        "timeoutSeconds": 2, "successThreshold": 1},
                                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                     "terminationMessagePath": "/dev/termination-log",
                                     "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                     "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                     "securityContext": {}}}


class FakeKube(_Server):
    """One Deployment (``namespace/name``) with its ReplicaSets; see the module docstring."""

    def __init__(self, namespace: str = "logging", name: str = "logrelay", **kw: Any) -> None:
        super().__init__(**kw)
        self.namespace, self.name = namespace, name
        self.uid = "5b0c2f8e-2d4a-4f71-9d35-0f7d1c8e6a11"
        self.deployment: dict = {}
        self.replicasets: dict[str, dict] = {}
        self.stuck: set[str] = set()
        self.unhealthy: set[str] = set()
        self._rv = 1000
        self._clock = 0

    # world construction
    def _now(self) -> str:
        self._clock += 1
        return f"2025-03-{1 + self._clock // 24:02d}T{self._clock % 24:02d}:00:00Z"

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def seed(self, revisions: list[dict], serving: int) -> "FakeKube":
        """``revisions``: ``{"revision": n, "image": …, "commit": …, "health": mark|None,
        "message": …}``; ``serving``: the revision the Deployment runs."""
        for r in revisions:
            template = pod_template(r["image"], r.get("commit"), self.name)
            h = _hash(template)
            template["metadata"]["labels"][HASH] = h
            ann = {REVISION: str(r["revision"]), "deployment.kubernetes.io/desired-replicas": "1",
                   "deployment.kubernetes.io/max-replicas": "1"}
            if r.get("message"):
                ann["kubernetes.io/change-cause"] = r["message"]
            if r.get("health"):
                ann["clusterstack.dev/health"] = r["health"]
            rs_name = f"{self.name}-{h}"
            self.replicasets[rs_name] = {
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": rs_name, "namespace": self.namespace, "uid": str(uuid.uuid4()),
                             "resourceVersion": self._next_rv(), "generation": 1,
                             "creationTimestamp": self._now(),
                             "labels": {**template["metadata"]["labels"]}, "annotations": ann,
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                  "name": self.name, "uid": self.uid,
                                                  "controller": True, "blockOwnerDeletion": True}]},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app.kubernetes.io/name": self.name,
                                                                      HASH: h}},
                         "template": template},
                "status": {"replicas": 0, "observedGeneration": 1}}
        current = self.by_revision(serving)
        self.deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid,
                         "resourceVersion": self._next_rv(), "generation": serving,
                         "creationTimestamp": "2025-02-01T00:00:00Z",
                         "labels": {"app.kubernetes.io/name": self.name},
                         "annotations": {REVISION: str(serving),
                                         **({"kubernetes.io/change-cause": current["metadata"]["annotations"]["kubernetes.io/change-cause"]}
                                            if "kubernetes.io/change-cause" in current["metadata"]["annotations"] else {})}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": self.name}},
                     "template": _sans_hash(current["spec"]["template"]),
                     "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 10,
                     "progressDeadlineSeconds": 600},
            "status": {}}
        self._controller()
        return self

    def by_revision(self, n: int) -> dict:
        return next(rs for rs in self.replicasets.values()
                    if rs["metadata"]["annotations"].get(REVISION) == str(n))

    def serving_rs(self) -> dict:
        want = _sans_hash(self.deployment["spec"]["template"])
        return next(rs for rs in self.replicasets.values() if _sans_hash(rs["spec"]["template"]) == want)

    def rollout(self, image: str, commit: str, message: str = "") -> None:
        """What `pulumi up` of a new template does (a new revision)."""
        self.deployment["spec"]["template"] = pod_template(image, commit, self.name)
        if message:
            self.deployment["metadata"]["annotations"]["kubernetes.io/change-cause"] = message
        self.deployment["metadata"]["generation"] += 1
        self._controller()

    def _controller(self) -> None:
        dep = self.deployment
        want = _sans_hash(dep["spec"]["template"])
        revs = [int(rs["metadata"]["annotations"][REVISION]) for rs in self.replicasets.values()]
        current = int(dep["metadata"]["annotations"].get(REVISION, "0") or 0)
        match = next((rs for rs in self.replicasets.values() if _sans_hash(rs["spec"]["template"]) == want), None)
        if match is None:
            template = copy.deepcopy(want)
            h = _hash(template)
            template.setdefault("metadata", {}).setdefault("labels", {})[HASH] = h
            name = f"{self.name}-{h}"
            match = self.replicasets[name] = {
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": self.namespace, "uid": str(uuid.uuid4()),
                             "resourceVersion": self._next_rv(), "generation": 1,
                             "creationTimestamp": self._now(), "labels": dict(template["metadata"]["labels"]),
                             "annotations": {REVISION: str(max(revs, default=0) + 1)},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                  "name": self.name, "uid": self.uid,
                                                  "controller": True, "blockOwnerDeletion": True}]},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app.kubernetes.io/name": self.name, HASH: h}},
                         "template": template},
                "status": {"replicas": 0, "observedGeneration": 1}}
        ann = match["metadata"]["annotations"]
        rev = int(ann[REVISION])
        if rev != current and rev < max(revs, default=0):  # an old ReplicaSet comes back: next number
            history = ann.get("deployment.kubernetes.io/revision-history")
            ann["deployment.kubernetes.io/revision-history"] = f"{history},{rev}" if history else str(rev)
            rev = max(revs) + 1
            ann[REVISION] = str(rev)
        for k, v in dep["metadata"].get("annotations", {}).items():  # copyDeploymentAnnotationsToReplicaSet
            if k not in SKIP_COPY:
                ann[k] = v
        dep["metadata"]["annotations"][REVISION] = str(rev)
        for rs in self.replicasets.values():
            up = rs is match
            rs["spec"]["replicas"] = 1 if up else 0
            ok = up and rs["metadata"]["name"] not in self.stuck
            rs["status"] = {"replicas": 1 if up else 0, "readyReplicas": 1 if ok else 0,
                            "availableReplicas": 1 if ok else 0, "observedGeneration": 1}
        stuck = match["metadata"]["name"] in self.stuck
        gen = dep["metadata"]["generation"]
        dep["metadata"]["resourceVersion"] = self._next_rv()
        dep["status"] = {
            "observedGeneration": gen, "replicas": 1, "updatedReplicas": 1,
            "readyReplicas": 0 if stuck else 1, "availableReplicas": 0 if stuck else 1,
            **({"unavailableReplicas": 1} if stuck else {}),
            "conditions": [
                {"type": "Available", "status": "False" if stuck else "True",
                 "reason": "MinimumReplicasUnavailable" if stuck else "MinimumReplicasAvailable",
                 "message": "Deployment does not have minimum availability." if stuck
                 else "Deployment has minimum availability.",
                 "lastUpdateTime": "2025-03-01T00:00:00Z", "lastTransitionTime": "2025-03-01T00:00:00Z"},
                {"type": "Progressing", "status": "False" if stuck else "True",
                 "reason": "ProgressDeadlineExceeded" if stuck else "NewReplicaSetAvailable",
                 "message": f'ReplicaSet "{match["metadata"]["name"]}" has timed out progressing.' if stuck
                 else f'ReplicaSet "{match["metadata"]["name"]}" has successfully progressed.',
                 "lastUpdateTime": "2025-03-01T00:00:00Z", "lastTransitionTime": "2025-03-01T00:00:00Z"}]}

    # API
    def handle(self, method, path, query, raw, content_type):
        apps = f"/apis/apps/v1/namespaces/{self.namespace}"
        if path == f"{apps}/deployments/{self.name}":
            if method == "GET":
                return 200, self.deployment
            if method == "PATCH":
                return self._patch_deployment(raw, content_type)
        if path == f"{apps}/replicasets" and method == "GET":
            sel = dict(p.split("=", 1) for p in query.get("labelSelector", [""])[0].split(",") if p)
            items = [rs for _, rs in sorted(self.replicasets.items())
                     if all(rs["metadata"]["labels"].get(k) == v for k, v in sel.items())]
            return 200, {"kind": "ReplicaSetList", "apiVersion": "apps/v1",
                         "metadata": {"resourceVersion": str(self._rv)}, "items": items}
        if path.startswith(f"{apps}/replicasets/") and method == "PATCH":
            name = path.rsplit("/", 1)[-1]
            if name not in self.replicasets:
                return 404, kube_status(404, "NotFound", f'replicasets.apps "{name}" not found')
            self.replicasets[name] = merge_patch(self.replicasets[name], json.loads(raw))
            return 200, self.replicasets[name]
        proxy = f"/api/v1/namespaces/{self.namespace}/services/"
        if path.startswith(proxy) and "/proxy/" in path and method == "GET":
            rs = self.serving_rs()
            if rs["metadata"]["name"] in self.unhealthy or rs["metadata"]["name"] in self.stuck:
                return 503, "unhealthy"
            return 200, "ok"
        return 404, kube_status(404, "NotFound", f"{path} not found")

    def _patch_deployment(self, raw: bytes, content_type: str):
        fault = self.next_fault()
        if fault == "drop":
            return DROP
        if isinstance(fault, tuple):
            return fault
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook()
        if not content_type.startswith("application/json-patch+json"):
            return 415, kube_status(415, "UnsupportedMediaType", content_type)
        try:
            patched = json_patch(self.deployment, json.loads(raw))
        except PatchTestFailed as exc:
            return 422, kube_status(422, "Invalid", "the server rejected our request due to an error "
                                    f"in our request: {exc}")
        spec_changed = patched["spec"] != self.deployment["spec"]
        self.deployment = patched
        if spec_changed:
            self.deployment["metadata"]["generation"] += 1
        self._controller()
        if fault == "apply-drop":
            return DROP
        return 200, self.deployment


# --- Cloud Run --------------------------------------------------------------------------------

def _stamp(n: int, minutes: int = 0) -> str:
    """RFC 3339 UTC time of the n-th revision (one a day from 2025-03-01)."""
    from datetime import datetime, timedelta, timezone

    t = datetime(2025, 3, 1, 10, tzinfo=timezone.utc) + timedelta(days=n - 1, minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


TRAFFIC_TYPES = {0: "TRAFFIC_TARGET_ALLOCATION_TYPE_UNSPECIFIED", 1: "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST",
                 2: "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"}


def grpc_error(code: int, status: str, message: str) -> dict:
    """The error document of Google REST APIs for a gRPC status."""
    return {"error": {"code": code, "message": message, "status": status}}


class FakeCloudRun(_Server):
    """One Cloud Run service with revisions; see the module docstring."""

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
        self._etag = 0

    def _new_etag(self) -> str:
        self._etag += 1
        return f'"etag-{self._etag}"'

    def seed(self, revisions: list[dict], traffic: list[dict]) -> "FakeCloudRun":
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

    def handle(self, method, path, query, raw, content_type):
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
        fault = self.next_fault()
        if fault == "drop":
            return DROP
        if isinstance(fault, tuple):
            return fault
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook()
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
