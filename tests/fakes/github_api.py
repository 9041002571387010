"""The GitHub REST API fake (on :mod:`fakes.http`): what ``clusterstack ci`` and ``clusterstack
github audit`` use, answered in GitHub's shapes so the tests run the real PyGithub client
(:class:`clusterstack.adapters.github.GitHub`) against it.

Endpoints and shapes (GitHub REST API reference, version 2022-11-28):

- "Repositories": ``GET /repos/{o}/{r}`` (a repository object);
- "Pulls": ``GET /repos/{o}/{r}/pulls/{n}`` (``merged``/``merged_at``, ``head.repo``,
  ``base.repo``);
- "Issue comments": ``GET|POST /repos/{o}/{r}/issues/{n}/comments`` (a pull request's
  conversation comments are issue comments), ``GET|PATCH|DELETE
  /repos/{o}/{r}/issues/comments/{id}``; a body over 65536 characters is 422;
- "Issues": ``GET /repos/{o}/{r}/issues?state=&labels=`` (pull requests included, carrying a
  ``pull_request`` key, as GitHub does), ``POST /repos/{o}/{r}/issues``, ``GET|PATCH
  /repos/{o}/{r}/issues/{n}``;
- "Actions secrets" / "Actions variables": ``GET /repos/{o}/{r}/actions/secrets`` (``{"total_count",
  "secrets": [{"name", "created_at", "updated_at"}]}``), ``…/actions/variables`` (values
  included, as GitHub does), ``…/environments/{e}/secrets|variables``;
- "Deployment environments": ``GET /repos/{o}/{r}/environments``, ``…/environments/{e}``.

Lists paginate with ``per_page``/``page`` (default 30, as GitHub) and a ``Link`` header
(``rel="next"``/``"last"``). Every object carries its own ``url`` back to this server (PyGithub
follows those). Errors are GitHub's ``{"message", "documentation_url", "status"}``: a wrong
token gets 401 ``Bad credentials``; :attr:`forbidden` paths (any method) or ``(METHOD, path)``
pairs get 403 ``Resource not accessible by integration`` (a workflow token without the
permission); :attr:`broken` paths get 502 (GitHub having a bad day).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from fakes.http import FakeServer

STAMP = "2026-01-10T14:59:22Z"
DOCS = "https://docs.github.com/rest"
BOT = {"login": "github-actions[bot]", "id": 41898282, "node_id": "MDM6Qm90NDE4OTgyODI=", "type": "Bot",
       "site_admin": False}
HUMAN = {"login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": False}


class FakeGitHub(FakeServer):
    """``with FakeGitHub(token="t") as gh: gh.add_repo("o/r", secrets=[…]); gh.add_pull("o/r", 7)``;
    ``gh.base_url`` is the API root to give PyGithub (``GITHUB_API_URL``)."""

    def __init__(self, *, token: str = "test-token", deadline: float = 120.0) -> None:
        super().__init__(deadline=deadline)
        self.token = token
        self.repos: dict[str, dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}   # id → {"repo", "issue", "body", "user"}
        self.forbidden: set[Any] = set()    # paths, or (METHOD, path), answered 403
        self.broken: set[str] = set()       # paths answered 502
        self._next_id = 1000

    # --- data -----------------------------------------------------------------------------------

    def add_repo(self, full_name: str, *, secrets: list[str] = (), variables: dict[str, str] | None = None,
                 environments: dict[str, dict[str, Any]] | None = None) -> None:
        """A repository with Actions ``secrets`` (names), ``variables`` (name → value) and
        ``environments`` (name → {"secrets": [names], "variables": {name: value}})."""
        self.repos[full_name] = {
            "pulls": {}, "issues": {}, "secrets": list(secrets), "variables": dict(variables or {}),
            "environments": {k: {"secrets": list(v.get("secrets", ())), "variables": dict(v.get("variables", {}))}
                             for k, v in (environments or {}).items()}}

    def add_pull(self, full_name: str, number: int, *, merged_at: str | None = None,
                 head_repo: str | None = None) -> None:
        """A pull request (also an issue of the same number, as on GitHub)."""
        repo = self.repos[full_name]
        repo["pulls"][number] = {"merged_at": merged_at, "head_repo": head_repo or full_name}
        repo["issues"][number] = {"title": f"PR {number}", "body": "", "state": "closed" if merged_at else "open",
                                  "state_reason": None, "labels": [], "pull": True}

    def add_comment(self, full_name: str, number: int, body: str, *, human: bool = False) -> int:
        self._next_id += 1
        self.comments[self._next_id] = {"repo": full_name, "issue": number, "body": body,
                                        "user": HUMAN if human else BOT}
        return self._next_id

    def thread(self, full_name: str, number: int) -> list[str]:
        """Bodies of the comments of issue / PR ``number``, oldest first."""
        return [c["body"] for _, c in sorted(self.comments.items())
                if c["repo"] == full_name and c["issue"] == number]

    def paths(self) -> list[str]:
        """The paths of every request, in order."""
        return [p for _, p in self.requests]

    # --- JSON shapes ------------------------------------------------------------------------------

    def _repo_json(self, full_name: str) -> dict:
        owner, name = full_name.split("/")
        return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": name, "full_name": full_name,
                "private": True, "owner": {"login": owner, "id": 2, "type": "Organization",
                                           "url": f"{self.base_url}/users/{owner}"},
                "html_url": f"https://github.com/{full_name}", "url": f"{self.base_url}/repos/{full_name}",
                "default_branch": "main", "created_at": STAMP, "updated_at": STAMP, "pushed_at": STAMP}

    def _env_json(self, full_name: str, env: str) -> dict:
        return {"id": 161088068, "node_id": "MDExOkVudmlyb25tZW50MTYxMDg4MDY4", "name": env,
                "url": f"{self.base_url}/repos/{full_name}/environments/{quote(env)}",
                "html_url": f"https://github.com/{full_name}/deployments/activity_log?environments_filter={env}",
                "created_at": STAMP, "updated_at": STAMP, "protection_rules": [],
                "deployment_branch_policy": None}

    def _comment_json(self, cid: int) -> dict:
        c = self.comments[cid]
        base = f"{self.base_url}/repos/{c['repo']}"
        return {"id": cid, "node_id": f"IC_{cid}", "url": f"{base}/issues/comments/{cid}",
                "html_url": f"https://github.com/{c['repo']}/pull/{c['issue']}#issuecomment-{cid}",
                "body": c["body"], "user": c["user"], "created_at": STAMP, "updated_at": STAMP,
                "issue_url": f"{base}/issues/{c['issue']}", "author_association": "NONE"}

    def _label_json(self, full_name: str, name: str) -> dict:
        return {"id": abs(hash(name)) % 10**9, "node_id": f"LA_{name}",
                "url": f"{self.base_url}/repos/{full_name}/labels/{name}", "name": name,
                "color": "d73a4a", "default": False, "description": None}

    def _issue_json(self, full_name: str, number: int) -> dict:
        i = self.repos[full_name]["issues"][number]
        base = f"{self.base_url}/repos/{full_name}"
        doc = {"id": 1_000_000 + number, "node_id": f"I_{number}", "url": f"{base}/issues/{number}",
               "repository_url": base, "comments_url": f"{base}/issues/{number}/comments",
               "html_url": f"https://github.com/{full_name}/issues/{number}", "number": number,
               "state": i["state"], "state_reason": i["state_reason"], "title": i["title"], "body": i["body"],
               "user": BOT, "labels": [self._label_json(full_name, n) for n in i["labels"]],
               "assignees": [], "locked": False,
               "comments": sum(1 for c in self.comments.values() if c["repo"] == full_name and c["issue"] == number),
               "created_at": STAMP, "updated_at": STAMP,
               "closed_at": STAMP if i["state"] == "closed" else None}
        if i.get("pull"):
            doc["pull_request"] = {"url": f"{base}/pulls/{number}",
                                   "html_url": f"https://github.com/{full_name}/pull/{number}"}
        return doc

    def _pull_json(self, full_name: str, number: int) -> dict:
        p = self.repos[full_name]["pulls"][number]
        base = f"{self.base_url}/repos/{full_name}"

        def ref(repo_name: str, branch: str) -> dict:
            return {"label": f"{repo_name.split('/')[0]}:{branch}", "ref": branch,
                    "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "user": HUMAN,
                    "repo": self._repo_json(repo_name)}

        return {"url": f"{base}/pulls/{number}", "id": 2_000_000 + number, "node_id": f"PR_{number}",
                "html_url": f"https://github.com/{full_name}/pull/{number}", "number": number,
                "state": "closed" if p["merged_at"] else "open", "locked": False, "title": f"PR {number}",
                "user": HUMAN, "body": "", "created_at": STAMP, "updated_at": STAMP,
                "closed_at": p["merged_at"], "merged_at": p["merged_at"], "merged": p["merged_at"] is not None,
                "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
                "issue_url": f"{base}/issues/{number}", "comments_url": f"{base}/issues/{number}/comments",
                "head": ref(p["head_repo"], "feature"), "base": ref(full_name, "main")}

    # --- REST -------------------------------------------------------------------------------------

    def _error(self, status: int, message: str) -> tuple[int, dict, dict]:
        return status, {"message": message, "documentation_url": DOCS, "status": str(status)}, {}

    def _page(self, path: str, query: dict, items: list[dict], key: str | None = None) -> tuple[int, Any, dict]:
        """One page of ``items``: an array, or ``{"total_count", key: [...]}`` for the Actions
        and environments lists."""
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        extra = "".join(f"&{k}={v[0]}" for k, v in sorted(query.items()) if k not in ("per_page", "page"))
        links = []
        if page < last:
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={page + 1}{extra}>; rel="next"')
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={last}{extra}>; rel="last"')
        chunk = items[(page - 1) * per_page: page * per_page]
        body = chunk if key is None else {"total_count": len(items), key: chunk}
        return 200, body, ({"Link": ", ".join(links)} if links else {})

    def handle(self, method, path, query, raw, headers):
        payload = json.loads(raw) if raw else {}
        auth = headers.get("Authorization", "")
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return self._error(401, "Bad credentials")
        if path in self.forbidden or (method, path) in self.forbidden:
            return self._error(403, "Resource not accessible by integration")
        if path in self.broken:
            return 502, {"message": "Server Error"}, {}
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "repos" or f"{parts[1]}/{parts[2]}" not in self.repos:
            return self._error(404, "Not Found")
        full = f"{parts[1]}/{parts[2]}"
        repo = self.repos[full]
        rest = parts[3:]
        if rest == [] and method == "GET":
            return 200, self._repo_json(full), {}
        if rest[:1] in (["actions"], ["environments"]) and method == "GET":
            return self._actions(full, repo, path, query, rest)
        if len(rest) == 2 and rest[0] == "pulls" and method == "GET":
            n = int(rest[1])
            if n not in repo["pulls"]:
                return self._error(404, "Not Found")
            return 200, self._pull_json(full, n), {}
        if len(rest) == 3 and rest[:2] == ["issues", "comments"]:
            cid = int(rest[2])
            if cid not in self.comments or self.comments[cid]["repo"] != full:
                return self._error(404, "Not Found")
            if method == "GET":
                return 200, self._comment_json(cid), {}
            if method == "PATCH":
                if len(payload.get("body", "")) > 65536:
                    return self._error(422, "Validation Failed")
                self.comments[cid]["body"] = payload["body"]
                return 200, self._comment_json(cid), {}
            if method == "DELETE":
                del self.comments[cid]
                return 204, None, {}
        if len(rest) == 3 and rest[0] == "issues" and rest[2] == "comments":
            n = int(rest[1])
            if n not in repo["issues"]:
                return self._error(404, "Not Found")
            if method == "GET":
                ids = sorted(i for i, c in self.comments.items() if c["repo"] == full and c["issue"] == n)
                return self._page(path, query, [self._comment_json(i) for i in ids])
            if method == "POST":
                if len(payload.get("body", "")) > 65536:
                    return self._error(422, "Validation Failed")
                cid = self.add_comment(full, n, payload["body"])
                return 201, self._comment_json(cid), {}
        if rest == ["issues"]:
            if method == "GET":
                state = query.get("state", ["open"])[0]
                labels = [x for x in query.get("labels", [""])[0].split(",") if x]
                nums = sorted(n for n, i in repo["issues"].items()
                              if (state == "all" or i["state"] == state) and all(lb in i["labels"] for lb in labels))
                return self._page(path, query, [self._issue_json(full, n) for n in nums])
            if method == "POST":
                n = max([*repo["issues"], 0]) + 1
                repo["issues"][n] = {"title": payload["title"], "body": payload.get("body") or "",
                                     "state": "open", "state_reason": None,
                                     "labels": list(payload.get("labels") or [])}
                return 201, self._issue_json(full, n), {}
        if len(rest) == 2 and rest[0] == "issues":
            n = int(rest[1])
            if n not in repo["issues"]:
                return self._error(404, "Not Found")
            if method == "GET":
                return 200, self._issue_json(full, n), {}
            if method == "PATCH":
                i = repo["issues"][n]
                for key in ("title", "body", "state", "state_reason"):
                    if key in payload:
                        i[key] = payload[key]
                if "labels" in payload:
                    i["labels"] = list(payload["labels"])
                return 200, self._issue_json(full, n), {}
        return self._error(404, "Not Found")

    def _actions(self, full: str, repo: dict, path: str, query: dict, rest: list[str]):
        """Actions secrets/variables and deployment environments (names; values only in variables)."""
        def secrets(names):
            return [{"name": n, "created_at": STAMP, "updated_at": STAMP} for n in names]

        def variables(values):
            return [{"name": n, "value": v, "created_at": STAMP, "updated_at": STAMP} for n, v in values.items()]

        if rest == ["actions", "secrets"]:
            return self._page(path, query, secrets(repo["secrets"]), "secrets")
        if rest == ["actions", "variables"]:
            return self._page(path, query, variables(repo["variables"]), "variables")
        if rest == ["environments"]:
            return self._page(path, query, [self._env_json(full, e) for e in repo["environments"]], "environments")
        env = repo["environments"].get(rest[1]) if len(rest) >= 2 else None
        if env is None:
            return self._error(404, "Not Found")
        if len(rest) == 2:
            return 200, self._env_json(full, rest[1]), {}
        if rest[2:] == ["secrets"]:
            return self._page(path, query, secrets(env["secrets"]), "secrets")
        if rest[2:] == ["variables"]:
            return self._page(path, query, variables(env["variables"]), "variables")
        return self._error(404, "Not Found")
