"""The live objects an adoption is compared with: read from dump files or through the adapters.

**Dump files** (``--live-dump FILE``, repeatable), in the formats the operator's own tools
write — each object is recognised by its shape, anything else in a file is ignored:

- ``kubectl get … -o yaml`` / ``-o json``: one object, a ``List`` (``kind: List``, ``items``;
  kubectl's output for several objects or kinds) or several YAML documents;
- a Helm release as Helm 3 stores it: a ``Secret`` of ``type: helm.sh/release.v1`` labelled
  ``owner=helm``, ``name=<release>``, ``version=<revision>`` (``kubectl get secret -n <ns> -l
  owner=helm -o yaml``). ``data.release`` is base64 (the Secret's encoding) of the release
  record, which is itself base64 of the gzip of the release JSON (helm ``pkg/storage/driver/
  util.go`` ``encodeRelease``/``decodeRelease``, v3); the newest revision is the live one;
- or as ``helm list -A -o yaml`` lists it (``name``, ``namespace``, ``status``, ``chart`` =
  ``<chart name>-<chart version>``, helm ``pkg/cmd/list.go`` formatChartname), each item with
  the release's ``helm get values -o yaml`` under ``values`` (a document ``{"releases": [...]}``
  or the bare list); an item without ``values`` leaves the release unverified;
- ``gcloud compute addresses describe … --format=json`` (or ``--format=yaml``) and ``gcloud
  artifacts repositories describe …`` (one object, a list, or YAML documents): the REST resources
  of the Compute Engine API (``kind: compute#address``; the identity from ``selfLink``, else from
  the ``region`` URL and ``name``) and the Artifact Registry API (``name:
  projects/<p>/locations/<l>/repositories/<id>``), camelCase as the APIs' references show;
- Cloudflare's API v4 answer for a DNS record (``GET /zones/<zone>/dns_records/<id>`` or the
  list, ``{"result": …, "success": true}``): ``id``, ``zone_id``, ``name``, ``type``,
  ``content``, ``ttl``, ``proxied``.

A dump is complete for each *kind* it holds: a declared object of a kind the dumps have, but
not under its name, does not exist (``up`` creates it). A kind no dump holds is *unverified*
(an empty ``kubectl get`` list does not say which kind it was asked for).

**The adapters** (``--live``): the same identities looked up read-only through
:class:`clusterstack.adapters.kubernetes.KubernetesApi` (the stack's kube context) and
:class:`clusterstack.adapters.gcp.GoogleCompute` (Application Default Credentials) — 404 is "does not
exist", any other failure "unverified" with the reason. No adapter reads Cloudflare.

Every live object is handed to the comparison (:mod:`clusterstack.imports.rules`) in the
shape of the program's inputs (:func:`as_inputs`).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from clusterstack.errors import ClusterstackError
from clusterstack.plan.model import PlannedResource
from clusterstack.pulumi import tokens
from clusterstack.config.document import (MAX_STATE_BYTES, json_loads, parse_json, parse_yaml,
    read_text)
from clusterstack.verify.model import CheckError, GcpObject, HelmRelease, KubeObject, Unreachable

if TYPE_CHECKING:   # the adapters' Protocols, for the signatures
    from clusterstack.adapters.gcp import ComputeApi
    from clusterstack.adapters.kubernetes import KubeApi

FOUND, ABSENT, UNVERIFIED = "found", "absent", "unverified"
HELM_SECRET_TYPE = "helm.sh/release.v1"
_LISTED = "\x00helm-list"    # marks a `helm list` item inside a {"releases": [...]} document
_GZIP_MAGIC = b"\x1f\x8b\x08"


class LiveDumpError(ClusterstackError):
    """A dump file is unreadable or not YAML/JSON (exit 2)."""


@dataclass(frozen=True)
class Lookup:
    """The answer for one declared resource: ``state`` found / absent / unverified; ``body``
    the live object in the program's input shape (when found); ``raw`` as the source gave it;
    ``ref`` a readable identity; ``source`` where it was read; ``reason`` why unverified."""

    state: str
    ref: str
    body: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    reason: str = ""


class LiveView(Protocol):
    """Answers :class:`Lookup` per declared resource."""

    def lookup(self, r: PlannedResource) -> Lookup: ...

    def describe(self) -> dict[str, Any]:
        """What was read (for the report's ``source``)."""
        ...


# --- identities -------------------------------------------------------------------------------

def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def identity(r: PlannedResource) -> tuple[str, ...] | None:
    """The live identity of a declared resource, or None when no rule names it:
    ``("k8s", group, kind, namespace, name)``, ``("helm", namespace, name)``,
    ``("gcp", <resource path>)`` (the import ID of the types :data:`GCP_TYPES` lists),
    ``("cloudflare", zone, name, type)``."""
    if not r.custom or r.is_provider or r.type == tokens.STACK_TYPE:
        return None
    if r.type == tokens.HELM_RELEASE:
        return ("helm", str(r.inputs.get("namespace") or "default"), str(r.inputs.get("name")))
    if tokens.package(r.type) == "kubernetes":
        meta = r.inputs.get("metadata") or {}
        api_version, kind = r.inputs.get("apiVersion"), r.inputs.get("kind")
        if not (isinstance(meta, Mapping) and meta.get("name") and api_version and kind):
            return None
        return ("k8s", _group(str(api_version)), str(kind), str(meta.get("namespace") or ""),
                str(meta["name"]))
    if r.type in GCP_TYPES and r.adopt_id:
        return ("gcp", r.adopt_id)
    if r.type == tokens.DNS_RECORD:
        return ("cloudflare", str(r.inputs.get("zoneId")), str(r.inputs.get("name")),
                str(r.inputs.get("type")))
    return None


def ref_of(key: tuple[str, ...]) -> str:
    """A readable identity: ``ClusterRole iris-controller``, ``Helm release ns/name``…"""
    if key[0] == "k8s":
        _, _group_, kind, ns, name = key
        return f"{kind} {ns + '/' if ns else ''}{name}"
    if key[0] == "helm":
        return f"Helm release {key[1]}/{key[2]}"
    if key[0] == "gcp":
        return key[1]
    return f"DNS record {key[2]} ({key[3]}, zone {key[1]})"


def _kind_key(key: tuple[str, ...]) -> tuple[str, ...]:
    """The collection a key belongs to (what a dump is complete for)."""
    if key[0] == "k8s":
        return ("k8s", key[1], key[2])
    if key[0] == "gcp":
        parts = key[1].split("/")
        return ("gcp", parts[-2] if len(parts) >= 2 else key[1])
    if key[0] == "cloudflare":
        return ("cloudflare",)
    return (key[0],)


#: GCP types compared from a dump or the API, with their REST collection.
GCP_TYPES = {tokens.ADDRESS: "addresses", tokens.GLOBAL_ADDRESS: "addresses",
             tokens.ARTIFACT_REPOSITORY: "repositories"}


# --- live object → the program's input shape -------------------------------------------------

def decode_helm_release(secret: Mapping[str, Any]) -> dict[str, Any] | None:
    """The release JSON of a Helm 3 storage Secret (module docstring), or None when
    ``data.release`` does not decode."""
    data = (secret.get("data") or {}).get("release")
    if not isinstance(data, str):
        return None
    try:
        record = base64.b64decode(data, validate=True)
        raw = base64.b64decode(record, validate=True)
        if raw[:3] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
        release = json_loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, OSError, EOFError, RecursionError):
        return None
    return release if isinstance(release, dict) else None


