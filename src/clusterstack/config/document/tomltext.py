"""Step 3 for TOML: text → structure (``tomllib``), and THE TOML key-line finder
(:func:`toml_index`, :func:`toml_locate`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from clusterstack.config.document.limits import MAX_DEPTH, _nesting_line, _refuse_invisible, _unparsable
from clusterstack.config.document.paths import Path_
from clusterstack.errors import ClusterstackError, ConfigError


_TOML_AT = re.compile(r"\(at line (?P<line>\d+), column \d+\)")


def parse_toml(text: str, path: Path, *, error: type[ClusterstackError] = ConfigError) -> dict[str, Any]:
    """Parse TOML ``text`` (``tomllib``). Raises ``error`` with the line of a syntax error
    (and of a character :data:`_INVISIBLE` refuses)."""
    _refuse_invisible(text, path, error)
    if (line := _nesting_line(text, MAX_DEPTH, indentation=False)) is not None:
        raise error(f"nested more than {MAX_DEPTH} levels deep", "flatten the structure",
                    file=path, line=line)
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:
        if not isinstance(exc, tomllib.TOMLDecodeError):
            raise _unparsable(exc, text, path, error) from None
        msg = str(exc)
        m = _TOML_AT.search(msg)
        raise error(f"invalid TOML: {_TOML_AT.sub('', msg).strip()}", "fix the TOML syntax",
                    file=path, line=int(m["line"]) if m else None) from None


def _toml_keys(text: str) -> list[str] | None:
    """The parts of a TOML key as ``tomllib`` reads them (``a."b.c".d`` → ``a``, ``b.c``,
    ``d``; ``"a\\"b"`` → ``a"b``; escapes, literal strings and whitespace by TOML 1.0 "Keys"):
    the key is parsed as ``<key> = 0`` and the one path of the resulting table walked. None for
    text that is not a key (a line :func:`toml_index` misread)."""
    try:
        node: Any = tomllib.loads(f"{text} = 0")
    except tomllib.TOMLDecodeError:
        return None
    parts: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        (key, node), = node.items()
        parts.append(key)
    return parts


#: One part of a TOML key (TOML 1.0 "Keys"): bare, a basic string (escapes, a ``\"`` among
#: them), or a literal string; dotted with optional whitespace around the dots.
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_KEY = rf"{_KEY_PART}(?:[ \t]*\.[ \t]*{_KEY_PART})*"
_TOML_TABLE = re.compile(rf"\A\s*\[(?!\[)[ \t]*(?P<key>{_KEY})[ \t]*\]\s*(#.*)?\Z")
_TOML_ARRAY = re.compile(rf"\A\s*\[\[[ \t]*(?P<key>{_KEY})[ \t]*\]\]\s*(#.*)?\Z")
_TOML_KEY = re.compile(rf"\A\s*(?P<key>{_KEY})[ \t]*=")


def toml_index(text: str) -> dict[tuple[str, ...], int]:
    """Key path → 1-based line of its definition: every ``[table]`` header and every
    ``key = value`` line (below its table). THE TOML key-line finder."""
    index: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string = None
    for n, raw in enumerate(text.splitlines(), 1):
        if in_string:
            if raw.count(in_string) % 2:
                in_string = None
            continue
        if (m := _TOML_ARRAY.match(raw) or _TOML_TABLE.match(raw)) and (
                keys := _toml_keys(m["key"])) is not None:
            table = tuple(keys)
            index.setdefault(table, n)
        elif (m := _TOML_KEY.match(raw)) and (keys := _toml_keys(m["key"])) is not None:
            index.setdefault((*table, *keys), n)
        for quote in ('"""', "'''"):
            if raw.count(quote) % 2:
                in_string = quote
    return index


def toml_locate(index: dict[tuple[str, ...], int], path: Path_) -> tuple[Path_, int | None]:
    """``(path, line)``: the line of the longest prefix of ``path`` defined in the document."""
    keys = tuple(str(p) for p in path)
    for n in range(len(keys), 0, -1):
        if keys[:n] in index:
            return tuple(path), index[keys[:n]]
    return tuple(path), None
