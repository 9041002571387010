"""Reviewed intent in the cluster file. A retirement, a shrink and a migration
declared as an exact ``intents:`` stanza: the guard lets exactly that change through and nothing
else, ``up`` performs it through the engine adapter (unprotect, create before delete, the update,
re-protect when it does not finish) and records it in the update message, and the stanza is
refused once the change is done (no replay). ``diff --base``: tests/cli/test_diff.py.

The engine is the in-memory FakeEngine (tests/fakes/pulumi.py), whose update refuses to delete a
protected resource before any step as Pulumi does (lifecycle test TestDBRProtect/1,
``DeleteStep.Apply``), so a retirement that did not unprotect its pool fails here as it would.
The last tests run the same retirement and migration through ``clusterstack up`` with the real
engine adapter and the recorded-format stand-in ``pulumi`` (tests/fakes/pulumi_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterstack.errors import ClusterstackError
from clusterstack.flows import up as up_flow
from clusterstack.guard import GuardBlocked
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE
from clusterstack.workspace import Workspace
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack, np_step, res_step
from helpers import git

STACK = "cw-demo-h100"


class Operator:
    """Answers every prompt with the stack name; collects the output."""

    def __init__(self) -> None:
        self.prompts, self.out, self.err = [], [], []

    def kw(self) -> dict:
        return {"prompt": lambda t: self.prompts.append(t) or STACK, "report": self.out.append,
                "warn": self.err.append}


def _queue(**flavors: int) -> dict:
    return {"spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": n}]}
        for f, n in flavors.items()]}]}}


def _checkout(ws: Path, edit) -> Workspace:
    path = ws / "clusters" / f"{STACK}.yaml"
    path.write_text(edit(path.read_text()))
    (ws / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "reviewed change")
    return Workspace.load(ws)


def _intent(stanza: str):
    return lambda text: text + "intents:\n" + stanza


def _calls(eng: FakeEngine) -> list[tuple]:
    return [(c[0], c[2].get("urn", c[2].get("targets"))) for c in eng.calls if c[0] in ("set_protect", "up")]


def _spare(op: str = "delete"):
    return np_step(op, STACK, "cwdemo-spare", changed={"maxNodes": (16, 16)})


# --- retirement -------------------------------------------------------------------------------

def test_a_reviewed_retirement_runs_end_to_end_and_its_replay_is_refused(workspace_copy):
    ws = _checkout(workspace_copy, _intent("  - retire: spare\n"))
    pool = _spare()
    eng = FakeEngine({STACK: FakeStack(steps=(pool,), protected={pool.urn})})
    op = Operator()
    res = up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **op.kw())
    assert res.result == "succeeded" and [s.op for s in res.steps] == ["delete"]
    # shown as intended (with its capacity), unprotected through the adapter, then the update
    assert any(ln.startswith("intended delete NodePool cwdemo-spare") for ln in op.out)
    assert "  capacity: maxNodes 16 → 0: −16 nodes, −128 GPUs" in op.out
    assert _calls(eng) == [("set_protect", pool.urn), ("up", None)]
    assert op.prompts == [f"type the stack name ({STACK}) to update it: "]   # typed: destructive
    [(_, _, kw)] = [c for c in eng.calls if c[0] == "up"]
    assert kw["message"].endswith("[intent: retire spare (cw-demo-h100.yaml intents[0])]")
    # the change is done: the same stanza is refused, located at its line
    with pytest.raises(ClusterstackError) as e:
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert e.value.exit_code == 2
    p = e.value.problems[0]
    assert p.file.name == "cw-demo-h100.yaml" and p.field == "intents[0]" and p.line is not None
    assert "it is done" in p.message and "used once" in p.hint


def test_without_the_intent_the_retirement_is_blocked(workspace_copy):
    ws = _checkout(workspace_copy, lambda t: t)
    pool = _spare()
    eng = FakeEngine({STACK: FakeStack(steps=(pool,), protected={pool.urn})})
    with pytest.raises(GuardBlocked):
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert _calls(eng) == []


def test_the_intent_lets_exactly_its_change_through_and_nothing_else(workspace_copy):
    ws = _checkout(workspace_copy, _intent("  - retire: spare\n"))
    pool, other = _spare(), np_step("delete", STACK, "cwdemo-cpu-general")
    eng = FakeEngine({STACK: FakeStack(steps=(pool, other), protected={pool.urn, other.urn})})
    with pytest.raises(GuardBlocked) as e:
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert [v.urn.rsplit("::", 1)[1] for v in e.value.verdict.violations] == ["cwdemo-cpu-general"]
    assert _calls(eng) == []   # nothing unprotected, nothing applied


def test_a_failed_update_protects_the_pool_again(workspace_copy):
    from clusterstack.engine.errors import EngineError

    ws = _checkout(workspace_copy, _intent("  - retire: spare\n"))
    pool = _spare()
    eng = FakeEngine({STACK: FakeStack(steps=(pool,), protected={pool.urn})})
    eng.fail("up", STACK, EngineError("the backend went away", stack=STACK))
    with pytest.raises(EngineError):
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert eng.stacks[STACK].protected == {pool.urn}
    assert [c for c in _calls(eng) if c[0] == "set_protect"] == [("set_protect", pool.urn)] * 2


# --- migration: old pool → new pool, create before delete -------------------------------------

def _migration_steps(new_gpus: int = 128) -> tuple:
    old = np_step("delete", STACK, "cwdemo-h100", changed={"maxNodes": (16, 16)})   # 16 × 8 GPUs
    new = np_step("create", STACK, "cwdemo-h200", protect=False)
    queue = res_step("update", STACK, KUEUE_CLUSTER_QUEUE, "training-cq",
                     old=_queue(**{"cwdemo-h100-flavor": 128}),
                     new=_queue(**{"cwdemo-h200-flavor": new_gpus}),
                     detailed_diff={"spec.resourceGroups[0].flavors[0].name": {"kind": "update"}})
    return old, new, queue


def _migrate(text: str) -> str:
    return text.replace("\n  h100:\n", "\n  h200:\n") + "intents:\n  - migrate: h100\n    to: h200\n"


def test_a_reviewed_migration_creates_the_new_pool_before_deleting_the_old(workspace_copy):
    ws = _checkout(workspace_copy, _migrate)
    old, new, queue = _migration_steps()
    eng = FakeEngine({STACK: FakeStack(steps=(new, queue, old), protected={old.urn})})
    op = Operator()
    res = up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **op.kw())
    assert res.result == "succeeded"
    assert _calls(eng) == [("up", (new.urn,)), ("set_protect", old.urn), ("up", None)]
    # the pool's delete and the quota it takes from the queue are both the intent's
    assert any(ln.startswith("intended delete NodePool cwdemo-h100") for ln in op.out)
    assert any(ln.startswith("intended shrink ClusterQueue training-cq") for ln in op.out)
    with pytest.raises(ClusterstackError, match="it is done"):
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())


def test_a_migration_that_cuts_more_quota_than_the_pool_held_is_blocked(workspace_copy):
    ws = _checkout(workspace_copy, _migrate)
    old, new, _ = _migration_steps()
    queue = res_step("update", STACK, KUEUE_CLUSTER_QUEUE, "training-cq",
                     old=_queue(**{"cwdemo-h100-flavor": 128, "cwdemo-cpu-general-flavor": 64}),
                     new=_queue(**{"cwdemo-h200-flavor": 128}))
    eng = FakeEngine({STACK: FakeStack(steps=(new, queue, old), protected={old.urn})})
    with pytest.raises(GuardBlocked) as e:
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert [v.type for v in e.value.verdict.violations] == [KUEUE_CLUSTER_QUEUE]
    assert _calls(eng) == []


# --- shrink ----------------------------------------------------------------------------------

def _shrink(text: str) -> str:
    text = text.replace("buffer_slices: 32                # the reserved fleet, pinned warm\n    max_slices: 32",
                        "buffer_slices: 16\n    max_slices: 16")
    return text + "intents:\n  - shrink: h100\n    from_nodes: 32\n    to_nodes: 16\n"


def test_a_reviewed_shrink_of_exactly_that_size_is_applied(workspace_copy):
    ws = _checkout(workspace_copy, _shrink)
    pool = np_step("update", STACK, "cwdemo-h100", changed={"maxNodes": (32, 16)})
    queue = res_step("update", STACK, KUEUE_CLUSTER_QUEUE, "training-cq",
                     old=_queue(**{"cwdemo-h100-flavor": 256}), new=_queue(**{"cwdemo-h100-flavor": 128}))
    eng = FakeEngine({STACK: FakeStack(steps=(pool, queue), protected={pool.urn})})
    res = up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert res.result == "succeeded" and _calls(eng) == [("up", None)]   # an update: no unprotect


def test_a_shrink_of_another_size_is_blocked(workspace_copy):
    ws = _checkout(workspace_copy, _shrink)
    pool = np_step("update", STACK, "cwdemo-h100", changed={"maxNodes": (32, 8)})
    eng = FakeEngine({STACK: FakeStack(steps=(pool,))})
    with pytest.raises(GuardBlocked) as e:
        up_flow.up(ws, STACK, clients=fake_clients(engine=eng), **Operator().kw())
    assert [v.op for v in e.value.verdict.violations] == ["shrink"]


# --- the stanza is exact: refused at its line when it does not state the config's change --------

@pytest.mark.parametrize("stanza, field, key, needle", [
    ("  - retire: h100\n", "intents[0].retire", "  - retire", "still in scale_groups"),
    ("  - retire: spare\n    shrink: h100\n", "intents[0]", "  - retire", "exactly one of retire, shrink, migrate"),
    ("  - shrink: h100\n    from_nodes: 32\n    to_nodes: 16\n", "intents[0].to_nodes", "    to_nodes",
     "has 32 nodes, not 16"),
    ("  - shrink: h100\n    from_nodes: 16\n    to_nodes: 32\n", "intents[0]", "  - shrink", "smaller to_nodes"),
    ("  - migrate: spare\n    to: h300\n", "intents[0].to", "    to:", "no scale group 'h300'"),
    ("  - retire: spare\n    to: h100\n", "intents[0]", "  - retire", "to does not belong to a retire"),
])
def test_a_stanza_that_is_not_the_change_is_refused_at_its_line(workspace_copy, capsys, stanza, field, key, needle):
    from clusterstack.cli import main

    path = workspace_copy / "clusters" / f"{STACK}.yaml"
    text = path.read_text() + "intents:\n" + stanza
    path.write_text(text)
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(key))
    assert f"cw-demo-h100.yaml:{line}: {field}: " in err and needle in err, err


# --- end to end: `clusterstack up` through the real engine adapter and the stand-in `pulumi` ----
# The same reviewed changes, but the engine is clusterstack.engine.automation driving the
# recorded-format stand-in CLI (tests/fakes/pulumi_cli.py, FakeCli): what is asserted is what the
# `pulumi` executable was asked — `state unprotect URN --yes`, `up --target URN`, `up`, and
# `state protect URN --yes` again when the update fails.

SPARE = ("urn:pulumi:cw-demo-h100::clusterstack::clusterstack:coreweave:NodePools$"
         "kubernetes:compute.coreweave.com/v1alpha1:NodePool::cwdemo-spare")


def _cli(argv: list[str]) -> list[str]:
    """The verb and positional arguments of one stand-in invocation, flags (and their values)
    other than ``--target`` and ``--yes`` dropped."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--stack", "--message", "--event-log", "--exec-kind", "--color", "--config-file"):
            skip = True
        elif a in ("--target", "--yes") or not a.startswith("-"):
            out.append(a)
    return out


