"""Adoption from an existing Pulumi stack (clusterstack.imports.migrate, ``import migrate`` /
``import state``): Marin's ``marin-iac`` stack export (tests/fixtures/adoption, recorded format)
moved under clusterstack's URNs, checked by Pulumi's own stack-import rules, loaded through the
engine, and the old stack's retirement generated."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.imports.migrate import MigrationRefused, migrate, old_identity, retirement_script
from clusterstack.imports.report import CREATE, REFUSED, REPLACE, SAME
from clusterstack.plan.diff import plan_from_state
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens
from clusterstack.pulumi.state import integrity_problems, load_state, manifest_magic, read_state
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.urn import new_urn, parse_urn
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack
from imports.conftest import ADOPTION, needs_marin

EXPORT = ADOPTION / "marin-iac.cw-us-west-04a.export.json"
GCP_EXPORT = ADOPTION / "marin-iac.marin.export.json"
PATCH = ("urn:pulumi:cw-us-west-04a::marin-iac::marin:coreweave:KueueAddon$kubernetes:apps/v1:"
         "DeploymentPatch::kueue-manager-priority")


def retire_list(plan: StackPlan) -> list[str]:
    """Whatever stays in the old stack yet depends on a moving resource — the export is an older
    Marin layout: its ``cw-ib``/``cw-cpu`` ResourceFlavors are not what the example declares
    today (the ``kueue-manager-priority`` DeploymentPatch moves: the example declares it) —
    found the way an operator finds them: from the refusal's own list."""
    also: list[str] = []
    for _ in range(10):
        blockers = migrate(load_state(EXPORT), plan, retire_also=also).blockers
        if not blockers:
            return also
        also = sorted({*also, *(stay for stay, _ in blockers)})
    raise AssertionError(f"blockers never settle: {blockers}")


def mirror_plan(export: Path, project: str = "adopter") -> StackPlan:
    """A program that declares exactly what the old stack holds, under its own URNs (another
    project, its own components): the pure test of "inputs carried over exactly"."""
    old = load_state(export)
    stack = old.stack
    stack_urn = new_urn(stack, project, "", tokens.STACK_TYPE, f"{project}-{stack}")
    res = [PlannedResource(urn=stack_urn, type=tokens.STACK_TYPE, name=f"{project}-{stack}", custom=False,
                           parent=None, provider=None, inputs={}, dependencies=())]
    comp = new_urn(stack, project, "", "adopter:all:Everything", "all")
    res.append(PlannedResource(urn=comp, type="adopter:all:Everything", name="all", custom=False,
                               parent=stack_urn, provider=None, inputs={}, dependencies=()))
    providers = {}
    for r in old.resources:
        if tokens.is_provider(r.type):
            u = new_urn(stack, project, "", r.type, r.name)
            providers[r.urn] = u
            res.append(PlannedResource(urn=u, type=r.type, name=r.name, custom=True, parent=stack_urn,
                                       provider=None, inputs=dict(r.inputs), dependencies=()))
    for r in old.resources:
        if r.custom and not tokens.is_provider(r.type) and r.urn != PATCH:
            res.append(PlannedResource(
                urn=new_urn(stack, project, "adopter:all:Everything", r.type, r.name), type=r.type, name=r.name,
                custom=True, parent=comp, provider=providers[r.provider], inputs=dict(r.inputs),
                dependencies=(), protect=r.protect, retain_on_delete=r.retain_on_delete,
                ignore_changes=r.ignore_changes, adopt_id=old_identity(r)))
    return StackPlan(project=project, stack=stack, resources=tuple(sorted(res, key=lambda x: x.urn)))


def test_identical_objects_come_out_same():
    plan = mirror_plan(EXPORT)
    m = migrate(load_state(EXPORT), plan)
    assert len(m.moves) == 20
    assert {r.verdict for r in m.report.rows} == {SAME}
    assert m.report.summary.startswith("20 of 20 adopted objects are same or a proven no-op; 0 live changes")
    # the static diff against the migrated state (what `diff --state` shows) is empty too
    from clusterstack.plan.diff import STATE_OPTIONS, diff_plans

    d = diff_plans(plan_from_state(m.document), plan, options=STATE_OPTIONS)
    assert not d.changed and not d.removed and not d.findings
    assert {r.type for r in d.added} == set()


