"""THE loader of every reviewed file: cluster YAML, ``buckets.yaml``, ``github.yaml``,
``services.yaml``, the IAM file, stack files (``Pulumi.<stack>.yaml``, ``Pulumi.yaml``) and
``clusterstack.toml``.

Four steps, each in one module of this package (re-exported here: import from
``clusterstack.config.document``):

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

from clusterstack.config.document.jsontext import DuplicateKeyError, json_loads, parse_json
from clusterstack.config.document.limits import (MAX_BYTES, MAX_DEPTH, MAX_INT, MAX_NODES, MAX_STATE_BYTES,
                                                 _nesting_line, check_structure)
from clusterstack.config.document.loader import M, Document, load_document
from clusterstack.config.document.locate import locate
from clusterstack.config.document.messages import DEFAULT_HINT, HINTS, hint_for
from clusterstack.config.document.nearmiss import near_miss, near_misses
from clusterstack.config.document.paths import Path_, format_path
from clusterstack.config.document.read import decode, read_bytes, read_text
from clusterstack.config.document.schema import Format, Lenient, Strict, shape
from clusterstack.config.document.tomltext import parse_toml, toml_index, toml_locate
from clusterstack.config.document.yamltext import parse_yaml

__all__ = ["DEFAULT_HINT", "HINTS", "MAX_BYTES", "MAX_DEPTH", "MAX_INT", "MAX_NODES", "MAX_STATE_BYTES",
           "M", "Document", "DuplicateKeyError", "Format", "Lenient", "Path_", "Strict", "_nesting_line",
           "check_structure", "decode", "format_path", "hint_for", "json_loads", "load_document", "locate",
           "near_miss", "near_misses", "parse_json", "parse_toml", "parse_yaml", "read_bytes", "read_text",
           "shape", "toml_index", "toml_locate"]
