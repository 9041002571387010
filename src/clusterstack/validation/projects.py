"""The ``[projects]`` projects: each checked with the loader of its DECLARED kind
(``[projects.<key>] kind``), never guessed from its ``__main__.py`` — so ``validate`` and
``plan`` take the same reviewed file the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection

from clusterstack.config.github import load_github
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.validation.buckets import load_buckets
from clusterstack.workspace import Project, Workspace
from clusterstack.validation.identities import bucket_identity_problems

#: Project kind → (the loader of the reviewed file its stacks name with ``<project>:file``,
#: the usual file name for hints). The cluster kind's stacks are the reviewed clusters.
DOCUMENT_LOADERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "buckets": (load_buckets, "buckets.yaml"),
    "github": (load_github, "github.yaml"),
}


def load_project_document(project: Project, path: Path) -> Any:
    """Load the reviewed file ``path`` of ``project`` with its kind's loader. Raises
    ConfigError (located) for an invalid file."""
    loader, _example = DOCUMENT_LOADERS[project.kind]
    return loader(path)


def project_problems(ws: Workspace) -> tuple[int, list[Problem]]:
    """Check every ``[projects]`` project: ``Pulumi.yaml``, each stack file's ``<project>:file``
    key and the reviewed file it names (each file once), and that every bucket has one owner
    across the buckets projects' stacks (:func:`~clusterstack.validation.identities.bucket_identity_problems`).
    Returns (files checked, problems)."""
    files, owners, problems = _project_documents(ws)
    problems += bucket_identity_problems(owners, ws.root)
    return files, problems


def plan_bucket_problems(ws: Workspace, stacks: Collection[tuple[Path, str]]) -> list[Problem]:
    """What ``plan`` refuses of the ``[projects]`` stacks ``stacks`` (``(project directory,
    stack)``) beyond each one's own file: a bucket (or a whole buckets file) that one of them
    and another buckets stack both own — :func:`~clusterstack.validation.identities.bucket_identity_problems`,
    the rule ``validate`` applies, reported where one of the two stacks is selected. Every
    buckets stack is read for its claims; a file that does not load claims nothing."""
    keys = {p.directory: p.key for p in ws.projects if p.kind == "buckets"}
    selected = {f"{keys[d]}/{stack}" for d, stack in stacks if d in keys}
    if not selected:
        return []
    _files, owners, _problems = _project_documents(ws)
    return bucket_identity_problems(owners, ws.root, only=selected)


def _project_documents(ws: Workspace) -> tuple[int, list[tuple[str, Path, Path, Any]], list[Problem]]:
    """Every ``[projects]`` stack's reviewed file, loaded once: (files checked, the buckets
    stacks as ``(<key>/<stack>, stack file, buckets file, config)``, problems)."""
    problems: list[Problem] = []
    seen: set[Path] = set()
    buckets: list[tuple[str, Path, Path, Any]] = []   # every stack's buckets file, for its owners
    loaded: dict[Path, Any] = {}
    for project in ws.projects:
        try:
            info = project.info()
        except ClusterstackError as exc:
            problems.extend(exc.problems)
            continue
        _loader, example = DOCUMENT_LOADERS[project.kind]
        for stack in info.stacks():
            try:
                path = ws.confined(info.document_of(stack, example),
                                   what=f"{info.name}:file of stack {stack!r}",
                                   file=info.stack_file(stack), line=1, field="config")
            except ClusterstackError as exc:
                problems.extend(exc.problems)
                continue
            if path not in seen:
                seen.add(path)
                try:
                    loaded[path] = load_project_document(project, path)
                except ClusterstackError as exc:
                    problems.extend(exc.problems)
            if project.kind == "buckets" and path in loaded:
                buckets.append((f"{project.key}/{stack}", info.stack_file(stack), path, loaded[path]))
    return len(seen), buckets, problems
