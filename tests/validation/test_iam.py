"""`clusterstack validate` and the IAM file's stack: a file no stack applies, a stack that is
not a cluster, a stack that is not a GCP cluster — each an error located in clusterstack.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from clusterstack.cli import main
from helpers import edit, line_of, shown


def _validate(root: Path, capsys) -> tuple[int, str]:
    rc = main(["--root", str(root), "validate"])
    return rc, capsys.readouterr().err


def test_an_iam_file_without_a_stack_is_an_error_naming_what_to_add(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, ('stack = "gcp-demo"\n', ""))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    (line,) = [ln for ln in err.splitlines() if "[iam] stack" in ln]
    assert line.startswith(f"error: {shown(toml)}:{line_of(text, '[iam]')}: iam.stack: iam/iam.yaml "
                           "exists but no stack applies it: [iam] stack is not set")
    assert 'add stack = "gcp-demo" under [iam] in clusterstack.toml' in line
    assert "candidates: gcp-demo, gcp-tpu-a, gcp-tpu-b" in line   # the GCP clusters of demo-project


def test_without_an_iam_file_no_stack_is_needed(workspace_copy, capsys):
    edit(workspace_copy / "clusterstack.toml", ('stack = "gcp-demo"\n', ""), ('file = "iam/iam.yaml"\n', ""))
    shutil.rmtree(workspace_copy / "iam")
    assert _validate(workspace_copy, capsys)[0] == 0


def test_a_declared_iam_file_that_is_missing_is_refused_by_validate_and_plan(workspace_copy, capsys):
    # Without this rule gcp-demo's plan silently lost its 16 IAM resources while validate said ok.
    toml = workspace_copy / "clusterstack.toml"
    text = toml.read_text()
    (workspace_copy / "iam" / "iam.yaml").unlink()
    expected = (f"error: {shown(toml)}:{line_of(text, 'file = ')}: iam.file: the IAM file "
                "iam/iam.yaml does not exist — restore it (git checkout), create it with "
                "`clusterstack iam init`, or remove file and stack from [iam] for a workspace "
                "without IAM\n")
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err) == (2, expected)
    assert main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 2
    cap = capsys.readouterr()
    assert cap.err == expected and cap.out == ""
    # only the stack of [iam] needs it: another GCP stack still plans
    assert main(["--root", str(workspace_copy), "plan", "gcp-tpu-a"]) == 0
    # a directory where the file should be is named as such
    (workspace_copy / "iam" / "iam.yaml").mkdir()
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and "the IAM file iam/iam.yaml is a directory, not a file" in err


def test_the_stack_must_be_a_gcp_cluster_of_the_workspace(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, ('stack = "gcp-demo"', 'stack = "gcp-dmeo"'))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"error: {shown(toml)}:{line_of(text, 'stack = ')}: iam.stack: [iam] stack 'gcp-dmeo' is "
            "not a cluster of this workspace") in err
    edit(toml, ('stack = "gcp-dmeo"', 'stack = "cw-demo-h100"'))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and "[iam] stack 'cw-demo-h100' is not a GCP cluster" in err


def test_an_accessor_grant_on_a_backend_the_stack_does_not_declare_fails_validate_as_plan(
        workspace_copy, capsys):
    # A green validate means every plan runs: the rule is the program's, located the same.
    edit(workspace_copy / "clusters" / "gcp-demo.yaml",
         ("        - cluster: gcp-tpu-b\n          token_proxy: false\n", ""))
    iam = workspace_copy / "iam" / "iam.yaml"
    text = iam.read_text()
    expected = (f"error: {shown(iam)}:{line_of(text, '- name: gcp-tpu-b-be')}: "
                "iap_backend_services[1].name: backend service 'gcp-tpu-b-be' is not an IAP backend "
                "of this stack's load balancer (gcp-tpu-a-be) — name a controller's backend, "
                "<cluster>-be, of provisioning.gcp.gclb.controllers\n")
    assert _validate(workspace_copy, capsys) == (2, expected)
    assert main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 2
    cap = capsys.readouterr()
    assert cap.err == expected and cap.out == ""


def _no_load_balancer_errors(iam: Path) -> str:
    text = iam.read_text()
    return "".join(
        f"error: {shown(iam)}:{line_of(text, f'- name: {be}')}: iap_backend_services[{i}].name: "
        f"backend service {be!r} is not an IAP backend of this stack: it has no load balancer "
        "(provisioning.gcp.gclb) — remove the entry, or add a gclb: block whose controllers "
        "declare <cluster>-be to the [iam] stack\n"
        for i, be in enumerate(("gcp-tpu-a-be", "gcp-tpu-b-be")))


def test_a_gcp_iam_stack_without_a_load_balancer_refuses_every_accessor_grant(workspace_copy, capsys):
    # Without a load balancer there is no backend a binding could name: validate and plan
    # refuse each entry (they used to plan bindings on backends the stack never declares).
    edit(workspace_copy / "clusterstack.toml", ('stack = "gcp-demo"', 'stack = "gcp-tpu-a"'))
    expected = _no_load_balancer_errors(workspace_copy / "iam" / "iam.yaml")
    assert _validate(workspace_copy, capsys) == (2, expected)
    assert main(["--root", str(workspace_copy), "plan", "gcp-tpu-a"]) == 2
    cap = capsys.readouterr()
    assert cap.err == expected and cap.out == ""


def test_removing_the_load_balancer_of_the_iam_stack_refuses_its_accessor_grants(workspace_copy, capsys):
    demo = workspace_copy / "clusters" / "gcp-demo.yaml"
    text = demo.read_text()
    assert text.endswith("      subnetwork: default\n")   # gclb: is the file's last block
    demo.write_text(text[:text.index("    gclb:\n")])
    expected = _no_load_balancer_errors(workspace_copy / "iam" / "iam.yaml")
    assert _validate(workspace_copy, capsys) == (2, expected)
    assert main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 2
    cap = capsys.readouterr()
    assert cap.err == expected and cap.out == ""
