"""Step 4 and the whole: :class:`Document` (one reviewed file: text, data, located problems,
validation) and :func:`load_document`."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from clusterstack.config.document.limits import check_structure
from clusterstack.config.document.locate import locate, without_member_tags
from clusterstack.config.document.messages import _plain_message, hint_for, one_message
from clusterstack.config.document.nearmiss import near_misses
from clusterstack.config.document.paths import Path_, format_path
from clusterstack.config.document.read import read_text
from clusterstack.config.document.schema import Format, _annotation_at, _fields_at, _unwrap, shape
from clusterstack.config.document.tomltext import parse_toml, toml_index, toml_locate
from clusterstack.config.document.yamltext import parse_yaml
from clusterstack.errors import ClusterstackError, ConfigError, FieldError, Problem

M = TypeVar("M", bound=BaseModel)


@dataclass
class Document:
    """One reviewed file: its ``text``, the parsed ``data`` (plain dicts/lists) and, on demand,
    the positions of its keys. ``redact`` is applied to every message (the IAM file's errors
    quote members: CI logs are public); ``error`` is the ClusterstackError subclass raised."""

    path: Path
    text: str
    data: Any
    format: Format = "yaml"
    error: type[ClusterstackError] = ConfigError
    redact: Callable[[str], str] = str
    _positioned: list[Any] = field(default_factory=list, repr=False)

    @classmethod
    def parse(cls, text: str, path: Path, *, format: Format | None = None,
              error: type[ClusterstackError] = ConfigError, redact: Callable[[str], str] = str) -> "Document":
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
             missing_hint: str = "check the path", error: type[ClusterstackError] = ConfigError,
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
                            where: Callable[[Path_, str, str], Problem | None] | None = None,
                            data: Any = None) -> list[Problem]:
        """One located Problem per pydantic error — one per value: the errors of a union's
        members on one value (``StrictInt | StrictFloat``: ``.int`` and ``.float``) are one
        problem at the value's key (:func:`without_member_tags`, :func:`one_message`).
        ``where(path, message, hint)`` may locate a path elsewhere (a value filled in from
        another file) by returning a Problem, or None. ``data``: what was validated
        (default: the parsed document)."""
        strict = strict or f"every field of {self.path.name} is strict"
        data = self.data if data is None else data
        grouped: dict[Path_, list[ErrorDetails]] = {}
        for e in exc.errors(include_url=False):
            grouped.setdefault(without_member_tags(data, tuple(e["loc"])), []).append(e)
        out = []
        for loc, errors in grouped.items():
            e = errors[0]
            if len(errors) > 1:
                e = ErrorDetails({**e, "msg": one_message([x["msg"] for x in errors])})
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
                             + self.validation_problems(exc, model, strict=strict, data=data)) from None
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
