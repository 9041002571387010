"""The Pulumi backend: a service that is only its Pulumi stack (kind ``pulumi``, e.g. a
:class:`~clusterstack.components.services.command.CommandService` job).

Revisions are the stack's updates (``pulumi stack history``, kind ``update``), numbered by
version, newest serving. Health is the update's result (``succeeded`` → healthy, ``failed`` →
unhealthy), overridden by what later clusterstack rollbacks recorded in their update messages:
``rollback … from version S to version T`` (succeeded) marks S ``rolled-back``;
``restore version S after a failed rollback to version T`` marks T ``unhealthy``.

Activation re-applies the program *as it was*: a temporary ``git worktree`` at the update's
recorded commit (Pulumi records ``git.head``; clusterstack's message suffix as fallback), the
update's recorded config written to a temporary ``--config-file`` (the worktree's stack file
supplies the non-config keys such as ``encryptionsalt``), ``PYTHONPATH=<worktree>/src`` so the
``clusterstack`` package of that commit is the one imported, and every step checked by the
guard as in ``up``. An update that ran from a dirty tree, recorded no commit, had secret
config values (``stack history`` never shows them), or is the same commit and config as the
serving update cannot be re-applied (or would change nothing) and is not eligible.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, Callable, Iterator

from ruamel.yaml import YAML

from clusterstack.adapters.git import Git, GitError, GitRepo
from clusterstack.deploy.health import http_check
from clusterstack.deploy.model import (
    HEALTHY,
    ROLLED_BACK,
    UNHEALTHY,
    UNKNOWN,
    ActivationFailed,
    ActivationRejected,
    HealthResult,
    NotActive,
    Revision,
    RollbackPlan,
    Snapshot,
    Waiter,
    Which,
    WorldMoved,
)
from clusterstack.config.services import HttpCheck
from clusterstack.fsutil import write_atomic
from clusterstack.config.document import Document
from clusterstack.engine.errors import (PassphraseMissingError, PulumiMissingError,
    StackLockedError, StackNotFoundError)
from clusterstack.errors import ClusterstackError
from clusterstack.engine.model import Engine, HistoryEntry
from clusterstack.guard import GuardPolicy, check
from clusterstack.pulumi.steps import Step
from clusterstack.views.preview import render_changes
from clusterstack.views.verdict import verdict_lines

_ROLLED_BACK = re.compile(r"rollback \S+ from version (\d+) to version (\d+)")
_RESTORED = re.compile(r"restore version (\d+) after a failed rollback to version (\d+)")
_MESSAGE_COMMIT = re.compile(r"\[clusterstack: git ([0-9a-f]{7,40})\b")

EngineAt = Callable[[Path, Path | None, dict[str, str]], Engine]
"""``(project_dir, config_file, extra_env) -> Engine``: an engine over a project elsewhere."""


@contextlib.contextmanager
def worktree_at(root: Path, commit: str, *, git: GitRepo | None = None) -> Iterator[tuple[Path, Path]]:
    """``(repository top level, worktree)``: ``commit`` checked out by
    :meth:`clusterstack.adapters.git.Git.worktree` (a temporary directory, removed and pruned
    on every exit path). The repository's ``.venv`` is linked into it, so a ``Pulumi.yaml``
    that names its virtualenv by a relative path finds it. Raises NotActive when git refuses."""
    git = git or Git(root)
    try:
        top = git.toplevel()
    except GitError:
        raise NotActive(f"{root} is not in a git repository") from None
    with contextlib.ExitStack() as cleanup:
        try:
            tree = cleanup.enter_context(git.worktree(commit, prefix="clusterstack-rollback-"))
        except GitError as exc:
            raise NotActive(exc.problems[0].message) from None
        venv = top / ".venv"
        if venv.exists() and not (tree / ".venv").exists():
            (tree / ".venv").symlink_to(venv)
        yield top, tree


def config_document(stack_file: Path | None, config: dict[str, str]) -> str:
    """A stack config file: the non-``config`` keys of ``stack_file`` (``secretsprovider``,
    ``encryptionsalt``, ``encryptedkey`` — the stack's secrets provider state) and ``config``
    as given (key → string), keys sorted."""
    import io

    base: dict[str, Any] = {}
    if stack_file is not None and stack_file.is_file():
        data = Document.read(stack_file).data or {}
        base = {k: v for k, v in data.items() if k != "config"} if isinstance(data, dict) else {}
    doc = {**dict(sorted(base.items())), "config": dict(sorted(config.items()))}
    buf = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(doc, buf)
    return buf.getvalue()


class PulumiStackBackend:
    """:class:`~clusterstack.deploy.model.Backend` over a service's Pulumi stack.

    ``engine``: the engine over the checked-in project (history); ``engine_at``: builds an
    engine over a project in a worktree (see :data:`EngineAt`); ``root``: the workspace root
    (inside the git repository); ``project_dir``: the service's project directory (absolute);
    ``policy``: the guard policy every re-apply step is checked against; ``env``: returns the
    extra environment (secrets) when an engine needs it — called lazily; ``git``: the git
    adapter of the repository (default: :class:`~clusterstack.adapters.git.Git` at ``root``).
    """

    kind = "pulumi"

    def __init__(self, service: str, engine: Engine, *, stack: str, root: Path, project_dir: Path,
                 engine_at: EngineAt, policy: GuardPolicy, env: Callable[[], dict[str, str]] = dict,
                 http: HttpCheck | None = None, on_step: Callable[[Step], object] | None = None,
                 git: GitRepo | None = None) -> None:
        self.service = service
        self.git = git or Git(Path(root))
        self.engine = engine
        self.stack = stack
        self.root = Path(root)
        self.project_dir = Path(project_dir)
        self.engine_at = engine_at
        self.policy = policy
        self.env = env
        self.http = http
        self.on_step = on_step
        self._entries: dict[int, HistoryEntry] = {}

    # -- reading ---------------------------------------------------------------------------
    def _updates(self) -> list[HistoryEntry]:
        return [h for h in self.engine.history(self.stack) if h.kind == "update" and h.version is not None]

    def _commit(self, entry: HistoryEntry) -> str | None:
        if entry.git_commit:
            return entry.git_commit
        m = _MESSAGE_COMMIT.search(entry.message or "")
        return m.group(1) if m else None

    def snapshot(self) -> Snapshot:
        updates = self._updates()
        marks: dict[int, str] = {}
        for h in updates:  # newest first: the newest verdict on a version wins
            m = _ROLLED_BACK.search(h.message or "")
            if m and h.result == "succeeded":
                marks.setdefault(int(m.group(1)), ROLLED_BACK)
            m = _RESTORED.search(h.message or "")
            if m:
                marks.setdefault(int(m.group(2)), UNHEALTHY)
        revisions = []
        self._entries = {h.version: h for h in updates if h.version is not None}   # all: _updates
        for i, h in enumerate(updates):
            assert h.version is not None   # _updates keeps the updates that have a version
            health = {"succeeded": HEALTHY, "failed": UNHEALTHY}.get(h.result, UNKNOWN)
            if health == HEALTHY and h.version in marks:
                health = marks[h.version]
            changes = ", ".join(f"{n} {op}" for op, n in sorted(h.resource_changes.items()) if op != "same")
            revisions.append(Revision(
                number=h.version, name=f"version {h.version}", created=h.end_time or h.start_time,
                health=health, serving=i == 0, git_commit=self._commit(h), message=h.message,
                detail=f"{h.result}" + (f"; {changes}" if changes else "")))
        world = (("stack", self.stack), ("latest version", str(updates[0].version) if updates else ""))
        return Snapshot(service=self.service, kind=self.kind, revisions=tuple(revisions), world=world,
                        state={"entries": dict(self._entries)})

    # -- planning --------------------------------------------------------------------------
    def ineligible(self, snap: Snapshot, revision: Revision) -> str | None:
        entry = snap.state["entries"][revision.number]
        if revision.git_commit is None:
            return f"version {revision.number} recorded no git commit to re-apply"
        if entry.environment.get("git.dirty") == "true":
            return (f"version {revision.number} ran from a dirty working tree; its code is not "
                    f"commit {revision.git_commit[:12]}")
        if entry.config_secrets:
            return (f"version {revision.number} had secret config ({', '.join(entry.config_secrets)}); "
                    "stack history does not show secret values, so its config cannot be re-applied")
        if self.git.commit_of(revision.git_commit) is None:
            return f"commit {revision.git_commit} of version {revision.number} is not in this repository (git fetch?)"
        serving = next((r for r in snap.revisions if r.serving), None)
        if serving is not None:
            now = snap.state["entries"][serving.number]
            same_commit = self.git.commit_of(serving.git_commit or "") == self.git.commit_of(revision.git_commit)
            if same_commit and dict(now.config) == dict(entry.config):
                return f"same program and config as the serving version {serving.number}"
        return None

    @contextlib.contextmanager
    def _engine_for(self, entry: HistoryEntry) -> Iterator[tuple[Engine, str]]:
        """An engine over the service's project at ``entry``'s commit with ``entry``'s config."""
        commit = self.git.commit_of(self._commit(entry) or "")
        if commit is None:
            raise NotActive(f"commit of version {entry.version} is not in this repository")
        with worktree_at(self.root, commit, git=self.git) as (top, tree):
            project = tree / self.project_dir.resolve().relative_to(top.resolve())
            if not (project / "Pulumi.yaml").is_file():
                raise NotActive(f"the project {project.relative_to(tree)} does not exist at {commit[:12]}")
            config_file = tree.parent / f"Pulumi.{self.stack}.rollback.yaml"
            write_atomic(config_file, config_document(project / f"Pulumi.{self.stack}.yaml",
                                                      dict(entry.config)), mode=0o600)
            env = dict(self.env())
            if (tree / "src" / "clusterstack" / "__init__.py").is_file():
                env["PYTHONPATH"] = str(tree / "src")
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            yield self.engine_at(project, config_file, env), commit

    def prepare(self, snap: Snapshot, source: Revision, target: Revision) -> RollbackPlan:
        entries = snap.state["entries"]
        with self._engine_for(entries[target.number]) as (engine, commit):
            preview = engine.preview(self.stack)
        verdict = check(preview.steps, self.policy)
        notes = (f"re-apply {self.project_dir.name} at commit {commit[:12]} with version "
                 f"{target.number}'s config ({len(entries[target.number].config)} keys)",
                 *render_changes(preview), *verdict_lines(verdict, preview.steps))
        return RollbackPlan(service=self.service, kind=self.kind, source=source, target=target,
                            world=snap.world, activate={"entry": entries[target.number]},
                            restore={"entry": entries[source.number]}, notes=tuple(notes),
                            verdict=verdict)

    def recheck(self, plan: RollbackPlan) -> None:
        latest = next(iter(self._updates()), None)
        now = (("stack", self.stack), ("latest version", str(latest.version) if latest else ""))
        if now != plan.world:
            raise WorldMoved(self.service, f"the stack's latest update is now version "
                             f"{latest.version if latest else 'none'}, "
                             f"not {dict(plan.world)['latest version']}")

    # -- acting ----------------------------------------------------------------------------
    def _apply(self, entry: HistoryEntry, message: str) -> None:
        def on_step(step) -> bool:
            if self.on_step is not None:
                self.on_step(step)
            return check([step], self.policy).ok

        with self._engine_for(entry) as (engine, commit):
            try:
                engine.up(self.stack, message=f"{message} [clusterstack: git {commit}]", on_step=on_step)
            except (StackLockedError, PassphraseMissingError, PulumiMissingError, StackNotFoundError) as exc:
                raise ActivationRejected(exc.problems[0].message) from None
            except ClusterstackError as exc:
                raise ActivationFailed(exc.problems[0].message) from None

    def activate(self, plan: RollbackPlan) -> None:
        self._apply(plan.activate["entry"], f"rollback {self.service} from version "
                    f"{plan.source.number} to version {plan.target.number}")

    def restore(self, plan: RollbackPlan) -> None:
        try:
            self._apply(plan.restore["entry"], f"restore version {plan.source.number} after a "
                        f"failed rollback to version {plan.target.number}")
        except (ActivationRejected, ActivationFailed) as exc:
            raise NotActive(f"restore failed: {exc}") from None

    def observe(self, plan: RollbackPlan) -> str:
        return "other"  # a local update never loses its response

    def wait_active(self, plan: RollbackPlan, which: Which, waiter: Waiter) -> None:
        """An update is synchronous: when it returned, the program's resources are in place."""

    def check_health(self, plan: RollbackPlan, which: Which) -> HealthResult:
        if self.http is None or not self.http.url:
            return HealthResult(True, "the update succeeded (no HTTP check configured)")
        return http_check(self.http.url, expect_status=self.http.expect_status,
                          expect_json=self.http.expect_json)

    def record(self, plan: RollbackPlan, which: Which, verdict: str) -> None:
        """The update messages are the record (see the module docstring)."""

    def after_rollback(self, plan: RollbackPlan) -> bool | None:
        return None  # the update itself wrote the state
