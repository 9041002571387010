"""The input-hygiene limits every file the tool reads gets: sizes, nesting, node counts,
integer range, control and invisible characters — the constants and the checks that apply
them to text (before a parser recurses) and to a parsed structure."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path
from typing import Any

from clusterstack.config.document.paths import Path_
from clusterstack.errors import ClusterstackError, ConfigError

#: Largest reviewed file read (bytes). The shipped configs are a few KB; a file this large is
#: not a config (a 50 MB cluster file took 49 s to parse five times). State and import files
#: pass a larger ``limit`` (a ``pulumi stack export`` of a big stack is tens of MB).
MAX_BYTES = 4 * 2**20
#: Largest state / import file read (bytes).
MAX_STATE_BYTES = 256 * 2**20
#: Deepest nesting of mappings/lists accepted. The shipped configs nest 7 levels; Python's
#: parsers recurse per level and fail with RecursionError near 1000.
MAX_DEPTH = 64
#: Most nodes (scalars, mappings, lists, counted through aliases) one document may expand
#: to: YAML aliases can make a 1 KB file expand to billions of nodes ("billion laughs").
MAX_NODES = 1_000_000
#: Largest magnitude of an integer in any file: int64, the widest integer any receiving
#: system takes (Kubernetes int32/int64 fields, protobuf int64 in GCP APIs, TOML 1.0 §Integer).
#: A wider one overflows when it becomes a float (OverflowError) or a quota.
MAX_INT = 2**63 - 1
#: JSON/YAML integers longer than this many digits are refused before conversion (Python
#: refuses to convert more than 4300 digits, with a ValueError).
_MAX_INT_DIGITS = 19

#: C0 control characters (and DEL) refused anywhere in a reviewed file: tab, LF and CR are the
#: only ones YAML 1.2 (§5.1 c-printable), TOML 1.0 and JSON allow unescaped, and a NUL or
#: escape sequence in a config is corruption or an attack on whoever reads the diff.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Characters refused in a reviewed YAML/TOML file beyond :data:`_CONTROL` (not in state or
#: event files, where a cloud API's text may carry them): the C1 controls (U+0080–U+009F; NEL
#: is a line break to YAML 1.1 and libyaml), the line and paragraph separators U+2028/U+2029
#: (line breaks to YAML 1.1 parsers, libyaml among them, and to ruamel's scanner, but not to
#: YAML 1.2 or to a reviewer's diff: the two read different lines), and the bidirectional
#: embedding, override and isolate controls U+202A–U+202E, U+2066–U+2069, which make a line
#: display in another order than its bytes ("Trojan Source", CVE-2021-42574).
_INVISIBLE = re.compile("[\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _refuse_invisible(text: str, path: Path, error: type[ClusterstackError]) -> None:
    if m := _INVISIBLE.search(text):
        line, column = _line_col(text, m.start())
        char = m.group()
        name = unicodedata.name(char, "a C1 control character")
        raise error(f"U+{ord(char):04X} ({name}) at column {column}: it reads as another line or "
                    "another order to some readers than to others", "remove it (or write it as an "
                    "escape inside a quoted string)", file=path, line=line)

def _line_col(text: str | bytes, index: int) -> tuple[int, int]:
    if isinstance(text, str):
        return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1
    return text.count(b"\n", 0, index) + 1, index - (text.rfind(b"\n", 0, index) + 1) + 1


#: The characters the nesting pre-scan acts on; everything between them is skipped at C speed.
_NESTING_TOKENS = re.compile(r"[\n\\\"'#\[\]{}]")
#: The line boundaries of ``str.splitlines`` (as a regex class body).
_BREAKS = r"\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"


def _nesting_line(text: str, max_depth: int, *, indentation: bool = True) -> int | None:
    """The first line nesting deeper than ``max_depth`` — flow brackets outside quoted strings
    and comments, or (``indentation``, YAML) block indentation over ``4 * max_depth`` — found
    by one linear scan before a recursive parser sees the text (it would fail with
    RecursionError). None when within the limit. The scan visits only newlines, quotes,
    backslashes, ``#`` and brackets (:data:`_NESTING_TOKENS`): a 473 kB cluster file in ~10 ms
    instead of ~200 ms character by character."""
    depth, quote, skip = 0, None, -1
    for m in _NESTING_TOKENS.finditer(text):
        i = m.start()
        if i == skip:
            continue  # the character after a backslash inside a double-quoted string
        ch = text[i]
        if ch == "\n":
            if quote == "#":
                quote = None
        elif quote == '"' and ch == "\\":
            skip = i + 1
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            if i == 0 or not text[i - 1].isalnum():
                quote = ch
        elif ch == "#":
            if i == 0 or text[i - 1] in " \t\n":
                quote = "#"
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return text.count("\n", 0, i) + 1
        elif ch in "]}":
            depth = max(0, depth - 1)
    if indentation:  # a line (as str.splitlines cuts them) indented deeper, not blank; a
        # compact sequence's "- " indicators count as indentation (YAML 1.2 §8.2.1: "- - x" nests)
        deep = re.search(r"(?:\A|(?<=[%s]))(?: |-(?= )){%d,}[^%s]*?\S" % (_BREAKS, 4 * max_depth + 1, _BREAKS),
                         text)
        if deep is not None:
            return len(text[:deep.start()].splitlines()) + 1
    return None


def check_structure(data: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
                    max_int: int = MAX_INT) -> tuple[Path_, str, str] | None:
    """The first limit a parsed document breaks, as ``(key path, problem, hint)``, or None.

    Limits: nesting depth ``max_depth``, ``max_nodes`` nodes counted through aliases (each
    shared node is expanded as often as it is referenced, as a consumer would), integers of
    magnitude at most ``max_int``, floats finite (JSON has no NaN or infinity, and
    :func:`json_loads` refuses them too). Linear in the distinct nodes (sizes memoised by identity).
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, Path_, bool]] = [(data, (), False)]
    while stack:
        node, path, done = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int):
            if abs(node) > max_int:
                return (path, f"integer {str(node)[:12]}… is out of range (at most {max_int})",
                        "use a smaller number")
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                return (path, f"{node!r} is not a finite number (YAML .nan/.inf, TOML nan/inf): no "
                        "system clusterstack declares to takes it, and NaN never equals itself, so a "
                        "plan would always show a change", "write a number, or quote it if it is text")
            continue
        if not isinstance(node, (dict, list, tuple)):
            continue
        children = list(node.values()) if isinstance(node, dict) else list(node)
        if done:
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
            if sizes[id(node)] > max_nodes:
                return (path, f"the document expands to more than {max_nodes} values",
                        "remove repeated aliases or split the file")
            continue
        if id(node) in sizes:
            continue
        if len(path) >= max_depth:
            return (path, f"nested more than {max_depth} levels deep", "flatten the structure")
        stack.append((node, path, True))
        keys = list(node) if isinstance(node, dict) else range(len(node))
        for key, child in zip(keys, children):
            if isinstance(child, (dict, list, tuple, int, float)) and id(child) not in sizes:
                stack.append((child, (*path, key if isinstance(key, (str, int)) else str(key)), False))
    return None


_LONG_DIGITS = re.compile(r"\d{4000,}")


def _unparsable(exc: Exception, text: str, path: Path, error: type[ClusterstackError]) -> ClusterstackError:
    # The parsers' failures without a line: Python refuses to convert an integer of more than
    # 4300 digits (ValueError), a nesting the pre-scan missed exhausts the stack (RecursionError).
    # (The YAML constructors turn a bad date or integer into a located error themselves,
    # yamltext._MarkedValues; this is the rest.) Only a run of digits is called an integer.
    if isinstance(exc, RecursionError):
        return error(f"nested more than {MAX_DEPTH} levels deep", "flatten the structure", file=path)
    if m := _LONG_DIGITS.search(text):
        return error(f"integer out of range (at most {MAX_INT})", "use a smaller number", file=path,
                     line=_line_col(text, m.start())[0])
    return error(f"a value could not be read ({str(exc)[:80]})", "fix the value", file=path)
