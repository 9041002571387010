"""``clusterstack stack rename`` (clusterstack.flows.rename): the state, the stack file and the
cluster file renamed together, refusals before any change, and the review — a renamed cluster
reads as one stack renamed, never as its NodePools deleted ("restore it")."""

from __future__ import annotations

import json

import pytest

from fakes.clients import bound_engine, fake_clients
from fakes.pulumi import FakeEngine, FakeStack, np_step
from helpers import commit_all, edit, git, line_of, make_repo, shown
from clusterstack.cli import main
from clusterstack.engine.automation import AutomationEngine
from clusterstack.flows.rename import rename_stack
from clusterstack.pulumi.urn import parse_urn
from clusterstack.workspace import Workspace

OLD, NEW = "cw-demo-gb200", "cw-gb200-west"


@pytest.fixture
def repo(tmp_path):
    """A git repository of the shipped workspace (with services.yaml: logrelay names
    cw-demo-h100), one commit on main."""
    root = make_repo(tmp_path / "lab", services=True)
    return root


def _engine(*stacks: str) -> FakeEngine:
    return FakeEngine({s: FakeStack(steps=(np_step("same", s, "cwgb-gb200"),)) for s in stacks})


def _rename(root, *argv, engine=None):
    clients = fake_clients(engine=bound_engine(engine or _engine(OLD)))
    return main(["--root", str(root), "stack", "rename", *argv], clients=clients)


def test_rename_moves_the_state_then_the_files_changing_only_the_names(repo, capsys):
    before = (repo / "clusters" / f"{OLD}.yaml").read_text()
    eng = _engine(OLD)
    assert _rename(repo, OLD, NEW, engine=eng) == 0
    out = capsys.readouterr().out
    # the state: Pulumi's rename — the stack under its new name, every URN's stack part new
    assert list(eng.stacks) == [NEW] and ("rename_stack", OLD, {"new": NEW}) in eng.calls
    assert {parse_urn(s.urn).stack for s in eng.stacks[NEW].steps} == {NEW}
    # the files: the cluster file byte for byte but its name line, the pointer names NEW
    after = (repo / "clusters" / f"{NEW}.yaml").read_text()
    assert not (repo / "clusters" / f"{OLD}.yaml").exists()
    assert after == before.replace(f"name: {OLD}\n", f"name: {NEW}\n", 1) and after != before
    assert not (repo / "infra" / f"Pulumi.{OLD}.yaml").exists()
    assert f"clusterstack:cluster: {NEW}" in (repo / "infra" / f"Pulumi.{NEW}.yaml").read_text()
    assert f"stack {OLD} renamed to {NEW}" in out and f"clusters/{OLD}.yaml → clusters/{NEW}.yaml" in out
    assert main(["--root", str(repo), "validate"]) == 0


