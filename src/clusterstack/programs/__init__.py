"""The Pulumi programs: ONE :func:`main` that every project's ``__main__.py`` calls.

``main(project_dir)`` finds the workspace above ``project_dir``, the project declared there
(:meth:`clusterstack.workspace.Workspace.project_at`) and runs the build function of its
declared kind: ``cluster`` → :mod:`clusterstack.programs.cluster`, ``buckets`` →
:mod:`clusterstack.programs.buckets`, ``github`` → :mod:`clusterstack.programs.github`. Each
module has ``build(workspace, project)``; it is imported only when its kind runs, so a
project never imports a provider SDK it does not use.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pulumi

from clusterstack.errors import ClusterstackError
from clusterstack.workspace import PROJECT_FILE_KEY, Workspace, confined

#: Project kind → the module whose ``build(workspace, project)`` declares its stack.
BUILDERS: dict[str, str] = {
    "cluster": "clusterstack.programs.cluster",
    "buckets": "clusterstack.programs.buckets",
    "github": "clusterstack.programs.github",
}


def stack_document(project_dir: Path, example: str, root: Path | None = None) -> Path:
    """Path of the reviewed document named by the current stack's ``<project>:file`` config
    (inside a Pulumi program), relative to ``project_dir``. ``example`` names the usual file
    for the hint. Raises ClusterstackError when the stack config lacks the key, ConfigError
    when the path resolves outside ``root`` (the workspace root; confinement,
    :mod:`clusterstack.workspace.paths`)."""
    name = pulumi.Config().get(PROJECT_FILE_KEY)
    if not name:
        project, stack = pulumi.get_project(), pulumi.get_stack()
        raise ClusterstackError(
            f"stack {stack!r} has no {project}:{PROJECT_FILE_KEY} config",
            f"its Pulumi.{stack}.yaml must contain `{project}:{PROJECT_FILE_KEY}: {example}`")
    if root is not None:
        return confined(project_dir / name, root, what=f"{pulumi.get_project()}:{PROJECT_FILE_KEY}")
    return project_dir / name


def build(project_dir: Path) -> None:
    """Declare every resource of the current stack of the project in ``project_dir``.

    Raises ConfigError when no workspace declares the project, and whatever the kind's build
    raises (missing stack config, invalid reviewed file).
    """
    workspace = Workspace.discover(project_dir)
    project = workspace.project_at(project_dir)
    importlib.import_module(BUILDERS[project.kind]).build(workspace, project)


def main(project_dir: Path) -> None:
    """Entry point for ``__main__.py``: user errors become a Pulumi RunError (no traceback)."""
    try:
        build(project_dir)
    except ClusterstackError as exc:
        raise pulumi.RunError(exc.render()) from None
