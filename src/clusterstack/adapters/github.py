"""The GitHub adapter: the only code in clusterstack that talks to GitHub, through PyGithub over
the REST API.

:class:`GitHub` is a connection (token, API root, pacing, retry policy, timeout);
:meth:`GitHub.repository` gives a :class:`Repository`: the :class:`GitHubRepo` Protocol (the operations CI needs and
the names ``github audit`` compares) over PyGithub; :class:`GitHubApi` is the connection's. Every failure becomes one
:class:`GitHubError` (:func:`call` is the one mapping).

Credentials come from the environment (:meth:`GitHub.from_env`) as GitHub Actions provides
it: ``GITHUB_TOKEN`` (or ``GH_TOKEN``) and ``GITHUB_API_URL`` (``https://api.github.com``, or a
GitHub Enterprise Server's ``https://<host>/api/v3``).

REST endpoints (GitHub REST reference): "Repositories" ``GET /repos/{o}/{r}``; "Pulls" ``GET
/repos/{o}/{r}/pulls/{n}``; "Issue comments" ``GET|POST /repos/{o}/{r}/issues/{n}/comments``,
``PATCH|DELETE /repos/{o}/{r}/issues/comments/{id}`` (a pull request's conversation comments
are issue comments); "Issues" ``GET|POST /repos/{o}/{r}/issues``, ``PATCH
/repos/{o}/{r}/issues/{n}``; "Actions secrets" / "Actions variables" ``GET
/repos/{o}/{r}/actions/secrets|variables`` and ``…/environments/{e}/secrets|variables``;
"Deployment environments" ``GET /repos/{o}/{r}/environments``. The variables endpoints return
values too; only names are kept.

Pacing: reads one at a time need no spacing (GitHub's "Best practices for using the REST
API"); writes keep PyGithub's 1 s spacing (secondary rate limits) unless ``throttle`` is off
(tests against a local server). PyGithub's default read throttle (0.25 s) made an audit of 95
pages take 24 s of sleeping, so it is off.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Mapping, Protocol, TypeVar, runtime_checkable

from clusterstack.errors import ClusterstackError

DEFAULT_API_URL = "https://api.github.com"
UNAVAILABLE_EXIT_CODE = 2
"""Exit code when GitHub or the network failed (5xx, no connection): 2, like every failure the
operator acts on (retry, fix the network) — exit 1 is kept for clusterstack's own bugs
(``github audit``: docs/github.md)."""
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")

T = TypeVar("T")


class GitHubError(ClusterstackError):
    """GitHub refused or could not answer. Exit 2 for what the user fixes (no or bad token,
    missing permission, unknown repository, rejected content), and exit 2 too
    (:data:`UNAVAILABLE_EXIT_CODE`) when GitHub or the network failed. The message says what
    was attempted and why it failed; the hint what usually fixes it."""


# --- the one error mapping ------------------------------------------------------------------

_REASONS = {401: "GitHub rejected the token", 403: "the token lacks permission", 404: "not found",
            422: "GitHub rejected the content"}


def _hint(status: int, permission: str) -> str:
    return {
        401: "set GITHUB_TOKEN to a valid token",
        403: permission,
        404: "check the repository (--repo, `repository:` in github.yaml) and the number; a private "
             "repository is invisible (404) to a token without access",
        422: "GitHub rejected the content (a comment over 65536 characters?)",
    }.get(status, "retry later; see https://www.githubstatus.com")


@contextmanager
def mapped(what: str, *, permission: str = "the token needs access to the repository") -> Iterator[None]:
    """Run PyGithub calls and turn their failures into :class:`GitHubError`: ``cannot <what>:
    <reason> (<status>)`` with a hint — ``permission`` is what a 403 needs (e.g. the workflow's
    ``permissions: pull-requests: write``). Every failure exits 2 (5xx and network failures:
    :data:`UNAVAILABLE_EXIT_CODE`); a network failure reads ``cannot reach GitHub (<api>) to
    <what>: <error> — check the network``."""
    from github import GithubException
    from requests import RequestException

    try:
        yield
    except GithubException as exc:
        status = exc.status
        if status in _REASONS:
            raise GitHubError(f"cannot {what}: {_REASONS[status]} ({status})",
                              _hint(status, permission)) from None
        err = GitHubError(f"cannot {what}: GitHub answered {status}", _hint(status, permission))
        err.exit_code = UNAVAILABLE_EXIT_CODE
        raise err from None
    except RequestException as exc:
        host = getattr(getattr(exc, "request", None), "url", None) or "the GitHub API"
        host = re.sub(r"^(https?://[^/]+).*$", r"\1", str(host))
        err = GitHubError(f"cannot reach {host} to {what}: {type(exc).__name__}",
                          "check the network and the API URL (--api-url / GITHUB_API_URL)")
        err.exit_code = UNAVAILABLE_EXIT_CODE
        raise err from None


def call(fn: Callable[[], T], what: str, **kw: Any) -> T:
    """``fn()`` under :func:`mapped` (same arguments)."""
    with mapped(what, **kw):
        return fn()


# --- typed results --------------------------------------------------------------------------

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


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


# --- the connection -------------------------------------------------------------------------

_WRITE = ("the workflow job needs `permissions: pull-requests: write` (PR comments) or "
          "`issues: write` (the drift issue)")
_NAMES = ("the token needs read access to Actions secrets, variables and environments "
          "(fine-grained: Secrets, Variables, Environments: read)")


@runtime_checkable
class GitHubRepo(Protocol):
    """One repository, as clusterstack uses it: the operations of CI (a pull request, its
    comments, the drift issue) and the names ``github audit`` compares (Actions secrets and
    variables of the repository and its environments; never a value). Implemented by
    :class:`Repository`. Every method raises :class:`GitHubError` (bad token, missing
    permission, unknown repository: exit 2; the network or GitHub itself failed: exit 1)."""

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

    def secret_names(self) -> set[str]:
        """Names of the repository's Actions secrets."""
        ...

    def variable_names(self) -> set[str]:
        """Names of the repository's Actions variables."""
        ...

    def environment_names(self) -> set[str]:
        ...

    def environment_secret_names(self, environment: str) -> set[str]:
        ...

    def environment_variable_names(self, environment: str) -> set[str]:
        ...


