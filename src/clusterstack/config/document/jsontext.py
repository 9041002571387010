"""JSON text → structure with the loader's limits: :func:`json_loads` (every JSON input) and
:func:`parse_json` (a file: adds the nesting limit and the located error)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterstack.config.document.limits import (_MAX_INT_DIGITS, MAX_DEPTH, MAX_INT, _nesting_line,
                                                 check_structure)
from clusterstack.config.document.paths import format_path
from clusterstack.errors import ClusterstackError, ConfigError


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"integer {text[:12]}… is out of range (at most {MAX_INT})")
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e999: Python's float() gives infinity
        raise ValueError(f"number {text[:12]} is out of range (beyond a 64-bit float)")
    return value


class DuplicateKeyError(ValueError):
    """One JSON object names the same key twice (``key``). RFC 8259 section 4 leaves the
    meaning to the reader ("the names within an object SHOULD be unique"); Python's ``json``
    and Go's ``encoding/json`` keep the *last* value, other readers the first — so a document
    holding ``"op": "delete", …, "op": "same"`` reads as a harmless step to one tool and as the
    delete it also says to another. No system clusterstack reads writes one (Go's encoder emits
    each struct field and map key once), so it is refused, never resolved."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"the key {key!r} appears twice in one object (readers disagree on which "
                         "value counts)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`json_loads`: the object, or :class:`DuplicateKeyError`."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


def json_loads(text: str) -> Any:
    """``json.loads`` with the value limits of every JSON clusterstack reads: integers of at
    most 19 digits (before conversion: never Python's 4300-digit ValueError), no
    ``NaN``/``Infinity`` — neither as a literal nor as a number too large for a 64-bit float
    (``1e999``, which ``float()`` turns into infinity) — and no object naming a key twice
    (:class:`DuplicateKeyError`). Raises ``json.JSONDecodeError`` (not JSON), ``ValueError``
    (a limit, a repeated key) or ``RecursionError`` (too deep). :func:`parse_json`, the
    Pulumi document readers (:mod:`clusterstack.pulumi.documents`, the engine event stream
    :mod:`clusterstack.pulumi.events`) and every other JSON input (docs/architecture.md "Where
    a new piece goes") decode with it."""
    return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float,
                      parse_constant=_no_constant, object_pairs_hook=_unique_keys)


def parse_json(text: str, path: Path, *, error: type[ClusterstackError] = ConfigError,
               hint: str = "fix the JSON syntax") -> Any:
    """Parse JSON ``text`` (from :func:`decode`) with the loader's limits: :func:`json_loads`'s,
    and nesting at most :data:`MAX_DEPTH` levels. Raises ``error`` with the line."""
    if (line := _nesting_line(text, MAX_DEPTH, indentation=False)) is not None:
        raise error(f"nested more than {MAX_DEPTH} levels deep", "flatten the structure",
                    file=path, line=line)
    try:
        data = json_loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not JSON: {exc.msg}", hint, file=path, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise error(f"not accepted JSON: {exc}", hint, file=path) from None
    if (broken := check_structure(data)) is not None:
        at, problem, fix = broken
        raise error(problem, fix, file=path, field=format_path(at))
    return data
