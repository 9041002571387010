"""The engine: the only part of clusterstack that runs the Pulumi CLI (Automation API).

- :mod:`clusterstack.engine.model` — the :class:`Engine` protocol and typed results
  (:class:`PreviewResult`, :class:`UpResult`, :class:`HistoryEntry`, :class:`StackSummary`);
- :mod:`clusterstack.engine.errors` — typed failures (locked, not found, CLI missing,
  passphrase missing, program failed, cancelled …);
- :mod:`clusterstack.engine.automation` — :class:`AutomationEngine`, the production adapter
  (imported lazily: it pulls in the Automation API);
- :mod:`clusterstack.engine.fake` — :class:`FakeEngine` for tests;
- :mod:`clusterstack.engine.render` — the grouped, property-level diff of a preview;
- :mod:`clusterstack.engine.provenance` — the git commit/branch/dirty state an update records.
"""

from clusterstack.engine.errors import (
    EngineCommandError,
    EngineError,
    PassphraseMissingError,
    ProgramFailedError,
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


def open_engine(workspace) -> Engine:
    """The production engine for ``workspace`` (:class:`AutomationEngine`). The Pulumi CLI is
    located on first use, so constructing it never fails for a missing CLI."""
    from clusterstack.engine.automation import AutomationEngine

    return AutomationEngine(workspace)


__all__ = [
    "Diagnostic", "Engine", "EngineCommandError", "EngineError", "HistoryEntry",
    "PassphraseMissingError", "PreviewResult", "ProgramFailedError", "PulumiMissingError",
    "PulumiVersionError", "ResourceFailedError", "StackExistsError", "StackLockedError",
    "StackNotFoundError", "StackSummary", "StepCallback", "UpResult", "UpdateCancelledError",
    "count_ops", "open_engine",
]
