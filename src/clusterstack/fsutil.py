"""Atomic file writes: a temp file in the target directory, fsync, then rename.

Nothing half-written survives a crash or an error: either the old file or the new one exists.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def write_atomic(path: Path, data: str | bytes, *, mode: int = 0o644, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` atomically with permission bits ``mode``.

    ``exclusive``: create ``path`` only if it does not exist — the complete temp file is
    hard-linked into place (``link(2)`` fails with EEXIST, atomically), so a file another
    process created meanwhile is never replaced. Raises FileExistsError then; OSError from the
    filesystem (the temp file is removed in every case).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            os.link(tmp, path)
            Path(tmp).unlink()
        else:
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: Seconds a writer waits for another clusterstack process editing the same file.
LOCK_TIMEOUT = 30.0


@contextmanager
def locked(path: Path, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an advisory lock (the ``filelock`` library: ``fcntl.flock`` on POSIX) on
    ``path`` for a read-modify-write: take it before reading, release after the atomic
    replace, so two concurrent edits (two ``iam grant``s) are serialised and neither is lost.

    The lock file is ``.<name>.lock`` beside ``path`` (left in place: removing it would race).
    Raises ClusterstackError (exit 2) when another process holds it for ``timeout`` seconds.
    """
    from filelock import FileLock, Timeout

    from clusterstack.errors import ClusterstackError

    path = Path(path)
    lock = FileLock(str(path.with_name(f".{path.name}.lock")))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise ClusterstackError(f"another clusterstack process is editing {path.name} (lock "
                                f".{path.name}.lock held for {timeout:.0f} s)",
                                "wait for it to finish and retry", file=path) from None
    try:
        yield
    finally:
        lock.release()
