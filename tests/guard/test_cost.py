"""[guard.cost]: the guard warns / blocks a change that raises the fleet's monthly cost above a
limit, priced like diff and the PR comment (clusterstack.inventory.capacity_change, the list
prices of clusterstack.config.prices or the lab's [cost.hourly])."""

from __future__ import annotations

import pytest

from clusterstack.config.prices import PriceTable
from clusterstack.errors import ClusterstackError
from clusterstack.guard import GuardPolicy, check
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import NODEPOOL
from clusterstack.pulumi.urn import new_urn

URN = new_urn("lab", "clusterstack", "", NODEPOOL, "cwdemo-h100")


def pool(nodes: int, instance: str = "gd-8xh100ib-i128") -> dict:
    return {"metadata": {"name": "cwdemo-h100"},
            "spec": {"instanceType": instance, "autoscaling": True, "minNodes": nodes, "maxNodes": nodes,
                     "targetNodes": nodes, "nodeLabels": {"cwdemo/scale-group": "h100"}}}


def grow(a: int, b: int) -> list[Step]:
    return [Step(op="update", urn=URN, type=NODEPOOL, old_inputs=pool(a), new_inputs=pool(b))]


# 8 more gd-8xh100ib-i128 nodes: 8 × $49.24 × 730 h = $287,561.60 a month
RISE = round(8 * 49.24 * 730, 2)


def test_a_rise_above_the_block_limit_is_a_violation_on_the_pool():
    policy = GuardPolicy.from_toml({"cost": {"block_monthly_increase": 200_000}})
    v = check(grow(32, 40), policy)
    assert not v.ok
    (violation,) = v.violations
    assert violation.urn == URN and "rises by $287,561.60, above [guard.cost] block_monthly_increase $200,000.00" \
        in violation.rule
    assert check(grow(32, 36), policy).ok           # $143,780.80: under the limit
    # a cut saves money: never a cost violation (the capacity rule, [guard.capacity], judges cuts)
    assert not [v for v in check(grow(40, 32), policy).violations if "[guard.cost]" in v.rule]


def test_a_rise_above_the_warn_limit_is_a_warning_only():
    v = check(grow(32, 40), GuardPolicy.from_toml({"cost": {"warn_monthly_increase": RISE - 1}}))
    assert v.ok and [(w.urn, w.rule) for w in v.warnings] == [
        (URN, f"the fleet's monthly cost rises by $287,561.60, above [guard.cost] warn_monthly_increase ${RISE - 1:,.2f}")]
    assert check(grow(32, 40), GuardPolicy.from_toml({"cost": {"warn_monthly_increase": RISE}})).warnings == ()
    assert check(grow(32, 40)).warnings == ()       # no [guard.cost]: no cost rule


def test_the_labs_rate_prices_the_rise():
    lab = PriceTable(lab={"gd-8xh100ib-i128": 20.0})  # 8 × $20 × 730 = $116,800
    policy = GuardPolicy.from_toml({"cost": {"block_monthly_increase": 200_000}}).with_prices(lab)
    assert check(grow(32, 40), policy).ok
    assert not check(grow(32, 50), policy).ok       # 18 × $20 × 730 = $262,800


@pytest.mark.parametrize("section,field", [({"cost": {"block_monthly_increase": -1}}, "guard.cost.block_monthly_increase"),
                                           ({"cost": {"warn": 1}}, "guard.cost.warn"),
                                           ({"cost": 5}, "guard.cost")])
def test_a_bad_cost_section_is_refused(section, field):
    with pytest.raises(ClusterstackError) as exc:
        GuardPolicy.from_toml(section)
    assert field in str(exc.value.problems[0].field)


def test_raising_a_limit_weakens_the_policy():
    base = GuardPolicy.from_toml({"cost": {"block_monthly_increase": 100}})
    head = GuardPolicy.from_toml({"cost": {"block_monthly_increase": 500}})
    assert head.weakened_from(base) == ("cost.block_monthly_increase: raised 100 → 500",)
    assert base.union(head).cost.block_monthly_increase == 100


def test_diff_blocks_a_pool_growing_above_the_limit(workspace_copy, capsys):
    """The static diff (diff --base) judges the NodePools' cost like a live preview: 8 more
    gd-8xh100ib-i128 nodes in cw-demo-h100 raise the bill by $287,561.60 > $100,000: exit 3."""
    from helpers import commit_all, edit, git

    from clusterstack.cli import main

    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + "\n[guard.cost]\nblock_monthly_increase = 100000\n")
    git(workspace_copy, "init", "-q", "-b", "main")
    commit_all(workspace_copy, "base")
    cfg = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    edit(cfg, ("max_slices: 32", "max_slices: 40"), ("buffer_slices: 32 ", "buffer_slices: 40 "))
    assert main(["--root", str(workspace_copy), "diff", "cw-demo-h100", "--base", "main"]) == 3
    out = capsys.readouterr().out
    assert ("DESTRUCTIVE update NodePool cwdemo-h100: the fleet's monthly cost rises by $287,561.60, above "
            "[guard.cost] block_monthly_increase $100,000.00") in out
    edit(cfg, ("max_slices: 40", "max_slices: 34"), ("buffer_slices: 40 ", "buffer_slices: 34 "))
    assert main(["--root", str(workspace_copy), "diff", "cw-demo-h100", "--base", "main"]) == 0   # +$71,890.40


def test_the_pr_comment_shows_a_cost_warning():
    """ci preview writes the verdict document with its warnings; the comment lists them under
    Capacity with the stack they are about."""
    from clusterstack.ci.comment import StackReport, render_comment
    from clusterstack.views.verdict import verdict_json

    steps = grow(32, 40)
    verdict = check(steps, GuardPolicy.from_toml({"cost": {"warn_monthly_increase": 100_000}}))
    doc = verdict_json(verdict, steps, source="cw-demo-h100", input_format="engine")
    assert doc["ok"] and [w["rule"] for w in doc["warnings"]] == [verdict.warnings[0].rule]
    assert verdict_json(check(steps), steps)["warnings"] == []
    body = render_comment([StackReport(stack="cw-demo-h100", severity="change", counts={"update": 1},
                                       guard=doc)]).body
    # (Markdown-escaped: clusterstack.markdown renders the text as itself)
    assert ("- cw-demo-h100: warning: the fleet's monthly cost rises by $287,561.60, above \\[guard.cost\\] "
            "warn\\_monthly\\_increase $100,000.00\n") in body
