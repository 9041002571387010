"""`clusterstack validate` checks offline everything `plan --all` would reject: cluster configs
(and those referencing a named cluster), stack files, [projects] configs and the IAM file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import edit, line_of, shown
from clusterstack.cli import main

GOOD_AUDIENCE = "signed_header_audience: /projects/123456789012/global/backendServices/5832461923456789012"


def _validate(root: Path, capsys, *clusters: str) -> tuple[int, str]:
    rc = main(["--root", str(root), "validate", *clusters])
    return rc, capsys.readouterr().err


def _with_iam(root: Path, repo_root: Path) -> Path:
    assert (root / "iam" / "iam.yaml").is_file()  # the workspace copy carries it
    return root / "iam" / "iam.yaml"


def test_extra_keys_in_a_cluster_stack_file_are_rejected(workspace_copy, capsys):
    f = workspace_copy / "infra" / "Pulumi.cw-demo-h100.yaml"
    text = f.read_text() + "  clusterstack:replicas: 3\nencryptionsalt: v1:abc=\nbackend: x\n"
    f.write_text(text)
    rc, err = _validate(workspace_copy, capsys, "cw-demo-h100")
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 2  # encryptionsalt is Pulumi's own key: allowed
    assert lines[0].startswith(f"error: {shown(f)}:{line_of(text, 'clusterstack:replicas')}: "
                               "config.clusterstack:replicas: not allowed in a cluster stack file")
    assert lines[1].startswith(f"error: {shown(f)}:{line_of(text, 'backend:')}: backend: not allowed")
    # plan checks the same pointers, so it rejects the file too
    assert main(["--root", str(workspace_copy), "plan", "cw-demo-h100"]) == 2


@pytest.mark.parametrize("project, file, old, new, needle", [
    ("buckets", "buckets.yaml", "ttl_days: [7, 30]", "ttl_dayz: [7, 30]", "ttl_dayz"),
    ("github", "github.yaml", "  enforcement: active", "  enforcment: active", "enforcment"),
])
def test_project_configs_are_validated(workspace_copy, capsys, project, file, old, new, needle):
    field = needle if project == "buckets" else f"ruleset.{needle}"
    path = workspace_copy / project / file
    text = edit(path, (old, new))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"error: {shown(path)}:{line_of(text, needle)}: {field}: " in err


def test_iam_plaintext_user_member_is_rejected(workspace_copy, repo_root, capsys):
    iam = _with_iam(workspace_copy, repo_root)
    text = edit(iam, ("      - group:ml-platform@example.org\nbuckets:", "      - user:alice@example.org\nbuckets:"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert str(iam.name) in err and f":{line_of(text, 'user:alice@example.org')}:" in err


def test_iam_project_must_be_the_iam_stacks_project(workspace_copy, repo_root, capsys):
    iam = _with_iam(workspace_copy, repo_root)
    text = edit(iam, ("project: demo-project", "project: other-project"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f":{line_of(text, 'project: other-project')}: project: project 'other-project' is not the "
            "project of stack gcp-demo ('demo-project')") in err


def test_valid_iam_file_is_reported_checked(workspace_copy, repo_root, capsys):
    _with_iam(workspace_copy, repo_root)
    assert main(["--root", str(workspace_copy), "validate"]) == 0
    assert "the IAM file" in capsys.readouterr().out


def test_validate_a_cluster_checks_the_configs_that_reference_it(workspace_copy, capsys):
    b = workspace_copy / "clusters" / "gcp-tpu-b.yaml"
    text = edit(b, (GOOD_AUDIENCE, "signed_header_audience: /projects/1/global/backendServices/ctl-b-be"))
    rc, err = _validate(workspace_copy, capsys, "gcp-tpu-b")
    assert rc == 2
    assert f"{shown(b)}:{line_of(text, 'signed_header_audience:')}: auth.iap.signed_header_audience:" in err
    assert f"(listed at {shown(workspace_copy / 'clusters' / 'gcp-demo.yaml')}:" in err
    assert str(workspace_copy) not in err          # message text names files as the head does


# --- validate rejects what plan --all, deploy and the programs reject --------------------------

def _plan_all(root: Path, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["--root", str(root), "plan", "--all"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("rel", ["infra/__main__.py", "buckets/__main__.py", "github/__main__.py"])
def test_a_missing_program_entry_point_is_refused_by_validate_and_plan(workspace_copy, capsys, rel):
    root = workspace_copy.resolve()
    (root / rel).unlink()
    expected = (f"error: {shown(root / rel)}: the program's entry point __main__.py does not exist — "
                "restore it from git, or fix `main:` in Pulumi.yaml\n")
    rc, err = _validate(root, capsys)
    assert (rc, err) == (2, expected)
    rc, out, err = _plan_all(root, capsys)   # was: exit 1, "the program failed: FileNotFoundError"
    assert (rc, out, err) == (2, "", expected)


def test_a_missing_cluster_project_file_is_refused_by_validate(workspace_copy, capsys):
    root = workspace_copy.resolve()
    (root / "infra" / "Pulumi.yaml").unlink()
    text = (root / "clusterstack.toml").read_text()
    rc, err = _validate(root, capsys)
    assert rc == 2
    assert err.startswith(f"error: {shown(root / 'clusterstack.toml')}:{line_of(text, 'project_dir = ')}: "
                          f"workspace.project_dir: project 'clusters': no Pulumi.yaml in {root}/infra")
    assert _plan_all(root, capsys)[0] == 2


def test_a_plaintext_secret_in_services_yaml_is_refused_by_validate(workspace_copy, repo_root, capsys):
    root = workspace_copy.resolve()
    shutil.copy(repo_root / "services.yaml", root / "services.yaml")
    shutil.copytree(repo_root / "services", root / "services", ignore=shutil.ignore_patterns("__pycache__"))
    assert _validate(root, capsys)[0] == 0
    text = edit(root / "services.yaml", "secrets:\n      # the state backend's passphrase, resolved at "
                "rollout time (never written to disk)\n      PULUMI_CONFIG_PASSPHRASE: gcp-secret://projects"
                "/demo-project/secrets/pulumi-state-passphrase/versions/latest",
                "secrets:\n      PULUMI_CONFIG_PASSPHRASE: hunter2")
    rc, err = _validate(root, capsys)
    assert rc == 2
    assert err == (f"error: {shown(root / 'services.yaml')}:{line_of(text, 'hunter2')}: services.echo.secrets."
                   "PULUMI_CONFIG_PASSPHRASE: not a secret spec; use gcp-secret://projects/P/secrets/"
                   "NAME/versions/V, env:NAME or file:PATH (a literal secret value is never accepted) "
                   "— fix the value\n")
    assert "hunter2" not in err
    assert main(["--root", str(root), "deploy", "list"]) == 2   # what deploy says too


@pytest.mark.parametrize("name", ["my project", "a/b", "1st", "x" * 101, ".."])
@pytest.mark.parametrize("project", ["infra", "buckets"])
def test_a_project_name_pulumi_refuses_is_located_by_validate_and_plan(workspace_copy, capsys, name, project):
    # Pulumi's rule (tokens.ValidateProjectName); before, plan exited 1 on the URN it built.
    root = workspace_copy.resolve()
    pulumi_yaml = root / project / "Pulumi.yaml"
    text = pulumi_yaml.read_text()
    pulumi_yaml.write_text(text.replace(text.split("\n")[0], f"name: {name}"))
    expected = (f"error: {shown(pulumi_yaml)}:1: name: {name!r} is not a Pulumi project name: letters, "
                "digits, '_', '.' and '-', not starting with a digit or '-', not only dots, at most 100 characters "
                "— rename the project")
    rc, err = _validate(root, capsys)
    assert rc == 2 and expected in err
    rc, out, err = _plan_all(root, capsys)
    assert (rc, out) == (2, "") and expected in err


def test_a_directory_named_like_a_cluster_config_is_one_error_at_it(workspace_copy, capsys):
    # not an "unknown cluster" listed among the known ones, nor a cluster without a stack file
    d = workspace_copy / "clusters" / "dir.yaml"
    d.mkdir()
    expected = (f"error: {shown(d)}: the cluster config is a directory, not a file — a cluster config "
                "is a <cluster>.yaml file: remove or rename the directory (configs are not searched "
                "recursively: move any in it up into clusters/)\n")
    assert _validate(workspace_copy, capsys) == (2, expected)
    assert _validate(workspace_copy, capsys, "dir") == (2, expected)
    assert main(["--root", str(workspace_copy), "plan", "dir"]) == 2
    assert capsys.readouterr().err == expected


def test_more_flavors_than_the_clusterqueues_resource_group_holds_is_refused_by_validate_and_plan(
        workspace_copy, capsys):
    # Kueue 0.14.4's ClusterQueue CRD: at most 64 flavors per resource group, and every flavor
    # (one per NodePool) sits in the one group (tests/derive/test_derive.py reads the CRD).
    from clusterstack.derive import KUEUE_MAX_FLAVORS_PER_GROUP

    root = workspace_copy.resolve()
    f = root / "clusters" / "cw-demo-h100.yaml"
    blocks = [f"  sg-{i:03d}:\n    resources: {{cpu: 64, ram: 512GB, disk: 6.98TiB, device_type: cpu}}\n"
              "    buffer_slices: 1\n    max_slices: 1\n    slice_template: {num_vms: 1, coreweave: {region: US-EAST-04A, "
              "instance_type: cd-gp-i64-erapids}}\n" for i in range(KUEUE_MAX_FLAVORS_PER_GROUP - 1)]
    extra = "".join(blocks)   # + cpu-general + h100: one more than the limit
    text = edit(f, "scale_groups:\n", "scale_groups:\n" + extra)
    expected = (f"error: {shown(f)}:{line_of(text, 'scale_groups:')}: scale_groups: "
                f"{KUEUE_MAX_FLAVORS_PER_GROUP + 1} Kueue ResourceFlavors (one per NodePool scale group) "
                "in the ClusterQueue's one resource group; Kueue 0.14.4 ClusterQueue CRD")
    rc, err = _validate(root, capsys, "cw-demo-h100")
    assert rc == 2 and err.startswith(expected) and "Traceback" not in err
    rc, out, err = _plan_all(root, capsys)
    assert (rc, out) == (2, "") and expected in err
    edit(f, blocks[0], "")   # at the limit
    assert _validate(root, capsys, "cw-demo-h100")[0] == 0


@pytest.mark.parametrize("ns,what", [
    ("kube-system", "'kube-system' is a Kubernetes system namespace"),
    ("default", "'default' is a Kubernetes system namespace"),
    ("cert-manager", "'cert-manager' is the namespace of the cert-manager Helm release"),
    ("kueue-system", "'kueue-system' is the namespace of the kueue Helm release"),
])
def test_a_system_namespace_as_the_workload_namespace_is_refused_by_validate_and_plan(
        workspace_copy, capsys, ns, what):
    root = workspace_copy.resolve()
    f = root / "clusters" / "cw-demo-h100.yaml"
    text = edit(f, "  namespace: training\n", f"  namespace: {ns}\n")
    expected = f"error: {shown(f)}:{line_of(text, f'namespace: {ns}')}: kubernetes_provider.namespace: {what}"
    rc, err = _validate(root, capsys, "cw-demo-h100")
    assert rc == 2 and err.startswith(expected) and "Traceback" not in err
    rc, out, err = _plan_all(root, capsys)
    assert (rc, out) == (2, "") and expected in err
