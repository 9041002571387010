"""The fake of the Pulumi CLI, in two forms.

1. :class:`FakeEngine`: an in-memory :class:`~clusterstack.engine.Engine` (the protocol of
   :mod:`clusterstack.engine.model`, implemented in production by
   :class:`clusterstack.engine.automation.AutomationEngine`). It returns the same result types
   and raises the same typed errors, so the flows and commands above the engine are tested
   without a Pulumi CLI (give it through ``Clients.engine``)::

    eng = FakeEngine({"cw-demo-h100": FakeStack(steps=(np_step("update", "cw-demo-h100", "h100"),))})
    eng.fail("up", "cw-demo-h100", StackLockedError("cw-demo-h100"))

2. :class:`FakeCli`: the stand-in ``pulumi`` executable (``tests/fakes/pulumi_cli.py``) put on
   PATH, answering with Pulumi's recorded outputs (``tests/fixtures/engine/``), so the adapter
   itself — argument building, the event stream, error classification, SIGINT — runs for real.

``FakeStack.up_steps`` (default: the preview's steps) are streamed to ``on_step`` one at a time
during ``up``, so a test can put a guarded step in the middle of an update that previewed clean.
Every call is recorded in ``calls`` as ``(operation, stack, {arguments})``.

State and imports (added for ``import apply``): ``create``/``import`` steps an update or import
applies are recorded as resources of ``FakeStack.export`` (a ``stack export`` document), and
``delete`` steps remove them. ``preview_import`` / ``import_file`` read a real Pulumi import
file, compute each entry's URN by Pulumi's rule, and fail like Pulumi when an entry's explicit
provider is not in state or the resource is already managed under another ID.
``FakeStack.after_import`` is what a preview shows after an import (default: the preview's
steps, with every imported URN turned into ``same``). An import preview prints no step for an
entry already in state under the same ID (``import.go`` plans a ``same``; ``--json`` hides sames).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

from clusterstack.engine.errors import EngineCommandError, StackNotFoundError, UpdateCancelledError
from clusterstack.engine.model import (
    HistoryEntry,
    PreviewResult,
    StackSummary,
    StepCallback,
    UpResult,
    count_ops,
)
from clusterstack.pulumi.importfile import parse as parse_import_file
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import NODEPOOL, NODEPOOLS_COMPONENT, STACK_TYPE, is_component
from clusterstack.pulumi.urn import name_of, new_urn

PROJECT = "clusterstack"
_EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)


def urn(stack: str, type_: str, name: str, parent_type: str = "") -> str:
    """A URN of the fake's project (:func:`clusterstack.pulumi.urn.new_urn`)."""
    return new_urn(stack, PROJECT, parent_type, type_, name)


def np_step(op: str, stack: str, pool: str, *, protect: bool = True,
            changed: dict[str, tuple[Any, Any]] | None = None, replace_keys: tuple[str, ...] = ()) -> Step:
    """A NodePool step as the engine reports it. ``changed`` maps a property path under
    ``spec`` (e.g. ``"instanceType"``) to (old, new); with ``replace_keys`` the diff kind is
    ``update-replace`` for those paths."""
    changed = changed or {}
    base = {"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": pool}, "spec": {"instanceType": "gd-8xh100ib-i128", "maxNodes": 16}}
    old = {**base, "spec": {**base["spec"], **{k: v[0] for k, v in changed.items()}}}
    new = {**base, "spec": {**base["spec"], **{k: v[1] for k, v in changed.items()}}}
    dd = {f"spec.{k}": {"kind": "update-replace" if f"spec.{k}" in replace_keys else "update",
                        "inputDiff": True} for k in sorted(changed)}
    return Step(op=op, urn=urn(stack, NODEPOOL, pool, NODEPOOLS_COMPONENT), type=NODEPOOL,
                old_protect=protect and op != "create",
                replace_reasons=("spec",) if replace_keys else (),
                diffs=("spec",) if changed else (), detailed_diff=dd or None,
                old_inputs=None if op == "create" else old, new_inputs=None if op == "delete" else new)


