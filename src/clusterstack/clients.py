"""The clients of the outside systems, in one object the CLI builds once and passes down.

:class:`Clients` holds a factory per outside system (docs/architecture.md, "Outside systems")
and the clock. :meth:`Clients.production` builds the real adapters lazily — constructing it
imports no SDK; each factory imports its SDK when it is first called. The CLI calls
``clusterstack.cli.main(argv, clients=None)`` (None: production) and hands the object to every
flow; tests build their own (``Clients.production().replace(engine=…)``, or every field) and
pass it in — no module attribute is replaced.

Fields:

- ``engine(workspace, *, project_dir=None, config_file=None, env=None) -> Engine`` — the
  Pulumi engine over the workspace's cluster project, or another project directory, a
  ``--config-file`` and extra CLI environment (:func:`clusterstack.engine.open_engine`);
- ``git(root) -> Git`` — :class:`clusterstack.adapters.git.Git`;
- ``kubernetes(context) -> kubernetes.client.ApiClient`` —
  :func:`clusterstack.adapters.kubernetes.api_client`;
- ``cloud_run() -> CloudRunClients`` and ``secret_manager() -> SecretManagerClient`` — see
  :mod:`clusterstack.adapters.gcp`;
- ``gcp`` — :class:`clusterstack.adapters.gcp.GcpClients`, the other Google clients
  (``compute(name)``, ``artifact_registry()`` for ``verify``; ``iam_admin()`` for ``iam
  audit-keys``);
- ``github(api_url=None) -> GitHub`` — :meth:`clusterstack.adapters.github.GitHub.from_env`
  (token from ``GITHUB_TOKEN``/``GH_TOKEN``; ``api_url`` else ``GITHUB_API_URL``);
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

from clusterstack.adapters.kms import GcpKms, Kms

if TYPE_CHECKING:  # the adapters' types; each is imported by its factory when first called
    from clusterstack.adapters.gcp import CloudRunClients, GcpClients, SecretManagerClient
    from clusterstack.adapters.git import Git
    from clusterstack.adapters.github import GitHub
    from clusterstack.engine.model import Engine
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


def _engine(workspace: Workspace, *, project_dir: Path | None = None, config_file: Path | None = None,
            env: dict[str, str] | None = None) -> Engine:
    from clusterstack.engine import open_engine

    return open_engine(workspace, project_dir=project_dir, config_file=config_file, env=env)


def _git(root: Path) -> Git:
    from clusterstack.adapters.git import Git

    return Git(root)


def _kubernetes(context: str) -> Any:
    from clusterstack.adapters.kubernetes import api_client

    return api_client(context)


def _github(api_url: str | None = None) -> GitHub:
    from clusterstack.adapters.github import GitHub

    return GitHub.from_env(base_url=api_url)


@dataclass(frozen=True)
class Clients:
    """One factory per outside system, and the clock (see the module docstring)."""

    engine: Callable[..., Engine]             # (workspace, *, project_dir, config_file, env)
    git: Callable[[Path], Git]
    kubernetes: Callable[[str], Any]          # → kubernetes.client.ApiClient (the SDK's own type)
    cloud_run: Callable[[], CloudRunClients]
    secret_manager: Callable[[], SecretManagerClient]
    gcp: GcpClients
    github: Callable[..., GitHub]             # (api_url=None)
    clock: Clock
    kms: Kms = dataclasses.field(default_factory=GcpKms)  # last: Clients(...) built by tests without it get the production one

    @classmethod
    def production(cls) -> "Clients":
        """The real adapters, each built on first use (Application Default Credentials, the
        ambient kubeconfig, the Pulumi CLI on PATH, the GitHub token of the environment)."""
        from clusterstack.adapters.gcp import GcpClients

        gcp = GcpClients()
        return cls(engine=_engine, git=_git, kubernetes=_kubernetes, cloud_run=gcp.cloud_run,
                   secret_manager=gcp.secret_manager, gcp=gcp, github=_github, clock=SystemClock(), kms=GcpKms())

    def replace(self, **changes: Any) -> "Clients":
        """A copy with ``changes`` (field name → new value)."""
        return dataclasses.replace(self, **changes)
