"""THE engine event stream: Pulumi's engine events, read once, strictly, into typed records.

Every engine run clusterstack looks at goes through this one reader: the adapter's live
``preview`` / ``up`` / ``refresh`` / ``import`` (the CLI's ``--event-log``, line by line as it is
written, :mod:`clusterstack.engine.events`) and a saved file given to ``guard`` (an
``--event-log`` file, ``pulumi up --json`` output, a JSON array of events or an ``{"events":
[...]}`` batch, :mod:`clusterstack.pulumi.documents`). Nothing here imports the Pulumi SDK: the
SDK's own event parsing (``pulumi.automation.events.EngineEvent.from_json``, fed by its private
event server in ``pulumi/automation/_stack.py``) drops what its enums do not know with a
``UserWarning`` and is never used.

The format (Go ``apitype.EngineEvent``, pulumi/pulumi ``sdk/go/common/apitype/events.go`` at
1b5949891b3c): one JSON object per event, ``{"sequence": int, "timestamp": int, <one member>}``
where the member is one of :data:`EVENT_KINDS`::

    resourcePreEvent / resOutputsEvent = {"metadata": StepEventMetadata, "planning": bool}
    resOpFailedEvent = {"metadata": StepEventMetadata, "status": int, "steps": int}
    StepEventMetadata = {"op", "urn", "type", "provider", "logical": bool,
                         "old": StepEventStateMetadata | null, "new": ... | null,
                         "keys": [key], "diffs": [key],
                         "detailedDiff": {path: {"diffKind": DiffKind, "inputDiff": bool}} | null}
    StepEventStateMetadata = {"type", "urn", "id", "parent", "provider", "protect",
                              "retainOnDelete", "inputs", "outputs", ...}
    diagnosticEvent = {"urn", "prefix", "message", "color", "severity", "ephemeral"}
    summaryEvent = {"maybeCorrupt": bool, "durationSeconds": int, "resourceChanges": {op: int},
                    "PolicyPacks": {…}, "isPreview": bool, "result": OperationResult}
    policyEvent = {"resourceUrn", "message", "color", "policyName", "policyPackName", …,
                   "enforcementLevel"}

Reading is strict, event by event (:func:`read_event`, a ClusterstackError naming the line and
field on any of these): the URN decides a step's type (:func:`clusterstack.pulumi.steps.make_step`;
an aliased old state is judged, not refused); an unknown op, severity, result or enforcement
level; ``isPreview`` that is not a boolean; counts that are not non-negative integers of known
ops; two event members in one event. Internal ops (``extend-parameterize`` — URN and type empty,
``ExtensionParameterizeStep`` in ``pkg/resource/deploy/step.go:1813-1821`` — and ``diff``) carry
no resource and are skipped deliberately (kept in :attr:`ParsedSteps.internal`), never refused
as a whole log. Whole-stream facts (:class:`StreamReader`) are judged by
:func:`clusterstack.pulumi.documents.check_usable`.

A step is announced by its ``resourcePreEvent`` before the engine performs it;
``resOutputsEvent`` / ``resOpFailedEvent`` repeat its metadata afterwards and stand in for a
step only when its announcement is missing from the stream.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeGuard

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.steps import (
    DESTRUCTIVE_OPS,
    ENFORCEMENT_LEVELS,
    EVENTS,
    HINT,
    INTERNAL_OPS,
    KNOWN_OPS,
    MAP,
    RESULTS,
    SEVERITIES,
    Diagnostic,
    ParsedSteps,
    PolicyViolation,
    Step,
    Summary,
    detailed,
    make_step,
    malformed,
    state_record,
    strs,
)
from clusterstack.config.document import json_loads

#: The ``EngineEvent`` union members (``apitype.EngineEvent``); exactly one is set per event.
EVENT_KINDS = frozenset({
    "cancelEvent", "stdoutEvent", "diagnosticEvent", "preludeEvent", "summaryEvent",
    "resourcePreEvent", "resOutputsEvent", "resOpFailedEvent", "policyEvent",
    "policyRemediationEvent", "policyLoadEvent", "policyAnalyzeSummaryEvent",
    "policyRemediateSummaryEvent", "policyAnalyzeStackSummaryEvent", "startDebuggingEvent",
    "progressEvent", "errorEvent"})

STEP_EVENTS = ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent")
PRE, OUTPUTS, FAILED = STEP_EVENTS


@dataclass(frozen=True)
class EngineEvent:
    """One engine event, typed. ``kind`` is its ``apitype.EngineEvent`` member (a kind newer
    than this code keeps its name and carries nothing); exactly one payload is set for the
    kinds that carry one: ``step`` (a step event of a resource op, with ``planning``),
    ``internal_op`` (a step event of an internal op: no resource, skipped deliberately),
    ``diagnostic``, ``summary`` or ``policy``."""

    sequence: int
    kind: str
    step: Step | None = None
    planning: bool = False
    internal_op: str = ""
    diagnostic: Diagnostic | None = None
    summary: Summary | None = None
    policy: PolicyViolation | None = None


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


def strip_color(text: str) -> str:
    """Remove Pulumi's colour directives (``<{%fg 1%}>``, ``<{%reset%}>`` …) from a message."""
    return _COLOR.sub("", text or "")


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_field(body: Mapping[str, Any], key: str, where: str, source: Any, *,
               required: bool = False) -> str:
    value = body.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise malformed(f"must be a string, not {json.dumps(value)[:40]}", f"{where}.{key}", source)
    return value