def res_step(op: str, stack: str, type_: str, name: str, *, protect: bool = False,
             old: dict | None = None, new: dict | None = None,
             detailed_diff: dict | None = None) -> Step:
    """Any other resource's step (old/new inputs and a detailed diff as given)."""
    return Step(op=op, urn=urn(stack, type_, name), type=type_, old_protect=protect,
                diffs=tuple(sorted({p.split(".")[0].split("[")[0] for p in (detailed_diff or {})})),
                detailed_diff=detailed_diff, old_inputs=old, new_inputs=new)


@dataclass
class FakeStack:
    """One stack of the fake backend: what preview reports and what an update streams."""

    steps: tuple[Step, ...] = ()
    up_steps: tuple[Step, ...] | None = None
    history: list[HistoryEntry] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    refresh_steps: tuple[Step, ...] = ()
    export: dict[str, Any] | None = None
    after_import: tuple[Step, ...] | None = None
    #: import ID → the inputs the provider reads for that cloud object; an import step carries
    #: them as its new inputs (pulumi/pulumi lifecycle test TestImportInputDiff/import: the
    #: import step's new state holds the read inputs, shown under `= … (import)`)
    cloud: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: steps an update applies without handing them to ``on_step`` first: a stream whose
    #: ``resourcePreEvent`` for the step is missing, so it shows only as done (a
    #: ``resOutputsEvent`` — the stand-in rule of :class:`clusterstack.pulumi.events.StreamReader`
    #: makes it one of the run's steps); they are in ``UpResult.steps`` all the same, for the
    #: caller's final judgement (:func:`clusterstack.flows.up.recheck_applied`)
    unannounced: tuple[Step, ...] = ()
    #: URNs whose state has ``protect: true``: an update that would delete or replace one bails
    #: before any step (pulumi/pulumi lifecycle test TestDBRProtect/1; DeleteStep.Apply)
    protected: set[str] = field(default_factory=set)


