"""`preview`, `up`, `stack init`, `stack ls` on the in-memory FakeEngine.

The safety rules of `up` read like a spec here: refuses without confirmation, refuses on the
guard, honours --yes only when the guard is clean, cancels at a guarded step mid-update, and
asks for an extra typed confirmation off the release branch or from a dirty tree.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.engine import PassphraseMissingError, PulumiMissingError, StackLockedError
from fakes.pulumi import FakeEngine, FakeStack, np_step, res_step, urn
from clusterstack.engine.model import HistoryEntry
from clusterstack.pulumi.tokens import NODEPOOL
from fakes.clients import fake_clients
from helpers import git

STACK = "cw-demo-h100"
CR = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"


def update_steps(stack: str = STACK) -> tuple:
    return (np_step("same", stack, "cwdemo-cpu-general"),
            np_step("update", stack, "cwdemo-h100", changed={"maxNodes": (16, 24)}),
            res_step("create", stack, CR, "cwdemo-node-observer",
                     new={"metadata": {"name": "cwdemo-node-observer"}}))


def replace_steps(stack: str = STACK) -> tuple:
    return (np_step("same", stack, "cwdemo-cpu-general"),
            np_step("replace", stack, "cwdemo-h100", changed={"instanceType": ("gd-8xh100ib-i128", "gd-8xh200ib-i128")},
                    replace_keys=("spec.instanceType",)))



@pytest.fixture
def root(workspace_copy: Path) -> Path:
    """The example workspace as a clean git checkout of `main` (the release branch)."""
    (workspace_copy / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(workspace_copy, "init", "-q", "-b", "main")
    git(workspace_copy, "add", "-A")
    git(workspace_copy, "commit", "-q", "-m", "clusters")
    return workspace_copy


@pytest.fixture
def fake(workspace_copy, monkeypatch) -> FakeEngine:
    """Every example cluster has a stack; cw-demo-h100's preview has an update and a create."""
    from clusterstack.workspace import Workspace

    eng = FakeEngine({name: FakeStack() for name in Workspace.load(workspace_copy).cluster_names()})
    eng.stacks[STACK].steps = update_steps()
    return eng


@pytest.fixture
def run(fake):
    """``run(root, *args)``: the CLI with the fake engine (``Clients.engine``)."""
    clients = fake_clients(engine=fake)
    return lambda root, *args: main(["--root", str(root), *args], clients=clients)


