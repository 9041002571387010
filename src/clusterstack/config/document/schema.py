"""The model side of the loader: the two bases every reviewed-file model builds on
(:class:`Strict`, :class:`Lenient`) and what is read off a model class — the fields at a key
path, the annotation of a field, and the :func:`shape` of a section (what to add)."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from clusterstack.config.document.paths import Path_

Format = Literal["yaml", "toml"]


class Strict(BaseModel):
    """Sections only clusterstack reads: unknown keys are rejected (``extra="forbid"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, regex_engine="python-re")


class Lenient(BaseModel):
    """Sections shared with other tools (a scheduler's settings): unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, regex_engine="python-re")


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


def _unwrap(tp: Any) -> Any:
    """``Annotated``/``Optional``/union → the member to walk: its model if it has one."""
    while get_origin(tp) is not None and not (isinstance(get_origin(tp), type)
                                              and issubclass(get_origin(tp), (dict, list, tuple))):
        members = [a for a in get_args(tp) if a is not type(None)]
        models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
        tp = models[0] if len(models) == 1 else (members[0] if members and not models else None)
    return tp



def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)
