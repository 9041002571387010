"""Writes that survive a kill, outputs that respect what they point at, and the named
dangerous points the kill tests stop a command at.

- :func:`write_atomic`: a temp file in the target directory, fsync, then rename — either the
  old file or the new one exists, never half of one. The temp file's name carries the writer's
  process id (``.<name>.<pid>-<random>.tmp``), so one left by a killed process (SIGKILL, the
  OOM killer, a power cut: no ``finally`` runs) is recognised and removed by the next write
  into that directory (:func:`sweep_temp_files`); ``init`` git-ignores ``*.tmp`` meanwhile.
- :func:`write_output`: a file the operator named (``-o``/``--output``/``--out``). A named
  pipe, a device node or ``/dev/stdout`` is written *through*, never replaced by a regular
  file; a symbolic link keeps being a link (its target is written).
- :func:`locked`: the advisory lock of a read-modify-write.
- :func:`testpoint`: a named point of a multi-step write where the kill tests stop the real
  command (``CLUSTERSTACK_TESTPOINT``); a no-op unless that variable names the point.

Errors: OSError from the file system propagates with the *target's* path as ``filename``
(not the temp file's); the CLI maps every OSError to exit 2 with what to do
(:func:`clusterstack.errors.os_error`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from clusterstack.errors import ClusterstackError, os_error

#: The environment variable naming the :func:`testpoint` at which the process stops itself.
TESTPOINT_ENV = "CLUSTERSTACK_TESTPOINT"
#: The signal it stops with (a name: ``KILL`` — the default, nothing runs after it —,
#: ``INT`` for a Ctrl-C, ``TERM`` for a CI cancel).
TESTPOINT_SIGNAL_ENV = "CLUSTERSTACK_TESTPOINT_SIGNAL"


def testpoint(name: str) -> None:
    """A dangerous point of a write, by ``name`` (``iam-rotate:iam-file-written``,
    ``write:temp-written`` …; docs/architecture.md lists them). When the environment variable
    :data:`TESTPOINT_ENV` equals ``name`` the process sends itself :data:`TESTPOINT_SIGNAL_ENV`
    (default SIGKILL: no handler, no ``finally``, as the OOM killer or a power cut) — the kill
    tests run the real command up to exactly that point, then prove what the next command
    recovers. Unset, it costs one dictionary look-up."""
    env = os.environ if TESTPOINT_ENV in os.environ else _ARMED
    if env.get(TESTPOINT_ENV) != name:
        return
    sig = getattr(signal, "SIG" + env.get(TESTPOINT_SIGNAL_ENV, "KILL").upper())
    os.kill(os.getpid(), sig)
    if sig != signal.SIGKILL:   # a handled signal runs at the next bytecode; make sure it has
        time.sleep(0.5)


# --- temp files -------------------------------------------------------------------------------

_TEMP = re.compile(r"\A\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp\Z")
#: A temp file of the older naming (``tempfile.mkstemp``: no process id) is removed once it is
#: older than this many seconds: no write takes that long.
LEGACY_TEMP_AGE = 3600.0
_LEGACY_TEMP = re.compile(r"\A\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp\Z")


def temp_name(path: Path) -> Path:
    """The temp file a write of ``path`` goes through: ``.<name>.<pid>-<8 hex>.tmp`` beside it
    (same directory, so the rename is atomic; the process id lets a later run tell a dead
    writer's leftover from a live writer's file)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's live process
        return True
    return True


def sweep_temp_files(directory: Path, name: str | None = None) -> list[Path]:
    """Remove the temp files that killed writers left in ``directory`` (of target ``name``
    only, or of every target): those whose process id is no live process, and those of the
    older naming older than :data:`LEGACY_TEMP_AGE`. Returns the removed paths. Never raises
    (a directory that cannot be listed has nothing to sweep)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.endswith(".tmp"):
            continue
        m = _TEMP.match(entry.name)
        stale = False
        if m is not None and (name is None or m["name"] == name):
            stale = not _alive(int(m["pid"]))
        elif (legacy := _LEGACY_TEMP.match(entry.name)) is not None and (name is None or legacy["name"] == name):
            try:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > LEGACY_TEMP_AGE
            except OSError:
                stale = False
        if stale:
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                pass
    return removed


def _fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename in it is durable (a file system without directory fsync:
    nothing to do)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _retarget(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` (the file the operator knows) instead of the temp file."""
    new = type(exc)(exc.errno, exc.strerror or str(exc), str(path))
    new.__cause__ = exc
    return new


