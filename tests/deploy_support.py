"""Helpers shared by the deploy tests: a throw-away git workspace with the shipped services,
real API clients pointed at the local fake servers, the executor's waits on a fake clock, the
operator at the keyboard."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusterstack.deploy.model import Timing
from helpers import REPO, git  # noqa: F401
from fakes.clock import FakeClock




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
    """The official client for the fake API server (:func:`fakes.kubernetes_api.client_for`)."""
    from fakes.kubernetes_api import client_for

    return client_for(url)


def cloud_run_clients(url: str):
    """``ServicesClient`` and ``RevisionsClient`` over REST against the fake server
    (:meth:`clusterstack.adapters.gcp.GcpClients.cloud_run` with a local endpoint)."""
    from google.auth.credentials import AnonymousCredentials

    from clusterstack.adapters.gcp import GcpClients

    run = GcpClients(api_endpoint=url, credentials=AnonymousCredentials()).cloud_run()
    return run.services, run.revisions


def cloud_run_api(url: str):
    """:class:`clusterstack.adapters.gcp.GoogleCloudRun` over REST against the fake server."""
    from google.auth.credentials import AnonymousCredentials

    from clusterstack.adapters.gcp import GcpClients, GoogleCloudRun

    return GoogleCloudRun(GcpClients(api_endpoint=url, credentials=AnonymousCredentials()))


def timing(timeout: float = 30.0, interval: float = 5.0, clock: FakeClock | None = None) -> Timing:
    """The executor's waits on a :class:`fakes.clock.FakeClock`."""
    clock = clock or FakeClock()
    return Timing(timeout=timeout, interval=interval, clock=clock.monotonic, sleep=clock.sleep)


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
