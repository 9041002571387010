"""Teams sharing a cluster: the shipped two-team example admits each team's job within
its quota, lets it borrow only within the limits and refuses it beyond them (the Kueue 0.14.4
oracle, tests/oracles/kueue.py Q4d: cohorts, borrowingLimit, lendingLimit); ``validate``
refuses what Kueue or the fleet cannot honour, each at ``file:line`` with exit 2; the review
(``inventory``, ``diff``, the PR comment, the guard) says GPUs and dollars per team.

The example (clusters/cw-demo-teams.yaml): 32 gd-8xh100ib-i128 nodes = 256 GPUs; team-a 192
(borrowing limit 64), team-b 64 (borrowing limit 64, lending limit 32), training-cq the rest (0).
So team-b lends at most 32 GPUs and the cohort's lendable GPUs are 192 + 32 + 0 = 224.
"""

from __future__ import annotations

import json

import pytest

from helpers import commit_all, edit, git, line_of
from oracles.coreweave import delivered_nodes, shapes_from_config
from oracles.kueue import Objects, PodSet, admit, quota_room

from clusterstack.cli import main

STACK = "cw-demo-teams"
H100 = "cwteams-h100-flavor"
GPU = "nvidia.com/gpu"
# one 8-GPU pod per node (cw-demo-h100's workload shape, test_admission.workloads)
POD = {"cpu": 16, "memory": "64Gi", "ephemeral-storage": "100Gi", GPU: 8, "rdma/ib": 1}
#: One gd-8xh100ib-i128 node for a month: CoreWeave's list price $49.24 × 730 h (config/prices.py).
NODE_MONTH = 49.24 * 730


@pytest.fixture(scope="module")
def teams(coreweave_stacks):
    plan, cfg, _ = coreweave_stacks[STACK]
    return Objects.from_plan(plan), delivered_nodes(plan, shapes_from_config(cfg))


def job(nodes: int) -> PodSet:
    return PodSet(nodes, POD)


def test_each_team_is_admitted_within_its_quota_without_borrowing(teams):
    objects, nodes = teams
    a = admit(objects, nodes, "team-a", "team-a", job(24))          # 192 GPUs: team-a's quota
    b = admit(objects, nodes, "team-b", "team-b", job(8))           # 64 GPUs: team-b's quota
    b_eval = admit(objects, nodes, "team-b-eval", "team-b", job(1))  # a team's second namespace
    assert (a.admitted, a.borrows, a.flavor) == (True, False, H100), a.reason
    assert (b.admitted, b.borrows) == (True, False), b.reason
    assert b_eval.admitted, b_eval.reason


def test_a_team_borrows_only_within_the_limits_and_is_refused_beyond(teams):
    objects, nodes = teams
    # team-a may borrow 64 (its borrowingLimit) but team-b lends only 32 (its lendingLimit)
    assert quota_room(objects, "team-a", H100, GPU)[1:] == (224, 224)
    ok = admit(objects, nodes, "team-a", "team-a", job(28))         # 224 GPUs: 32 borrowed
    assert ok.admitted and ok.borrows, ok.reason
    beyond = admit(objects, nodes, "team-a", "team-a", job(29))     # 232 GPUs
    assert not beyond.admitted
    # (the CPU flavor, tried first, cannot hold GPU pods either: 0 GPUs)
    assert f"insufficient quota for {GPU} in flavor {H100}, 232 > maximum capacity (224)" in beyond.reason
    # team-b: 64 + its borrowingLimit 64 = 128, although team-a's idle 192 could lend more
    assert quota_room(objects, "team-b", H100, GPU)[2] == 128
    assert admit(objects, nodes, "team-b", "team-b", job(16)).borrows
    refused = admit(objects, nodes, "team-b", "team-b", job(17))    # 136 GPUs: beyond its borrowing limit
    assert not refused.admitted
    assert f"insufficient quota for {GPU} in flavor {H100}, 136 > maximum capacity (128)" in refused.reason


def test_borrowed_gpus_are_only_what_the_others_leave_unused(teams):
    objects, nodes = teams
    busy = {"team-a": {(H100, GPU): 192.0}}    # team-a runs on all of its quota
    # team-b: its own 64, plus what the cohort has unused (team-b's own 32 lent out)
    assert quota_room(objects, "team-b", H100, GPU, busy)[1] == 64
    assert admit(objects, nodes, "team-b", "team-b", job(8), busy).admitted
    wait = admit(objects, nodes, "team-b", "team-b", job(9), busy)
    assert not wait.admitted and f"insufficient unused quota for {GPU} in flavor {H100}, 8 more needed" in wait.reason
    # the cluster's own queue has 0 GPUs of its own: it runs only on what the teams leave idle
    assert admit(objects, nodes, "training", "training-cq", job(2)).borrows
    assert not admit(objects, nodes, "training", "training-cq", job(2),
                     {"team-a": {(H100, GPU): 192.0}, "team-b": {(H100, GPU): 64.0}}).admitted


