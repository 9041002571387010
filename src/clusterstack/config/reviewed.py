"""Load a reviewed YAML document other than a cluster config — ``buckets.yaml``,
``github.yaml`` — with the same ``file:line: field: problem — hint`` errors.

The mechanism is the cluster loader's (:mod:`clusterstack.config.loader`): the fast safe
parse on the happy path, pydantic validation, and only on an error the round-trip parse whose
nodes know their lines, walked with :func:`~clusterstack.config.loader.locate`. Rules that
span fields run after validation as pure functions returning
:class:`~clusterstack.errors.FieldError` rows, which are located the same way. Every problem of
a file is reported at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ValidationError

from clusterstack.config.loader import _HINTS, _load_yaml, format_path, locate
from clusterstack.errors import ConfigError, FieldError, Problem

M = TypeVar("M", bound=BaseModel)

PROJECT_FILE_KEY = "file"  # stack config `<project>:file`: the reviewed document a project stack reads


def stack_document(project_dir: Path, example: str) -> Path:
    """Path of the reviewed document named by the current stack's ``<project>:file`` config
    (inside a Pulumi program), relative to ``project_dir``. ``example`` names the usual file
    for the hint. Raises ClusterstackError when the stack config lacks the key."""
    import pulumi

    from clusterstack.errors import ClusterstackError

    name = pulumi.Config().get(PROJECT_FILE_KEY)
    if not name:
        project, stack = pulumi.get_project(), pulumi.get_stack()
        raise ClusterstackError(
            f"stack {stack!r} has no {project}:{PROJECT_FILE_KEY} config",
            f"its Pulumi.{stack}.yaml must contain `{project}:{PROJECT_FILE_KEY}: {example}`")
    return project_dir / name

_DOCUMENT_HINTS = {**_HINTS,
                   "extra_forbidden": "remove it or fix its spelling; every field of this file "
                                      "is strict",
                   "union_tag_invalid": "use one of the allowed values"}


def load_document(path: Path, model: type[M], *,
                  cross_checks: Callable[[M], list[FieldError]] | None = None,
                  missing_hint: str = "check the path") -> M:
    """Parse ``path`` (YAML, duplicate keys rejected) and validate it as ``model``.

    ``cross_checks`` runs on the validated model and returns rules broken across fields, each
    as a FieldError whose ``path`` is a key path in the document. Returns the model.

    Raises ConfigError: the file is missing (``missing_hint``), is not YAML, is not a mapping,
    or fails validation / a cross-check — one located Problem per error.
    """
    if not path.is_file():
        raise ConfigError("file not found", missing_hint, file=path)
    data = _load_yaml(path, positions=False)
    if not isinstance(data, dict):
        raise ConfigError("the file must be a YAML mapping", "start from the shipped example",
                          file=path, line=1)
    positioned: list[Any] = []

    def located(key_path: tuple[str | int, ...], message: str, hint: str) -> Problem:
        if not positioned:
            positioned.append(_load_yaml(path, positions=True))
        kept, line = locate(positioned[0], key_path)
        return Problem(message=message, hint=hint, file=path, line=line, field=format_path(kept))

    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems=[
            located(tuple(e["loc"]), e["msg"].removeprefix("Value error, "),
                    _DOCUMENT_HINTS.get(e["type"], "fix the value"))
            for e in exc.errors(include_url=False)]) from None
    errors = cross_checks(obj) if cross_checks else []
    if errors:
        raise ConfigError(problems=[located(fe.path, fe.message, fe.hint) for fe in errors])
    return obj
