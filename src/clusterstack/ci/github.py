"""GitHub, behind a small Protocol: the few REST operations CI needs, and the upsert of the one
comment that carries a marker.

:class:`GitHubRepo` is the seam; :class:`PyGithubRepo` implements it with PyGithub (the only
code here that talks to GitHub). Tests run the real PyGithub client against a local HTTP server
that answers with GitHub's REST shapes, so the adapter is exercised as in production.

Credentials come from the environment GitHub Actions provides: ``GITHUB_TOKEN`` (or
``GH_TOKEN``) and ``GITHUB_API_URL`` (``https://api.github.com``, or a GitHub Enterprise
Server's ``https://<host>/api/v3``).

REST endpoints used (GitHub REST reference, "Issues" and "Pulls"): ``GET /repos/{o}/{r}/pulls/{n}``;
``GET|POST /repos/{o}/{r}/issues/{n}/comments``; ``PATCH|DELETE
/repos/{o}/{r}/issues/comments/{id}``; ``GET|POST /repos/{o}/{r}/issues``; ``PATCH
/repos/{o}/{r}/issues/{n}``. A pull request's conversation comments are issue comments.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping, Protocol, runtime_checkable

from clusterstack.errors import ClusterstackError

DEFAULT_API_URL = "https://api.github.com"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GitHubError(ClusterstackError):
    """GitHub refused or failed a request (exit 2): the message names the status and GitHub's
    own message; the hint says what usually fixes it."""


@dataclass(frozen=True)
class CommentRef:
    """An issue / pull-request conversation comment."""

    id: int
    body: str


@dataclass(frozen=True)
class IssueRef:
    """An issue: number, title, body, ``state`` (open / closed) and label names."""

    number: int
    title: str
    body: str
    state: str = "open"
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class PullInfo:
    """A pull request: whether and when it was merged (UTC), and the repositories of its head
    and base (a fork PR's head repository differs)."""

    number: int
    merged: bool
    merged_at: datetime | None
    head_repo: str | None
    base_repo: str | None


@runtime_checkable
class GitHubRepo(Protocol):
    """The operations CI needs on one repository. Every method raises :class:`GitHubError`."""

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


# --- PyGithub ---------------------------------------------------------------------------------------

_HINTS = {
    401: "check GITHUB_TOKEN (in a workflow it is ${{ github.token }}; locally a token with repo scope)",
    403: "the token lacks a permission: the workflow job needs `permissions: pull-requests: write` "
         "(PR comments) or `issues: write` (the drift issue)",
    404: "check --repo OWNER/NAME and the number (a private repository answers 404 without access)",
    422: "GitHub rejected the content (a comment over 65536 characters?)",
}


@contextmanager
def _api(what: str) -> Iterator[None]:
    from github import GithubException

    try:
        yield
    except GithubException as exc:
        data = exc.data if isinstance(exc.data, Mapping) else {}
        msg = data.get("message") or str(exc)
        raise GitHubError(f"GitHub {exc.status} on {what}: {msg}",
                          _HINTS.get(exc.status, "see GitHub's status page and retry")) from None


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class PyGithubRepo:
    """:class:`GitHubRepo` over PyGithub. ``throttle`` keeps PyGithub's 1 s pacing of writes
    (GitHub's secondary rate limits ask for it; reads are not paced); tests against a local
    server turn it off. ``retry``: PyGithub's retry policy (default: its own, which waits out
    rate limits).
    """

    def __init__(self, full_name: str, *, token: str, base_url: str = DEFAULT_API_URL,
                 throttle: bool = True, retry: Any = "default") -> None:
        from github import Auth, Github

        if not _REPO.match(full_name):
            raise GitHubError(f"bad repository {full_name!r}", "give it as OWNER/NAME", field="--repo")
        self.full_name = full_name
        # Reads one at a time need no spacing (GitHub REST best practices); writes keep
        # PyGithub's 1 s spacing (secondary rate limits) unless ``throttle`` is off.
        kw: dict[str, Any] = {"seconds_between_requests": None}
        if not throttle:
            kw["seconds_between_writes"] = None
        if retry != "default":
            kw["retry"] = retry
        # lazy: objects are built from their URLs and fetched only when an attribute is read
        self._gh = Github(auth=Auth.Token(token), base_url=base_url.rstrip("/"), lazy=True, **kw)
        self._repo = self._gh.get_repo(full_name)
        self._comments: dict[int, Any] = {}

    def pull(self, number: int) -> PullInfo:
        with _api(f"pull request #{number}"):
            pr = self._repo.get_pull(number)
            head = pr.head.repo.full_name if pr.head is not None and pr.head.repo is not None else None
            base = pr.base.repo.full_name if pr.base is not None and pr.base.repo is not None else None
            return PullInfo(number=pr.number, merged=bool(pr.merged), merged_at=_utc(pr.merged_at),
                            head_repo=head, base_repo=base)

    def comments(self, number: int) -> list[CommentRef]:
        with _api(f"the comments of #{number}"):
            out = []
            for c in self._repo.get_issue(number).get_comments():  # get_issue is lazy: no request
                self._comments[c.id] = c
                out.append(CommentRef(id=c.id, body=c.body or ""))
            return out

    def create_comment(self, number: int, body: str) -> CommentRef:
        with _api(f"commenting on #{number}"):
            c = self._repo.get_issue(number).create_comment(body)
            self._comments[c.id] = c
            return CommentRef(id=c.id, body=c.body or "")

    def _comment(self, comment_id: int) -> Any:
        if comment_id not in self._comments:  # a lazy IssueComment: its URL only, no request
            self._comments[comment_id] = self._repo.get_issue(1).get_comment(comment_id)
        return self._comments[comment_id]

    def edit_comment(self, comment_id: int, body: str) -> None:
        with _api(f"editing comment {comment_id}"):
            self._comment(comment_id).edit(body)

    def delete_comment(self, comment_id: int) -> None:
        with _api(f"deleting comment {comment_id}"):
            self._comment(comment_id).delete()
            self._comments.pop(comment_id, None)

    def open_issues(self, label: str) -> list[IssueRef]:
        with _api(f"listing issues labelled {label}"):
            out = [IssueRef(number=i.number, title=i.title or "", body=i.body or "", state=i.state,
                            labels=tuple(lb.name for lb in i.labels))
                   for i in self._repo.get_issues(state="open", labels=[label])
                   if i.pull_request is None]
            return sorted(out, key=lambda i: i.number)

    def create_issue(self, title: str, body: str, labels: tuple[str, ...]) -> IssueRef:
        with _api("creating an issue"):
            i = self._repo.create_issue(title=title, body=body, labels=list(labels))
            return IssueRef(number=i.number, title=i.title, body=i.body or "", state=i.state,
                            labels=tuple(lb.name for lb in i.labels))

    def edit_issue(self, number: int, *, title: str | None = None, body: str | None = None,
                   state: str | None = None, state_reason: str | None = None) -> None:
        from github.GithubObject import NotSet

        with _api(f"editing issue #{number}"):
            self._repo.get_issue(number).edit(title=NotSet if title is None else title,
                                              body=NotSet if body is None else body,
                                              state=NotSet if state is None else state,
                                              state_reason=NotSet if state_reason is None else state_reason)


def open_repo(full_name: str, *, environ: Mapping[str, str] | None = None, **kw: Any) -> PyGithubRepo:
    """The repository ``OWNER/NAME`` with the token and API URL of the environment
    (``GITHUB_TOKEN`` or ``GH_TOKEN``; ``GITHUB_API_URL``). Raises GitHubError (exit 2) when no
    token is set or the name is malformed."""
    env = os.environ if environ is None else environ
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    if not token:
        raise GitHubError("no GitHub token: GITHUB_TOKEN (or GH_TOKEN) is not set",
                          "in a workflow: env: GITHUB_TOKEN: ${{ github.token }}; locally: "
                          "export GH_TOKEN=$(gh auth token)")
    return PyGithubRepo(full_name, token=token, base_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL, **kw)
