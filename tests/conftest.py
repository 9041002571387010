"""Shared fixtures: the repository root and a throw-away copy of the workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def workspace_copy(tmp_path: Path) -> Path:
    """A copy of clusterstack.toml, clusters/, infra/ and the [projects] dirs in a temp dir
    (safe to edit)."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    shutil.copytree(REPO / "clusters", root / "clusters")
    shutil.copytree(REPO / "infra", root / "infra", ignore=shutil.ignore_patterns("__pycache__"))
    from clusterstack.workspace import Workspace  # and every [projects] project (buckets/, github/)
    for ref in Workspace.load(REPO).projects:
        shutil.copytree(ref.directory, root / ref.directory.relative_to(REPO),
                        ignore=shutil.ignore_patterns("__pycache__"))
    return root


from regen_golden import EXAMPLE_STACKS  # noqa: E402  (the three shipped example stacks)


@pytest.fixture(scope="session")
def example_plans():
    """Offline plans of the three shipped example stacks, by stack name (planned once per run:
    importing the Pulumi providers costs seconds, each further stack milliseconds)."""
    from clusterstack.plan import plan_stack

    return {stack: plan_stack(REPO / "infra", stack) for stack in EXAMPLE_STACKS}
