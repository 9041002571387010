"""Each command reads each cluster file once: ``validate``'s checks (``cluster_problems``, the
notes, the IAM and IAP rules), ``stacks`` and ``inventory`` run inside one
:func:`clusterstack.validation.clusters.one_load_per_file` block, so a file is opened, parsed and
derived once per command. Counted through the real path: every ``open`` of a cluster file
(CPython's ``open`` audit event, raised by ``os.open`` in
:func:`clusterstack.config.document.read_bytes`) while the command runs in this process."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from clusterstack.cli import main
from clusterstack.workspace import Workspace
from helpers import REPO, commit_all, edit, git

_OPENED: Counter[str] | None = None
_DIR: str = ""


def _count_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, Path)):
        path = str(args[0])
        if path.startswith(_DIR) and path.endswith(".yaml"):
            _OPENED[Path(path).name] += 1


sys.addaudithook(_count_opens)  # audit hooks cannot be removed: inert unless _OPENED is a Counter


def opens_of_cluster_files(root: Path, *argv: str) -> tuple[int, Counter[str]]:
    """The exit code of ``clusterstack --root ROOT ARGV…`` run here, and how many times each
    cluster file of ROOT was opened while it ran."""
    global _OPENED, _DIR
    _DIR, _OPENED = str(Workspace.load(root).clusters_dir), Counter()
    try:
        return main(["--root", str(root), *argv]), _OPENED
    finally:
        _OPENED = None


def _every_file(root: Path) -> set[str]:
    return {f"{n}.yaml" for n in Workspace.load(root).cluster_names()}


def test_validate_opens_each_cluster_file_once(capsys):
    for argv in (["validate"], ["validate", "--json"]):
        rc, opened = opens_of_cluster_files(REPO, *argv)
        assert rc == 0, capsys.readouterr().err
        assert set(opened) == _every_file(REPO) and set(opened.values()) == {1}, opened


def test_validate_of_a_named_cluster_opens_the_files_it_reads_once(capsys):
    rc, opened = opens_of_cluster_files(REPO, "validate", "gcp-demo")
    assert rc == 0, capsys.readouterr().err
    assert "gcp-demo.yaml" in opened and set(opened.values()) == {1}, opened


def test_a_file_that_fails_to_load_is_read_again_and_reported_once(workspace_copy, capsys):
    """A failed load is not kept (each check that asks reads it again and finds the same
    problem); the problem is reported once, located, and every good file is read once."""
    f = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    edit(f, ("name: cw-demo-h100", "name: wrong-name"))
    rc, opened = opens_of_cluster_files(workspace_copy, "validate")
    err = capsys.readouterr().err
    assert rc == 2 and err.count(f"{f.name}:") == 1 and "Traceback" not in err, err
    assert opened.pop("cw-demo-h100.yaml") > 1
    assert set(opened) == _every_file(workspace_copy) - {f.name} and set(opened.values()) == {1}, opened


def test_stacks_opens_each_cluster_file_once(capsys):
    rc, opened = opens_of_cluster_files(REPO, "stacks", "--json")
    assert rc == 0, capsys.readouterr().err
    assert set(opened) == _every_file(REPO) and set(opened.values()) == {1}, opened


def test_diff_loads_the_working_tree_once_and_plans_ref_from_its_own_files(workspace_copy, capsys):
    """``diff --base REF``: the working tree's checks and program share one load of each
    cluster file; REF, planned in this process (same code, ``--no-cache``), loads REF's files —
    never the working tree's load of the same cluster, or the change would vanish."""
    git(workspace_copy, "init", "-q", "-b", "main")
    commit_all(workspace_copy, "base")
    h100 = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    edit(h100, "buffer_slices: 32                # the reserved fleet, pinned warm\n    max_slices: 32",
         "buffer_slices: 4\n    max_slices: 4")
    rc, opened = opens_of_cluster_files(workspace_copy, "diff", "cw-demo-h100", "--base", "HEAD", "--no-cache")
    out = capsys.readouterr().out
    assert rc == 3, out
    assert "DESTRUCTIVE shrink NodePool cwdemo-h100: spec.maxNodes 32 → 4" in out
    assert set(opened) == _every_file(workspace_copy) and set(opened.values()) == {1}, opened
