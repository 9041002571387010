"""A local HTTP server on 127.0.0.1 that answers like the GitHub REST API for what ``clusterstack
ci`` does: pull requests, issue/PR conversation comments and issues. The tests run the real
PyGithub client (``clusterstack.ci.github.PyGithubRepo``) against it.

Shapes follow the GitHub REST reference ("Issues", "Issue comments", "Pulls"):
``GET /repos/{o}/{r}/pulls/{n}`` (a pull request with ``merged``/``merged_at``, ``head.repo``,
``base.repo``); ``GET|POST /repos/{o}/{r}/issues/{n}/comments`` (arrays, paginated with
``per_page``/``page`` and a ``Link`` header, default 30 per page as GitHub); ``GET|PATCH|DELETE
/repos/{o}/{r}/issues/comments/{id}``; ``GET /repos/{o}/{r}/issues?state=&labels=`` (pull
requests included, carrying a ``pull_request`` key, as GitHub does); ``POST
/repos/{o}/{r}/issues``; ``GET|PATCH /repos/{o}/{r}/issues/{n}``. Every object carries its own
``url`` pointing back at this server, because PyGithub follows those. Errors are GitHub's
``{"message", "documentation_url", "status"}``; a wrong token gets 401 ``Bad credentials``;
paths in ``forbidden`` get 403 ``Resource not accessible by integration`` (a workflow token
without the permission). Every request is recorded as ``(METHOD, path)``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

STAMP = "2026-01-10T14:59:22Z"
DOCS = "https://docs.github.com/rest"
BOT = {"login": "github-actions[bot]", "id": 41898282, "node_id": "MDM6Qm90NDE4OTgyODI=", "type": "Bot",
       "site_admin": False}
HUMAN = {"login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": False}


class FakeGitHub:
    """``with FakeGitHub() as gh: gh.add_repo("o/r"); gh.add_pull("o/r", 7, merged_at=…)``;
    ``gh.base_url`` is the API root to give PyGithub (``GITHUB_API_URL``)."""

    def __init__(self, *, token: str = "test-token", deadline: float = 120.0) -> None:
        self.token = token
        self.repos: dict[str, dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}   # id → {"repo", "issue", "body", "user"}
        self.forbidden: set[tuple[str, str]] = set()    # (METHOD, path) answered 403
        self.requests: list[tuple[str, str]] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                payload = json.loads(raw) if raw else {}
                with server._lock:
                    server.requests.append((method, parts.path))
                    status, body, headers = server.respond(method, parts.path, parse_qs(parts.query),
                                                           payload, self.headers.get("Authorization", ""))
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if data:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._handle("PATCH")

            def do_DELETE(self) -> None:  # noqa: N802
                self._handle("DELETE")

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._watchdog = threading.Timer(deadline, self._httpd.shutdown)
        self._watchdog.daemon = True

    def __enter__(self) -> "FakeGitHub":
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- data -----------------------------------------------------------------------------------

    def add_repo(self, full_name: str) -> None:
        self.repos[full_name] = {"pulls": {}, "issues": {}}

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

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    # --- JSON shapes ------------------------------------------------------------------------------

    def _repo_json(self, full_name: str) -> dict:
        owner, name = full_name.split("/")
        return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": name, "full_name": full_name,
                "private": True, "owner": {"login": owner, "id": 2, "type": "Organization"},
                "html_url": f"https://github.com/{full_name}", "url": f"{self.base_url}/repos/{full_name}",
                "default_branch": "main"}

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

    def _page(self, path: str, query: dict, items: list[dict]) -> tuple[int, list, dict]:
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        extra = "".join(f"&{k}={v[0]}" for k, v in sorted(query.items()) if k not in ("per_page", "page"))
        links = []
        if page < last:
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={page + 1}{extra}>; rel="next"')
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={last}{extra}>; rel="last"')
        return 200, items[(page - 1) * per_page: page * per_page], ({"Link": ", ".join(links)} if links else {})

    def respond(self, method: str, path: str, query: dict, payload: dict, auth: str) -> tuple[int, Any, dict]:
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return self._error(401, "Bad credentials")
        if (method, path) in self.forbidden:
            return self._error(403, "Resource not accessible by integration")
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "repos" or f"{parts[1]}/{parts[2]}" not in self.repos:
            return self._error(404, "Not Found")
        full = f"{parts[1]}/{parts[2]}"
        repo = self.repos[full]
        rest = parts[3:]
        if rest == [] and method == "GET":
            return 200, self._repo_json(full), {}
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
