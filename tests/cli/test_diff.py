"""``clusterstack diff`` end to end: temporary git repositories with real commits, the base side
planned in a worktree by a child interpreter, and state files in Pulumi's formats."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.pulumi.tokens import NODEPOOL
from helpers import edit, git

REPO = Path(__file__).resolve().parents[2]
STATE = Path(__file__).resolve().parents[1] / "fixtures" / "state"



def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)



@pytest.fixture
def repo(workspace_copy: Path) -> Path:
    """A git repository holding a copy of the shipped workspace (no src/: both sides are planned
    with the current code), one commit."""
    git(workspace_copy, "init", "-q", "-b", "main")
    commit(workspace_copy, "base")
    return workspace_copy


def run(root: Path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--root", str(root), "diff", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def run_json(root: Path, capsys, *args: str) -> tuple[int, dict]:
    code, out, err = run(root, capsys, *args, "--json")
    return code, json.loads(out)


def findings(doc: dict) -> list[tuple[str, str, str, str]]:
    return [(s["stack"], f["kind"], f["urn"].rsplit("::", 1)[1], f["path"])
            for s in doc["stacks"] for f in s["findings"]]


def worktrees(root: Path) -> list[str]:
    return [ln for ln in git(root, "worktree", "list", "--porcelain").splitlines()
            if ln.startswith("worktree ")]


def test_each_destructive_classification(repo, capsys):
    """One commit that removes a NodePool, renames a scale group, changes an instance type and an
    address description — each reported with its URN and path, exit 3."""
    h100, gb200, gcp = (repo / "clusters" / f"{n}.yaml" for n in ("cw-demo-h100", "cw-demo-gb200",
                                                                  "gcp-demo"))
    # a spare CPU pool at the base, removed by the destructive commit (the controller's pool,
    # cpu-general, cannot go: validate refuses a cluster without it)
    spare = ("  spare:\n    resources: {cpu: 64, ram: 512GB, disk: 6.98TiB, device_type: cpu}\n"
             "    buffer_slices: 1\n    max_slices: 1\n"
             "    slice_template: {num_vms: 1, coreweave: {region: US-EAST-04A, instance_type: cd-gp-i64-erapids}}\n")
    edit(h100, "\n  h100:\n", "\n" + spare + "  h100:\n")
    commit(repo, "a spare CPU pool")
    edit(h100, spare, "")                                                 # NodePool removed
    edit(h100, "instance_type: gd-8xh100ib-i128", "instance_type: gd-8xh100ib-i256")
    edit(gb200, "\n  gb200:", "\n  gb200-nvl:")                           # scale group renamed
    edit(gcp, "(do not edit; forces a replace)", "(edited)")              # address description
    commit(repo, "destructive edits")

    code, doc = run_json(repo, capsys, "--all", "--base", "HEAD~1")
    assert code == 3
    assert doc["base"]["kind"] == "git" and doc["base"]["ref"] == "HEAD~1"
    assert re.fullmatch(r"[0-9a-f]{40}", doc["base"]["commit"])
    assert findings(doc) == [
        # the renamed pool's flavor goes with it: its GPU quota is cut (a reviewed migration
        # moves it), and the pool itself is deleted
        ("cw-demo-gb200", "shrink", "gb200-cq",
         'spec.resourceGroups[*].flavors[name="cwgb-gb200-flavor"].nvidia.com/gpu'),
        ("cw-demo-gb200", "renamed", "cwgb-gb200", ""),
        ("cw-demo-h100", "replace", "cwdemo-h100", "spec.instanceType"),
        ("cw-demo-h100", "removed", "cwdemo-spare", ""),
        ("gcp-demo", "replace", "controller-ingress", "description"),
    ]
    by_stack = {s["stack"]: s for s in doc["stacks"]}
    renamed = by_stack["cw-demo-gb200"]["findings"][1]
    assert renamed["new"].endswith(f"{NODEPOOL}::cwgb-gb200-nvl") and renamed["op"] == "delete"
    replace = by_stack["cw-demo-h100"]["findings"][0]
    assert (replace["old"], replace["new"]) == ("gd-8xh100ib-i128", "gd-8xh100ib-i256")
    # every destructive finding states the capacity it destroys
    assert replace["capacity"]["op"] == "replace" and replace["capacity"]["gpus_lost"] > 0
    assert renamed["capacity"]["op"] == "delete" and renamed["capacity"]["nodes_lost"] > 0
    addr = by_stack["gcp-demo"]["findings"][0]
    assert addr["old"].endswith("(do not edit; forces a replace)") and addr["new"].endswith("(edited)")
    assert worktrees(repo) == [f"worktree {repo.resolve()}"]


# --- capacity is guarded ----------------------------------------------------------

def test_halving_the_gb200_fleet_is_blocked_naming_the_pool_and_the_gpus_lost(repo, capsys):
    # 12 → 6 racks of 18 gb200-4x nodes (4 GPUs each, config/instances.py): −108 nodes, −432 GPUs
    gb200 = repo / "clusters" / "cw-demo-gb200.yaml"
    edit(gb200, "buffer_slices: 12\n    max_slices: 12", "buffer_slices: 6\n    max_slices: 6")
    code, out, err = run(repo, capsys, "cw-demo-gb200", "--base", "HEAD")
    assert code == 3, err
    assert "DESTRUCTIVE shrink NodePool cwgb-gb200: spec.targetRacks 12 → 6" in out
    assert "  capacity: targetRacks 12 → 6: −108 nodes, −432 GPUs" in out
    # the queue's GPU quota of the pool's flavor is cut with it (432 of 864)
    assert ('DESTRUCTIVE shrink ClusterQueue gb200-cq: spec.resourceGroups[*].flavors[name='
            '"cwgb-gb200-flavor"].nvidia.com/gpu 864 → 432') in out
    code, doc = run_json(repo, capsys, "cw-demo-gb200", "--base", "HEAD")
    assert code == 3
    pool = next(f for f in doc["stacks"][0]["findings"] if f["kind"] == "shrink" and f["type"] == NODEPOOL)
    assert (pool["capacity"]["nodes_lost"], pool["capacity"]["gpus_lost"]) == (108, 432)


def test_cutting_the_h100_pool_is_blocked_and_growing_it_passes(repo, capsys):
    h100 = repo / "clusters" / "cw-demo-h100.yaml"
    edit(h100, "buffer_slices: 32                # the reserved fleet, pinned warm\n    max_slices: 32",
         "buffer_slices: 4\n    max_slices: 4")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3, err
    assert "DESTRUCTIVE shrink NodePool cwdemo-h100: spec.maxNodes 32 → 4" in out
    # targetNodes is under ignoreChanges (the autoscaler owns it): not a cut the update applies
    assert "  capacity: maxNodes 32 → 4, minNodes 32 → 4: −28 nodes, −224 GPUs" in out
    assert out.count("DESTRUCTIVE shrink NodePool") == 1
    commit(repo, "cut")
    edit(h100, "buffer_slices: 4\n    max_slices: 4", "buffer_slices: 40\n    max_slices: 40")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")     # growth
    assert code == 0, out + err
    assert "DESTRUCTIVE" not in out


def test_a_cut_under_a_warn_policy_passes_and_the_policy_change_itself_is_a_weakening(repo, capsys):
    toml = repo / "clusterstack.toml"
    toml.write_text(toml.read_text() + '\n[guard.capacity]\nblock = []\n'
                    'warn = ["kubernetes:compute.coreweave.com/v1alpha1:NodePool", '
                    '"kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"]\n')
    commit(repo, "capacity cuts warn")
    edit(repo / "clusters" / "cw-demo-gb200.yaml", "buffer_slices: 12\n    max_slices: 12",
         "buffer_slices: 11\n    max_slices: 11")
    code, out, err = run(repo, capsys, "cw-demo-gb200", "--base", "HEAD")
    assert code == 0, out + err
    assert "DESTRUCTIVE" not in out
    # relaxing the policy in the change under review is judged by the stricter (base) policy
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    toml.write_text(toml.read_text() + '\n[guard.capacity]\nblock = []\n')
    code, doc = run_json(repo, capsys, "--all", "--base", "HEAD")
    assert code == 3
    assert doc["guard_weakened"] == ["capacity.block: kubernetes:compute.coreweave.com/v1alpha1:NodePool removed",
                                     "capacity.block: kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue removed"]


def test_diff_shows_a_reviewed_retirement_as_intended_and_passes_exactly_it(repo, capsys):
    """The spare pool removed with ``intents: [{retire: spare}]`` in the same
    change — its NodePool delete is INTENDED (exit 0), stating its capacity; without the stanza
    it is DESTRUCTIVE (exit 3); the stanza does not cover another pool's delete."""
    h100 = repo / "clusters" / "cw-demo-h100.yaml"
    spare = ("  spare:\n    resources: {cpu: 64, ram: 512GB, disk: 6.98TiB, device_type: cpu}\n"
             "    buffer_slices: 1\n    max_slices: 1\n"
             "    slice_template: {num_vms: 1, coreweave: {region: US-EAST-04A, instance_type: cd-gp-i64-erapids}}\n")
    edit(h100, "\n  h100:\n", "\n" + spare + "  h100:\n")
    commit(repo, "a spare CPU pool")
    edit(h100, spare, "")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3 and "DESTRUCTIVE delete NodePool cwdemo-spare" in out
    h100.write_text(h100.read_text() + "intents:\n  - retire: spare\n")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 0, out + err
    assert "  INTENDED delete NodePool cwdemo-spare: a reviewed intent of the cluster file lets exactly this through" in out
    assert "    capacity: targetNodes 1 → 0, maxNodes 1 → 0, minNodes 1 → 0: −1 nodes, no GPUs" in out
    code, doc = run_json(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 0 and [f["kind"] for f in doc["stacks"][0]["intended"]] == ["intended"]
    # exactly that: shrinking the H100 pool in the same change is still blocked
    edit(h100, "buffer_slices: 32                # the reserved fleet, pinned warm\n    max_slices: 32",
         "buffer_slices: 16\n    max_slices: 16")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3 and "DESTRUCTIVE shrink NodePool cwdemo-h100" in out and "INTENDED delete NodePool cwdemo-spare" in out


def test_harmless_change_is_listed_and_exits_0(repo, capsys):
    # a pinned pool grows: both ends of its envelope (Kueue's TAS uses only existing nodes)
    edit(repo / "clusters" / "cw-demo-h100.yaml", "buffer_slices: 2 ", "buffer_slices: 3 ")
    edit(repo / "clusters" / "cw-demo-h100.yaml", "max_slices: 2 ", "max_slices: 3 ")
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")  # working tree vs HEAD
    assert code == 0, err
    assert "spec.maxNodes: 2 → 3" in out and "spec.minNodes: 2 → 3" in out
    assert "DESTRUCTIVE" not in out and "no destructive change" in err
    # the pool's envelope and the ClusterQueue quota derived from it change together
    assert "+0 -0 ~2" in out and "ClusterQueue  training-cq" in out


def test_a_removed_pool_reads_as_its_flavor_removed_keyed_by_name_with_sizes_in_one_unit(repo, capsys):
    """Deleting the CPU pool: the ClusterQueue's change names the removed flavor and each of its
    resources by name (Kueue keys both lists by name, kueue.x-k8s.io_clusterqueues.yaml); no
    line pairs the CPU flavor with the H100 one ("B200 GPU quota 0 → 256"), and a size in raw
    bytes is shown in GB beside it."""
    h100 = repo / "clusters" / "cw-demo-h100.yaml"
    text = h100.read_text()
    pool = text[text.index("  cpu-general:"):text.index("  h100:")]
    # a second CPU pool, first among the flavors (the controller keeps cpu-general)
    h100.write_text(text.replace(pool, pool.replace("  cpu-general:", "  cpu-aaa:") + pool))
    commit(repo, "a second CPU pool")
    h100.write_text(text)                                     # … deleted again
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3
    flavor = 'spec.resourceGroups[0].flavors[name="cwdemo-cpu-aaa-flavor"]'
    assert f'{flavor}.resources[name="nvidia.com/gpu"].nominalQuota: 0 → (none)' in out
    # 2 nodes × 6.98TiB: raw bytes in the quota, and beside them the one unit (GB)
    assert (f'{flavor}.resources[name="ephemeral-storage"].nominalQuota: "15349182323752" → (none)'
            f'  (15349.18 GB)') in out
    assert "0 → 256" not in out and "resources[3]" not in out and "flavors[1]" not in out
    assert "cwdemo-h100-flavor" not in out and "cwdemo-cpu-general-flavor" not in out  # unchanged
    code, doc = run_json(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    (cq,) = [c for c in doc["stacks"][0]["changed"] if c["name"] == "training-cq"]
    assert {p["kind"] for p in cq["properties"]} == {"delete"}
    assert all('flavors[name="cwdemo-cpu-aaa-flavor"]' in p["path"] for p in cq["properties"])


def test_base_is_planned_with_the_code_at_ref(repo, capsys):
    """REF's own src/clusterstack runs on the base side: a component edited only at REF shows up
    as a change, although the working tree's configs are unchanged."""
    shutil.copytree(REPO / "src" / "clusterstack", repo / "src" / "clusterstack",
                    ignore=shutil.ignore_patterns("__pycache__"))
    edit(repo / "src" / "clusterstack" / "components" / "coreweave" / "nodepools.py",
         '"computeClass": "default"', '"computeClass": "as-of-ref"')
    commit(repo, "component edit at base")
    code, doc = run_json(repo, capsys, "cw-demo-gb200", "--base", "HEAD")
    assert code == 0
    (stack,) = doc["stacks"]
    assert [c["name"] for c in stack["changed"]] == ["cwgb-cpu-general", "cwgb-gb200"]   # both NodePools
    for change in stack["changed"]:
        assert change["properties"] == [{"forcesReplace": False, "ignored": False, "kind": "update",
                                         "old": "as-of-ref", "new": "default",
                                         "path": "spec.computeClass"}]


def test_a_new_cluster_claiming_anothers_identities_is_refused_before_planning(repo, capsys):
    shutil.copy(repo / "clusters" / "cw-demo-gb200.yaml", repo / "clusters" / "cw-new.yaml")
    edit(repo / "clusters" / "cw-new.yaml", "name: cw-demo-gb200", "name: cw-new")  # nothing else
    (repo / "infra" / "Pulumi.cw-new.yaml").write_text("config:\n  clusterstack:cluster: cw-new\n")
    assert main(["--root", str(repo), "validate"]) == 2
    expected = capsys.readouterr().err
    assert "is also claimed by clusters/cw-demo-gb200.yaml" in expected, expected
    for args in (["cw-new"], ["--all"]):
        code, out, err = run(repo, capsys, *args, "--base", "HEAD")
        assert (code, out) == (2, ""), args
        assert "is also claimed by clusters/cw-demo-gb200.yaml" in err and "planning at" not in err, err


def test_stacks_on_one_side_only(repo, capsys):
    (repo / "clusters" / "gcp-demo.yaml").unlink()
    (repo / "infra" / "Pulumi.gcp-demo.yaml").unlink()
    # a new cluster of its own: another CKS cluster, DNS name and label prefix (validate, and
    # so plan and diff, refuse two clusters claiming one)
    text = (repo / "clusters" / "cw-demo-gb200.yaml").read_text()
    (repo / "clusters" / "cw-new.yaml").write_text(
        text.replace("cw-demo-gb200", "cw-new").replace("demo-gb200", "new-cks")
            .replace("label_prefix: cwgb", "label_prefix: cwnew"))
    (repo / "infra" / "Pulumi.cw-new.yaml").write_text("config:\n  clusterstack:cluster: cw-new\n")
    code, doc = run_json(repo, capsys, "cw-new", "gcp-demo", "cw-demo-h100", "--base", "HEAD")
    assert code == 3
    by_stack = {s["stack"]: s for s in doc["stacks"]}
    assert sorted(by_stack) == ["cw-demo-h100", "cw-new", "gcp-demo"]
    new, gone = by_stack["cw-new"], by_stack["gcp-demo"]
    assert (new["basePresent"], new["headPresent"], new["removed"], new["findings"]) == (
        False, True, [], [])
    assert len(new["added"]) > 10
    assert (gone["basePresent"], gone["headPresent"], gone["added"]) == (True, False, [])
    removed = {r["urn"]: r for r in gone["removed"]}
    assert {"controller-ingress", "log-relay"} <= {f["urn"].rsplit("::", 1)[1]
                                                   for f in gone["findings"]}
    for f in gone["findings"]:  # only protected / guarded resources are findings
        assert f["kind"] == "removed" and removed[f["urn"]]["protect"], f
    assert len(gone["findings"]) < len(removed)
    for name, unchanged in by_stack.items():
        if name not in ("cw-new", "gcp-demo"):
            assert unchanged["basePresent"] and unchanged["headPresent"], name
            assert (unchanged["added"], unchanged["removed"], unchanged["changed"],
                    unchanged["findings"]) == ([], [], [], []), name


def test_bad_ref_exits_2(repo, capsys):
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "no-such-branch")
    assert code == 2
    assert "unknown git ref 'no-such-branch'" in err
    code, _, err = run(repo, capsys, "cw-demo-h100", "--base", "--all")
    assert code == 2


def test_not_a_git_repository_exits_2(workspace_copy, capsys):
    code, _, err = run(workspace_copy, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 2 and "not inside a git repository" in err


def test_base_that_does_not_plan_exits_2_and_cleans_up(repo, capsys):
    edit(repo / "clusters" / "cw-demo-h100.yaml", "port: 10000", "port: not-a-port")
    commit(repo, "broken config")
    git(repo, "revert", "--no-edit", "HEAD")
    code, _, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD~1")
    assert code == 2
    assert "planning at HEAD~1" in err and "port" in err
    assert worktrees(repo) == [f"worktree {repo.resolve()}"]


def test_unknown_cluster_and_argument_errors(repo, capsys):
    code, _, err = run(repo, capsys, "no-such-cluster", "--base", "HEAD")
    assert code == 2 and "unknown cluster 'no-such-cluster'" in err
    assert run(repo, capsys, "cw-demo-h100")[0] == 0      # neither: the release branch is the base
    assert run(repo, capsys, "--all", "cw-demo-h100", "--base", "HEAD")[0] == 2
    assert run(repo, capsys, "--base", "HEAD", "--state", "x.json")[0] == 2


# --- against state files (no git, no child process) ----------------------------------------


def test_state_export_clean_then_address_replace(workspace_copy, capsys):
    export = STATE / "gcp-demo.export.json"
    code, doc = run_json(workspace_copy, capsys, "--state", str(export))
    assert code == 0
    (stack,) = doc["stacks"]
    assert doc["base"] == {"kind": "state", "file": str(export)}
    assert stack["stack"] == "gcp-demo" and stack["findings"] == []
    assert not any(c["type"] == "gcp:compute/address:Address" for c in stack["changed"])
    edit(workspace_copy / "clusters" / "gcp-demo.yaml", "address: 34.16.10.21", "address: 34.16.10.99")
    code, doc = run_json(workspace_copy, capsys, "gcp-demo", "--state", str(export))
    assert code == 3
    assert findings(doc) == [("gcp-demo", "replace", "log-relay", "address")]


def test_state_checkpoint_harmless_and_removed(workspace_copy, capsys):
    ckpt = STATE / "cw-demo-h100.checkpoint.json"
    cfg = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    # the state was recorded before the example pinned its pools and under an older flavor
    # layout: the CPU pool's envelope shrinks 4 → 2 and the queue's GPU quota moves from flavor
    # cwdemo-gpu to cwdemo-h100-flavor — capacity cuts the strict default policy blocks
    code, out, err = run(workspace_copy, capsys, "--state", str(ckpt))
    assert code == 3
    assert "DESTRUCTIVE shrink NodePool cwdemo-cpu-general: spec.maxNodes 4 → 2" in out
    assert "    capacity: maxNodes 4 → 2: −2 nodes, no GPUs" in out
    assert ('DESTRUCTIVE shrink ClusterQueue training-cq: spec.resourceGroups[*].flavors'
            '[name="cwdemo-gpu"].nvidia.com/gpu 256 → 0') in out
    # a lab that only wants to hear of cuts says so in [guard.capacity]
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + '\n[guard.capacity]\nblock = []\nwarn = '
                    '["kubernetes:compute.coreweave.com/v1alpha1:NodePool", '
                    '"kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"]\n')
    # the unchanged gd-8xh100ib-i128 pool keeps its 8 GPUs per node, so no GPU change is said
    code, out, err = run(workspace_copy, capsys, "--state", str(ckpt))
    assert code == 0, err
    # the state was recorded before the example pinned its pools (Kueue's TAS uses only
    # existing nodes): the CPU pool's envelope shrinks to its warm 2, the H100 pool warms all 32
    assert "capacity cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 32 → 32 nodes (warm 4 → 32)" in out
    edit(cfg, "max_slices: 32", "max_slices: 40")
    edit(cfg, "buffer_slices: 32 ", "buffer_slices: 40 ")
    code, out, err = run(workspace_copy, capsys, "--state", str(ckpt))
    assert code == 0, err
    assert "spec.maxNodes: 32 → 40" in out
    assert ("capacity cw-demo-h100: pool cpu-general 4 → 2 nodes; pool h100 32 → 40 nodes (warm 4 → 40), "
            "+64 GPUs; GPU quota 256 → 320") in out
    text = cfg.read_text()
    # the GPU pool removed (the CPU pool is the controller's: validate refuses its removal)
    cfg.write_text(text[:text.index("  h100:")] + text[text.index("provisioning:"):])
    code, out, err = run(workspace_copy, capsys, "cw-demo-h100", "--state", str(ckpt))
    assert code == 3
    (entry,) = [ln for ln in out.splitlines() if "DESTRUCTIVE" in ln]
    # one line per entry: op, kind, name, rule — the URN only in what to do, once
    assert entry.startswith("  DESTRUCTIVE delete NodePool cwdemo-h100: ") and "urn:" not in entry
    (todo,) = [ln for ln in out.splitlines() if "to do:" in ln]
    assert todo.count("urn:pulumi:cw-demo-h100::clusterstack::") == 1 and "::cwdemo-h100'" in todo
    assert "1 destructive change(s)" in err


def test_state_protect_dropped(workspace_copy, capsys, tmp_path):
    doc = json.loads((STATE / "cw-demo-h100.checkpoint.json").read_text())
    traefik = next(r for r in doc["checkpoint"]["latest"]["resources"]
                   if r["urn"].endswith("kubernetes:helm.sh/v3:Release::traefik"))
    traefik["protect"] = True
    state = tmp_path / "state.json"
    state.write_text(json.dumps(doc, indent=4))
    code, doc = run_json(workspace_copy, capsys, "--state", str(state))
    assert code == 3
    # besides the capacity cuts of the older state (test_state_checkpoint_harmless_and_removed)
    assert [f for f in findings(doc) if f[1] != "shrink"] == [("cw-demo-h100", "unprotect", "traefik", "protect")]


def test_state_mismatches_exit_2(workspace_copy, capsys):
    export = str(STATE / "gcp-demo.export.json")
    code, _, err = run(workspace_copy, capsys, "cw-demo-h100", "--state", export)
    assert code == 2 and "is of stack 'gcp-demo'" in err
    code, _, err = run(workspace_copy, capsys, "--all", "--state", export)
    assert code == 2
    code, _, err = run(workspace_copy, capsys, "--state", str(workspace_copy / "nope.json"))
    assert code == 2 and "state file not found" in err


# --- the child entry point ------------------------------------------------------------------


def test_plan_module_entry_point(workspace_copy, capsys):
    from clusterstack.plan import loads
    from clusterstack.plan.__main__ import main as plan_main

    assert plan_main(["--root", str(workspace_copy), "--skip-missing", "gcp-demo", "nope"]) == 0
    (p,) = loads(capsys.readouterr().out)
    assert p.stack == "gcp-demo" and p.counts_by_type()["gcp:compute/address:Address"] == 2
    assert plan_main(["--root", str(workspace_copy), "nope"]) == 2
    assert "error:" in capsys.readouterr().err


WEAKEN = ('\n[guard]\nforbid_replace = []\nforbid_delete = []\nprotected_state = false\n'
          f'[guard.replace_properties]\n"{NODEPOOL}" = ["metadata.name"]\n')


def test_a_guard_weakened_in_the_same_change_does_not_hide_the_replace(repo, capsys):
    """The working tree switches the guard off and changes an instance type: REF's stricter
    [guard] still classifies the replace, and the weakening is itself destructive (exit 3)."""
    (repo / "clusterstack.toml").write_text((repo / "clusterstack.toml").read_text() + WEAKEN)
    edit(repo / "clusters" / "cw-demo-h100.yaml", "instance_type: gd-8xh100ib-i128",
         "instance_type: gd-8xh100ib-i256")
    code, doc = run_json(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3
    assert findings(doc) == [("cw-demo-h100", "replace", "cwdemo-h100", "spec.instanceType")]
    assert doc["guard_weakened"] == [
        "forbid_replace: cloudflare:index/r2Bucket:R2Bucket removed",
        "forbid_replace: coreweave:index/objectStorageBucket:ObjectStorageBucket removed",
        "forbid_replace: gcp:compute/address:Address removed",
        "forbid_replace: gcp:compute/globalAddress:GlobalAddress removed",
        "forbid_replace: gcp:storage/bucket:Bucket removed",
        f"forbid_replace: {NODEPOOL} removed",
        "forbid_delete: cloudflare:index/r2Bucket:R2Bucket removed",
        "forbid_delete: coreweave:index/objectStorageBucket:ObjectStorageBucket removed",
        "forbid_delete: gcp:storage/bucket:Bucket removed",
        f"forbid_delete: {NODEPOOL} removed",
        "protected_state: turned off",
        f"replace_properties: spec.instanceType of {NODEPOOL} removed",
    ]
    assert doc["destructive"] == 1 + len(doc["guard_weakened"])


def test_a_weakened_guard_alone_is_destructive_and_a_stricter_one_is_not(repo, capsys):
    toml = repo / "clusterstack.toml"
    original = toml.read_text()
    toml.write_text(original + '\n[guard]\nprotected_state = false\n')
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 3
    assert "DESTRUCTIVE [guard] policy weakened against HEAD (clusterstack.toml): " \
           "protected_state: turned off" in " ".join(out.split())
    toml.write_text(original + '\n[guard]\nforbid_delete = ["kubernetes:core/v1:Namespace", '
                    f'"{NODEPOOL}", "gcp:storage/bucket:Bucket", '
                    '"coreweave:index/objectStorageBucket:ObjectStorageBucket", '
                    '"cloudflare:index/r2Bucket:R2Bucket"]\n')
    code, out, err = run(repo, capsys, "cw-demo-h100", "--base", "HEAD")
    assert code == 0, out + err
    assert "weakened" not in out


def test_destructive_hint_does_not_claim_preview_blocks_bucket_changes(repo, capsys):
    edit(repo / "buckets" / "buckets.yaml", "  project: demo-project", "  project: demo-project-2")
    code, out, err = run(repo, capsys, "--project", "buckets", "--base", "HEAD")
    assert code == 3, out + err
    assert "block them too" not in err and "clusterstack guard" in " ".join(err.split())


def test_without_base_the_release_branch_is_the_base(repo, capsys):
    """`diff` needs no --base: [workspace] release_branch (main) is compared, and said once on
    stderr; a lab's repository gets no note about src/clusterstack on every diff."""
    edit(repo / "clusters" / "cw-demo-h100.yaml", "buffer_slices: 2 ", "buffer_slices: 3 ")
    edit(repo / "clusters" / "cw-demo-h100.yaml", "max_slices: 2 ", "max_slices: 3 ")
    code, out, err = run(repo, capsys, "cw-demo-h100")
    assert code == 0, err
    assert "spec.maxNodes: 2 → 3" in out
    assert "comparing with main ([workspace] release_branch" in err
    assert "src/clusterstack" not in err
    code, doc = run_json(repo, capsys, "cw-demo-h100")
    assert doc["base"]["ref"] == "main"
    # a checkout with only the remote-tracking branch (CI): origin/main
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-q", "-b", "topic")
    git(repo, "branch", "-q", "-D", "main")
    code, doc = run_json(repo, capsys, "cw-demo-h100")
    assert code == 0 and doc["base"]["ref"] == "origin/main"


def test_the_exit_3_trailer_names_projects_only_where_they_have_findings(repo, capsys):
    edit(repo / "clusters" / "cw-demo-gb200.yaml", "\n  gb200:", "\n  gb200-nvl:")  # a NodePool renamed
    code, out, err = run(repo, capsys, "--all", "--base", "HEAD")
    assert code == 3
    assert "[projects]" not in err and "clusterstack guard" not in err
    assert "`clusterstack preview`/`up` block them on the cluster stacks" in " ".join(err.split())