def write_atomic(path: Path, data: str | bytes, *, mode: int = 0o644, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` atomically with permission bits ``mode``.

    ``exclusive``: create ``path`` only if it does not exist — the complete temp file is
    hard-linked into place (``link(2)`` fails with EEXIST, atomically), so a file another
    process created meanwhile is never replaced. Raises FileExistsError then; OSError from the
    file system naming ``path`` (the temp file is removed in every case but a SIGKILL, whose
    leftover the next write into the directory removes: :func:`sweep_temp_files`).

    Test points (:func:`testpoint`): ``write:temp-written`` (the temp file complete, the
    target untouched).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    sweep_temp_files(path.parent, path.name)
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise _retarget(exc, path) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        testpoint("write:temp-written")
        if exclusive:
            os.link(tmp, path)
            tmp.unlink()
        else:
            os.replace(tmp, path)
        _fsync_dir(path.parent)
    except FileExistsError:
        tmp.unlink(missing_ok=True)
        raise
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _retarget(exc, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --- outputs the operator names ----------------------------------------------------------------

def _kind(mode: int) -> str:
    return ("a named pipe" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a directory" if stat.S_ISDIR(mode) else "not a regular file")


def file_kind(mode: int) -> str:
    """What a ``st_mode`` that is not a regular file is, in words (``a named pipe``, ``a
    character device``, ``a directory`` …) — for the messages that refuse it."""
    return _kind(mode)


def write_output(path: Path, data: str | bytes, *, mode: int = 0o644, temp: bool = True) -> None:
    """Write ``data`` to a file the operator named on the command line.

    - a path that does not exist, or a regular file: :func:`write_atomic`;
    - a symbolic link: its target is written by these rules (the link stays a link);
    - ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``: written to that
      descriptor of this process (whatever it is: a terminal, a pipe, the file a shell
      redirected it to — which a rename would have detached);
    - a named pipe, a character device (``/dev/null``, a terminal), a socket: written
      *through* — opened for writing, never created, truncated nor replaced;
    - a named pipe nobody reads (``ENXIO``), a directory: OSError, the CLI's exit 2.

    ``temp=False`` (clear text: ``iam decrypt``): a regular file is written in place — created
    or truncated with ``mode``, never through a temp file — so the data lands in no file but
    the one the operator named, even when the process is killed (SIGKILL leaves no ``finally``
    to remove a temp file with). The cost: a kill in the middle leaves that file short.
    Test point: ``write:in-place-opened``.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    own = _own_descriptor(path)
    if own is not None:   # /dev/stdout, /dev/fd/1: this process's own stream, offset shared
        import sys

        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        _write_all(own, payload, path)
        return
    regular = write_atomic if temp else _write_in_place
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        regular(path, payload, mode=mode)
        return
    if stat.S_ISLNK(lst.st_mode):
        resolved = Path(os.path.realpath(path))
        try:
            st = os.stat(path)
        except FileNotFoundError:   # a dangling link: create its target
            regular(resolved, payload, mode=mode)
            return
    else:
        resolved, st = path, lst
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if stat.S_ISREG(st.st_mode):
        regular(resolved, payload, mode=mode)
        return
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:   # open(2): a FIFO with O_NONBLOCK and no reader
            raise OSError(errno.ENXIO, "a named pipe that nobody reads", str(path)) from None
        raise
    try:
        os.set_blocking(fd, True)
        _write_all(fd, payload, path)
    finally:
        os.close(fd)


def _write_in_place(path: Path, payload: bytes, *, mode: int) -> None:
    """Create or truncate ``path`` (a link is not followed: the caller resolved it) with
    permission bits ``mode`` — set before a byte is written — and write ``payload``, fsync.
    When a write fails (a full disk, an I/O error) the file is removed before the OSError
    propagates: a short file is neither the old content (truncated) nor the new one, and a
    partial clear text must not stay behind (before: an empty 0600 file was left, and the
    message said the old one was intact)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)
        testpoint("write:in-place-opened")
        _write_all(fd, payload, path)
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)


_OWN_FD = re.compile(r"\A/(?:dev/fd|proc/(?:self|thread-self|(?P<pid>\d+))/fd)/(?P<fd>\d+)\Z")
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``, ``/proc/<our pid>/fd/N``, or a link to one), or None. Such a path is
    written through the descriptor itself: opening it again would give a second file offset,
    and the command's own stdout would overwrite what was written (``-o /dev/stdout > f``)."""
    text = str(path)
    for _ in range(8):   # a few links deep: /dev/stdout → /proc/self/fd/1
        if text in _STD:
            return _STD[text]
        m = _OWN_FD.match(text)
        if m is not None and (m["pid"] is None or int(m["pid"]) == os.getpid()):
            return int(m["fd"])
        try:
            target = os.readlink(text)
        except OSError:
            return None
        text = os.path.normpath(os.path.join(os.path.dirname(text), target))
    return None


def _write_all(fd: int, payload: bytes, path: Path) -> None:
    view = memoryview(payload)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise _retarget(exc, path) from None


# --- the edit lock -----------------------------------------------------------------------------

#: Seconds a writer waits for another clusterstack process editing the same file.
LOCK_TIMEOUT = 30.0


@contextmanager
def locked(path: Path, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an advisory lock (the ``filelock`` library: ``fcntl.flock`` on POSIX) on
    ``path`` for a read-modify-write: take it before reading, release after the atomic
    replace, so two concurrent edits (two ``iam grant``s) are serialised and neither is lost.

    The lock file is ``.<name>.lock`` beside ``path`` (left in place: removing it would race).
    Raises ClusterstackError (exit 2) when another process holds it for ``timeout`` seconds,
    and when the lock file is not a regular file (a symbolic link — ``filelock`` opens it with
    ``O_NOFOLLOW`` and refuses it —, a directory, a pipe) or cannot be created (a read-only
    tree): each names the lock file and what to do.
    """
    from filelock import FileLock, Timeout


    path = Path(path)
    lock_path = path.with_name(f".{path.name}.lock")
    try:
        st = os.lstat(lock_path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else _kind(st.st_mode)
        raise ClusterstackError(f"the edit lock {lock_path.name} is {what}, not a regular file",
                                f"remove it (`rm -r {lock_path}`: it holds no data) and run the "
                                "command again", file=lock_path)
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise ClusterstackError(f"another clusterstack process is editing {path.name} (lock "
                                f".{path.name}.lock held for {timeout:.0f} s)",
                                "wait for it to finish and retry", file=path) from None
    except OSError as exc:
        raise os_error(exc, doing=f"cannot take the edit lock {lock_path.name}") from None
    try:
        yield
    finally:
        lock.release()


# --- the import test point -------------------------------------------------------------------

class _ImportTestpoint:
    """A ``sys.meta_path`` finder that fires :func:`testpoint` ``import:<module>`` when
    ``<module>`` is about to be imported (then steps aside): a Ctrl-C in the middle of a
    lazy import, on cue."""

    def __init__(self, module: str) -> None:
        self.module = module

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == self.module:
            import sys

            if self in sys.meta_path:
                sys.meta_path.remove(self)
            testpoint(f"import:{fullname}")
        return None


#: The test-point variables as the run started (:func:`arm_import_testpoint`): a Pulumi program
#: under the offline plan runs with a hermetic environment, where they are not set.
_ARMED: dict[str, str] = {}


def arm_import_testpoint() -> None:
    """At the start of a CLI run: remember the test-point variables (:data:`_ARMED`), and when
    :data:`TESTPOINT_ENV` is ``import:<module>`` and that module is not imported yet, make its
    import the test point (:class:`_ImportTestpoint`). Otherwise nothing."""
    import sys

    _ARMED.clear()
    _ARMED.update({k: os.environ[k] for k in (TESTPOINT_ENV, TESTPOINT_SIGNAL_ENV) if k in os.environ})
    want = os.environ.get(TESTPOINT_ENV, "")
    if want.startswith("import:") and want[len("import:"):] not in sys.modules:
        if not any(isinstance(f, _ImportTestpoint) for f in sys.meta_path):
            sys.meta_path.insert(0, _ImportTestpoint(want[len("import:"):]))
