"""The reference of the reviewed files (``docs/reference/<kind>.md``), generated from the same
pydantic models that load them: every field with its type, default, constraint and meaning.

Sources, so the reference cannot drift from the code:
- types, defaults and constraints: the JSON Schema of :mod:`clusterstack.schemas`;
- a field's meaning: the one-line ``# comment`` the model puts beside the field (house rule),
  read from the model's source (:func:`field_comments`), else the class docstring;
- what a cluster field becomes (NodePool field, quota, label): :data:`BECOMES`, each entry
  naming the derivation that computes it (``derive/``).

Regenerate: ``python -m clusterstack.reference docs/reference``; a test checks the committed
files equal :func:`render` (tests/test_reference.py).
"""

from __future__ import annotations

import inspect
import io
import json
import sys
import tokenize
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from clusterstack.config import document as doc
from clusterstack.schemas import KINDS, model_of, schema
from clusterstack.fsutil import write_atomic

#: What a cluster field turns into, by its path (``*`` = any scale group). Each names the
#: derivation that computes it.
BECOMES: dict[str, str] = {
    "name": "the Pulumi stack name (infra/Pulumi.<name>.yaml)",
    "platform.label_prefix": "prefix of every node label (`<prefix>/managed`, `<prefix>/scale-group`) "
                             "and of the NodePool names `<prefix>-<group>` (derive.nodepool_name, managed_labels)",
    "scale_groups": "one CoreWeave NodePool per group whose slice_template.coreweave.instance_type is set, "
                    "and one Kueue ResourceFlavor `<pool>-flavor` (derive.derive_nodepools, derive_kueue_quota)",
    "scale_groups.*.num_vms": "nothing (read by the scheduler); the NodePool counts use "
                              "slice_template.num_vms",
    "scale_groups.*.buffer_slices": "NodePool `minNodes` = buffer_slices × max(1, slice_template.num_vms) "
                                    "(warm nodes)",
    "scale_groups.*.max_slices": "NodePool `maxNodes` = max_slices × max(1, slice_template.num_vms) (`targetRacks` = maxNodes / 18 for "
                                 "GB200/GB300); the ClusterQueue quota is maxNodes × the per-node resources",
    "scale_groups.*.resources.cpu": "ClusterQueue `cpu` quota of the pool's flavor = maxNodes × cpu",
    "scale_groups.*.resources.ram": "ClusterQueue `memory` quota = maxNodes × ram",
    "scale_groups.*.resources.disk": "ClusterQueue `ephemeral-storage` quota = maxNodes × disk",
    "scale_groups.*.resources.device_type": "`gpu`: the flavor is a GPU flavor (Topology Aware Scheduling, after the CPU flavors)",
    "scale_groups.*.resources.device_count": "ClusterQueue `nvidia.com/gpu` and `rdma/ib` quota = maxNodes × device_count",
    "scale_groups.*.slice_template.num_vms": "nodes per slice (the multiplier of buffer_slices and max_slices)",
    "scale_groups.*.slice_template.coreweave.instance_type": "NodePool `instanceType`; unset: no NodePool (scheduler-only group)",
    "kubernetes_provider.namespace": "the namespace of the controller's ServiceAccount, Role and the LocalQueue "
                                     "(not default, kube-*, nor a Helm release's namespace)",
    "kubernetes_provider.kueue.cluster_queue": "the Kueue ClusterQueue name (and LocalQueue `<namespace>-<queue>`)",
    "provisioning.coreweave.kueue.flavor_topology": "the Kueue Topology name and its levels",
    "provisioning.coreweave.federation_dns.target": "the Cloudflare CNAME target and the Traefik Service's "
                                                    "external-hostname annotation",
}


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """``field name → its trailing # comment`` in ``model``'s class body (the source is read
    with :mod:`tokenize`, so a ``#`` inside a string is not a comment). Empty when the source
    is unavailable."""
    try:
        src = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    line_field: dict[int, str] = {}
    for lineno, line in enumerate(src.splitlines(), 1):
        stripped = line.strip()
        head = stripped.split(":", 1)[0]
        if ":" in stripped and head.isidentifier() and head in model.model_fields and line.startswith("    ") \
                and not line.startswith("     "):
            line_field[lineno] = head
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT and tok.start[0] in line_field:
            comments[line_field[tok.start[0]]] = tok.string.lstrip("#").strip()
    return comments


