"""`ci stacks` / `ci rollouts`: which stacks and services a change affects, from real git
histories in temporary repositories (the example workspace committed on `main`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import commit_all, edit, git, make_repo
from clusterstack.adapters.git import Git
from clusterstack.ci.discover import affected_services, affected_stacks
from clusterstack.cli import main
from clusterstack.workspace import Workspace

CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]
EVERY = CLUSTERS + ["buckets/lab", "github/repo"]


def changed_files(root: Path, ref: str) -> tuple[str, ...]:
    return Git(root).changed_files(ref)


def merge_base(root: Path, ref: str) -> str:
    return Git(root).merge_base(ref)


def stacks_since(root: Path, ref: str) -> list[str]:
    ws = Workspace.load(root)
    return [t.id for t, _ in affected_stacks(ws, changed_files(root, ref)).stacks]


def matrix_since(root: Path, ref: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["--root", str(root), "ci", "stacks", "--changed-since", ref, "--json"]) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == 1, "one line: it goes into $GITHUB_OUTPUT"
    return json.loads(text)


@pytest.fixture
def repo(workspace_copy: Path) -> Path:
    return make_repo(workspace_copy, iam=True)


def test_a_cluster_config_affects_its_own_stack_only(repo, capsys):
    edit(repo / "clusters/cw-demo-h100.yaml", "max_pending_jobs: 500", "max_pending_jobs: 600")
    commit_all(repo, "h100 scheduler setting")
    assert stacks_since(repo, "HEAD~1") == ["cw-demo-h100"]
    m = matrix_since(repo, "HEAD~1", capsys)
    assert m == {"include": [{"project": "clusters", "slug": "cw-demo-h100", "stack": "cw-demo-h100"}]}


def test_a_cluster_listed_in_a_gclb_also_affects_the_listing_stack(repo):
    # gcp-demo's gclb lists gcp-tpu-b's controller: its zone/instance/port come from that file
    edit(repo / "clusters/gcp-tpu-b.yaml", "port: 10000", "port: 10001")
    commit_all(repo, "tpu-b controller port")
    assert stacks_since(repo, "HEAD~1") == ["gcp-demo", "gcp-tpu-b"]
    ws = Workspace.load(repo)
    [(_, demo)] = [(t, a) for t, a in affected_stacks(ws, ["clusters/gcp-tpu-b.yaml"]).stacks if t.id == "gcp-demo"]
    assert demo.reasons == ("a cluster its gclb lists (that file supplies the rest): clusters/gcp-tpu-b.yaml",)


def test_a_reference_is_followed_even_when_the_listing_config_is_invalid(repo):
    # gcp-demo does not validate (an unknown key under provisioning.gcp); its gclb still names
    # gcp-tpu-a, so a change to gcp-tpu-a must still preview gcp-demo (which then shows the error)
    edit(repo / "clusters/gcp-demo.yaml", "    project: demo-project\n", "    project: demo-project\n    bogus: 1\n")
    commit_all(repo, "broken gcp-demo")
    edit(repo / "clusters/gcp-tpu-a.yaml", "name: gcp-tpu-a", "name: gcp-tpu-a  # touched")
    commit_all(repo, "touch tpu-a")
    assert stacks_since(repo, "HEAD~1") == ["gcp-demo", "gcp-tpu-a"]


def _share(repo: Path, cluster: str, name: str) -> None:
    """Move ``clusters/<cluster>.yaml`` to ``shared_cfg/<name>.yaml``, link it back, commit."""
    (repo / "shared_cfg").mkdir()
    (repo / f"clusters/{cluster}.yaml").rename(repo / f"shared_cfg/{name}.yaml")
    (repo / f"clusters/{cluster}.yaml").symlink_to(f"../shared_cfg/{name}.yaml")
    commit_all(repo, f"{name} config shared")


def test_a_cluster_file_that_is_a_symlink_follows_a_change_of_its_target(repo, capsys):
    _share(repo, "cw-demo-gb200", "gb200")
    edit(repo / "shared_cfg/gb200.yaml", "name: cw-demo-gb200", "name: cw-demo-gb200  # touched")
    commit_all(repo, "edit the shared file")
    assert stacks_since(repo, "HEAD~1") == ["cw-demo-gb200"]
    [(_, gb200)] = affected_stacks(Workspace.load(repo), changed_files(repo, "HEAD~1")).stacks
    assert gb200.reasons == ("its cluster config: shared_cfg/gb200.yaml (via clusters/cw-demo-gb200.yaml)",)
    assert matrix_since(repo, "HEAD~1", capsys)["include"][0]["stack"] == "cw-demo-gb200"
    # the link itself re-pointed is a change of the stack's input as well
    (repo / "shared_cfg/other.yaml").write_text((repo / "shared_cfg/gb200.yaml").read_text())
    (repo / "clusters/cw-demo-gb200.yaml").unlink()
    (repo / "clusters/cw-demo-gb200.yaml").symlink_to("../shared_cfg/other.yaml")
    commit_all(repo, "re-point")
    assert stacks_since(repo, "HEAD~1") == ["cw-demo-gb200"]


def test_a_symlinked_directory_in_a_program_follows_changes_under_its_target(repo):
    (repo / "lib/common").mkdir(parents=True)
    (repo / "lib/common/helpers.py").write_text("X = 1\n")
    (repo / "buckets/common").symlink_to("../lib/common")
    commit_all(repo, "buckets shares lib/common")
    (repo / "lib/common/helpers.py").write_text("X = 2\n")
    commit_all(repo, "edit the shared helper")
    assert stacks_since(repo, "HEAD~1") == ["buckets/lab"]


def test_a_file_no_input_links_to_still_affects_nothing(repo):
    (repo / "shared_cfg").mkdir()
    (repo / "shared_cfg/unused.yaml").write_text("a: 1\n")
    commit_all(repo, "unused")
    assert stacks_since(repo, "HEAD~1") == []


def test_the_package_and_the_lock_affect_every_stack_of_every_project(repo):
    (repo / "src/clusterstack").mkdir(parents=True)
    (repo / "src/clusterstack/derive.py").write_text("X = 1\n")
    commit_all(repo, "package change")
    assert stacks_since(repo, "HEAD~1") == EVERY
    (repo / "uv.lock").write_text("version = 1\n")
    commit_all(repo, "lock")
    assert stacks_since(repo, "HEAD~1") == EVERY
    edit(repo / "clusterstack.toml", 'release_branch = "main"', 'release_branch = "main"  # reviewed')
    commit_all(repo, "workspace file")
    assert stacks_since(repo, "HEAD~1") == EVERY


def test_the_cluster_project_program_affects_the_cluster_stacks_and_a_pointer_only_its_own(repo):
    (repo / "infra/__main__.py").write_text((repo / "infra/__main__.py").read_text() + "\n# touched\n")
    commit_all(repo, "program")
    assert stacks_since(repo, "HEAD~1") == CLUSTERS
    (repo / "infra/Pulumi.gcp-tpu-b.yaml").write_text((repo / "infra/Pulumi.gcp-tpu-b.yaml").read_text() + "# note\n")
    commit_all(repo, "pointer")
    assert stacks_since(repo, "HEAD~1") == ["gcp-tpu-b"]


def test_the_iam_file_affects_the_iam_stack(repo):
    (repo / "iam/iam.yaml").write_text((repo / "iam/iam.yaml").read_text() + "# reviewed\n")
    commit_all(repo, "iam")
    ws = Workspace.load(repo)
    assert ws.iam.stack == "gcp-demo"
    assert stacks_since(repo, "HEAD~1") == ["gcp-demo"]


def test_project_directories_affect_their_own_stacks(repo):
    (repo / "buckets/buckets.yaml").write_text((repo / "buckets/buckets.yaml").read_text() + "# reviewed\n")
    commit_all(repo, "buckets")
    assert stacks_since(repo, "HEAD~1") == ["buckets/lab"]
    (repo / "github/Pulumi.repo.yaml").write_text((repo / "github/Pulumi.repo.yaml").read_text() + "# x\n")
    commit_all(repo, "github stack file")
    assert stacks_since(repo, "HEAD~1") == ["github/repo"]


def test_unrelated_files_affect_nothing_and_give_an_empty_matrix(repo, capsys):
    (repo / "docs").mkdir()
    (repo / "docs/notes.md").write_text("# notes\n")
    commit_all(repo, "docs")
    assert matrix_since(repo, "HEAD~1", capsys) == {"include": []}


def test_changes_are_measured_from_the_merge_base(repo):
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "feature")
    edit(repo / "clusters/cw-demo-gb200.yaml", "name: cw-demo-gb200", "name: cw-demo-gb200  # feature")
    commit_all(repo, "feature work")
    git(repo, "switch", "-q", "main")
    edit(repo / "clusters/cw-demo-h100.yaml", "max_pending_jobs: 500", "max_pending_jobs: 700")
    commit_all(repo, "main moved on")
    git(repo, "switch", "-q", "feature")
    # the branch is behind main: main's newer h100 change is not the PR's
    assert merge_base(repo, "main") == base
    assert stacks_since(repo, "main") == ["cw-demo-gb200"]


def test_uncommitted_and_untracked_changes_count(repo):
    edit(repo / "clusters/gcp-tpu-a.yaml", "name: gcp-tpu-a", "name: gcp-tpu-a  # wip")
    (repo / "buckets/extra.yaml").write_text("x: 1\n")  # untracked, not ignored
    assert stacks_since(repo, "HEAD") == ["gcp-demo", "gcp-tpu-a", "buckets/lab"]


def test_a_deleted_cluster_is_not_previewed_and_is_reported(repo, capsys):
    (repo / "clusters/gcp-tpu-b.yaml").unlink()
    (repo / "infra/Pulumi.gcp-tpu-b.yaml").unlink()
    lines = (repo / "clusters/gcp-demo.yaml").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip() == "- cluster: gcp-tpu-b")
    (repo / "clusters/gcp-demo.yaml").write_text("".join(lines[:at] + lines[at + 3:]))
    commit_all(repo, "retire tpu-b")
    ws = Workspace.load(repo)
    res = affected_stacks(ws, changed_files(repo, "HEAD~1"))
    assert [t.id for t, _ in res.stacks] == ["gcp-demo"]
    assert any("gcp-tpu-b" in g for g in res.gone)
    capsys.readouterr()
    assert main(["--root", str(repo), "ci", "stacks", "--changed-since", "HEAD~1"]) == 0
    captured = capsys.readouterr()
    assert "gcp-demo" in captured.out and "destroy it deliberately" in captured.err


def test_an_unknown_ref_is_a_user_error(repo, capsys):
    assert main(["--root", str(repo), "ci", "stacks", "--changed-since", "no-such-branch"]) == 2
    assert "unknown git ref 'no-such-branch'" in capsys.readouterr().err


def test_all_lists_every_stack(repo, capsys):
    capsys.readouterr()
    assert main(["--root", str(repo), "ci", "stacks", "--all", "--json"]) == 0
    assert [e["stack"] for e in json.loads(capsys.readouterr().out)["include"]] == EVERY
    assert main(["--root", str(repo), "ci", "stacks"]) == 2


# --- services ---------------------------------------------------------------------------------------

@pytest.fixture
def srepo(workspace_copy: Path) -> Path:
    return make_repo(workspace_copy, services=True)


def services_since(root: Path, ref: str) -> list[str]:
    ws = Workspace.load(root)
    return [c.service for c in affected_services(ws, changed_files(root, ref), merge_base(root, ref))]


def test_a_service_project_change_rolls_out_that_service(srepo, capsys):
    (srepo / "services/echo/__main__.py").write_text((srepo / "services/echo/__main__.py").read_text() + "# x\n")
    commit_all(srepo, "echo")
    assert services_since(srepo, "HEAD~1") == ["echo"]
    capsys.readouterr()
    assert main(["--root", str(srepo), "ci", "rollouts", "--changed-since", "HEAD~1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "include": [{"kind": "cloud-run", "service": "echo", "stack": "prod"}]}


def test_only_the_edited_registry_entry_rolls_out(srepo):
    edit(srepo / "services.yaml", "timeout_seconds: 600", "timeout_seconds: 900")
    commit_all(srepo, "logrelay health timeout")
    assert services_since(srepo, "HEAD~1") == ["logrelay"]


def test_a_kubernetes_service_follows_the_cluster_it_runs_on(srepo):
    edit(srepo / "clusters/cw-demo-h100.yaml", "max_pending_jobs: 500", "max_pending_jobs: 600")
    commit_all(srepo, "h100")
    assert services_since(srepo, "HEAD~1") == ["logrelay"]
    edit(srepo / "clusters/cw-demo-gb200.yaml", "name: cw-demo-gb200", "name: cw-demo-gb200  # x")
    commit_all(srepo, "gb200")
    assert services_since(srepo, "HEAD~1") == []


def test_a_kubernetes_service_follows_its_cluster_file_through_a_symlink(srepo):
    _share(srepo, "cw-demo-h100", "h100")
    edit(srepo / "shared_cfg/h100.yaml", "max_pending_jobs: 500", "max_pending_jobs: 600")
    commit_all(srepo, "h100")
    assert services_since(srepo, "HEAD~1") == ["logrelay"]


def test_the_package_rolls_out_every_service(srepo):
    (srepo / "uv.lock").write_text("version = 1\n")
    commit_all(srepo, "lock")
    assert services_since(srepo, "HEAD~1") == ["echo", "logrelay"]


def test_no_registry_no_services(repo):
    (repo / "uv.lock").write_text("version = 1\n")
    commit_all(repo, "lock")
    assert services_since(repo, "HEAD~1") == []


@pytest.mark.parametrize("name, says", [
    ("Pulumi.x <b>@octocat.yaml", "'x <b>@octocat' is not"),
    ("Pulumi..yaml", "'' is not"),
])
def test_a_stack_file_whose_name_is_no_stack_name_never_reaches_the_matrix(tmp_path, capsys, name, says):
    repo = make_repo(tmp_path / "ws")
    (repo / "buckets" / name).write_text("config: {}\n")
    capsys.readouterr()
    assert main(["--root", str(repo), "ci", "stacks", "--all", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"error: buckets/{name}: {says}" in captured.err


def test_a_symlinked_project_stack_file_never_reaches_the_matrix(tmp_path, capsys):
    repo = make_repo(tmp_path / "ws")
    (repo / "buckets" / "Pulumi.elsewhere.yaml").symlink_to(repo / "buckets" / "Pulumi.lab.yaml")
    capsys.readouterr()
    assert main(["--root", str(repo), "ci", "stacks", "--all", "--json"]) == 2
    assert "error: buckets/Pulumi.elsewhere.yaml: the stack file is a symlink" in capsys.readouterr().err
