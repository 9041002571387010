"""The ``pulumi preview --json`` document → :class:`~clusterstack.pulumi.steps.ParsedSteps`.

The document (Go ``display.PreviewDigest``, pulumi/pulumi ``pkg/backend/display/json.go``
``ShowPreviewDigest``)::

    {"config": {...}, "steps": [PreviewStep, ...], "diagnostics": [...],
     "duration": <ns>, "changeSummary": {"create": 1, "replace": 1, ...}, "maybeCorrupt": false}

    diagnostics = [{"urn": URN, "message": "error: …" (prefix and message joined), "severity"}]
    PreviewStep = {"op": OpType, "urn": URN, "provider": str,
                   "oldState": ResourceV3 | absent, "newState": ResourceV3 | absent,
                   "diffReasons": [key], "replaceReasons": [key],
                   "detailedDiff": {path: {"kind": DiffKind, "inputDiff": bool}} | null}
    ResourceV3 = {"urn", "type", "custom", "id", "inputs", "outputs", "parent", "protect",
                  "retainOnDelete", "provider", ...}

Without ``--show-replacement-steps`` a replacement is one ``replace`` step; with it, the pair
``create-replacement`` / ``delete-replaced`` is shown around it (Go ``shouldShow``).

Read as strictly as the event stream (:mod:`clusterstack.pulumi.events`): the URN decides a
step's type (a ``PreviewStep`` has no ``type`` of its own; one given must agree, and so must
``newState`` — ``oldState`` may carry its own URN and type when the engine found it by an alias);
diagnostics carry Pulumi's severities only; and ``steps`` must be present — the digest always
holds the root stack's step (``pkg/backend/display/json.go:210``: ``shouldShow(m) ||
isRootStack(m)``), so a document without it is not what ``pulumi preview --json`` printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from clusterstack.pulumi.events import diagnostic, is_engine_event
from clusterstack.pulumi.steps import (
    INTERNAL_OPS,
    MAP,
    PREVIEW,
    ParsedSteps,
    Step,
    detailed,
    make_step,
    malformed,
    state_record,
    strs,
)


def step_from_preview_step(step: Mapping[str, Any], *, where: str = "steps[]",
                           source: str | Path | None = None) -> Step:
    """One ``PreviewStep`` → :class:`Step`.

    The type comes from ``newState.type`` / ``oldState.type``, else from the URN. Raises
    ClusterstackError (``where`` names the step, ``source`` the file) on a missing op or
    URN, an unknown op, or wrongly shaped fields."""
    if not isinstance(step, MAP):
        raise malformed("must be a step object", where, source)
    old = state_record(step.get("oldState"), f"{where}.oldState", source)
    new = state_record(step.get("newState"), f"{where}.newState", source)
    return make_step(step.get("op"), step.get("urn"), step.get("type"), old, new,
                     strs(step.get("replaceReasons"), f"{where}.replaceReasons", source),
                     strs(step.get("diffReasons"), f"{where}.diffReasons", source),
                     detailed(step.get("detailedDiff"), "kind", f"{where}.detailedDiff", source),
                     where, source, has_type="type" in step, old_key="oldState", new_key="newState")


def steps_from_preview(doc: Mapping[str, Any], *, source: str | Path | None = None) -> ParsedSteps:
    """A ``preview --json`` document → :class:`ParsedSteps` (format :data:`PREVIEW`). Raises
    ClusterstackError on a missing or malformed ``steps`` list (module docstring), a malformed
    step, change summary or diagnostic. Steps of an internal op (``extend-parameterize``,
    ``diff``) are skipped deliberately."""
    raw = doc.get("steps")
    if raw is None:
        raise malformed("a preview document without \"steps\": `pulumi preview --json` always "
                        "shows the root stack's step", "steps", source)
    if not isinstance(raw, list):
        raise malformed("must be a list of steps", "steps", source)
    steps, internal = [], []
    for i, item in enumerate(raw):
        op = item.get("op") if isinstance(item, MAP) else None
        if isinstance(op, str) and op in INTERNAL_OPS:
            internal.append(op)
            continue
        steps.append(step_from_preview_step(item, where=f"steps[{i}]", source=source))
    cs = doc.get("changeSummary")
    if cs is not None and (not isinstance(cs, MAP) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in cs.values())):
        raise malformed("must be an object of op → count", "changeSummary", source)
    raw_diags = doc.get("diagnostics")
    if raw_diags is None:
        raw_diags = []
    if not isinstance(raw_diags, list):
        raise malformed("must be a list of diagnostics", "diagnostics", source)
    diags = []
    for i, d in enumerate(raw_diags):
        dd = diagnostic(d, f"diagnostics[{i}]", source)
        if dd.message:
            diags.append(dd)
    mc = doc.get("maybeCorrupt", False)
    if not isinstance(mc, bool):
        raise malformed("maybeCorrupt must be true or false", "maybeCorrupt", source)
    return ParsedSteps(format=PREVIEW, steps=tuple(steps),
                       change_summary=dict(cs) if isinstance(cs, MAP) else None, is_preview=True,
                       diagnostics=tuple(diags), internal=tuple(internal),
                       contradictions=("maybeCorrupt: the snapshot may hold resources in an invalid "
                                       "state",) if mc else ())


def is_preview_document(obj: Mapping[str, Any]) -> bool:
    """True for an object shaped like a preview document (``steps`` or a ``changeSummary``
    object) that is not an engine event."""
    if is_engine_event(obj):
        return False
    return "steps" in obj or isinstance(obj.get("changeSummary"), MAP)