class FakeEngine:
    """In-memory engine; see the module docstring."""

    def __init__(self, stacks: dict[str, FakeStack] | None = None) -> None:
        self.stacks: dict[str, FakeStack] = dict(stacks or {})
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []
        self._fail: dict[tuple[str, str], Exception] = {}
        self._clock = 0

    def fail(self, operation: str, stack: str, error: Exception) -> "FakeEngine":
        """Make ``operation`` (``preview``, ``up``, … or ``*``) on ``stack`` (or ``*``) raise ``error``."""
        self._fail[(operation, stack)] = error
        return self

    def _enter(self, op: str, stack: str | None, **kw: Any) -> FakeStack | None:
        self.calls.append((op, stack, kw))
        for key in ((op, stack or "*"), (op, "*"), ("*", stack or "*"), ("*", "*")):
            if key in self._fail:
                raise self._fail[key]
        if stack is None or op == "init_stack":
            return None
        if stack not in self.stacks:
            raise StackNotFoundError(stack)
        return self.stacks[stack]

    def _now(self) -> datetime:
        self._clock += 1
        return _EPOCH + timedelta(minutes=self._clock)

    # Engine protocol
    def init_stack(self, stack: str) -> bool:
        self._enter("init_stack", stack)
        if stack in self.stacks:
            return False
        self.stacks[stack] = FakeStack()
        return True

    def select_stack(self, stack: str) -> None:
        self._enter("select_stack", stack)

    def rename_stack(self, stack: str, new: str) -> None:
        """Pulumi's ``stack rename``: the stack under its new name, every URN of its steps and
        exported state rewritten (``RenameStack``: stack part, and the root Stack resource's
        name), and — when bound to a project — ``Pulumi.<stack>.yaml`` moved to
        ``Pulumi.<new>.yaml`` (``stack_rename.go``). A taken name fails as the CLI does."""
        from clusterstack.pulumi.urn import renamed_urn

        st = self._enter("rename_stack", stack, new=new)
        assert st is not None
        if new in self.stacks:
            raise EngineCommandError(stack, f"a stack named {new} already exists")

        def moved(step: Step) -> Step:
            return replace(step, urn=renamed_urn(step.urn, new))

        st.steps = tuple(moved(s) for s in st.steps)
        if st.up_steps is not None:
            st.up_steps = tuple(moved(s) for s in st.up_steps)
        if st.export is not None:
            for r in st.export.get("deployment", {}).get("resources", []):
                for key in ("urn", "parent"):
                    if r.get(key):
                        r[key] = renamed_urn(r[key], new)
        self.stacks[new] = self.stacks.pop(stack)
        if self.project_dir is not None and (self.project_dir / f"Pulumi.{stack}.yaml").exists():
            (self.project_dir / f"Pulumi.{stack}.yaml").rename(self.project_dir / f"Pulumi.{new}.yaml")

    def list_stacks(self) -> tuple[StackSummary, ...]:
        self._enter("list_stacks", None)
        out = []
        for name in sorted(self.stacks):
            h = self.stacks[name].history
            out.append(StackSummary(name=name, last_update=h[0].end_time if h else None,
                                    resource_count=sum(1 for s in self.stacks[name].steps if s.op != "delete"),
                                    last_result=h[0].result if h else None))
        return tuple(out)

    def preview(self, stack: str, *, refresh: bool = False, targets: Sequence[str] = ()) -> PreviewResult:
        st = self._enter("preview", stack, refresh=refresh, **({"targets": tuple(targets)} if targets else {}))
        assert st is not None
        steps = tuple(s for s in st.steps if s.urn in set(targets)) if targets else st.steps
        return PreviewResult(stack=stack, steps=steps, counts=count_ops(steps),
                             stdout=f"Previewing update ({stack}):\n")

    def up(self, stack: str, *, message: str, on_step: StepCallback | None = None,
           targets: Sequence[str] = ()) -> UpResult:
        st = self._enter("up", stack, message=message, **({"targets": tuple(targets)} if targets else {}))
        assert st is not None
        applied: list[Step] = []
        stream = st.steps if st.up_steps is None else st.up_steps
        if targets:
            stream = tuple(s for s in stream if s.urn in set(targets))
        refused = [s for s in stream if s.urn in st.protected and s.op in ("delete", "replace", "delete-replaced")]
        if refused:
            from clusterstack.engine.errors import ProtectRefusedError
            from clusterstack.pulumi.steps import Refusal

            refusals = tuple(Refusal(op="delete" if s.op == "delete" else "replace", urn=s.urn,
                                     message=f"resource {s.urn!r} cannot be deleted because it is protected")
                             for s in refused)
            raise ProtectRefusedError(stack, PreviewResult(stack=stack, steps=(), counts={},
                                                           refusals=refusals))
        for step in stream:
            if on_step is not None and not on_step(step):
                raise UpdateCancelledError(stack, step, tuple(applied))
            applied.append(step)
            self._record(st, step)
        for step in st.unannounced:
            applied.append(step)
            self._record(st, step)
        version = (st.history[0].version or 0) + 1 if st.history else 1
        start = self._now()
        counts = count_ops(applied)
        config, config_secrets = self._bound_config()
        st.history.insert(0, HistoryEntry(version=version, kind="update", result="succeeded",
                                          start_time=start, end_time=self._now(), message=message,
                                          environment={"exec.kind": "auto.local", **self._bound_git()},
                                          resource_changes=counts, config=config,
                                          config_secrets=config_secrets))
        # after the update, the program and the state agree: a new preview is all `same`
        done = {s.urn for s in applied}
        kept = tuple(s for s in st.steps if s.urn not in done) if targets else ()
        st.steps = kept + tuple(replace(s, op="same") for s in applied
                                if s.op not in ("delete", "delete-replaced"))
        st.up_steps = None
        return UpResult(stack=stack, steps=tuple(applied), counts=counts, version=version,
                        message=message, outputs=dict(st.outputs))

    def refresh(self, stack: str, *, preview_only: bool = True) -> PreviewResult:
        st = self._enter("refresh", stack, preview_only=preview_only)
        assert st is not None
        return PreviewResult(stack=stack, steps=st.refresh_steps, counts=count_ops(st.refresh_steps))

    def import_file(self, stack: str, path: str, *, message: str, protect: bool = True) -> UpResult:
        st = self._enter("import_file", stack, path=path, message=message, protect=protect)
        assert st is not None
        steps = self._import_steps(stack, st, path)
        ids = {u: e.id for u, e in self._entries(stack, path).items()}
        for step in steps:
            self._record(st, step, id_=ids.get(step.urn), protect=protect and bool(ids.get(step.urn)))
        done = {s.urn for s in steps}
        if st.after_import is not None:
            st.steps = st.after_import
        else:
            st.steps = tuple(replace(s, op="same") if s.urn in done else s for s in st.steps) + \
                tuple(replace(s, op="same") for s in steps if s.urn not in {x.urn for x in st.steps})
        version = (st.history[0].version or 0) + 1 if st.history else 1
        counts = count_ops(steps)
        st.history.insert(0, HistoryEntry(version=version, kind="import", result="succeeded",
                                          start_time=self._now(), end_time=self._now(),
                                          message=message, resource_changes=counts))
        return UpResult(stack=stack, steps=steps, counts=counts, version=version, message=message)

    # -- state and imports (added for `import apply`) -----------------------------------------
    def preview_import(self, stack: str, path: str) -> PreviewResult:
        st = self._enter("preview_import", stack, path=path)
        assert st is not None
        steps = self._import_steps(stack, st, path)
        return PreviewResult(stack=stack, steps=steps, counts=count_ops(steps))

    def import_state(self, stack: str, path: str) -> None:
        """``pulumi stack import``: the document becomes the stack's state, after the CLI's own
        checks (``stack_import.go``: every URN of this stack; ``Snapshot.VerifyIntegrity``, the
        rules of :func:`clusterstack.pulumi.state.integrity_problems`)."""
        from clusterstack.pulumi.state import integrity_problems
        from clusterstack.pulumi.urn import parse_urn

        st = self._enter("import_state", stack, path=path)
        assert st is not None
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        dep = doc["deployment"]
        others = [r["urn"] for r in dep.get("resources", []) if parse_urn(r["urn"]).stack != stack]
        broken = integrity_problems(dep.get("manifest") or {}, dep.get("resources", []))
        if others or broken:
            raise EngineCommandError(stack, "; ".join(
                [f"resource '{u}' is from a different stack" for u in others] + broken))
        st.export = doc

    def state(self, stack: str) -> dict[str, dict[str, Any]]:
        """``{urn: resource}`` of the stack's fake state."""
        st = self.stacks[stack]
        return {r["urn"]: r for r in (st.export or {}).get("deployment", {}).get("resources", [])}

    def _record(self, st: FakeStack, step: Step, *, id_: str | None = None, protect: bool = False) -> None:
        if st.export is None:
            st.export = {"version": 3, "deployment": {"manifest": {"version": "v3.205.0"}, "resources": []}}
        resources = st.export["deployment"].setdefault("resources", [])
        if step.op in ("delete", "delete-replaced"):
            resources[:] = [r for r in resources if r["urn"] != step.urn]
        elif step.op in ("create", "import", "create-replacement") and \
                not any(r["urn"] == step.urn for r in resources):
            name = name_of(step.urn)
            custom = step.type != STACK_TYPE and not is_component(step.type)
            rec: dict[str, Any] = {"urn": step.urn, "type": step.type, "custom": custom}
            if custom:
                rec["id"] = id_ or f"{name}-id"
            if protect:
                rec["protect"] = True
            resources.append(rec)

    @staticmethod
    def _entries(stack: str, path: str) -> dict[str, Any]:
        """``{URN: entry}`` of the import file at ``path`` (Pulumi's URN rule)."""
        from clusterstack.pulumi.importfile import parse

        file = parse(Path(path).read_text(encoding="utf-8"))
        urns = file.urns(PROJECT, stack)
        return {urns[e.name]: e for e in file.resources}

    def _import_steps(self, stack: str, st: FakeStack, path: str) -> tuple[Step, ...]:
        """The steps Pulumi's importer takes for the file at ``path`` (``importer.importResources``):
        the Stack is created if absent; an entry already in state under its ID gets a ``same``
        step (``pkg/resource/deploy/import.go``), which ``pulumi import --json`` does not print
        (``shouldShow``: sames only with ``--show-sames``, which import does not have) — so it
        gives no step here; under another ID it is an error; a provider reference must be in
        state."""
        from clusterstack.pulumi.importfile import parse

        file = parse(Path(path).read_text(encoding="utf-8"))
        state = {r["urn"]: r for r in (st.export or {}).get("deployment", {}).get("resources", [])}
        steps: list[Step] = []
        stack_urn = new_urn(stack, PROJECT, "", STACK_TYPE, f"{PROJECT}-{stack}")
        if not any(r.get("type") == STACK_TYPE for r in state.values()):
            steps.append(Step(op="create", urn=stack_urn, type=STACK_TYPE))
        for u, e in self._entries(stack, path).items():
            if e.provider and file.name_table[e.provider] not in state:
                raise EngineCommandError(stack, f"resource '{e.name}' of type '{e.type}': provider "
                                         f"{file.name_table[e.provider]} is not in the stack's state")
            old = state.get(u)
            if old is not None:
                old_id = old.get("importID") or old.get("id")
                if not e.component and old_id != e.id:
                    raise EngineCommandError(stack, f"resource '{u}' already exists with ID "
                                             f"'{old_id}', cannot import ID '{e.id}'")
                continue  # a `same` step Pulumi does not print
            steps.append(Step(op="import", urn=u, type=e.type,
                              new_inputs=st.cloud.get(e.id or "") if not e.component else None))
        return tuple(steps)

    # -- project, config file and environment (added for `deploy`) --------------------
    project_dir = None   # Path of the Pulumi project the production engine would run
    config_file = None   # the --config-file it would pass
    env: dict[str, str] = {}  # extra environment it would give the CLI

    def bind(self, *, project_dir=None, config_file=None, env=None) -> "FakeEngine":
        """Point this fake at a project / ``--config-file`` / environment, as
        ``open_engine(ws, project_dir=…, config_file=…, env=…)`` does for the real adapter;
        returns ``self`` (stacks, calls and failures are shared). Recorded in ``calls`` as
        ``("bind", None, {...})`` with a copy of the config file's text, read at bind time.

        While bound, ``up`` records in its history entry what Pulumi records: the ``config:``
        of the config file (``secure:`` values as ``[secret]``) and the project's git
        ``git.head`` / ``git.dirty``."""
        self.project_dir = Path(project_dir) if project_dir is not None else None
        self.config_file = str(config_file) if config_file is not None else None
        self.env = dict(env or {})
        text = Path(config_file).read_text(encoding="utf-8") if config_file else None
        self.calls.append(("bind", None, {"project_dir": self.project_dir, "config_file": self.config_file,
                                          "config_text": text, "env": dict(self.env)}))
        return self

    def _bound_config(self) -> tuple[dict[str, str], tuple[str, ...]]:
        if not self.config_file:
            return {}, ()
        from ruamel.yaml import YAML

        doc = YAML(typ="safe").load(Path(self.config_file).read_text(encoding="utf-8")) or {}
        config, secrets = {}, []
        for key, value in sorted((doc.get("config") or {}).items()):
            if isinstance(value, dict) and "secure" in value:
                config[key] = "[secret]"
                secrets.append(key)
            else:
                config[key] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return config, tuple(secrets)

    def _bound_git(self) -> dict[str, str]:
        if self.project_dir is None:
            return {}
        from clusterstack.adapters.git import Git

        git = Git(self.project_dir).state()
        if git.commit is None:
            return {}
        return {"git.head": git.commit, "git.dirty": "true" if git.dirty else "false"}

    def set_protect(self, stack: str, urn: str, protect: bool) -> None:
        """``pulumi state protect|unprotect``: the flag of ``urn`` in the stack's state
        (``FakeStack.protected``, the URNs protected now)."""
        st = self._enter("set_protect", stack, urn=urn, protect=protect)
        assert st is not None
        if protect:
            st.protected.add(urn)
        else:
            st.protected.discard(urn)

    def history(self, stack: str, *, limit: int | None = None) -> tuple[HistoryEntry, ...]:
        st = self._enter("history", stack, limit=limit)
        assert st is not None
        return tuple(st.history[:limit] if limit else st.history)

    def export(self, stack: str) -> dict[str, Any]:
        st = self._enter("export", stack)
        assert st is not None
        if st.export is not None:
            return st.export
        return {"version": 3, "deployment": {"manifest": {"version": "v3.205.0"}, "resources": []}}


