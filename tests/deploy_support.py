"""Helpers shared by the deploy tests: a throw-away git workspace with the shipped services,
real API clients pointed at the local fake servers, a fake clock, the operator at the keyboard."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusterstack.deploy.model import Timing

REPO = Path(__file__).resolve().parent.parent


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=t@example.org", *args],
                          cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def make_workspace(tmp_path: Path) -> Path:
    """clusterstack.toml, clusters/, infra/, services/ and services.yaml, committed on main."""
    root = tmp_path / "ws"
    root.mkdir()
    for f in ("clusterstack.toml", "services.yaml"):
        shutil.copy(REPO / f, root / f)
    for d in ("clusters", "infra", "services"):
        shutil.copytree(REPO / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    (root / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def kube_client(url: str):
    """The official client, configured for the fake API server (no retries: a dropped
    connection must surface)."""
    from kubernetes import client

    from clusterstack.deploy.kubernetes import SAFE_PATH_CHARS

    cfg = client.Configuration()
    cfg.host = url
    cfg.retries = 0
    cfg.safe_chars_for_path_param = SAFE_PATH_CHARS  # as clusterstack.deploy.kubernetes.api_client
    return client.ApiClient(cfg)


def cloud_run_clients(url: str):
    """``ServicesClient`` and ``RevisionsClient`` over REST against the fake server."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import run_v2

    opts = ClientOptions(api_endpoint=url)
    return (run_v2.ServicesClient(credentials=AnonymousCredentials(), transport="rest", client_options=opts),
            run_v2.RevisionsClient(credentials=AnonymousCredentials(), transport="rest", client_options=opts))


class FakeClock:
    """Time that passes only when someone sleeps: bounded waits end after a fixed number of
    polls, and no test waits on the wall clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


def timing(timeout: float = 30.0, interval: float = 5.0, clock: FakeClock | None = None) -> Timing:
    clock = clock or FakeClock()
    return Timing(timeout=timeout, interval=interval, clock=clock, sleep=clock.sleep)


class Typing:
    """The operator at the keyboard: answers prompts in order; None = stdin closed."""

    def __init__(self, monkeypatch, *answers: str | None) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        monkeypatch.setattr("builtins.input", self)

    def __call__(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise AssertionError("an unexpected confirmation was asked")
        a = self.answers.pop(0)
        if a is None:
            raise EOFError
        return a
