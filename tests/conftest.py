"""Shared fixtures: the repository root and a throw-away copy of the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import REPO


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def workspace_copy(tmp_path: Path) -> Path:
    """A copy of clusterstack.toml, clusters/, infra/ and the [projects] dirs in a temp dir
    (safe to edit)."""
    from helpers import copy_workspace

    return copy_workspace(tmp_path / "ws")


from regen_golden import EXAMPLE_STACKS  # noqa: E402  (the three shipped example stacks)


@pytest.fixture(scope="session")
def example_plans():
    """Offline plans of the three shipped example stacks, by stack name (planned once per run:
    importing the Pulumi providers costs seconds, each further stack milliseconds)."""
    from clusterstack.plan import plan_stack

    return {stack: plan_stack(REPO / "infra", stack) for stack in EXAMPLE_STACKS}


@pytest.fixture(scope="session")
def plan_all_output():
    """``plan_all_output(*flags)``: stdout of ``clusterstack --root <repo> plan --all *flags``
    (exit 0 asserted), run once per flag set and process: several modules read the same
    shipped plans as text or JSON, and each run plans every stack of every project again."""
    import contextlib
    import io

    from clusterstack.cli import main

    runs: dict[tuple[str, ...], str] = {}

    def output(*flags: str) -> str:
        if flags not in runs:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main(["--root", str(REPO), "plan", "--all", *flags]) == 0
            runs[flags] = buf.getvalue()
        return runs[flags]

    return output
