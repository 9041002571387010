"""A saved Pulumi document of steps — a ``preview --json`` document or an engine event log —
read into :class:`~clusterstack.pulumi.steps.ParsedSteps`, the format told apart by its shape.

One JSON value: a preview document (:mod:`clusterstack.pulumi.preview`), one event, a list of
events or an ``{"events": [...]}`` batch (:mod:`clusterstack.pulumi.events`); otherwise the text
must be JSON lines, each an engine event. Anything else is a :class:`ClusterstackError` (exit 2)
naming the file and, for JSON lines, the line.
"""

from __future__ import annotations

import contextlib
import gc
import json
from pathlib import Path
from typing import Any, Iterator

from clusterstack.config.document import MAX_STATE_BYTES, json_loads, read_bytes
from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.events import StreamReader, is_engine_event, steps_from_events
from clusterstack.pulumi.preview import is_preview_document, steps_from_preview
from clusterstack.pulumi.steps import (EVENTS, GENERIC_FAILURES, HINT, KNOWN_OPS, MAP,
    ParsedSteps, logical_ops, malformed)


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


def parse_document(data: Any, *, source: str | Path | None = None) -> ParsedSteps:
    """Decoded JSON (a preview document, one event, a list of events or an ``{"events":
    [...]}`` batch) → :class:`ParsedSteps`. Raises ClusterstackError when it is none of those."""
    if isinstance(data, MAP):
        if is_preview_document(data):
            return steps_from_preview(data, source=source)
        if is_engine_event(data):
            return steps_from_events([data], source=source)
        if isinstance(data.get("events"), list):
            return _event_list(data["events"], "events", source)
        raise malformed("a JSON object that is neither a Pulumi preview document (no \"steps\") nor "
                  "an engine event", "", source)
    if isinstance(data, list):
        return _event_list(data, "", source)
    raise malformed(f"a JSON {type(data).__name__}, not a Pulumi preview document or event stream", "", source)


def _event_list(items: list, prefix: str, source: Any) -> ParsedSteps:
    if not items:  # a real stream always holds at least its prelude, summary and cancel events
        raise malformed("an empty list of engine events", prefix, source)
    for i, ev in enumerate(items):
        if not is_engine_event(ev):
            raise malformed("is not a Pulumi engine event (no sequence / ...Event member)",
                      f"{prefix}[{i}]", source)
    return steps_from_events(items, source=source, where=[f"{prefix}[{i}]" for i in range(len(items))])


def parse_text(text: str, *, source: str | Path | None = None) -> ParsedSteps:
    """Auto-detect and parse the text of a preview document or an event stream.

    One JSON value → :func:`parse_document`; otherwise the text must be JSON lines, each an
    engine event (blank lines ignored). Errors name ``source`` and, for JSON lines, the line.
    """
    if not text.strip():
        raise malformed("the file is empty", "", source)
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
    """Decoded with the one JSON reader's limits (:func:`clusterstack.config.document.json_loads`:
    integers of at most 19 digits, no NaN/Infinity; depth bounded by the parser's recursion limit
    rather than a pre-scan, which would cost 20x the decode of a large preview)."""
    file = Path(source) if source is not None else None
    too_deep = "nested too deeply to be a Pulumi document (the JSON parser's recursion limit)"
    try:
        return parse_document(json_loads(text), source=source)
    except json.JSONDecodeError as exc:
        whole_error = exc
    except RecursionError:  # found by bench/fuzz_bench.py: exit 1 before
        raise ClusterstackError(too_deep, HINT, file=file) from None
    except ValueError as exc:  # a value limit (json_loads), e.g. an integer of 5,000 digits
        raise ClusterstackError(f"not accepted JSON: {exc}", HINT, file=file) from None
    reader = StreamReader(source)
    for n, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        if not reader.fed:  # the first line: not JSON lines either → the whole document's error
            try:
                json_loads(line)
            except json.JSONDecodeError:
                raise ClusterstackError(f"not JSON: {whole_error.msg}", HINT, file=file,
                                        line=whole_error.lineno) from None
            except (ValueError, RecursionError):
                pass  # reported by the reader, naming the line
        reader.feed_line(line, n)
    return reader.result()