class Typing:
    """Stands in for the operator at the keyboard: answers prompts in order; None = stdin closed."""

    def __init__(self, monkeypatch, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked = 0
        monkeypatch.setattr("builtins.input", self)

    def __call__(self, prompt: str = "") -> str:
        self.asked += 1
        if not self.answers:
            raise AssertionError("an unexpected confirmation was asked")
        a = self.answers.pop(0)
        if a is None:
            raise EOFError
        return a


def ops(eng: FakeEngine) -> list[str]:
    return [c[0] for c in eng.calls]


def run_real(root: Path, *args: str) -> int:
    """The CLI with the production clients (the real engine adapter)."""
    return main(["--root", str(root), *args])


# --- preview ---------------------------------------------------------------------------------

def test_preview_prints_the_grouped_diff_and_a_clean_verdict(root, fake, capsys, run):
    assert run(root, "preview", STACK) == 0
    o = capsys.readouterr().out
    assert f"{STACK}: 1 to create, 1 to update (1 unchanged)" in o
    assert "creates (1):" in o and f"+ {CR}  cwdemo-node-observer" in o
    assert "updates (1):" in o and f"~ {NODEPOOL}  cwdemo-h100" in o
    assert "~ spec.maxNodes: 16 → 24" in o
    assert "guard: ok — 0 violation(s); 0 destructive change(s) in 3 step(s)" in o  # views.verdict
    assert ("preview", STACK, {"refresh": False}) in fake.calls


def test_preview_blocks_with_exit_3_and_json_carries_the_verdict(root, fake, capsys, run):
    fake.stacks[STACK].steps = replace_steps()
    assert run(root, "preview", STACK, "--refresh", "--json") == 3
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["format"] == "clusterstack.preview/v1"
    [s] = doc["stacks"]
    assert s["guard"]["format"] == "clusterstack.verdict/v1" and s["guard"]["severity"] == "blocked"
    assert s["counts"] == {"replace": 1, "same": 1}
    [ch] = s["changes"]
    assert (ch["op"], ch["type"]) == ("replace", NODEPOOL)
    assert ch["properties"] == [{"path": "spec.instanceType", "kind": "update-replace",
                                 "old": "gd-8xh100ib-i128", "new": "gd-8xh200ib-i128"}]
    assert not s["guard"]["ok"] and s["guard"]["violations"][0]["op"] == "replace"
    assert "1 guarded change(s) blocked" in captured.err
    assert ("preview", STACK, {"refresh": True}) in fake.calls
    # deterministic output
    assert run(root, "preview", STACK, "--refresh", "--json") == 3
    assert capsys.readouterr().out == captured.out


def test_preview_all_covers_every_stack_and_fails_on_any(root, fake, capsys, run):
    fake.stacks["gcp-demo"].steps = (res_step("delete", "gcp-demo", "gcp:compute/address:Address", "ctl-ip",
                                              old={"address": "203.0.113.7"}),)
    assert run(root, "preview", "--all") == 3
    assert [c[1] for c in fake.calls] == sorted(fake.stacks)
    o = capsys.readouterr().out
    assert "BLOCKED delete Address ctl-ip" in o and "cw-demo-gb200: no changes" in o


def test_preview_of_an_unknown_cluster_never_reaches_the_engine(root, fake, capsys, run):
    assert run(root, "preview", "nope") == 2
    assert fake.calls == [] and "unknown cluster 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [("preview", "gcp-tpu-b"), ("preview", "--all"),
                                     ("up", "gcp-tpu-a", "--yes")])
def test_a_vm_two_clusters_claim_is_refused_before_the_engine_as_validate_does(
        root, fake, capsys, run, command):
    from helpers import edit

    edit(root / "clusters" / "gcp-tpu-b.yaml",
         ("    zone: us-east5-b\n    instance: tpub-controller", "    zone: us-central1-a\n    instance: tpua-controller"))
    assert run(root, "validate") == 2
    expected = capsys.readouterr().err
    assert "controller VM 'tpua-controller' in demo-project/us-central1-a is also claimed" in expected
    assert run(root, *command) == 2
    assert fake.calls == [] and capsys.readouterr().err == expected


# --- up: confirmation and the guard ----------------------------------------------------------

def test_up_refuses_without_confirmation(root, fake, monkeypatch, capsys, run):
    Typing(monkeypatch, None)  # stdin closed (CI, no terminal)
    assert run(root, "up", STACK) == 2
    assert "up" not in ops(fake)
    assert "update not confirmed; nothing was applied" in capsys.readouterr().err


def test_up_refuses_a_wrongly_typed_stack_name(root, fake, monkeypatch, run):
    Typing(monkeypatch, "cw-demo-gb200")
    assert run(root, "up", STACK) == 2
    assert "up" not in ops(fake)


def test_up_applies_after_the_typed_name_and_records_the_commit(root, fake, monkeypatch, capsys, run):
    t = Typing(monkeypatch, STACK)
    assert run(root, "up", STACK, "-m", "raise h100 max nodes") == 0
    assert t.asked == 1
    [(_, _, kw)] = [c for c in fake.calls if c[0] == "up"]
    head = git(root, "rev-parse", "HEAD")
    assert kw["message"] == f"raise h100 max nodes [clusterstack: git {head[:12]} on main]"
    o = capsys.readouterr().out
    assert f"update {STACK} from git {head[:12]} on main" in o
    assert f"{STACK}: update succeeded (version 1): 1 create, 1 update" in o


def test_up_yes_skips_typing_only_when_the_guard_is_clean(root, fake, monkeypatch, run):
    Typing(monkeypatch)  # any prompt fails the test
    assert run(root, "up", STACK, "--yes") == 0
    assert "up" in ops(fake)


