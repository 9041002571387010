"""The library flows the CLI calls (clusterstack.flows), called directly: the guarded `up` and
`preview` over the FakeEngine, and the static diff against a state file and a git ref — with
callbacks for the operator and the output, and a Clients object instead of the CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import edit, git
from clusterstack.adapters.git import GitError, GitState
from clusterstack.engine.errors import UpdateCancelledError
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.flows import diff as diff_flow
from clusterstack.flows import up as up_flow
from clusterstack.pulumi.tokens import NODEPOOL
from clusterstack.guard import GuardBlocked, GuardPolicy
from clusterstack.workspace import Workspace
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack, np_step

STACK = "cw-demo-h100"
STATE = Path(__file__).resolve().parents[1] / "fixtures" / "state"
RELEASE = GitState(commit="a" * 40, branch="main", dirty=False)



def update(stack: str = STACK) -> tuple:
    return (np_step("same", stack, "cwdemo-cpu-general"),
            np_step("update", stack, "cwdemo-h100", changed={"maxNodes": (16, 24)}))


def replace(stack: str = STACK) -> tuple:
    return (np_step("replace", stack, "cwdemo-h100", changed={"instanceType": ("gd-8xh100ib-i128", "gd-8xh200ib-i128")},
                    replace_keys=("spec.instanceType",)),)


class Operator:
    """Answers prompts in order (None: stdin closed) and records them; collects the output."""

    def __init__(self, *answers: str | None) -> None:
        self.answers, self.prompts, self.out, self.err = list(answers), [], [], []

    def prompt(self, text: str) -> str | None:
        self.prompts.append(text)
        if not self.answers:
            raise AssertionError(f"unexpected prompt: {text}")
        return self.answers.pop(0)

    def kw(self) -> dict:
        return {"prompt": self.prompt, "report": self.out.append, "warn": self.err.append}


def ops(eng: FakeEngine) -> list[str]:
    return [c[0] for c in eng.calls]


# --- guarded_up: the safety rules over any engine ---------------------------------------------

def test_guarded_up_applies_a_clean_update_with_yes_and_records_the_commit():
    eng = FakeEngine({STACK: FakeStack(steps=update())})
    op = Operator()
    res = up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=True,
                             message="raise max nodes", **op.kw())
    assert res is not None and res.counts == {"same": 1, "update": 1}
    [(_, _, kw)] = [c for c in eng.calls if c[0] == "up"]
    assert kw["message"] == f"raise max nodes [clusterstack: git {'a' * 12} on main]"
    assert op.prompts == [] and op.err == []
    assert f"update {STACK} from git {'a' * 12} on main" in op.out
    assert op.out[-1] == f"{STACK}: update succeeded (version 1): 1 update"


def test_guarded_up_judges_the_applied_steps_again_and_never_exits_0_after_a_nodepool_delete():
    # the update also deleted a NodePool that no step announcement showed: rule 6 refuses it
    eng = FakeEngine({STACK: FakeStack(steps=update(),
                                       unannounced=(np_step("delete", STACK, "cwdemo-cpu-general"),))})
    op = Operator()
    with pytest.raises(GuardBlocked) as e:
        up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=True,
                           message="m", **op.kw())
    assert e.value.exit_code == 3
    assert [(v.op, v.urn.rsplit("::", 1)[1]) for v in e.value.verdict.violations] == [("delete", "cwdemo-cpu-general")]
    assert "the update applied a step the guard refuses" in e.value.render()


def test_guarded_up_refuses_a_destructive_change_the_preview_did_not_show():
    # an allowed type (a retained ConfigMap-like object) deleted although the preview showed none
    from fakes.pulumi import res_step

    gone = res_step("delete", STACK, "kubernetes:core/v1:ConfigMap", "kueue-config")
    eng = FakeEngine({STACK: FakeStack(steps=update(), unannounced=(gone,))})
    op = Operator()
    with pytest.raises(GuardBlocked) as e:
        up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=True,
                           message="m", **op.kw())
    [v] = e.value.verdict.violations
    assert (v.op, v.urn) == ("delete", gone.urn) and "its reviewed preview did not show it" in v.rule
    assert any(line.startswith("UNREVIEWED delete of ") for line in op.err)


def test_guarded_up_blocks_on_the_guard_before_asking():
    eng = FakeEngine({STACK: FakeStack(steps=replace())})
    op = Operator()
    with pytest.raises(GuardBlocked):
        up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=True,
                           message="m", **op.kw())
    assert "up" not in ops(eng) and op.prompts == []
    assert any("BLOCKED replace NodePool" in line for line in op.out)


@pytest.mark.parametrize("git_state, why", [
    (GitState(commit="b" * 40, branch="ops/try", dirty=False), "branch ops/try is not the release branch main"),
    (GitState(commit="b" * 40, branch="main", dirty=True), "the working tree has uncommitted changes"),
    (GitState(commit=None, branch=None, dirty=False), "no git commit to record"),
])
def test_guarded_up_off_the_release_branch_needs_the_typed_phrase(git_state, why):
    eng = FakeEngine({STACK: FakeStack(steps=update())})
    op = Operator(None)  # stdin closed: a refusal
    with pytest.raises(ClusterstackError, match="unreleased tree not confirmed"):
        up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=git_state, release_branch="main", yes=True,
                           message="m", **op.kw())
    assert "up" not in ops(eng) and why in op.err[0]
    phrase = f"{STACK}@{git_state.short}"
    op = Operator(phrase)  # --yes covers the clean guard; the phrase covers the tree
    assert up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=git_state, release_branch="main", yes=True,
                              message="m", **op.kw()) is not None
    assert op.prompts == [f"type '{phrase}' to update from this tree anyway: "]


def test_guarded_up_cancels_at_a_guarded_step_the_preview_did_not_show():
    eng = FakeEngine({STACK: FakeStack(steps=update())})
    eng.stacks[STACK].up_steps = (np_step("create-replacement", STACK, "cwdemo-h100",
                                          changed={"instanceType": ("a", "b")}, replace_keys=("spec.instanceType",)),
                                  np_step("delete-replaced", STACK, "cwdemo-h100"))
    op = Operator()
    with pytest.raises(UpdateCancelledError):
        up_flow.guarded_up(eng, STACK, policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=True,
                           message="m", **op.kw())
    assert eng.stacks[STACK].history == []
    assert any("BLOCKED replace" in line for line in op.err)
    assert not any("delete-replaced" in line for line in op.out)


def test_guarded_up_with_a_custom_confirmation_name():
    eng = FakeEngine({"prod": FakeStack(steps=update("prod"))})
    op = Operator("echo")
    up_flow.guarded_up(eng, "prod", policy=GuardPolicy(), git=RELEASE, release_branch="main", yes=False,
                       message="m", confirm="echo", **op.kw())
    assert op.prompts == ["type the name (echo) to update it: "] and "up" in ops(eng)


# --- up and preview over a workspace -----------------------------------------------------------

@pytest.fixture
def checkout(workspace_copy: Path) -> Workspace:
    (workspace_copy / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(workspace_copy, "init", "-q", "-b", "main")
    git(workspace_copy, "add", "-A")
    git(workspace_copy, "commit", "-q", "-m", "clusters")
    return Workspace.load(workspace_copy)


def test_up_reads_policy_release_branch_and_git_state_from_the_workspace(checkout):
    eng = FakeEngine({STACK: FakeStack(steps=update())})
    op = Operator(STACK)
    res = up_flow.up(checkout, STACK, clients=fake_clients(engine=eng), **op.kw())
    assert res.version == 1 and op.prompts == [f"type the stack name ({STACK}) to update it: "]
    head = git(checkout.root, "rev-parse", "HEAD")
    [(_, _, kw)] = [c for c in eng.calls if c[0] == "up"]
    assert kw["message"] == f"clusterstack up {STACK} [clusterstack: git {head[:12]} on main]"


def test_up_of_an_unknown_cluster_never_reaches_the_engine(checkout):
    eng = FakeEngine({})
    with pytest.raises(ConfigError, match="unknown cluster 'nope'"):
        up_flow.up(checkout, "nope", clients=fake_clients(engine=eng), prompt=Operator().prompt)
    assert eng.calls == []


def test_preview_yields_each_stack_with_its_verdict(checkout):
    eng = FakeEngine({name: FakeStack() for name in checkout.cluster_names()})
    eng.stacks[STACK].steps = replace()
    results = list(up_flow.preview(checkout, [], clients=fake_clients(engine=eng), all_=True))
    assert [r.result.stack for r in results] == sorted(checkout.cluster_names())
    by = {r.result.stack: r.verdict for r in results}
    assert not by[STACK].ok and by[STACK].violations[0].type == NODEPOOL
    assert all(v.ok for s, v in by.items() if s != STACK)
    with pytest.raises(ClusterstackError, match="not both"):
        list(up_flow.preview(checkout, [STACK], clients=fake_clients(engine=eng), all_=True))


# --- the static diff --------------------------------------------------------------------------

def test_diff_against_a_state_file(workspace_copy):
    ws = Workspace.load(workspace_copy)
    export = STATE / "gcp-demo.export.json"
    res = diff_flow.diff(ws, clients=fake_clients(), names=[], state=export)
    assert res.base == {"kind": "state", "file": str(export)} and res.label == str(export)
    (d,) = res.diffs
    assert (d.stack, res.findings) == ("gcp-demo", 0)
    edit(workspace_copy / "clusters" / "gcp-demo.yaml", ("address: 34.16.10.21", "address: 34.16.10.99"))
    res = diff_flow.diff_state(Workspace.load(workspace_copy), export, "gcp-demo")
    assert res.findings == 1
    (f,) = res.diffs[0].findings
    assert f.urn.endswith("::log-relay") and f.path == "address"
    with pytest.raises(ClusterstackError, match="not 'cw-demo-h100'"):
        diff_flow.diff_state(ws, export, "cw-demo-h100")


@pytest.mark.parametrize("kw, message", [
    ({"names": ["cw-demo-h100"]}, "exactly one of --base REF or --state FILE"),
    ({"names": ["cw-demo-h100"], "base": "HEAD", "state": Path("x.json")}, "exactly one of"),
    ({"names": ["cw-demo-h100"], "all_": True, "base": "HEAD"}, "not both"),
    ({"names": [], "all_": True, "projects": ["buckets"], "base": "HEAD"}, "--project or --all"),
    ({"names": ["a", "b"], "state": Path("x.json")}, "a state file holds one stack"),
    ({"names": [], "base": "HEAD"}, "no cluster given"),
])
def test_diff_refuses_bad_combinations_before_any_work(workspace_copy, kw, message):
    with pytest.raises(ClusterstackError, match=message):
        diff_flow.diff(Workspace.load(workspace_copy), clients=fake_clients(), **kw)


def test_diff_against_a_git_ref(checkout):
    """The working tree against HEAD: one harmless edit, planned at REF by the child
    interpreter in a temporary worktree (removed afterwards); an unknown ref is a GitError."""
    edit(checkout.root / "clusters" / "cw-demo-h100.yaml", ("buffer_slices: 2 ", "buffer_slices: 3 "),
         ("max_slices: 2 ", "max_slices: 3 "))
    notes = []
    res = diff_flow.diff(checkout, clients=fake_clients(), names=[STACK], base="HEAD", warn=notes.append)
    assert res.base["kind"] == "git" and res.base["ref"] == "HEAD"
    assert res.base["commit"] == git(checkout.root, "rev-parse", "HEAD")
    (d,) = res.diffs
    assert res.findings == 0 and sorted(c.name for c in d.changed) == ["cwdemo-cpu-general", "training-cq"]  # the pool and its quota
    (pool,) = [c for c in d.changed if c.name == "cwdemo-cpu-general"]
    assert [(p.path, p.old, p.new) for p in pool.properties if not p.ignored] == [
        ("spec.maxNodes", 2, 3), ("spec.minNodes", 2, 3)]
    # a lab's repository (no src/clusterstack on either side) is always planned with the
    # installed package: nothing to note on every diff
    assert notes == []
    assert git(checkout.root, "worktree", "list").count("\n") == 0
    with pytest.raises(GitError, match="unknown git ref 'no-such-branch'"):
        diff_flow.diff(checkout, clients=fake_clients(), names=[STACK], base="no-such-branch")


# --- adopt-only addresses: a pinned IP is imported, never created -----------------------------

def _create_address(name: str, ip: str | None):
    """The step the engine previews for an address the stack's state lacks (a ``create`` under
    the StaticAddresses component, as Pulumi names it: clusterstack.validation.addresses)."""
    from clusterstack.pulumi.steps import Step
    from clusterstack.pulumi.tokens import ADDRESS, STATIC_ADDRESSES_COMPONENT
    from fakes.pulumi import urn

    inputs = {"name": name, "region": "us-central1", "addressType": "EXTERNAL", **({"address": ip} if ip else {})}
    return Step(op="create", urn=urn("gcp-demo", ADDRESS, name, STATIC_ADDRESSES_COMPONENT), type=ADDRESS,
                new_inputs=inputs)


def test_up_refuses_to_create_a_pinned_address_and_names_the_import(checkout):
    from helpers import line_of

    eng = FakeEngine({"gcp-demo": FakeStack(steps=(_create_address("log-relay", "34.16.10.21"),))})
    with pytest.raises(ConfigError) as exc:
        up_flow.up(checkout, "gcp-demo", clients=fake_clients(engine=eng), **Operator().kw())
    assert ops(eng) == ["preview"]   # nothing applied, nothing asked
    (p,) = exc.value.problems
    text = (checkout.root / "clusters" / "gcp-demo.yaml").read_text()
    assert (p.line, p.field) == (line_of(text, "address: 34.16.10.21"), "provisioning.gcp.addresses[1].address")
    assert p.message.startswith("address 'log-relay' pins 34.16.10.21, and the preview would create it: GCP "
                                "reserves a given external IP only for a project that already holds it")
    assert p.hint.startswith("adopt the reservation: `clusterstack import generate gcp-demo --only "
                             "gcp:compute/address:Address --output ~/clusterstack-imports/gcp-demo.json`, then "
                             "`clusterstack import apply gcp-demo --file ~/clusterstack-imports/gcp-demo.json`")
    # preview refuses it the same way; an adopted address (a `same` step) passes
    with pytest.raises(ConfigError, match="pins 34.16.10.21"):
        list(up_flow.preview(checkout, ["gcp-demo"], clients=fake_clients(engine=eng)))
    eng.stacks["gcp-demo"].steps = ()
    assert [sp.result.stack for sp in up_flow.preview(checkout, ["gcp-demo"], clients=fake_clients(engine=eng))] \
        == ["gcp-demo"]


def test_a_promoted_or_new_address_may_be_created(checkout):
    edit(checkout.root / "clusters" / "gcp-demo.yaml",
         ("        address: 34.16.10.21\n", "        address: 34.16.10.21\n        promote: true\n"),
         ("        address: 34.16.10.20\n", ""))
    eng = FakeEngine({"gcp-demo": FakeStack(steps=(_create_address("log-relay", "34.16.10.21"),
                                                   _create_address("controller-ingress", None)))})
    (sp,) = up_flow.preview(Workspace.load(checkout.root), ["gcp-demo"], clients=fake_clients(engine=eng))
    assert sp.verdict.ok
