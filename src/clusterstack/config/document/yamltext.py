"""Step 3 for YAML: text → structure (ruamel.yaml: the C safe loader on the happy path, the
round-trip loader to locate), with what a reviewed YAML file must not hold refused before
parsing (depth, invisible characters, a ``%YAML`` other than 1.2, tags) or while a mapping
is built (merge keys)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from _ruamel_yaml import CParser  # ruamel.yaml.clib: the C parser of the safe loader
from ruamel.yaml import YAML
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.resolver import VersionedResolver

from clusterstack.config.document.limits import MAX_DEPTH, MAX_INT, _nesting_line, _refuse_invisible, _unparsable
from clusterstack.errors import ClusterstackError, ConfigError


class _OneVersionResolver(VersionedResolver):
    """ruamel's resolver with the YAML version looked up once per load, for the C loader.

    ``VersionedResolver.resolve`` asks ``processing_version`` and ``versioned_resolver`` (two
    property look-ups through ``try``/``except AttributeError``) for every scalar (ruamel.yaml
    0.19.1 ``resolver.py:352-390``). Under the C parser the answer cannot change within a
    load: the combined C loader has no Python scanner, so the version is always the loader's
    own or YAML 1.2 (a ``%YAML`` directive of another version is refused before, :func:`parse_yaml`). Asked
    once: ~20 % of the CPU of parsing a 473 kB cluster file (bench/scale_bench.py ``parse_s``).
    """

    _one_version: Any
    _one_resolver: Any

    @property
    def processing_version(self) -> Any:
        try:
            return self._one_version
        except AttributeError:
            self._one_version = super().processing_version
            return self._one_version

    @property
    def versioned_resolver(self) -> Any:
        try:
            return self._one_resolver
        except AttributeError:
            self._one_resolver = super().versioned_resolver
            return self._one_resolver


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


class _BadValue(ConstructorError):
    """A scalar the YAML reader resolved to a type but could not build (a date that does not
    exist, an integer Python refuses to convert), with the scalar's mark and what to do."""

    def __init__(self, problem: str, hint: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)
        self.hint = hint


_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_INT_TAG = "tag:yaml.org,2002:int"


class _MarkedValues:
    """Give a scalar that cannot be built its line (mixed into both constructors).

    ruamel builds a plain scalar matching its timestamp pattern (``\\d{4}-\\d\\d?-\\d\\d?…``,
    ruamel.yaml 0.19.1 ``util.py`` ``timestamp_regexp``) with ``datetime.date``/``datetime``,
    and an integer with ``int()`` (``constructor.py:447``, ``:532``, ``:1006``, ``:1655``):
    ``2027-02-30`` or ``2027-13-31`` and a 4300-digit integer raise a bare ValueError
    without a mark. Here the ValueError becomes a :class:`_BadValue` at the scalar's mark.
    """

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        try:
            return super().construct_yaml_timestamp(node, values)  # type: ignore[misc]
        except ValueError:
            value = str(node.value)
            if len(value) <= 10:
                raise _BadValue(f"{value[:40]!r} is not a real date (YYYY-MM-DD)",
                                "write a date that exists, e.g. 2027-02-28 (quote it if it is text)",
                                node.start_mark) from None
            raise _BadValue(f"{value[:40]!r} is not a real date and time (YYYY-MM-DD HH:MM:SS)",
                            "write a date and time that exist (quote it if it is text)",
                            node.start_mark) from None

    def construct_yaml_int(self, node: Any) -> Any:
        try:
            return super().construct_yaml_int(node)  # type: ignore[misc]
        except ValueError:
            raise _BadValue(f"integer {str(node.value)[:12]}… is out of range (at most {MAX_INT})",
                            "use a smaller number", node.start_mark) from None


class _SafeConstructor(_MarkedValues, _NoMergeKeys, SafeConstructor):
    pass


class _RoundTripConstructor(_MarkedValues, _NoMergeKeys, RoundTripConstructor):
    pass


for _constructor in (_SafeConstructor, _RoundTripConstructor):  # ruamel registers functions, not names
    _constructor.add_constructor(_TIMESTAMP_TAG, _constructor.construct_yaml_timestamp)
    _constructor.add_constructor(_INT_TAG, _constructor.construct_yaml_int)


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


def _yaml_error(exc: YAMLError, path: Path, error: type[ClusterstackError],
                redact: Callable[[str], str]) -> ClusterstackError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    what = (getattr(exc, "problem", None) or "invalid YAML").strip()
    if isinstance(exc, _BadValue):
        return error(redact(what), exc.hint, file=path, line=mark.line + 1 if mark is not None else None)
    hint = ("remove or rename the repeated key" if "duplicate key" in what else
            "write the merged keys out in this mapping (and drop the anchor if nothing else uses it)"
            if what == _MERGE_PROBLEM else "fix the YAML syntax")
    return error(f"invalid YAML: {redact(what)}", hint, file=path,
                 line=mark.line + 1 if mark is not None else None)


#: A ``%YAML`` directive at the start of a line (directives come before the document's ``---``).
_DIRECTIVE = re.compile(r"^%YAML[ \t]+(?P<version>[^\s#]*)", re.MULTILINE)


def parse_yaml(text: str, path: Path, *, positions: bool = False,
               error: type[ClusterstackError] = ConfigError,
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


def _refuse_tags(text: str, path: Path, error: type[ClusterstackError], redact: Callable[[str], str]) -> None:
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
