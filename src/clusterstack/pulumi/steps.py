"""Engine steps: :class:`Step`, Pulumi's op sets, and the one rule that turns a step record of
either document format (a ``preview --json`` step, an event's ``StepEventMetadata``) into a
:class:`Step`.

Ops are Pulumi's ``OpType`` strings (pulumi/pulumi ``pkg/resource/deploy/step.go`` ``StepOps``,
read at commit 004205f26edf; the Python SDK 3.272.0 ``pulumi.automation.events.OpType`` has the
same fifteen): same, create, update, delete, replace, create-replacement, delete-replaced, read,
read-replacement, refresh, discard, discard-replaced, remove-pending-replace, import,
import-replacement; plus the CLI's internal ops of the pinned version, ``extend-parameterize``
(written to ``--event-log`` when a package is parameterized) and ``diff`` (``pulumi preview
--diff`` bookkeeping), which touch no resource and are skipped deliberately
(:data:`INTERNAL_OPS`). A replacement shows as one ``replace`` step,
or with ``--show-replacement-steps`` as the pair ``create-replacement`` / ``delete-replaced``
around it (``pkg/backend/display`` ``shouldShow``), so a replacement is counted once per URN.
"""

from __future__ import annotations

import collections.abc
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.urn import type_of

#: Pulumi's resource ``OpType`` / ``deploy.StepOp`` values (``pkg/resource/deploy/step.go``
#: ``StepOps`` @004205f26edf; equal to the pinned SDK's ``OpType`` enum, a test holds them together).
RESOURCE_OPS = frozenset({
    "same", "create", "update", "delete", "replace", "create-replacement", "delete-replaced",
    "read", "read-replacement", "refresh", "discard", "discard-replaced",
    "remove-pending-replace", "import", "import-replacement"})
#: Ops of the pinned CLI that are not resource steps: skipped on purpose, never guessed at.
INTERNAL_OPS = frozenset({"extend-parameterize", "diff"})
KNOWN_OPS = RESOURCE_OPS | INTERNAL_OPS
#: A ``discard-replaced`` step drops a *read* resource's old state (``OpDiscardReplaced``:
#: "discarding a read resource that was replaced"): nothing live is destroyed, so it is not a
#: replace; likewise ``read-replacement`` (re-reading a resource Pulumi does not manage).
REPLACE_OPS = frozenset({"replace", "create-replacement", "delete-replaced", "import-replacement"})
DELETE_OPS = frozenset({"delete"})
DESTRUCTIVE_OPS = REPLACE_OPS | DELETE_OPS

#: The two document formats a :class:`ParsedSteps` comes from.
PREVIEW = "preview"
EVENTS = "events"

# isinstance against typing.Mapping goes through a slow generic-alias hook; decoded JSON is
# always dict, so test that first (the abc still admits other mappings).
MAP = (dict, collections.abc.Mapping)

HINT = ("give the output of `pulumi preview --json` (one JSON document with \"steps\") or an "
        "engine event log (`--event-log FILE`, `pulumi up --json`: one JSON event per line)")


@dataclass(frozen=True)
class Step:
    """One engine step, normalised from ``preview --json`` steps, engine events or the
    Automation API (parsers: :mod:`clusterstack.pulumi.preview`, :mod:`clusterstack.pulumi.events`).

    ``op`` is Pulumi's ``OpType`` string; ``old_protect`` / ``old_retain_on_delete`` are the
    ``protect`` / ``retainOnDelete`` flags of the resource's old state (``False`` when absent);
    ``replace_reasons`` are the top-level keys that force a replacement (``replaceReasons`` /
    event ``keys``); ``diffs`` the changed top-level keys (``diffReasons`` / event ``diffs``);
    ``detailed_diff`` maps a property path (``spec.instanceType``) to
    ``{"kind": "update-replace" | "add" | …, "inputDiff": bool}``.
    """

    op: str
    urn: str
    type: str
    old_protect: bool = False
    replace_reasons: tuple[str, ...] = ()
    diffs: tuple[str, ...] = ()
    detailed_diff: Mapping[str, Any] | None = None
    old_inputs: Mapping[str, Any] | None = None
    new_inputs: Mapping[str, Any] | None = None
    old_retain_on_delete: bool = False
    #: the old state's ``pendingReplacement``: a delete-before-replace whose delete ran and whose
    #: create did not (``DeleteStep.Apply`` with ``pendingReplacement``) — the live resource is
    #: already gone, so re-creating it is recovery, not a new replace
    old_pending_replacement: bool = False


@dataclass(frozen=True)
class Diagnostic:
    """One ``diagnosticEvent`` / preview ``diagnostics[]`` entry: ``severity`` (``info``,
    ``info#err``, ``warning``, ``error``), ``message`` with Pulumi's colour directives and the
    ``error: `` prefix removed, ``urn`` (empty for engine-wide messages)."""

    severity: str
    message: str
    urn: str = ""