def test_the_migrated_state_is_what_pulumi_stack_import_accepts():
    plan = mirror_plan(EXPORT)
    old = load_state(EXPORT)
    m = migrate(old, plan)
    dep = m.document["deployment"]
    # pkg/resource/deploy/snapshot.go VerifyIntegrity; stack_import.go: every URN of this stack
    assert integrity_problems(dep["manifest"], dep["resources"]) == []
    assert dep["manifest"]["magic"] == manifest_magic(dep["manifest"]["version"])
    assert {(parse_urn(r["urn"]).project, parse_urn(r["urn"]).stack) for r in dep["resources"]} == \
        {("adopter", "cw-us-west-04a")}
    assert dep["secrets_providers"] == json.loads(EXPORT.read_text())["deployment"]["secrets_providers"]
    by_new = {r["urn"]: r for r in dep["resources"]}
    raw_old = {r["urn"]: r for r in json.loads(EXPORT.read_text())["deployment"]["resources"]}
    for mv in m.moves:
        rec, src = by_new[mv.new.urn], raw_old[mv.old.urn]
        # carried over exactly
        for key in ("id", "inputs", "outputs", "type", "custom", "created", "modified", "ignoreChanges"):
            assert rec.get(key) == src.get(key), (mv.new.urn, key)
        # rewritten
        assert rec["parent"] == mv.new.parent
        prov_urn, prov_id = rec["provider"].rsplit("::", 1)
        assert prov_urn == m.providers[mv.old.provider] and prov_id == src["provider"].rsplit("::", 1)[1]
        assert all(d in by_new for d in rec.get("dependencies", ()))
        assert "aliases" not in rec and "sourcePosition" not in rec
    # the Cloudflare provider keeps its encrypted token as it was
    cf = next(r for r in dep["resources"] if r["type"] == "pulumi:providers:cloudflare")
    assert cf["inputs"]["apiToken"]["ciphertext"].startswith("v1:")
    # byte-identical for the same input
    assert migrate(old, plan).dumps() == m.dumps()
    # the fake engine runs the CLI's own checks: a shuffled document is refused
    broken = copy.deepcopy(m.document)
    broken["deployment"]["resources"].reverse()
    assert integrity_problems(broken["deployment"]["manifest"], broken["deployment"]["resources"])


def test_integrity_rules():
    man = {"version": "v3.205.0", "magic": manifest_magic("v3.205.0")}
    stack = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"
    prov = "urn:pulumi:s::p::pulumi:providers:kubernetes::k"
    leaf = "urn:pulumi:s::p::kubernetes:core/v1:Namespace::n"
    good = [{"urn": stack, "custom": False, "type": tokens.STACK_TYPE},
            {"urn": prov, "custom": True, "id": "i", "type": "pulumi:providers:kubernetes", "parent": stack},
            {"urn": leaf, "custom": True, "id": "n", "type": tokens.NAMESPACE, "parent": stack,
             "provider": f"{prov}::i", "dependencies": [prov]}]
    assert integrity_problems(man, good) == []
    assert integrity_problems({**man, "magic": "0" * 64}, good) != []
    assert any("provider" in p for p in integrity_problems(man, [good[0], good[2], good[1]]))
    assert any("twice" in p for p in integrity_problems(man, good + [good[2]]))
    assert any("component with an ID" in p for p in integrity_problems(man, [{**good[0], "id": "x"}]))
    assert any("parent" in p for p in integrity_problems(man, [good[1], good[0]]))