def _engine_calls(cli) -> list[list[str]]:
    """The state edits and updates the stand-in received, in order (previews, history and
    outputs left out)."""
    return [c for c in (_cli(x["argv"]) for x in cli.calls()) if c[:1] in (["state"], ["up"])]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    from fakes.pulumi import FakeCli

    return FakeCli(tmp_path, monkeypatch)


def _typed(monkeypatch, *answers: str) -> list[str]:
    asked: list[str] = []
    queue = list(answers)

    def answer(prompt: str = "") -> str:
        asked.append(prompt)
        if not queue:
            raise AssertionError(f"an unexpected prompt: {prompt}")
        return queue.pop(0)

    monkeypatch.setattr("builtins.input", answer)
    return asked


def test_a_reviewed_retirement_runs_through_up_and_the_pulumi_cli(workspace_copy, cli, monkeypatch, capsys):
    from clusterstack.cli import main

    ws = _checkout(workspace_copy, _intent("  - retire: spare\n"))
    cli.scenario(preview={"events": "events/preview-nodepool-retire.jsonl"},
                 up={"events": "events/up-nodepool-retire.jsonl"},
                 stack_history={"stdout_file": "history.json"})
    asked = _typed(monkeypatch, STACK)   # a delete: --yes does not cover it, the name is typed
    assert main(["--root", str(ws.root), "up", STACK, "--yes"]) == 0
    assert len(asked) == 1
    assert _engine_calls(cli) == [["state", "unprotect", SPARE, "--yes"], ["up", "--yes"]]
    unprotect = cli.call("unprotect")
    assert unprotect["argv"][unprotect["argv"].index("--stack") + 1] == STACK
    up = cli.call("up")["argv"]
    assert up[up.index("--message") + 1].endswith("[intent: retire spare (cw-demo-h100.yaml intents[0])]")
    captured = capsys.readouterr()
    assert f"type the stack name ({STACK}) to update it: " in captured.err
    out = captured.out
    assert "intended delete NodePool cwdemo-spare" in out
    assert f"{STACK}: unprotecting cwdemo-spare for its reviewed delete" in out
    assert f"{STACK}: performed retire spare (cw-demo-h100.yaml intents[0])" in out

    # the pool is gone: the engine's preview no longer deletes it, and the stanza is refused
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    before = len(_engine_calls(cli))
    _typed(monkeypatch)
    assert main(["--root", str(ws.root), "up", STACK, "--yes"]) == 2
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate((ws.root / "clusters" / f"{STACK}.yaml").read_text().splitlines(), 1)
                if ln.startswith("  - retire: spare"))
    assert f"cw-demo-h100.yaml:{line}: intents[0]: " in err and "it is done" in err, err
    assert len(_engine_calls(cli)) == before   # previewed only: nothing unprotected, nothing applied