def test_up_yes_still_asks_when_the_update_destroys_something(root, fake, monkeypatch, capsys, run):
    # deleting an unprotected ClusterRole is allowed by the policy, but it is destructive
    fake.stacks[STACK].steps = (res_step("delete", STACK, CR, "cwdemo-node-observer",
                                         old={"metadata": {"name": "cwdemo-node-observer"}}),)
    Typing(monkeypatch, None)
    assert run(root, "up", STACK, "--yes") == 2
    assert "up" not in ops(fake)
    assert "--yes ignored: the update replaces or deletes 1 resource(s)" in capsys.readouterr().err
    Typing(monkeypatch, STACK)
    assert run(root, "up", STACK, "--yes") == 0
    assert "up" in ops(fake)


def test_up_refuses_on_the_guard_before_asking_anything(root, fake, monkeypatch, capsys, run):
    fake.stacks[STACK].steps = replace_steps()
    t = Typing(monkeypatch)
    assert run(root, "up", STACK, "--yes") == 3
    assert t.asked == 0 and "up" not in ops(fake)
    captured = capsys.readouterr()
    assert "BLOCKED replace NodePool cwdemo-h100" in captured.out
    assert captured.out.count(urn(STACK, NODEPOOL, 'cwdemo-h100', 'clusterstack:coreweave:NodePools')) == 1
    assert "nothing was applied" in captured.err


def test_up_cancels_at_a_guarded_step_mid_update(root, fake, monkeypatch, capsys, run):
    # the preview was clean, but the update meets a NodePool replacement (state drifted)
    st = fake.stacks[STACK]
    guarded = np_step("create-replacement", STACK, "cwdemo-h100",
                      changed={"instanceType": ("gd-8xh100ib-i128", "gd-8xh200ib-i128")},
                      replace_keys=("spec.instanceType",))
    st.up_steps = (update_steps()[2], guarded, np_step("delete-replaced", STACK, "cwdemo-h100"))
    Typing(monkeypatch)
    assert run(root, "up", STACK, "--yes") == 3
    captured = capsys.readouterr()
    assert "BLOCKED replace NodePool cwdemo-h100 — forced by spec.instanceType" in captured.err
    assert "update cancelled at a guarded step: create-replacement" in captured.err
    assert "delete-replaced" not in captured.out  # the step after the guarded one never ran
    assert st.history == []  # no update was recorded


def test_up_with_nothing_to_change_does_not_update(root, fake, monkeypatch, capsys, run):
    fake.stacks[STACK].steps = (np_step("same", STACK, "cwdemo-h100"),)
    Typing(monkeypatch)
    assert run(root, "up", STACK) == 0
    assert "up" not in ops(fake) and f"{STACK}: nothing to update" in capsys.readouterr().out


# --- up: release branch and dirty tree -------------------------------------------------------

def test_up_from_another_branch_needs_the_typed_commit_phrase(root, fake, monkeypatch, capsys, run):
    git(root, "checkout", "-q", "-b", "ops/try-h200")
    head = git(root, "rev-parse", "HEAD")[:12]
    Typing(monkeypatch, STACK)  # the stack name is not the phrase
    assert run(root, "up", STACK, "--yes") == 2
    assert "up" not in ops(fake)
    err = capsys.readouterr().err
    assert "branch ops/try-h200 is not the release branch main" in err
    assert f"type '{STACK}@{head}'" in err
    Typing(monkeypatch, f"{STACK}@{head}")  # --yes covers the clean guard; the phrase the branch
    assert run(root, "up", STACK, "--yes") == 0
    [(_, _, kw)] = [c for c in fake.calls if c[0] == "up"]
    assert kw["message"].endswith(f"[clusterstack: git {head} on ops/try-h200]")


