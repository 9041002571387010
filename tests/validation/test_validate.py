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
    shutil.copytree(repo_root / "iam", root / "iam")
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
    assert "listed at" in err and "gcp-demo.yaml" in err
