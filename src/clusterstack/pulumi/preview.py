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
    return make_step(step.get("op"), step.get("urn"), None, old, new,
                     strs(step.get("replaceReasons"), f"{where}.replaceReasons", source),
                     strs(step.get("diffReasons"), f"{where}.diffReasons", source),
                     detailed(step.get("detailedDiff"), "kind", f"{where}.detailedDiff", source),
                     where, source)


def steps_from_preview(doc: Mapping[str, Any], *, source: str | Path | None = None) -> ParsedSteps:
    """A ``preview --json`` document → :class:`ParsedSteps` (format :data:`PREVIEW`).
    ``steps`` may be absent (Go ``omitempty``: nothing to show). Raises ClusterstackError on
    a malformed step."""
    raw = doc.get("steps")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise malformed("must be a list of steps", "steps", source)
    steps = tuple(st for st in (step_from_preview_step(s, where=f"steps[{i}]", source=source)
                                for i, s in enumerate(raw)) if st.op not in INTERNAL_OPS)
    cs = doc.get("changeSummary")
    if cs is not None and (not isinstance(cs, MAP) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in cs.values())):
        raise malformed("must be an object of op → count", "changeSummary", source)
    raw_diags = doc.get("diagnostics")
    if raw_diags is None:
        raw_diags = []
    if not isinstance(raw_diags, list):
        raise malformed("must be a list of diagnostics", "diagnostics", source)
    diags = []
    for i, d in enumerate(raw_diags):
        if not isinstance(d, MAP):
            raise malformed("must be a diagnostic object", f"diagnostics[{i}]", source)
        dd = diagnostic(d)
        if dd.message:
            diags.append(dd)
    return ParsedSteps(format=PREVIEW, steps=steps,
                       change_summary=dict(cs) if isinstance(cs, MAP) else None, is_preview=True,
                       diagnostics=tuple(diags))


def is_preview_document(obj: Mapping[str, Any]) -> bool:
    """True for an object shaped like a preview document (``steps`` or a ``changeSummary``
    object) that is not an engine event."""
    if is_engine_event(obj):
        return False
    return "steps" in obj or isinstance(obj.get("changeSummary"), MAP)