class GitHubApi(Protocol):
    """A connection to GitHub's REST API (:class:`GitHub`): its repositories."""

    def repository(self, full_name: str, *, check: bool = False) -> GitHubRepo:
        """``OWNER/NAME`` (with ``check``: read now). Raises GitHubError."""
        ...


class GitHubFactory(Protocol):
    """``Clients.github``: ``(api_url=None) → GitHubApi`` (:meth:`GitHub.from_env`)."""

    def __call__(self, api_url: str | None = None) -> GitHubApi:
        ...


class GitHub:
    """A PyGithub connection. ``base_url``: the REST API root; ``throttle``: keep the 1 s
    spacing of writes; ``retry``: PyGithub's retry policy (``"default"``: its ``GithubRetry``,
    which waits out rate limits; ``None``/``0``: none); ``timeout``: seconds per request.
    Nothing is requested until a repository is used."""

    def __init__(self, *, token: str, base_url: str = DEFAULT_API_URL, throttle: bool = True,
                 retry: Any = "default", timeout: int = 15) -> None:
        from github import Auth, Github

        kw: dict[str, Any] = {"seconds_between_requests": None, "timeout": timeout}
        if not throttle:
            kw["seconds_between_writes"] = None
        if retry != "default":
            kw["retry"] = retry
        self.base_url = base_url.rstrip("/")
        # lazy: objects are built from their URLs and fetched only when an attribute is read
        self._gh = Github(auth=Auth.Token(token), base_url=self.base_url, lazy=True, **kw)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, base_url: str | None = None,
                 **kw: Any) -> "GitHub":
        """The connection with the environment's token (``GITHUB_TOKEN``, else ``GH_TOKEN``)
        and API root (``base_url``, else ``GITHUB_API_URL``, else https://api.github.com).
        Raises GitHubError (exit 2) when no token is set."""
        env = os.environ if environ is None else environ
        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
        if not token:
            raise GitHubError("GITHUB_TOKEN is not set",
                              "export GITHUB_TOKEN=$(gh auth token) (in a workflow: env: GITHUB_TOKEN: "
                              "${{ github.token }}): a token that can read the repository (and write "
                              "PR comments or issues for `ci … --post/--issue`)")
        return cls(token=token, base_url=base_url or env.get("GITHUB_API_URL") or DEFAULT_API_URL, **kw)

    def repository(self, full_name: str, *, check: bool = False) -> "Repository":
        """``OWNER/NAME``. With ``check`` the repository is read now (``GET /repos/{o}/{r}``),
        so a bad token or an unknown repository fails before anything else. Raises GitHubError
        for a malformed name (exit 2)."""
        if not _REPO.match(full_name):
            raise GitHubError(f"bad repository {full_name!r}", "give it as OWNER/NAME", field="--repo")
        repo = self._gh.get_repo(full_name)
        if check:
            call(lambda: repo.id, f"read repository {full_name}", permission=_NAMES)
        return Repository(full_name, repo)


