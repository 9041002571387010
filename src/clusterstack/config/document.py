"""THE loader of every reviewed file: cluster YAML, ``buckets.yaml``, ``github.yaml``,
``services.yaml``, the IAM file, stack files (``Pulumi.<stack>.yaml``, ``Pulumi.yaml``) and
``clusterstack.toml``.

Four steps, each in one place:

1. **bytes** — :func:`read_bytes`: a missing file (or a directory) is a located ConfigError.
2. **text** — :func:`decode`: strict UTF-8; a byte that is not UTF-8 is an error at its line
   and column (exit 2). The hygiene of every file the tool reads (size, control characters)
   belongs here, so every file gets it at once.
3. **structure** — :func:`parse_yaml` (ruamel.yaml: the fast C safe loader on the happy path,
   the round-trip loader — whose nodes know their lines — only to locate an error; duplicate
   keys are an error either way) or :func:`parse_toml` (``tomllib``; one key-line finder,
   :func:`toml_locate`). What only a reviewed YAML/TOML file must not hold is refused here,
   before parsing, not in step 2 (a state or event file may carry a cloud API's text): nesting
   deeper than :data:`MAX_DEPTH`, line separators and bidi controls (:data:`_INVISIBLE`), a
   ``%YAML`` directive other than 1.2; merge keys while a mapping is built.
4. **model** — :meth:`Document.validate`: pydantic validation, then optional cross-field rules
   (pure functions returning :class:`~clusterstack.errors.FieldError` rows); every problem of a
   file is reported at once as ``file:line: field: problem — hint`` (:class:`ConfigError`).

Models build on :class:`Strict` (unknown keys rejected: a section only clusterstack reads) or
:class:`Lenient` (unknown keys ignored: a section shared with another tool), and on the
constrained types of :mod:`clusterstack.config.types`. Both bases validate ``pattern``
constraints with Python's ``re`` (``regex_engine="python-re"``), so every pattern is written
``\\A…\\Z`` — ``$`` would match before a trailing newline.
"""

from __future__ import annotations


import json
import math
import os
import re
import stat
import tomllib
import unicodedata
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Callable, Literal, TypeVar, get_args, get_origin

from _ruamel_yaml import CParser  # ruamel.yaml.clib: the C parser of the safe loader
from pydantic import BaseModel, ConfigDict, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.resolver import VersionedResolver

from clusterstack.errors import ConfigError, FieldError, Problem
from clusterstack.fsutil import file_kind

Path_ = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)
Format = Literal["yaml", "toml"]


