"""Capacity from the plans: nodes, racks and GPUs per pool, GPU quota per queue, and a change
in words — the numbers come from the declared NodePools and ClusterQueue, checked against the
reviewed configs they are derived from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import copy_workspace, edit, git, commit_all
from clusterstack.cli import main
from clusterstack.inventory import capacity_change, capacity_changes, fleet, inventory
from clusterstack.plan.diff import load_state_file
from clusterstack.flows.plan import plan
from clusterstack.workspace import Workspace


@pytest.fixture(scope="module")
def h100_halved(tmp_path_factory):
    """The plan of cw-demo-h100 with its pinned h100 pool edited from 32 to 16 nodes (planned
    once for the tests of this module that only read it)."""
    root = copy_workspace(tmp_path_factory.mktemp("halved") / "ws")
    edit(root / "clusters" / "cw-demo-h100.yaml", ("max_slices: 32", "max_slices: 16"),
         ("buffer_slices: 32 ", "buffer_slices: 16 "))   # a pinned pool: both ends
    (after,) = plan(Workspace.load(root), ["cw-demo-h100"])
    return after


def test_pools_and_queues_of_the_shipped_clusters(example_plans):
    h100, gb200 = example_plans["cw-demo-h100"], example_plans["cw-demo-gb200"]
    inv = inventory(h100)
    pools = {p.pool: p for p in inv.pools}
    # clusters/cw-demo-h100.yaml: h100 pinned at 32 nodes, device_count 8; cpu-general pinned at 2
    assert (pools["h100"].min_nodes, pools["h100"].max_nodes, pools["h100"].gpus_per_node,
            pools["h100"].gpus, pools["h100"].racks) == (32, 32, 8, 256, None)
    assert (pools["cpu-general"].max_nodes, pools["cpu-general"].gpus) == (2, 0)
    assert [(q.queue, q.gpus) for q in inv.queues] == [("training-cq", 256)]
    # clusters/cw-demo-gb200.yaml: 12 racks of 18 gb200-4x nodes, 4 GPUs each
    gb = next(p for p in inventory(gb200).pools if p.pool == "gb200")
    assert (gb.racks, gb.max_nodes, gb.gpus_per_node, gb.gpus) == (12, 216, 4, 864)
    assert fleet([h100, gb200]).to_json()["total_gpus"] == 256 + 864


def test_a_gcp_stack_has_no_capacity(example_plans):
    p = example_plans["gcp-demo"]
    assert inventory(p).pools == () and capacity_changes(p, p) == []


def test_capacity_change_in_words(example_plans, h100_halved):
    before, after = example_plans["cw-demo-h100"], h100_halved
    # the monthly cost: nodes × $49.24 (gd-8xh100ib-i128's list price, config/prices.py) × 730 h;
    # the CPU pool's cd-gp-i64-erapids has no list price and is left out
    full, half = round(MONTHLY_H100 * 32, 2), round(MONTHLY_H100 * 16, 2)
    assert (full, half) == (1150246.40, 575123.20)
    assert capacity_changes(before, after) == [
        "cw-demo-h100: pool h100 32 → 16 nodes (warm 32 → 16), −128 GPUs; GPU quota 256 → 128",
        "cw-demo-h100: monthly cost $1,150,246.40 → $575,123.20 (−$575,123.20)"]
    assert capacity_changes(after, before) == [
        "cw-demo-h100: pool h100 16 → 32 nodes (warm 16 → 32), +128 GPUs; GPU quota 128 → 256",
        "cw-demo-h100: monthly cost $575,123.20 → $1,150,246.40 (+$575,123.20)"]
    assert capacity_changes(None, after) == [
        "cw-demo-h100: pool cpu-general new: 2 nodes, 0 GPUs; pool h100 new: 16 nodes, 128 GPUs; "
        "GPU quota 0 → 128", "cw-demo-h100: monthly cost $0.00 → $575,123.20 (+$575,123.20)"]
    assert capacity_changes(after, after) == []


STATE = Path(__file__).resolve().parent / "fixtures" / "state"
#: One gd-8xh100ib-i128 node for a month at its list price: $49.24 × 730 h (config/prices.py).
MONTHLY_H100 = round(49.24 * 730, 2)


def _checkpoint(tmp_path, **nodepool_spec) -> Path:
    """The cw-demo-h100 checkpoint fixture with its h100 NodePool's recorded spec edited."""
    doc = json.loads((STATE / "cw-demo-h100.checkpoint.json").read_text())
    (pool,) = [r for r in doc["checkpoint"]["latest"]["resources"]
               if r["urn"].endswith("NodePool::cwdemo-h100")]
    for side in ("inputs", "outputs"):
        pool[side]["spec"].update(nodepool_spec)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_state_under_another_flavor_layout_reads_gpus_per_node_from_the_instance_type(
        example_plans, h100_halved, tmp_path):
    # the checkpoint's ClusterQueue has one flavor cwdemo-gpu (256 GPUs), no cwdemo-h100-flavor:
    # the pool's GPUs per node come from the instance-type table (gd-8xh100ib-i128: 8)
    state = load_state_file(STATE / "cw-demo-h100.checkpoint.json")
    pools = {p.pool: p for p in inventory(state).pools}
    assert (pools["h100"].gpus_per_node, pools["h100"].gpus) == (8, 256)
    head = example_plans["cw-demo-h100"]
    # the same instance type on both sides: the plan's 8 GPUs per node hold for the state too —
    # no GPU is gained or lost (the state predates the pinned pools: the envelopes differ)
    assert capacity_changes(state, head) == [
        "cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 32 → 32 nodes (warm 4 → 32)",
        # an autoscaled pool costs a range: warm nodes (4) to max nodes (32)
        "cw-demo-h100: monthly cost $143,780.80–$1,150,246.40 → $1,150,246.40 (warm +$1,006,465.60, max $0.00)"]
    assert capacity_change(head, state).to_json()["gpus_delta"] == 0
    assert capacity_changes(state, h100_halved)[0] == (
        "cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 32 → 16 nodes (warm 4 → 16), −128 GPUs; "
        "GPU quota 256 → 128")
    pool = next(p for p in capacity_change(h100_halved, state).pools if p.pool == "h100")
    assert pool.before.gpus_per_node == pool.after.gpus_per_node == 8
    assert pool.to_json()["gpus_delta"] == 128
    # another instance type on the state side: its GPUs per node are unknown, not 0
    other = load_state_file(_checkpoint(tmp_path, instanceType="gd-4xl40-i64", maxNodes=16, minNodes=32,
                                        targetNodes=32))
    change = capacity_change(other, head)
    # another instance type is a replace: every node of the old pool destroyed, then the new
    assert change.words() == ("cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 replaced "
                              "(gd-4xl40-i64 → gd-8xh100ib-i128): 16 nodes destroyed, 32 new")
    # a type without a price on one side: no delta is claimed
    assert change.cost_words() == "cw-demo-h100: monthly cost unpriced → $1,150,246.40"
    assert change.to_json()["monthly_cost"] is None
    h100 = next(p for p in change.pools if p.pool == "h100")
    assert h100.to_json()["gpus_delta"] is None and change.to_json()["gpus_delta"] == 0