def test_refusals():
    plan = mirror_plan(EXPORT)
    doc = json.loads(EXPORT.read_text())
    doc["deployment"]["pending_operations"] = [{"resource": doc["deployment"]["resources"][3], "type": "creating"}]
    with pytest.raises(MigrationRefused, match="pending operation"):
        migrate(read_state(doc), plan)
    with pytest.raises(MigrationRefused, match="not in the old stack's state"):
        migrate(load_state(EXPORT), plan, retire_also=["urn:pulumi:cw-us-west-04a::marin-iac::x:y:Z::nope"])
    # two declarations of one live object
    ns = next(r for r in plan.resources if r.type == tokens.NAMESPACE)
    twin = PlannedResource(**{**ns.__dict__, "urn": ns.urn + "-twin", "name": ns.name + "-twin"})
    with pytest.raises(MigrationRefused, match="matches 2 resources"):
        migrate(load_state(EXPORT), StackPlan(plan.project, plan.stack, plan.resources + (twin,)))
    # nothing maps
    empty = StackPlan(plan.project, plan.stack, tuple(r for r in plan.resources if not r.custom))
    with pytest.raises(MigrationRefused, match="nothing of marin-iac/cw-us-west-04a maps"):
        migrate(load_state(EXPORT), empty)


def test_another_api_version_is_not_moved():
    plan = mirror_plan(EXPORT)
    swapped = tuple(
        PlannedResource(**{**r.__dict__, "type": "kubernetes:kueue.x-k8s.io/v1alpha1:Topology",
                           "urn": r.urn.replace("v1beta1:Topology", "v1alpha1:Topology")})
        if r.type == tokens.KUEUE_TOPOLOGY else r for r in plan.resources)
    m = migrate(load_state(EXPORT), StackPlan(plan.project, plan.stack, swapped))
    stays = {u: why for u, _t, why in m.not_adopted}
    topo = [u for u in stays if "Topology" in u]
    assert len(topo) == 2 and all("a type change is not a state move" in stays[u] for u in topo)
    assert sum(1 for r in m.report.rows if r.verdict == CREATE) == 2


def test_the_retirement_deletes_exactly_what_moved_dependents_first():
    old = load_state(EXPORT)
    m = migrate(old, mirror_plan(EXPORT))
    # the DeploymentPatch stays (nothing declares it) and depends on the kueue release
    assert any(stay == PATCH for stay, _ in m.blockers)
    with pytest.raises(MigrationRefused, match="--retire-also"):
        retirement_script(m, export_digest="0" * 64)
    m = migrate(old, mirror_plan(EXPORT), retire_also=[PATCH])
    script = retirement_script(m, export_digest="e" * 64)
    deleted = [line.rsplit(" ", 1)[1].strip("'") for line in script.splitlines()
               if line.startswith("pulumi state delete")]
    assert deleted == list(m.retire)
    moved = {mv.old.urn for mv in m.moves}
    assert moved | {PATCH} <= set(deleted)
    stack_urn = next(r.urn for r in old.resources if r.type == tokens.STACK_TYPE)
    assert stack_urn not in deleted          # never the stack; every component and provider emptied
    assert {r.urn for r in old.resources if r.urn != stack_urn} == set(deleted)
    pos = {u: i for i, u in enumerate(deleted)}
    for r in old.resources:
        for dep in (*r.dependencies, *([r.parent] if r.parent else []), *([r.provider] if r.provider else [])):
            if r.urn in pos and dep in pos:
                assert pos[r.urn] < pos[dep], (r.urn, dep)      # dependents first
    assert "destroy" not in script.replace("never `destroy`", "")
    assert "--force" not in script and "--target-dependents" not in script
    assert "pulumi state unprotect" not in script       # nothing in Marin's state is protected


@needs_marin
def test_marin_stacks_move_under_the_example_urns(marin_plans):
    for export, stack in ((EXPORT, "cw-us-west-04a"), (GCP_EXPORT, "marin")):
        plan = marin_plans[stack]
        old = load_state(export)
        m = migrate(old, plan)
        dep = m.document["deployment"]
        assert integrity_problems(dep["manifest"], dep["resources"]) == []
        leaves = {r.urn: r for r in plan.resources}
        for mv in m.moves:
            assert mv.new.type == mv.old.type and leaves[mv.new.urn].adopt_id
        moved = {mv.old.urn for mv in m.moves}
        unmoved = {u for u, *_ in m.not_adopted}
        custom = {r.urn for r in old.resources if r.custom and not tokens.is_provider(r.type)}
        assert moved | unmoved == custom and not moved & unmoved
        # The recorded export is Marin at older commits (tests/fixtures/adoption/README.md), yet
        # nothing immutable differs: Marin's PriorityClass value, Topology levels (superpod) and
        # mirrors ([conventions] of examples/marin) — no refused update, no replace.
        assert m.report.counts[REFUSED] == 0 and m.report.counts[REPLACE] == 0, m.report.summary
        if stack == "cw-us-west-04a":      # [conventions] kueue_manager_priority = "patch"
            assert PATCH in moved
            verdicts = {row.ref: row.verdict for row in m.report.rows}
            for ref in ("Topology infiniband", "Topology multinode-nvlink-ib", "PriorityClass iris-system",
                        "Deployment kueue-system/kueue-controller-manager"):
                assert verdicts[ref] == SAME, (ref, verdicts[ref])
        c = m.report.counts
        assert sum(c.values()) == len(m.report.rows)
        assert m.report.absent_label == f"marin-iac/{stack}"