def test_a_retirement_whose_update_fails_is_protected_again_through_the_cli(workspace_copy, cli, monkeypatch,
                                                                         capsys):
    from clusterstack.cli import main

    ws = _checkout(workspace_copy, _intent("  - retire: spare\n"))
    cli.scenario(preview={"events": "events/preview-nodepool-retire.jsonl"},
                 up={"events": "events/up-resource-error.jsonl", "code": 255},
                 stack_history={"stdout_file": "history.json"})
    _typed(monkeypatch, STACK)
    # the recorded failed update (a NodePool update the admission webhook denied, exit 255):
    # ResourceFailedError, exit 1 — after which the pool is protected again
    assert main(["--root", str(ws.root), "up", STACK]) == 1
    assert _engine_calls(cli) == [["state", "unprotect", SPARE, "--yes"], ["up", "--yes"],
                                  ["state", "protect", SPARE, "--yes"]]
    err = capsys.readouterr().err
    assert f"{STACK}: {SPARE} protected again (the update did not finish)" in err
    assert "resource operation(s) failed" in err


H100 = SPARE.replace("cwdemo-spare", "cwdemo-h100")
H200 = SPARE.replace("cwdemo-spare", "cwdemo-h200")


def test_a_reviewed_migration_runs_through_up_and_the_pulumi_cli(workspace_copy, cli, monkeypatch, capsys):
    from clusterstack.cli import main

    ws = _checkout(workspace_copy, _migrate)
    cli.scenario(preview={"events": "events/preview-nodepool-migrate.jsonl"},
                 up={"events": "events/up-nodepool-migrate.jsonl",
                     "targeted": {"events": "events/up-nodepool-migrate-create.jsonl"}},
                 stack_history={"stdout_file": "history.json"})
    _typed(monkeypatch, STACK)
    assert main(["--root", str(ws.root), "up", STACK]) == 0
    # create before delete: the new pool by a targeted update, then the old one unprotected,
    # then the update that moves the queue and deletes it
    assert _engine_calls(cli) == [["up", "--yes", "--target", H200],
                                  ["state", "unprotect", H100, "--yes"], ["up", "--yes"]]
    messages = [c["argv"][c["argv"].index("--message") + 1] for c in cli.calls() if _cli(c["argv"])[:1] == ["up"]]
    intent = "[intent: migrate h100 → cwdemo-h200 (cw-demo-h100.yaml intents[0])]"
    assert messages[0].endswith(f"{intent} [create before delete]") and messages[1].endswith(intent)
    out = capsys.readouterr().out
    assert "intended delete NodePool cwdemo-h100" in out and "intended shrink ClusterQueue training-cq" in out
    assert f"{STACK}: creating cwdemo-h200 first (create before delete)" in out

    # done: the engine shows no change any more; the stanza is refused at its line (exit 2)
    cli.scenario(preview={"events": "events/preview-clean.jsonl"})
    before = len(_engine_calls(cli))
    _typed(monkeypatch)
    assert main(["--root", str(ws.root), "up", STACK]) == 2
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate((ws.root / "clusters" / f"{STACK}.yaml").read_text().splitlines(), 1)
                if ln.startswith("  - migrate: h100"))
    assert f"cw-demo-h100.yaml:{line}: intents[0]: " in err and "it is done" in err, err
    assert len(_engine_calls(cli)) == before