def helm_inputs(release: Mapping[str, Any]) -> dict[str, Any]:
    """A Helm release record as a ``helm.v3.Release``'s inputs: ``name``, ``namespace``,
    ``chart`` (``chart.metadata.name``), ``version`` (``chart.metadata.version``), ``values``
    (the user-supplied ``config``), plus ``status`` and ``revision`` for the report."""
    meta = ((release.get("chart") or {}).get("metadata")) or {}
    return {"name": release.get("name"), "namespace": release.get("namespace"),
            "chart": meta.get("name"), "version": meta.get("version"),
            "values": release.get("config") or {},
            "status": (release.get("info") or {}).get("status"), "revision": release.get("version")}


def _project_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "projects" else None


def gcp_inputs(type_token: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Compute Engine address or Artifact Registry repository (REST JSON) as the pulumi-gcp
    resource's inputs (camelCase names are the same; the resource path gives project, region,
    location and the repository ID)."""
    if type_token in (tokens.ADDRESS, tokens.GLOBAL_ADDRESS):
        path = gcp_path(obj) or ""
        out = {k: obj[k] for k in ("name", "address", "addressType", "description", "ipVersion",
                                   "ipv6EndpointType", "network", "networkTier", "prefixLength",
                                   "purpose", "subnetwork", "labels") if k in obj}
        if type_token == tokens.ADDRESS and obj.get("region"):
            out["region"] = obj["region"]
        out["project"] = _project_of(path)
        return out
    name = str(obj.get("name") or "")
    parts = name.split("/")
    out = {k: obj[k] for k in ("format", "mode", "description", "labels", "cleanupPolicies",
                               "cleanupPolicyDryRun", "remoteRepositoryConfig", "dockerConfig",
                               "kmsKeyName", "mavenConfig") if k in obj}
    if len(parts) == 6:
        out.update(project=parts[1], location=parts[3], repositoryId=parts[5])
    return out


def cloudflare_inputs(record: Mapping[str, Any]) -> dict[str, Any]:
    """A Cloudflare DNS record (API v4 JSON) as a pulumi-cloudflare ``DnsRecord``'s inputs."""
    out = {k: record[k] for k in ("name", "type", "content", "ttl", "proxied", "comment")
           if k in record and record[k] is not None}
    out["zoneId"] = record.get("zone_id")
    return out


