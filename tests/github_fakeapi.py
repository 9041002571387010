"""A local HTTP server on 127.0.0.1 that answers like the GitHub REST API for the endpoints
``clusterstack github audit`` reads, so the tests run the real PyGithub client against it.

Shapes follow the GitHub REST reference: ``GET /repos/{o}/{r}`` (a repository object),
``…/actions/secrets`` (``{"total_count", "secrets": [{"name", "created_at", "updated_at"}]}``),
``…/actions/variables`` (``{"total_count", "variables": [{"name", "value", …}]}`` — values
included, as GitHub does), ``…/environments`` (``{"total_count", "environments": [...]}``),
``…/environments/{e}`` (an environment object) and ``…/environments/{e}/secrets|variables``. Lists paginate with ``per_page``/``page`` and a
``Link`` header (rel="next"/"last"), as GitHub does. Errors are GitHub's
``{"message", "documentation_url", "status"}`` documents. A wrong token gets 401
``Bad credentials``. The server records every request path and stops by itself after
``deadline`` seconds.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

STAMP = "2024-01-10T14:59:22Z"
DOCS = "https://docs.github.com/rest"


class FakeGitHub:
    """``with FakeGitHub(token="t") as gh: gh.add_repo("o/r", secrets=[...], ...)``;
    ``gh.base_url`` is the API root to give PyGithub."""

    def __init__(self, *, token: str = "test-token", deadline: float = 60.0) -> None:
        self.token = token
        self.repos: dict[str, dict[str, Any]] = {}
        self.forbidden: set[str] = set()     # paths answered 403
        self.broken: set[str] = set()        # paths answered 502 (GitHub having a bad day)
        self.requests: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                parts = urlsplit(self.path)
                with server._lock:
                    server.requests.append(parts.path)
                status, body, headers = server.respond(parts.path, parse_qs(parts.query),
                                                       self.headers.get("Authorization", ""))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

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

    # --- data ---------------------------------------------------------------------------------

    def add_repo(self, full_name: str, *, secrets: list[str] = (), variables: dict[str, str] | None = None,
                 environments: dict[str, dict[str, Any]] | None = None) -> None:
        """A repository with Actions ``secrets`` (names), ``variables`` (name → value) and
        ``environments`` (name → {"secrets": [names], "variables": {name: value}})."""
        self.repos[full_name] = {"secrets": list(secrets), "variables": dict(variables or {}),
                                 "environments": {k: {"secrets": list(v.get("secrets", ())),
                                                      "variables": dict(v.get("variables", {}))}
                                                  for k, v in (environments or {}).items()}}

    # --- REST ---------------------------------------------------------------------------------

    def _error(self, status: int, message: str) -> tuple[int, dict, dict]:
        return status, {"message": message, "documentation_url": DOCS, "status": str(status)}, {}

    def _page(self, path: str, query: dict, key: str, items: list[dict]) -> tuple[int, dict, dict]:
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        if page < last:
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{self.base_url}{path}?per_page={per_page}&page={last}>; rel="last"')
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, {"total_count": len(items), key: chunk}, headers

    def _repo_json(self, full_name: str) -> dict:
        owner, name = full_name.split("/")
        return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": name,
                "full_name": full_name, "private": True,
                "owner": {"login": owner, "id": 1, "type": "Organization",
                          "url": f"{self.base_url}/users/{owner}"},
                "html_url": f"https://github.com/{full_name}",
                "url": f"{self.base_url}/repos/{full_name}", "default_branch": "main",
                "created_at": STAMP, "updated_at": STAMP, "pushed_at": STAMP}

    def _env_json(self, full_name: str, env: str) -> dict:
        return {"id": 161088068, "node_id": "MDExOkVudmlyb25tZW50MTYxMDg4MDY4", "name": env,
                "url": f"{self.base_url}/repos/{full_name}/environments/{quote(env)}",
                "html_url": f"https://github.com/{full_name}/deployments/activity_log?environments_filter={env}",
                "created_at": STAMP, "updated_at": STAMP, "protection_rules": [],
                "deployment_branch_policy": None}

    def respond(self, path: str, query: dict, auth: str) -> tuple[int, dict, dict]:
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return self._error(401, "Bad credentials")
        if path in self.forbidden:
            return self._error(403, "Resource not accessible by personal access token")
        if path in self.broken:
            return 502, {"message": "Server Error"}, {}
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if len(parts) < 3 or parts[0] != "repos":
            return self._error(404, "Not Found")
        full_name = f"{parts[1]}/{parts[2]}"
        repo = self.repos.get(full_name)
        if repo is None:
            return self._error(404, "Not Found")
        rest = parts[3:]
        if rest == []:
            return 200, self._repo_json(full_name), {}
        if rest == ["actions", "secrets"]:
            return self._page(path, query, "secrets", [
                {"name": n, "created_at": STAMP, "updated_at": STAMP} for n in repo["secrets"]])
        if rest == ["actions", "variables"]:
            return self._page(path, query, "variables", [
                {"name": n, "value": v, "created_at": STAMP, "updated_at": STAMP}
                for n, v in repo["variables"].items()])
        if rest == ["environments"]:
            return self._page(path, query, "environments", [
                self._env_json(full_name, e) for e in repo["environments"]])
        if len(rest) == 2 and rest[0] == "environments":
            if rest[1] not in repo["environments"]:
                return self._error(404, "Not Found")
            return 200, self._env_json(full_name, rest[1]), {}
        if len(rest) == 3 and rest[0] == "environments" and rest[2] in ("secrets", "variables"):
            env = repo["environments"].get(rest[1])
            if env is None:
                return self._error(404, "Not Found")
            if rest[2] == "secrets":
                return self._page(path, query, "secrets", [
                    {"name": n, "created_at": STAMP, "updated_at": STAMP} for n in env["secrets"]])
            return self._page(path, query, "variables", [
                {"name": n, "value": v, "created_at": STAMP, "updated_at": STAMP}
                for n, v in env["variables"].items()])
        return self._error(404, "Not Found")
