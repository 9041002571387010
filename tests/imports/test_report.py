"""The adoption report from live objects (``clusterstack import report``, the gate of ``import
apply``): per declared object same / no-op / change / refused / replace / create /
unverified, from the rules of clusterstack.imports.rules, rendered once as text and JSON."""

from __future__ import annotations

import copy
import json

import pytest

from clusterstack.cli import main
from clusterstack.guard import GuardPolicy
from clusterstack.imports.live import DumpView
from clusterstack.imports.report import (CHANGE, CREATE, NO_OP, REFUSED, REPLACE, SAME, UNVERIFIED,
                                         live_report, render_text)
from clusterstack.pulumi import tokens
from imports.conftest import CW_DUMPS, marin_dumps, needs_marin
from imports.world import dump_args, helm_secret, write_world

STACK = "cw-demo-h100"


def report_of(plan, files):
    return live_report(plan, DumpView(files), replace_paths=GuardPolicy().replace_paths)


def verdicts(report):
    return {r.name: r.verdict for r in report.rows}


def test_a_cluster_running_exactly_the_config_is_all_same_or_no_op(example_plans, tmp_path):
    rep = report_of(example_plans[STACK], write_world(example_plans[STACK], tmp_path))
    assert set(verdicts(rep).values()) <= {SAME, NO_OP}
    assert rep.summary.startswith(f"{rep.adopted} of {rep.adopted} adopted objects are same or a proven no-op; "
                                  "0 live changes; 0 refused; 0 replaces; 0 created")
    rows = {r.name: r for r in rep.rows}
    # every custom resource shows `~ update` (its spec is not read on import) and changes nothing
    pool = rows["nodepool_cwdemo_h100"]
    assert pool.verdict == NO_OP and {a.path for a in pool.artefacts} >= {"spec"}
    # the namespace: the API server's label and finalizer
    ns = next(r for r in rep.rows if r.type == tokens.NAMESPACE)
    assert ns.verdict == NO_OP
    assert [a.path for a in ns.artefacts] == ['metadata.labels["kubernetes.io/metadata.name"]',
                                              "spec.finalizers"]
    # a release: repositoryOpts is not recorded by the import; the upgrade renders the same
    rel = next(r for r in rep.rows if r.type == tokens.HELM_RELEASE)
    assert rel.verdict == NO_OP and "repositoryOpts" in {a.path for a in rel.artefacts}
    # objects whose import reads back exactly the declared inputs
    assert rows["clusterrolebinding_cwdemo_controller"].verdict == SAME


def edit_spec(path, value):
    def fn(_r, live):
        live = copy.deepcopy(live)
        node = live
        for seg in path[:-1]:
            node = node[seg]
        node[path[-1]] = value
        return live
    return fn


def test_each_verdict_with_its_fields_and_rule(example_plans, tmp_path):
    plan = example_plans[STACK]
    by_name = {r.name: r for r in plan.resources}
    pc = next(r for r in plan.resources if r.type == tokens.PRIORITY_CLASS)
    topo = next(r for r in plan.resources if r.type == tokens.KUEUE_TOPOLOGY)
    cq = next(r for r in plan.resources if r.type == tokens.KUEUE_CLUSTER_QUEUE)
    crb = next(r for r in plan.resources if r.type == tokens.CLUSTER_ROLE_BINDING)
    kueue = next(r for r in plan.resources if r.type == tokens.HELM_RELEASE and r.name == "kueue")
    files = write_world(plan, tmp_path, drop={"cwdemo-cpu-general"}, edit={
        pc.urn: edit_spec(["value"], 10000),
        topo.urn: edit_spec(["spec", "levels"], topo.inputs["spec"]["levels"][1:]),
        cq.urn: edit_spec(["spec", "namespaceSelector"], {}),
        crb.urn: edit_spec(["roleRef", "name"], "someone-else"),
        kueue.urn: lambda r, live: helm_secret(r, values={"kueue": {"enableKueueViz": False}}),
    })
    rep = report_of(plan, files)
    rows = {r.urn: r for r in rep.rows}
    assert rows[pc.urn].verdict == REFUSED
    assert [(c.path, c.before, c.declared) for c in rows[pc.urn].changes] == [("value", 10000, pc.inputs["value"])]
    assert rows[topo.urn].verdict == REFUSED and "field is immutable" in rows[topo.urn].changes[0].rule
    assert rows[cq.urn].verdict == CHANGE and rows[cq.urn].changes[0].path.startswith("spec.namespaceSelector")
    assert rows[crb.urn].verdict == REPLACE and rows[crb.urn].changes[0].path == "roleRef.name"
    assert rows[kueue.urn].verdict == CHANGE
    assert any(c.path.startswith("values.") for c in rows[kueue.urn].changes)
    assert rows[by_name["cwdemo-cpu-general"].urn].verdict == CREATE
    assert rep.counts[CREATE] == 1 and rep.counts[REPLACE] == 1 and rep.counts[REFUSED] == 2
    # worst first, then by URN
    order = [r.verdict for r in rep.rows]
    assert order.index(REPLACE) < order.index(REFUSED) < order.index(CHANGE) < order.index(SAME)
    text = "\n".join(render_text(rep))
    assert f"REFUSED    PriorityClass {pc.inputs['metadata']['name']}" in text
    assert "ValidatePriorityClassUpdate" in text
    assert "not live under this identity: `up` creates it" in text


