"""Locked read-modify-write of the reviewed files the tool rewrites (fsutil.locked): two
concurrent `iam grant`s in separate processes both land; a held lock is a clear exit-2 error."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import REPO, git, iam_workspace
from clusterstack.cli import main
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import locked

CLI = [str(Path(sys.executable).parent / "clusterstack")]   # the installed entry point


@pytest.fixture(scope="module")
def initialised(tmp_path_factory) -> Path:
    """A repository with the shipped workspace after `iam init` (made once per module, in-process;
    each test edits its own copy)."""
    root = iam_workspace(tmp_path_factory.mktemp("locking") / "repo")
    assert main(["--root", str(root), "iam", "init"]) == 0
    return root


@pytest.fixture
def root(initialised, tmp_path) -> Path:
    return shutil.copytree(initialised, tmp_path / "repo", symlinks=True)


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


_LOCKED = locked.__wrapped__.__code__   # fsutil.locked's generator: on a thread's stack only
                                        # while it takes (or releases) the lock, never once inside


def _taking_the_lock(thread: threading.Thread, path: Path) -> bool:
    """``thread`` is inside ``fsutil.locked(path)`` before its ``yield``: waiting for the lock."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is _LOCKED and Path(frame.f_locals.get("path", "")) == path:
            return True
        frame = frame.f_back
    return False


def _waits_for_the_lock(path: Path, edit) -> None:
    """``edit()`` (in a thread) does not finish while ``path``'s lock is held — it is seen
    waiting inside ``fsutil.locked(path)``, the file unchanged — and finishes once it is
    released: the whole read-modify-write is inside the lock."""
    errors: list[BaseException] = []

    def run():
        try:
            edit()
        except BaseException as exc:   # noqa: BLE001 — reported to the test thread
            errors.append(exc)

    before = path.read_bytes()
    with locked(path):
        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 30
        while t.is_alive() and not _taking_the_lock(t, path) and time.monotonic() < deadline:
            time.sleep(0.002)
        assert t.is_alive() and _taking_the_lock(t, path), "the edit did not wait for the lock"
        assert path.read_bytes() == before, "the edit wrote while the lock was held"
    t.join(30)
    assert not t.is_alive() and errors == []


@pytest.mark.parametrize("command", ["fmt", "rotate", "grant", "revoke"])
def test_every_iam_file_edit_holds_the_lock(root, command):
    from clusterstack.iam import ops
    from clusterstack.iam.settings import IamSettings
    from clusterstack.workspace import Workspace

    assert main(["--root", str(root), "iam", "grant", "a@example.org", "--role", "roles/viewer"]) == 0
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


def test_an_edit_of_a_missing_iam_file_leaves_no_lock_behind(tmp_path, capsys):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    git(root, "init", "-q")
    for argv in (["fmt"], ["rotate"], ["grant", "a@example.org", "--role", "roles/viewer"]):
        rc = main(["--root", str(root), "iam", *argv])
        assert rc == 2 and "IAM file not found" in capsys.readouterr().err
    assert sorted(p.name for p in root.iterdir()) == [".git", "clusterstack.toml"]


def test_the_first_init_holds_the_lock_too(tmp_path):
    """No IAM directory yet: init creates it to hold the lock in. Probed from the KMS AEAD
    factory init calls in the middle of its work (a local Tink AEAD stands in for Cloud KMS):
    another process could not take the lock then."""
    import tink
    from tink import aead

    from clusterstack.iam import ops
    from clusterstack.iam.settings import IamSettings
    from clusterstack.workspace import Workspace

    aead.register()
    root = iam_workspace(tmp_path / "repo")
    settings = IamSettings.from_workspace(Workspace.load(root))
    assert not settings.file.parent.exists()
    held: list[bool] = []

    def kms_aead(uri: str):
        try:
            with locked(settings.file, timeout=0.05):
                held.append(False)
        except ClusterstackError as exc:
            held.append("another clusterstack process is editing" in str(exc))
        return tink.new_keyset_handle(aead.aead_key_templates.AES256_GCM).primitive(aead.Aead)

    ops.init(settings, project="demo-project",
             kms_key="gcp-kms://projects/demo-project/locations/global/keyRings/iam/cryptoKeys/principals",
             kms_aead=kms_aead)
    assert held and all(held) and settings.file.is_file()


def test_a_first_init_that_fails_leaves_no_directory_behind(tmp_path):
    from clusterstack.iam import ops
    from clusterstack.iam.settings import IamSettings
    from clusterstack.workspace import Workspace

    root = iam_workspace(tmp_path / "repo")
    settings = IamSettings.from_workspace(Workspace.load(root))
    with pytest.raises(ops.IamUsageError, match="no project given"):
        ops.init(settings, project=None, kms_key=None)
    assert not settings.file.parent.exists()
