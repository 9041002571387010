"""The ``pulumi preview --json`` document → :class:`~clusterstack.pulumi.steps.ParsedSteps`.

The document (Go ``display.PreviewDigest``, pulumi/pulumi ``pkg/backend/display/json.go``
``ShowPreviewDigest``)::

    {"config": {...}, "steps": [PreviewStep, ...], "diagnostics": [...],
     "duration": <ns>, "changeSummary": {"create": 1, "replace": 1, ...}, "maybeCorrupt": false}

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

from clusterstack.pulumi.events import is_engine_event
from clusterstack.pulumi.steps import (
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
    raw = doc.get("steps") or []
    if not isinstance(raw, list):
        raise malformed("must be a list of steps", "steps", source)
    steps = tuple(step_from_preview_step(s, where=f"steps[{i}]", source=source)
                  for i, s in enumerate(raw))
    cs = doc.get("changeSummary")
    return ParsedSteps(format=PREVIEW, steps=steps,
                       change_summary=dict(cs) if isinstance(cs, MAP) else None, is_preview=True)


def is_preview_document(obj: Mapping[str, Any]) -> bool:
    """True for an object shaped like a preview document (``steps`` or a ``changeSummary``
    object) that is not an engine event."""
    if is_engine_event(obj):
        return False
    return "steps" in obj or isinstance(obj.get("changeSummary"), MAP)