def _models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from ``model`` by its JSON Schema title (= class name)."""
    found: dict[str, type[BaseModel]] = {}

    def walk(m: Any) -> None:
        if isinstance(m, type) and issubclass(m, BaseModel):
            if m.__name__ in found:
                return
            found[m.__name__] = m
            for f in m.model_fields.values():
                walk(f.annotation)
        for arg in getattr(m, "__args__", ()) or ():
            walk(arg)
        for meta in getattr(m, "__metadata__", ()) or ():
            walk(meta)
        origin = getattr(m, "__origin__", None)
        if origin is not None and origin is not m:
            walk(origin)

    walk(model)
    return found


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in prop:
        parts = [p for p in prop["anyOf"] if p.get("type") != "null"]
        text = " or ".join(_type(p) for p in parts)
        return text + (" (optional)" if len(parts) < len(prop["anyOf"]) else "")
    if "oneOf" in prop:
        return " or ".join(_type(p) for p in prop["oneOf"])
    if "enum" in prop:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    t = prop.get("type", "")
    if t == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if t == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map of name → {_type(prop['additionalProperties'])}"
    if t == "object" and isinstance(prop.get("patternProperties"), dict):
        ((key, value),) = prop["patternProperties"].items()
        return f"map of name (matching `{key}`) → {_type(value)}"
    return {"string": "string", "integer": "integer", "boolean": "boolean", "number": "number",
            "object": "table"}.get(t, "any")


def _constraints(prop: dict[str, Any]) -> str:
    out = []
    for p in [prop, *prop.get("anyOf", []), prop.get("items", {})]:
        for key, label in (("pattern", "matches"), ("minimum", "≥"), ("exclusiveMinimum", ">"),
                           ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤"),
                           ("minItems", "items ≥"), ("maxItems", "items ≤")):
            if key in p:
                v = p[key]
                out.append(f"{label} `{v}`" if key == "pattern" else f"{label} {v}")
    return "; ".join(dict.fromkeys(out))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" not in prop:
        return ""
    v = prop["default"]
    if isinstance(v, dict) or (isinstance(v, list) and v and isinstance(v[0], dict)):
        return "(see the table)" if v else "`{}`"
    return f"`{json.dumps(v)}`"


def render(kind: str) -> str:
    """The Markdown reference of ``kind``'s file (a key of :data:`KINDS`): one table per
    model, the root first, then in the order the fields reach them. Deterministic."""
    root_model = model_of(kind)
    doc = schema(kind)
    defs = doc.get("$defs", {})
    models = _models(root_model)
    order: list[str] = []
    paths: dict[str, str] = {}

    def visit(name: str, s: dict[str, Any], path: str) -> None:
        if name in order:
            return
        order.append(name)
        paths[name] = path
        for fname, prop in s.get("properties", {}).items():
            child = f"{path}.{fname}" if path else fname
            if isinstance(prop.get("additionalProperties"), dict) or "patternProperties" in prop:
                child += ".<name>"
            elif prop.get("type") == "array" or any(
                    isinstance(a, dict) and a.get("type") == "array" for a in prop.get("anyOf", [])):
                child += "[]"   # a list, or an optional one (anyOf [array, null])
            for ref in _refs(prop):
                visit(ref, defs[ref], child)

    visit(root_model.__name__, doc, "")
    lines = [f"# `{KINDS[kind][1]}` reference", "",
             f"Generated from `{KINDS[kind][0].replace(':', '.')}` by `python -m clusterstack.reference "
             "docs/reference` — do not edit by hand. JSON Schema for editors: "
             f"`clusterstack schema {kind}`.", ""]
    for name in order:
        s = doc if name == root_model.__name__ else defs[name]
        model = models.get(name)
        comments = field_comments(model) if model is not None else {}
        where = paths[name]
        lines += [f"## {name}", ""]
        lines.append(f"At `{where}`." if where else "The whole file.")
        strict = s.get("additionalProperties") is False
        lines[-1] += (" Strict: an unknown key is an error." if strict else
                      " Lenient: keys of other tools are ignored.")
        doc_text = inspect.cleandoc(model.__doc__) if model is not None and model.__doc__ else ""
        if doc_text and model is not None and model.__doc__ is not BaseModel.__doc__:
            lines += ["", doc_text.split("\n\n")[0].replace("\n", " ")]
        lines += ["", "| field | type | default | constraint | meaning |", "| --- | --- | --- | --- | --- |"]
        required = set(s.get("required", []))
        for fname, prop in s.get("properties", {}).items():
            path = f"{where}.{fname}" if where else fname
            meaning = comments.get(fname, "")
            becomes = BECOMES.get(_generic(path))
            if becomes:
                meaning = f"{meaning}; becomes: {becomes}" if meaning else f"becomes: {becomes}"
            lines.append(f"| `{fname}` | {_type(prop)} | {_default(prop, fname in required)} | "
                         f"{_cell(_constraints(prop))} | {_cell(meaning)} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _generic(path: str) -> str:
    return path.replace(".<name>", ".*")


def _refs(prop: Any) -> list[str]:
    found: list[str] = []
    if isinstance(prop, dict):
        if "$ref" in prop:
            found.append(prop["$ref"].rsplit("/", 1)[1])
        for k, v in prop.items():
            if k == "patternProperties" and isinstance(v, dict):
                v = list(v.values())
            if k in ("items", "additionalProperties", "patternProperties", "anyOf", "oneOf"):
                for r in _refs(v):
                    if r not in found:
                        found.append(r)
    elif isinstance(prop, list):
        for v in prop:
            for r in _refs(v):
                if r not in found:
                    found.append(r)
    return found


def index() -> str:
    """``docs/reference/README.md``: one line per reviewed file."""
    lines = ["# Reference of the reviewed files", "",
             "Generated from the models (`python -m clusterstack.reference docs/reference`); "
             "a test keeps these pages current.", ""]
    lines += [f"- [`{f}`]({k}.md) — `clusterstack schema {k}`" for k, (_, f) in KINDS.items()]
    lines += ["", "## What every reviewed file must be", "",
              "One loader reads them all (`clusterstack.config.document`); what it refuses is "
              "an `error: file:line: …` with exit 2, before any model sees the file:", "",
              f"- at most {doc.MAX_BYTES // 2**20} MiB of strict UTF-8 (a leading byte-order mark "
              "is dropped); no control character but tab, newline and carriage return, and (YAML, "
              "TOML) no C1 control, line or paragraph separator, or bidirectional override;",
              "- YAML 1.2 (`clusterstack.toml`: TOML 1.0): no duplicate key, no `%YAML` directive "
              "of another version, no merge key `<<` (a YAML 1.1 type: write the keys out);",
              f"- nested at most {doc.MAX_DEPTH} levels, at most {doc.MAX_NODES:,} values counted "
              "through aliases, integers within int64, no NaN or infinity;",
              "- every path it names relative, inside the workspace, without `..`; unknown keys "
              "refused in the sections only clusterstack reads (a near miss of a known key is "
              "named)."]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """file name → text of every page of ``docs/reference/``."""
    return {"README.md": index(), **{f"{k}.md": render(k) for k in KINDS}}


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else Path("docs/reference")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        write_atomic(target / name, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
