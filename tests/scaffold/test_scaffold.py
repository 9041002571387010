"""``clusterstack init`` and ``cluster new``: a workspace that validates and plans with zero
hand-written files, refusals that write nothing, every missing option named in one run."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import yaml

from clusterstack.cli import main
from clusterstack.scaffold import GITIGNORE_ENTRIES, KNOWN_SHAPES, SCHEMA_DIR
from outside import run as run_cli

H200 = ["--provider", "coreweave", "--region", "US-EAST-04A", "--instance-type", "gd-8xh200ib-i128",
        "--nodes", "16", "--node-cpu", "128", "--node-ram", "2048GB", "--node-disk", "27.94TiB",
        "--gpus", "8", "--gpu-model", "H200", "--acme-email", "ops@example.org",
        "--allow-source", "203.0.113.10"]
CPU_POOL = ["--cpu-instance-type", "cd-gp-i64-erapids", "--cpu-nodes", "2"]
DNS = ["--dns-hostname", "ctl.example.org", "--dns-target", "ctl.abc123-cw-h200.coreweave.app",
       "--dns-zone-id", "0123456789abcdef0123456789abcdef",
       "--dns-token", "gcp-secret://projects/lab-project/secrets/dns/versions/latest"]


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_with_a_coreweave_template_validates_and_plans(tmp_path, capsys):
    root = tmp_path / "lab"
    assert main(["init", str(root), "--cluster", "cw-h200", *H200, *CPU_POOL, *DNS]) == 0
    wrote = [ln.removeprefix("wrote ") for ln in capsys.readouterr().out.splitlines() if ln.startswith("wrote ")]
    assert sorted(wrote) == sorted(files_under(root))
    assert set(wrote) >= {"clusterstack.toml", "infra/Pulumi.yaml", "infra/__main__.py", ".gitignore",
                          "clusters/cw-h200.yaml", "infra/Pulumi.cw-h200.yaml", f"{SCHEMA_DIR}/cluster.json"}
    assert main(["--root", str(root), "validate"]) == 0
    assert main(["--root", str(root), "plan", "--all", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    (stack,) = plan["stacks"] if "stacks" in plan else plan
    pools = {r["name"]: r for r in stack["resources"] if r["type"].endswith(":NodePool")}
    assert set(pools) == {"cwh200-h200", "cwh200-cpu"}
    assert pools["cwh200-h200"]["inputs"]["spec"]["instanceType"] == "gd-8xh200ib-i128"
    assert pools["cwh200-h200"]["inputs"]["spec"]["maxNodes"] == 16


def test_init_output_is_deterministic(tmp_path):
    for d in ("a", "b"):
        assert main(["init", str(tmp_path / d / "lab"), "--cluster", "cw-h200", *H200]) == 0
    assert files_under(tmp_path / "a" / "lab") == files_under(tmp_path / "b" / "lab")


def test_init_in_an_existing_repository_keeps_its_gitignore(tmp_path):
    (tmp_path / ".gitignore").write_text("node_modules/\n.pulumi-state/", encoding="utf-8")
    assert main(["init", str(tmp_path)]) == 0
    lines = (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["node_modules/", ".pulumi-state/"]
    assert lines.count(".pulumi-state/") == 1 and set(GITIGNORE_ENTRIES) <= set(lines)
    assert main(["--root", str(tmp_path), "validate"]) == 0   # no cluster yet: still valid


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "Pulumi.yaml").write_text("name: mine\n", encoding="utf-8")
    before = files_under(tmp_path)
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *H200]) == 2
    err = capsys.readouterr().err
    assert "infra/Pulumi.yaml: already exists" in err and "never overwrites" in err
    assert files_under(tmp_path) == before   # nothing written, not even .gitignore


def test_missing_options_are_named_in_one_run(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--cluster", "cw-x", "--provider", "coreweave",
                 "--dns-hostname", "ctl.example.org"]) == 2
    err = capsys.readouterr().err
    for option in ("--region", "--instance-type", "--nodes", "--acme-email", "--allow-source",
                   "--dns-target"):
        assert f"error: {option}" in err or f"needs both --dns-hostname and {option}" in err, option
    assert list(tmp_path.iterdir()) == []


def test_unknown_instance_type_needs_its_node_figures(tmp_path, capsys):
    args = [a for a in H200]
    args[args.index("gd-8xh200ib-i128")] = "gd-8xh200ib-i999"     # a type the table lacks
    i = args.index("--node-ram")
    del args[i:i + 2]
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *args]) == 2
    err = capsys.readouterr().err
    assert "error: --instance-type gd-8xh200ib-i999 is not in clusterstack's instance-type table (did you mean " \
        "gd-8xh200ib-i128" in err and " — pass what one node offers: --node-ram (e.g." in err
    assert "--node-cpu," not in err
    assert list(tmp_path.iterdir()) == []


def test_known_instance_type_needs_no_figures(tmp_path):
    args = ["--provider", "coreweave", "--region", "US-WEST-04A", "--instance-type", "gd-8xh100ib-i128",
            "--nodes", "2", "--acme-email", "ops@example.org", "--allow-source", "198.51.100.0/24"]
    assert main(["init", str(tmp_path), "--cluster", "cw-h100", *args]) == 0
    doc = yaml.safe_load((tmp_path / "clusters" / "cw-h100.yaml").read_text(encoding="utf-8"))
    shape = KNOWN_SHAPES["gd-8xh100ib-i128"]
    assert doc["scale_groups"]["h100"]["resources"] == {
        "cpu": shape.cpu, "ram": shape.ram, "disk": shape.disk, "device_type": "gpu",
        "device_variant": "H100", "device_count": 8}


def test_a_value_the_loader_rejects_is_refused_before_writing(tmp_path, capsys):
    args = [*H200, "--dns-hostname", "ctl.example.org", "--dns-target", "ctl.abc123-other.coreweave.app",
            "--dns-zone-id", "0123456789abcdef0123456789abcdef",
            "--dns-token", "gcp-secret://projects/lab-project/secrets/dns/versions/latest"]
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *args]) == 2
    assert "coreweave.app" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_rack_scale_template_takes_whole_racks(tmp_path, capsys):
    args = ["--provider", "coreweave", "--region", "US-EAST-08A", "--instance-type", "gb200-4x",
            "--acme-email", "ops@example.org", "--allow-source", "203.0.113.10"]
    assert main(["init", str(tmp_path / "bad"), "--cluster", "cw-gb", *args, "--nodes", "20"]) == 2
    assert "18-node" in capsys.readouterr().err
    assert main(["init", str(tmp_path / "ok"), "--cluster", "cw-gb", *args, "--nodes", "36"]) == 0
    text = (tmp_path / "ok" / "clusters" / "cw-gb.yaml").read_text(encoding="utf-8")
    assert "flavor_topology: multinode-nvlink-ib" in text
    assert main(["--root", str(tmp_path / "ok"), "validate"]) == 0


def test_cluster_new_adds_a_gcp_stack_using_defaults(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *H200]) == 0
    assert main(["--root", str(tmp_path), "cluster", "new", "gcp-lab", "--provider", "gcp",
                 "--project", "lab-project", "--address", "controller-ingress:us-central1:34.16.10.20"]) == 0
    assert (tmp_path / "infra" / "Pulumi.gcp-lab.yaml").read_text(encoding="utf-8") == \
        'config:\n  clusterstack:cluster: "gcp-lab"\n'
    assert main(["--root", str(tmp_path), "validate"]) == 0
    assert main(["--root", str(tmp_path), "plan", "gcp-lab"]) == 0
    assert "controller-ingress" in capsys.readouterr().out
    # again: refused, exit 2, nothing changed
    before = files_under(tmp_path)
    assert main(["--root", str(tmp_path), "cluster", "new", "gcp-lab", "--provider", "gcp",
                 "--project", "lab-project"]) == 2
    assert files_under(tmp_path) == before


def test_a_gcp_address_without_an_ip_is_a_new_reservation_one_with_an_ip_adopt_only(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", "--provider", "gcp", "--project", "lab-project",
                 "--address", "egress:us-central1", "--address", "ingress:us-central1:34.16.10.20"]) == 0
    text = (tmp_path / "clusters" / "gcp-lab.yaml").read_text(encoding="utf-8")
    assert ('      - name: "egress"\n        region: "us-central1"     # a new reservation: GCP picks the IP'
            in text)
    assert '        address: "34.16.10.20"   # pinned: adopt-only (`clusterstack import`)' in text
    assert main(["--root", str(tmp_path), "validate"]) == 0
    assert main(["init", str(tmp_path / "bad"), "--cluster", "gcp-lab", "--provider", "gcp",
                 "--project", "lab-project", "--address", "egress"]) == 2
    assert "is not NAME:REGION (a new IP) or NAME:REGION:IP" in capsys.readouterr().err


def test_cluster_new_takes_lab_values_from_defaults(tmp_path):
    assert main(["init", str(tmp_path)]) == 0
    toml = tmp_path / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[defaults]\nacme_email = "ops@example.org"\n'
                    'federation_allow_sources = ["203.0.113.10"]\n', encoding="utf-8")
    args = [a for a in H200 if a not in ("--acme-email", "ops@example.org", "--allow-source", "203.0.113.10")]
    assert main(["--root", str(tmp_path), "cluster", "new", "cw-h200", *args]) == 0
    text = (tmp_path / "clusters" / "cw-h200.yaml").read_text(encoding="utf-8")
    assert 'acme_email: "ops@example.org"' in text   # written out: the file stands on its own
    assert main(["--root", str(tmp_path), "validate"]) == 0


def test_scaffolded_cluster_points_its_editor_at_a_schema_it_passes(tmp_path):
    import jsonschema

    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *H200, *CPU_POOL, *DNS]) == 0
    path = tmp_path / "clusters" / "cw-h200.yaml"
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    schema_file = (path.parent / first.split("=", 1)[1]).resolve()
    assert schema_file == (tmp_path / SCHEMA_DIR / "cluster.json").resolve()
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")),
                        json.loads(schema_file.read_text(encoding="utf-8")),
                        cls=jsonschema.Draft202012Validator)


def _with(option: str, value: str) -> list[str]:
    args = list(H200)
    args[args.index(option) + 1] = value
    return args


@pytest.mark.parametrize(("option", "value", "rule"), [
    # one option, two list items: the second opened the federation ingress to the internet
    ("--allow-source", "203.0.113.10, 0.0.0.0/0", "is not an IP address or CIDR"),
    ("--acme-email", "ops@example.org # hidden", "an email address"),          # was cut at the comment
    ("--acme-email", "ops@example.org\n      extra_key: 1", "an email address"),  # was an injected key
])
def test_an_option_is_one_value_of_its_type(tmp_path, capsys, option, value, rule):
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *_with(option, value)]) == 2
    err = capsys.readouterr().err
    # (the error redacts an email address's local part)
    assert err.startswith(f"error: {option} '") and " is not one value: " in err and rule in err, err
    assert "Traceback" not in err and "invalid YAML" not in err
    assert list(tmp_path.iterdir()) == []


def test_cluster_new_refuses_a_name_with_a_newline(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    before = files_under(tmp_path)
    assert main(["--root", str(tmp_path), "cluster", "new", "cw-x\n", *H200]) == 2
    err = capsys.readouterr().err
    assert "error: the cluster name 'cw-x\\n' is not one value: lowercase letters" in err, err
    assert "invalid YAML" not in err
    assert files_under(tmp_path) == before


def test_option_values_are_written_as_quoted_scalars(tmp_path):
    assert main(["init", str(tmp_path), "--cluster", "cw-h200", *H200, *DNS,
                 "--allow-source", "198.51.100.0/24"]) == 0
    text = (tmp_path / "clusters" / "cw-h200.yaml").read_text(encoding="utf-8")
    assert 'federation_allow_sources: ["203.0.113.10", "198.51.100.0/24"]' in text
    ingress = yaml.safe_load(text)["provisioning"]["coreweave"]["ingress"]
    assert ingress["acme_email"] == "ops@example.org"


def test_init_and_cluster_new_take_the_same_template_options_and_write_the_same_cluster(tmp_path):
    from clusterstack.cli import _command
    from clusterstack.cli.help import commands

    def options(*path: str) -> set[str]:
        cmd = dict(commands(_command()))[" ".join(path)]
        return {o for p in cmd.params for o in p.opts if o.startswith("--")}

    template = options("cluster", "new") - {"--help"}
    assert {"--provider", "--region", "--dns-token", "--address", "--allow-source"} <= template
    assert options("init") - {"--help", "--project-name", "--cluster", "--ci", "--no-ci", "--ci-requirement"} == template

    assert main(["init", str(tmp_path / "a"), "--cluster", "cw-h200", *H200, *CPU_POOL, *DNS]) == 0
    assert main(["init", str(tmp_path / "b")]) == 0
    assert main(["--root", str(tmp_path / "b"), "cluster", "new", "cw-h200", *H200, *CPU_POOL, *DNS]) == 0
    for rel in ("clusters/cw-h200.yaml", "infra/Pulumi.cw-h200.yaml"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


# Values that break a YAML or TOML file when pasted in unquoted: a comment start, a mapping
# indicator, quotes, a backslash, newlines, characters either format must escape.
HOSTILE = ["lab #a: gpu", 'say "hi" \\ there', "a\nb: c\r\n- d", "tab\there", "\x7f\x85\u2028end",
           "'single' & *alias [x] {y}", "ünïcödé 😀 \ufeff"]


@pytest.mark.parametrize("value", HOSTILE)
def test_init_writes_every_value_as_one_value_of_the_file(tmp_path, value):
    import tomllib

    from ruamel.yaml import YAML

    from clusterstack.scaffold import init_plan

    root = tmp_path / "lab"
    plan = init_plan(root, project_name=value, clusters_dir=value, project_dir="infra", virtualenv=value)
    toml = tomllib.loads(plan.files[root.resolve() / "clusterstack.toml"])
    assert toml["workspace"] == {**toml["workspace"], "clusters_dir": value, "project_dir": "infra",
                                 "project_name": value}
    pulumi = YAML(typ="safe").load(plan.files[root.resolve() / "infra" / "Pulumi.yaml"])
    assert pulumi["name"] == value and pulumi["runtime"]["options"]["virtualenv"] == value
    assert pulumi["description"] == f"One stack per reviewed cluster config ({value}/<cluster>.yaml)."
    assert set(pulumi) == {"name", "description", "runtime"}


def test_init_refuses_a_project_name_pulumi_would_refuse_and_writes_nothing(tmp_path, capsys):
    assert main(["init", str(tmp_path / "lab"), "--project-name", "lab #a: gpu"]) == 2
    err = capsys.readouterr().err
    assert "--project-name 'lab #a: gpu' is not one value" in err and "Traceback" not in err
    assert not (tmp_path / "lab").exists() or not any((tmp_path / "lab").iterdir())


@pytest.mark.parametrize("directory", ["9lab", "my lab", "-lab"])
def test_init_refuses_a_directory_whose_name_is_no_project_name_and_writes_nothing(tmp_path, capsys, directory):
    # the name is taken from the directory unchanged; one `validate` would refuse is never derived
    assert main(["init", str(tmp_path / directory)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --project-name: init names the Pulumi project after the directory, and "
                          f"{directory!r} is not a Pulumi project name: ")
    assert "pass --project-name NAME" in err and "Traceback" not in err
    assert not (tmp_path / directory).exists()


def test_init_in_such_a_directory_with_a_project_name_validates(tmp_path, capsys):
    root = tmp_path / "9lab"
    assert main(["init", str(root), "--project-name", "lab9"]) == 0
    assert 'project_name = "lab9"' in (root / "clusterstack.toml").read_text()
    assert main(["--root", str(root), "validate"]) == 0


@pytest.mark.parametrize("where", [".", "lab"])
def test_diff_bases_plan_cache_stays_out_of_git_status_wherever_init_put_the_workspace(tmp_path, capsys, where):
    # init writes the cache's ignore entry in the workspace's own .gitignore; the cache is
    # written under the workspace root, so that entry covers it in a subdirectory too
    from helpers import commit_all, git

    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    root = top / where
    assert main(["init", str(root), "--project-name", "lab", "--cluster", "cw-h200", *H200]) == 0
    assert "/.clusterstack-cache/" in (root / ".gitignore").read_text().splitlines()
    commit_all(top, "workspace")
    capsys.readouterr()
    assert main(["--root", str(root), "diff", "--all", "--base", "HEAD"]) == 0
    assert list((root / ".clusterstack-cache" / "plans").iterdir())
    assert where == "." or not (top / ".clusterstack-cache").exists()
    assert git(top, "status", "--porcelain", "--untracked-files=all") == ""


# --- a killed init / cluster new is completed by the next run ----------------------
# Before, the run left half a workspace and every re-run refused ("already exists"). The
# scaffold journals what it writes (scaffold.JOURNAL): the re-run recognises its own files.


@pytest.mark.parametrize("point", ["scaffold:journal-written", "scaffold:file-written"])
def test_an_init_killed_half_way_is_completed_by_running_it_again(tmp_path, point):
    lab = tmp_path / "lab"
    killed = run_cli("init", str(lab), "--project-name", "lab", *H200, "--cluster", "cw-a", kill_at=point)
    assert killed.code == -signal.SIGKILL
    assert (lab / ".clusterstack-scaffold-journal.tmp").exists()
    again = run_cli("init", str(lab), "--project-name", "lab", *H200, "--cluster", "cw-a")
    assert again.code == 0, again.err
    assert not (lab / ".clusterstack-scaffold-journal.tmp").exists()
    whole = tmp_path / "whole"
    assert run_cli("init", str(whole), "--project-name", "lab", *H200, "--cluster", "cw-a").code == 0
    assert files_under(lab) == files_under(whole)   # byte for byte what one uninterrupted run writes
    assert run_cli("validate", root=lab).code == 0


def test_a_file_changed_after_the_kill_is_still_never_overwritten(tmp_path):
    lab = tmp_path / "lab"
    assert run_cli("init", str(lab), "--project-name", "lab", kill_at="scaffold:file-written").code == -signal.SIGKILL
    (lab / "clusterstack.toml").write_text("# mine now\n")
    r = run_cli("init", str(lab), "--project-name", "lab")
    assert r.code == 2 and "clusterstack.toml: already exists" in r.err
    assert (lab / "clusterstack.toml").read_text() == "# mine now\n"


def test_a_cluster_new_killed_half_way_is_completed_by_running_it_again(tmp_path):
    assert main(["init", str(tmp_path)]) == 0
    killed = run_cli("cluster", "new", "cw-b", *H200, root=tmp_path, kill_at="scaffold:file-written")
    assert killed.code == -signal.SIGKILL and (tmp_path / "clusters" / "cw-b.yaml").exists()
    again = run_cli("cluster", "new", "cw-b", *H200, root=tmp_path)
    assert again.code == 0, again.err
    assert (tmp_path / "infra" / "Pulumi.cw-b.yaml").exists()


def test_init_git_ignores_the_temp_files_a_kill_may_leave(tmp_path):
    assert main(["init", str(tmp_path)]) == 0
    assert "*.tmp" in (tmp_path / ".gitignore").read_text().splitlines()


@pytest.mark.parametrize("name", ["..", ".", "..."])
def test_a_project_name_of_dots_is_refused(tmp_path, capsys, name):
    # the DIY backend keeps a project's stacks in .pulumi/stacks/<project>/: '..' escapes it
    assert main(["init", str(tmp_path / "lab"), "--project-name", name]) == 2
    assert f"--project-name {name!r} is not one value" in capsys.readouterr().err
    assert not (tmp_path / "lab").exists()
