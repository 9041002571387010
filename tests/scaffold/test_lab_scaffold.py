""""Getting to the first plan": the scaffold's parts in-process — every missing or
contradicting option named in one run by its flag, --racks, lab-wide values carried over, the
GCP controller behind IAP, services, CI workflows, .gitignore, `iam init`'s [iam]."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from clusterstack.cli import main
from clusterstack.scaffold import CI_WORKFLOWS, GITIGNORE_ENTRIES, REQUIREMENTS_FILE, with_iam_table

LAB_WIDE = ["--acme-email", "ops@lab.example.org", "--allow-source", "203.0.113.0/24",
            "--dns-zone-id", "0123456789abcdef0123456789abcdef",
            "--dns-token", "gcp-secret://projects/lab-project/secrets/cloudflare-token/versions/latest"]
CONFIG_TERMS = ("max_slices", "num_vms", "buffer_slices", "device_count", "scale_groups", "resources.")


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_every_missing_option_of_an_unknown_type_is_named_in_one_run_by_its_flag(tmp_path, capsys):
    # init needed 4 runs, each naming the next option in config-file terms
    assert main(["init", str(tmp_path), "--cluster", "cw-x", "--provider", "coreweave",
                 "--instance-type", "gd-8xmi300x-i128"]) == 2
    err = _err(capsys)
    for flag in ("--region", "--acme-email", "--allow-source", "--nodes", "--node-cpu", "--node-ram",
                 "--node-disk", "--gpus", "--gpu-model"):
        assert flag in err, flag
    assert not any(term in err for term in CONFIG_TERMS), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--instance-type", "gb200-4x", "--racks", "2", "--nodes", "36"], "both --nodes and --racks given for gb200-4x"),
    (["--instance-type", "gb200-4x"], "--racks is required for gb200-4x: it deploys in whole 18-node NVL72 racks"),
    (["--instance-type", "b200-8x", "--racks", "2"], "--racks is for rack-scale (NVL72) instance types; b200-8x is not one"),
    (["--instance-type", "gb200-4x", "--racks", "1", "--gpus", "8"],
     "--gpus 8 contradicts gb200-4x: it has 4 GPUs per node"),
    (["--instance-type", "gd-8xh100ib-i128", "--nodes", "2", "--gpu-model", "B200"],
     "--gpu-model B200 contradicts gd-8xh100ib-i128: its GPUs are H100"),
    (["--instance-type", "b200-8x", "--nodes", "2", "--node-ram", "4096GB"],
     "--node-ram 4096GB is more than b200-8x has"),
    (["--instance-type", "cd-gp-i64-erapids", "--nodes", "2"], "--instance-type cd-gp-i64-erapids is a CPU instance type"),
    (["--instance-type", "b200-8x", "--nodes", "2", "--cpu-instance-type", "b200-8x", "--cpu-nodes", "1"],
     "--cpu-instance-type b200-8x is a GPU instance type"),
])
def test_a_pool_the_flags_get_wrong_is_refused_by_its_flag(tmp_path, capsys, args, message):
    assert main(["init", str(tmp_path), "--cluster", "cw-x", "--provider", "coreweave", "--region", "US-EAST-08A",
                 *LAB_WIDE, *args]) == 2
    err = _err(capsys)
    assert message in err and not any(term in err for term in CONFIG_TERMS), err
    assert list(tmp_path.iterdir()) == []


def test_racks_size_a_rack_scale_pool_and_the_quota_follows_the_table(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--cluster", "cw-gb200", "--provider", "coreweave",
                 "--region", "US-EAST-08A", "--instance-type", "gb200-4x", "--racks", "6", *LAB_WIDE]) == 0
    text = (tmp_path / "clusters" / "cw-gb200.yaml").read_text()
    assert "# CoreWeave cluster cw-gb200: 6 NVL72 racks = 108 × gb200-4x (4 × GB200 each, 432 GPUs) and " \
        "2 × cd-gp-i64-erapids." in text
    doc = yaml.safe_load(text)
    assert doc["scale_groups"]["gb200"]["max_slices"] == 108
    assert doc["scale_groups"]["gb200"]["resources"]["device_count"] == 4
    assert main(["--root", str(tmp_path), "validate"]) == 0


def test_lab_wide_values_go_to_defaults_and_cluster_new_needs_no_option_for_them(tmp_path, capsys):
    assert main(["init", str(tmp_path), *LAB_WIDE]) == 0
    defaults = tomllib.loads((tmp_path / "clusterstack.toml").read_text())["defaults"]
    assert defaults == {"acme_email": "ops@lab.example.org", "federation_allow_sources": ["203.0.113.0/24"],
                        "dns_zone_id": "0123456789abcdef0123456789abcdef",
                        "dns_api_token": "gcp-secret://projects/lab-project/secrets/cloudflare-token/versions/latest"}
    assert main(["--root", str(tmp_path), "cluster", "new", "cw-h100", "--provider", "coreweave", "--region",
                 "US-WEST-04A", "--instance-type", "gd-8xh100ib-i128", "--nodes", "4"]) == 0
    assert main(["--root", str(tmp_path), "validate"]) == 0


def test_init_refuses_a_malformed_lab_wide_value_without_a_cluster(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--acme-email", "not-an-address"]) == 2
    assert "--acme-email 'not-an-address' is not one value" in _err(capsys)
    assert list(tmp_path.iterdir()) == []


# --- GCP: the controller behind IAP and the load balancer ------------------------------------

GCP = ["--provider", "gcp", "--project", "lab-project", "--controller-zone", "us-central1-a",
       "--iap-domain", "ctl.lab.example.org"]


def test_a_gcp_controller_whose_backend_does_not_exist_yet_plans(tmp_path, capsys):
    # no IAP controller could be scaffolded, and without the backend's id nothing planned
    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", *GCP, "--project-number", "123456789012",
                 *LAB_WIDE]) == 0
    text = (tmp_path / "clusters" / "gcp-lab.yaml").read_text()
    doc = yaml.safe_load(text)
    assert doc["auth"]["iap"] == {"url": "https://ctl.lab.example.org"}
    assert doc["provisioning"]["gcp"]["gclb"]["controllers"] == [{"cluster": "gcp-lab"}]
    assert doc["provisioning"]["gcp"]["project_number"] == "123456789012"
    assert "a new backend's audience is the stack output iap_audiences" in text
    assert main(["--root", str(tmp_path), "validate"]) == 0
    assert main(["--root", str(tmp_path), "plan", "gcp-lab", "--json"]) == 0
    plan = capsys.readouterr().out
    assert '"gcp:iap/settings:Settings"' in plan and "<backend_service_id>" in plan   # adopt-only import ID


def test_a_gcp_controller_to_adopt_takes_its_audience(tmp_path, capsys):
    audience = "/projects/123456789012/global/backendServices/4721349812345678901"
    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", *GCP, "--iap-audience", audience, *LAB_WIDE]) == 0
    doc = yaml.safe_load((tmp_path / "clusters" / "gcp-lab.yaml").read_text())
    assert doc["auth"]["iap"]["signed_header_audience"] == audience
    assert main(["--root", str(tmp_path), "validate"]) == 0
    assert "note: clusters/gcp-lab.yaml:" in capsys.readouterr().err     # what it cannot know, said


def test_a_gcp_controller_names_every_missing_option_in_one_run(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", "--provider", "gcp",
                 "--iap-domain", "ctl.lab.example.org"]) == 2
    err = _err(capsys)
    for flag in ("--project is required", "--controller-zone is required", "--project-number is required",
                 "--dns-zone-id is required", "--dns-token is required"):
        assert flag in err, flag
    assert list(tmp_path.iterdir()) == []


# --- services -------------------------------------------------------------------------------

IMAGE = "us-central1-docker.pkg.dev/lab-project/apps/dash@sha256:" + "ab" * 32


def test_service_new_registers_a_cloud_run_service_that_validates_and_plans(tmp_path, capsys):
    from clusterstack.plan.runtime import plan_stack

    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", *GCP, "--project-number", "123456789012",
                 *LAB_WIDE]) == 0
    assert main(["--root", str(tmp_path), "service", "new", "dash", "--region", "us-central1",
                 "--image", IMAGE, "--iap-access", "group:ml@lab.example.org"]) == 0
    registry = yaml.safe_load((tmp_path / "services.yaml").read_text())["services"]
    assert registry["dash"]["cloud_run"] == {"project": "lab-project", "region": "us-central1", "service": "dash"}
    stack = yaml.safe_load((tmp_path / "services" / "dash" / "Pulumi.prod.yaml").read_text())["config"]
    assert stack["dash:projectNumber"] == "123456789012"     # from the GCP cluster: no option needed
    assert main(["--root", str(tmp_path), "validate"]) == 0
    plan = plan_stack(tmp_path / "services" / "dash", "prod")
    assert any(r.type == "gcp:cloudrunv2/service:Service" for r in plan.resources)
    # a second service appends to services.yaml, a repeat is refused
    assert main(["--root", str(tmp_path), "service", "new", "api", "--region", "us-central1", "--image", IMAGE]) == 0
    assert set(yaml.safe_load((tmp_path / "services.yaml").read_text())["services"]) == {"dash", "api"}
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "service", "new", "api", "--region", "us-central1", "--image", IMAGE]) == 2


def test_service_new_names_every_missing_option_in_one_run(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "service", "new", "dash", "--image", "repo/dash:latest"]) == 2
    err = _err(capsys)
    for text in ("--project is required", "--project-number is required", "--region is required",
                 "--image 'repo/dash:latest' is not pinned by digest"):
        assert text in err, text
    assert not (tmp_path / "services.yaml").exists()


# --- CI workflows for the lab's own repository ------------------------------------------------

def test_init_writes_workflows_that_need_no_lock_file(tmp_path):
    assert main(["init", str(tmp_path), "--ci-requirement", "clusterstack==0.1.0"]) == 0
    wf = tmp_path / ".github" / "workflows"
    assert sorted(p.stem for p in wf.glob("*.yaml")) == sorted(CI_WORKFLOWS)
    for p in wf.glob("*.yaml"):
        text = p.read_text()
        assert "uv " not in text and "uv.lock" not in text and "@" + "PYTHON" not in text, p.name
        assert f"python -m pip install --quiet -r {REQUIREMENTS_FILE}" in text
    assert (tmp_path / REQUIREMENTS_FILE).read_text().splitlines()[-1] == "clusterstack==0.1.0"
    from importlib import metadata

    assert f"pulumi-version: {metadata.version('pulumi')} " in (wf / "preview.yaml").read_text()


def test_the_lab_workflows_pass_actionlint_and_run_only_commands_that_exist(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    wf = tmp_path / ".github" / "workflows"
    exe = Path(sys.executable).parent / "actionlint"
    if exe.is_file():
        res = subprocess.run([str(exe), "-no-color", *sorted(map(str, wf.glob("*.yaml")))],
                             capture_output=True, text=True, cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr
    commands = []
    for p in wf.glob("*.yaml"):
        for job in yaml.safe_load(p.read_text())["jobs"].values():
            for step in job["steps"]:
                script = step.get("run", "").replace("\\\n", " ")
                commands += [shlex.split(m.group(1)) for m in
                             re.finditer(r"clusterstack((?:[ \t]+(?:\"[^\"]*\"|[^\s\"|)&;]+))+)", script)]
                assert not re.search(r"\bup\b", step.get("run", "")), step   # CI never applies
    assert len(commands) >= 6
    for argv in commands:
        path = []
        for w in argv:
            if w.startswith(("-", "$")):
                break
            path.append(w)
        path = path[:2] if path[:1] == ["ci"] else path
        capsys.readouterr()
        assert main([*path, "--help"]) == 0, argv
        helptext = capsys.readouterr().out
        assert all(o in helptext for o in argv if o.startswith("--")), argv


def test_no_ci_writes_no_workflow(tmp_path):
    assert main(["init", str(tmp_path), "--no-ci"]) == 0
    assert not (tmp_path / ".github").exists() and not (tmp_path / REQUIREMENTS_FILE).exists()


def test_gitignore_covers_the_virtualenv_and_temporary_files(tmp_path):
    assert main(["init", str(tmp_path)]) == 0
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert {".venv/", "*.tmp", ".*.toml.lock"} <= set(lines) and set(GITIGNORE_ENTRIES) <= set(lines)


# --- iam init: [iam] in clusterstack.toml -------------------------------------------------------

def test_iam_init_sets_iam_so_the_first_grant_leaves_the_workspace_valid(tmp_path, capsys):
    # `iam init` did not write [iam]: after the first `iam grant` validate failed
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert main(["init", str(tmp_path), "--cluster", "gcp-lab", "--provider", "gcp", "--project", "lab-project"]) == 0
    assert main(["--root", str(tmp_path), "iam", "init"]) == 0
    iam = tomllib.loads((tmp_path / "clusterstack.toml").read_text())["iam"]
    assert iam == {"file": "iam/iam.yaml", "stack": "gcp-lab"}
    assert "# [iam]" not in (tmp_path / "clusterstack.toml").read_text()   # the commented block replaced
    assert main(["--root", str(tmp_path), "iam", "grant", "group:ops@lab.example.org", "--role", "roles/viewer"]) == 0
    assert main(["--root", str(tmp_path), "validate"]) == 0


def test_iam_init_without_a_gcp_cluster_says_what_to_add(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    before = (tmp_path / "clusterstack.toml").read_text()
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "iam", "init"]) == 2       # no project to take: nothing written
    assert "no GCP cluster to apply the IAM file" in _err(capsys)
    assert (tmp_path / "clusterstack.toml").read_text() == before and not (tmp_path / "iam").exists()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert main(["--root", str(tmp_path), "iam", "init", "--project", "lab-project"]) == 0   # the file only
    assert tomllib.loads((tmp_path / "clusterstack.toml").read_text())["iam"] == {"file": "iam/iam.yaml"}
    assert "note: [iam] stack is not set: no GCP cluster of project lab-project yet" in capsys.readouterr().err


def test_iam_init_with_several_gcp_clusters_asks_which(tmp_path, capsys):
    for name in ("gcp-a", "gcp-b"):
        args = ["--root", str(tmp_path), "cluster", "new"] if name == "gcp-b" else ["init", str(tmp_path), "--cluster"]
        assert main([*args, name, "--provider", "gcp", "--project", "lab-project"]) == 0
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "iam", "init"]) == 2
    assert "2 GCP clusters could apply the IAM file: gcp-a, gcp-b — pass --stack NAME" in _err(capsys)


def test_with_iam_table_keeps_a_reviewed_choice_and_every_other_line():
    text = '[workspace]\nproject_name = "x"  # kept\n\n[iam]\nstack = "gcp-a"\n\n[defaults]\nacme_email = "ops@example.org"\n'
    out = with_iam_table(text, file="iam/iam.yaml", stack="gcp-b")
    assert tomllib.loads(out)["iam"] == {"stack": "gcp-a", "file": "iam/iam.yaml"}
    assert out.replace('file = "iam/iam.yaml"\n', "") == text
