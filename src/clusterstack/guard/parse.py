"""Read Pulumi's own output formats into guard :class:`~clusterstack.guard.Step` rows.

Two formats, auto-detected (:func:`parse_text`):

``preview`` — the document ``pulumi preview --json`` prints (Go ``display.PreviewDigest``,
``pkg/backend/display/json.go`` ``ShowPreviewDigest``)::

    {"config": {...}, "steps": [PreviewStep, ...], "diagnostics": [...],
     "duration": <ns>, "changeSummary": {"create": 1, "replace": 1, ...}, "maybeCorrupt": false}

    PreviewStep = {"op": OpType, "urn": URN, "provider": str,
                   "oldState": ResourceV3 | absent, "newState": ResourceV3 | absent,
                   "diffReasons": [key], "replaceReasons": [key],
                   "detailedDiff": {path: {"kind": DiffKind, "inputDiff": bool}} | null}
    ResourceV3 = {"urn", "type", "custom", "id", "inputs", "outputs", "parent", "protect",
                  "retainOnDelete", "provider", ...}

  Without ``--show-replacement-steps`` a replacement is one ``replace`` step; with it, the
  pair ``create-replacement`` / ``delete-replaced`` is shown around it (Go ``shouldShow``).

``events`` — the engine event stream (Go ``apitype.EngineEvent``, ``sdk/go/common/apitype/
events.go``) written by ``--event-log FILE``, by ``pulumi up --json`` and by ``preview --json``
with ``PULUMI_ENABLE_STREAMING_JSON_PREVIEW``: one JSON object per line; also accepted as a
JSON array of events or an ``{"events": [...]}`` batch (Pulumi Cloud ``EngineEventBatch``)::

    {"sequence": int, "timestamp": int, "resourcePreEvent": {"metadata": StepEventMetadata,
                                                             "planning": bool}}
    StepEventMetadata = {"op", "urn", "type", "provider", "logical": bool,
                         "old": StepEventStateMetadata | null, "new": ... | null,
                         "keys": [key], "diffs": [key],
                         "detailedDiff": {path: {"diffKind": DiffKind, "inputDiff": bool}} | null}
    StepEventStateMetadata = {"type", "urn", "id", "parent", "provider", "protect",
                              "retainOnDelete", "inputs", "outputs", ...}

  Every other event (``preludeEvent``, ``summaryEvent``, ``diagnosticEvent``,
  ``policyEvent``, ``cancelEvent``, ...) carries no step. A step is announced by its
  ``resourcePreEvent`` before the engine performs it; ``resOutputsEvent`` /
  ``resOpFailedEvent`` repeat its metadata afterwards and are used only when the announcing
  event is missing from the file.

Anything else is a :class:`ClusterstackError` (exit 2) naming the file. Unknown step ops are
refused too: a safety gate that does not know an op must not guess it is harmless.
"""

from __future__ import annotations

import collections.abc
import contextlib
import gc
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.guard import Step

PREVIEW = "preview"
EVENTS = "events"

#: Pulumi's ``OpType`` / ``deploy.StepOp`` values (``pkg/resource/deploy/step.go`` ``StepOps``).
KNOWN_OPS = frozenset({
    "same", "create", "update", "delete", "replace", "create-replacement", "delete-replaced",
    "read", "read-replacement", "refresh", "discard", "discard-replaced",
    "remove-pending-replace", "import", "import-replacement"})

#: The ``EngineEvent`` union members (``apitype.EngineEvent``); exactly one is set per event.
EVENT_KINDS = frozenset({
    "cancelEvent", "stdoutEvent", "diagnosticEvent", "preludeEvent", "summaryEvent",
    "resourcePreEvent", "resOutputsEvent", "resOpFailedEvent", "policyEvent",
    "policyRemediationEvent", "policyLoadEvent", "policyAnalyzeSummaryEvent",
    "policyRemediateSummaryEvent", "policyAnalyzeStackSummaryEvent", "startDebuggingEvent",
    "progressEvent", "errorEvent"})

_STEP_EVENTS = ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent")

