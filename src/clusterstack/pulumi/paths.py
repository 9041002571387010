"""Pulumi property paths: ``spec.nodeLabels["cwdemo/scale-group"]``, ``rules[0].verbs[2]``.

The one grammar for every path clusterstack reads or writes: detailed-diff keys of a preview,
``ignoreChanges`` entries, ``[guard] replace_properties``, the static diff's paths. Source:
pulumi/pulumi ``sdk/go/common/resource/properties_path.go``::

    propertyName       := [a-zA-Z_$] { [a-zA-Z0-9_$] }
    quotedPropertyName := '"' ( '\\' '"' | [^"] ) { ( '\\' '"' | [^"] ) } '"'
    arrayIndex         := { [0-9] }
    propertyIndex      := '[' ( quotedPropertyName | arrayIndex ) ']'
    rootProperty       := ( propertyName | propertyIndex )
    propertyAccessor   := ( ( '.' propertyName ) | propertyIndex )
    path               := rootProperty { propertyAccessor }

parsed as loosely as ``ParsePropertyPath`` does (a bare segment runs to the next ``.`` or
``[``; ``[*]`` and a ``*`` segment are wildcards; inside quotes only ``\\"`` is an escape), and
written as ``PropertyPath.String`` does (a key with a character outside ``[A-Za-z0-9_]`` is
quoted, ``"`` escaped as ``\\"``). One deviation, so every path written can be read back: the
empty key is written ``[""]`` (Go writes nothing). A key ending in a backslash has no spelling
in Pulumi's grammar (``\\"`` would read as an escaped quote); it is written as Pulumi writes it
and does not parse back.

A review names an item of a keyed list by its key (:class:`Key`, from
:mod:`clusterstack.pulumi.lists`), written as Kubernetes' structured-merge-diff writes a key
path element (``fieldpath/element.go`` ``PathElement.String``): ``[name="nvidia.com/gpu"]``.
Such a path is for people; it does not parse back (Pulumi's grammar has no key selector).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

WILDCARD = "*"


@dataclass(frozen=True)
class Key:
    """An item of a keyed list, selected by its key fields: ``fields`` is ``((name, value), …)``
    sorted by name (as structured-merge-diff sorts them), ``index`` the item's position in the
    list it was read from — what a Pulumi path (``ignoreChanges``, a replace property) would
    address, so :func:`contains` matches ``[3]`` and ``[*]`` against it."""

    fields: tuple[tuple[str, Any], ...]
    index: int

    @property
    def identity(self) -> tuple[tuple[str, str], ...]:
        """The fields with their values as JSON text (hashable, type-exact: 1 ≠ "1")."""
        return tuple((n, _json(v)) for n, v in self.fields)

    @property
    def label(self) -> Any:
        """The key's value (one field) or ``{field: value}`` (several): how a list of keys
        shows the order of the items."""
        return self.fields[0][1] if len(self.fields) == 1 else dict(self.fields)

    def __str__(self) -> str:
        return "[" + ",".join(f"{n}={_json(v)}" for n, v in self.fields) + "]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


Segment = str | int | Key

_INDEX = re.compile(r"[+-]?[0-9]+")   # strconv.ParseInt(segment, 10, 0)
_BARE = re.compile(r"[A-Za-z0-9_]+")  # PropertyPath.String: requiresQuote is false for these


def parse_path(text: str) -> tuple[Segment, ...]:
    """Property path → segments: ``a.b[0]["x.y"]`` → ``("a", "b", 0, "x.y")``; ``[*]`` and ``*``
    → ``"*"``. Raises ValueError on a missing closing quote or bracket or a bad array index
    (``ParsePropertyPath``'s errors)."""
    segs: list[Segment] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ".":
            i += 1
        elif c == "[":
            if i + 1 < n and text[i + 1] == '"':
                key: list[str] = []
                j = i + 2
                while True:
                    if j >= n:
                        raise ValueError(f"missing closing quote in property name: {text!r}")
                    if text[j] == '"':
                        j += 1
                        break
                    if text[j] == "\\" and j + 1 < n and text[j + 1] == '"':
                        key.append('"')
                        j += 2
                    else:
                        key.append(text[j])
                        j += 1
                if j >= n or text[j] != "]":
                    raise ValueError(f"missing closing bracket in property access: {text!r}")
                segs.append("".join(key))
                i = j + 1
            else:
                j = text.find("]", i)
                if j < 0:
                    raise ValueError(f"missing closing bracket in array index: {text!r}")
                inner = text[i + 1:j]
                if inner == WILDCARD:
                    segs.append(WILDCARD)
                elif _INDEX.fullmatch(inner):
                    segs.append(int(inner))
                else:
                    raise ValueError(f"invalid array index {inner!r} in property path {text!r}")
                i = j + 1
        else:
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            segs.append(text[i:j])
            i = j
    return tuple(segs)


def format_path(segments: Iterable[Segment]) -> str:
    """Segments → property path (``PropertyPath.String``): ``a.b``, ``a["x/y"]``, ``a[0]``."""
    out: list[str] = []
    for seg in segments:
        if isinstance(seg, Key):
            out.append(str(seg))
        elif isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _BARE.fullmatch(seg):
            out.append(f".{seg}" if out else seg)
        else:
            out.append('["' + seg.replace('"', '\\"') + '"]')
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def lenient_parse(text: str) -> tuple[Segment, ...]:
    """:func:`parse_path`, or the whole text as one segment when it does not parse (a path
    from a program or a policy that Pulumi would refuse matches only itself). Cached."""
    try:
        return parse_path(text)
    except ValueError:
        return (text,)


def contains(pattern: tuple[Segment, ...], path: tuple[Segment, ...]) -> bool:
    """True when ``pattern`` is ``path`` or an ancestor of it, ``"*"`` matching any one segment
    (``PropertyPath.Contains``); a :class:`Key` segment on either side matches its index."""
    return len(pattern) <= len(path) and all(_matches(p, s) for p, s in zip(pattern, path))


def _matches(p: Segment, s: Segment) -> bool:
    if p == WILDCARD or p == s:
        return True
    if isinstance(s, Key) and isinstance(p, int):
        return p == s.index
    return isinstance(p, Key) and isinstance(s, int) and s == p.index


def get_path(value: Any, path: str | tuple[Segment, ...], default: Any = None) -> Any:
    """The value at ``path`` inside nested mappings and lists, or ``default`` when a segment is
    absent (``PropertyPath.Get``). ``path`` is text (parsed leniently) or segments."""
    cur = value
    for seg in (lenient_parse(path) if isinstance(path, str) else path):
        if isinstance(seg, int) and isinstance(cur, list) and 0 <= seg < len(cur):
            cur = cur[seg]
        elif isinstance(seg, str) and isinstance(cur, Mapping) and seg in cur:
            cur = cur[seg]
        else:
            return default
    return cur
