"""The Kubernetes API server fake (on :mod:`fakes.http`), for ``clusterstack deploy`` and
``clusterstack verify`` with the official ``kubernetes`` client.

What it serves (Kubernetes API reference, v1.30; paths ``/api/v1/…`` for the core group,
``/apis/<group>/<version>/…`` otherwise):

- any object put in :attr:`FakeKubernetes.objects` (keyed by its path, see :func:`kube_path`)
  answered by ``GET``, and a namespaced ``secrets`` collection listed with a
  ``labelSelector`` (``SecretList``) — what ``verify`` reads, Helm 3's release Secrets
  included (:func:`helm_secret`);
- one apps/v1 Deployment (``namespace/name``, :meth:`FakeKubernetes.seed`) with its
  ReplicaSets: ``GET|PATCH …/deployments/{name}`` (``application/json-patch+json``, RFC 6902
  with ``test`` ops, a failed test answered 422 and nothing written), ``GET …/replicasets``
  (``labelSelector``), ``PATCH …/replicasets/{name}`` (merge patch, RFC 7386), and the service
  proxy ``GET /api/v1/namespaces/{ns}/services/{name}:{port}/proxy/{path}``;
- a missing object: a ``Status`` document with 404 ``NotFound``; :attr:`failures` (path →
  ``(status, body)``) answered instead (e.g. :func:`kube_forbidden`).

The Deployment controller is simulated the way ``pkg/controller/deployment`` behaves: a
template change reuses the ReplicaSet whose template matches (ignoring ``pod-template-hash``)
and gives it the next revision number, or creates a new one; the Deployment's revision
annotation follows; Recreate leaves one ReplicaSet scaled up. It can be told to misbehave:

- ``faults``: a queue consumed by the Deployment PATCH: ``None`` = behave, ``"drop"`` = close
  the connection without applying or answering, ``"apply-drop"`` = apply, then close without
  answering, ``(status, body)`` = answer that;
- ``before_write``: a callable run just before the PATCH is applied (to move the world between
  the client's re-check and its write);
- ``stuck``: ReplicaSet names whose pods never become available — the Deployment reports
  ``Progressing=False / ProgressDeadlineExceeded`` when it runs one;
- ``unhealthy``: ReplicaSet names whose health endpoint answers 503.
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from typing import Any

from fakes.http import DROP, FakeServer

REVISION = "deployment.kubernetes.io/revision"
HASH = "pod-template-hash"
SKIP_COPY = {"kubectl.kubernetes.io/last-applied-configuration", REVISION,
             "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
             "deployment.kubernetes.io/max-replicas"}


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


class FakeKubernetes(FakeServer):
    """The API server: :attr:`objects` by path, and one Deployment (``namespace/name``) with
    its ReplicaSets once :meth:`seed` ed; see the module docstring."""

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

    def seed(self, revisions: list[dict], serving: int) -> "FakeKubernetes":
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
    def handle(self, method, path, query, raw, headers):
        if path in self.failures:
            return self.failures[path]
        if not self.deployment:
            return self._objects(method, path, query)
        content_type = headers.get("Content-Type", "")
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

    def _objects(self, method: str, path: str, query: dict[str, list[str]]):
        if method == "GET" and path in self.objects:
            return 200, self.objects[path]
        if method == "GET" and path.endswith("/secrets"):   # list, with a label selector
            wanted = dict(p.split("=", 1) for p in query.get("labelSelector", [""])[0].split(",") if p)
            items = [o for p, o in sorted(self.objects.items())
                     if p.startswith(path + "/") and all(
                         (o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
            return 200, {"kind": "SecretList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "1000"}, "items": items}
        name = path.rsplit("/", 1)[-1]
        resource = path.rsplit("/", 2)[-2]
        return 404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": f'{resource} "{name}" not found', "reason": "NotFound",
                     "details": {"name": name, "kind": resource}, "code": 404}


    def _patch_deployment(self, raw: bytes, content_type: str):
        answer, fault = self.begin_write()
        if answer is not None:
            return answer
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


def client_for(url: str) -> Any:
    """The official client, configured for a fake API server at ``url``: no credentials, no
    retries (a dropped connection must surface), path parameters as the adapter sends them
    (:data:`clusterstack.adapters.kubernetes.SAFE_PATH_CHARS`)."""
    from kubernetes import client

    from clusterstack.adapters.kubernetes import SAFE_PATH_CHARS

    cfg = client.Configuration(host=url)
    cfg.retries = 0
    cfg.safe_chars_for_path_param = SAFE_PATH_CHARS
    return client.ApiClient(cfg)


def kube_forbidden(path: str) -> tuple[int, dict]:
    name = path.rsplit("/", 1)[-1]
    return 403, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": f'forbidden: User "verify" cannot get resource "{name}"',
                 "reason": "Forbidden", "details": {"name": name}, "code": 403}


def kube_path(api_version: str, plural: str, name: str, namespace: str | None = None) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{ns}/{plural}/{name}"


def kube_object(api_version: str, kind: str, name: str, namespace: str | None = None,
                **body: Any) -> dict:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind.lower()}-{name}",
                            "resourceVersion": "4711", "creationTimestamp": "2025-01-01T00:00:00Z"}
    if namespace:
        meta["namespace"] = namespace
    meta.update(body.pop("metadata", {}))
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def helm_secret(namespace: str, release: str, revision: int, status: str) -> dict:
    """A Helm 3 release Secret (type ``helm.sh/release.v1``, Helm "Storage backends")."""
    return kube_object("v1", "Secret", f"sh.helm.release.v1.{release}.v{revision}", namespace,
                       type="helm.sh/release.v1", data={"release": "H4sIAAAAAAAA"},
                       metadata={"labels": {"name": release, "owner": "helm", "status": status,
                                            "version": str(revision)}})