class Strict(BaseModel):
    """Sections only clusterstack reads: unknown keys are rejected (``extra="forbid"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, regex_engine="python-re")


class Lenient(BaseModel):
    """Sections shared with other tools (a scheduler's settings): unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, regex_engine="python-re")


# --- hints: one table -------------------------------------------------------------------

HINTS: dict[str, str] = {
    "missing": "add this field",
    "extra_forbidden": "remove it or fix its spelling; {strict}",
    "string_pattern_mismatch": "fix the value's format",
    "too_short": "a list here needs at least one entry; remove the entry instead of emptying it",
    "string_too_long": "shorten it",
}
DEFAULT_HINT = "fix the value"


def hint_for(error: dict[str, Any], *, strict: str) -> str:
    """The hint of one pydantic error (``error["type"]`` and its ``ctx``). ``strict`` says
    which fields of the file are strict (for unknown keys)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if isinstance(ctx.get("hint"), str) and ctx["hint"]:   # a validator that knows what to do
        return ctx["hint"]
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        return "use one of the allowed values" if " or " in expected else "use the allowed value"
    if kind == "union_tag_invalid":
        tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        return f"set {str(ctx.get('discriminator', '')).strip(chr(39))} to {' or '.join(tags)}"
    return HINTS.get(kind, DEFAULT_HINT).format(strict=strict)


# --- step 1 and 2: bytes → text, and the input-hygiene limits -----------------------------

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


def _refuse_invisible(text: str, path: Path, error: type[ConfigError]) -> None:
    if m := _INVISIBLE.search(text):
        line, column = _line_col(text, m.start())
        char = m.group()
        name = unicodedata.name(char, "a C1 control character")
        raise error(f"U+{ord(char):04X} ({name}) at column {column}: it reads as another line or "
                    "another order to some readers than to others", "remove it (or write it as an "
                    "escape inside a quoted string)", file=path, line=line)


def read_bytes(path: Path, *, missing: str = "file not found", missing_hint: str = "check the path",
               error: type[ConfigError] = ConfigError, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path`` (at most ``limit``): THE byte reader of every file the tool reads.

    Only a regular file (or a link to one) is read. A named pipe, a device (``/dev/zero``, a
    terminal), a socket or a directory is refused at once, before a byte is read: a pipe would
    block until a writer comes (``guard`` on a FIFO hung), ``/dev/zero`` never ends. The file
    is opened non-blocking (opening a FIFO without a writer would itself block, ``open(2)``)
    and checked with ``fstat`` on the descriptor read from, so a swap between check and read
    cannot slip a pipe in.

    Raises ``error`` (exit 2) when it is missing, not a regular file, unreadable or larger
    than ``limit``."""
    path = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        raise error(missing, missing_hint, file=path) from None
    except IsADirectoryError:
        raise error("is a directory, not a file", missing_hint, file=path) from None
    except OSError as exc:
        raise error(f"cannot read the file: {exc.strerror or exc}", missing_hint, file=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise error("is a directory, not a file", missing_hint, file=path)
        if not stat.S_ISREG(mode):
            raise error(f"is {file_kind(mode)}, not a regular file: clusterstack reads only files "
                        "(a pipe or a device could block or never end)",
                        "save the input to a file and give its path", file=path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read the file: {exc.strerror or exc}", missing_hint, file=path) from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise error(f"file is larger than {limit // 2**20} MiB", "this is not a config file; "
                    "check the path", file=path)
    return raw


def _line_col(text: str | bytes, index: int) -> tuple[int, int]:
    nl = "\n" if isinstance(text, str) else b"\n"
    line = text.count(nl, 0, index) + 1
    return line, index - (text.rfind(nl, 0, index) + 1) + 1


def decode(raw: bytes, path: Path, *, error: type[ConfigError] = ConfigError,
           limit: int = MAX_BYTES) -> str:
    """``raw`` as UTF-8 text, the hygiene every file the tool reads gets: at most ``limit``
    bytes, strict UTF-8 (a leading byte-order mark dropped), no control character but tab, LF
    and CR. Raises ``error`` at the line (and column) of the first offending byte."""
    if len(raw) > limit:
        raise error(f"file is larger than {limit // 2**20} MiB", "this is not a config file; "
                    "check the path", file=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_col(raw, exc.start)
        raise error(f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column}",
                    "save the file as UTF-8", file=path, line=line) from None
    text = text.removeprefix("\ufeff")
    if m := _CONTROL.search(text):
        line, column = _line_col(text, m.start())
        raise error(f"control character U+{ord(m.group()):04X} at column {column}",
                    "remove it (only tab, newline and carriage return are allowed)",
                    file=path, line=line)
    return text


def read_text(path: Path, **kwargs: Any) -> str:
    """:func:`read_bytes` then :func:`decode` (``error``, ``limit`` and the missing-file
    wording as :func:`read_bytes`)."""
    error, limit = kwargs.get("error", ConfigError), kwargs.get("limit", MAX_BYTES)
    return decode(read_bytes(path, **kwargs), path, error=error, limit=limit)


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


def parse_json(text: str, path: Path, *, error: type[ConfigError] = ConfigError,
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


# --- step 3: text → structure -------------------------------------------------------------

def _asked_once(attr: str, prop: property) -> property:
    """``prop`` computed on first access and kept on the instance under ``attr``."""
    def get(self: Any) -> Any:
        try:
            return getattr(self, attr)
        except AttributeError:
            value = prop.fget(self)  # type: ignore[misc]
            setattr(self, attr, value)
            return value
    return property(get)


class _OneVersionResolver(VersionedResolver):
    """ruamel's resolver with the YAML version looked up once per load, for the C loader.

    ``VersionedResolver.resolve`` asks ``processing_version`` and ``versioned_resolver`` (two
    property look-ups through ``try``/``except AttributeError``) for every scalar (ruamel.yaml
    0.19.1 ``resolver.py:352-390``). Under the C parser the answer cannot change within a
    load: the combined C loader has no Python scanner, so the version is always the loader's
    own or YAML 1.2 (a ``%YAML`` directive of another version is refused before, :func:`parse_yaml`). Asked
    once: ~20 % of the CPU of parsing a 473 kB cluster file (bench/scale_bench.py ``parse_s``).
    """

    processing_version = _asked_once("_one_version", VersionedResolver.processing_version)
    versioned_resolver = _asked_once("_one_resolver", VersionedResolver.versioned_resolver)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_MERGE_PROBLEM = "a merge key `<<` (YAML 1.1, not YAML 1.2)"


class _NoMergeKeys:
    """Refuse a ``<<`` merge key wherever a mapping is built (mixed into both constructors).

    Merge keys are a YAML 1.1 type (yaml.org/type/merge.html) that YAML 1.2 dropped, yet
    ruamel's constructors honour them in every mode (``flatten_mapping``, ruamel.yaml 0.19.1
    ``constructor.py:356-380``, ``1226-1292``): a merged value is invisible where a reviewer
    reads the mapping, a strict section would take keys nobody checked by line, and locating an
    error inside a merged mapping failed (the key is not the mapping's own). So a reviewed file
    writes its keys out; the error is at the ``<<``'s line.
    """

    def flatten_mapping(self, node: Any) -> Any:
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                raise ConstructorError(None, None, _MERGE_PROBLEM, key_node.start_mark)
        return super().flatten_mapping(node)  # type: ignore[misc]


class _SafeConstructor(_NoMergeKeys, SafeConstructor):
    pass


class _RoundTripConstructor(_NoMergeKeys, RoundTripConstructor):
    pass


# Anywhere but a key, ``<<`` is the plain string YAML 1.2's core schema makes of it (ruamel would
# hand over a TaggedScalar, which no model accepts).
_SafeConstructor.add_constructor(_MERGE_TAG, SafeConstructor.construct_yaml_str)
_RoundTripConstructor.add_constructor(_MERGE_TAG, RoundTripConstructor.construct_yaml_str)


def _yaml(positions: bool) -> YAML:
    yaml = YAML(typ="rt" if positions else "safe")
    yaml.allow_duplicate_keys = False
    if positions:
        yaml.Constructor = _RoundTripConstructor
    else:
        yaml.Resolver = _OneVersionResolver
        yaml.Constructor = _SafeConstructor
    return yaml


def _yaml_error(exc: YAMLError, path: Path, error: type[ConfigError],
                redact: Callable[[str], str]) -> ConfigError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    what = (getattr(exc, "problem", None) or "invalid YAML").strip()
    hint = ("remove or rename the repeated key" if "duplicate key" in what else
            "write the merged keys out in this mapping (and drop the anchor if nothing else uses it)"
            if what == _MERGE_PROBLEM else "fix the YAML syntax")
    return error(f"invalid YAML: {redact(what)}", hint, file=path,
                 line=mark.line + 1 if mark is not None else None)


#: A ``%YAML`` directive at the start of a line (directives come before the document's ``---``).
_DIRECTIVE = re.compile(r"^%YAML[ \t]+(?P<version>[^\s#]*)", re.MULTILINE)


def parse_yaml(text: str, path: Path, *, positions: bool = False,
               error: type[ConfigError] = ConfigError,
               redact: Callable[[str], str] = str) -> Any:
    """Parse YAML ``text``. ``positions=False``: the fast C safe loader (plain dicts and lists);
    ``positions=True``: the round-trip loader (nodes carry their lines, comments kept). Both
    reject duplicate keys. When the safe loader (libyaml, YAML 1.1) refuses YAML 1.2 that the
    round-trip parser reads — a ``:`` inside a flow-style plain scalar, ``[group:a@x.org]`` —
    the round-trip parse decides. Raises ``error`` with the line (messages through ``redact``).

    Every reviewed file is YAML 1.2. A ``%YAML`` directive naming another version is refused
    at its line: the C loader ignores the directive (it reads 1.2 whatever it says) while the
    round-trip parser honours it (``yes`` a boolean, ``010`` octal under 1.1), so such a file
    would mean one thing to the plan and another to whoever reads it as 1.1.
    """
    if (line := _nesting_line(text, MAX_DEPTH)) is not None:
        raise error(f"nested more than {MAX_DEPTH} levels deep", "flatten the structure",
                    file=path, line=line)
    _refuse_invisible(text, path, error)
    if (m := _DIRECTIVE.search(text)) is not None and m["version"] != "1.2":
        raise error(f"YAML {redact(m['version'])[:20]} directive: reviewed files are YAML 1.2",
                    "remove the %YAML line (or write %YAML 1.2)", file=path,
                    line=text.count("\n", 0, m.start()) + 1)
    if "!" in text:  # a tag needs a '!': the common file without one pays nothing
        _refuse_tags(text, path, error, redact)
    try:
        return _yaml(positions).load(text)
    except MarkedYAMLError as exc:
        first = exc
    except YAMLError as exc:
        raise _yaml_error(exc, path, error, redact) from None
    except (ValueError, RecursionError) as exc:
        raise _unparsable(exc, text, path, error) from None
    if positions or "duplicate key" in (first.problem or ""):
        raise _yaml_error(first, path, error, redact) from None
    try:
        return _yaml(True).load(text)
    except (YAMLError, ValueError, RecursionError):
        raise _yaml_error(first, path, error, redact) from None


#: The tags a reviewed file may write explicitly: YAML 1.2's core schema (§10.3: ``!!str``,
#: ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!map``, ``!!seq``) and the non-specific
#: ``!`` (a quoted-like string).
_CORE_TAGS = frozenset({None, "!", *(f"tag:yaml.org,2002:{t}" for t in
                                      ("str", "int", "float", "bool", "null", "map", "seq"))})


def _refuse_tags(text: str, path: Path, error: type[ConfigError], redact: Callable[[str], str]) -> None:
    """Refuse, at its line, any explicit tag beyond :data:`_CORE_TAGS`: ``!!binary`` (bytes a
    reviewer reads as base64 — ``[!!binary MC4wLjAuMC8w]`` is ``0.0.0.0/0``), ``!!set``,
    ``!!omap``, ``!!timestamp``, ``!!python/…`` and every custom ``!tag``: YAML 1.1 types and
    application tags make a value mean one thing to the tool and another to whoever reviews the
    text. Read from the parser's events (libyaml's, or ruamel's own parser for YAML it alone
    reads); a syntax error is left to the loader to report."""
    def events():
        try:
            parser = CParser(text)
            while (ev := parser.get_event()) is not None:
                yield ev
                if type(ev).__name__ == "StreamEndEvent":
                    return
        except YAMLError:
            yield from YAML(typ="rt").parse(text)

    try:
        for ev in events():
            tag = getattr(ev, "tag", None)
            if tag in _CORE_TAGS or type(ev).__name__ not in ("ScalarEvent", "SequenceStartEvent",
                                                             "MappingStartEvent"):
                continue
            shown = str(tag).replace("tag:yaml.org,2002:", "!!", 1)
            raise error(f"the YAML tag {redact(shown)[:40]!r}: reviewed files hold plain YAML 1.2 values "
                        "(a tag makes the tool read a value other than the text a reviewer reads)",
                        "remove the tag and write the value itself (quote it if it is text)",
                        file=path, line=ev.start_mark.line + 1)
    except YAMLError:
        return   # not YAML: the loader reports the syntax error at its line


_LONG_DIGITS = re.compile(r"\d{4000,}")


def _unparsable(exc: Exception, text: str, path: Path, error: type[ConfigError]) -> ConfigError:
    # The parsers' non-YAML failures: Python refuses to convert an integer of more than 4300
    # digits (ValueError), a nesting the pre-scan missed exhausts the stack (RecursionError).
    if isinstance(exc, RecursionError):
        return error(f"nested more than {MAX_DEPTH} levels deep", "flatten the structure", file=path)
    m = _LONG_DIGITS.search(text)
    return error(f"integer out of range (at most {MAX_INT})", "use a smaller number", file=path,
                 line=_line_col(text, m.start())[0] if m else None)


_TOML_AT = re.compile(r"\(at line (?P<line>\d+), column \d+\)")


def parse_toml(text: str, path: Path, *, error: type[ConfigError] = ConfigError) -> dict[str, Any]:
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


# --- locating a key path in a YAML document -------------------------------------------------

def locate(doc: Any, path: Path_) -> tuple[Path_, int | None]:
    """Walk ``path`` through a ruamel round-trip document.

    Returns ``(path_in_document, line)``; lines are 1-based. Rules:

    - a part naming an existing key or list item is followed (the line becomes that key's);
    - union tags pydantic adds to an error's location are dropped: a discriminator value
      that is not the last part (``DELETE`` when the node has ``action: DELETE``), the member
      tags of a smart union (``str``, ``literal['X']``), which appear below a scalar, and the
      ``[key]`` marker of an invalid mapping key (the line is the key's);
    - from the first key missing from the document on (a required field that is absent, or
      an optional section a cross-check needs), the rest of the path is kept as given and the
      line is that of the nearest existing ancestor.
    """
    node, kept, line = doc, [], (doc.lc.line + 1 if hasattr(doc, "lc") else None)
    missing = False
    for i, part in enumerate(path):
        if missing:
            kept.append(part)
        elif part == "[key]":
            continue
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1 if hasattr(node, "lc") else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            line = node.lc.key(part)[0] + 1 if hasattr(node, "lc") else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and i < len(path) - 1 and part in {
                v for v in node.values() if isinstance(v, str)}:
            continue  # discriminated-union tag (the discriminator's value), always followed by a field
        elif isinstance(part, str) and node is not None and not isinstance(node, dict):
            continue  # smart-union member tag below a scalar or list
        else:
            missing = True
            kept.append(part)
    return tuple(kept), line


def format_path(path: Path_) -> str:
    """``("a", "b", 0, "c")`` → ``a.b[0].c``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _fields_at(model: type[BaseModel], path: Path_) -> list[str] | None:
    """The field names of the model reached by walking ``path`` from ``model`` (None when the
    path leaves the models)."""
    tp = _unwrap(_walk(model, path))
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return sorted(tp.model_fields)
    return None


def _walk(model: type[BaseModel], path: Path_) -> Any:
    """The annotation reached by walking ``path`` (field names, dict keys, list indexes) from
    ``model``; None when the path leaves the models."""
    tp: Any = model
    for part in path:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            f = tp.model_fields.get(part)
            if f is None:
                return None
            tp = f.annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        elif get_origin(tp) in (list, tuple):
            tp = get_args(tp)[0]
        else:
            return None
    return tp


def _annotation_at(model: type[BaseModel], path: Path_) -> Any:
    """The annotation of the field at ``path`` (None when the path leaves the models)."""
    if not path or not isinstance(path[-1], str):
        return None
    tp = _walk(model, path[:-1])
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        f = tp.model_fields.get(path[-1])
        return f.annotation if f is not None else None
    return None


def _placeholder(tp: Any) -> str:
    """A field's value in a :func:`shape`: ``<a | b>`` for a Literal, ``[<…>, …]`` for a list,
    ``<true | false>`` for a bool, ``<number>`` / ``<text>``, else ``…``."""
    while get_origin(tp) is not None and get_origin(tp) not in (Literal, list, tuple, dict) \
            and not (isinstance(get_origin(tp), type) and issubclass(get_origin(tp), (list, tuple, dict))):
        members = [a for a in get_args(tp) if a is not type(None)]
        if get_origin(tp) is not None and len(members) > 1 and all(get_origin(m) is Literal for m in members):
            return "<" + " | ".join(str(v) for m in members for v in get_args(m)) + ">"
        tp = members[0] if members else None
    if get_origin(tp) is Literal:
        return "<" + " | ".join(str(v) for v in get_args(tp)) + ">"
    if get_origin(tp) in (list, tuple):
        return f"[{_placeholder(get_args(tp)[0])}, …]"
    if get_origin(tp) is dict:
        return "{<name>: …}"
    if tp is bool:
        return "<true | false>"
    if isinstance(tp, type) and issubclass(tp, (int, float)):
        return "<number>"
    if tp is str:
        return "<text>"
    return "…"


def shape(name: str, tp: Any, *, format: Format = "yaml", depth: int = 3, indent: str = "  ") -> str:
    """The shape of a section ``name`` of type ``tp`` (a model, or a field's annotation) as
    the lines to add: the model's *required* fields, nested models expanded ``depth`` levels
    deep (``{...}`` below), values as :func:`_placeholder`s — derived from the model, so it
    cannot drift from what is accepted. ``format``: ``yaml`` (``name:`` and indented keys) or
    ``toml`` (``[name]`` tables, ``key = value``). Each line starts with ``indent``."""
    model = _unwrap(tp)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return f"{indent}{name}: {_placeholder(tp)}" if format == "yaml" else f"{indent}{name} = {_placeholder(tp)}"
    lines: list[str] = []

    def required(m: type[BaseModel]) -> list[tuple[str, Any]]:
        return [(f.alias or k, f.annotation) for k, f in m.model_fields.items() if f.is_required()]

    def yaml_of(m: type[BaseModel], pad: str, left: int) -> None:
        for key, ann in required(m):
            sub = _unwrap(ann)
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                if left <= 0 or not required(sub):
                    lines.append(f"{pad}{key}: {{...}}")
                else:
                    lines.append(f"{pad}{key}:")
                    yaml_of(sub, pad + "  ", left - 1)
            else:
                lines.append(f"{pad}{key}: {_placeholder(ann)}")

    def toml_of(m: type[BaseModel], table: str, left: int) -> None:
        lines.append(f"{indent}[{table}]")
        subs = []
        for key, ann in required(m):
            sub = _unwrap(ann)
            if isinstance(sub, type) and issubclass(sub, BaseModel) and left > 0:
                subs.append((key, sub))
            else:
                value = _placeholder(ann)
                lines.append(f"{indent}{key} = {chr(34) + value + chr(34) if value == '<text>' else value}")
        for key, sub in subs:
            toml_of(sub, f"{table}.{key}", left - 1)

    if format == "toml":
        toml_of(model, name, depth)
    else:
        lines.append(f"{indent}{name}:")
        yaml_of(model, indent + "  ", depth)
    return "\n".join(lines)


def _plain_message(error: dict[str, Any], message: str) -> str:
    """A pydantic message in the reviewed file's words: a pattern's rule instead of its
    regex, "a list" instead of "a valid tuple" (no regexes or class names in errors)."""
    from clusterstack.config.types import PATTERN_RULES

    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        rule = PATTERN_RULES.get(str(ctx.get("pattern", "")))
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "…"
        return f"{shown} is not {rule}" if rule else f"{shown} is not in the expected format"
    if kind in ("tuple_type", "list_type", "set_type", "frozen_set_type"):
        return "must be a list"
    if kind == "is_instance_of":
        return "has the wrong type"
    return message


# --- near-miss keys in lenient sections ------------------------------------------------------

def _distance(a: str, b: str) -> int:
    """Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours)."""
    prev2, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if prev2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def near_miss(key: str, candidates: list[str]) -> str | None:
    """The key among ``candidates`` that ``key`` is most likely a typo of, or None.

    A near miss is within edit distance 2 (1 for keys under 5 characters: ``instance_typ``,
    ``scale_group``), or has the same ``_``-separated shape and first word (``num_nodes`` for
    ``num_vms``, ``max_nodes`` for ``max_slices``). Checked against Marin's cluster configs
    (../shared/reference/marin/lib/iris/config): none of their scheduler keys is a near miss.
    """
    best: tuple[int, str] | None = None
    for cand in candidates:
        d = _distance(key.lower(), cand)
        limit = 1 if len(cand) < 5 else 2
        words, cwords = key.lower().split("_"), cand.split("_")
        shaped = len(words) == len(cwords) > 1 and words[0] == cwords[0]
        if (d <= limit or shaped) and (best is None or d < best[0]):
            best = (d, cand)
    return best[1] if best else None


def _unwrap(tp: Any) -> Any:
    """``Annotated``/``Optional``/union → the member to walk: its model if it has one."""
    while get_origin(tp) is not None and not (isinstance(get_origin(tp), type)
                                              and issubclass(get_origin(tp), (dict, list, tuple))):
        members = [a for a in get_args(tp) if a is not type(None)]
        models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
        tp = models[0] if len(models) == 1 else (members[0] if members and not models else None)
    return tp


def near_misses(model: type[BaseModel], data: Any, path: Path_ = ()) -> list[FieldError]:
    """Unknown keys of the :class:`Lenient` sections of ``data`` (validated as ``model``)
    that are a near miss (:func:`near_miss`) of a key the model reads and the section lacks.

    Lenient sections keep other tools' keys, so an unknown key is allowed — but a typo of a
    key clusterstack reads silently drops it (``instance_typ:`` → no NodePool instance type,
    zero GPU quota). Strict sections already reject every unknown key. Each error's path is
    the typo itself, so it is reported at its line.
    """
    errs: list[FieldError] = []
    if not (isinstance(model, type) and issubclass(model, BaseModel)) or not isinstance(data, dict):
        return errs
    known, lenient, walks = _walk_plan(model)
    if lenient:
        absent = sorted(known - set(data))
        for key in data:
            if isinstance(key, str) and key not in known and (match := near_miss(key, absent)):
                errs.append(FieldError((*path, key), f"unknown key {key!r} — did you mean {match!r}?",
                                       f"rename it to {match}:"))
    for key, kind, inner in walks:
        if key not in data:
            continue
        value = data[key]
        if kind == "model":
            errs += near_misses(inner, value, (*path, key))
        elif kind == "dict" and isinstance(value, dict):
            for k, v in value.items():
                errs += near_misses(inner, v, (*path, key, k))
        elif kind == "list" and isinstance(value, list):
            for i, v in enumerate(value):
                errs += near_misses(inner, v, (*path, key, i))
    return errs


@cache
def _walk_plan(model: type[BaseModel]) -> tuple[frozenset[str], bool, tuple[tuple[str, str, Any], ...]]:
    """What :func:`near_misses` needs of ``model``, worked out once per model class: the keys it
    reads (names and aliases), whether it ignores unknown keys (a :class:`Lenient` section),
    and ``(key, kind, inner model)`` for each field that holds models — ``kind`` ``model``,
    ``dict`` (a mapping of them) or ``list`` (a list or tuple of them). A scale group is
    walked for every entry of a 2,000-group file, so the typing introspection is not."""
    fields = model.model_fields
    known = frozenset(set(fields) | {f.alias for f in fields.values() if f.alias})
    walks: list[tuple[str, str, Any]] = []
    for name, f in fields.items():
        tp = _unwrap(f.annotation)
        origin = get_origin(tp)
        kind, inner = (("model", tp) if _is_model(tp) else
                       ("dict", _unwrap(get_args(tp)[1])) if origin is dict else
                       ("list", _unwrap(get_args(tp)[0])) if origin in (list, tuple) else ("", None))
        if _is_model(inner):  # a mapping or list of plain values holds no section to walk
            walks.append((f.alias or name, kind, inner))
    return known, model.model_config.get("extra") == "ignore", tuple(walks)


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


# --- the document -----------------------------------------------------------------------------

@dataclass
class Document:
    """One reviewed file: its ``text``, the parsed ``data`` (plain dicts/lists) and, on demand,
    the positions of its keys. ``redact`` is applied to every message (the IAM file's errors
    quote members: CI logs are public); ``error`` is the ConfigError subclass raised."""

    path: Path
    text: str
    data: Any
    format: Format = "yaml"
    error: type[ConfigError] = ConfigError
    redact: Callable[[str], str] = str
    _positioned: list[Any] = field(default_factory=list, repr=False)

    @classmethod
    def parse(cls, text: str, path: Path, *, format: Format | None = None,
              error: type[ConfigError] = ConfigError, redact: Callable[[str], str] = str) -> "Document":
        """A document from ``text`` already read (``path`` labels errors)."""
        fmt: Format = format or ("toml" if Path(path).suffix == ".toml" else "yaml")
        data = (parse_toml(text, path, error=error) if fmt == "toml"
                else parse_yaml(text, path, error=error, redact=redact))
        doc = cls(path=Path(path), text=text, data=data, format=fmt, error=error, redact=redact)
        if (broken := check_structure(data)) is not None:
            at, problem, fix = broken
            raise error(problems=[doc.problem(at, problem, fix)])
        return doc

    @classmethod
    def read(cls, path: Path, *, format: Format | None = None, missing: str = "file not found",
             missing_hint: str = "check the path", error: type[ConfigError] = ConfigError,
             redact: Callable[[str], str] = str) -> "Document":
        """Read, decode and parse ``path``. Raises ``error`` (missing, not UTF-8, bad syntax)."""
        text = read_text(path, missing=missing, missing_hint=missing_hint, error=error)
        return cls.parse(text, path, format=format, error=error, redact=redact)

    @property
    def positioned(self) -> Any:
        """The round-trip parse (YAML: nodes know their lines; comments kept) — parsed once, on
        first use, normally only to locate an error."""
        if not self._positioned:
            self._positioned.append(parse_yaml(self.text, self.path, positions=True,
                                               error=self.error, redact=self.redact))
        return self._positioned[0]

    @cached_property
    def _toml_index(self) -> dict[tuple[str, ...], int]:
        return toml_index(self.text)

    def locate(self, path: Path_) -> tuple[Path_, int | None]:
        """``(path as found, 1-based line)`` of a key path (its nearest existing ancestor's
        line when missing)."""
        if self.format == "toml":
            return toml_locate(self._toml_index, tuple(p for p in path if p != "[key]"))
        return locate(self.positioned, path)

    def line_of(self, path: Path_) -> int | None:
        return self.locate(path)[1]

    def problem(self, path: Path_, message: str, hint: str) -> Problem:
        """A Problem located at key path ``path`` of this file."""
        kept, line = self.locate(path)
        return Problem(message=self.redact(message), hint=hint, file=self.path, line=line,
                       field=format_path(kept))

    def require_mapping(self, message: str = "the file must be a YAML mapping",
                        hint: str = "start from the shipped example") -> dict:
        """``data`` when it is a mapping; raises ``error`` at line 1 otherwise."""
        if not isinstance(self.data, dict):
            raise self.error(message, hint, file=self.path, line=1)
        return self.data

    def validation_problems(self, exc: ValidationError, model: type[BaseModel], *,
                            strict: str | None = None,
                            where: Callable[[Path_, str, str], Problem | None] | None = None
                            ) -> list[Problem]:
        """One located Problem per pydantic error. ``where(path, message, hint)`` may locate a
        path elsewhere (a value filled in from another file) by returning a Problem, or None."""
        strict = strict or f"every field of {self.path.name} is strict"
        out = []
        for e in exc.errors(include_url=False):
            loc = tuple(e["loc"])
            message = e["msg"].removeprefix("Value error, ")
            hint = hint_for(e, strict=strict)
            container = "table" if self.format == "toml" else "mapping"
            if e["type"] in ("model_type", "dict_type", "model_attributes_type"):
                message = f"must be a {container}"
            message = _plain_message(e, message)
            if e["type"] == "missing":   # a whole section: show what to add, from the model
                ann = _annotation_at(model, loc)
                sub = _unwrap(ann) if ann is not None else None
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    name = format_path(loc) if self.format == "toml" else str(loc[-1])
                    hint = "add it, shaped like:\n" + shape(name, sub, format=self.format or "yaml")
            if self.format == "toml" and e["type"] == "extra_forbidden":
                allowed = _fields_at(model, loc[:-1])
                message = (f"unknown table [{format_path(loc)}]" if isinstance(e.get("input"), dict)
                           else f"unknown key {loc[-1]!r}")
                hint = f"allowed keys: {', '.join(allowed)}" if allowed else hint
            located = where(loc, message, hint) if where is not None else None
            out.append(located if located is not None else self.problem(loc, message, hint))
        return out

    def validate(self, model: type[M], *, data: Any = None,
                 cross_checks: Callable[[M], list[FieldError]] | None = None,
                 strict: str | None = None) -> M:
        """Validate ``data`` (default: the parsed document) as ``model``, then run
        ``cross_checks`` on the result. Raises ``error`` listing every problem, located."""
        typos = near_misses(model, self.data if data is None else data)
        try:
            obj = model.model_validate(self.data if data is None else data)
        except ValidationError as exc:
            raise self.error(problems=[self.problem(fe.path, fe.message, fe.hint) for fe in typos]
                             + self.validation_problems(exc, model, strict=strict)) from None
        errors = typos + (cross_checks(obj) if cross_checks else [])
        if errors:
            raise self.error(problems=[self.problem(fe.path, fe.message, fe.hint) for fe in errors])
        return obj


def load_document(path: Path, model: type[M], *,
                  cross_checks: Callable[[M], list[FieldError]] | None = None,
                  missing_hint: str = "check the path") -> M:
    """Read ``path`` and validate it as ``model`` (a YAML or TOML mapping).

    ``cross_checks`` runs on the validated model and returns rules broken across fields, each
    as a FieldError whose ``path`` is a key path in the document. Returns the model.

    Raises ConfigError: the file is missing (``missing_hint``), is not UTF-8 or not YAML/TOML,
    is not a mapping, or fails validation / a cross-check — one located Problem per error.
    """
    doc = Document.read(path, missing_hint=missing_hint)
    doc.require_mapping()
    return doc.validate(model, cross_checks=cross_checks)
