"""The engine adapter's live event collector: Automation API typed events → steps, counts and
diagnostics of one operation.

The Pulumi engine streams ``EngineEvent`` records (``--event-log``; the Automation API parses
them into ``pulumi.automation.events`` objects). A step is announced by a
``resourcePreEvent`` *before* it runs and confirmed by a ``resOutputsEvent`` after it ran;
``summaryEvent`` carries the engine's counts and ``diagnosticEvent`` the messages
(apitype ``EngineEvent``, https://www.pulumi.com/docs/iac/packages-and-automation/automation-api/).

This module only reads attributes, so it never imports the SDK: it works on the SDK's typed
events and on anything shaped like them. The step conversion itself is the vocabulary's
(:func:`clusterstack.pulumi.events.step_from_metadata`, the same rule the guard's file reader
uses).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

from clusterstack.engine.model import Diagnostic, StepCallback
from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.events import step_from_metadata
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.urn import type_of

_COLOR = re.compile(r"<\{%[^%]*%\}>")


def strip_color(text: str) -> str:
    """Remove Pulumi's colour directives (``<{%fg 1%}>``, ``<{%reset%}>`` …) from a message."""
    return _COLOR.sub("", text or "")


def _value(x: Any) -> str:
    return getattr(x, "value", x) if x is not None else ""


def _raw_step(md: Any) -> Step:
    """A best-effort Step for a step event the parser refused (used to report and cancel)."""
    return Step(op=str(_value(getattr(md, "op", ""))), urn=str(getattr(md, "urn", "")),
                type=str(getattr(md, "type", "")))


class EventCollector:
    """An ``on_event`` callback that collects steps, counts and diagnostics of one operation.

    Thread-safe (the Automation API delivers events from a watcher thread or a gRPC thread
    pool). ``on_step`` is called once per announced step of a real update (``planning`` unset);
    when it returns False — or raises, which is kept in ``callback_error`` (fail closed: the
    Automation API would otherwise swallow the exception and the update would go on) —
    ``stop_requested`` is set and ``on_stop(step)`` is called once. A step event the guard's
    parser refuses (unknown op, malformed) is kept in ``parse_errors`` and also stops an
    update; ``applied`` / ``failed`` record (op, URN, type) of completed and failed steps.
    """

    def __init__(self, on_step: StepCallback | None = None,
                 on_stop: Callable[[Step], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str]] = set()
        self.steps: list[Step] = []
        self.applied: list[Step] = []
        self.failed: list[Step] = []
        self.diagnostics: list[Diagnostic] = []
        self.summary: dict[str, int] | None = None
        self.cancelled = False  # the engine emitted its cancelEvent (end of the stream)
        self.stop_requested: Step | None = None
        self.callback_error: Exception | None = None
        self.parse_errors: list[ClusterstackError] = []
        self._on_step = on_step
        self._on_stop = on_stop

    def __call__(self, event: Any) -> None:
        stop: Step | None = None
        with self._lock:
            if event.resource_pre_event is not None:
                pre = event.resource_pre_event
                try:
                    step = step_from_metadata(pre.metadata)
                    bad = False
                except ClusterstackError as exc:  # unknown op / malformed: never guess it is harmless
                    self.parse_errors.append(exc)
                    step, bad = _raw_step(pre.metadata), True
                key = (step.op, step.urn)
                if key in self._seen:
                    return
                self._seen.add(key)
                self.steps.append(step)
                if self._on_step is not None and not pre.planning and self.stop_requested is None:
                    try:
                        go_on = not bad and bool(self._on_step(step))
                    except Exception as exc:  # fail closed: a broken check stops the update
                        self.callback_error = exc
                        go_on = False
                    if not go_on:
                        self.stop_requested = stop = step
            elif event.res_outputs_event is not None:
                self.applied.append(_raw_step(event.res_outputs_event.metadata))
            elif event.res_op_failed_event is not None:
                self.failed.append(_raw_step(event.res_op_failed_event.metadata))
            elif event.diagnostic_event is not None:
                d = event.diagnostic_event
                msg = strip_color(d.message).strip()
                if msg:
                    self.diagnostics.append(Diagnostic(severity=d.severity, message=msg,
                                                       urn=d.urn or ""))
            elif event.summary_event is not None:
                rc = event.summary_event.resource_changes or {}
                self.summary = {_value(k): int(v) for k, v in sorted(rc.items(), key=lambda kv: _value(kv[0]))}
            elif event.cancel_event is not None:
                self.cancelled = True
        if stop is not None and self._on_stop is not None:
            self._on_stop(stop)

    def raw_line(self, line: str, *, not_utf8: bool = False) -> None:
        """One raw line of the event log, as the CLI wrote it (before the SDK parses it, see
        :meth:`TrackedPulumiCommand._tee_event_log`): a step event the guard's rules cannot read
        — an op this clusterstack does not know, which the SDK would drop with a warning, JSON
        past the one reader's limits, a line whose bytes were not UTF-8 (``not_utf8``, read
        with U+FFFD) — is kept in ``parse_errors`` and stops an update at once (fail closed)."""
        import json

        from clusterstack.config.document import json_loads
        from clusterstack.pulumi.events import step_from_event

        try:
            if not_utf8:
                raise ValueError("bytes that are not UTF-8")
            ev = json_loads(line)  # the one JSON reader's limits
        except json.JSONDecodeError:
            return  # a cut-off line: the log reader refuses the log afterwards
        except (ValueError, RecursionError) as exc:
            # past the reader's limits (NaN, an integer of 20+ digits — Pulumi's property
            # values are float64 and Go's encoding/json writes no NaN): the event cannot be
            # read, so it cannot pass as harmless; op/urn/type found by a best-effort search,
            # for the report only
            found = {k: m.group(1) for k in ("op", "urn", "type")
                     if (m := re.search(rf'"{k}"\s*:\s*"([^"\\]*)"', line))}
            step = Step(op=found.get("op", ""), urn=found.get("urn", ""), type=found.get("type", ""))
            error: ClusterstackError = ClusterstackError(
                f"an engine event clusterstack does not accept: {exc}",
                "the event log is not what the Pulumi CLI writes; check `pulumi version`",
                field="pulumi --event-log")
        else:
            try:
                step_from_event(ev, source="pulumi --event-log")
                return
            except ClusterstackError as exc:
                meta = ((ev.get("resourcePreEvent") or {}).get("metadata") or {}) if isinstance(ev, dict) else {}
                step = Step(op=str(meta.get("op", "")), urn=str(meta.get("urn", "")),
                            type=str(meta.get("type", "")))
                error = exc
            except (ValueError, AttributeError):
                return  # not an event at all: the log reader refuses the log afterwards
        stop: Step | None = None
        with self._lock:
            self.parse_errors.append(error)
            if self._on_step is not None and self.stop_requested is None:
                self.stop_requested = stop = step
        if stop is not None and self._on_stop is not None:
            self._on_stop(stop)

    def errors(self) -> list[Diagnostic]:
        """Error diagnostics, in order."""
        with self._lock:
            return [d for d in self.diagnostics if d.severity == "error"]

    def program_errors(self) -> list[Diagnostic]:
        """Errors reported on the stack resource itself (the program, not a provider, failed)."""
        return [d for d in self.errors() if type_of(d.urn) == STACK_TYPE]
