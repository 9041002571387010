"""Capacity is guarded. A cut of a NodePool's nodes or racks (min, max,
target) or of any ClusterQueue's GPU quota (per flavor) is blocked (exit 3) in ``guard FILE``,
``preview``, ``up`` and ``ci preview``, naming the pool and the nodes and GPUs lost; growth passes;
every destructive verdict states the capacity it destroys; the policy is ``[guard.capacity]``.
(``diff --base`` / ``--state``: tests/cli/test_diff.py.)

Inputs are this project's engine fixtures (tests/fixtures/pulumi/README.md: Pulumi's formats,
this project's resources) changed only where the case says: the growth fixtures
``preview-update-in-place.json`` (``pulumi preview --json``: NodePool ``maxNodes`` 32 → 36,
queue quota 256 → 288) and ``events/preview-update.jsonl`` (engine events: ``maxNodes`` 16 → 24)
with their old and new states swapped — the same real-format ``update`` step, read backwards,
is the shrink. GPUs per node: ``gd-8xh100ib-i128`` has 8 (src/clusterstack/config/instances.py,
CoreWeave's instance pages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.errors import ClusterstackError
from clusterstack.guard import CapacityPolicy, GuardPolicy, check
from clusterstack.guard.capacity import measure
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE, NODEPOOL
from fakes.pulumi import FIXTURES, FakeCli

PULUMI = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"
STACK = "cw-demo-h100"
S = f"urn:pulumi:{STACK}::clusterstack::"
POOL = f"{S}clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
TEAM_Q = f"{S}clusterstack:coreweave:Kueue${KUEUE_CLUSTER_QUEUE}::team-a-cq"


def _swapped_preview() -> str:
    """preview-update-in-place.json read backwards: maxNodes 36 → 32, GPU quota 288 → 256."""
    doc = json.loads((PULUMI / "preview-update-in-place.json").read_text())
    for s in doc["steps"]:
        if s["op"] == "update":
            s["oldState"], s["newState"] = s["newState"], s["oldState"]
    return json.dumps(doc, indent=4)


def _swapped_events(tmp_path: Path) -> Path:
    """events/preview-update.jsonl with the h100 NodePool's step read backwards (24 → 16)."""
    out = []
    for line in (FIXTURES / "events/preview-update.jsonl").read_text().splitlines():
        e = json.loads(line)
        md = (e.get("resourcePreEvent") or e.get("resOutputsEvent") or {}).get("metadata")
        if md and md["urn"] == POOL:
            md["old"]["inputs"], md["new"]["inputs"] = md["new"]["inputs"], md["old"]["inputs"]
            md["old"]["outputs"], md["new"]["outputs"] = md["new"]["outputs"], md["old"]["outputs"]
        out.append(json.dumps(e) + "\n")
    p = tmp_path / "preview-shrink.jsonl"
    p.write_text("".join(out))
    return p


def _ws(tmp_path: Path, extra: str = "") -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "clusterstack.toml").write_text('[workspace]\nproject_name = "clusterstack"\n' + extra)
    return ws


def _guard(tmp_path, capsys, text: str, extra: str = "", name: str = "preview.json", *flags: str):
    ws = _ws(tmp_path, extra)
    f = tmp_path / name
    f.write_text(text)
    rc = main(["--root", str(ws), "guard", str(f), *flags])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    return rc, cap.out, cap.err


# --- guard FILE ------------------------------------------------------------------------------

def test_a_real_format_nodepool_shrink_update_is_blocked_naming_the_pool_and_the_gpus(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, _swapped_preview())
    assert rc == 3, err
    lines = out.splitlines()
    i = lines.index(next(ln for ln in lines if ln.startswith("BLOCKED shrink NodePool cwdemo-h100")))
    assert lines[i].startswith("BLOCKED shrink NodePool cwdemo-h100 — forced by spec.maxNodes: a capacity cut")
    assert lines[i + 1] == "  capacity: maxNodes 36 → 32: −4 nodes, −32 GPUs"
    assert "pulumi " not in lines[i + 2]            # what to do never sends to raw Pulumi
    # the queue's quota cut (flavor cwdemo-gpu) is its own violation
    assert any(ln.startswith("BLOCKED shrink ClusterQueue training-cq") for ln in lines)
    assert '  capacity: resourceGroups[*].flavors[name="cwdemo-gpu"].nvidia.com/gpu 288 → 256: −32 GPUs of quota' in lines
    assert lines[-1].startswith("guard: BLOCKED — 2 violation(s); 2 destructive change(s) (2 shrink)")


def test_the_same_update_growing_the_pool_passes(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, (PULUMI / "preview-update-in-place.json").read_text())
    assert rc == 0, err
    assert "BLOCKED" not in out and out.splitlines()[-1].startswith("guard: ok — 0 violation(s); 0 destructive")