def test_a_pool_without_autoscaling_has_its_target_nodes(example_plans, tmp_path):
    # CoreWeave "Node Pool reference" (tests/schemas/nodepools.compute.coreweave.com.crd.yaml):
    # autoscaling defaults to false, and such a pool has targetNodes nodes; a state of a pool
    # adopted as it was deployed records that shape, the plan always autoscales (4–32)
    path = _checkpoint(tmp_path, autoscaling=False, targetNodes=32)
    doc = json.loads(path.read_text())
    (pool,) = [r for r in doc["checkpoint"]["latest"]["resources"]
               if r["urn"].endswith("NodePool::cwdemo-h100")]
    for side in ("inputs", "outputs"):
        del pool[side]["spec"]["minNodes"], pool[side]["spec"]["maxNodes"]
    path.write_text(json.dumps(doc))
    state = load_state_file(path)
    pools = {p.pool: p for p in inventory(state).pools}
    assert (pools["h100"].min_nodes, pools["h100"].max_nodes) == (32, 32)
    # the plan pins the pool at 32 (Kueue's TAS places pods only on existing nodes): the same nodes; only the state's CPU pool differs
    assert capacity_changes(state, example_plans["cw-demo-h100"]) == [
        "cw-demo-h100: pool cpu-general 4 → 2 nodes",
        "cw-demo-h100: monthly cost $1,150,246.40 → $1,150,246.40 ($0.00)"]
    fixed = load_state_file(_checkpoint(tmp_path, autoscaling=False, targetNodes=16))
    assert capacity_changes(fixed, example_plans["cw-demo-h100"])[0] == \
        "cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 16 → 32 nodes (warm 16 → 32), +128 GPUs"


