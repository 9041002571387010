"""THE verdict document (clusterstack.views.verdict): one rendering as text and one versioned
JSON document for every verdict, whatever command shows it."""

from __future__ import annotations

import json

from clusterstack.cli import dump_json
from clusterstack.guard import GuardPolicy, check
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import ADDRESS, NODEPOOL
from clusterstack.views.verdict import VERDICT_FORMAT, verdict_json, verdict_lines

S = "urn:pulumi:cw-demo-h100::clusterstack::"
POOL = f"{S}clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
GONE = f"{S}clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-cpu"
ADDR = f"{S}{ADDRESS}::old-ingress"


H100 = {"instanceType": "gd-8xh100ib-i128", "autoscaling": True, "minNodes": 8, "maxNodes": 32}


def _steps() -> list[Step]:
    return [Step(op="replace", urn=POOL, type=NODEPOOL, replace_reasons=("spec",),
                 detailed_diff={"spec.instanceType": {"kind": "update-replace", "inputDiff": True}},
                 old_inputs={"spec": H100}, new_inputs={"spec": {**H100, "instanceType": "gd-8xh200ib-i128"}}),
            Step(op="delete", urn=ADDR, type=ADDRESS, old_retain_on_delete=True),
            Step(op="refresh", urn=GONE, type=NODEPOOL),
            Step(op="same", urn=f"{S}pulumi:pulumi:Stack::clusterstack-cw-demo-h100", type="pulumi:pulumi:Stack")]


def test_one_text_rendering_lists_blocked_allowed_drift_and_a_summary():
    steps = _steps()
    v = check(steps, GuardPolicy(), gone=(GONE,))
    lines = verdict_lines(v, steps)
    assert lines[0].startswith("BLOCKED replace NodePool cwdemo-h100 — forced by spec.instanceType: ")
    # a replace states the capacity it destroys (8 GPUs per gd-8xh100ib-i128 node)
    assert lines[1] == "  capacity: maxNodes 32 → 0, minNodes 8 → 0: −32 nodes, −256 GPUs"
    assert lines[2].startswith("  to do: ") and lines[2].count(POOL) == 1
    assert lines[3] == "allowed delete Address old-ingress: allowed by the [guard] policy"
    assert lines[4].startswith("drift gone NodePool cwdemo-cpu: a refresh found it gone")
    assert lines[-1] == "guard: BLOCKED — 1 violation(s); 2 destructive change(s) (1 delete, 1 replace) in 4 step(s)"
    assert not any("urn:" in ln for ln in lines if ln.startswith(("BLOCKED", "allowed", "drift")))


def test_the_json_document_is_versioned_sorted_and_byte_identical():
    steps = _steps()
    v = check(steps, GuardPolicy(), gone=(GONE,))
    doc = verdict_json(v, steps, source="preview.json", input_format="preview")
    assert doc["format"] == VERDICT_FORMAT == "clusterstack.verdict/v1"
    assert (doc["ok"], doc["severity"]) == (False, "blocked")
    [loss] = doc["capacity"]
    assert (loss["op"], loss["urn"], loss["nodes_lost"], loss["gpus_lost"]) == ("replace", POOL, 32, 256)
    assert doc["destructive"] == [{"op": "replace", "urn": POOL, "type": NODEPOOL, "blocked": True, "capacity": loss},
                                  {"op": "delete", "urn": ADDR, "type": ADDRESS, "blocked": False,
                                   "capacity": None}]  # by URN
    assert doc["violations"][0]["capacity"] == loss and doc["warnings"] == []
    assert doc["drift"] == [GONE] and doc["recovery"] == []
    assert doc["counts"]["ops"] == {"delete": 1, "refresh": 1, "replace": 1, "same": 1}
    assert dump_json(doc) == dump_json(verdict_json(check(list(reversed(steps)), GuardPolicy(), gone=(GONE,)),
                                                    list(reversed(steps)), source="preview.json",
                                                    input_format="preview"))
    assert json.loads(dump_json(doc)) == doc


def test_severity_is_the_verdicts_own():
    same = [Step(op="same", urn=POOL, type=NODEPOOL)]
    assert verdict_json(check(same), same)["severity"] == "none"
    upd = [Step(op="update", urn=POOL, type=NODEPOOL, detailed_diff={"spec.maxNodes": {"kind": "update"}})]
    assert verdict_json(check(upd), upd)["severity"] == "change"
    rm = [Step(op="delete", urn=ADDR, type=ADDRESS, old_retain_on_delete=True)]
    assert verdict_json(check(rm), rm)["severity"] == "delete"
