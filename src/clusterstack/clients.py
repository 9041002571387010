"""The clients of the outside systems, in one object the CLI builds once and passes down.

:class:`Clients` holds a factory per outside system (docs/architecture.md, "Outside systems"),
each typed with the system's Protocol (:mod:`clusterstack.adapters`), and the clock.
:meth:`Clients.production` builds the real adapters lazily — constructing it imports no SDK;
each adapter imports its SDK when it is first called. The CLI calls
``clusterstack.cli.main(argv, clients=None)`` (None: production) and hands the object to every
flow; tests build their own (``Clients.production().replace(engine=…)``, or every field) and
pass it in — no module attribute is replaced.

Fields:

- ``engine(workspace, *, project_dir=None, config_file=None, env=None) -> Engine`` (an
  :class:`EngineFactory`) — the Pulumi engine over the workspace's cluster project, or another
  project directory, a ``--config-file`` and extra CLI environment
  (:func:`clusterstack.engine.open_engine`);
- ``git(root) -> GitRepo`` — :class:`clusterstack.adapters.git.Git`;
- ``kubernetes(context) -> KubeConnection`` — :func:`clusterstack.adapters.kubernetes.api_client`
  (the ``kubernetes.client.ApiClient`` a :class:`~clusterstack.adapters.kubernetes.KubernetesApi`
  calls through);
- ``cloud_run() -> CloudRunClients`` (the clients a
  :class:`~clusterstack.adapters.gcp.GoogleCloudRun` calls; built here so missing credentials
  are reported before anything is read) and ``secret_manager() -> SecretManagerClient`` — see
  :mod:`clusterstack.adapters.gcp`;
- ``gcp`` — :class:`clusterstack.adapters.gcp.GcpClients`, the other Google clients
  (``compute(name)``, ``artifact_registry()`` for ``verify``; ``iam_admin() -> IamAdminClient``
  for ``iam audit-keys``);
- ``github(api_url=None) -> GitHubApi`` (a :class:`~clusterstack.adapters.github.GitHubFactory`)
  — :meth:`clusterstack.adapters.github.GitHub.from_env` (token from
  ``GITHUB_TOKEN``/``GH_TOKEN``; ``api_url`` else ``GITHUB_API_URL``);
- ``kms(key_uri) -> tink aead.Aead`` — :class:`clusterstack.adapters.kms.Kms` (Cloud KMS, the
  IAM keyset's key-encryption key; production: :class:`~clusterstack.adapters.kms.GcpKms`);
- ``clock`` — :class:`Clock`: wall time, a monotonic clock and sleep (what waits and ages
  are measured with).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from clusterstack.adapters.gcp import CloudRunClients, GcpClients, SecretManagerClient
from clusterstack.adapters.git import Git, GitRepo
from clusterstack.adapters.github import GitHub, GitHubApi, GitHubFactory
from clusterstack.adapters.kms import GcpKms, Kms
from clusterstack.adapters.kubernetes import KubeConnection, api_client
from clusterstack.engine import Engine, open_engine

if TYPE_CHECKING:
    from clusterstack.workspace import Workspace


class Clock(Protocol):
    """Time as clusterstack reads it."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (bounded waits)."""
        ...

    def sleep(self, seconds: float) -> None:
        ...


class SystemClock:
    """:class:`Clock` of the machine (``datetime.now(UTC)``, ``time.monotonic``, ``time.sleep``)."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class EngineFactory(Protocol):
    """``Clients.engine``: the :class:`~clusterstack.engine.model.Engine` over ``workspace``'s
    cluster project, or over ``project_dir`` with ``config_file`` and extra CLI ``env``."""

    def __call__(self, workspace: Workspace, *, project_dir: Path | None = None,
                 config_file: Path | None = None, env: dict[str, str] | None = None) -> Engine:
        ...


def _engine(workspace: Workspace, *, project_dir: Path | None = None, config_file: Path | None = None,
            env: dict[str, str] | None = None) -> Engine:
    return open_engine(workspace, project_dir=project_dir, config_file=config_file, env=env)


def _git(root: Path) -> GitRepo:
    return Git(root)


def _kubernetes(context: str) -> KubeConnection:
    return api_client(context)


def _github(api_url: str | None = None) -> GitHubApi:
    return GitHub.from_env(base_url=api_url)


@dataclass(frozen=True)
class Clients:
    """One factory per outside system, and the clock (see the module docstring)."""

    engine: EngineFactory
    git: Callable[[Path], GitRepo]
    kubernetes: Callable[[str], KubeConnection]
    cloud_run: Callable[[], CloudRunClients]
    secret_manager: Callable[[], SecretManagerClient]
    gcp: GcpClients
    github: GitHubFactory
    clock: Clock
    kms: Kms = dataclasses.field(default_factory=GcpKms)  # last: Clients(...) built by tests without it get the production one

    @classmethod
    def production(cls) -> "Clients":
        """The real adapters, each built on first use (Application Default Credentials, the
        ambient kubeconfig, the Pulumi CLI on PATH, the GitHub token of the environment)."""
        gcp = GcpClients()
        return cls(engine=_engine, git=_git, kubernetes=_kubernetes, cloud_run=gcp.cloud_run,
                   secret_manager=gcp.secret_manager, gcp=gcp, github=_github, clock=SystemClock(), kms=GcpKms())

    def replace(self, **changes: Any) -> "Clients":
        """A copy with ``changes`` (field name → new value)."""
        return dataclasses.replace(self, **changes)
