"""The IAM file, offline: it loads, and its ``project:`` is the ``[iam] stack``'s project."""

from __future__ import annotations

from pathlib import Path

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.iam.loader import IamFileError, LoadedIam, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.validation.clusters import load_cluster
from clusterstack.workspace import Workspace


def check_project(loaded: LoadedIam, file: Path, stack: str, project: str) -> None:
    """The IAM file's ``project:`` must be the GCP project of the stack that applies it
    (``[iam] stack``); used by the program and, offline, by ``clusterstack validate``.
    Raises IamFileError located at ``project:``."""
    if loaded.model.project != project:
        raise IamFileError(f"project {loaded.model.project!r} is not the project of stack {stack} "
                           f"({project!r})", "fix project: in the IAM file or [iam] stack in "
                           "clusterstack.toml", file=file, line=loaded.line_of(("project",)),
                           field="project")


def iam_problems(ws: Workspace) -> tuple[bool, list[Problem]]:
    """Check the IAM file when it exists: load it, and when ``[iam] stack`` names a GCP
    cluster whose config loads, compare the projects. Returns (file checked, problems)."""
    s = IamSettings.from_workspace(ws)
    if not s.file.is_file():
        return False, []
    try:
        loaded = load_iam(s.file)
    except ClusterstackError as exc:
        return True, list(exc.problems)
    if s.stack is not None and s.stack in ws.cluster_names():
        try:
            cfg = load_cluster(ws, s.stack, references=False).config
        except ClusterstackError:
            return True, []  # the cluster's own problems are reported with the clusters
        gcp = cfg.provisioning.gcp
        if gcp is not None:
            try:
                check_project(loaded, s.file, s.stack, gcp.project)
            except ClusterstackError as exc:
                return True, list(exc.problems)
    return True, []
