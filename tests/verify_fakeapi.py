"""A local HTTP server that answers like the Kubernetes API or the Google Cloud REST APIs,
for testing ``clusterstack verify`` with the real client libraries.

The server listens on 127.0.0.1 (an ephemeral port), serves JSON objects of the real shape
from a dict keyed by URL path, answers a missing path the way the real API does (a
Kubernetes ``Status`` / a Google ``error`` document with 404), records every request, and
stops by itself: a watchdog shuts it down after ``deadline`` seconds even if a test never
exits the ``with`` block, and every connection has a socket timeout.

Builders below produce objects in the shapes of the Kubernetes API reference and the Compute
Engine / Artifact Registry REST references.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GCE = "https://www.googleapis.com/compute/v1"


class FakeApiServer:
    """``with FakeApiServer("kubernetes"|"gcp") as srv: srv.objects[path] = {...}``."""

    def __init__(self, flavor: str, *, deadline: float = 60.0) -> None:
        assert flavor in ("kubernetes", "gcp")
        self.flavor = flavor
        self.objects: dict[str, Any] = {}
        self.failures: dict[str, tuple[int, dict]] = {}   # path → (status, body) answered instead
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10   # socket timeout per connection

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                parts = urlsplit(self.path)
                with server._lock:
                    server.requests.append((self.command, parts.path))
                status, body = server.respond(self.command, parts.path, parse_qs(parts.query))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

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

    def __enter__(self) -> "FakeApiServer":
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- answers -------------------------------------------------------------------------

    def respond(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if path in self.failures:
            return self.failures[path]
        if self.flavor == "kubernetes":
            return self._kubernetes(method, path, query)
        return self._gcp(method, path)

    def _kubernetes(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
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

    def _gcp(self, method: str, path: str) -> tuple[int, dict]:
        if method == "GET" and path in self.objects:
            return 200, self.objects[path]
        if method == "POST" and path.endswith("/listNetworkEndpoints"):
            neg = path.removesuffix("/listNetworkEndpoints")
            if neg in self.objects:
                return 200, {"kind": "compute#networkEndpointGroupsListNetworkEndpoints",
                             "items": self.objects.get(neg + "#endpoints", [])}
        return 404, google_error(404, f"The resource '{path.split('/v1/', 1)[-1]}' was not found",
                                 "notFound")


def google_error(code: int, message: str, reason: str) -> dict:
    """The error document of Google REST APIs (``{"error": {code, message, errors[]}}``)."""
    status = {403: "PERMISSION_DENIED", 404: "NOT_FOUND"}.get(code, "UNKNOWN")
    return {"error": {"code": code, "message": message, "status": status,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}


def kube_forbidden(path: str) -> tuple[int, dict]:
    name = path.rsplit("/", 1)[-1]
    return 403, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": f'forbidden: User "verify" cannot get resource "{name}"',
                 "reason": "Forbidden", "details": {"name": name}, "code": 403}


# --- Kubernetes objects ----------------------------------------------------------------------

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
    """A Helm 3 release Secret (type ``helm.sh/release.v1``)."""
    return kube_object("v1", "Secret", f"sh.helm.release.v1.{release}.v{revision}", namespace,
                       type="helm.sh/release.v1", data={"release": "H4sIAAAAAAAA"},
                       metadata={"labels": {"name": release, "owner": "helm", "status": status,
                                            "version": str(revision)}})


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