def parse_file(path: str | Path) -> ParsedSteps:
    """Read and parse ``path`` (see :func:`parse_text`). Raises ClusterstackError when the
    file cannot be read, is not UTF-8, or is not a Pulumi preview document / event stream."""
    path = Path(path)
    # the one byte reader: a named pipe, a device or a directory is refused before a byte is read
    raw = read_bytes(path, missing="no such file", missing_hint="give the path of a saved preview "
                     "or event log", limit=MAX_STATE_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClusterstackError(f"cannot read: {exc}", HINT, file=path) from None
    return parse_text(text, source=path)


def check_usable(parsed: ParsedSteps, *, source: str | Path | None = None) -> None:
    """Refuse (ClusterstackError, exit 2) a record that is no evidence of what the engine would
    do or did. Exit 0 is earned only by a whole, successful run whose every step is known
    (unknown ops, severities, results and type contradictions are refused while reading,
    :mod:`clusterstack.pulumi.events`):

    - a stream without Pulumi's ``preludeEvent`` (every engine run writes it first,
      ``pkg/engine`` ``prelude``; a log that is only a summary is not a run) or without a
      ``summaryEvent`` — the run was killed or the log cut short (every recorded lifecycle
      stream ends ``summaryEvent`` then ``cancelEvent``);
    - a stream that contradicts itself (:attr:`ParsedSteps.contradictions`: two summaries of one
      pass — e.g. a failed summary placed later with a lower sequence number — a step after the
      final summary, ``maybeCorrupt``);
    - a cancelled run (``result: canceled``): it stopped part way;
    - a failed run — a summary's ``result`` ``failed``, an error diagnostic or a mandatory
      policy violation — *unless* every error is a protect refusal
      (:func:`~clusterstack.pulumi.steps.refusals_from`) or the root stack's generic
      "preview failed" / "update failed" after one: that failure is the guard's verdict
      (exit 3), built from the refusals;
    - a ``changeSummary`` / ``resourceChanges`` that counts more deletes or replaces than the
      steps show (Pulumi counts only steps it ran or plans; it does not count a protected
      delete it refused, ``TestMultipleProtectedDeletes``), or counts an op it does not know.
    """
    def refuse(problem: str, hint: str) -> None:
        raise ClusterstackError(problem, hint, file=Path(source) if source is not None else None)

    whole = ("a partial log is no evidence that nothing destructive happens; run the preview "
             "again and save the whole log")
    if parsed.format == EVENTS and not parsed.prelude:
        refuse("the event log has no preludeEvent: it is not a whole engine run (Pulumi writes "
               "the prelude first)", whole)
    if not parsed.complete:
        refuse("the event log has no summaryEvent: the run was killed or the log is truncated",
               whole)
    if parsed.contradictions:
        refuse(f"the {'event log' if parsed.format == EVENTS else 'preview document'} contradicts "
               f"itself: {parsed.contradictions[0]}",
               "this is not what the Pulumi CLI wrote for one run; save the whole output of the "
               "preview again")
    if parsed.cancelled:
        refuse("the run was cancelled (summaryEvent.result is 'canceled'): it stopped part way",
               "a cancelled run is no evidence of what the engine would do; run it again")
    if parsed.failed:
        refusals = {r.message for r in parsed.refusals}
        other = [d for d in parsed.errors
                 if d.message not in refusals and d.message.strip().lower() not in GENERIC_FAILURES]
        policy = parsed.mandatory_policy
        if other or policy or not refusals:
            first = other[0] if other else None
            if first is not None:
                what = f"{first.urn + ': ' if first.urn else ''}{first.message.splitlines()[0]}"
            elif policy:
                v = policy[0]
                what = (f"mandatory policy {v.pack + '/' if v.pack else ''}{v.policy} "
                        f"{'on ' + v.urn + ' ' if v.urn else ''}failed: {v.message.splitlines()[0] if v.message else ''}")
            else:
                what = f"summaryEvent.result is {parsed.result!r}"
            if parsed.is_preview is False:  # a recorded update: it ran, and stopped
                refuse(f"the Pulumi update failed ({what})",
                       "a failed update is no record of what it changed: check the live resources, "
                       "fix the reported error and preview again")
            refuse(f"the Pulumi run failed ({what})",
                   "a failed preview is no evidence that nothing destructive happens; fix the "
                   "reported error and preview again")
    cs = parsed.change_summary or {}
    unknown = sorted(k for k in cs if k not in KNOWN_OPS)
    if unknown:
        refuse(f"the change summary counts an op this clusterstack does not know: {unknown[0]!r}",
               "upgrade clusterstack before trusting its guard with this Pulumi")
    folded = logical_ops(parsed.steps)
    shown = {op: sum(1 for o, _ in folded.values() if o == op) for op in ("delete", "replace")}
    refreshing = any(st.op == "refresh" for st in parsed.steps)
    for op in ("delete", "replace"):
        if op == "delete" and refreshing:
            # a refresh counts each state record it found gone as a delete (one URN may hold
            # two, TestRefreshBasics 3-0-0-preview counts 2 for one URN): no per-URN check
            continue
        n = cs.get(op, 0)
        if n > shown[op]:
            refuse(f"the change summary counts {n} {op}(s) but the steps show {shown[op]}",
                   "the document contradicts itself (steps dropped or edited); save the whole "
                   "output of the preview again")
