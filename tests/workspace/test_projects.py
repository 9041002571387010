"""The project list of the workspace: ``[projects]`` in clusterstack.toml, the one place plan,
diff and CI read which Pulumi projects exist besides the cluster project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import shown
from clusterstack.cli import main
from clusterstack.errors import ConfigError
from clusterstack.workspace import CLUSTER_PROJECT, Workspace

REPO = Path(__file__).resolve().parents[2]


def test_shipped_projects_in_file_order():
    ws = Workspace.load(REPO)
    assert [(p.key, p.directory, p.clusters) for p in ws.all_projects()] == [
        (CLUSTER_PROJECT, REPO / "infra", True), ("buckets", REPO / "buckets", False),
        ("github", REPO / "github", False)]
    assert ws.project("github").directory == REPO / "github"
    lines = (REPO / "clusterstack.toml").read_text().splitlines()
    assert lines[ws.project("buckets").line - 1] == "[projects.buckets]"


def test_no_projects_table(tmp_path):
    (tmp_path / "clusterstack.toml").write_text("[workspace]\n")
    ws = Workspace.load(tmp_path)
    assert ws.projects == () and [p.key for p in ws.all_projects()] == [CLUSTER_PROJECT]


@pytest.mark.parametrize("toml, line, field, fragment", [
    ('[projects.data]\ndir = "data"\nkind = "buckets"\npath = "data"\n', 4, "projects.data.path",
     "unknown key 'path'"),
    ('[projects.data]\nkind = "buckets"\n', 1, "projects.data.dir", "Field required"),
    ('[projects.data]\ndir = "data"\n', 1, "projects.data.kind", "Field required"),
    ('[projects.data]\ndir = "data"\nkind = "bucket"\n', 3, "projects.data.kind", "Input should be 'buckets' or 'github'"),
    ('[projects.Data]\ndir = "data"\nkind = "github"\n', 1, "projects.Data", "bad project name 'Data'"),
    ('[projects.clusters]\ndir = "x"\nkind = "github"\n', 1, "projects.clusters", "bad project name 'clusters'"),
    ('[projects]\ndata = "data"\n', 2, "projects.data", "must be a table"),
])
def test_bad_projects_table(tmp_path, toml, line, field, fragment):
    (tmp_path / "clusterstack.toml").write_text("[workspace]\n" + toml)
    with pytest.raises(ConfigError) as ei:
        Workspace.load(tmp_path)
    p = ei.value.problems[0]
    assert (p.line - 1 if p.line else None, p.field) == (line, field) and fragment in p.message


def test_a_project_without_pulumi_yaml_is_located(workspace_copy, capsys):
    (workspace_copy / "github" / "Pulumi.yaml").unlink()
    assert main(["--root", str(workspace_copy), "plan", "--project", "github"]) == 2
    toml = workspace_copy / "clusterstack.toml"
    line = toml.read_text().splitlines().index("[projects.github]") + 1
    assert capsys.readouterr().err.startswith(
        f"error: {shown(toml)}:{line}: projects.github.dir: project 'github': no Pulumi.yaml in ")


@pytest.mark.parametrize("name", ["Pulumi..yaml", "Pulumi.x <b>@octocat.yaml"])
def test_a_project_stack_file_with_a_name_pulumi_refuses_is_an_error(workspace_copy, capsys, name):
    from clusterstack.cli import main

    src = workspace_copy / "github"
    shutil.copy(next(src.glob("Pulumi.*.yaml")), src / name)
    rc = main(["--root", str(workspace_copy), "validate"])
    err = capsys.readouterr().err
    assert rc == 2 and "is not a stack name" in err and "rename the stack file" in err
    assert "Traceback" not in err


def test_a_symlinked_project_stack_file_is_refused(workspace_copy, capsys, tmp_path):
    from clusterstack.cli import main

    src = workspace_copy / "github"
    outside = tmp_path / "elsewhere.yaml"
    shutil.copy(next(src.glob("Pulumi.*.yaml")), outside)
    (src / "Pulumi.linked.yaml").symlink_to(outside)
    rc = main(["--root", str(workspace_copy), "validate"])
    assert rc == 2 and "the stack file is a symlink" in capsys.readouterr().err


def test_two_projects_in_one_directory_are_a_located_error(workspace_copy):
    from clusterstack.errors import ConfigError
    from clusterstack.workspace import Workspace
    from helpers import edit, line_of

    text = edit(workspace_copy / "clusterstack.toml", ('dir = "github"', 'dir = "buckets"'))
    with pytest.raises(ConfigError) as ei:
        Workspace.load(workspace_copy)
    (p,) = ei.value.problems
    assert (p.line, p.field) == (line_of(text, 'dir = "buckets"    # the GitHub'), "projects.github.dir")
    assert "already the directory of [projects.buckets]" in p.message


def test_a_project_in_the_cluster_projects_directory_is_a_located_error(workspace_copy):
    from clusterstack.errors import ConfigError
    from clusterstack.workspace import Workspace
    from helpers import edit

    edit(workspace_copy / "clusterstack.toml", ('dir = "buckets"', 'dir = "infra"'))
    with pytest.raises(ConfigError, match=r"already the directory of \[workspace\] project_dir"):
        Workspace.load(workspace_copy)


@pytest.mark.parametrize("main_line, says", [
    ("main: ../elsewhere\n", "'../elsewhere' is not a path inside the repository"),
    ("main: /opt/program\n", "'/opt/program' is not a path inside the repository"),
    ("main: [a, b]\n", "['a', 'b'] is not a path inside the repository"),
    ("main: out\n", "the program's entry point is a symlink outside the project directory "
                     "(the directory of Pulumi.yaml)"),
    ("main: out/__main__.py\n", "the program's entry point resolves outside the project directory "
                                 "(the directory of Pulumi.yaml)"),
], ids=["dotdot", "absolute", "not-a-string", "symlinked-dir", "through-a-symlink"])
def test_the_entry_point_stays_inside_the_project(tmp_path, main_line, says):
    from clusterstack.workspace.projects import ProjectInfo

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "__main__.py").write_text("print('not reviewed')\n")
    project = tmp_path / "ws" / "infra"
    project.mkdir(parents=True)
    (project / "out").symlink_to(outside, target_is_directory=True)
    (project / "Pulumi.yaml").write_text(f"name: lab\nruntime: python\n{main_line}")
    with pytest.raises(ConfigError) as e:
        ProjectInfo.load(project, program=True)
    problem = e.value.problems[0]
    assert says in problem.message and e.value.exit_code == 2
    assert problem.file.name == "Pulumi.yaml" and problem.line == 3


def test_an_entry_point_inside_the_project_loads(tmp_path):
    from clusterstack.workspace.projects import ProjectInfo

    project = tmp_path / "infra"
    (project / "program").mkdir(parents=True)
    (project / "program" / "__main__.py").write_text("")
    (project / "Pulumi.yaml").write_text("name: lab\nruntime: python\nmain: program\n")
    assert ProjectInfo.load(project, program=True).main == (project / "program" / "__main__.py").resolve()
    (project / "Pulumi.yaml").write_text("name: lab\nruntime: python\nmain: program/__main__.py\n")
    assert ProjectInfo.load(project, program=True).main == (project / "program" / "__main__.py").resolve()