# --- the stand-in `pulumi` executable -------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "engine"
"""Pulumi's recorded outputs the stand-in executable answers with."""
STAND_IN = Path(__file__).resolve().parent / "pulumi_cli.py"


class FakeCli:
    """Puts the stand-in `pulumi` (:data:`STAND_IN`) on PATH and writes its scenario; reads
    back its call log. ``monkeypatch`` sets PATH, the scenario and log files and a passphrase."""

    def __init__(self, tmp: Path, monkeypatch) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        exe = self.bin / "pulumi"
        # -P: the script's own directory (tests/fakes, which holds this pulumi.py) must not
        # shadow the Pulumi SDK the stand-in imports for its gRPC event stream
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -P "{STAND_IN}" "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        self.scenario_file = tmp / "scenario.json"
        self.log = tmp / "calls.jsonl"
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_PULUMI_SCENARIO", str(self.scenario_file))
        monkeypatch.setenv("FAKE_PULUMI_LOG", str(self.log))
        monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
        monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
        from k8s_schemas import reference_dir

        ref = reference_dir()
        if ref is not None:
            monkeypatch.setenv("FAKE_PULUMI_REFERENCE", str(ref / "pulumi"))
        self.scenario()

    def scenario(self, *, version: str = "3.210.0", stacks=("cw-demo-h100",), version_bytes: bytes | None = None,
                 **commands) -> None:
        """``commands`` maps a command key (``preview``, ``up``, ``stack_history`` …, underscores
        for spaces) to its canned answer (file names relative to :data:`FIXTURES`).
        ``version_bytes``: what `pulumi version` prints instead (hostile: not UTF-8)."""
        import base64

        doc = {"version": version, "stacks": list(stacks),
               "commands": {k.replace("_", " "): v for k, v in commands.items()}}
        if version_bytes is not None:
            doc["version_base64"] = base64.b64encode(version_bytes).decode()
        self.scenario_file.write_text(json.dumps(doc))

    def _entries(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def calls(self) -> list[dict]:
        """Every invocation: ``{"argv", "cwd", "pid", "env"}``."""
        return [e for e in self._entries() if "argv" in e]

    def signals(self) -> list[dict]:
        """Every signal an invocation received: ``{"signal": "SIGINT", "pid"}``."""
        return [e for e in self._entries() if "signal" in e]

    def call(self, word: str) -> dict:
        return next(c for c in self.calls() if word in c["argv"])
