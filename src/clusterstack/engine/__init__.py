"""The engine: the only part of clusterstack that runs the Pulumi CLI (Automation API).

- :mod:`clusterstack.engine.model` — the :class:`Engine` protocol and typed results
  (:class:`PreviewResult`, :class:`UpResult`, :class:`HistoryEntry`, :class:`StackSummary`);
- :mod:`clusterstack.engine.errors` — typed failures (locked, not found, CLI missing,
  passphrase missing, program failed, cancelled …);
- :mod:`clusterstack.engine.automation` — :class:`AutomationEngine`, the production adapter
  (imported lazily: it pulls in the Automation API);
- :mod:`clusterstack.engine.events` — the adapter's live end of THE engine event stream
  (:mod:`clusterstack.pulumi.events`, the one reader).

The engine renders nothing: previews and verdicts are rendered by :mod:`clusterstack.views`.

The fake is ``tests/fakes/pulumi.py`` (an in-memory FakeEngine, and the stand-in ``pulumi``
executable replaying Pulumi's recorded outputs). The git commit/branch/dirty state an update
records is :meth:`clusterstack.adapters.git.Git.state`. Commands get their engine from
:class:`clusterstack.clients.Clients` (``engine``, built by :func:`open_engine`).
"""

from clusterstack.engine.errors import (
    EngineCommandError,
    EngineError,
    EngineOutputError,
    PassphraseMissingError,
    ProgramFailedError,
    ProtectRefusedError,
    PulumiMissingError,
    PulumiVersionError,
    ResourceFailedError,
    StackExistsError,
    StackLockedError,
    StackNotFoundError,
    UpdateCancelledError,
)
from clusterstack.engine.model import (
    Diagnostic,
    Engine,
    HistoryEntry,
    PreviewResult,
    StackSummary,
    StepCallback,
    UpResult,
    count_ops,
)


def open_engine(workspace, *, project_dir=None, config_file=None, env=None) -> Engine:
    """The production engine for ``workspace`` (:class:`AutomationEngine`). The Pulumi CLI is
    located on first use, so constructing it never fails for a missing CLI.

    ``project_dir`` / ``config_file`` / ``env`` (service deploys): another Pulumi
    project than ``infra/``, a ``--config-file`` for preview/up/refresh, and extra environment
    for the CLI (see :class:`~clusterstack.engine.automation.AutomationEngine`)."""
    from clusterstack.engine.automation import AutomationEngine

    return AutomationEngine(workspace, project_dir=project_dir, config_file=config_file, env=env)


__all__ = [
    "Diagnostic", "Engine", "EngineCommandError", "EngineError", "EngineOutputError", "HistoryEntry",
    "PassphraseMissingError", "PreviewResult", "ProgramFailedError", "ProtectRefusedError", "PulumiMissingError",
    "PulumiVersionError", "ResourceFailedError", "StackExistsError", "StackLockedError",
    "StackNotFoundError", "StackSummary", "StepCallback", "UpResult", "UpdateCancelledError",
    "count_ops", "open_engine",
]
