"""The preview view: an engine preview rendered as readable text and as the ``preview --json``
document — changes grouped by kind (creates, imports, updates, replaces, deletes) with
property-level changes; the guard's verdict is THE verdict document
(:mod:`clusterstack.views.verdict`), never rendered here a second way.

Plain text without markup, so the same lines serve the terminal, CI logs and PR comments.
Values come from the steps' old/new inputs (the engine already masks secrets as
``[secret]``; Pulumi's special-value envelopes are masked here too,
:func:`clusterstack.pulumi.values.mask`); property paths follow
:mod:`clusterstack.pulumi.paths`. Deterministic: groups in a fixed order, resources by URN, properties by path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from clusterstack.engine.model import PreviewResult
from clusterstack.guard import Verdict
from clusterstack.config.types import size_note
from clusterstack.pulumi.lists import rekey
from clusterstack.pulumi.paths import format_path, get_path, lenient_parse
from clusterstack.pulumi.steps import REPLACE_OPS, Step
from clusterstack.pulumi.urn import name_of
from clusterstack.pulumi.values import mask
from clusterstack.views.verdict import verdict_json

# (group key, heading, marker); a replacement (any REPLACE_OPS step) is one `replace` per URN.
GROUPS = (("create", "creates", "+"), ("import", "imports", "="), ("update", "updates", "~"),
          ("replace", "replaces", "+-"), ("delete", "deletes", "-"), ("other", "other steps", "*"))
_SYMBOL = {"add": "+", "delete": "-", "update": "~"}


@dataclass(frozen=True)
class PropertyChange:
    """One changed property: Pulumi property ``path`` (``spec.instanceType``, ``rules[0].verbs[2]``),
    diff ``kind`` (add/delete/update, ``-replace`` when it forces a replacement), old and new
    input values (``None`` when absent)."""

    path: str
    kind: str
    old: Any
    new: Any
    size: str = ""   # a byte quantity in one unit (clusterstack.config.types.size_note), or ""

    @property
    def forces_replace(self) -> bool:
        return self.kind.endswith("-replace")


@dataclass(frozen=True)
class Change:
    """One resource's logical change: ``op`` is the group key, ``ops`` the engine steps folded
    into it (e.g. ``create-replacement``, ``replace``, ``delete-replaced``)."""

    op: str
    urn: str
    type: str
    ops: tuple[str, ...]
    replace_reasons: tuple[str, ...]
    properties: tuple[PropertyChange, ...]

    @property
    def name(self) -> str:
        return name_of(self.urn)


def fmt_value(value: Any) -> str:
    """Compact JSON of a (masked) value, whole: a review never crops what it shows (the
    reviewer would approve what they could not read)."""
    return json.dumps(mask(value), sort_keys=True, separators=(",", ":"), default=str)


#: A property line longer than this (characters, the indent included) shows its old and new
#: values on lines of their own (``old: …`` / ``new: …``), each whole. A constant, not the
#: terminal's width: the same preview gives the same lines in a terminal, a CI log and a PR
#: comment.
LONG_LINE = 160


def property_lines(p: PropertyChange, indent: str = "        ") -> list[str]:
    """One changed property as text lines: ``~ path: old → new`` (``+ path: new`` added,
    ``- path: old`` removed), with its size in one unit and whether it forces a replacement;
    when that line would be longer than :data:`LONG_LINE`, the path line and then each side
    whole on a line of its own, indented under it."""
    sym = _SYMBOL.get(p.kind.removesuffix("-replace"), "~")
    sides = ((("new", p.new),) if p.kind.startswith("add") else
             (("old", p.old),) if p.kind.startswith("delete") else (("old", p.old), ("new", p.new)))
    notes = (f"  ({p.size})" if p.size else "") + ("  (forces replacement)" if p.forces_replace else "")
    one = f"{indent}{sym} {p.path}: {' → '.join(fmt_value(v) for _, v in sides)}{notes}"
    if len(one) <= LONG_LINE:
        return [one]
    return [f"{indent}{sym} {p.path}:{notes}",
            *(f"{indent}    {label}: {fmt_value(v)}" for label, v in sides)]


def _whole_scalar_lists(changes: list[PropertyChange], old_inputs: Any, new_inputs: Any) -> list[PropertyChange]:
    """Each list of scalars no key identifies, whose items the provider reported by position
    (``sourceRange[0]``, ``sourceRange[1]``), as one ``update`` of the whole list — as the static
    diff shows it (:func:`clusterstack.plan.diff._whole_scalar_lists`): removing the first of
    two sources read as a change of a source that did not change. Items that force a
    replacement stay per item; the list's place is its first item's."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(changes):
        segs = lenient_parse(p.path)
        if len(segs) > 1 and isinstance(segs[-1], int):
            groups.setdefault(format_path(segs[:-1]), []).append(i)
    whole: dict[int, PropertyChange] = {}
    dropped: set[int] = set()
    for parent, idx in groups.items():
        if any(changes[i].forces_replace for i in idx):
            continue
        o, n = get_path(old_inputs, parent), get_path(new_inputs, parent)
        scalars = [isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v) for v in (o, n)]
        if not all(scalars):
            continue
        whole[idx[0]] = PropertyChange(path=parent, kind="update", old=o, new=n)
        dropped.update(idx[1:])
    return [whole.get(i, p) for i, p in enumerate(changes) if i not in dropped]


