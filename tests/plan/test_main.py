"""``python -m clusterstack.plan``'s library side (``plan_root``, ``stack_list``): the workspace
is read once per call, and the ``[projects]`` stacks come from that one load (or, for a
package that predates ``Workspace.settings``, from the table read with tomllib)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from clusterstack.plan.__main__ import _project_dirs, plan_root, stack_list
from clusterstack.workspace import Workspace
from helpers import copy_workspace

_OPENED: list[str] | None = None


def _count_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and str(args[0]).endswith("clusterstack.toml"):
        _OPENED.append(str(args[0]))


sys.addaudithook(_count_opens)  # audit hooks cannot be removed: inert unless _OPENED is a list


def opens_of(fn, *args, **kwargs) -> tuple[object, list[str]]:
    global _OPENED
    _OPENED = []
    try:
        return fn(*args, **kwargs), _OPENED
    finally:
        _OPENED = None


def test_plan_root_reads_the_workspace_once(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    # no stack named: nothing is planned (each plan_stack reads its own workspace, in the program)
    plans, opened = opens_of(plan_root, root, [])
    assert plans == [] and opened == [str(root / "clusterstack.toml")]
    listed, opened = opens_of(stack_list, root, None, projects="all")
    assert opened == [str(root / "clusterstack.toml")]
    project_dirs = {d for d, _ in listed} - {root / "infra"}
    assert project_dirs and all((d / "Pulumi.yaml").is_file() for d in project_dirs)


def test_the_projects_of_an_older_package_are_read_from_the_table(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    ws = Workspace.load(root)
    older = SimpleNamespace(root=root, project_dir=ws.project_dir)  # no .settings: predates it
    assert _project_dirs(older, None, settings=False) == _project_dirs(ws, None, settings=True) != []
    key = next(iter(ws.settings.projects))
    assert (_project_dirs(older, [key], settings=False) == _project_dirs(ws, [key], settings=True)
            == [root / ws.settings.projects[key].dir])
