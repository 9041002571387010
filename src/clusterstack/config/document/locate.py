"""A key path → its line in a YAML round-trip document (the located half of every problem)."""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from clusterstack.config.document.paths import Path_


def locate(doc: Any, path: Path_) -> tuple[Path_, int | None]:
    """Walk ``path`` through a ruamel round-trip document.

    Returns ``(path_in_document, line)``; lines are 1-based. Rules:

    - a part naming an existing key or list item is followed (the line becomes that key's);
    - union tags pydantic adds to an error's location are dropped: a discriminator value
      that is not the last part (``DELETE`` when the node has ``action: DELETE``), the member
      tags of a smart union (``str``, ``literal['X']``), which appear below a scalar, and the
      ``[key]`` marker of an invalid mapping key (the line is the key's);
    - from the first key missing from the document on (a required field that is absent, or
      an optional section a cross-check needs), the rest of the path is kept as given and the
      line is that of the nearest existing ancestor.
    """
    node, kept, line = doc, [], (doc.lc.line + 1 if hasattr(doc, "lc") else None)
    missing = False
    for i, part in enumerate(path):
        if missing:
            kept.append(part)
        elif part == "[key]":
            continue
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1 if isinstance(node, CommentedSeq) else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            line = node.lc.key(part)[0] + 1 if isinstance(node, CommentedMap) else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and i < len(path) - 1 and part in {
                v for v in node.values() if isinstance(v, str)}:
            continue  # discriminated-union tag (the discriminator's value), always followed by a field
        elif isinstance(part, str) and node is not None and not isinstance(node, dict):
            continue  # smart-union member tag below a scalar or list
        else:
            missing = True
            kept.append(part)
    return tuple(kept), line


def without_member_tags(data: Any, path: Path_) -> Path_:
    """``path`` (a pydantic error's location in plain parsed ``data``, YAML or TOML) without
    the member tags pydantic appends below a value that is not a mapping or list: a smart
    union ``StrictInt | StrictFloat`` reports ``("qps", "int")`` and ``("qps", "float")`` for one
    bad ``qps``. The parts from the first one that walks into a scalar on are dropped; a path
    through a missing key is kept whole (a required field that is absent)."""
    node = data
    for i, part in enumerate(path):
        if isinstance(node, dict):
            if part not in node:
                return tuple(path)
            node = node[part]
        elif isinstance(node, list):
            if not isinstance(part, int) or not 0 <= part < len(node):
                return tuple(path)
            node = node[part]
        elif node is not None:
            return tuple(path[:i])
        else:
            return tuple(path)
    return tuple(path)
