"""The engine event stream → :class:`~clusterstack.pulumi.steps.Step` rows.

The stream (Go ``apitype.EngineEvent``, pulumi/pulumi ``sdk/go/common/apitype/events.go``) is
written by ``--event-log FILE``, by ``pulumi up --json`` and by ``preview --json`` with
``PULUMI_ENABLE_STREAMING_JSON_PREVIEW``: one JSON object per line; also accepted as a JSON
array of events or an ``{"events": [...]}`` batch (Pulumi Cloud ``EngineEventBatch``)::

    {"sequence": int, "timestamp": int, "resourcePreEvent": {"metadata": StepEventMetadata,
                                                             "planning": bool}}
    StepEventMetadata = {"op", "urn", "type", "provider", "logical": bool,
                         "old": StepEventStateMetadata | null, "new": ... | null,
                         "keys": [key], "diffs": [key],
                         "detailedDiff": {path: {"diffKind": DiffKind, "inputDiff": bool}} | null}
    StepEventStateMetadata = {"type", "urn", "id", "parent", "provider", "protect",
                              "retainOnDelete", "inputs", "outputs", ...}

Every other event (``preludeEvent``, ``summaryEvent``, ``diagnosticEvent``, ``policyEvent``,
``cancelEvent``, ...) carries no step. A step is announced by its ``resourcePreEvent`` before
the engine performs it; ``resOutputsEvent`` / ``resOpFailedEvent`` repeat its metadata
afterwards and are used only when the announcing event is missing from the file.

The Automation API parses the same events into ``pulumi.automation.events`` objects; every
function here accepts those too (attributes are read, the SDK is never imported except by
:func:`parse_event_log`, which builds them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from clusterstack.pulumi.steps import (
    EVENTS,
    INTERNAL_OPS,
    MAP,
    Diagnostic,
    ParsedSteps,
    Step,
    detailed,
    make_step,
    malformed,
    state_record,
    strs,
)

#: The ``EngineEvent`` union members (``apitype.EngineEvent``); exactly one is set per event.
EVENT_KINDS = frozenset({
    "cancelEvent", "stdoutEvent", "diagnosticEvent", "preludeEvent", "summaryEvent",
    "resourcePreEvent", "resOutputsEvent", "resOpFailedEvent", "policyEvent",
    "policyRemediationEvent", "policyLoadEvent", "policyAnalyzeSummaryEvent",
    "policyRemediateSummaryEvent", "policyAnalyzeStackSummaryEvent", "startDebuggingEvent",
    "progressEvent", "errorEvent"})

STEP_EVENTS = ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent")


def _step_from_metadata(meta: Any, where: str, source: Any) -> Step:
    if not isinstance(meta, MAP):
        raise malformed("missing step metadata", f"{where}.metadata", source)
    where = f"{where}.metadata"
    old = state_record(meta.get("old"), f"{where}.old", source)
    new = state_record(meta.get("new"), f"{where}.new", source)
    return make_step(meta.get("op"), meta.get("urn"), meta.get("type"), old, new,
                     strs(meta.get("keys"), f"{where}.keys", source),
                     strs(meta.get("diffs"), f"{where}.diffs", source),
                     detailed(meta.get("detailedDiff"), "diffKind", f"{where}.detailedDiff", source),
                     where, source)


def _enum_value(x: Any) -> Any:
    return getattr(x, "value", x)


def _sdk_state(st: Any) -> dict[str, Any] | None:
    if st is None:
        return None
    return {"type": getattr(st, "type", ""), "urn": getattr(st, "urn", ""),
            "protect": bool(getattr(st, "protect", False)),
            "retainOnDelete": bool(getattr(st, "retain_on_delete", False)),
            "inputs": getattr(st, "inputs", None), "outputs": getattr(st, "outputs", None)}


def _sdk_metadata(m: Any) -> dict[str, Any] | None:
    """A typed ``StepEventMetadata`` (attributes ``op, urn, type, old, new, keys, diffs,
    detailed_diff``) → its JSON shape. Missing attributes read as absent."""
    if m is None:
        return None
    dd = getattr(m, "detailed_diff", None)
    return {"op": _enum_value(getattr(m, "op", None)), "urn": getattr(m, "urn", None),
            "type": getattr(m, "type", None), "old": _sdk_state(getattr(m, "old", None)),
            "new": _sdk_state(getattr(m, "new", None)), "keys": getattr(m, "keys", None),
            "diffs": getattr(m, "diffs", None),
            "detailedDiff": None if dd is None else {
                k: {"diffKind": _enum_value(getattr(v, "diff_kind", "")),
                    "inputDiff": bool(getattr(v, "input_diff", False))} for k, v in dd.items()}}


def _event_to_dict(event: Any) -> Mapping[str, Any]:
    """Accept the Automation API's ``EngineEvent`` (``resource_pre_event.metadata…``) as well as
    a dict: rebuild the JSON shape of its pre event (the only part a step is read from)."""
    if isinstance(event, MAP):
        return event
    out: dict[str, Any] = {"sequence": getattr(event, "sequence", 0)}
    pre = getattr(event, "resource_pre_event", None)
    if pre is not None:
        out["resourcePreEvent"] = {"metadata": _sdk_metadata(getattr(pre, "metadata", None))}
    return out


def step_from_metadata(md: Any, *, source: str | Path | None = None,
                       where: str = "event.resourcePreEvent") -> Step:
    """A ``StepEventMetadata`` (decoded JSON or the Automation API's typed object) → Step:
    ``replace_reasons`` are its ``keys``, ``diffs`` the changed keys, ``detailed_diff``
    ``{path: {"kind", "inputDiff"}}``, ``old_protect`` the old state's ``protect``. Raises
    ClusterstackError on an unknown op or a malformed step."""
    meta = md if isinstance(md, MAP) or md is None else _sdk_metadata(md)
    return _step_from_metadata(meta, where, source)


def step_from_event(event: Mapping[str, Any] | Any, *, source: str | Path | None = None,
                    where: str = "event") -> Step | None:
    """One engine event → the :class:`Step` it announces, or ``None``.

    Only ``resourcePreEvent`` announces a step: the engine emits it *before* performing the
    step, so the engine adapter calls this on every streamed event during ``up`` and cancels
    at the first guarded step. Every other event (including ``resOutputsEvent`` /
    ``resOpFailedEvent``, which repeat an announced step afterwards) gives ``None``.
    ``event`` is a decoded JSON dict or an Automation API ``EngineEvent`` object. Raises
    ClusterstackError on a malformed step or an unknown op."""
    event = _event_to_dict(event)
    pre = event.get("resourcePreEvent")
    if pre is None:
        return None
    if not isinstance(pre, MAP):
        raise malformed("must be an object", f"{where}.resourcePreEvent", source)
    return _step_from_metadata(pre.get("metadata"), f"{where}.resourcePreEvent", source)


def is_engine_event(obj: Any) -> bool:
    """True for a dict shaped like an ``apitype.EngineEvent``: it has one of the known event
    members, or an integer ``sequence`` and some ``...Event`` member (a kind newer than this
    code)."""
    if not isinstance(obj, MAP):
        return False
    if any(k in EVENT_KINDS for k in obj):
        return True
    return isinstance(obj.get("sequence"), int) and any(k.endswith("Event") for k in obj)


_COLOR = re.compile(r"<\{%[^%]*%\}>")


def diagnostic(body: Mapping[str, Any]) -> Diagnostic:
    """A ``diagnosticEvent`` body (``{urn, prefix, message, color, severity}``) → Diagnostic:
    colour directives and the ``error: `` / ``warning: `` prefix removed, whitespace trimmed."""
    msg = _COLOR.sub("", str(body.get("message") or "")).strip()
    for pre in ("error: ", "warning: "):
        msg = msg.removeprefix(pre)
    return Diagnostic(severity=str(body.get("severity") or ""), message=msg,
                      urn=str(body.get("urn") or ""))


class StepCollector:
    """Accumulates steps event by event, so a large JSON-lines file never holds all its decoded
    events at once (only the resulting :class:`Step` rows).

    Each (op, URN) step is kept once, from the earliest ``resourcePreEvent`` by ``sequence``
    that carries it (feed order breaks ties). A ``resOutputsEvent`` / ``resOpFailedEvent``
    counts only for a URN no ``resourcePreEvent`` announced (a truncated or filtered log): its
    op is the step's *result*, not a new step — a refresh of a resource already gone is
    announced ``refresh`` and reported ``delete`` (lifecycle test ``TestRefreshBasics``
    ``3-0-0-preview``), which is drift (:attr:`ParsedSteps.gone`), not a delete. A log holding
    both the preview and the update pass of an ``up`` does not count a step twice. Steps of
    :data:`~clusterstack.pulumi.steps.INTERNAL_OPS` are validated and skipped. Steps come out
    ordered by the ``sequence`` of their event; the summary is the last ``summaryEvent`` by
    sequence; diagnostics are kept in feed order.
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.rows: list[tuple[int, int, Step, bool]] = []  # seq, feed, step, from a pre event
        self.index: dict[tuple[Any, Any], int] = {}  # (op, urn) → position in rows
        self.announced: dict[str, str] = {}  # urn → op of its resourcePreEvent
        self.summary: Mapping[str, int] | None = None
        self.is_preview: bool | None = None
        self.result_: str | None = None
        self.summary_seq = -1
        self.seen_summary = False
        self.diagnostics: list[Diagnostic] = []
        self.gone: dict[str, None] = {}
        self.fed = 0

    def add(self, ev: Mapping[str, Any], label: str) -> None:
        n = ev.get("sequence")
        seq = n if isinstance(n, int) else 0
        for kind in STEP_EVENTS:
            body = ev.get(kind)
            if body is None:
                continue
            if not isinstance(body, MAP):
                raise malformed("must be an object", f"{label}.{kind}", self.source)
            pre = kind == "resourcePreEvent"
            meta = body.get("metadata")
            if isinstance(meta, MAP):
                urn, op = meta.get("urn"), meta.get("op")
                if not pre and isinstance(urn, str) and urn in self.announced:
                    if self.announced[urn] == "refresh" and op == "delete":
                        self.gone[urn] = None
                    continue  # the result of a step already announced
                j = self.index.get((op, urn))
                if pre and j is not None and self.rows[j][3] and self.rows[j][0] <= seq:
                    continue  # already announced earlier: skip normalising it again
            s = _step_from_metadata(meta, f"{label}.{kind}", self.source)
            if s.op in INTERNAL_OPS:
                continue
            if pre:
                self.announced.setdefault(s.urn, s.op)
                # an outputs-only row of this URN was a stand-in for this announcement
                for key in [k for k in self.index if k[1] == s.urn and not self.rows[self.index[k]][3]]:
                    self.rows[self.index.pop(key)] = (-1, -1, s, False)
            j = self.index.get((s.op, s.urn))
            if j is None:
                self.index[(s.op, s.urn)] = len(self.rows)
                self.rows.append((seq, self.fed, s, pre))
            elif pre or not self.rows[j][3]:
                self.rows[j] = (seq, self.fed, s, pre)
        se = ev.get("summaryEvent")
        if se is not None and not isinstance(se, MAP):
            raise malformed("must be an object", f"{label}.summaryEvent", self.source)
        if isinstance(se, MAP) and seq >= self.summary_seq:
            self.seen_summary = True
            rc = se.get("resourceChanges")
            if rc is not None and (not isinstance(rc, MAP) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in rc.values())):
                raise malformed("must be an object of op → count", f"{label}.summaryEvent.resourceChanges",
                                self.source)
            self.summary = dict(rc) if isinstance(rc, MAP) else None
            # Pulumi always writes isPreview (apitype.SummaryEvent, no omitempty); a summary
            # without it cannot say which pass it ends, so it stays unknown rather than "update"
            ip = se.get("isPreview")
            self.is_preview = ip if isinstance(ip, bool) else None
            r = se.get("result")  # apitype.SummaryEvent.Result: succeeded | failed | cancelled
            self.result_ = r if isinstance(r, str) else None
            self.summary_seq = seq
        de = ev.get("diagnosticEvent")
        if isinstance(de, MAP):
            d = diagnostic(de)
            if d.message:
                self.diagnostics.append(d)
        self.fed += 1

    def result(self) -> ParsedSteps:
        rows = sorted((r for r in self.rows if r[0] >= 0 or r[1] >= 0), key=lambda r: (r[0], r[1]))
        return ParsedSteps(format=EVENTS, steps=tuple(r[2] for r in rows),
                           change_summary=self.summary, is_preview=self.is_preview,
                           result=self.result_, complete=self.seen_summary,
                           diagnostics=tuple(self.diagnostics), gone=tuple(self.gone))


