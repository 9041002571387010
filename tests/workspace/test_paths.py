"""Confinement (clusterstack.workspace.paths): every path a reviewed file or a command names
stays inside the repository — symlinks out and dangling links refused, names with path parts
refused before any file is read, the keyset inside the workspace root, and unexpected entries
of the clusters directory reported by validate. Each case: exit 2, the located message,
nothing written."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from clusterstack.cli import main
from helpers import REPO, Repo, edit, iam_workspace, line_of, shown

#: what a reviewed path may not leave (workspace.paths.confined), named as what it is: the
#: workspace root need not be a repository's top
ROOT = "the workspace root (the directory of clusterstack.toml)"
#: the hint of every path that leaves the workspace root: no absolute path
KEEP = f"keep it inside {ROOT}; a reviewed path never leaves it"


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) → a digest: what 'nothing written' compares."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "-> " + str(p.readlink())
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _run(root: Path, capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["--root", str(root), *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture
def ws(workspace_copy: Path) -> Path:
    return workspace_copy.resolve()


def test_a_cluster_file_linked_out_of_the_repository_is_refused(ws, tmp_path, capsys):
    outside = tmp_path / "outside.yaml"
    shutil.copy(ws / "clusters" / "gcp-tpu-a.yaml", outside)
    edit(outside, "name: gcp-tpu-a", "name: evil")
    (ws / "clusters" / "evil.yaml").symlink_to(outside)
    (ws / "infra" / "Pulumi.evil.yaml").write_text("config:\n  clusterstack:cluster: evil\n")
    before = _tree(ws)
    expected = (f"error: {shown(ws / 'clusters/evil.yaml')}: the cluster file is a symlink outside "
                f"{ROOT} ({outside.resolve()}) — {KEEP}\n")
    for argv in (["validate"], ["validate", "evil"], ["plan", "evil"]):
        rc, out, err = _run(ws, capsys, *argv)
        assert (rc, out) == (2, ""), argv
        assert expected in err, argv
    assert _tree(ws) == before


def test_a_dangling_cluster_link_is_named_as_such_not_as_an_unknown_cluster(ws, capsys):
    (ws / "clusters" / "gone.yaml").symlink_to("moved-away.yaml")
    (ws / "infra" / "Pulumi.gone.yaml").write_text("config:\n  clusterstack:cluster: gone\n")
    for argv in (["plan", "gone"], ["validate"]):
        rc, _out, err = _run(ws, capsys, *argv)
        assert rc == 2
        assert err == (f"error: {shown(ws / 'clusters/gone.yaml')}: the cluster file is a symlink to "
                       "moved-away.yaml, which does not exist — replace the link with the file "
                       "itself\n"), argv
        assert "unknown cluster" not in err


@pytest.mark.parametrize("name", ["../iam/iam", "..", "a/b", "/etc/passwd", "x\n"])
def test_a_cluster_name_with_path_parts_is_refused_before_any_file_is_read(ws, capsys, name):
    (ws / "infra" / "Pulumi.gcp-demo.yaml").write_text("config: [broken")  # never read
    for argv in (["plan", name], ["validate", name], ["stack", "init", name]):
        rc, out, err = _run(ws, capsys, *argv)
        assert (rc, out) == (2, ""), argv
        assert err == (f"error: cluster name {name!r} is not a stack name: letters, digits, '-', "
                       "'_' and '.', at most 100 characters — give the cluster's name, not a path "
                       "(clusterstack stacks lists them)\n"), argv


@pytest.mark.parametrize("key, value", [
    ("clusters_dir", "../elsewhere"), ("project_dir", "/srv/infra"), ("clusters_dir", "~/clusters")])
def test_a_directory_of_clusterstack_toml_outside_the_root_is_located(ws, capsys, key, value):
    toml = ws / "clusterstack.toml"
    text = edit(toml, f'{key} = "{"clusters" if key == "clusters_dir" else "infra"}"', f'{key} = "{value}"')
    rc, _out, err = _run(ws, capsys, "validate")
    assert rc == 2
    assert err.startswith(f"error: {shown(toml)}:{line_of(text, f'{key} = ')}: workspace.{key}: {value!r} is "
                          "not a path inside the repository: relative, '/'-separated, without '..' parts")


def test_a_clusters_dir_linked_out_of_the_root_is_located(ws, tmp_path, capsys):
    shutil.move(ws / "clusters", tmp_path / "real-clusters")
    (ws / "clusters").symlink_to(tmp_path / "real-clusters")
    text = (ws / "clusterstack.toml").read_text()
    rc, _out, err = _run(ws, capsys, "validate")
    assert rc == 2
    assert err.startswith(f"error: {shown(ws / 'clusterstack.toml')}:{line_of(text, 'clusters_dir = ')}: "
                          f"workspace.clusters_dir: workspace.clusters_dir is a symlink outside {ROOT}")


def test_a_project_document_outside_the_repository_is_refused_by_validate_and_plan(ws, tmp_path, capsys):
    outside = tmp_path / "buckets.yaml"
    shutil.copy(ws / "buckets" / "buckets.yaml", outside)
    stack = ws / "buckets" / "Pulumi.lab.yaml"
    edit(stack, "file: buckets.yaml", f"file: ../../{outside.name}")
    rc, _out, err = _run(ws, capsys, "validate")
    assert rc == 2
    assert (f"error: {shown(stack)}:1: config: clusterstack-buckets:file of stack 'lab' resolves outside "
            f"{ROOT} ({outside})") in err
    rc, out, err = _run(ws, capsys, "plan", "--project", "buckets")
    assert (rc, out) == (2, "") and f"resolves outside {ROOT} ({outside})" in err


def test_a_service_project_dir_linked_out_is_refused(ws, tmp_path, capsys):
    shutil.copy(REPO / "services.yaml", ws / "services.yaml")
    shutil.copytree(REPO / "services", ws / "services", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.move(ws / "services" / "echo", tmp_path / "echo")
    (ws / "services" / "echo").symlink_to(tmp_path / "echo")
    text = (ws / "services.yaml").read_text()
    rc, _out, err = _run(ws, capsys, "validate")
    assert rc == 2
    assert (f"error: {shown(ws / 'services.yaml')}:{line_of(text, 'project_dir: services/echo')}: "
            f"services.echo.project_dir: project_dir is a symlink outside {ROOT}") in err


# --- unexpected entries of the clusters directory --------------------------------------------

def test_unexpected_entries_of_the_clusters_dir_are_errors_of_validate(ws, capsys):
    clusters = ws / "clusters"
    shutil.copy(clusters / "gcp-tpu-a.yaml", clusters / "gcp-tpu-c.yml")
    (clusters / "nested").mkdir()
    shutil.copy(clusters / "gcp-tpu-a.yaml", clusters / "nested" / "gcp-tpu-a.yaml")
    (clusters / "notes.txt").write_text("x\n")
    (clusters / "README.md").write_text("docs may sit beside the configs\n")
    (clusters / ".gitkeep").write_text("")
    before = _tree(ws)
    rc, out, err = _run(ws, capsys, "validate")
    assert (rc, out) == (2, "")
    assert err.splitlines() == [
        f"error: {shown(clusters / 'gcp-tpu-c.yml')}: not read: only <cluster>.yaml files are cluster configs "
        "— rename it to gcp-tpu-c.yaml, or move it out of clusters/",
        f"error: {shown(clusters / 'nested')}: a directory in the clusters directory is not read (configs are "
        "not searched recursively) — move its <cluster>.yaml files up into clusters/, or move it out",
        f"error: {shown(clusters / 'notes.txt')}: not a cluster config: only <cluster>.yaml files belong here "
        "— move it out of clusters/ (documentation may stay as *.md)"]
    assert _tree(ws) == before
    for p in ("gcp-tpu-c.yml", "notes.txt"):
        (clusters / p).unlink()
    shutil.rmtree(clusters / "nested")
    assert _run(ws, capsys, "validate")[0] == 0   # README.md and dotfiles are fine


# --- the keyset --------------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path, capsys) -> Repo:
    """A fresh IAM workspace with a local keyset (`iam init`), committed."""
    root = iam_workspace(tmp_path / "repo")
    r = Repo(root.resolve(), capsys)
    r.ok("init")
    r.ok("grant", "alice@example.org", "--role", "roles/viewer")
    r.commit("init")
    return r


def test_a_keyset_path_out_of_the_repository_is_refused_by_check_and_grant(repo):
    text = edit(repo.iam_file, "keyset: .iam/keyset.json", "keyset: ../../../../etc/passwd")
    before = _tree(repo.root)
    expected = (f"error: {shown(repo.iam_file)}:{line_of(text, 'keyset:')}: encryption.keyset: "
                "'../../../../etc/passwd' is not a path inside the repository: relative, "
                "'/'-separated, without '..' parts — fix the value's format\n")
    for args in (["check"], ["grant", "bob@example.org", "--role", "roles/viewer"]):
        rc, out, err = repo.cs(*args)
        assert (rc, out, err) == (2, "", expected), args
    edit(repo.iam_file, "keyset: ../../../../etc/passwd", "keyset: /etc/passwd")
    rc, _out, err = repo.cs("grant", "bob@example.org", "--role", "roles/viewer")
    assert rc == 2 and "encryption.keyset: '/etc/passwd' is not a path inside the repository" in err
    edit(repo.iam_file, "keyset: /etc/passwd", "keyset: ../../../../etc/passwd")
    assert _tree(repo.root) == before


def test_a_keyset_linked_out_of_the_root_a_dangling_one_and_a_directory_are_exit_2(repo, tmp_path):
    keyset = repo.keyset
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(keyset, elsewhere)
    grant = ("grant", "bob@example.org", "--role", "roles/viewer")
    keyset.symlink_to(elsewhere)
    before = _tree(repo.root)
    rc, out, err = repo.cs(*grant)
    assert (rc, out) == (2, "")
    assert err == (f"error: {shown(keyset)}: the keyset is a symlink outside {ROOT} ({elsewhere}) — "
                   f"{KEEP}\n")
    keyset.unlink()
    keyset.symlink_to("gone.json")
    rc, _out, err = repo.cs(*grant)
    assert (rc, err) == (2, f"error: {shown(keyset)}: the keyset is a symlink to gone.json, which does not "
                            "exist — replace the link with the file itself\n")
    keyset.unlink()
    keyset.mkdir()
    rc, _out, err = repo.cs(*grant)
    assert rc == 2 and err.startswith(f"error: {shown(keyset)}: is a directory, not a file — ")
    keyset.rmdir()
    shutil.move(elsewhere, keyset)   # back inside the root: the grant works
    assert {k: v for k, v in _tree(repo.root).items() if k != ".iam/keyset.json"} == \
        {k: v for k, v in before.items() if k != ".iam/keyset.json"}
    repo.ok(*grant)


def test_an_iam_file_linked_out_of_the_root_is_located_at_its_key(ws, tmp_path, capsys):
    shutil.move(ws / "iam" / "iam.yaml", tmp_path / "iam.yaml")
    (ws / "iam" / "iam.yaml").symlink_to(tmp_path / "iam.yaml")
    text = (ws / "clusterstack.toml").read_text()
    for argv in (["validate"], ["plan", "gcp-demo"]):
        rc, out, err = _run(ws, capsys, *argv)
        assert (rc, out) == (2, ""), argv
        assert err.startswith(f"error: {shown(ws / 'clusterstack.toml')}:{line_of(text, 'file = ')}: iam.file: "
                              f"iam.file is a symlink outside {ROOT} ({tmp_path / 'iam.yaml'})"), argv


def test_a_service_cluster_with_path_parts_is_located(ws, capsys):
    shutil.copy(REPO / "services.yaml", ws / "services.yaml")
    shutil.copytree(REPO / "services", ws / "services", ignore=shutil.ignore_patterns("__pycache__"))
    text = edit(ws / "services.yaml", "kubernetes: {cluster: cw-demo-h100,", "kubernetes: {cluster: ../iam/iam,")
    rc, _out, err = _run(ws, capsys, "validate")
    assert rc == 2
    assert err.startswith(f"error: {shown(ws / 'services.yaml')}:{line_of(text, '../iam/iam')}: "
                          "services.logrelay.kubernetes.cluster: '../iam/iam' is not")


# --- links to reviewed files (stack pointers, services.yaml, Pulumi.yaml, clusterstack.toml) --

@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_cluster_stack_file_that_is_a_link_is_refused(ws, tmp_path, capsys, where):
    stack = ws / "infra" / "Pulumi.cw-demo-h100.yaml"
    target = tmp_path / "copy.yaml" if where == "outside" else ws / "infra" / "copy.yaml"
    shutil.move(stack, target)
    stack.symlink_to(target)
    before = _tree(ws)
    rc, out, err = _run(ws, capsys, "validate")
    assert (rc, out) == (2, "")
    assert (f"error: {shown(stack)}: the stack file is a symlink — replace it with the file "
            "itself\n") in err and "Traceback" not in err
    assert _tree(ws) == before


def test_services_yaml_linked_out_of_the_repository_is_not_read(ws, tmp_path, capsys):
    shutil.copytree(REPO / "services", ws / "services", ignore=shutil.ignore_patterns("__pycache__"))
    outside = tmp_path / "services.yaml"
    outside.write_text("services: [not, a, mapping\n")   # would be a parse error if it were read
    (ws / "services.yaml").symlink_to(outside)
    rc, out, err = _run(ws, capsys, "validate")
    assert (rc, out) == (2, "")
    assert err == (f"error: {shown(ws / 'services.yaml')}: services.yaml is a symlink outside "
                   f"{ROOT} ({outside}) — {KEEP}\n")


@pytest.mark.parametrize("project", ["infra", "github", "services/echo"])
def test_a_pulumi_yaml_linked_out_of_the_repository_is_refused(ws, tmp_path, capsys, project):
    shutil.copy(REPO / "services.yaml", ws / "services.yaml")
    shutil.copytree(REPO / "services", ws / "services", ignore=shutil.ignore_patterns("__pycache__"))
    pulumi_yaml = ws / project / "Pulumi.yaml"
    outside = tmp_path / "Pulumi.yaml"
    shutil.move(pulumi_yaml, outside)
    pulumi_yaml.symlink_to(outside)
    rc, out, err = _run(ws, capsys, "validate")
    assert (rc, out) == (2, "")
    assert (f"error: {shown(pulumi_yaml)}: Pulumi.yaml is a symlink outside {ROOT} ({outside}) "
            f"— {KEEP}\n") in err


def test_a_discovered_clusterstack_toml_linked_out_of_the_root_is_refused(ws, tmp_path, capsys, monkeypatch):
    toml = ws / "clusterstack.toml"
    outside = tmp_path / "clusterstack.toml"
    shutil.move(toml, outside)
    toml.symlink_to(outside)
    monkeypatch.chdir(ws / "clusters")   # the root is found by discovery
    capsys.readouterr()
    rc = main(["validate"])
    cap = capsys.readouterr()
    assert (rc, cap.out) == (2, "")
    found_in = f"the directory it is found in ({ws.resolve()})"
    assert cap.err == (f"error: {shown(toml)}: clusterstack.toml is a symlink outside {found_in} ({outside}) "
                       f"— keep it inside {found_in}; a reviewed path never leaves it\n")


@pytest.mark.parametrize("url, says", [
    ("ftp://x", "is not a Pulumi backend URL"),
    ("http://pulumi.example.org", "is not a Pulumi backend URL"),
    ("s3://", "is not a Pulumi backend URL"),
    ("file://../../x", "may not leave it"),
])
def test_a_backend_url_pulumi_login_does_not_take_is_located(workspace_copy, capsys, url, says):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, 'backend_url = "file://.pulumi-state"', f'backend_url = "{url}"')
    capsys.readouterr()
    from clusterstack.cli import main

    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    at = line_of(text, f'backend_url = "{url}"')
    assert (f"error: clusterstack.toml:{at}: workspace.backend_url: "
            in err and says in err), err


@pytest.mark.parametrize("url", ["gs://lab-state", "s3://lab-state/pulumi?region=us-east-1",
                                 "azblob://state", "https://api.pulumi.com", "file://~",
                                 "file:///srv/state", "file://state/dir"])
def test_every_backend_pulumi_login_takes_is_accepted(workspace_copy, capsys, url):
    edit(workspace_copy / "clusterstack.toml", 'backend_url = "file://.pulumi-state"',
         f'backend_url = "{url}"')
    from clusterstack.cli import main

    assert main(["--root", str(workspace_copy), "validate"]) == 0, capsys.readouterr().err
