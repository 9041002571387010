"""Locked read-modify-write of the reviewed files the tool rewrites (fsutil.locked): two
concurrent `iam grant`s in separate processes both land; a held lock is a clear exit-2 error."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, git
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import locked

CLI = [str(Path(sys.executable).parent / "clusterstack")]   # the installed entry point


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for f in ("clusterstack.toml", ".gitignore"):
        shutil.copy(REPO / f, root / f)
    for d in ("clusters", "infra"):
        shutil.copytree(REPO / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    subprocess.run([*CLI, "--root", str(root), "iam", "init"], check=True, capture_output=True)
    return root


def test_two_concurrent_grants_lose_nobody(root):
    people = [f"person{i}@example.org" for i in range(4)]
    procs = [subprocess.Popen([*CLI, "--root", str(root), "iam", "grant", who, "--role", "roles/viewer"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for who in people]
    results = [(p.wait(), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _ in results), results
    from clusterstack.iam.loader import load_iam

    model = load_iam(root / "iam" / "iam.yaml").model
    assert len(model.principals) == len(people)


def test_a_held_lock_is_a_clear_error(tmp_path):
    target = tmp_path / "iam.yaml"
    target.write_text("x: 1\n")
    with locked(target):
        with pytest.raises(ClusterstackError) as ei:
            with locked(target, timeout=0.1):
                pass
    assert ei.value.exit_code == 2 and "another clusterstack process is editing iam.yaml" in str(ei.value)
    with locked(target, timeout=0.1):   # released
        pass


def _waits_for_the_lock(path: Path, edit) -> None:
    """``edit()`` (in a thread) does not finish while ``path``'s lock is held, and finishes
    once it is released: the whole read-modify-write is inside the lock."""
    import threading

    errors: list[BaseException] = []

    def run():
        try:
            edit()
        except BaseException as exc:   # noqa: BLE001 — reported to the test thread
            errors.append(exc)

    with locked(path):
        t = threading.Thread(target=run)
        t.start()
        t.join(1.0)
        assert t.is_alive(), "the edit did not wait for the lock"
    t.join(30)
    assert not t.is_alive() and errors == []


@pytest.mark.parametrize("command", ["fmt", "rotate", "grant", "revoke"])
def test_every_iam_file_edit_holds_the_lock(root, command):
    from clusterstack.iam import ops
    from clusterstack.iam.settings import IamSettings
    from clusterstack.workspace import Workspace

    subprocess.run([*CLI, "--root", str(root), "iam", "grant", "a@example.org", "--role", "roles/viewer"],
                   check=True, capture_output=True)
    settings = IamSettings.from_workspace(Workspace.load(root))
    if command == "fmt":   # a non-canonical file: fmt has something to write
        text = settings.file.read_text()
        settings.file.write_text(text.replace("    members:\n      - human-001\n", "    members: [human-001]\n"))
        assert settings.file.read_text() != text
    edit = {"fmt": lambda: ops.fmt(settings), "rotate": lambda: ops.rotate(settings),
            "grant": lambda: ops.grant(settings, "b@example.org", "roles/viewer"),
            "revoke": lambda: ops.revoke(settings, "a@example.org", "roles/viewer")}[command]
    before = settings.file.read_bytes()
    _waits_for_the_lock(settings.file, edit)
    assert settings.file.read_bytes() != before


def test_an_edit_of_a_missing_iam_file_leaves_no_lock_behind(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    git(root, "init", "-q")
    for argv in (["fmt"], ["rotate"], ["grant", "a@example.org", "--role", "roles/viewer"]):
        r = subprocess.run([*CLI, "--root", str(root), "iam", *argv], capture_output=True, text=True)
        assert r.returncode == 2 and "IAM file not found" in r.stderr
    assert sorted(p.name for p in root.iterdir()) == [".git", "clusterstack.toml"]