def property_changes(step: Step) -> tuple[PropertyChange, ...]:
    """Property-level changes of a step: from its detailed diff (``{path: {"kind": …}}``, the
    ``preview --json`` spelling; an engine-event ``diffKind`` or a bare kind string is accepted
    too), else one ``update`` per changed top-level key in ``diffs``."""
    out = []
    if step.detailed_diff:
        entries = []
        for path in sorted(step.detailed_diff):
            d = step.detailed_diff[path]
            kind = d if isinstance(d, str) else (d.get("kind") or d.get("diffKind") or "update")
            entries.append((path, str(kind)))
        # items of keyed lists by key, not by the provider's positions (clusterstack.pulumi.lists)
        for path, kind, old, new, sized in rekey(step.type, entries, step.old_inputs,
                                                 step.new_inputs):
            out.append(PropertyChange(path=path, kind=kind, old=old, new=new,
                                      size=size_note(old, new) if sized else ""))
        out = _whole_scalar_lists(out, step.old_inputs, step.new_inputs)
    else:
        for key in sorted(set(step.diffs)):
            kind = "update-replace" if key in step.replace_reasons else "update"
            out.append(PropertyChange(path=key, kind=kind, old=get_path(step.old_inputs, key),
                                      new=get_path(step.new_inputs, key)))
    return tuple(out)


def group_changes(steps: Iterable[Step]) -> dict[str, list[Change]]:
    """Fold steps into logical changes per URN and group them (keys of :data:`GROUPS`).

    ``same`` steps are left out. A URN with any replacement step is one ``replace``; otherwise
    its op is create / import / update / delete, or ``other`` (read, refresh, discard …).
    """
    by_urn: dict[str, list[Step]] = {}
    for s in steps:
        if s.op != "same":
            by_urn.setdefault(s.urn, []).append(s)
    groups: dict[str, list[Change]] = {g: [] for g, _, _ in GROUPS}
    for u in sorted(by_urn):
        ss = by_urn[u]
        ops = tuple(s.op for s in ss)
        if any(op in REPLACE_OPS for op in ops):
            key = "replace"
        elif ops[0] in ("create", "import", "update", "delete"):
            key = ops[0]
        else:
            key = "other"
        rep = next((s for s in ss if s.detailed_diff), ss[0])
        reasons = tuple(dict.fromkeys(r for s in ss for r in s.replace_reasons))
        props = property_changes(rep) if key in ("update", "replace", "other") else ()
        groups[key].append(Change(op=key, urn=u, type=rep.type, ops=ops, replace_reasons=reasons,
                                  properties=props))
    return groups


def summary_line(result: PreviewResult) -> str:
    """``cw-demo-h100: 1 to create, 2 to update, 1 to replace (27 unchanged)`` from the engine's counts."""
    c = dict(result.counts)
    parts = [f"{c[k]} to {verb}" for k, verb in (("create", "create"), ("import", "import"),
                                                ("update", "update"), ("replace", "replace"),
                                                ("delete", "delete")) if c.get(k)]
    same = c.get("same", 0)
    body = ", ".join(parts) if parts else "no changes"
    return f"{result.stack}: {body}" + (f" ({same} unchanged)" if same else "")


def render_changes(result: PreviewResult) -> list[str]:
    """The grouped diff as text lines (empty groups omitted)."""
    lines = [summary_line(result)]
    groups = group_changes(result.steps)
    for key, heading, marker in GROUPS:
        changes = groups[key]
        if not changes:
            continue
        lines.append(f"  {heading} ({len(changes)}):")
        for ch in changes:
            extra = f"  [{', '.join(ch.ops)}]" if key == "other" else ""
            lines.append(f"    {marker} {ch.type}  {ch.name}{extra}")
            for p in ch.properties:
                lines.extend(property_lines(p))
            if key == "replace" and ch.replace_reasons and not any(p.forces_replace for p in ch.properties):
                lines.append(f"        replacement forced by: {', '.join(ch.replace_reasons)}")
    for d in result.diagnostics:
        where = f" {name_of(d.urn)}:" if d.urn else ""
        lines.append(f"  {d.severity}:{where} {d.message}")
    return lines


#: The ``preview --json`` document: ``{"format", "stacks": [one stack's document]}``.
PREVIEW_FORMAT = "clusterstack.preview/v1"


def preview_json(result: PreviewResult, verdict: Verdict) -> dict[str, Any]:
    """One stack's preview and verdict, JSON-ready (keys sorted when dumped)::

        {"stack", "counts": {op: n}, "changes": [{"op", "urn", "type", "steps", "replaceReasons",
         "properties": [{"path", "kind", "old", "new"}]}], "diagnostics": [{"severity", "urn",
         "message"}], "guard": <the verdict document, clusterstack.verdict/v1>}
    """
    groups = group_changes(result.steps)
    changes = [{"op": ch.op, "urn": ch.urn, "type": ch.type, "steps": list(ch.ops),
                "replaceReasons": list(ch.replace_reasons),
                "properties": [{"path": p.path, "kind": p.kind, "old": mask(p.old), "new": mask(p.new)}
                               for p in ch.properties]}
               for key, _, _ in GROUPS for ch in groups[key]]
    return {
        "stack": result.stack,
        "counts": dict(sorted(result.counts.items())),
        "changes": changes,
        "diagnostics": [{"severity": d.severity, "urn": d.urn, "message": d.message}
                        for d in result.diagnostics],
        "guard": verdict_json(verdict, result.steps, source=result.stack, input_format="engine",
                              change_summary=dict(result.counts)),
    }


def preview_document(stacks: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole ``preview --json`` output: ``{"format": "clusterstack.preview/v1", "stacks"}``."""
    return {"format": PREVIEW_FORMAT, "stacks": stacks}