def test_the_json_verdict_states_the_capacity_of_the_cut(tmp_path, capsys):
    rc, out, _ = _guard(tmp_path, capsys, _swapped_preview(), "", "preview.json", "--json")
    assert rc == 3
    doc = json.loads(out)
    pool = next(v for v in doc["violations"] if v["type"] == NODEPOOL)
    assert pool["op"] == "shrink" and pool["reasons"] == ["spec.maxNodes"]
    assert (pool["capacity"]["nodes_lost"], pool["capacity"]["gpus_lost"]) == (4, 32)
    assert pool["capacity"]["cuts"] == [{"path": "spec.maxNodes", "old": 36, "new": 32, "unit": "nodes"}]
    assert doc["counts"]["destructive_ops"] == {"shrink": 2}
    assert [c["name"] for c in doc["capacity"]] == ["training-cq", "cwdemo-h100"]   # by URN


def test_a_shrink_in_an_engine_event_log_is_blocked(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, _swapped_events(tmp_path).read_text(), "", "events.jsonl")
    assert rc == 3, err
    assert "  capacity: maxNodes 24 → 16: −8 nodes, −64 GPUs" in out.splitlines()


# --- [guard.capacity]: which kinds, thresholds, warn vs block ---------------------------------

def test_warn_lets_the_cut_pass_and_says_so(tmp_path, capsys):
    extra = ('[guard.capacity]\nblock = []\nwarn = ["kubernetes:compute.coreweave.com/v1alpha1:NodePool",'
             ' "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"]\n')
    rc, out, err = _guard(tmp_path, capsys, _swapped_preview(), extra)
    assert rc == 0, err
    assert any(ln.startswith("WARNING shrink NodePool cwdemo-h100") for ln in out.splitlines())
    assert "  capacity: maxNodes 36 → 32: −4 nodes, −32 GPUs" in out.splitlines()


@pytest.mark.parametrize("tolerate, rc", [(32, 0), (31, 3)])
def test_a_cut_within_the_tolerance_passes_and_one_beyond_it_is_blocked(tmp_path, capsys, tolerate, rc):
    extra = f"[guard.capacity]\ntolerate_nodes = 4\ntolerate_gpus = {tolerate}\n"
    got, out, err = _guard(tmp_path, capsys, _swapped_preview(), extra)
    assert got == rc, out + err


@pytest.mark.parametrize("table, field, needle", [
    ('block = ["kubernetes:core/v1:Namespace"]', "guard.capacity.block", "has no capacity the guard measures"),
    ('warn = ["kubernetes:compute.coreweave.com/v1alpha1:Nodepool"]', "guard.capacity.warn", "did you mean"),
    ("tolerate_gpus = -1", "guard.capacity.tolerate_gpus", "whole number"),
    ('tolerate_nodes = "4"', "guard.capacity.tolerate_nodes", "whole number"),
    ('warn = ["kubernetes:compute.coreweave.com/v1alpha1:NodePool"]', "guard.capacity.warn", "in both block and warn"),
    ("block_all = true", "guard.capacity.block_all", "unknown key"),
])
def test_a_bad_capacity_policy_is_refused_at_its_line_exit_2(tmp_path, capsys, table, field, needle):
    rc, out, err = _guard(tmp_path, capsys, _swapped_preview(), f"[guard.capacity]\n{table}\n")
    assert rc == 2 and out == ""
    assert f"error: clusterstack.toml:4: {field}: " in err and needle in err, err


# --- generic over ClusterQueue GPU quota: a team's queue, per flavor ---------------------------

def _queue(**flavors: int) -> dict:
    return {"spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": "64"},
                                  {"name": "nvidia.com/gpu", "nominalQuota": n}]}
        for f, n in flavors.items()]}]}}


def test_a_cut_of_any_team_queue_is_a_capacity_cut_per_flavor():
    # Kueue ClusterQueue: spec.resourceGroups[].flavors[].resources[].nominalQuota
    # (kueue-v0.14.4 kueue.x-k8s.io_clusterqueues.yaml); a raise of one flavor pays nothing back
    step = Step(op="update", urn=TEAM_Q, type=KUEUE_CLUSTER_QUEUE,
                old_inputs=_queue(h100=64, b200=32), new_inputs=_queue(h100=48, b200=64))
    [v] = check([step]).violations
    assert (v.op, v.urn, v.reasons) == ("shrink", TEAM_Q, ('spec.resourceGroups[*].flavors[name="h100"].nvidia.com/gpu',))
    assert v.capacity.gpus_lost == 16 and "GPU quota cut" in v.rule
    # growth of every flavor passes; a quantity given as a string counts the same
    grow = Step(op="update", urn=TEAM_Q, type=KUEUE_CLUSTER_QUEUE,
                old_inputs=_queue(h100="48"), new_inputs=_queue(h100=64))
    assert check([grow]).ok
    # deleting the team's queue takes all of its quota
    gone = Step(op="delete", urn=TEAM_Q, type=KUEUE_CLUSTER_QUEUE, old_inputs=_queue(h100=64, b200=32))
    [v] = check([gone]).violations
    assert (v.op, v.capacity.gpus_lost) == ("delete", 96)
    # the same at another API version of the kind (an alias moving the queue)
    v1 = KUEUE_CLUSTER_QUEUE.replace("/v1beta1:", "/v1beta2:")
    assert not check([Step(op="update", urn=TEAM_Q, type=v1, old_inputs=_queue(h100=64),
                           new_inputs=_queue(h100=32))]).ok


