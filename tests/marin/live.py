"""The live objects of Marin's fleet as the read tools print them, rebuilt from the catalogue
(tests/marin/catalogue.py: Marin's source, file@commit per object) — not a recording of a live
cluster. Written to ``tests/fixtures/marin/live/`` by ``.venv/bin/python tests/marin/live.py
--write``; tests/marin/test_live_fixtures.py holds the files equal to this module's output.

Per CoreWeave cluster:

- ``<cluster>.yaml`` — ``kubectl get <kinds> -A -o yaml``: a ``kind: List`` of every Kubernetes
  object Marin declares, each with the fields its declaration sets (keys sorted, as kubectl
  prints them: it marshals to JSON, then to YAML with sorted keys — sigs.k8s.io/yaml), plus the
  one field the API server derives from a declared value: a Namespace's
  ``kubernetes.io/metadata.name`` label (Kubernetes 1.22+, KEP-2161 "Default namespace
  labels"). Server-owned fields (uid, resourceVersion, creationTimestamp, status, defaults) are
  left out. The DeploymentPatch's object is the Deployment with only the patched field.
- ``<cluster>.cloudflare.json`` — the federation CNAME as Cloudflare's API v4 returns it
  (``GET /zones/<zone>/dns_records/<id>``: ``{"result": {...}, "success": true, "errors": [],
  "messages": []}``; the record's ``id`` a synthetic 32-hex value derived from its name — the
  real one is Cloudflare's), only for a cluster with ``federation_dns``.
- ``<cluster>.helm.yaml`` — the Helm releases: per release ``helm list -A -o yaml``'s ``name``,
  ``namespace``, ``chart`` (``<chart name>-<version>``) and ``status``, and ``values``: what
  ``helm get values <name> -n <namespace> -o yaml`` prints (the user-supplied values; ``null``
  when none).

For the GCP project (``marin.yaml``): one YAML document per object as ``gcloud ... describe
--format=yaml`` prints it (the REST resource): ``compute addresses describe`` (Compute Engine v1
Address: ``kind: compute#address``, ``region`` as a URL) and ``artifacts repositories describe``
(Artifact Registry v1 Repository: ``name`` the full resource name, ``cleanupPolicies`` a map
keyed by policy ID — GoogleCloudPlatform/magic-modules mmv1/products/artifactregistry/
Repository.yaml@002e725a ``cleanupPolicies: type: Map, key_name: id`` — and false booleans
omitted, proto3 JSON).

No email lands in a fixture: a value taken from a config email field is written as the
placeholder ``${<config path>}`` (e.g. ``${provisioning.coreweave.ingress.acme_email}``);
:func:`load` puts the config's value back. Objects whose name Marin's source does not give
(the Loom session Role) are left out and listed in the header.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:          # run as a script
    sys.path.insert(0, str(TESTS))

from marin.catalogue import Expected, catalogue  # noqa: E402

LIVE = TESTS / "fixtures" / "marin" / "live"
ACME_EMAIL = "provisioning.coreweave.ingress.acme_email"
_PLACEHOLDER = re.compile(r"\$\{([a-z_.]+)\}")
_K8S_SKIP = ("Release", "DnsRecord")          # not Kubernetes objects kubectl lists


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)


def _header(title: str, objects: list[Expected], left_out: list[Expected]) -> str:
    lines = [f"# {title}",
             "# Rebuilt from Marin's source (github.com/marin-community/marin), not recorded from a live",
             "# cluster: tests/marin/live.py from tests/marin/catalogue.py. Regenerate with",
             "#   .venv/bin/python tests/marin/live.py --write",
             "# ${config.path} stands for that value of Marin's config (no email is written here).",
             "# Sources, per object:"]
    for e in objects:
        where = f"{e.namespace}/" if e.namespace else ""
        lines.append(f"#   {e.kind} {where}{e.name}: " + "; ".join(str(s) for s in e.sources))
    for e in left_out:
        lines.append(f"#   (left out) {e.kind} in {e.namespace or '-'}: name not in Marin's stored source: "
                     + "; ".join(str(s) for s in e.sources))
    return "\n".join(lines) + "\n"


def k8s_object(e: Expected) -> dict:
    """The live Kubernetes object of a catalogue entry: its declared fields (+ a Namespace's
    default label), emails replaced by their placeholder."""
    obj = copy.deepcopy(e.inputs) or {}
    if e.kind == "Namespace":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = e.name
    if e.kind == "ClusterIssuer":
        obj["spec"]["acme"]["email"] = "${" + ACME_EMAIL + "}"
    return obj


def helm_release(e: Expected) -> dict:
    inp = e.inputs or {}
    chart = inp["chart"].rsplit("/", 1)[-1]          # a repo alias ("coreweave/traefik") is not the chart's name
    return {"name": inp["name"], "namespace": inp["namespace"], "chart": f"{chart}-{inp['version']}",
            "status": "deployed", "values": inp.get("values")}


def gcp_object(e: Expected) -> dict:
    inp = e.inputs or {}
    if e.kind == "Address":
        out = {k: inp[k] for k in ("name", "address", "addressType", "description") if k in inp}
        return {**out, "kind": "compute#address",
                "region": f"https://www.googleapis.com/compute/v1/projects/{inp['project']}/regions/{inp['region']}"}
    policies = {p["id"]: p for p in inp["cleanupPolicies"]}
    out = {"name": f"projects/{inp['project']}/locations/{inp['location']}/repositories/{inp['repositoryId']}",
           "format": inp["format"], "mode": inp["mode"], "remoteRepositoryConfig": inp["remoteRepositoryConfig"],
           "cleanupPolicies": policies}
    if inp.get("description"):
        out["description"] = inp["description"]
    if inp.get("cleanupPolicyDryRun"):
        out["cleanupPolicyDryRun"] = True
    return out


def cloudflare_record(e: Expected) -> dict:
    """The API v4 answer for a catalogue DnsRecord (module docstring)."""
    import hashlib
    import json

    inp = e.inputs or {}
    record = {"id": hashlib.sha256(inp["name"].encode()).hexdigest()[:32], "zone_id": inp["zoneId"],
              "name": inp["name"], "type": inp["type"], "content": inp["content"], "proxiable": True,
              "proxied": inp["proxied"], "ttl": inp["ttl"], "settings": {"flatten_cname": False},
              "meta": {}, "comment": None, "tags": []}
    return json.loads(json.dumps({"errors": [], "messages": [], "success": True, "result": record}))


def render(cluster: str, cfg: dict) -> dict[str, str]:
    """File name → text of ``cluster``'s fixtures."""
    objects = catalogue(cluster, cfg)
    known = [e for e in objects if e.inputs is not None]
    unknown = [e for e in objects if e.inputs is None]
    if cfg["provisioning"]["provider"] == "gcp":
        docs = [gcp_object(e) for e in known]
        head = _header(f"{cluster}: `gcloud compute addresses describe` / `gcloud artifacts repositories "
                       "describe` --format=yaml, one document each", known, unknown)
        return {f"{cluster}.yaml": head + "".join("---\n" + _dump(d) for d in docs)}
    k8s = [e for e in known if e.kind not in _K8S_SKIP]
    releases = [e for e in known if e.kind == "Release"]
    listing = {"apiVersion": "v1", "items": [k8s_object(e) for e in k8s], "kind": "List",
               "metadata": {"resourceVersion": ""}}
    records = [e for e in known if e.kind == "DnsRecord"]
    dns = {f"{cluster}.cloudflare.json": json.dumps(cloudflare_record(records[0]), indent=2) + "\n"} if records else {}
    return dns | {
        f"{cluster}.yaml": _header(f"{cluster}: `kubectl get <kinds> -A -o yaml` of the objects Marin declares",
                                   k8s, unknown) + _dump(listing),
        f"{cluster}.helm.yaml": _header(f"{cluster}: Helm releases (`helm list -A -o yaml` + `helm get values "
                                        "-o yaml` per release)", releases, []) + _dump({"releases": [
                                            helm_release(e) for e in releases]}),
    }


def _fill(value: Any, cfg: dict) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, cfg) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, cfg) for v in value]
    if isinstance(value, str) and (m := _PLACEHOLDER.fullmatch(value)):
        node: Any = cfg
        for part in m.group(1).split("."):
            node = node[part]
        return node
    return value


def load(path: Path, cfg: dict) -> list[dict]:
    """The objects of a fixture file with every ``${config.path}`` placeholder replaced by that
    config value: the items of a ``kind: List``, the releases of a ``.helm.yaml``, or the
    documents of the GCP file."""
    if path.suffix == ".json":
        return [json.loads(path.read_text(encoding="utf-8"))]
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    if len(docs) == 1 and docs[0].get("kind") == "List":
        docs = docs[0]["items"]
    elif len(docs) == 1 and "releases" in docs[0]:
        docs = docs[0]["releases"]
    return [_fill(d, cfg) for d in docs]


def main(argv: list[str]) -> int:
    from marin.counts import STACKS, config

    files = {name: text for s in STACKS for name, text in render(s, config(s)).items()}
    if "--write" in argv:
        LIVE.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (LIVE / name).write_text(text, encoding="utf-8")
    for name in sorted(files):
        print(LIVE / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