# isinstance against typing.Mapping goes through a slow generic-alias hook; decoded JSON is
# always dict, so test that first (the abc still admits other mappings).
_MAP = (dict, collections.abc.Mapping)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding JSON: a decoded document is acyclic,
    so the collector's passes over the millions of fresh containers are pure overhead (2.5-3x
    the decode time of a 20,000-step preview, see docs/performance.md "Guard"). Restores the
    previous state; reference counting frees memory as usual meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_HINT = ("give the output of `pulumi preview --json` (one JSON document with \"steps\") or an "
         "engine event log (`--event-log FILE`, `pulumi up --json`: one JSON event per line)")


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


# ---------------------------------------------------------------------------------------------
# single records

def type_of_urn(urn: str) -> str:
    """The resource type token of a URN: ``urn:pulumi:<stack>::<project>::<qualified type>::
    <name>`` where the qualified type is ``parentType$...$type`` (Pulumi "Resource names"
    docs). The name may itself contain ``::``, so split at most three times. Returns ``""``
    for a string that is not a URN."""
    parts = urn.split("::", 3)
    if len(parts) < 4 or not parts[0].startswith("urn:pulumi:"):
        return ""
    return parts[2].rsplit("$", 1)[-1]


def _bad(message: str, where: str, source: str | Path | None) -> ClusterstackError:
    return ClusterstackError(message, _HINT, file=Path(source) if source is not None else None,
                             field=where)


