"""The slice of git the IAM commands use, behind one small class (tests run it on a real
temporary repository; nothing here talks to a remote).

- :meth:`Git.show` — a file's text at a revision (``git show REF:PATH``);
- :meth:`Git.tracked_files` — every tracked path (``git ls-files -z``);
- :meth:`Git.changed_lines` — added/removed lines of a diff between two revisions, or a
  revision and the working tree (``git diff --unified=0``);
- :meth:`Git.is_ignored` — whether a path is git-ignored (``git check-ignore -q``).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from clusterstack.errors import ClusterstackError


class GitError(ClusterstackError):
    """A git command failed (unknown revision, not a repository …), exit 2."""


@dataclass(frozen=True)
class ChangedLine:
    """One ``+``/``-`` line of a diff: ``path`` relative to the repository root, ``line`` the
    1-based line number in the new (``+``) or old (``-``) file."""

    path: str
    sign: str
    line: int
    text: str


class Git:
    """Git commands run in ``root`` (the workspace root)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        try:
            proc = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True)
        except FileNotFoundError:
            raise GitError("git is not installed", "install git") from None
        if check and proc.returncode != 0:
            msg = proc.stderr.decode(errors="replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed: {msg[-1] if msg else proc.returncode}",
                           "check the revision name and that this is a git checkout")
        return proc

    def is_repo(self) -> bool:
        return self._run("rev-parse", "--git-dir", check=False).returncode == 0

    def toplevel(self) -> Path:
        """The repository's top-level directory (resolved). Raises GitError outside a repo."""
        return Path(self._run("rev-parse", "--show-toplevel").stdout.decode().strip()).resolve()

    def rel(self, path: Path) -> str:
        """``path`` relative to the repository's top level, POSIX form."""
        return path.resolve().relative_to(self.toplevel()).as_posix()

    def show(self, ref: str, path: str) -> str | None:
        """The text of ``path`` at ``ref``, or None when the file does not exist there.
        Raises GitError for an unknown revision."""
        self._run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        proc = self._run("show", f"{ref}:{path}", check=False)
        return proc.stdout.decode("utf-8") if proc.returncode == 0 else None

    def tracked_files(self) -> list[str]:
        """Every tracked path, relative to the repository root, sorted."""
        out = self._run("ls-files", "-z").stdout.decode("utf-8", errors="surrogateescape")
        return sorted(p for p in out.split("\0") if p)

    def is_ignored(self, path: Path) -> bool:
        return self._run("check-ignore", "-q", str(path), check=False).returncode == 0

    def changed_lines(self, base: str, head: str | None, paths: list[str]) -> list[ChangedLine]:
        """Added and removed lines of ``paths`` between ``base`` and ``head`` (None = the
        working tree), from ``git diff --unified=0 --no-renames``."""
        if not paths:
            return []
        revs = [base] if head is None else [base, head]
        out = self._run("diff", "--unified=0", "--no-renames", "--no-color", "--no-ext-diff",
                        *revs, "--", *paths).stdout.decode("utf-8", errors="replace")
        lines: list[ChangedLine] = []
        path, old_no, new_no = "", 0, 0
        for raw in out.splitlines():
            if raw.startswith("+++ "):
                path = raw[6:] if raw.startswith("+++ b/") else path
            elif raw.startswith("--- "):
                path = raw[6:] if raw.startswith("--- a/") else path
            elif raw.startswith("@@"):
                # @@ -old[,n] +new[,m] @@
                old, new = raw.split(" ")[1:3]
                old_no = int(old[1:].split(",")[0])
                new_no = int(new[1:].split(",")[0])
            elif raw.startswith("+"):
                lines.append(ChangedLine(path, "+", new_no, raw[1:]))
                new_no += 1
            elif raw.startswith("-"):
                lines.append(ChangedLine(path, "-", old_no, raw[1:]))
                old_no += 1
        return lines