def test_racks_count_in_whole_nvl72_racks():
    # GB200 12 → 6 racks: 18 gb200-4x nodes a rack, 4 GPUs a node (config/instances.py)
    gb = {"instanceType": "gb200-4x", "targetRacks": 12}
    loss = measure("update", POOL, NODEPOOL, {"spec": gb}, {"spec": {**gb, "targetRacks": 6}})
    assert (loss.op, loss.nodes_lost, loss.gpus_lost) == ("shrink", 108, 432)
    assert measure("update", POOL, NODEPOOL, {"spec": gb}, {"spec": {**gb, "targetRacks": 13}}) is None


def test_every_destructive_verdict_states_the_capacity_it_destroys():
    h100 = {"instanceType": "gd-8xh100ib-i128", "autoscaling": True, "minNodes": 8, "maxNodes": 32}
    for op in ("replace", "delete"):
        [v] = check([Step(op=op, urn=POOL, type=NODEPOOL, old_inputs={"spec": h100},
                          new_inputs={"spec": h100} if op == "replace" else None)]).violations
        assert (v.op, v.capacity.nodes_lost, v.capacity.gpus_lost) == (op, 32, 256)
        assert v.lines()[1] == "  capacity: maxNodes 32 → 0, minNodes 8 → 0: −32 nodes, −256 GPUs"


def test_a_policy_without_capacity_rules_only_measures():
    quiet = GuardPolicy(capacity=CapacityPolicy(block=frozenset()))
    step = Step(op="update", urn=TEAM_Q, type=KUEUE_CLUSTER_QUEUE,
                old_inputs=_queue(h100=64), new_inputs=_queue(h100=32))
    v = check([step], quiet)
    assert v.ok and v.destructive == () and v.warnings == ()


def test_a_policy_read_at_another_ref_is_validated_by_the_same_model():
    with pytest.raises(ClusterstackError) as e:
        GuardPolicy.from_toml({"capacity": {"tolerate_gpus": -4}}, file=Path("main:clusterstack.toml"),
                              check_tokens=False)
    assert e.value.problems[0].field == "guard.capacity.tolerate_gpus"
    union = GuardPolicy().union(GuardPolicy.from_toml({"capacity": {"block": [], "tolerate_gpus": 8}}))
    assert union.capacity.action(NODEPOOL) == "block" and union.capacity.tolerate_gpus == 0
    weak = GuardPolicy.from_toml({"capacity": {"block": [NODEPOOL], "tolerate_gpus": 8}})
    assert weak.weakened_from(GuardPolicy()) == (
        f"capacity.block: {KUEUE_CLUSTER_QUEUE} removed", "capacity.tolerate_gpus: raised 0 → 8")


# --- preview, up, ci preview through the engine adapter (the fake CLI) ------------------------

@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


def test_preview_blocks_the_shrink_and_passes_the_growth(cli, workspace_copy, capsys, tmp_path):
    cli.scenario(preview={"events": str(_swapped_events(tmp_path))})
    assert main(["--root", str(workspace_copy), "preview", STACK]) == 3
    o = capsys.readouterr()
    assert "BLOCKED shrink NodePool cwdemo-h100" in o.out and "−64 GPUs" in o.out
    cli.scenario(preview={"events": "events/preview-update.jsonl"})
    assert main(["--root", str(workspace_copy), "preview", STACK]) == 0


def test_up_yes_blocks_the_shrink_before_anything_is_applied(cli, workspace_copy, capsys, tmp_path):
    cli.scenario(preview={"events": str(_swapped_events(tmp_path))})
    assert main(["--root", str(workspace_copy), "up", STACK, "--yes"]) == 3
    o = capsys.readouterr()
    assert "BLOCKED shrink NodePool cwdemo-h100" in o.out + o.err
    assert not any("up" in c["argv"][:2] for c in cli.calls())


def test_ci_preview_and_comment_carry_the_capacity_cut(cli, workspace_copy, tmp_path, capsys):
    cli.scenario(preview={"events": str(_swapped_events(tmp_path))})
    out = tmp_path / "previews"
    assert main(["--root", str(workspace_copy), "ci", "preview", STACK, "--out", str(out)]) == 3
    meta = json.loads((out / STACK / "meta.json").read_text())
    [v] = meta["guard"]["violations"]
    assert (v["op"], v["capacity"]["gpus_lost"]) == ("shrink", 64)
    capsys.readouterr()
    assert main(["ci", "comment", str(out)]) == 0
    comment = capsys.readouterr().out
    assert "BLOCKED shrink NodePool cwdemo-h100" in comment and "−64 GPUs" in comment