@dataclass(frozen=True)
class Refusal:
    """A destructive op the engine itself refused because the resource is protected, read from
    its error diagnostic: ``op`` is ``delete`` (``DeleteStep.Apply`` / the preview's "cannot be
    deleted because it is protected") or ``replace`` (``step_generator.go``: "unable to replace
    resource … as it is currently marked for protection"); ``urn`` the refused resource."""

    op: str
    urn: str
    message: str


_PROTECT_DELETE = re.compile(r'resource "?(urn:pulumi:[^"\s]+)"?\s+cannot be deleted\s+because it is protected')
_PROTECT_REPLACE = re.compile(r'unable to replace resource "?(urn:pulumi:[^"\s]+)"?.*?marked for protection', re.S)


def refusals_from(diagnostics: Iterable[Diagnostic]) -> tuple[Refusal, ...]:
    """The protect refusals among ``diagnostics`` (error severity), in order, one per (op, URN).
    Wording of the pinned engine: ``DeleteStep.Apply`` ("resource %q cannot be deleted\nbecause
    it is protected", prefixed "Preview failed: " in a preview — recorded in the lifecycle test
    ``TestMultipleProtectedDeletes``) and ``step_generator.go`` ("unable to replace resource
    %q\nas it is currently marked for protection", ``TestProtect``, ``TestDBRProtect``)."""
    out: dict[tuple[str, str], Refusal] = {}
    for d in diagnostics:
        if d.severity != "error":
            continue
        for rx, op in ((_PROTECT_DELETE, "delete"), (_PROTECT_REPLACE, "replace")):
            m = rx.search(d.message)
            if m:
                out.setdefault((op, m.group(1)), Refusal(op=op, urn=m.group(1), message=d.message))
    return tuple(out.values())


#: The root stack's generic failure lines that follow a refusal ("preview failed",
#: "update failed"): they add no cause of their own.
GENERIC_FAILURES = frozenset({"preview failed", "update failed"})


@dataclass(frozen=True)
class ParsedSteps:
    """What a preview document or event stream says the engine will do (or did).

    ``format`` is :data:`PREVIEW` or :data:`EVENTS`; ``steps`` in file order (events: by
    ``sequence``); ``change_summary`` is the op → count map Pulumi computed itself
    (``changeSummary`` / ``summaryEvent.resourceChanges``), ``None`` when the file has none;
    ``is_preview`` is ``summaryEvent.isPreview`` for streams (``True`` for a preview document,
    ``None`` when a stream has no summary, e.g. an update still running or killed, or its
    summary lacks ``isPreview``).
    """

    format: str
    steps: tuple[Step, ...]
    change_summary: Mapping[str, int] | None = None
    is_preview: bool | None = None
    #: ``summaryEvent.result`` (``succeeded`` / ``failed`` / ``cancelled``; ``None`` when absent or
    #: a preview document, which has no result field)
    result: str | None = None
    #: a stream ended with its ``summaryEvent``; a preview document is complete by construction
    complete: bool = True
    diagnostics: tuple[Diagnostic, ...] = ()
    #: URNs a refresh found gone (pre op ``refresh``, outputs op ``delete``): drift, not a delete
    gone: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        return refusals_from(self.diagnostics)

    @property
    def failed(self) -> bool:
        """The run failed: its summary says so, or it reported an error diagnostic."""
        return self.result == "failed" or bool(self.errors)


def forcing_properties(step: Step) -> tuple[str, ...]:
    """The properties that force ``step``'s replacement, most precise first: every
    detailed-diff path whose kind is ``add-replace`` / ``update-replace`` / ``delete-replace``
    (Pulumi ``apitype.DiffKind``; e.g. ``spec.instanceType``), sorted, then each
    ``replace_reasons`` key (top-level, e.g. ``spec``) that none of those paths lies under.
    Empty for a plain delete."""
    paths = [k for k, v in sorted((step.detailed_diff or {}).items())
             if isinstance(v, Mapping) and str(v.get("kind", "")).endswith("-replace")]
    keys = [k for k in step.replace_reasons
            if not any(p == k or p.startswith((f"{k}.", f"{k}[")) for p in paths)]
    return tuple(dict.fromkeys((*paths, *keys)))


def logical_ops(steps: Iterable[Step]) -> dict[str, tuple[str, Step]]:
    """Fold steps into one logical destructive op per URN: ``replace`` wins over ``delete``.

    Returns ``{urn: (op, representative step)}`` for destructive URNs only. The representative
    step merges replace reasons and the ``protect`` flag across the pair steps (protected if any
    step says so; retained on delete only if every step says so — both err towards blocking).
    """
    acc: dict[str, tuple[str, Step]] = {}
    for s in steps:
        if s.op not in DESTRUCTIVE_OPS:
            continue
        op = "replace" if s.op in REPLACE_OPS else "delete"
        prev = acc.get(s.urn)
        if prev is None:
            acc[s.urn] = (op, s)
            continue
        pop, ps = prev
        merged = Step(op=s.op if op == "replace" else ps.op, urn=s.urn, type=s.type or ps.type,
                      old_protect=ps.old_protect or s.old_protect,
                      replace_reasons=tuple(dict.fromkeys(ps.replace_reasons + s.replace_reasons)),
                      diffs=tuple(dict.fromkeys(ps.diffs + s.diffs)),
                      detailed_diff=ps.detailed_diff or s.detailed_diff,
                      old_inputs=ps.old_inputs or s.old_inputs, new_inputs=ps.new_inputs or s.new_inputs,
                      old_retain_on_delete=ps.old_retain_on_delete and s.old_retain_on_delete,
                      old_pending_replacement=ps.old_pending_replacement or s.old_pending_replacement)
        acc[s.urn] = ("replace" if "replace" in (op, pop) else "delete", merged)
    return acc