def gcp_path(obj: Mapping[str, Any]) -> str | None:
    """``projects/…`` path of a GCP REST object: from ``selfLink`` (Compute Engine, after
    ``/compute/<version>/``), else a regional address's ``region`` URL and ``name``, or ``name``
    (Artifact Registry)."""
    link = obj.get("selfLink")
    if isinstance(link, str) and "/projects/" in link:
        return "projects/" + link.split("/projects/", 1)[1]
    name = obj.get("name")
    region = obj.get("region")
    if obj.get("kind") == "compute#address" and isinstance(region, str) and "/projects/" in region \
            and isinstance(name, str):
        return "projects/" + region.split("/projects/", 1)[1] + "/addresses/" + name
    if isinstance(name, str) and name.startswith("projects/"):
        return name
    return None


_CHART_VERSION = re.compile(r"^(?P<name>.+)-(?P<version>v?\d+(\.\d+)*([-+].*)?)$")


def listed_release(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``helm list -o yaml`` item (with ``values`` from ``helm get values``) as a release
    record (:func:`decode_helm_release`'s shape), or None when it is not one. The chart column
    is ``<name>-<version>``; the version is the last ``-`` part that starts with a digit."""
    chart = item.get("chart")
    if not (isinstance(chart, str) and item.get("name") and item.get("namespace")):
        return None
    m = _CHART_VERSION.match(chart)
    if m is None:
        return None
    record: dict[str, Any] = {"name": item["name"], "namespace": item["namespace"],
                              "version": int(item.get("revision") or 0),
                              "info": {"status": item.get("status")},
                              "chart": {"metadata": {"name": m["name"], "version": m["version"]}}}
    if "values" in item:
        record["config"] = item["values"] or {}
    return record


def as_inputs(r: PlannedResource, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The live object ``raw`` (a Kubernetes object, a decoded Helm release, a GCP or
    Cloudflare REST object) in the input shape of ``r``'s type."""
    if r.type == tokens.HELM_RELEASE:
        return helm_inputs(raw)
    if r.type in GCP_TYPES:
        return gcp_inputs(r.type, raw)
    if r.type == tokens.DNS_RECORD:
        return cloudflare_inputs(raw)
    return dict(raw)


# --- dump files --------------------------------------------------------------------------------

def _documents(path: Path) -> list[Any]:
    text = read_text(path, missing="live dump not found", error=LiveDumpError,
                     limit=MAX_STATE_BYTES,
                     missing_hint="give a file `kubectl get … -o yaml` or `gcloud … --format=json` wrote")
    if text.lstrip().startswith(("{", "[")):
        return [parse_json(text, path, error=LiveDumpError, hint="give the JSON the tool wrote")]
    chunks, current = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip() == "---":
            chunks.append("".join(current))
            current = []
        else:
            current.append(line)
    chunks.append("".join(current))
    return [d for d in (parse_yaml(c, path, error=LiveDumpError) for c in chunks if c.strip())
            if d is not None]


def _objects(doc: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _objects(item)
    elif isinstance(doc, Mapping):
        if "result" in doc and "success" in doc:          # Cloudflare's API envelope
            yield from _objects(doc["result"])
        elif isinstance(doc.get("releases"), list) and "kind" not in doc:   # helm list + values
            for item in doc["releases"]:
                if isinstance(item, Mapping):
                    yield {**item, _LISTED: True}
        elif isinstance(doc.get("items"), list) and str(doc.get("kind", "")).endswith("List"):
            yield from _objects(doc["items"])
        else:
            yield doc


def _keys_of(obj: Mapping[str, Any]) -> list[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """``[(identity, live object)]`` of one dumped object (a Helm storage Secret gives its
    release too); empty for an object of no recognised shape."""
    out: list[tuple[tuple[str, ...], Mapping[str, Any]]] = []
    if obj.get(_LISTED) or ("chart" in obj and "app_version" in obj and "metadata" not in obj):
        record = listed_release(obj)
        if record is not None:
            out.append((("helm", str(record["namespace"]), str(record["name"])), record))
        return out
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and obj.get("apiVersion") and obj.get("kind") and meta.get("name"):
        ns = str(meta.get("namespace") or "")
        out.append((("k8s", _group(str(obj["apiVersion"])), str(obj["kind"]), ns, str(meta["name"])),
                    obj))
        labels = meta.get("labels") or {}
        if obj.get("kind") == "Secret" and obj.get("type") == HELM_SECRET_TYPE \
                and labels.get("owner") == "helm" and labels.get("name"):
            release = decode_helm_release(obj)
            if release is not None:
                out.append((("helm", ns, str(labels["name"])), release))
        return out
    path = gcp_path(obj)
    if path and (str(obj.get("kind", "")).startswith("compute#") or "/repositories/" in path):
        out.append((("gcp", path), obj))
    elif obj.get("zone_id") and obj.get("type") and obj.get("name") and "content" in obj:
        out.append((("cloudflare", str(obj["zone_id"]), str(obj["name"]), str(obj["type"])), obj))
    return out


class DumpView:
    """:class:`LiveView` over dump files (module docstring). Raises LiveDumpError while
    reading a file that is not YAML or JSON."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = tuple(Path(p) for p in paths)
        self._objects: dict[tuple[str, ...], tuple[Mapping[str, Any], str]] = {}
        self._kinds: set[tuple[str, ...]] = set()
        revisions: dict[tuple[str, ...], int] = {}
        for path in self.paths:
            for doc in _documents(path):
                for obj in _objects(doc):
                    for key, live in _keys_of(obj):
                        where = str(path)
                        if key[0] == "helm":
                            rev = int(live.get("version") or 0)
                            if revisions.get(key, -1) >= rev:
                                continue
                            revisions[key] = rev
                        self._objects[key] = (live, where)
                        self._kinds.add(_kind_key(key))

    def describe(self) -> dict[str, Any]:
        return {"kind": "dumps", "files": [str(p) for p in self.paths],
                "objects": len(self._objects)}

    def lookup(self, r: PlannedResource) -> Lookup:
        key = identity(r)
        if key is None:
            return Lookup(UNVERIFIED, r.name, reason=f"no live identity is known for {r.type}")
        ref = ref_of(key)
        if key in self._objects:
            raw, where = self._objects[key]
            if key[0] == "helm" and "config" not in raw:
                return Lookup(UNVERIFIED, ref, reason="the dump lists the release without its "
                                                      "values: add `helm get values -o yaml`")
            return Lookup(FOUND, ref, body=as_inputs(r, raw), raw=raw, source=where)
        if _kind_key(key) in self._kinds:
            return Lookup(ABSENT, ref, source="dumps")
        what = (f"{key[2]} object" if key[0] == "k8s" else "Helm release Secret" if key[0] == "helm"
                else f"GCP {_kind_key(key)[1]}" if key[0] == "gcp" else "Cloudflare DNS record")
        return Lookup(UNVERIFIED, ref, reason=f"the dumps hold no {what}: dump that kind to know "
                                              "whether it exists")


# --- the adapters ------------------------------------------------------------------------------

class AdapterView:
    """:class:`LiveView` through the read-only readers of ``verify``: ``kube`` a
    :class:`clusterstack.adapters.kubernetes.KubeApi` (or None: no cluster), ``gcp`` a
    :class:`clusterstack.adapters.gcp.ComputeApi` (or None). One lookup per object."""

    def __init__(self, kube: KubeApi | None = None, gcp: ComputeApi | None = None, *, kube_reason: str = "",
                 gcp_reason: str = "") -> None:
        self.kube, self.gcp = kube, gcp
        self.kube_reason = kube_reason or "no Kubernetes cluster to read"
        self.gcp_reason = gcp_reason or "no GCP credentials to read with"
        self._unreachable: dict[str, str] = {}

    def describe(self) -> dict[str, Any]:
        return {"kind": "adapters", "kubernetes": self.kube is not None, "gcp": self.gcp is not None}

    def _ask(self, system: str, fn: Any) -> tuple[str, Any, str]:
        if system in self._unreachable:
            return UNVERIFIED, None, self._unreachable[system]
        try:
            found = fn()
        except Unreachable as exc:
            self._unreachable[system] = str(exc)
            return UNVERIFIED, None, str(exc)
        except CheckError as exc:
            return UNVERIFIED, None, str(exc)
        return (FOUND, found, "") if found is not None else (ABSENT, None, "")

    def lookup(self, r: PlannedResource) -> Lookup:
        key = identity(r)
        if key is None:
            return Lookup(UNVERIFIED, r.name, reason=f"no live identity is known for {r.type}")
        ref = ref_of(key)
        kube, gcp = self.kube, self.gcp
        if key[0] == "k8s":
            if kube is None:
                return Lookup(UNVERIFIED, ref, reason=self.kube_reason)
            _, _g, kind, ns, name = key
            obj = KubeObject(str(r.inputs["apiVersion"]), kind, name, ns or None)
            state, found, why = self._ask("kubernetes", lambda: kube.get(obj))
        elif key[0] == "helm":
            if kube is None:
                return Lookup(UNVERIFIED, ref, reason=self.kube_reason)
            ns, name = key[1], key[2]

            def release() -> Any:
                head = kube.helm_release(HelmRelease(ns, name))
                if head is None:
                    return None
                secret = kube.get(KubeObject("v1", "Secret",
                                             f"sh.helm.release.v1.{name}.v{head['revision']}", ns))
                decoded = decode_helm_release(secret) if secret else None
                if decoded is None:
                    raise CheckError(f"the storage Secret of revision {head['revision']} does not decode")
                return decoded

            state, found, why = self._ask("kubernetes", release)
        elif key[0] == "gcp":
            if gcp is None:
                return Lookup(UNVERIFIED, ref, reason=self.gcp_reason)
            parts = key[1].split("/")
            if r.type == tokens.ARTIFACT_REPOSITORY:
                obj_ = GcpObject("repositories", parts[1], parts[5], location=parts[3])
            elif r.type == tokens.ADDRESS:
                obj_ = GcpObject("addresses", parts[1], parts[5], region=parts[3])
            else:
                obj_ = GcpObject("addresses", parts[1], parts[-1])
            state, found, why = self._ask("gcp", lambda: gcp.get(obj_))
        else:
            return Lookup(UNVERIFIED, ref, reason="no adapter reads Cloudflare: give the record "
                                                  "as a --live-dump (the API's JSON)")
        if state == FOUND:
            return Lookup(FOUND, ref, body=as_inputs(r, found), raw=found, source="api")
        return Lookup(state, ref, reason=why, source="api" if state == ABSENT else "")
