"""``plan --output``: refused before planning when the path is a directory, lies in the clusters
directory or a Pulumi project's directory, or is a file of the repository that is not a plan
(a reviewed config would be overwritten silently)."""

from __future__ import annotations

import os

import pytest

from helpers import edit, shown
from clusterstack.cli import main


def plan(root, *argv):
    return main(["--root", str(root), "plan", *argv])


@pytest.mark.parametrize("rel,says", [
    ("clusters/gcp-demo.yaml", "into the clusters directory"),
    ("clusters/new-cluster.yaml", "into the clusters directory"),     # would become a cluster
    # the cluster project by its Pulumi name (clusterstack.toml project_name = infra/Pulumi.yaml
    # name), never by its handle 'clusters'; the others by their [projects] table
    ("infra/Pulumi.gcp-demo.yaml", "into the directory of Pulumi project 'clusterstack' (infra/)"),
    ("buckets/plan.json", "into the directory of project [projects.buckets] (buckets/)"),
    ("clusterstack.toml", "not a clusterstack plan"),
])
def test_a_reviewed_file_is_never_the_output(workspace_copy, capsys, rel, says):
    target = workspace_copy / rel
    before = target.read_bytes() if target.exists() else None
    # a broken cluster file: if planning ran, its error would show — the output is checked first
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    assert plan(workspace_copy, "--all", "-o", str(target)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {shown(target)}: cannot write the plan") and says in err, err
    assert "manager_memory_limit" not in err and "Traceback" not in err
    assert (target.read_bytes() if target.exists() else None) == before


def test_a_symlink_to_a_reviewed_file_is_refused(workspace_copy, tmp_path, capsys):
    link = tmp_path / "innocent.json"
    link.symlink_to(workspace_copy / "clusters" / "gcp-demo.yaml")
    before = (workspace_copy / "clusters" / "gcp-demo.yaml").read_bytes()
    assert plan(workspace_copy, "gcp-demo", "-o", str(link)) == 2
    assert "clusters directory" in capsys.readouterr().err
    assert (workspace_copy / "clusters" / "gcp-demo.yaml").read_bytes() == before


def test_a_directory_is_refused_before_planning(workspace_copy, tmp_path, capsys):
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    assert plan(workspace_copy, "--all", "-o", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {shown(tmp_path)}: cannot write the plan: this is a directory — pass a file path, "
                   "e.g. -o plan.json\n")


def test_a_previous_plan_in_the_repository_is_replaced(workspace_copy, capsys):
    target = workspace_copy / "plan.json"
    assert plan(workspace_copy, "gcp-demo", "--json", "-o", str(target)) == 0
    first = target.read_bytes()
    assert plan(workspace_copy, "gcp-demo", "--json", "-o", str(target)) == 0   # a plan: replaced
    assert target.read_bytes() == first
    notes = workspace_copy / "notes.json"
    notes.write_text('{"mine": true}\n')
    assert plan(workspace_copy, "gcp-demo", "-o", str(notes)) == 2
    assert notes.read_text() == '{"mine": true}\n'
    assert sorted(os.listdir(workspace_copy)).count("plan.json") == 1