def diagnostic(body: Any, where: str = "diagnostic", source: Any = None) -> Diagnostic:
    """A ``diagnosticEvent`` body or a preview document's ``diagnostics[]`` entry (``{urn,
    prefix, message, color, severity}``) → :class:`Diagnostic`: colour directives and the
    ``error: `` / ``warning: `` prefix removed, whitespace trimmed. Raises ClusterstackError
    for a severity that is not one of :data:`SEVERITIES` (``ERROR`` included: Pulumi writes
    ``diag.Severity`` lower case) or a message / URN that is not a string."""
    if not isinstance(body, MAP):
        raise malformed("must be a diagnostic object", where, source)
    severity = body.get("severity")
    if severity not in SEVERITIES:
        raise malformed(f"severity {json.dumps(severity)[:40]} is not one of Pulumi's "
                        f"({', '.join(SEVERITIES)})", f"{where}.severity", source)
    message = _str_field(body, "message", where, source)
    _str_field(body, "prefix", where, source)  # the "error: " label: shown by severity instead
    urn = _str_field(body, "urn", where, source)
    msg = strip_color(message).strip()
    for pre in ("error: ", "warning: "):
        msg = msg.removeprefix(pre)
    return Diagnostic(severity=severity, message=msg, urn=urn)


def _summary(body: Any, seq: int, where: str, source: Any) -> Summary:
    if not isinstance(body, MAP):
        raise malformed("must be an object", where, source)
    rc = body.get("resourceChanges")
    if rc is None:
        rc = {}  # Go writes a nil map as null: nothing changed
    if not isinstance(rc, MAP) or not all(_int(v) and v >= 0 for v in rc.values()):
        raise malformed("must be an object of op → count", f"{where}.resourceChanges", source)
    unknown = sorted(k for k in rc if k not in KNOWN_OPS)
    if unknown:
        raise ClusterstackError(f"the summary counts an op this clusterstack does not know: {unknown[0]!r}",
                                "upgrade clusterstack before trusting its guard with this Pulumi",
                                file=Path(source) if source is not None else None,
                                field=f"{where}.resourceChanges")
    ip = body.get("isPreview")
    if not isinstance(ip, bool):  # apitype.SummaryEvent.IsPreview: always written (no omitempty)
        raise malformed(f"isPreview must be true or false, not {json.dumps(ip)[:40]} (Pulumi always "
                        "writes it: which pass does this summary end?)", f"{where}.isPreview", source)
    result = body.get("result")
    if result is not None and result not in RESULTS:
        raise malformed(f"result {json.dumps(result)[:40]} is not one of Pulumi's ({', '.join(RESULTS)})",
                        f"{where}.result", source)
    mc = body.get("maybeCorrupt", False)
    if not isinstance(mc, bool):
        raise malformed("maybeCorrupt must be true or false", f"{where}.maybeCorrupt", source)
    return Summary(is_preview=ip, result=result, resource_changes=dict(rc), maybe_corrupt=mc,
                   sequence=seq)


