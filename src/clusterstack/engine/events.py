"""The engine adapter's live end of the one engine event stream.

The adapter asks the Pulumi CLI for an ``--event-log`` and hands each line to a
:class:`LiveStream` as the CLI writes it (:meth:`clusterstack.engine.automation.TrackedPulumiCommand._tee_event_log`).
A LiveStream parses nothing itself: every line goes through THE reader,
:class:`clusterstack.pulumi.events.StreamReader` — the same one ``guard FILE`` reads a saved log
with — and the LiveStream adds only what a *running* command needs: it judges each step the
moment the stream first shows it (``on_step``, during ``up``: every step, planning or not), asks
for a stop (``on_stop``: the adapter interrupts the CLI) when the judge says no, raises, or a
line cannot be read (fail closed: an event the guard cannot read never passes as harmless), and
keeps the first reading error to report afterwards.

Thread-safe: lines arrive on the tee's thread while the command runs.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Callable

from clusterstack.engine.model import StepCallback
from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.events import StreamReader, strip_color
from clusterstack.pulumi.steps import Diagnostic, ParsedSteps, Step
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.urn import type_of

#: How the adapter's event log is named in errors (``error: pulumi --event-log:7: …``).
SOURCE = "pulumi --event-log"


def best_effort_step(line: str) -> Step:
    """The op, URN and type a step event line *seems* to name, found by a plain search — for
    reporting and cancelling at a line the reader refused, never for a verdict."""
    found = {k: m.group(1) for k in ("op", "urn", "type")
             if (m := re.search(rf'"{k}"\s*:\s*"([^"\\]*)"', line))}
    return Step(op=found.get("op", ""), urn=found.get("urn", ""), type=found.get("type", ""))


class LiveStream:
    """One running command's event stream. ``on_step(step) -> bool`` judges each step the first
    time the stream shows it; False — or an exception, kept in :attr:`callback_error` — sets
    :attr:`stop_requested` and calls ``on_stop(step)`` once. A line the reader refuses is kept
    in :attr:`error` (the first only; later lines are not read) and, when ``on_step`` is given
    (an update), stops the run the same way."""

    def __init__(self, on_step: StepCallback | None = None,
                 on_stop: Callable[[Step], None] | None = None, *, source: str = SOURCE) -> None:
        self._lock = threading.Lock()
        self.reader = StreamReader(source)
        self.source = source
        self.lines = 0
        self.error: ClusterstackError | None = None
        self.stop_requested: Step | None = None
        self.callback_error: Exception | None = None
        self._on_step = on_step
        self._on_stop = on_stop

    def line(self, text: str, *, not_utf8: bool = False, cut: bool = False) -> None:
        """One line of the event log as the CLI wrote it (``not_utf8``: its bytes were not
        UTF-8 and were read as U+FFFD; ``cut``: the log ended inside it)."""
        stop: Step | None = None
        with self._lock:
            self.lines += 1
            if self.error is not None:
                return
            try:
                if not_utf8:
                    raise ClusterstackError("bytes that are not UTF-8 (Go's encoding/json writes "
                                            "nothing else)", "check that `pulumi` on PATH is the "
                                            "Pulumi CLI (`pulumi version`)", file=Path(self.source),
                                            line=self.lines)
                if cut:
                    raise ClusterstackError("the event log ends inside an event (cut off)",
                                            "the run was killed or its log truncated; run it again",
                                            file=Path(self.source), line=self.lines)
                try:
                    step = self.reader.feed_line(text.rstrip("\n"), self.lines)
                except ClusterstackError:
                    raise
                except Exception as exc:  # noqa: BLE001 — a reader bug must fail closed, not drop the line
                    raise ClusterstackError(f"an engine event clusterstack cannot read "
                                            f"({type(exc).__name__}: {exc})", "report this as a bug "
                                            "with the event log; nothing past it was trusted",
                                            file=Path(self.source), line=self.lines) from exc
            except ClusterstackError as exc:
                self.error = exc
                if self._on_step is not None and self.stop_requested is None:
                    self.stop_requested = stop = best_effort_step(text)
            else:
                if step is not None and self._on_step is not None and self.stop_requested is None:
                    try:
                        go_on = bool(self._on_step(step))
                    except Exception as exc:  # noqa: BLE001 — fail closed: a broken check stops
                        self.callback_error = exc
                        go_on = False
                    if not go_on:
                        self.stop_requested = stop = step
        if stop is not None and self._on_stop is not None:
            self._on_stop(stop)

    def result(self) -> ParsedSteps:
        """What the stream said so far (:meth:`StreamReader.result`)."""
        with self._lock:
            return self.reader.result()

    # -- what the error mapping reads (clusterstack.engine.automation.map_command_error) ------
    @property
    def failed(self) -> list[Step]:
        """Steps the engine reported failed (``resOpFailedEvent``)."""
        with self._lock:
            return list(self.reader.failed_steps)

    @property
    def applied(self) -> list[Step]:
        """Steps the engine reported done (``resOutputsEvent`` outside planning)."""
        with self._lock:
            return list(self.reader.applied)

    def errors(self) -> list[Diagnostic]:
        """Error diagnostics, in order."""
        with self._lock:
            return [d for d in self.reader.diagnostics if d.severity == "error"]

    def program_errors(self) -> list[Diagnostic]:
        """Errors reported on the stack resource itself (the program, not a provider, failed)."""
        return [d for d in self.errors() if type_of(d.urn) == STACK_TYPE]


__all__ = ["LiveStream", "SOURCE", "best_effort_step", "strip_color"]
