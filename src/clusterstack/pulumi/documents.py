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

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.events import StepCollector, is_engine_event, steps_from_events
from clusterstack.pulumi.preview import is_preview_document, steps_from_preview
from clusterstack.pulumi.steps import HINT, MAP, ParsedSteps, malformed


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
    try:
        return parse_document(json.loads(text), source=source)
    except json.JSONDecodeError as exc:
        whole_error = exc
    file = Path(source) if source is not None else None
    col = StepCollector(source)
    for n, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if not col.fed:  # not JSON lines either: report the error of the whole document
                raise ClusterstackError(f"not JSON: {whole_error.msg}", HINT, file=file,
                                        line=whole_error.lineno) from None
            raise ClusterstackError(f"not a JSON event: {exc.msg}", HINT, file=file, line=n) from None
        if not is_engine_event(obj):
            raise ClusterstackError("is not a Pulumi engine event (no sequence / ...Event member)",
                                    HINT, file=file, line=n)
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
        raise ClusterstackError(f"cannot read: {exc}", HINT, file=path) from None
    return parse_text(text, source=path)