def steps_from_events(events: Iterable[Mapping[str, Any]], *, source: str | Path | None = None,
                      where: Iterable[str] | None = None) -> ParsedSteps:
    """A sequence of engine events → :class:`ParsedSteps` (format :data:`EVENTS`); see
    :class:`StepCollector` for ordering and de-duplication. ``where`` names each event for
    error messages (e.g. ``line 7``). Raises ClusterstackError on a malformed step event."""
    col = StepCollector(source)
    labels = iter(where) if where is not None else None
    for i, ev in enumerate(events):
        col.add(ev, next(labels) if labels is not None else f"events[{i}]")
    return col.result()


def parse_event_log(lines: Iterable[str]) -> list[Any]:
    """Parse an engine event log (JSON lines, as written by ``--event-log``) into the
    Automation API's typed ``EngineEvent`` objects (imports the SDK). Blank lines are skipped;
    raises ValueError on a line that is not JSON."""
    import json

    from pulumi.automation.events import EngineEvent

    from clusterstack.config.document import json_loads

    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json_loads(line)  # the one JSON reader's limits
        except json.JSONDecodeError as exc:
            raise ValueError(f"event log line {n}: not JSON: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"event log line {n}: not accepted JSON: {exc}") from None
        out.append(EngineEvent.from_json(obj))
    return out