def _policy(body: Any, where: str, source: Any) -> PolicyViolation:
    if not isinstance(body, MAP):
        raise malformed("must be an object", where, source)
    level = body.get("enforcementLevel")
    if level not in ENFORCEMENT_LEVELS:
        raise malformed(f"enforcementLevel {json.dumps(level)[:40]} is not one of Pulumi's "
                        f"({', '.join(ENFORCEMENT_LEVELS)})", f"{where}.enforcementLevel", source)
    return PolicyViolation(urn=_str_field(body, "resourceUrn", where, source),
                           policy=_str_field(body, "policyName", where, source),
                           pack=_str_field(body, "policyPackName", where, source),
                           enforcement_level=level,
                           message=strip_color(_str_field(body, "message", where, source)).strip())


def _internal(meta: Mapping[str, Any], op: str, where: str, source: Any) -> str:
    """An internal op's step record: ``extend-parameterize`` has no URN, type or states
    (``ExtensionParameterizeStep``, step.go:1813-1821); ``diff`` (``DiffStep``, step.go:2440-2480)
    names the resource it diffs. Either touches no resource. Its fields must still be of the
    right kinds (a string URN, state objects)."""
    for key in ("urn", "type"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise malformed(f"must be a string", f"{where}.{key}", source)
    for key in ("old", "new"):
        state_record(meta.get(key), f"{where}.{key}", source)
    return op


def step_event(body: Any, kind: str, where: str, source: Any) -> tuple[Step | None, str, bool]:
    """A step event's body → (the :class:`Step`, or None for an internal op; the internal op,
    or ``""``; ``planning``). Raises ClusterstackError on a malformed body, an unknown op or a
    type that contradicts the URN."""
    if not isinstance(body, MAP):
        raise malformed("must be an object", where, source)
    planning = body.get("planning", False)
    if planning is not None and not isinstance(planning, bool):
        raise malformed("planning must be true or false", f"{where}.planning", source)
    meta = body.get("metadata")
    if not isinstance(meta, MAP):
        raise malformed("missing step metadata", f"{where}.metadata", source)
    where = f"{where}.metadata"
    op = meta.get("op")
    if isinstance(op, str) and op in INTERNAL_OPS:
        return None, _internal(meta, op, where, source), bool(planning)
    old = state_record(meta.get("old"), f"{where}.old", source)
    new = state_record(meta.get("new"), f"{where}.new", source)
    step = make_step(op, meta.get("urn"), meta.get("type"), old, new,
                     strs(meta.get("keys"), f"{where}.keys", source),
                     strs(meta.get("diffs"), f"{where}.diffs", source),
                     detailed(meta.get("detailedDiff"), "diffKind", f"{where}.detailedDiff", source),
                     where, source, has_type="type" in meta)
    return step, "", bool(planning)


def read_event(obj: Any, *, where: str = "event", source: str | Path | None = None) -> EngineEvent:
    """One decoded engine event → :class:`EngineEvent`, strictly (module docstring). Raises
    ClusterstackError naming ``where`` (``line 7``, ``events[3]``) and the field."""
    if not isinstance(obj, MAP):
        raise malformed("is not a Pulumi engine event (not an object)", where, source)
    seq = obj.get("sequence")
    if not _int(seq) or seq < 0:
        raise malformed(f"sequence must be a non-negative integer, not {json.dumps(seq)[:40]}",
                        f"{where}.sequence", source)
    members = [k for k in obj if k in EVENT_KINDS or (k.endswith("Event") and obj[k] is not None)]
    if not members:
        raise malformed("is not a Pulumi engine event (no ...Event member)", where, source)
    if len(members) > 1:
        raise malformed(f"holds {len(members)} event members ({', '.join(sorted(members))}); an "
                        "engine event has exactly one", where, source)
    kind = members[0]
    body = obj[kind]
    at = f"{where}.{kind}"
    if kind in STEP_EVENTS:
        step, internal, planning = step_event(body, kind, at, source)
        return EngineEvent(sequence=seq, kind=kind, step=step, planning=planning, internal_op=internal)
    if kind == "diagnosticEvent":
        return EngineEvent(sequence=seq, kind=kind, diagnostic=diagnostic(body, at, source))
    if kind == "summaryEvent":
        return EngineEvent(sequence=seq, kind=kind, summary=_summary(body, seq, at, source))
    if kind == "policyEvent":
        return EngineEvent(sequence=seq, kind=kind, policy=_policy(body, at, source))
    if body is not None and not isinstance(body, MAP):
        raise malformed("must be an object", at, source)
    return EngineEvent(sequence=seq, kind=kind)


def step_from_event(event: Mapping[str, Any], *, source: str | Path | None = None,
                    where: str = "event") -> Step | None:
    """One decoded engine event → the :class:`Step` its ``resourcePreEvent`` announces, or
    ``None`` (any other event, an internal op). Strict as :func:`read_event`."""
    ev = read_event(event, where=where, source=source)
    return ev.step if ev.kind == PRE else None


class StreamReader:
    """THE reader of one engine event stream: events in (decoded objects or raw lines), one
    :class:`ParsedSteps` out. Used live by the engine adapter (line by line as the CLI writes
    its ``--event-log``) and for saved files; a large stream never holds all its decoded
    events, only the resulting :class:`Step` rows.

    Each (op, URN) step is kept once, from the earliest ``resourcePreEvent`` by ``sequence``
    (feed order breaks ties). A ``resOutputsEvent`` / ``resOpFailedEvent`` stands in for a step
    only for a URN no ``resourcePreEvent`` announced (a truncated or filtered log); for an
    announced URN its op is the step's *result*: a refresh of a resource already gone is
    announced ``refresh`` and reported ``delete`` (lifecycle test ``TestRefreshBasics``
    ``3-0-0-preview``) — drift (:attr:`ParsedSteps.gone`) unless another step of the stream
    deletes or replaces that URN, which is then judged as the delete it is. A log holding both
    the preview and the update pass of an ``up`` does not count a step twice. :meth:`feed`
    returns the step an event adds to the run for the first time — what the adapter judges
    during ``up``, planning or not.
    """

    def __init__(self, source: Any = None) -> None:
        self.source = source
        self.rows: list[tuple[int, int, Step, bool]] = []  # seq, feed, step, from a pre event
        self.index: dict[tuple[str, str], int] = {}  # (op, urn) → position in rows
        self.announced: dict[str, str] = {}  # urn → op of its first resourcePreEvent
        self.summaries: list[tuple[int, int, Summary]] = []  # seq, feed, summary
        self.diagnostics: list[Diagnostic] = []
        self.policy: list[PolicyViolation] = []
        self.applied: list[Step] = []
        self.failed_steps: list[Step] = []
        self.internal: list[str] = []
        self.gone: dict[str, None] = {}
        self.prelude = False
        self.last_step = (-1, -1)  # (seq, feed) of the latest step event
        self.fed = 0

    # -- input -------------------------------------------------------------------------------
    def feed_line(self, line: str, n: int) -> Step | None:
        """One line of a JSON-lines stream (line ``n``, 1-based; blank lines are skipped).
        Raises ClusterstackError naming the line: not JSON (a line of text among the events,
        a cut-off line), past the one JSON reader's limits (:func:`clusterstack.config.document.json_loads`:
        19-digit integers, no NaN, no key twice in one object), not an engine event."""
        if not line.strip():
            return None
        file = Path(self.source) if self.source is not None else None
        try:
            obj = json_loads(line)
        except RecursionError:
            raise ClusterstackError("nested too deeply to be a Pulumi document (the JSON parser's "
                                    "recursion limit)", HINT, file=file, line=n) from None
        except json.JSONDecodeError as exc:
            raise ClusterstackError(f"not a JSON event: {exc.msg}", HINT, file=file, line=n) from None
        except ValueError as exc:
            raise ClusterstackError(f"not accepted JSON: {exc}", HINT, file=file, line=n) from None
        if not is_engine_event(obj):
            raise ClusterstackError("is not a Pulumi engine event (no sequence / ...Event member)",
                                    HINT, file=file, line=n)
        label = f"line {n}"
        try:
            return self.feed(obj, label)
        except ClusterstackError as exc:
            # `events.jsonl:2: summaryEvent.result: …`, as every located problem reads — not
            # `events.jsonl: line 2.summaryEvent.result: …`
            for p in exc.problems:
                if p.line is None and (p.field == label or p.field.startswith(label + ".")):
                    p.line, p.field = n, p.field[len(label) + 1:]
            exc.args = (exc.render(),)
            raise

    def feed(self, obj: Any, label: str) -> Step | None:
        """One decoded event (``label`` names it in errors)."""
        return self.add(read_event(obj, where=label, source=self.source))

    def add(self, ev: EngineEvent) -> Step | None:
        """One typed event; returns the step it adds to the run for the first time, if any."""
        seq, fed = ev.sequence, self.fed
        self.fed += 1
        if ev.kind in STEP_EVENTS:
            self.last_step = max(self.last_step, (seq, fed))
        if ev.internal_op:
            self.internal.append(ev.internal_op)
            return None
        if ev.step is not None:
            return self._step(ev, seq, fed)
        if ev.kind == "preludeEvent":
            self.prelude = True
        elif ev.diagnostic is not None:
            if ev.diagnostic.message:
                self.diagnostics.append(ev.diagnostic)
        elif ev.summary is not None:
            self.summaries.append((seq, fed, ev.summary))
        elif ev.policy is not None:
            self.policy.append(ev.policy)
        return None

    def _step(self, ev: EngineEvent, seq: int, fed: int) -> Step | None:
        s = ev.step
        assert s is not None
        pre = ev.kind == PRE
        if ev.kind == OUTPUTS and not ev.planning:
            self.applied.append(s)
        elif ev.kind == FAILED:
            self.failed_steps.append(s)
        if not pre and s.urn in self.announced:
            if self.announced[s.urn] == "refresh" and s.op == "delete":
                self.gone[s.urn] = None
            return None  # the result of a step already announced
        new = None
        if pre:
            self.announced.setdefault(s.urn, s.op)
            # an outputs-only row of this URN was a stand-in for this announcement
            for key in [k for k in self.index if k[1] == s.urn and not self.rows[self.index[k]][3]]:
                self.rows[self.index.pop(key)] = (-1, -1, s, False)
        key = (s.op, s.urn)
        j = self.index.get(key)
        if j is None:
            self.index[key] = len(self.rows)
            self.rows.append((seq, fed, s, pre))
            new = s
        elif pre and (not self.rows[j][3] or seq < self.rows[j][0]):
            self.rows[j] = (seq, fed, s, pre)
        return new

    # -- output ------------------------------------------------------------------------------
    def result(self) -> ParsedSteps:
        """The stream's record (:class:`ParsedSteps`, format :data:`EVENTS`): steps by
        sequence, the final summary's counts, result and pass, and what contradicts itself."""
        rows = sorted((r for r in self.rows if r[0] >= 0 or r[1] >= 0), key=lambda r: (r[0], r[1]))
        steps = tuple(r[2] for r in rows)
        summaries = sorted(self.summaries, key=lambda x: (x[0], x[1]))
        final = summaries[-1][2] if summaries else None
        contradictions: list[str] = []
        for ip in (True, False):
            mine = [x for x in summaries if x[2].is_preview is ip]
            if len(mine) > 1:
                what = "preview" if ip else "update"
                contradictions.append(
                    f"{len(mine)} summaryEvents end the {what} pass (sequences "
                    f"{', '.join(str(x[0]) for x in mine)}; results "
                    f"{', '.join(str(x[2].result) for x in mine)}): one engine run writes one")
        if len(summaries) == 2 and summaries[0][2].is_preview is False and summaries[1][2].is_preview:
            contradictions.append("the preview pass's summaryEvent comes after the update's")
        if summaries and self.last_step > (summaries[-1][0], summaries[-1][1]):
            contradictions.append(f"a step event follows the run's final summaryEvent (sequence "
                                  f"{summaries[-1][0]}): the summary did not end the run")
        if final is not None and final.maybe_corrupt:
            contradictions.append("maybeCorrupt: the snapshot may hold resources in an invalid state")
        destroyed = {s.urn for s in steps if s.op in DESTRUCTIVE_OPS}
        return ParsedSteps(
            format=EVENTS, steps=steps,
            change_summary=dict(final.resource_changes) if final is not None else None,
            is_preview=final.is_preview if final is not None else None,
            result=final.result if final is not None else None,
            complete=final is not None, diagnostics=tuple(self.diagnostics),
            gone=tuple(u for u in self.gone if u not in destroyed),
            summaries=tuple(x[2] for x in summaries), prelude=self.prelude,
            policy=tuple(self.policy), applied=tuple(self.applied),
            failed_steps=tuple(self.failed_steps), internal=tuple(self.internal),
            contradictions=tuple(contradictions))


def steps_from_events(events: Iterable[Mapping[str, Any]], *, source: str | Path | None = None,
                      where: Iterable[str] | None = None) -> ParsedSteps:
    """A sequence of decoded engine events → :class:`ParsedSteps` through :class:`StreamReader`.
    ``where`` names each event for error messages (e.g. ``events[7]``). Raises
    ClusterstackError on a malformed event."""
    reader = StreamReader(source)
    labels = iter(where) if where is not None else None
    for i, ev in enumerate(events):
        reader.feed(ev, next(labels) if labels is not None else f"events[{i}]")
    return reader.result()
