"""GitHub as CI uses it: the few REST operations CI needs (:class:`GitHubRepo`, a Protocol) and
the upsert of the one comment that carries a marker.

The implementation is :class:`clusterstack.adapters.github.Repository` (PyGithub, the only code
that talks to GitHub; its module lists the REST endpoints). Tests run the real PyGithub client
against the local GitHub REST fake (``tests/fakes/github_api.py``), so the adapter is exercised as
in production.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from clusterstack.adapters.github import CommentRef, IssueRef, PullInfo


@runtime_checkable
class GitHubRepo(Protocol):
    """The operations CI needs on one repository. Every method raises
    :class:`clusterstack.adapters.github.GitHubError`."""

    full_name: str

    def pull(self, number: int) -> PullInfo:
        """The pull request ``number``."""
        ...

    def comments(self, number: int) -> list[CommentRef]:
        """Every conversation comment of issue / PR ``number``, oldest first (all pages)."""
        ...

    def create_comment(self, number: int, body: str) -> CommentRef:
        ...

    def edit_comment(self, comment_id: int, body: str) -> None:
        ...

    def delete_comment(self, comment_id: int) -> None:
        ...

    def open_issues(self, label: str) -> list[IssueRef]:
        """Open issues (not pull requests) carrying ``label``, by number."""
        ...

    def create_issue(self, title: str, body: str, labels: tuple[str, ...]) -> IssueRef:
        ...

    def edit_issue(self, number: int, *, title: str | None = None, body: str | None = None,
                   state: str | None = None, state_reason: str | None = None) -> None:
        ...


# --- the upsert -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Upsert:
    """What :func:`upsert_comment` did: ``action`` created / updated / unchanged, the comment's
    id, and the ids of duplicate marker comments it deleted."""

    action: str
    comment_id: int
    deleted: tuple[int, ...] = ()


def _norm(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def upsert_comment(repo: GitHubRepo, number: int, body: str, *, marker: str) -> Upsert:
    """Create or update the single comment of PR / issue ``number`` whose body starts with
    ``marker``, so a PR has exactly one such comment however often CI runs.

    - none yet → create it;
    - one → edit it (nothing sent when the text is already the same);
    - several (two runs raced before concurrency was configured) → keep the oldest, edit it,
      delete the others.

    A comment that only *quotes* the marker (a reply) does not start with it and is left alone.
    Raises ValueError when ``body`` does not start with ``marker``; GitHubError from the API."""
    if not body.startswith(marker):
        raise ValueError("the comment body must start with its marker")
    mine = [c for c in repo.comments(number) if c.body.lstrip().startswith(marker)]
    if not mine:
        return Upsert("created", repo.create_comment(number, body).id)
    keep, extra = mine[0], mine[1:]
    for c in extra:
        repo.delete_comment(c.id)
    if _norm(keep.body) == _norm(body):
        return Upsert("unchanged", keep.id, tuple(c.id for c in extra))
    repo.edit_comment(keep.id, body)
    return Upsert("updated", keep.id, tuple(c.id for c in extra))