def test_up_from_a_dirty_tree_needs_the_phrase_even_on_main(root, fake, monkeypatch, capsys, run):
    (root / "clusters" / "cw-demo-h100.yaml").write_text(
        (root / "clusters" / "cw-demo-h100.yaml").read_text() + "\n# local edit\n")
    head = git(root, "rev-parse", "HEAD")[:12]
    Typing(monkeypatch, None)
    assert run(root, "up", STACK, "--yes") == 2
    assert "uncommitted changes" in capsys.readouterr().err and "up" not in ops(fake)
    Typing(monkeypatch, f"{STACK}@{head}", STACK)  # phrase, then the name (phrase ≠ name)
    assert run(root, "up", STACK) == 0
    [(_, _, kw)] = [c for c in fake.calls if c[0] == "up"]
    assert kw["message"].endswith(f"[clusterstack: git {head} dirty on main]")


def test_release_branch_comes_from_the_workspace(root, fake, monkeypatch, run):
    toml = root / "clusterstack.toml"
    toml.write_text(toml.read_text().replace('release_branch = "main"', 'release_branch = "release"'))
    git(root, "commit", "-q", "-am", "release branch is `release`")
    Typing(monkeypatch, None)
    assert run(root, "up", STACK, "--yes") == 2
    git(root, "checkout", "-q", "-b", "release")
    Typing(monkeypatch)
    assert run(root, "up", STACK, "--yes") == 0


def test_up_outside_git_needs_the_phrase(workspace_copy, fake, monkeypatch, capsys, run):
    Typing(monkeypatch, f"{STACK}@no-commit")
    assert run(workspace_copy, "up", STACK, "--yes") == 0
    assert "no git commit to record" in capsys.readouterr().err


# --- error mapping ---------------------------------------------------------------------------

@pytest.mark.parametrize("error, text", [
    (StackLockedError(STACK), f"error: stack {STACK}: another update is currently in progress"),
    (PulumiMissingError(), "curl -fsSL https://get.pulumi.com | sh"),
    (PassphraseMissingError(STACK), "PULUMI_CONFIG_PASSPHRASE"),
])
def test_engine_errors_become_exit_2_with_the_message(root, fake, capsys, error, text, run):
    fake.fail("preview", STACK, error)
    assert run(root, "preview", STACK) == 2
    assert text in capsys.readouterr().err


def test_the_default_engine_reports_a_missing_pulumi_cli(root, monkeypatch, capsys, tmp_path):
    empty = tmp_path / "no-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    assert run_real(root, "preview", STACK) == 2
    err = capsys.readouterr().err
    assert "the Pulumi CLI is not installed" in err and "https://www.pulumi.com/docs/install/" in err


def test_the_default_engine_reports_a_missing_passphrase_first(root, monkeypatch, capsys):
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    assert run_real(root, "preview", STACK) == 2
    assert "secrets provider is `passphrase` but PULUMI_CONFIG_PASSPHRASE" in capsys.readouterr().err


# --- stack init / stack ls -------------------------------------------------------------------

def test_stack_init_refuses_an_unknown_cluster(root, fake, capsys, run):
    assert run(root, "stack", "init", "cw-new") == 2
    assert fake.calls == [] and not (root / "infra" / "Pulumi.cw-new.yaml").exists()
    assert "unknown cluster 'cw-new'" in capsys.readouterr().err


def test_stack_init_creates_the_stack_then_writes_the_pointer(root, fake, capsys, run):
    cfg = root / "clusters" / "cw-new.yaml"
    cfg.write_text((root / "clusters" / "cw-demo-h100.yaml").read_text())
    pointer = root / "infra" / "Pulumi.cw-new.yaml"
    assert run(root, "stack", "init", "cw-new") == 0
    assert pointer.read_text() == "config:\n  clusterstack:cluster: cw-new\n"
    assert ("init_stack", "cw-new", {}) in fake.calls
    o = capsys.readouterr().out
    assert "wrote infra/Pulumi.cw-new.yaml" in o and "stack cw-new: created" in o
    assert run(root, "stack", "init", "cw-new") == 0  # idempotent
    assert "already exists" in capsys.readouterr().out
    assert pointer.read_text() == "config:\n  clusterstack:cluster: cw-new\n"


def _new_cluster(root: Path) -> Path:
    (root / "clusters" / "cw-new.yaml").write_text((root / "clusters" / "cw-demo-h100.yaml").read_text())
    return root / "infra" / "Pulumi.cw-new.yaml"


