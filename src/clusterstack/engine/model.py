"""The engine seam: the :class:`Engine` protocol and its typed results.

Everything above ``clusterstack.engine`` (the ``preview`` / ``up`` / ``stack`` commands, the CI
comment, imports) talks to an :class:`Engine`; production uses
:class:`clusterstack.engine.automation.AutomationEngine` (Pulumi's Automation API), tests use
the test fake (tests/fakes/pulumi.py). Both return these frozen dataclasses.

Steps are :class:`clusterstack.pulumi.steps.Step` and diagnostics
:class:`clusterstack.pulumi.steps.Diagnostic` — the types of the one engine event stream
(:mod:`clusterstack.pulumi.events`) that the guard checks — so nothing above the engine sees an
adapter-specific shape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from clusterstack.pulumi.steps import Diagnostic, Step

StepCallback = Callable[[Step], bool]
"""Called for each step event of an update as it streams; return False to cancel the update."""


def count_ops(steps: Iterable[Step]) -> dict[str, int]:
    """``{op: number of steps}`` over ``steps``, keys sorted (Pulumi ``OpType`` strings)."""
    c = Counter(s.op for s in steps)
    return {k: c[k] for k in sorted(c)}


@dataclass(frozen=True)
class PreviewResult:
    """What a preview (or a preview-only refresh) would do to one stack.

    ``steps``: every step the engine reported, in event order, one per (op, URN) — including
    ``same`` steps; ``counts``: the engine's own summary (``summaryEvent.resourceChanges``,
    op → number of resources), falling back to counting ``steps``; ``stdout``: the CLI's
    human-readable output; ``diagnostics``: warnings and errors the engine reported.
    """

    stack: str
    steps: tuple[Step, ...]
    counts: Mapping[str, int]
    stdout: str = ""
    diagnostics: tuple[Diagnostic, ...] = ()
    #: destructive ops Pulumi itself refused because the resource is protected (its error
    #: diagnostics; :class:`clusterstack.pulumi.steps.Refusal`) — set on a failed preview only
    refusals: tuple[Any, ...] = ()
    #: URNs a refresh found gone from the cloud (drift, not a delete)
    gone: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[Step, ...]:
        """Steps other than ``same`` (what would actually change)."""
        return tuple(s for s in self.steps if s.op != "same")

    @property
    def has_changes(self) -> bool:
        return any(s.op != "same" for s in self.steps)


@dataclass(frozen=True)
class UpResult:
    """A finished update (``up``, a real refresh, or an import).

    ``steps``: the steps the engine reported during the update; ``counts``: resource changes
    from the update's history record (op → count); ``result``: Pulumi's update result
    (``succeeded``; failures raise instead); ``version``: the stack's new history version
    (None if the backend did not report one); ``message``: the update message recorded.
    """

    stack: str
    steps: tuple[Step, ...]
    counts: Mapping[str, int]
    result: str = "succeeded"
    version: int | None = None
    message: str = ""
    stdout: str = ""
    outputs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class HistoryEntry:
    """One record of ``pulumi stack history --json`` (newest first when listed).

    ``kind``: update / preview / refresh / destroy / import …; ``result``: succeeded / failed /
    in-progress; times are timezone-aware UTC; ``environment``: what the CLI recorded
    (``git.head``, ``git.dirty``, ``git.headName``, ``exec.kind`` …); ``resource_changes``: op → count.
    """

    version: int | None
    kind: str
    result: str
    start_time: datetime | None
    end_time: datetime | None
    message: str
    environment: Mapping[str, str] = field(default_factory=dict)
    resource_changes: Mapping[str, int] = field(default_factory=dict)
    # -- used by `deploy rollback` --------------------------------------------------------------
    # The stack config the update ran with (``stack history --json`` ``config``): key → value
    # string; a secret's value is not shown by the CLI and reads ``"[secret]"``, its key is in
    # ``config_secrets``.
    config: Mapping[str, str] = field(default_factory=dict)
    config_secrets: tuple[str, ...] = ()

    @property
    def git_commit(self) -> str | None:
        """The commit the update ran from (Pulumi records ``git.head`` when the project is in
        a git repository)."""
        return self.environment.get("git.head") or None

    @property
    def git_dirty(self) -> bool | None:
        v = self.environment.get("git.dirty")
        return None if v is None else v == "true"


@dataclass(frozen=True)
class StackSummary:
    """A stack of the project in the backend (``pulumi stack ls --json``) plus the result of
    its last update (from its history; None when it was never updated)."""

    name: str
    current: bool = False
    last_update: datetime | None = None
    update_in_progress: bool | None = None
    resource_count: int | None = None
    url: str | None = None
    last_result: str | None = None


@runtime_checkable
class Engine(Protocol):
    """The operations clusterstack needs from Pulumi, over one project and backend.

    Every method raises a :class:`clusterstack.engine.errors.EngineError` subclass on failure:
    StackNotFoundError, StackLockedError, PassphraseMissingError, PulumiMissingError,
    ProgramFailedError, ResourceFailedError, UpdateCancelledError, EngineCommandError.
    """

    def init_stack(self, stack: str) -> bool:
        """Create ``stack`` with the workspace's secrets provider; False if it already existed."""
        ...

    def select_stack(self, stack: str) -> None:
        """Check that ``stack`` exists (and make it the project's current stack)."""
        ...

    def rename_stack(self, stack: str, new: str) -> None:
        """``pulumi stack rename``: ``stack`` becomes ``new`` in the backend — every URN of its
        state rewritten (pulumi/pulumi pkg/resource/edit/operations.go ``RenameStack``), no
        resource touched — and the project's ``Pulumi.<stack>.yaml``, if any, is moved to
        ``Pulumi.<new>.yaml`` (pkg/cmd/pulumi/stack ``stack_rename.go``)."""
        ...

    def list_stacks(self) -> tuple[StackSummary, ...]:
        """Stacks of the project, sorted by name."""
        ...

    def preview(self, stack: str, *, refresh: bool = False, targets: Sequence[str] = ()) -> PreviewResult:
        """What an update would do; with ``refresh``, against refreshed state; with ``targets``
        (URNs), only for those resources (Pulumi ``--target``)."""
        ...

    def up(self, stack: str, *, message: str, on_step: StepCallback | None = None,
           targets: Sequence[str] = ()) -> UpResult:
        """Apply the program. ``on_step`` sees each step as it streams; returning False cancels
        the update (raises UpdateCancelledError). ``targets``: only these URNs (``--target``)."""
        ...

    def refresh(self, stack: str, *, preview_only: bool = True) -> PreviewResult:
        """Compare state with the cloud; with ``preview_only`` (default) nothing is written."""
        ...

    def import_file(self, stack: str, path: str, *, message: str, protect: bool = True) -> UpResult:
        """Import the resources of a Pulumi import file (``{"resources": [...], "nameTable": {...}}``);
        ``protect`` marks them protected in state (``pulumi import --protect``, Pulumi's default)."""
        ...

    # -- used by `import apply` ------------------------------------------------------------
    def preview_import(self, stack: str, path: str) -> PreviewResult:
        """What importing an import file would do, writing nothing (``pulumi import --file PATH
        --preview-only``): an ``import`` step per entry not yet in state, ``same`` for one
        already there under the same ID. Fails (EngineError) like the import itself would —
        e.g. a ``provider`` whose URN is not in the stack's state."""
        ...

    # -- used by `import state` (adoption of an existing Pulumi stack) -------------------------
    def import_state(self, stack: str, path: str) -> None:
        """Replace ``stack``'s deployment with the ``pulumi stack export`` document at ``path``
        (``pulumi stack import --file PATH``, pulumi/pulumi ``pkg/cmd/pulumi/stack/
        stack_import.go``: refuses a resource of another stack and a deployment that fails
        ``Snapshot.VerifyIntegrity``). State only: no cloud object is touched."""
        ...

    def set_protect(self, stack: str, urn: str, protect: bool) -> None:
        """Set ``protect`` of ``urn`` in the stack's state (``pulumi state protect|unprotect``)."""
        ...

    def history(self, stack: str, *, limit: int | None = None) -> tuple[HistoryEntry, ...]:
        """Update history, newest first (at most ``limit`` entries)."""
        ...

    def export(self, stack: str) -> dict[str, Any]:
        """The ``pulumi stack export`` document (``{"version": 3, "deployment": {...}}``);
        secret values stay encrypted."""
        ...
