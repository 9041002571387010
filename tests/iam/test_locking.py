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
