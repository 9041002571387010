"""Atomic writes: replace by default, create-only with ``exclusive`` (nothing clobbered); a
kill leaves no temp file for long; outputs never replace a pipe, a device or a link; a lock
file that is no file is refused."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.fsutil import locked, sweep_temp_files, temp_name, write_atomic, write_output
from clusterstack.scaffold import Plan


def test_exclusive_write_never_replaces_a_file(tmp_path):
    target = tmp_path / "gcp-new.yaml"
    write_atomic(target, "first\n", exclusive=True)
    assert target.read_text() == "first\n" and oct(target.stat().st_mode & 0o777) == oct(0o644)
    with pytest.raises(FileExistsError):
        write_atomic(target, "second\n", exclusive=True)
    assert target.read_text() == "first\n"
    assert os.listdir(tmp_path) == ["gcp-new.yaml"]   # no temp file left behind
    write_atomic(target, "third\n")                     # the default replaces
    assert target.read_text() == "third\n"


class _RacedPlan(Plan):
    """A scaffold plan whose file appears after the existence check (another process in the
    window between ``check_new`` and the write)."""

    def check_new(self) -> None:
        super().check_new()
        for p in self.files:
            if p.name == "b.yaml":
                p.write_text("someone else's\n")


def test_a_file_created_while_scaffolding_is_kept(tmp_path):
    a, b = tmp_path / "clusters" / "a.yaml", tmp_path / "clusters" / "b.yaml"
    b.parent.mkdir()
    plan = _RacedPlan(tmp_path, files={a: "a\n", b: "b\n"})
    with pytest.raises(ConfigError) as ei:
        plan.write()
    assert b.read_text() == "someone else's\n"
    assert "created while scaffolding" in str(ei.value) and "written so far: clusters/a.yaml" in str(ei.value)


# --- a kill leaves no temp file behind for long; outputs respect what they point at ----------


def _write_in_child(target, text, *, kill_at=None):
    """``write_atomic(target, text)`` in a child process that SIGKILLs itself at ``kill_at``."""
    env = {**os.environ, **({"CLUSTERSTACK_TESTPOINT": kill_at} if kill_at else {})}
    return subprocess.run([sys.executable, "-c", "import sys; from clusterstack.fsutil import write_atomic; "
                           "write_atomic(sys.argv[1], sys.argv[2])", str(target), text], env=env).returncode


def test_a_write_killed_with_its_temp_file_complete_leaves_the_old_file_and_the_next_write_sweeps(tmp_path):
    target = tmp_path / "iam.yaml"
    target.write_text("old\n")
    assert _write_in_child(target, "new\n", kill_at="write:temp-written") == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir() if p.name != "iam.yaml"]
    assert target.read_text() == "old\n" and len(left) == 1 and left[0].startswith(".iam.yaml.")
    assert _write_in_child(target, "newer\n") == 0     # the next write: its own file, the dead one's swept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iam.yaml"] and target.read_text() == "newer\n"


def test_a_live_writers_temp_file_is_kept(tmp_path):
    mine = temp_name(tmp_path / "a.yaml")
    mine.write_text("in progress")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = tmp_path / f".a.yaml.{sleeper.pid}-0123abcd.tmp"
        theirs.write_text("in progress")
        dead = tmp_path / ".a.yaml.999999999-0123abcd.tmp"   # beyond any pid_max: no such process
        dead.write_text("left by a kill")
        assert sweep_temp_files(tmp_path, "a.yaml") == [dead]
        assert mine.exists() and theirs.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_output_that_is_a_named_pipe_is_written_through_and_stays_a_pipe(tmp_path):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    # the reader may not have opened it yet: ENXIO then, until it has
    for _ in range(500):
        try:
            write_output(fifo, "{}\n")
            break
        except OSError as exc:
            assert exc.errno == errno.ENXIO
            threading.Event().wait(0.01)
    reader.join(30)
    assert got == [b"{}\n"] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_named_pipe_nobody_reads_is_refused_at_once(tmp_path):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as ei:
        write_output(fifo, "{}\n")   # would block forever if opened for writing plainly
    assert ei.value.errno == errno.ENXIO and "nobody reads" in str(ei.value)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_link_is_never_replaced_by_a_regular_file(tmp_path):
    # (a device takes the named pipe's path — written through — and is not written here: a
    # regression run as root would replace the machine's /dev/null)
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_dev_stdout_is_this_processs_own_stdout(tmp_path):
    """`-o /dev/stdout > file`: written through descriptor 1, sharing its offset — a rename
    would have detached the shell's redirection, a second open overwritten one output with
    the other."""
    out = tmp_path / "out.txt"
    code = "import sys; from clusterstack.fsutil import write_output; print('first', flush=True); " \
           "write_output('/dev/stdout', 'second\\n'); print('third')"
    with out.open("w") as fh:
        subprocess.run([sys.executable, "-c", code], stdout=fh, check=True)
    assert out.read_text() == "first\nsecond\nthird\n" and out.is_file() and not out.is_symlink()


@pytest.mark.parametrize("kind", ["symlink", "directory"])
def test_a_lock_file_that_is_no_regular_file_is_a_clear_refusal(tmp_path, kind):
    target = tmp_path / "iam.yaml"
    target.write_text("x: 1\n")
    lock = tmp_path / ".iam.yaml.lock"
    elsewhere = tmp_path / "elsewhere"
    if kind == "symlink":
        lock.symlink_to(elsewhere)
    else:
        lock.mkdir()
    with pytest.raises(ClusterstackError) as ei:
        with locked(target, timeout=1):
            pass
    message = str(ei.value)
    assert ei.value.exit_code == 2 and f"is {'a symbolic link' if kind == 'symlink' else 'a directory'}" in message
    assert "remove it" in message and not elsewhere.exists()   # the link was never followed