def test_the_review_of_a_rename_is_one_stack_renamed_not_a_nodepool_delete(repo, capsys):
    """`diff` pairs the stack gone and the stack new, and compares them as `pulumi stack
    rename` leaves the state: nothing destructive, no "restore it" (before: DESTRUCTIVE delete
    of every NodePool)."""
    assert _rename(repo, OLD, NEW, "--files-only") == 0
    capsys.readouterr()
    assert main(["--root", str(repo), "diff", "--all", "--base", "main", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (d,) = [s for s in doc["stacks"] if s["stack"] == NEW]
    assert d["renamedFrom"] == OLD and d["basePresent"] and d["findings"] == []
    assert d["removed"] == [] and d["added"] == []
    assert not any(s["stack"] == OLD for s in doc["stacks"]) and doc["destructive"] == 0
    assert main(["--root", str(repo), "diff", "--all", "--base", "main"]) == 0
    out = capsys.readouterr().out
    assert f"(renamed from {OLD}" in out and "DESTRUCTIVE" not in out and "restore it" not in out


@pytest.mark.parametrize("asked", [NEW, OLD])
def test_diff_of_either_name_alone_pairs_the_rename_as_all_does(repo, capsys, asked):
    """`diff NEW` showed a new stack (+30) and `diff OLD` a gone one with every NodePool
    deleted: the pairing was made only under `--all`. Either name alone now reviews the one
    stack renamed, exactly as `diff --all` shows it."""
    assert _rename(repo, OLD, NEW, "--files-only") == 0
    capsys.readouterr()
    assert main(["--root", str(repo), "diff", "--all", "--base", "main", "--json"]) == 0
    (whole,) = [s for s in json.loads(capsys.readouterr().out)["stacks"] if s["stack"] == NEW]
    assert main(["--root", str(repo), "diff", asked, "--base", "main", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stacks"] == [whole] and whole["renamedFrom"] == OLD and doc["destructive"] == 0
    assert main(["--root", str(repo), "diff", asked, "--base", "main"]) == 0
    out = capsys.readouterr().out
    assert f"(renamed from {OLD}" in out and "DESTRUCTIVE" not in out and "new: not in" not in out


def test_diff_of_a_new_cluster_beside_an_unrelated_removed_one_pairs_nothing(repo, capsys):
    # a new cluster is no rename of a removed one it shares nothing with: still new, and the
    # removed one is not shown (it was not asked for)
    (repo / "clusters" / "cw-demo-gb200.yaml").unlink()
    (repo / "infra" / "Pulumi.cw-demo-gb200.yaml").unlink()
    assert main(["--root", str(repo), "cluster", "new", "cw-b200", "--provider", "coreweave",
                 "--region", "US-EAST-13A", "--instance-type", "b200-8x", "--nodes", "4"]) == 0
    capsys.readouterr()
    assert main(["--root", str(repo), "diff", "cw-b200", "--base", "main", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(s["stack"], s["basePresent"], s.get("renamedFrom")) for s in doc["stacks"]] == [
        ("cw-b200", False, None)]


def test_a_name_derived_from_the_cluster_name_is_shown_as_the_replace_it_is(repo, capsys):
    """Pulumi's own warning: a resource named after the stack is replaced by the next `up`.
    The review shows it — here the federation DNS record, named by a hostname holding the
    cluster's name — as the destructive change it is, and only it."""
    h100 = repo / "clusters" / "cw-demo-h100.yaml"
    edit(repo / "services.yaml", "kubernetes: {cluster: cw-demo-h100,", "kubernetes: {cluster: cw-h100-east,")
    edit(repo / "services" / "logrelay" / "Pulumi.cw-demo-h100.yaml", "logrelay:cluster: cw-demo-h100",
         "logrelay:cluster: cw-h100-east")
    assert _rename(repo, "cw-demo-h100", "cw-h100-east", "--files-only") == 0
    edit(repo / "clusters" / "cw-h100-east.yaml", "hostname: ctl-cw-demo-h100.example.org",
         "hostname: ctl-cw-h100-east.example.org")
    assert not h100.exists()
    capsys.readouterr()
    assert main(["--root", str(repo), "diff", "--all", "--base", "main", "--json"]) == 3
    (d,) = [s for s in json.loads(capsys.readouterr().out)["stacks"] if s["findings"]]
    assert d["renamedFrom"] == "cw-demo-h100"
    # the record is deleted (a new name is a new record): reported as the rename it looks like
    assert [(f["kind"], f["urn"].rsplit("::", 1)[1], f["new"].rsplit("::", 1)[1]) for f in d["findings"]] == [
        ("renamed", "ctl-cw-demo-h100.example.org", "ctl-cw-h100-east.example.org")]


def test_files_only_then_the_state_after_the_merge(repo, capsys):
    eng = _engine(OLD)
    assert _rename(repo, OLD, NEW, "--files-only", engine=eng) == 0
    assert eng.calls == [] or all(c[0] == "bind" for c in eng.calls)   # the backend untouched
    assert "--files-only: the state keeps the name" in capsys.readouterr().out
    commit_all(repo, "rename the cluster")
    # after the merge: the same command renames the state; the files are done already
    assert _rename(repo, OLD, NEW, engine=eng) == 0
    out = capsys.readouterr().out
    assert list(eng.stacks) == [NEW] and f"stack {OLD} renamed to {NEW}" in out
    assert "clusters/" not in out and git(repo, "status", "--porcelain") == ""
    # once more: nothing left to do
    assert _rename(repo, OLD, NEW, engine=eng) == 0
    assert "already" in capsys.readouterr().out and git(repo, "status", "--porcelain") == ""


def _unchanged(repo) -> str:
    return git(repo, "status", "--porcelain")


def test_refusals_change_nothing(repo, capsys):
    eng = _engine(OLD, NEW)
    assert _rename(repo, OLD, NEW, engine=eng) == 2                      # both in the backend
    assert "has both stack" in capsys.readouterr().err and _unchanged(repo) == ""
    assert list(eng.stacks) == [OLD, NEW]
    assert _rename(repo, OLD, "cw-demo-h100") == 2                       # NEW taken
    assert "'cw-demo-h100' is taken: clusters/cw-demo-h100.yaml exists" in capsys.readouterr().err
    assert _rename(repo, "no-such", NEW) == 2
    assert "unknown cluster 'no-such'" in capsys.readouterr().err
    assert _rename(repo, OLD, "../x") == 2 and _rename(repo, OLD, OLD) == 2
    capsys.readouterr()
    assert _unchanged(repo) == ""
    # a Pulumi stack name that is no cluster name (the file's `name:` is a DNS label): refused
    # before the backend or any file is touched, with or without --files-only
    for argv in (("--files-only",), ()):
        eng = _engine(OLD)
        assert _rename(repo, OLD, "BAD_NAME", *argv, engine=eng) == 2
        assert "cluster name 'BAD_NAME' is not lowercase letters" in capsys.readouterr().err
        assert list(eng.stacks) == [OLD] and _unchanged(repo) == ""


def test_a_cluster_other_files_name_is_refused_at_each_reference(repo, capsys):
    """logrelay (services.yaml) runs on cw-demo-h100 and its stack config names it: renaming
    the cluster alone would leave them pointing at nothing — refused at each line."""
    eng = _engine("cw-demo-h100")
    assert _rename(repo, "cw-demo-h100", "cw-h100-east", engine=eng) == 2
    err = capsys.readouterr().err
    services = (repo / "services.yaml").read_text()
    line = line_of(services, "kubernetes: {cluster: cw-demo-h100")
    assert (f"error: services.yaml:{line}: services.logrelay.kubernetes.cluster: names cluster "
            "'cw-demo-h100' — change it to the new name in the same change") in err
    assert "services/logrelay/Pulumi.cw-demo-h100.yaml:4: config.logrelay:cluster" in err
    assert list(eng.stacks) == ["cw-demo-h100"] and _unchanged(repo) == ""


def test_the_adapter_runs_pulumi_stack_rename_and_pulumi_moves_the_stack_file(workspace_copy, tmp_path,
                                                                             monkeypatch):
    """The Automation API's Stack.rename against the stand-in CLI: `pulumi stack rename NEW
    --stack OLD` in the project directory, which moves Pulumi.OLD.yaml (stack_rename.go)."""
    from fakes.pulumi import FakeCli

    cli = FakeCli(tmp_path, monkeypatch)
    # the SDK reads the renamed stack's last update afterwards (Stack.rename → info()): none yet
    cli.scenario(stacks=(OLD,), stack_history={"stdout": "[]"})
    ws = Workspace.load(workspace_copy)
    AutomationEngine(ws).rename_stack(OLD, NEW)
    argv = cli.call("rename")["argv"]
    assert argv[argv.index("rename") - 1:argv.index("rename") + 2] == ["stack", "rename", NEW]
    assert argv[argv.index("--stack") + 1] == OLD
    assert (ws.project_dir / f"Pulumi.{NEW}.yaml").exists()
    assert not (ws.project_dir / f"Pulumi.{OLD}.yaml").exists()
