"""JSON Schemas of the reviewed files, generated from their pydantic models — for editors
(``clusterstack schema <kind>``; the scaffolded YAML files carry a ``yaml-language-server``
modeline pointing at one) and for the reference (:mod:`clusterstack.reference`).

The models anchor their patterns with Python's ``\\A…\\Z`` (a ``$`` in Python also matches
before a trailing newline); JSON Schema patterns are ECMA-262 regular expressions, which know
neither, so :func:`schema` rewrites them to ``^…$`` (JSON Schema 2020-12 §6.3.3, "pattern").
"""

from __future__ import annotations

import re

import json
from typing import Any

from pydantic import BaseModel

#: kind → (dotted path of the model, the file it describes)
KINDS: dict[str, tuple[str, str]] = {
    "cluster": ("clusterstack.config.cluster:ClusterConfig", "clusters/<cluster>.yaml"),
    "workspace": ("clusterstack.workspace.model:WorkspaceFile", "clusterstack.toml"),
    "iam": ("clusterstack.iam.model:IamFile", "iam/iam.yaml"),
    "services": ("clusterstack.config.services:RegistryFile", "services.yaml"),
    "buckets": ("clusterstack.config.buckets:BucketsConfig", "buckets/buckets.yaml"),
    "github": ("clusterstack.config.github:GithubConfig", "github/github.yaml"),
}


def model_of(kind: str) -> type[BaseModel]:
    """The pydantic model of ``kind`` (a key of :data:`KINDS`). Raises KeyError."""
    import importlib

    module, _, name = KINDS[kind][0].partition(":")
    return getattr(importlib.import_module(module), name)


_PY_ANCHOR = re.compile(r"(?<!\\)((?:\\\\)*)\\([AZ])")


def _editor_pattern(pattern: str) -> str:
    """Python's ``\\A``/``\\Z`` anchors — anywhere, lookaheads included — as ECMA-262's ``^``/``$``
    (which JSON Schema patterns use; an escaped backslash before ``A``/``Z`` is left alone)."""
    return _PY_ANCHOR.sub(lambda m: m.group(1) + ("^" if m.group(2) == "A" else "$"), pattern)


def _rewrite(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (_editor_pattern(v) if k == "pattern" and isinstance(v, str)
                    else {_editor_pattern(p): _rewrite(s) for p, s in v.items()}
                    if k == "patternProperties" and isinstance(v, dict) else _rewrite(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``kind``'s file, patterns in editor syntax."""
    doc = _rewrite(model_of(kind).model_json_schema(mode="validation"))
    return {**doc, "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"clusterstack {kind} ({KINDS[kind][1]})"}


def schema_text(kind: str) -> str:
    """:func:`schema` as deterministic JSON text (sorted keys, 2-space indent, final newline)."""
    return json.dumps(schema(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