# ---------------------------------------------------------------------------------------------
# the step-record rule shared by the preview and event parsers

def malformed(message: str, where: str, source: str | Path | None) -> ClusterstackError:
    """The parsers' error: ``message`` at ``where`` (a field path) of ``source`` (exit 2)."""
    return ClusterstackError(message, HINT, file=Path(source) if source is not None else None,
                             field=where)


def strs(value: Any, where: str, source: Any) -> tuple[str, ...]:
    """A list of property names (``replaceReasons``, ``keys``, ``diffs``) or absent."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise malformed("must be a list of property names", where, source)
    return tuple(value)


def detailed(value: Any, kind_key: str, where: str, source: Any) -> dict[str, Any] | None:
    """Normalise a detailed diff to ``{path: {"kind": str, "inputDiff": bool}}`` (sorted);
    ``kind_key`` is the format's spelling (``kind`` in a preview, ``diffKind`` in events)."""
    if value is None:
        return None
    if not isinstance(value, MAP):
        raise malformed("must be an object of property path → diff", where, source)
    out: dict[str, Any] = {}
    for path in sorted(value):
        d = value[path]
        if not isinstance(d, MAP):
            raise malformed("must be an object with the diff kind", f"{where}.{path}", source)
        kind = d.get(kind_key) or d.get("kind") or d.get("diffKind")
        out[path] = {"kind": str(kind) if kind is not None else "", "inputDiff": bool(d.get("inputDiff", False))}
    return out


def state_record(value: Any, where: str, source: Any) -> Mapping[str, Any] | None:
    """A resource state object (``oldState`` / ``old`` …) or absent."""
    if value is None:
        return None
    if not isinstance(value, MAP):
        raise malformed("must be a resource state object", where, source)
    return value


def make_step(op: Any, urn: Any, typ: Any, old: Mapping | None, new: Mapping | None,
              keys: tuple[str, ...], diffs: tuple[str, ...], detailed_diff: dict | None,
              where: str, source: Any) -> Step:
    """A :class:`Step` from the fields of one step record. The type is ``typ``, else the new or
    old state's ``type``, else the URN's. Raises ClusterstackError on a missing op or URN, an
    unknown op (a safety gate that does not know an op must not guess it is harmless), or no
    type."""
    if not isinstance(op, str) or not op:
        raise malformed("missing step op", f"{where}.op", source)
    if op not in KNOWN_OPS:
        raise ClusterstackError(f"unknown step op {op!r}",
                                f"this clusterstack knows Pulumi's ops {', '.join(sorted(KNOWN_OPS))};"
                                " upgrade clusterstack before trusting its guard with this Pulumi",
                                file=Path(source) if source is not None else None, field=f"{where}.op")
    if not isinstance(urn, str) or not urn:
        raise malformed("missing step urn", f"{where}.urn", source)
    if not isinstance(typ, str) or not typ:
        typ = (new or {}).get("type") or (old or {}).get("type") or type_of(urn)
    if not typ:
        raise malformed(f"cannot tell the resource type of {urn!r}", f"{where}.urn", source)
    urn_type = type_of(urn)
    for label, st in (("old", old), ("new", new)):
        if st is None:
            continue
        st_type = st.get("type")
        if st_type is not None and urn_type and st_type != urn_type:
            raise malformed(f"the {label} state's type {st_type!r} contradicts the URN's type "
                            f"{urn_type!r}", f"{where}.{label}.type", source)
        for key in ("protect", "retainOnDelete", "pendingReplacement", "delete"):
            if key in st and st[key] is not None and not isinstance(st[key], bool):
                raise malformed(f"{key} must be true or false, not {st[key]!r}",
                                f"{where}.{label}.{key}", source)
    old_inputs = old.get("inputs") if old else None
    new_inputs = new.get("inputs") if new else None
    return Step(op=op, urn=urn, type=typ,
                old_protect=bool(old.get("protect", False)) if old else False,
                old_retain_on_delete=bool(old.get("retainOnDelete", False)) if old else False,
                old_pending_replacement=bool(old.get("pendingReplacement", False)) if old else False,
                replace_reasons=keys, diffs=diffs, detailed_diff=detailed_diff,
                old_inputs=old_inputs if isinstance(old_inputs, MAP) else None,
                new_inputs=new_inputs if isinstance(new_inputs, MAP) else None)
