"""The helpers of the outside-world corpus: the real ``clusterstack`` executable as a
child process — the process boundary is what these cases test (signals, kills at a named test
point, stdout on /dev/full, a named pipe that would block a read) — and an ``OSError`` injected
where the file system answers (a full disk, a read-only tree: errors a test cannot provoke as
root or without a mount)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: The installed executable (``[project.scripts]``: clusterstack.entry:main); CLUSTERSTACK_CLI
#: names another (to run this corpus against an older checkout).
CLI = os.environ.get("CLUSTERSTACK_CLI") or str(Path(sys.executable).parent / "clusterstack")
#: Seconds a case may take before it counts as a hang (none takes more than a few).
TIMEOUT = 120


@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def run(*args: str, root: Path | None = None, env: dict[str, str] | None = None, stdin: str = "",
        kill_at: str | None = None, signal: str = "KILL", cwd: Path | None = None,
        timeout: float = TIMEOUT, **popen) -> Ran:
    """``clusterstack [--root ROOT] ARGS`` as a child process; ``kill_at``: the test point
    (:func:`clusterstack.fsutil.testpoint`) where it stops itself with ``signal``. A run
    longer than ``timeout`` is a hang: subprocess.TimeoutExpired fails the test."""
    full = {**os.environ, **(env or {})}
    if kill_at is not None:
        full.update(CLUSTERSTACK_TESTPOINT=kill_at, CLUSTERSTACK_TESTPOINT_SIGNAL=signal)
    argv = [CLI, *(["--root", str(root)] if root is not None else []), *args]
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    p = subprocess.run(argv, input=stdin, text=True, env=full, timeout=timeout, cwd=cwd, **popen)
    return Ran(p.returncode, p.stdout or "", p.stderr or "")


def failing(monkeypatch, target, name: str, code: int, *, when=lambda *a, **k: True) -> None:
    """Make ``target.name`` (``os.fsync``, ``os.open``…) raise OSError ``code`` (an errno
    name's number) whenever ``when(*args)`` holds — the file system's answer, injected."""
    real = getattr(target, name)

    def fake(*args, **kwargs):
        if when(*args, **kwargs):
            raise OSError(code, os.strerror(code), str(args[0]) if args and isinstance(args[0], (str, Path)) else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, fake)


ENOSPC, EROFS, EACCES = errno.ENOSPC, errno.EROFS, errno.EACCES
