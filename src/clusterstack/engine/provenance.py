"""Where an update comes from: the git commit, branch and dirty flag of the repository.

``up`` records them in the update message and asks for an extra typed confirmation when the
tree is not a clean checkout of the release branch (``[workspace] release_branch``).
Pulumi itself also records ``git.head`` / ``git.dirty`` in the update's environment
(``pulumi stack history --json``), so both places agree.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GitState:
    """``commit``: full SHA of HEAD (None outside a git repository or before the first commit);
    ``branch``: the checked-out branch (None when detached or not a repository);
    ``dirty``: tracked or untracked changes in the working tree (``git status --porcelain``)."""

    commit: str | None
    branch: str | None
    dirty: bool

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit else "no-commit"

    def describe(self) -> str:
        """``git 1a2b3c4d5e6f[ dirty] on <branch>`` — the suffix ``up`` puts in update messages."""
        where = f"on {self.branch}" if self.branch else "detached" if self.commit else "outside git"
        return f"git {self.short}{' dirty' if self.dirty else ''} {where}"

    def is_release(self, release_branch: str) -> bool:
        """A clean checkout of ``release_branch``."""
        return self.commit is not None and self.branch == release_branch and not self.dirty


def _git(root: Path, *args: str) -> tuple[int, str]:
    try:
        p = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return 127, ""
    return p.returncode, p.stdout.strip()


def git_state(root: Path) -> GitState:
    """Read the git state of the repository containing ``root`` (no network, read-only)."""
    code, commit = _git(root, "rev-parse", "--verify", "HEAD")
    if code != 0:
        inside = _git(root, "rev-parse", "--is-inside-work-tree")[1] == "true"
        if not inside:
            return GitState(commit=None, branch=None, dirty=False)
        commit = ""
    code, branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    _, status = _git(root, "status", "--porcelain")
    return GitState(commit=commit or None, branch=branch if code == 0 and branch else None,
                    dirty=bool(status))