def _strs(value: Any, where: str, source: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _bad("must be a list of property names", where, source)
    return tuple(value)


def _detailed(value: Any, kind_key: str, where: str, source: Any) -> dict[str, Any] | None:
    """Normalise a detailed diff to ``{path: {"kind": str, "inputDiff": bool}}`` (sorted)."""
    if value is None:
        return None
    if not isinstance(value, _MAP):
        raise _bad("must be an object of property path → diff", where, source)
    out: dict[str, Any] = {}
    for path in sorted(value):
        d = value[path]
        if not isinstance(d, _MAP):
            raise _bad("must be an object with the diff kind", f"{where}.{path}", source)
        kind = d.get(kind_key) or d.get("kind") or d.get("diffKind")
        out[path] = {"kind": str(kind) if kind is not None else "", "inputDiff": bool(d.get("inputDiff", False))}
    return out


def _state(value: Any, where: str, source: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, _MAP):
        raise _bad("must be a resource state object", where, source)
    return value


def _make_step(op: Any, urn: Any, typ: Any, old: Mapping | None, new: Mapping | None,
               keys: tuple[str, ...], diffs: tuple[str, ...], detailed: dict | None,
               where: str, source: Any) -> Step:
    if not isinstance(op, str) or not op:
        raise _bad("missing step op", f"{where}.op", source)
    if op not in KNOWN_OPS:
        raise ClusterstackError(f"unknown step op {op!r}",
                                f"this clusterstack knows Pulumi's ops {', '.join(sorted(KNOWN_OPS))};"
                                " upgrade clusterstack before trusting its guard with this Pulumi",
                                file=Path(source) if source is not None else None, field=f"{where}.op")
    if not isinstance(urn, str) or not urn:
        raise _bad("missing step urn", f"{where}.urn", source)
    if not isinstance(typ, str) or not typ:
        typ = (new or {}).get("type") or (old or {}).get("type") or type_of_urn(urn)
    if not typ:
        raise _bad(f"cannot tell the resource type of {urn!r}", f"{where}.urn", source)
    old_inputs = old.get("inputs") if old else None
    new_inputs = new.get("inputs") if new else None
    return Step(op=op, urn=urn, type=typ,
                old_protect=bool(old.get("protect", False)) if old else False,
                old_retain_on_delete=bool(old.get("retainOnDelete", False)) if old else False,
                replace_reasons=keys, diffs=diffs, detailed_diff=detailed,
                old_inputs=old_inputs if isinstance(old_inputs, _MAP) else None,
                new_inputs=new_inputs if isinstance(new_inputs, _MAP) else None)


def step_from_preview_step(step: Mapping[str, Any], *, where: str = "steps[]",
                           source: str | Path | None = None) -> Step:
    """One ``PreviewStep`` of a ``preview --json`` document → :class:`Step`.

    The type comes from ``newState.type`` / ``oldState.type``, else from the URN. Raises
    ClusterstackError (``where`` names the step, ``source`` the file) on a missing op or
    URN, an unknown op, or wrongly shaped fields."""
    if not isinstance(step, _MAP):
        raise _bad("must be a step object", where, source)
    old = _state(step.get("oldState"), f"{where}.oldState", source)
    new = _state(step.get("newState"), f"{where}.newState", source)
    return _make_step(step.get("op"), step.get("urn"), None, old, new,
                      _strs(step.get("replaceReasons"), f"{where}.replaceReasons", source),
                      _strs(step.get("diffReasons"), f"{where}.diffReasons", source),
                      _detailed(step.get("detailedDiff"), "kind", f"{where}.detailedDiff", source),
                      where, source)


def _step_from_metadata(meta: Any, where: str, source: Any) -> Step:
    if not isinstance(meta, _MAP):
        raise _bad("missing step metadata", f"{where}.metadata", source)
    where = f"{where}.metadata"
    old = _state(meta.get("old"), f"{where}.old", source)
    new = _state(meta.get("new"), f"{where}.new", source)
    return _make_step(meta.get("op"), meta.get("urn"), meta.get("type"), old, new,
                      _strs(meta.get("keys"), f"{where}.keys", source),
                      _strs(meta.get("diffs"), f"{where}.diffs", source),
                      _detailed(meta.get("detailedDiff"), "diffKind", f"{where}.detailedDiff", source),
                      where, source)


def _sdk_state(st: Any) -> dict[str, Any] | None:
    if st is None:
        return None
    return {"type": getattr(st, "type", ""), "urn": getattr(st, "urn", ""),
            "protect": bool(getattr(st, "protect", False)),
            "retainOnDelete": bool(getattr(st, "retain_on_delete", False)),
            "inputs": getattr(st, "inputs", None), "outputs": getattr(st, "outputs", None)}


def _event_to_dict(event: Any) -> Mapping[str, Any]:
    """Accept the Automation API's ``pulumi.automation.events.EngineEvent`` (attributes
    ``resource_pre_event.metadata.{op, urn, type, old, new, keys, diffs, detailed_diff}``) as
    well as a dict: rebuild the JSON shape of its pre event (the only part the guard reads).
    Missing attributes read as absent, so a partial stand-in object works too."""
    if isinstance(event, _MAP):
        return event
    out: dict[str, Any] = {"sequence": getattr(event, "sequence", 0)}
    pre = getattr(event, "resource_pre_event", None)
    if pre is None:
        return out
    m = getattr(pre, "metadata", None)
    if m is None:
        out["resourcePreEvent"] = {"metadata": None}
        return out
    detailed = getattr(m, "detailed_diff", None)
    dd = None if detailed is None else {
        k: {"diffKind": _enum_value(getattr(v, "diff_kind", "")), "inputDiff": bool(getattr(v, "input_diff", False))}
        for k, v in detailed.items()}
    out["resourcePreEvent"] = {"metadata": {
        "op": _enum_value(getattr(m, "op", None)), "urn": getattr(m, "urn", None),
        "type": getattr(m, "type", None), "old": _sdk_state(getattr(m, "old", None)),
        "new": _sdk_state(getattr(m, "new", None)), "keys": getattr(m, "keys", None),
        "diffs": getattr(m, "diffs", None), "detailedDiff": dd}}
    return out


def _enum_value(x: Any) -> Any:
    return getattr(x, "value", x)


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
    if not isinstance(pre, _MAP):
        raise _bad("must be an object", f"{where}.resourcePreEvent", source)
    return _step_from_metadata(pre.get("metadata"), f"{where}.resourcePreEvent", source)


def is_engine_event(obj: Any) -> bool:
    """True for a dict shaped like an ``apitype.EngineEvent``: it has one of the known event
    members, or an integer ``sequence`` and some ``...Event`` member (a kind newer than this
    code)."""
    if not isinstance(obj, _MAP):
        return False
    if any(k in EVENT_KINDS for k in obj):
        return True
    return isinstance(obj.get("sequence"), int) and any(k.endswith("Event") for k in obj)


# ---------------------------------------------------------------------------------------------
# whole documents

class _StepCollector:
    """Accumulates steps event by event, so a large JSON-lines file never holds all its decoded
    events at once (only the resulting :class:`Step` rows).

    Each (op, URN) step is kept once, from the earliest event by ``sequence`` that carries it
    (feed order breaks ties) — normally its ``resourcePreEvent``; a ``resOutputsEvent`` /
    ``resOpFailedEvent``
    counts only when the announcing event is missing (a truncated or filtered log), and a log
    holding both the preview and the update pass of an ``up`` does not count a step twice.
    Steps come out ordered by the ``sequence`` of their event (Pulumi: unique and monotonically
    increasing; feed order breaks ties); the summary is the last ``summaryEvent`` by sequence.
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.rows: list[tuple[int, int, Step]] = []
        self.index: dict[tuple[Any, Any], int] = {}  # (op, urn) → position in rows
        self.summary: Mapping[str, int] | None = None
        self.is_preview: bool | None = None
        self.summary_seq = -1
        self.fed = 0

    def add(self, ev: Mapping[str, Any], label: str) -> None:
        n = ev.get("sequence")
        seq = n if isinstance(n, int) else 0
        for kind in _STEP_EVENTS:
            body = ev.get(kind)
            if body is None:
                continue
            if not isinstance(body, _MAP):
                raise _bad("must be an object", f"{label}.{kind}", self.source)
            meta = body.get("metadata")
            if isinstance(meta, _MAP):
                j = self.index.get((meta.get("op"), meta.get("urn")))
                if j is not None and self.rows[j][0] <= seq:
                    continue  # already announced earlier: skip normalising it again
            s = _step_from_metadata(meta, f"{label}.{kind}", self.source)
            j = self.index.get((s.op, s.urn))
            if j is None:
                self.index[(s.op, s.urn)] = len(self.rows)
                self.rows.append((seq, self.fed, s))
            else:  # fed out of order: this event announced the step earlier
                self.rows[j] = (seq, self.fed, s)
        se = ev.get("summaryEvent")
        if isinstance(se, _MAP) and seq >= self.summary_seq:
            rc = se.get("resourceChanges")
            self.summary = dict(rc) if isinstance(rc, _MAP) else None
            # Pulumi always writes isPreview (apitype.SummaryEvent, no omitempty); a summary
            # without it cannot say which pass it ends, so it stays unknown rather than "update"
            ip = se.get("isPreview")
            self.is_preview = ip if isinstance(ip, bool) else None
            self.summary_seq = seq
        self.fed += 1

    def result(self) -> ParsedSteps:
        self.rows.sort(key=lambda r: (r[0], r[1]))
        return ParsedSteps(format=EVENTS, steps=tuple(r[2] for r in self.rows),
                           change_summary=self.summary, is_preview=self.is_preview)


def steps_from_events(events: Iterable[Mapping[str, Any]], *, source: str | Path | None = None,
                      where: Iterable[str] | None = None) -> ParsedSteps:
    """A sequence of engine events → :class:`ParsedSteps` (format :data:`EVENTS`); see
    :class:`_StepCollector` for ordering and de-duplication. ``where`` names each event for
    error messages (e.g. ``line 7``). Raises ClusterstackError on a malformed step event."""
    col = _StepCollector(source)
    labels = iter(where) if where is not None else None
    for i, ev in enumerate(events):
        col.add(ev, next(labels) if labels is not None else f"events[{i}]")
    return col.result()


def steps_from_preview(doc: Mapping[str, Any], *, source: str | Path | None = None) -> ParsedSteps:
    """A ``preview --json`` document → :class:`ParsedSteps` (format :data:`PREVIEW`).
    ``steps`` may be absent (Go ``omitempty``: nothing to show). Raises ClusterstackError on
    a malformed step."""
    raw = doc.get("steps") or []
    if not isinstance(raw, list):
        raise _bad("must be a list of steps", "steps", source)
    steps = tuple(step_from_preview_step(s, where=f"steps[{i}]", source=source)
                  for i, s in enumerate(raw))
    cs = doc.get("changeSummary")
    return ParsedSteps(format=PREVIEW, steps=steps,
                       change_summary=dict(cs) if isinstance(cs, _MAP) else None, is_preview=True)


def _is_preview_doc(obj: Mapping[str, Any]) -> bool:
    if is_engine_event(obj):
        return False
    return "steps" in obj or isinstance(obj.get("changeSummary"), _MAP)


def parse_document(data: Any, *, source: str | Path | None = None) -> ParsedSteps:
    """Decoded JSON (a preview document, one event, a list of events or an ``{"events":
    [...]}`` batch) → :class:`ParsedSteps`. Raises ClusterstackError when it is none of those."""
    if isinstance(data, _MAP):
        if _is_preview_doc(data):
            return steps_from_preview(data, source=source)
        if is_engine_event(data):
            return steps_from_events([data], source=source)
        if isinstance(data.get("events"), list):
            return _event_list(data["events"], "events", source)
        raise _bad("a JSON object that is neither a Pulumi preview document (no \"steps\") nor "
                   "an engine event", "", source)
    if isinstance(data, list):
        return _event_list(data, "", source)
    raise _bad(f"a JSON {type(data).__name__}, not a Pulumi preview document or event stream", "", source)


def _event_list(items: list, prefix: str, source: Any) -> ParsedSteps:
    if not items:  # a real stream always holds at least its prelude, summary and cancel events
        raise _bad("an empty list of engine events", prefix, source)
    for i, ev in enumerate(items):
        if not is_engine_event(ev):
            raise _bad("is not a Pulumi engine event (no sequence / ...Event member)",
                       f"{prefix}[{i}]", source)
    return steps_from_events(items, source=source, where=[f"{prefix}[{i}]" for i in range(len(items))])


def parse_text(text: str, *, source: str | Path | None = None) -> ParsedSteps:
    """Auto-detect and parse the text of a preview document or an event stream.

    One JSON value → :func:`parse_document`; otherwise the text must be JSON lines, each an
    engine event (blank lines ignored). Errors name ``source`` and, for JSON lines, the line.
    """
    if not text.strip():
        raise _bad("the file is empty", "", source)
    with _gc_paused():
        return _parse_text(text, source)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, lazily and without copying the whole text (``splitlines`` builds
    a list of every line; ``io.StringIO`` copies the text into a 4-byte-per-character buffer).
    A ``\r`` before ``\n`` stays on the line: JSON treats it as whitespace."""
    start, end = 0, len(text)
    while start < end:
        nl = text.find("\n", start)
        if nl < 0:
            nl = end
        yield text[start:nl]
        start = nl + 1


def _parse_text(text: str, source: Any) -> ParsedSteps:
    try:
        return parse_document(json.loads(text), source=source)
    except json.JSONDecodeError as exc:
        whole_error = exc
    col = _StepCollector(source)
    for n, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if not col.fed:  # not JSON lines either: report the error of the whole document
                raise ClusterstackError(f"not JSON: {whole_error.msg}", _HINT,
                                        file=Path(source) if source is not None else None,
                                        line=whole_error.lineno) from None
            raise ClusterstackError(f"not a JSON event: {exc.msg}", _HINT,
                                    file=Path(source) if source is not None else None,
                                    line=n) from None
        if not is_engine_event(obj):
            raise ClusterstackError("is not a Pulumi engine event (no sequence / ...Event member)",
                                    _HINT, file=Path(source) if source is not None else None, line=n)
        col.add(obj, f"line {n}")
    return col.result()


def parse_file(path: str | Path) -> ParsedSteps:
    """Read and parse ``path`` (see :func:`parse_text`). Raises ClusterstackError when the
    file cannot be read, is not UTF-8, or is not a Pulumi preview document / event stream."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClusterstackError("no such file", "give the path of a saved preview or event log",
                                file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterstackError(f"cannot read: {exc}", _HINT, file=path) from None
    return parse_text(text, source=path)
