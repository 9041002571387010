"""Near-miss keys in :class:`~clusterstack.config.document.schema.Lenient` sections: a typo of a
key clusterstack reads, in a section that keeps other tools' keys, is an error at its line."""

from __future__ import annotations

from functools import cache
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from clusterstack.config.document.paths import Path_
from clusterstack.config.document.schema import _is_model, _unwrap
from clusterstack.errors import FieldError


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
                # the suggestion once, in the hint: the error line is `<message> — <hint>`
                errs.append(FieldError((*path, key), f"unknown key {key!r}",
                                       f"rename it to {match}: (clusterstack reads that key; "
                                       "this one it would ignore)"))
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
