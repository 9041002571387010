"""The one local HTTP server every API fake runs on (GitHub, Kubernetes, GCP): the tests drive
the real client libraries (PyGithub, ``kubernetes``, ``google-cloud-*``) against it.

A subclass implements :meth:`FakeServer.handle` (method, percent-decoded path, query, raw body,
content type) and answers ``(status, body)`` or ``(status, body, headers)`` — a dict/list body
is sent as JSON, a str as text/plain, None as no body — or :data:`DROP` to close the
connection without answering (a response lost on the wire).

It listens on 127.0.0.1 (an ephemeral port; :attr:`FakeServer.url`), speaks HTTP/1.1 with
keep-alive (Nagle off: headers and body are two writes, no 40 ms delayed-ACK stall), records
every request (:attr:`requests` as ``(METHOD, path)``, :attr:`raw_paths` as sent), and stops by
itself: a watchdog shuts it down after ``deadline`` seconds even if a test never leaves the
``with`` block, and every connection has a socket timeout. :attr:`faults` is a queue the fakes
consume on their mutating requests; :attr:`lock` guards the fake's world.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

DROP = object()
"""Answer of :meth:`FakeServer.handle`: close the connection without a response."""


class FakeServer:
    """``with SubClass(...) as srv:`` — see the module docstring."""

    def __init__(self, *, deadline: float = 60.0) -> None:
        self.requests: list[tuple[str, str]] = []
        self.raw_paths: list[str] = []   # as sent, before percent-decoding
        self.faults: list[Any] = []
        self.objects: dict[str, Any] = {}                 # the fake world, by API path
        self.failures: dict[str, tuple[int, Any]] = {}    # path → (status, body) answered instead
        self.before_write: Callable[[], None] | None = None  # run once, just before a write
        self.lock = threading.RLock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                with server.lock:
                    server.raw_paths.append(parts.path)
                    server.requests.append((self.command, unquote(parts.path)))
                    result = server.handle(self.command, unquote(parts.path), parse_qs(parts.query),
                                           raw, self.headers)
                if result is DROP:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                status, body, *rest = result
                headers = rest[0] if rest else {}
                if body is None:
                    data, ctype = b"", "application/json; charset=utf-8"
                elif isinstance(body, str):
                    data, ctype = body.encode(), "text/plain"
                else:
                    data, ctype = json.dumps(body).encode(), "application/json; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if data:
                    self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._watchdog = threading.Timer(deadline, self._httpd.shutdown)
        self._watchdog.daemon = True

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the API root to give the client."""
        return f"http://127.0.0.1:{self._httpd.server_port}"

    base_url = url

    def __enter__(self):
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def next_fault(self) -> Any:
        return self.faults.pop(0) if self.faults else None

    def begin_write(self) -> tuple[Any, Any]:
        """The prologue every fake write shares: pop the next fault. ``"drop"`` → ``(DROP,
        None)`` (the connection closes); a ``(status, body)`` tuple → ``(it, None)``; otherwise
        ``before_write`` runs once and the answer is ``(None, fault)`` — the caller acts on its
        own fault names (``"op-error"`` …)."""
        fault = self.next_fault()
        if fault == "drop":
            return DROP, None
        if isinstance(fault, tuple):
            return fault, None
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook()
        return None, fault

    def writes(self, method: str | None = None) -> list:
        """``method`` given: the paths of requests with that method; else every non-GET
        request as ``(METHOD, path)``."""
        if method is None:
            return [r for r in self.requests if r[0] != "GET"]
        return [p for m, p in self.requests if m == method]

    def handle(self, method: str, path: str, query: dict[str, list[str]], raw: bytes, headers: Any):
        raise NotImplementedError
