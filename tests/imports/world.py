"""A live system that runs exactly what a plan declares, written in the operator tools' formats
(what ``--live-dump`` reads), so adoption tests can start from "nothing differs" and change one
thing at a time.

Formats and server behaviour, each from its source:

- ``kubectl get … -o yaml`` of several objects is one ``kind: List`` (``apiVersion: v1``,
  ``items``, ``metadata.resourceVersion: ""``: kubectl's printers wrap a multi-object result in a
  v1 List); every object comes back with ``metadata.uid``, ``resourceVersion`` and
  ``creationTimestamp`` (ObjectMeta, set by the API server);
- a Namespace gets the label ``kubernetes.io/metadata.name`` (Kubernetes well-known labels) and
  the ``kubernetes`` finalizer (``pkg/registry/core/namespace/strategy.go`` PrepareForCreate);
- a Kueue ClusterQueue gets its CRD's defaults (kueue v0.14.4
  ``config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml``);
- a Helm release is its storage Secret: ``sh.helm.release.v1.<name>.v<revision>``, ``type:
  helm.sh/release.v1``, labels ``name``/``owner: helm``/``status``/``version``, ``data.release``
  = base64 of the release record, itself base64 of the gzip of the release JSON (helm v3
  ``pkg/storage/driver/secrets.go`` newSecretsObject, ``util.go`` encodeRelease);
- ``gcloud compute addresses describe --format=json``: the Compute Engine ``Address`` resource
  (``kind: compute#address``, ``region`` and ``selfLink`` as URLs); ``gcloud artifacts
  repositories describe --format=json``: the Artifact Registry ``Repository`` resource
  (``name: projects/…/repositories/<id>``, ``cleanupPolicies`` a map by id);
- Cloudflare API v4 ``GET /zones/<zone>/dns_records/<id>``: ``{"result": {…}, "success": true,
  "errors": [], "messages": []}``.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Callable

import yaml

from clusterstack.imports.rules import chart_name
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens

T0 = "2026-07-18T10:02:11Z"
COMPUTE = "https://www.googleapis.com/compute/v1"


def _uid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def kube_live(r: PlannedResource) -> dict[str, Any]:
    """The object the API server returns for the declared one."""
    obj = copy.deepcopy({k: v for k, v in r.inputs.items() if not k.startswith("__")})
    meta = obj.setdefault("metadata", {})
    meta.update(uid=_uid(r.urn), resourceVersion=str(int(_uid(r.urn)[:6], 16)), creationTimestamp=T0)
    if obj.get("kind") == "Namespace":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    if obj.get("kind") == "ClusterQueue":
        spec = obj.setdefault("spec", {})
        spec.setdefault("queueingStrategy", "BestEffortFIFO")
        spec.setdefault("stopPolicy", "None")
        spec.setdefault("flavorFungibility", {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"})
        pre = spec.setdefault("preemption", {})
        pre.setdefault("borrowWithinCohort", {"policy": "Never"})
        pre.setdefault("reclaimWithinCohort", "Never")
        pre.setdefault("withinClusterQueue", "Never")
    return obj


def helm_secret(r: PlannedResource, *, revision: int = 1, status: str = "deployed",
                values: Any = None) -> dict[str, Any]:
    """The storage Secret of the release ``r`` declares (or with other ``values``)."""
    i = r.inputs
    release = {"name": i["name"], "namespace": i["namespace"], "version": revision,
               "info": {"status": status, "first_deployed": T0, "last_deployed": T0},
               "chart": {"metadata": {"name": chart_name(i["chart"]), "version": i.get("version"),
                                      "apiVersion": "v2"}},
               "config": i.get("values") or {} if values is None else values}
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as g:
        g.write(json.dumps(release, sort_keys=True).encode())
    record = base64.b64encode(buf.getvalue())
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.{i['name']}.v{revision}", "namespace": i["namespace"],
                         "labels": {"name": i["name"], "owner": "helm", "status": status,
                                    "version": str(revision)},
                         "uid": _uid(r.urn + str(revision)), "creationTimestamp": T0},
            "data": {"release": base64.b64encode(record).decode()}}


def gcp_live(r: PlannedResource) -> dict[str, Any]:
    """The REST object ``gcloud … describe --format=json`` prints for the declared one."""
    i = r.inputs
    if r.type == tokens.ADDRESS:
        base = f"{COMPUTE}/projects/{i['project']}/regions/{i['region']}"
        out = {"kind": "compute#address", "name": i["name"], "address": i.get("address"),
               "addressType": i.get("addressType", "EXTERNAL"), "networkTier": "PREMIUM",
               "region": base, "selfLink": f"{base}/addresses/{i['name']}", "status": "RESERVED",
               "id": str(int(_uid(r.urn)[:8], 16))}
        if i.get("description"):
            out["description"] = i["description"]
        return out
    if r.type == tokens.ARTIFACT_REPOSITORY:
        out = {"name": f"projects/{i['project']}/locations/{i['location']}/repositories/{i['repositoryId']}",
               "format": i["format"], "mode": i.get("mode", "STANDARD_REPOSITORY"),
               "createTime": T0, "updateTime": T0, "sizeBytes": "0"}
        if i.get("description"):
            out["description"] = i["description"]
        rrc = {k: v for k, v in (i.get("remoteRepositoryConfig") or {}).items() if v not in (None, "")}
        if rrc:
            out["remoteRepositoryConfig"] = rrc
        if i.get("cleanupPolicies"):
            out["cleanupPolicies"] = {p["id"]: p for p in i["cleanupPolicies"]}
        return out
    raise ValueError(f"no live form for {r.type}")


def cloudflare_live(r: PlannedResource, record_id: str) -> dict[str, Any]:
    i = r.inputs
    return {"success": True, "errors": [], "messages": [], "result": {
        "id": record_id, "zone_id": i["zoneId"], "name": i["name"], "type": i["type"],
        "content": i["content"], "ttl": i.get("ttl", 1), "proxied": bool(i.get("proxied")),
        "proxiable": True, "comment": None, "tags": [], "created_on": T0, "modified_on": T0}}


Edit = Callable[[PlannedResource, dict[str, Any]], dict[str, Any] | None]


def write_world(plan: StackPlan, directory: Path, *, record_id: str = "372e67954025e0ba6aaa6d586b9e0b59",
                edit: dict[str, Edit] | None = None, drop: set[str] = frozenset()) -> list[Path]:
    """Dump files of a live system running ``plan``'s leaves: ``kubectl.yaml`` (Kubernetes
    objects), ``helm.yaml`` (release Secrets), ``gcloud.json``, ``cloudflare.json`` (only those
    that have objects). ``edit[urn or logical name](resource, live)`` returns the changed live
    object (None: absent); ``drop``: URNs or logical names not live at all."""
    edit = edit or {}
    kube, helm, gcp, cf = [], [], [], []
    for r in plan.resources:
        if not r.custom or r.is_provider or r.type == tokens.STACK_TYPE or r.name in drop or r.urn in drop:
            continue
        if r.type == tokens.HELM_RELEASE:
            live, bucket = helm_secret(r), helm
        elif r.type == tokens.DNS_RECORD:
            live, bucket = cloudflare_live(r, record_id), cf
        elif tokens.package(r.type) == "kubernetes":
            live, bucket = kube_live(r), kube
        elif r.type in (tokens.ADDRESS, tokens.ARTIFACT_REPOSITORY):
            live, bucket = gcp_live(r), gcp
        else:
            continue
        fn = edit.get(r.urn) or edit.get(r.name)
        if fn is not None:
            live = fn(r, live)
        if live is not None:
            bucket.append(live)
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for name, items, fmt in (("kubectl.yaml", kube, "list"), ("helm.yaml", helm, "list"),
                             ("gcloud.json", gcp, "json"), ("cloudflare.json", cf, "json")):
        if not items:
            continue
        path = directory / name
        if fmt == "list":
            path.write_text(yaml.safe_dump({"apiVersion": "v1", "items": items, "kind": "List",
                                            "metadata": {"resourceVersion": ""}}, sort_keys=False))
        else:
            path.write_text(json.dumps(items[0] if name == "cloudflare.json" and len(items) == 1
                                       else items, indent=2))
        files.append(path)
    return files


def dump_args(files: list[Path]) -> list[str]:
    return [a for f in files for a in ("--live-dump", str(f))]
