"""The bucket and GitHub projects in ``clusterstack diff``: temporary git repositories with real
commits (the base side planned in a worktree by a child interpreter), and a state export of the
bucket stack in Pulumi's ``stack export`` format."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.plan import plan_stack
from helpers import edit, git

BUCKETS = ("clusterstack-buckets", "lab")
GITHUB = ("clusterstack-github", "repo")



def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)



@pytest.fixture
def repo(workspace_copy: Path) -> Path:
    git(workspace_copy, "init", "-q", "-b", "main")
    commit(workspace_copy, "base")
    return workspace_copy


def run_json(root: Path, capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["--root", str(root), "diff", *args, "--json"])
    cap = capsys.readouterr()
    return code, json.loads(cap.out) if cap.out else {}, cap.err


def stacks(doc: dict) -> dict[tuple[str, str], dict]:
    return {(s["project"], s["stack"]): s for s in doc["stacks"]}


def test_diff_all_covers_both_projects_and_flags_bucket_moves(repo, capsys):
    b = repo / "buckets" / "buckets.yaml"
    edit(b, "      location: US-CENTRAL1\n      storage_class: STANDARD",
         "      location: EUROPE-WEST4\n      storage_class: STANDARD")      # forces a new bucket
    text = b.read_text()
    b.write_text(text[:text.index("r2:\n")])                                 # R2 section removed
    edit(repo / "github" / "github.yaml", "required_status_checks: [test, preview-summary]",
         "required_status_checks: [test, preview-summary, lint]")
    commit(repo, "edits")

    code, doc, err = run_json(repo, capsys, "--all", "--base", "HEAD~1")
    assert code == 3, err
    by = stacks(doc)
    assert BUCKETS in by and GITHUB in by and ("clusterstack", "gcp-demo") in by
    kinds = sorted((f["kind"], f["urn"].rsplit("::", 1)[1], f["path"]) for f in by[BUCKETS]["findings"])
    assert ("replace", "demo-lab-training-data", "location") in kinds
    assert ("removed", "demo-lab-datasets", "") in kinds           # the R2 bucket
    gh = by[GITHUB]
    assert gh["findings"] == [] and len(gh["changed"]) == 1
    [prop] = gh["changed"][0]["properties"]
    assert prop["path"] == "rules.requiredStatusChecks.requiredChecks[2]"
    assert prop["new"] == {"context": "lint"}
    assert by[("clusterstack", "cw-demo-h100")]["changed"] == []


def test_diff_one_project(repo, capsys):
    edit(repo / "buckets" / "buckets.yaml", "ttl_days: [7, 30]", "ttl_days: [7, 14, 30]")
    code, doc, err = run_json(repo, capsys, "--project", "buckets", "--base", "HEAD")
    assert code == 0, err
    assert list(stacks(doc)) == [BUCKETS]
    changed = {c["name"] for c in stacks(doc)[BUCKETS]["changed"]}
    # one declaration, every provider's lifecycle changes
    assert {"demo-lab-training-data", "demo-lab-cw-datasets", "demo-lab-datasets"} <= changed
    assert "no destructive change" not in err   # JSON mode prints nothing else


def test_a_project_new_since_the_base(repo, capsys):
    toml = repo / "clusterstack.toml"
    text = toml.read_text()
    toml.write_text(text[:text.index("[projects.github]")])
    commit(repo, "no github project yet")
    toml.write_text(text)
    code, doc, err = run_json(repo, capsys, "--all", "--base", "HEAD")
    assert code == 0, err
    gh = stacks(doc)[GITHUB]
    assert (gh["basePresent"], gh["headPresent"]) == (False, True) and len(gh["added"]) > 3


def test_diff_project_errors(repo, capsys):
    assert main(["--root", str(repo), "diff", "--project", "nope", "--base", "HEAD"]) == 2
    assert "unknown project 'nope'" in capsys.readouterr().err
    assert main(["--root", str(repo), "diff", "--all", "--project", "buckets", "--base", "HEAD"]) == 2
    assert "give --project or --all, not both" in capsys.readouterr().err


def _export(plan, *, extra: list[dict] = ()) -> dict:
    """A `pulumi stack export` document (apitype.UntypedDeployment v3) of what ``plan`` would
    leave in state: inputs = outputs, provider references as ``<urn>::<id>``."""
    resources = []
    for r in plan.resources:
        res = {"urn": r.urn, "custom": r.custom, "type": r.type,
               "inputs": r.inputs, "outputs": r.inputs}
        if r.custom:
            res["id"] = f"{r.name}-id"
        if r.parent:
            res["parent"] = r.parent
        if r.provider:
            res["provider"] = f"{r.provider}::{r.provider.rsplit('::', 1)[1]}-id"
        if r.protect:
            res["protect"] = True
        if r.retain_on_delete:
            res["retainOnDelete"] = True
        resources.append(res)
    return {"version": 3, "deployment": {
        "manifest": {"time": "2025-06-02T09:16:03Z", "magic": "", "version": "v3.171.0"},
        "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:x"}},
        "resources": resources + list(extra)}}


def test_state_export_of_the_bucket_stack(workspace_copy, capsys, tmp_path):
    plan = plan_stack(workspace_copy / "buckets", "lab")
    gcs = next(r for r in plan.resources if r.name == "demo-lab-training-data")
    orphan = {"urn": gcs.urn.replace("demo-lab-training-data", "demo-lab-old-scratch"),
              "custom": True, "id": "demo-lab-old-scratch", "type": gcs.type, "parent": gcs.parent,
              "provider": f"{gcs.provider}::gcp-id", "protect": True, "retainOnDelete": True,
              "inputs": {**gcs.inputs, "name": "demo-lab-old-scratch"},
              "outputs": {**gcs.inputs, "name": "demo-lab-old-scratch"}}
    state = tmp_path / "buckets.export.json"
    state.write_text(json.dumps(_export(plan)))
    code, doc, err = run_json(workspace_copy, capsys, "--state", str(state))
    assert code == 0, err
    assert list(stacks(doc)) == [BUCKETS] and stacks(doc)[BUCKETS]["changed"] == []

    state.write_text(json.dumps(_export(plan, extra=[orphan])))   # deployed, no longer declared
    code, doc, err = run_json(workspace_copy, capsys, "--state", str(state))
    assert code == 3
    assert [(f["kind"], f["urn"]) for f in stacks(doc)[BUCKETS]["findings"]] == [
        ("removed", orphan["urn"])]
