"""GitHub as CI uses it: the upsert of the one comment that carries a marker, over the
repository operations of :class:`clusterstack.adapters.github.GitHubRepo` (the Protocol).

The implementation is :class:`clusterstack.adapters.github.Repository` (PyGithub, the only code
that talks to GitHub; its module lists the REST endpoints). Tests run the real PyGithub client
against the local GitHub REST fake (``tests/fakes/github_api.py``), so the adapter is exercised as
in production.
"""

from __future__ import annotations

from dataclasses import dataclass
from clusterstack.adapters.github import GitHubRepo


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