class Repository:
    """:class:`GitHubRepo` over PyGithub: the CI operations and the Actions names. Every
    method raises :class:`GitHubError`."""

    def __init__(self, full_name: str, repo: Any) -> None:
        self.full_name = full_name
        self._repo = repo
        self._comments: dict[int, Any] = {}
        self._environments: dict[str, Any] = {}

    # -- pull requests, comments, issues (CI) -------------------------------------------------
    def pull(self, number: int) -> PullInfo:
        with mapped(f"read pull request #{number}"):
            pr = self._repo.get_pull(number)
            head = pr.head.repo.full_name if pr.head is not None and pr.head.repo is not None else None
            base = pr.base.repo.full_name if pr.base is not None and pr.base.repo is not None else None
            return PullInfo(number=pr.number, merged=bool(pr.merged), merged_at=_utc(pr.merged_at),
                            head_repo=head, base_repo=base)

    def comments(self, number: int) -> list[CommentRef]:
        """Every conversation comment of issue / PR ``number``, oldest first (all pages)."""
        with mapped(f"read the comments of #{number}", permission=_WRITE):
            out = []
            for c in self._repo.get_issue(number).get_comments():  # get_issue is lazy: no request
                self._comments[c.id] = c
                out.append(CommentRef(id=c.id, body=c.body or ""))
            return out

    def create_comment(self, number: int, body: str) -> CommentRef:
        with mapped(f"comment on #{number}", permission=_WRITE):
            c = self._repo.get_issue(number).create_comment(body)
            self._comments[c.id] = c
            return CommentRef(id=c.id, body=c.body or "")

    def _comment(self, comment_id: int) -> Any:
        if comment_id not in self._comments:  # a lazy IssueComment: its URL only, no request
            self._comments[comment_id] = self._repo.get_issue(1).get_comment(comment_id)
        return self._comments[comment_id]

    def edit_comment(self, comment_id: int, body: str) -> None:
        with mapped(f"edit comment {comment_id}", permission=_WRITE):
            self._comment(comment_id).edit(body)

    def delete_comment(self, comment_id: int) -> None:
        with mapped(f"delete comment {comment_id}", permission=_WRITE):
            self._comment(comment_id).delete()
            self._comments.pop(comment_id, None)

    def open_issues(self, label: str) -> list[IssueRef]:
        """Open issues (not pull requests) carrying ``label``, by number."""
        with mapped(f"list issues labelled {label}", permission=_WRITE):
            out = [IssueRef(number=i.number, title=i.title or "", body=i.body or "", state=i.state,
                            labels=tuple(lb.name for lb in i.labels))
                   for i in self._repo.get_issues(state="open", labels=[label])
                   if i.pull_request is None]
            return sorted(out, key=lambda i: i.number)

    def create_issue(self, title: str, body: str, labels: tuple[str, ...]) -> IssueRef:
        with mapped("create an issue", permission=_WRITE):
            i = self._repo.create_issue(title=title, body=body, labels=list(labels))
            return IssueRef(number=i.number, title=i.title, body=i.body or "", state=i.state,
                            labels=tuple(lb.name for lb in i.labels))

    def edit_issue(self, number: int, *, title: str | None = None, body: str | None = None,
                   state: str | None = None, state_reason: str | None = None) -> None:
        from github.GithubObject import NotSet

        with mapped(f"edit issue #{number}", permission=_WRITE):
            self._repo.get_issue(number).edit(title=NotSet if title is None else title,
                                              body=NotSet if body is None else body,
                                              state=NotSet if state is None else state,
                                              state_reason=NotSet if state_reason is None else state_reason)

    # -- Actions names (github audit) ---------------------------------------------------------
    def _environment(self, name: str) -> Any:
        if name not in self._environments:
            self._environments[name] = self._repo.get_environment(name)
        return self._environments[name]

    def secret_names(self) -> set[str]:
        return call(lambda: {s.name for s in self._repo.get_secrets()}, "list Actions secrets",
                    permission=_NAMES)

    def variable_names(self) -> set[str]:
        return call(lambda: {v.name for v in self._repo.get_variables()}, "list Actions variables",
                    permission=_NAMES)

    def environment_names(self) -> set[str]:
        return call(lambda: {e.name for e in self._repo.get_environments()}, "list environments",
                    permission=_NAMES)

    def environment_secret_names(self, environment: str) -> set[str]:
        return call(lambda: {s.name for s in self._environment(environment).get_secrets()},
                    f"list secrets of environment {environment}", permission=_NAMES)

    def environment_variable_names(self, environment: str) -> set[str]:
        return call(lambda: {v.name for v in self._environment(environment).get_variables()},
                    f"list variables of environment {environment}", permission=_NAMES)