def test_inventory_command_json_table_markdown(repo_root, capsys):
    assert main(["--root", str(repo_root), "inventory", "cw-demo-h100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total_gpus"] == 256 and [p["pool"] for p in doc["pools"]] == ["cpu-general", "h100"]
    assert main(["--root", str(repo_root), "inventory", "cw-demo-h100", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| cw-demo-h100 | h100 | `gd-8xh100ib-i128` | 32–32 |  | 8 | 256 |" in md
    assert main(["--root", str(repo_root), "inventory", "cw-demo-h100"]) == 0
    assert "256 GPUs in 2 pool(s)" in capsys.readouterr().out


def test_diff_says_the_capacity_change(workspace_copy, capsys):
    git(workspace_copy, "init", "-q", "-b", "main")
    commit_all(workspace_copy, "base")
    cfg = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    edit(cfg, ("max_slices: 32", "max_slices: 16"), ("buffer_slices: 32 ", "buffer_slices: 16 "))
    main(["--root", str(workspace_copy), "diff", "cw-demo-h100", "--base", "main"])
    out = capsys.readouterr().out
    words = "cw-demo-h100: pool h100 32 → 16 nodes (warm 32 → 16), −128 GPUs; GPU quota 256 → 128"
    assert f"capacity {words}" in out
    # --json: the same facts, as numbers, and the same words; the cut is blocked (exit 3)
    assert main(["--root", str(workspace_copy), "diff", "cw-demo-h100", "--base", "main", "--json"]) == 3
    (cap,) = json.loads(capsys.readouterr().out)["capacity"]
    assert cap["words"] == words
    (pool,) = cap["pools"]
    assert (pool["pool"], pool["before"]["nodes"], pool["after"]["nodes"], pool["gpus_delta"]) == \
        ("h100", 32, 16, -128)
    assert pool["after"]["gpus_per_node"] == 8 and cap["gpus_delta"] == -128
    assert cap["queues"] == [{"queue": "training-cq", "team": None, "before_gpus": 256, "after_gpus": 128,
                              "gpus_delta": -128, "monthly_before": 1150246.4, "monthly_after": 575123.2}]
    assert cap["monthly_cost"]["delta_max"] == -575123.2 and cap["lines"][1].endswith("(−$575,123.20)")
    edit(cfg, ("max_slices: 16", "max_slices: 32"), ("buffer_slices: 16 ", "buffer_slices: 32 "))
    assert main(["--root", str(workspace_copy), "diff", "cw-demo-h100", "--base", "main", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"] == []


def test_the_pr_comment_says_the_capacity_change_from_the_preview_steps(example_plans, h100_halved):
    from clusterstack.ci.comment import StackReport, render_comment
    from clusterstack.inventory import capacity_from_steps
    from clusterstack.pulumi.steps import Step
    from clusterstack.pulumi.tokens import NODEPOOL, KUEUE_CLUSTER_QUEUE

    before, after = example_plans["cw-demo-h100"], h100_halved
    old = {r.urn: r for r in before.resources}
    # the update steps a preview of this change reports (old and new inputs of each resource)
    steps = [Step(op="update" if old[r.urn].inputs != r.inputs else "same", urn=r.urn, type=r.type,
                  old_inputs=old[r.urn].inputs, new_inputs=r.inputs)
             for r in after.resources if r.type in (NODEPOOL, KUEUE_CLUSTER_QUEUE)]
    lines = capacity_from_steps("cw-demo-h100", steps)
    assert lines == ["cw-demo-h100: pool h100 32 → 16 nodes (warm 32 → 16), −128 GPUs; GPU quota 256 → 128",
                     "cw-demo-h100: monthly cost $1,150,246.40 → $575,123.20 (−$575,123.20)"]
    assert capacity_from_steps("cw-demo-h100", [Step(op="same", urn=s.urn, type=s.type) for s in steps]) == []
    body = render_comment([StackReport(stack="cw-demo-h100", severity="change", counts={"update": 2},
                                       guard={"ok": True}, capacity=tuple(lines))])
    assert f"**Capacity:**\n- {lines[0]}\n" in body.body


def test_the_one_queue_of_a_cluster_costs_the_whole_priced_fleet(coreweave_stacks):
    """Whatever the flavor layout — one flavor per pool, or Marin's shared cw-cpu / cw-ib
    (examples/marin, when ../shared/reference/marin is present) — a cluster's one ClusterQueue
    costs what its priced pools cost; several queues (cw-demo-teams) add up to it."""
    for name, (plan, _cfg, _conv) in sorted(coreweave_stacks.items()):
        inv = inventory(plan)
        lo, hi = inv.monthly
        assert hi > 0, name                         # every shipped GPU pool has a list price
        assert round(sum(q.monthly_max or 0 for q in inv.queues), 2) == hi, name
        assert round(sum(q.monthly_min or 0 for q in inv.queues), 2) == lo, name