# --- the commands ------------------------------------------------------------------------------------

@pytest.fixture
def private(tmp_path) -> Path:
    d = tmp_path / "private"
    d.mkdir(mode=0o700)
    return d


@needs_marin
def test_migrate_command_writes_the_state_and_diff_state_reads_it(marin_root, private, capsys):
    out = private / "cw.json"
    assert main(["--root", str(marin_root), "import", "migrate", "cw-us-west-04a", "--export", str(EXPORT),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert "marin-iac/cw-us-west-04a → marin-clusterstack/cw-us-west-04a" in text
    assert "adopted objects are same or a proven no-op" in text
    # the older export's cw-ib/cw-cpu flavors stay; the manager priority patch moves
    assert "STAYS" in text and "cpu-resource-flavor" in text
    assert "STAYS      urn:pulumi:cw-us-west-04a::marin-iac::marin:coreweave:KueueAddon$kubernetes:apps/v1:DeploymentPatch" not in text
    assert f"clusterstack diff cw-us-west-04a --state {out}" in text
    assert main(["--root", str(marin_root), "diff", "cw-us-west-04a", "--state", str(out)]) in (0, 3)
    assert "stack marin-clusterstack/cw-us-west-04a" in capsys.readouterr().out
    # the raw export of the other project is not diffed: it is migrated first
    assert main(["--root", str(marin_root), "diff", "--state", str(EXPORT)]) == 2
    assert "import migrate" in capsys.readouterr().err
    # never inside the repository
    assert main(["--root", str(marin_root), "import", "migrate", "cw-us-west-04a", "--export", str(EXPORT),
                 "-o", str(marin_root / "state.json")]) == 2
    assert not (marin_root / "state.json").exists()
    assert main(["--root", str(marin_root), "import", "migrate", "cw-us-west-04a", "--export", str(EXPORT),
                 "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "clusterstack.migration/v1" and doc["confirm"] == f"migrate {doc['digest'][:12]}"
    assert doc["report"]["format"] == "clusterstack.adoption-report/v1"
    assert doc["blockers"] and all(b["stays"] != PATCH for b in doc["blockers"])


def state_engine(plan: StackPlan, m, *, replace_urn: str | None = None) -> FakeEngine:
    """An empty stack; after the stack import, a preview of the program (updates where the report
    has them, `same` elsewhere; a replace of ``replace_urn`` when given)."""
    changed = {r.urn for r in m.report.rows if r.changes}
    steps = []
    for r in plan.resources:
        op = "update" if r.urn in changed else "same"
        if r.urn == replace_urn:
            op = "replace"
        if any(row.urn == r.urn and row.verdict == CREATE for row in m.report.rows):
            op = "create"
        steps.append(Step(op=op, urn=r.urn, type=r.type))
    return FakeEngine({plan.stack: FakeStack(steps=tuple(steps))})


@needs_marin
def test_state_command_moves_the_state_then_writes_the_retirement(marin_root, marin_plans, private, capsys):
    plan = marin_plans["cw-us-west-04a"]
    also = retire_list(plan)
    retire = [a for u in also for a in ("--retire-also", u)]
    out, script = private / "cw.json", private / "retire.sh"
    root = ["--root", str(marin_root)]
    assert main([*root, "import", "migrate", "cw-us-west-04a", "--export", str(EXPORT), "-o", str(out),
                 *retire]) == 0
    m = migrate(load_state(EXPORT), plan, retire_also=also)
    accept = [a for r in m.report.needing_confirmation() for a in ("--accept", r.name)]
    engine = state_engine(plan, m)
    args = [*root, "import", "state", "cw-us-west-04a", "--file", str(out), "--export", str(EXPORT),
            "--retire-script", str(script), *retire]
    capsys.readouterr()
    # the report gates the move as it gates an import
    assert main([*args, "--confirm-digest", m.digest[:12]], clients=fake_clients(engine=engine)) == 3
    assert "--accept" in capsys.readouterr().err and engine.calls == []
    # a wrong digest imports nothing
    assert main([*args, *accept, "--confirm-digest", "0" * 12], clients=fake_clients(engine=engine)) == 2
    assert "import_state" not in [c[0] for c in engine.calls]
    assert main([*args, *accept, "--confirm-digest", m.digest[:12]], clients=fake_clients(engine=engine)) == 0
    text = capsys.readouterr().out
    ops = [c[0] for c in engine.calls]
    assert ops.count("import_state") == 1 and ops[-1] == "preview"
    assert engine.stacks["cw-us-west-04a"].export == m.document
    assert oct(script.stat().st_mode & 0o777) == "0o600"
    body = script.read_text()
    assert f"Old export sha256:{hashlib.sha256(EXPORT.read_bytes()).hexdigest()}" in body
    assert sum(1 for line in body.splitlines() if line.startswith("pulumi state delete")) == len(m.retire)
    assert f"`sh {script}`" in text
    # a re-run finds the state there and imports nothing
    script.unlink()
    assert main([*args, *accept, "--confirm-digest", m.digest[:12]], clients=fake_clients(engine=engine)) == 0
    assert "already holds the migrated state" in capsys.readouterr().out
    assert [c[0] for c in engine.calls].count("import_state") == 1 and script.exists()


@needs_marin
def test_state_command_refusals(marin_root, marin_plans, private, capsys):
    plan = marin_plans["cw-us-west-04a"]
    also = retire_list(plan)
    retire = [a for u in also for a in ("--retire-also", u)]
    out, script = private / "cw.json", private / "retire.sh"
    root = ["--root", str(marin_root)]
    assert main([*root, "import", "migrate", "cw-us-west-04a", "--export", str(EXPORT), "-o", str(out),
                 *retire]) == 0
    m = migrate(load_state(EXPORT), plan, retire_also=also)
    accept = [a for r in m.report.needing_confirmation() for a in ("--accept", r.name)]
    args = [*root, "import", "state", "cw-us-west-04a", "--file", str(out), "--export", str(EXPORT),
            "--retire-script", str(script), *retire, *accept, "--confirm-digest", m.digest[:12]]
    # a stack that already holds resources: `pulumi stack import` would drop them
    busy = state_engine(plan, m)
    busy.stacks["cw-us-west-04a"].export = {"version": 3, "deployment": {"resources": [
        {"urn": next(r.urn for r in plan.resources if r.type == tokens.NAMESPACE), "custom": True,
         "id": "other", "type": tokens.NAMESPACE}]}}
    capsys.readouterr()
    assert main(args, clients=fake_clients(engine=busy)) == 2
    assert "already holds 1 resource" in capsys.readouterr().err
    # an edited file
    text = out.read_text()
    out.write_text(text.replace('"iris-ci"', '"iris-prod"', 1))
    os.chmod(out, 0o600)
    assert main(args, clients=fake_clients(engine=state_engine(plan, m))) == 2
    assert "not the migrated state of this export and program" in capsys.readouterr().err
    out.write_text(text)
    # the first preview would replace a moved resource: exit 3, no retirement written
    pool = next(r.urn for r in plan.resources if r.type == tokens.NODEPOOL)
    eng = state_engine(plan, m, replace_urn=pool)
    assert main(args, clients=fake_clients(engine=eng)) == 3
    err = capsys.readouterr().err
    assert f"the preview would replace {pool}" in err and "nothing was retired" in err
    assert not script.exists()