def test_the_cli_report_is_deterministic_json(example_plans, tmp_path, capsys):
    args = dump_args(write_world(example_plans[STACK], tmp_path))
    assert main(["import", "report", STACK, *args, "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["import", "report", STACK, *args, "--json"]) == 0
    assert capsys.readouterr().out == first
    doc = json.loads(first)
    assert doc["format"] == "clusterstack.adoption-report/v1"
    assert set(doc["counts"]) == {"same", "no-op", "change", "refused", "replace", "create", "unverified"}
    assert {o["verdict"] for o in doc["objects"]} <= {"same", "no-op"}
    assert main(["import", "report", STACK, *args, "--only", "nodepools", "--json"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert {o["type"] for o in only["objects"]} == {tokens.NODEPOOL}


# --- the Marin fleet, from the recorded dumps -----------------------------------------------------

@needs_marin
def test_marin_cluster_report_is_countable(marin_plans):
    """The countable adoption promise, for the CoreWeave cluster the fixtures
    record (Marin's objects at the commits tests/fixtures/adoption/README.md cites)."""
    plan = marin_plans["cw-us-west-04a"]
    rep = report_of(plan, marin_dumps(*CW_DUMPS))
    c = rep.counts
    assert sum(c.values()) == len(rep.rows) == sum(
        1 for r in plan.resources if r.custom and not r.is_provider and r.type != tokens.STACK_TYPE)
    assert rep.adopted == len(rep.rows) - c[CREATE]
    assert rep.summary == (f"{c[SAME] + c[NO_OP]} of {rep.adopted} adopted objects are same or a proven no-op; "
                           f"{c[CHANGE]} live change{'s' if c[CHANGE] != 1 else ''}; {c[REFUSED]} refused; "
                           f"{c[REPLACE]} replace{'s' if c[REPLACE] != 1 else ''}; {c[CREATE]} created that "
                           f"the live system does not run; {c[UNVERIFIED]} unverified")
    # whatever the conventions declare, Marin's live objects are judged by the rules: a Topology
    # whose declared levels differ from Marin's (which include superpod) is refused, not changed
    for r in rep.rows:
        if r.type == tokens.KUEUE_TOPOLOGY and r.changes:
            assert r.verdict == REFUSED
        if r.type == tokens.NAMESPACE:
            assert all("kubernetes.io/metadata.name" in a.path or a.path.startswith("spec")
                       for a in r.artefacts)


@needs_marin
def test_marin_registries_report(marin_plans):
    rep = report_of(marin_plans["marin"], marin_dumps("marin.gcloud.json"))
    for r in rep.rows:
        rrc = [c for c in r.changes if c.path.startswith("remoteRepositoryConfig")]
        if r.type == tokens.ARTIFACT_REPOSITORY and rrc:
            # terraform-provider-google: remote_repository_config is ForceNew
            assert r.verdict == REPLACE and all(c.effect == "replace" and "ForceNew" in c.rule for c in rrc)
        if r.type == tokens.ADDRESS:
            assert r.verdict in (SAME, REPLACE)


@needs_marin
def test_the_fleet_measure_runs_and_adds_up():
    """tests/imports/marin_adoption.py: the adoption promise by the adoption rules, over the
    catalogue's live dumps (tests/fixtures/marin/live) — the counts themselves move as the
    conventions become Marin's; what must hold is that they add up and name every object."""
    from imports import marin_adoption

    if not marin_adoption.LIVE.is_dir():
        pytest.skip("tests/fixtures/marin/live is not in this tree")
    reps, apart = marin_adoption.reports()
    assert [r.stack for r in reps] == list(marin_adoption.STACKS)
    line = marin_adoption.total(reps)
    adopted = sum(r.adopted for r in reps)
    assert f" of {adopted} adopted objects are same or a proven no-op; " in line
    for r in reps:
        assert sum(r.counts.values()) == len(r.rows)
        assert r.summary.endswith("unverified") and "created that Marin does not run" in r.summary


def test_the_documented_summary_is_the_reports(example_plans, tmp_path):
    """docs/adopting-a-cluster.md shows the summary of ``import report cw-demo-h100`` on a cluster
    running exactly the config (three dump files): it is what the report says today."""
    from pathlib import Path

    files = write_world(example_plans[STACK], tmp_path)
    head = render_text(report_of(example_plans[STACK], files))[:2]
    doc = (Path(__file__).parents[2] / "docs" / "adopting-a-cluster.md").read_text(encoding="utf-8")
    shown = doc.split(f"stack {STACK}: adoption report (live objects from ", 1)[1].splitlines()
    assert len(files) == 3 and head[0].endswith("(live objects from 3 dump files)")
    assert f"stack {STACK}: adoption report (live objects from {shown[0]}" == head[0]
    assert shown[1] == head[1]


def test_a_long_live_value_is_shown_whole_never_cut():
    """The text report cut values at 160 characters: a reviewer deciding whether the first `up`
    may overwrite a live Helm values blob could not read its end. A change line too long for
    160 characters now shows the path, then the live and the declared value, each whole."""
    from clusterstack.imports.report import AdoptionReport, Row
    from clusterstack.imports.rules import FieldChange

    live = {"args": ["--leader-elect"] + [f"--flag-{i}=value-{i}" for i in range(12)]}
    declared = {"args": ["--leader-elect"]}
    rep = AdoptionReport(stack="s", source={"kind": "dumps", "files": ["a.json"]}, rows=(
        Row(name="kueue", urn="u", type=tokens.HELM_RELEASE, ref="Helm release kueue/kueue",
            verdict=CHANGE, changes=(FieldChange("values", declared, live),
                                     FieldChange("version", "0.14.4", "0.14.3"))),))
    lines = render_text(rep)
    i = lines.index("    values:")
    assert lines[i + 1] == "        live: " + json.dumps(live, sort_keys=True, separators=(", ", ": "))
    assert lines[i + 2] == "        declared: " + json.dumps(declared, sort_keys=True, separators=(", ", ": "))
    assert '    version: "0.14.3" → "0.14.4"' in lines
    assert "…" not in "\n".join(lines)