@pytest.mark.parametrize("error", [PassphraseMissingError("cw-new"), PulumiMissingError()],
                         ids=["no-passphrase", "no-pulumi-cli"])
def test_stack_init_writes_nothing_when_creating_the_stack_fails(root, fake, capsys, error, run):
    pointer = _new_cluster(root)
    fake.fail("init_stack", "cw-new", error)
    assert run(root, "stack", "init", "cw-new") == 2
    assert not pointer.exists()
    assert [f.name for f in (root / "infra").iterdir() if "cw-new" in f.name] == []  # no temp file either
    assert "wrote" not in capsys.readouterr().out


@pytest.mark.parametrize("env, text", [
    ({"PATH": ""}, "the Pulumi CLI is not installed"),
    ({"PULUMI_CONFIG_PASSPHRASE": None}, "PULUMI_CONFIG_PASSPHRASE"),
], ids=["no-pulumi-cli", "no-passphrase"])
def test_stack_init_with_the_real_engine_writes_nothing_on_failure(root, monkeypatch, capsys, tmp_path,
                                                                  env, text):
    pointer = _new_cluster(root)
    empty = tmp_path / "no-bin"
    empty.mkdir()
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v or str(empty))
    assert run_real(root, "stack", "init", "cw-new") == 2
    assert text in capsys.readouterr().err
    assert not pointer.exists()


def test_stack_init_keeps_what_pulumi_wrote_to_the_stack_file(root, capsys, monkeypatch):
    """`pulumi stack init` writes the secrets provider's salt/key to Pulumi.<stack>.yaml; the
    pointer is merged into that file after the stack was created, never over it."""
    pointer = _new_cluster(root)

    class PulumiLike(FakeEngine):
        def init_stack(self, stack):
            created = super().init_stack(stack)
            if created:  # like `pulumi stack init`: a new stack's file gets its salt
                pointer.write_text("encryptionsalt: v1:abc:def\n")
            return created

    eng = PulumiLike()
    clients = fake_clients(engine=eng)
    assert main(["--root", str(root), "stack", "init", "cw-new"], clients=clients) == 0
    assert pointer.read_text() == "config:\n  clusterstack:cluster: cw-new\nencryptionsalt: v1:abc:def\n"
    assert "wrote infra/Pulumi.cw-new.yaml" in capsys.readouterr().out
    assert main(["--root", str(root), "stack", "init", "cw-new"], clients=clients) == 0
    assert "kept infra/Pulumi.cw-new.yaml" in capsys.readouterr().out


def test_stack_init_refuses_a_pointer_naming_another_cluster(root, fake, capsys, run):
    (root / "infra" / "Pulumi.cw-demo-h100.yaml").write_text("config:\n  clusterstack:cluster: cw-demo-gb200\n")
    assert run(root, "stack", "init", STACK) == 2
    assert "init_stack" not in ops(fake)


def test_stack_ls_shows_last_update_and_result(root, fake, capsys, monkeypatch, run):
    from datetime import datetime, timezone

    fake.stacks[STACK].history = [HistoryEntry(
        version=4, kind="update", result="failed",
        start_time=datetime(2025, 1, 14, 10, 2, tzinfo=timezone.utc),
        end_time=datetime(2025, 1, 14, 10, 4, 40, tzinfo=timezone.utc), message="m")]
    del fake.stacks["gcp-demo"]
    fake.stacks["orphan"] = FakeStack()
    assert run(root, "stack", "ls", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["stack"]: r for r in doc["stacks"]}
    assert rows[STACK]["last_update"] == "2025-01-14T10:04:40Z" and rows[STACK]["last_result"] == "failed"
    assert rows["gcp-demo"] == {"stack": "gcp-demo", "in_backend": False, "stack_file": True,
                                "last_update": None, "last_result": None, "update_in_progress": False,
                                "resource_count": None}
    assert rows["orphan"]["stack_file"] is False
    assert run(root, "stack", "ls") == 0
    o = capsys.readouterr().out
    assert "not created: clusterstack stack init gcp-demo" in o and "failed" in o