def test_a_team_queue_admits_only_its_own_namespaces(teams):
    objects, nodes = teams
    assert admit(objects, nodes, "team-a", "team-b", job(1)).reason == "LocalQueue team-a/team-b doesn't exist"
    assert admit(objects, nodes, "training", "team-a", job(1)).reason == "LocalQueue training/team-a doesn't exist"


def test_the_queues_and_the_fair_sharing_configuration(example_plans):
    plan = example_plans[STACK]
    cqs = {r.name: r.inputs for r in plan.resources if r.inputs.get("kind") == "ClusterQueue"}
    assert sorted(cqs) == ["team-a", "team-b", "training-cq"]
    assert {n: q["spec"]["cohort"] for n, q in cqs.items()} == dict.fromkeys(cqs, "demo-teams")
    assert cqs["team-a"]["metadata"]["labels"] == {"cwteams/team": "team-a"}
    assert cqs["team-b"]["spec"]["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-b", "team-b-eval"]}]}
    assert cqs["team-a"]["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    assert cqs["team-a"]["spec"]["fairSharing"] == {"weight": "1"}
    kueue = next(r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "kueue")
    config = json.loads(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["fairSharing"] == {"enable": True, "preemptionStrategies": [
        "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == [
        "training", "team-a", "team-b", "team-b-eval"]
    namespaces = sorted(r.name for r in plan.resources if r.type == "kubernetes:core/v1:Namespace")
    assert namespaces == ["team-a", "team-b", "team-b-eval", "training"]


def test_a_cluster_without_teams_keeps_its_one_queue(example_plans):
    plan = example_plans["cw-demo-h100"]
    (cq,) = [r.inputs for r in plan.resources if r.inputs.get("kind") == "ClusterQueue"]
    assert "cohort" not in cq["spec"] and "fairSharing" not in cq["spec"] and "labels" not in cq["metadata"]
    kueue = next(r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "kueue")
    assert "fairSharing" not in kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]


# --- validate: what Kueue or the fleet cannot honour ----------------------------------------

REFUSALS = [
    ("quota above the fleet", ("h100: {gpu: 64}\n            cpu-general: {cpu: 64}\n          borrowing_limit: {h100: {gpu: 64}}\n          lending",
                               "h100: {gpu: 72}\n            cpu-general: {cpu: 64}\n          borrowing_limit: {h100: {gpu: 64}}\n          lending"),
     "h100: {gpu: 72}", "members[1].quota.h100.gpu",
     "the teams' nvidia.com/gpu quota in cwteams-h100-flavor adds up to 264 (team team-b 72), more than the fleet's 256"),
    ("a system namespace", ("namespaces: [team-a]", "namespaces: [kube-system]"), "namespaces: [kube-system]",
     "members[0].namespaces[0]", "'kube-system' is a Kubernetes system namespace"),
    ("another team's namespace", ("namespaces: [team-b, team-b-eval]", "namespaces: [team-b, team-a]"),
     "namespaces: [team-b, team-a]", "members[1].namespaces[1]", "'team-a' is already team team-a's namespace"),
    ("the cluster's own namespace", ("namespaces: [team-a]", "namespaces: [training]"), "namespaces: [training]",
     "members[0].namespaces[0]", "'training' is the cluster's own workload namespace"),
    ("a flavor the cluster lacks", ("of the pool's\n            cpu-general: {cpu: 64}",
                                    "of the pool's\n            cpu-generic: {cpu: 64}"), "cpu-generic: {cpu: 64}",
     "members[0].quota.cpu-generic", "'cpu-generic' is neither a scale group with a NodePool nor a Kueue flavor of this cluster"),
    ("a lending limit above the quota", ("lending_limit: {h100: {gpu: 32}}", "lending_limit: {h100: {gpu: 96}}"),
     "lending_limit: {h100: {gpu: 96}}", "members[1].lending_limit.h100.gpu",
     "lending limit 96 exceeds the team's nominal gpu quota 64"),
    ("more committed nodes than the reservation", ("committed_nodes: 32}", "committed_nodes: 24}"),
     "buffer_slices: 32                # the reserved", "scale_groups.h100.buffer_slices",
     "NodePool cwteams-h100 commits 32 nodes, more than the 24 of reservation cw-res-demo-0001"),
]


@pytest.mark.parametrize("case,replacement,line_text,field,message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_validate_refuses_at_the_line(workspace_copy, capsys, case, replacement, line_text, field, message):
    path = workspace_copy / "clusters" / f"{STACK}.yaml"
    text = edit(path, replacement)
    assert main(["--root", str(workspace_copy), "validate", STACK]) == 2
    err = capsys.readouterr().err
    where = f"{path.name}:{line_of(text, line_text)}:"
    assert where in err and field in err and message in err, err
    assert "Traceback" not in err


def test_over_commit_is_accepted_when_declared(workspace_copy, capsys):
    path = workspace_copy / "clusters" / f"{STACK}.yaml"
    edit(path, ("            h100: {gpu: 64}\n", "            h100: {gpu: 128}\n"),
         ("overcommit: false", "overcommit: true"))
    assert main(["--root", str(workspace_copy), "validate", STACK]) == 0, capsys.readouterr().err


# --- review: inventory, diff, the PR comment --------------------------------------------------

def test_inventory_json_has_per_team_gpus_cost_and_reservation_terms(repo_root, capsys):
    assert main(["--root", str(repo_root), "inventory", STACK, "--json", "--today", "2027-03-10"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    teams = {t["team"]: t for t in doc["teams"]}
    assert {t: (v["gpus"], v["monthly_max"]) for t, v in teams.items()} == {
        "team-a": (192, round(24 * NODE_MONTH, 2)), "team-b": (64, round(8 * NODE_MONTH, 2))}
    assert doc["monthly_cost"]["max"] == round(32 * NODE_MONTH, 2) == 1150246.40
    assert doc["monthly_cost"]["unpriced_pools"] == [f"{STACK}/cpu-general"]
    (res,) = doc["reservations"]
    assert (res["pool"], res["id"], res["ends"], res["committed_nodes"], res["days_left"]) == \
        ("h100", "cw-res-demo-0001", "2027-03-31", 32, 21)
    assert "within" not in res["warning"] and "ends on 2027-03-31, in 21 days" in res["warning"]
    assert "warning: cw-demo-teams/h100: reservation cw-res-demo-0001 ends on 2027-03-31" in cap.err
    assert main(["--root", str(repo_root), "inventory", STACK, "--json", "--today", "2027-01-01"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["reservations"][0]["warning"] == "" and "warning" not in cap.err


def _move_64(workspace_copy):
    """Commit the example, then move 64 GPUs from team-a to team-b (uncommitted)."""
    git(workspace_copy, "init", "-q", "-b", "main")
    commit_all(workspace_copy, "base")
    edit(workspace_copy / "clusters" / f"{STACK}.yaml",
         ("h100: {gpu: 192}", "h100: {gpu: 128}"), ("            h100: {gpu: 64}\n", "            h100: {gpu: 128}\n"))


def test_moving_64_gpus_shows_per_team_deltas_and_the_cost_delta_in_diff(workspace_copy, capsys):
    _move_64(workspace_copy)
    main(["--root", str(workspace_copy), "diff", STACK, "--base", "main"])   # exit 3: the next test
    out = capsys.readouterr().out
    a, b = round(24 * NODE_MONTH, 2), round(16 * NODE_MONTH, 2)
    assert (a, b) == (862684.80, 575123.20)
    assert ("capacity cw-demo-teams: team-a 192 → 128 GPUs, −64 ($862,684.80 → $575,123.20 a month, "
            "−$287,561.60)") in out
    assert "capacity cw-demo-teams: team-b 64 → 128 GPUs, +64 ($287,561.60 → $575,123.20 a month, +$287,561.60)" in out
    assert "capacity cw-demo-teams: monthly cost $1,150,246.40 → $1,150,246.40 ($0.00)" in out
    main(["--root", str(workspace_copy), "diff", STACK, "--base", "main", "--json"])
    (cap,) = json.loads(capsys.readouterr().out)["capacity"]
    assert [(q["team"], q["gpus_delta"]) for q in cap["queues"]] == [("team-a", -64), ("team-b", 64)]
    assert cap["monthly_cost"]["delta_max"] == 0


def test_the_pr_comment_shows_the_team_lines_from_the_preview_steps(example_plans, workspace_copy):
    from clusterstack.ci.comment import StackReport, render_comment
    from clusterstack.inventory import capacity_from_steps
    from clusterstack.plan import plan_stack
    from clusterstack.pulumi.steps import Step
    from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE, NODEPOOL

    before = example_plans[STACK]
    edit(workspace_copy / "clusters" / f"{STACK}.yaml",
         ("h100: {gpu: 192}", "h100: {gpu: 128}"), ("            h100: {gpu: 64}\n", "            h100: {gpu: 128}\n"))
    after = plan_stack(workspace_copy / "infra", STACK)
    old = {r.urn: r for r in before.resources}
    steps = [Step(op="update" if old[r.urn].inputs != r.inputs else "same", urn=r.urn, type=r.type,
                  old_inputs=old[r.urn].inputs, new_inputs=r.inputs)
             for r in after.resources if r.type in (NODEPOOL, KUEUE_CLUSTER_QUEUE)]
    lines = capacity_from_steps(STACK, steps)
    assert lines[0].startswith("cw-demo-teams: team-a 192 → 128 GPUs, −64")
    assert lines[1].startswith("cw-demo-teams: team-b 64 → 128 GPUs, +64")
    body = render_comment([StackReport(stack=STACK, severity="change", counts={"update": 2},
                                       guard={"ok": True}, capacity=tuple(lines))]).body
    assert "**Capacity:**\n- cw-demo-teams: team-a 192 → 128 GPUs, −64" in body


def test_a_team_quota_cut_without_intent_is_blocked(workspace_copy, capsys):
    """A cut of a team's GPU quota is a capacity cut: without reviewed intent the guard blocks
    it like a shrink (exit 3; the capacity rule of [guard.capacity], which measures every
    ClusterQueue's GPU quota, a team's included); declared intent — a reviewed change of the
    policy, ``[guard.capacity] warn`` for ClusterQueues — lets the move pass with a warning."""
    _move_64(workspace_copy)
    assert main(["--root", str(workspace_copy), "diff", STACK, "--base", "main"]) == 3
    out = capsys.readouterr().out
    assert "DESTRUCTIVE shrink ClusterQueue team-a:" in out and "−64 GPUs of quota" in out
    assert "ClusterQueue team-b" not in out.split("capacity cw-demo-teams")[0].split("DESTRUCTIVE", 1)[1]
    git(workspace_copy, "checkout", "--", f"clusters/{STACK}.yaml")
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + '\n[guard.capacity]\nblock = ["kubernetes:compute.coreweave.com/v1alpha1:NodePool"]\n'
                    'warn = ["kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"]\n')
    commit_all(workspace_copy, "the lab decides: team quota moves are reviewed, not blocked")
    edit(workspace_copy / "clusters" / f"{STACK}.yaml", ("h100: {gpu: 192}", "h100: {gpu: 128}"),
         ("            h100: {gpu: 64}\n", "            h100: {gpu: 128}\n"))
    assert main(["--root", str(workspace_copy), "diff", STACK, "--base", "main"]) == 0, capsys.readouterr().out


def test_the_labs_rates_override_the_list_prices(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + '\n[cost]\nrates_as_of = "2026-11-01"\n[cost.hourly]\n'
                    '"gd-8xh100ib-i128" = 31.5\n"cd-gp-i64-erapids" = 2.2\n')
    assert main(["--root", str(workspace_copy), "inventory", STACK, "--json", "--today", "2027-01-01"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pools = {p["pool"]: p for p in doc["pools"]}
    assert pools["h100"]["monthly_max"] == round(32 * 31.5 * 730, 2) == 735840.0
    assert pools["cpu-general"]["monthly_max"] == round(2 * 2.2 * 730, 2) == 3212.0
    assert pools["h100"]["rate_source"] == "clusterstack.toml [cost.hourly] as of 2026-11-01"
    assert doc["monthly_cost"]["unpriced_pools"] == [] and doc["monthly_cost"]["lab_rates"] == [
        "cd-gp-i64-erapids", "gd-8xh100ib-i128"]
    # each team pays its share of both pools: team-a 192/256 of the GPUs, 64/128 of the CPUs
    team_a = next(t for t in doc["teams"] if t["team"] == "team-a")
    assert team_a["monthly_max"] == round(735840.0 * 192 / 256 + 3212.0 * 64 / 128, 2)


def test_a_bad_cost_table_is_an_error_at_its_line(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    text = toml.read_text() + '\n[cost.hourly]\n"gd-8xh100ib-i128" = -3\n'
    toml.write_text(text)
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"clusterstack.toml:{line_of(text, '= -3')}:" in err and "cost.hourly" in err, err
