"""IAM writes as transactions that survive a kill, and clear text that never lands.

``iam rotate`` changes two files — the keyset and the IAM file. Killed between the two (before:
the new keyset saved, the IAM file not yet rewritten) every IAM command failed "does not
decrypt" and nothing said the old key survived in ``keyset.json.previous``. Each kill test runs
the real command and SIGKILLs it at a named point (:func:`clusterstack.fsutil.testpoint`),
then proves the next command settles the rotation — finished or undone, never half — and
that every principal still decrypts to its email.

A personal email written into a free-text field (a condition's title, description or CEL
expression) landed in clear in iam/iam.yaml and was printed; ``iam check`` then rejected the
file the tool had just written. Now every write refuses it (redacted), and ``iam check`` scans
the file even before it is tracked."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.iam.crypto import ciphertext_key_id, load_cipher
from clusterstack.iam.loader import load_iam
from helpers import git, iam_workspace
from outside import EROFS, ENOSPC, failing, run

AT = "@"   # emails are assembled, so this file itself passes the repository's `iam check`
ALICE, BOB, CAROL, DAVE = (f"alice{AT}lab.io", f"bob{AT}lab.io", f"carol{AT}lab.io", f"dave{AT}gmail.com")
PEOPLE = {ALICE: "human-001", BOB: "human-002"}   # lab.io, gmail.com: no documentation domain


@pytest.fixture(scope="module")
def granted(tmp_path_factory) -> Path:
    """A repository after `iam init` and two grants (made once; each test copies it)."""
    root = iam_workspace(tmp_path_factory.mktemp("iam-tx") / "repo")
    assert main(["--root", str(root), "iam", "init"]) == 0
    for who in PEOPLE:
        assert main(["--root", str(root), "iam", "grant", who, "--role", "roles/viewer"]) == 0
    return root


@pytest.fixture
def root(granted, tmp_path) -> Path:
    return shutil.copytree(granted, tmp_path / "repo", symlinks=True)


def _state(root: Path) -> tuple[set, tuple]:
    """(key ids of the file's ciphertexts, key ids of the keyset on disk)."""
    loaded = load_iam(root / "iam" / "iam.yaml")
    kids = {ciphertext_key_id(ct) for ct in loaded.model.principals.values()}
    return kids, load_cipher(loaded.model.encryption, root).key_ids


def _decrypts_everyone(root: Path) -> None:
    r = run("iam", "decrypt", "--out", str(root.parent / "people.json"), root=root)
    assert r.code == 0, r.err
    assert json.loads((root.parent / "people.json").read_text()) == {v: k for k, v in PEOPLE.items()}


@pytest.mark.parametrize("point, settled", [
    ("iam-rotate:journal-written", "undid"),       # nothing rewritten yet: the rotation is undone
    ("iam-rotate:iam-file-written", "finished"),   # the dangerous one: the file is new, the keyset old
    ("iam-rotate:keyset-written", "finished"),     # both written, the journal still there
])
def test_a_rotation_killed_at_any_point_is_settled_by_the_next_command(root, point, settled):
    before = _state(root)
    killed = run("iam", "rotate", root=root, kill_at=point)
    assert killed.code == -signal.SIGKILL
    assert (root / ".iam" / "rotation.json").exists()
    r = run("iam", "whois", "human-001", root=root)   # any IAM command, read-only included
    assert r.code == 0 and f"human-001: user:{ALICE}" in r.out, r.err
    assert f"note: {settled} an interrupted `iam rotate`" in r.err
    kids, keyset = _state(root)
    assert kids <= set(keyset)                       # the file decrypts with the keyset on disk
    assert (kids, keyset) == before if settled == "undid" else kids.isdisjoint(before[0])
    assert not (root / ".iam" / "rotation.json").exists()
    _decrypts_everyone(root)


def test_a_rotation_interrupted_by_ctrl_c_says_so_and_is_finished_by_the_next_command(root):
    r = run("iam", "rotate", root=root, kill_at="iam-rotate:iam-file-written", signal="INT")
    assert r.code == 130 and "error: interrupted by SIGINT" in r.err and "Traceback" not in r.both
    r = run("iam", "rotate", "--resume", root=root)
    assert r.code == 0 and "note: finished an interrupted `iam rotate`" in r.out
    assert run("iam", "rotate", "--resume", root=root).out.startswith("nothing to resume")
    _decrypts_everyone(root)


def test_a_pending_rotation_names_the_command_that_settles_it_where_no_iam_command_runs(root):
    assert run("iam", "rotate", root=root, kill_at="iam-rotate:iam-file-written").code == -signal.SIGKILL
    from clusterstack.errors import ClusterstackError

    loaded = load_iam(root / "iam" / "iam.yaml")
    with pytest.raises(ClusterstackError) as ei:   # the program of `up` reads the keyset this way
        load_cipher(loaded.model.encryption, root)
    assert "run `clusterstack iam rotate --resume`" in str(ei.value)


def test_a_killed_decrypt_leaves_clear_text_only_in_the_file_asked_for(root, tmp_path):
    out_dir = tmp_path / "private"
    out_dir.mkdir()
    r = run("iam", "decrypt", "--out", str(out_dir / "people.json"), root=root, kill_at="write:in-place-opened")
    assert r.code == -signal.SIGKILL
    assert [p.name for p in out_dir.iterdir()] == ["people.json"]   # no hidden temp file of emails
    assert (out_dir / "people.json").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("option", ["--condition-title", "--condition-description", "--condition-expression"])
def test_a_personal_email_in_a_free_text_field_is_refused_and_never_printed(root, capsys, option):
    values = {"--condition-title": "temporary", "--condition-expression": 'request.time < timestamp("2027-01-01T00:00:00Z")'}
    values[option] = {"--condition-title": f"asked by {DAVE}",
                      "--condition-description": f"for {DAVE} until the audit",
                      "--condition-expression": f'request.auth.claims.email == "{DAVE}"'}[option]
    before = (root / "iam" / "iam.yaml").read_bytes()
    argv = ["--root", str(root), "iam", "grant", ALICE, "--role", "roles/compute.viewer"]
    for k, v in values.items():
        argv += [k, v]
    assert main(argv) == 2
    cap = capsys.readouterr()
    field = {"--condition-title": "title", "--condition-description": "description",
             "--condition-expression": "expression"}[option]
    assert f"condition.{field}: this change would make the file invalid: plaintext personal email d***@gmail.com" in cap.err
    assert DAVE not in cap.out + cap.err
    assert (root / "iam" / "iam.yaml").read_bytes() == before


def test_addresses_that_are_no_person_stay_allowed_in_free_text(root, capsys):
    argv = ["--root", str(root), "iam", "grant", ALICE, "--role", "roles/compute.viewer",
            "--condition-title", "ci-deployer@demo-project.iam.gserviceaccount.com on-call",
            "--condition-description", "see ops@example.org",
            "--condition-expression", 'request.time < timestamp("2027-01-01T00:00:00Z")']
    assert main(argv) == 0, capsys.readouterr().err


def test_iam_check_finds_a_personal_email_in_an_iam_file_not_yet_tracked(root, capsys):
    iam = root / "iam" / "iam.yaml"
    iam.write_text(iam.read_text().replace("# their emails are stored encrypted",
                                           f"# ask carol{AT}gmail.com; their emails are stored encrypted"))
    assert git(root, "ls-files", "iam/iam.yaml") == ""   # untracked: the repository scan does not see it
    assert main(["--root", str(root), "iam", "check"]) == 2
    err = capsys.readouterr().err
    assert "plaintext personal email c***@gmail.com" in err and f"carol{AT}gmail.com" not in err


@pytest.mark.parametrize("code, says", [(ENOSPC, "the disk is full"), (EROFS, "the file system is read-only")])
@pytest.mark.parametrize("argv", [["grant", CAROL, "--role", "roles/viewer"], ["rotate"],
                                  ["revoke", "human-001", "--role", "roles/viewer"]])
def test_a_full_disk_or_a_read_only_tree_is_exit_2_with_what_to_do(root, capsys, monkeypatch, code, says, argv):
    import clusterstack.fsutil as fsutil

    before = (root / "iam" / "iam.yaml").read_bytes()
    failing(monkeypatch, fsutil.os, "open", code, when=lambda path, *a, **k: str(path).endswith(".tmp"))
    assert main(["--root", str(root), "iam", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "internal error" not in err and "Traceback" not in err
    assert (root / "iam" / "iam.yaml").read_bytes() == before


@pytest.mark.parametrize("existed", [False, True])
def test_decrypt_on_a_full_disk_leaves_no_file_and_claims_no_old_one(root, capsys, monkeypatch, tmp_path, existed):
    # before: an empty 0600 file stayed where none was (or the old one, truncated), and the hint
    # said "the file was written atomically: the old one is intact" — false for this in-place write
    import clusterstack.fsutil as fsutil

    out = tmp_path / "people.json"
    if existed:
        out.write_text("{}")
    failing(monkeypatch, fsutil.os, "write", ENOSPC)
    assert main(["--root", str(root), "iam", "decrypt", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the disk is full" in err and "old one is intact" not in err and "Traceback" not in err
    assert not out.exists()


def test_a_lock_file_that_is_a_symlink_is_refused_and_never_followed(root, capsys, tmp_path):
    lock = root / "iam" / ".iam.yaml.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(tmp_path / "victim")
    assert main(["--root", str(root), "iam", "grant", CAROL, "--role", "roles/viewer"]) == 2
    err = capsys.readouterr().err
    assert "the edit lock .iam.yaml.lock is a symbolic link, not a regular file" in err
    assert not (tmp_path / "victim").exists()

