"""The foundation's CLI: ``stacks``, ``validate``, ``plan`` — output, files and exit codes.

Runs ``clusterstack.cli.main(argv)`` in process (it returns the exit code); stdout and stderr
are captured by pytest.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import REPO, edit, line_of, shown
from clusterstack.cli import main
from clusterstack.plan import dumps, loads
from clusterstack.pulumi.tokens import NODEPOOL
from clusterstack.workspace import Workspace
from regen_golden import EXAMPLE_STACKS

PROVIDERS = {"cw-demo-gb200": "coreweave", "cw-demo-h100": "coreweave", "cw-demo-teams": "coreweave", "gcp-demo": "gcp",
             "gcp-tpu-a": "gcp", "gcp-tpu-b": "gcp"}


def run(root: Path, *argv: str) -> int:
    return main(["--root", str(root), *argv])


def no_traceback(cap) -> None:
    assert "Traceback" not in cap.out + cap.err


# ---------------------------------------------------------------------------------------
# stacks

def test_stacks_json(repo_root, capsys):
    assert run(repo_root, "stacks", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["project"] == "clusterstack"
    rows = {r["stack"]: r for r in doc["stacks"]}
    assert [r["stack"] for r in doc["stacks"]] == sorted(rows) == Workspace.load(repo_root).cluster_names()
    for stack in EXAMPLE_STACKS:
        assert rows[stack] == {"stack": stack, "cluster": stack, "provider": PROVIDERS[stack],
                               "stack_file": f"infra/Pulumi.{stack}.yaml", "config": f"clusters/{stack}.yaml"}


def test_stacks_table(repo_root, capsys):
    assert run(repo_root, "stacks") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "project clusterstack"
    for stack in EXAMPLE_STACKS:
        (row,) = [ln for ln in lines if ln.split("│")[0].strip() == stack]
        assert [c.strip() for c in row.split("│")] == [stack, PROVIDERS[stack], f"infra/Pulumi.{stack}.yaml",
                                                      f"clusters/{stack}.yaml"]


# ---------------------------------------------------------------------------------------
# validate

def test_validate_all_and_some(repo_root, capsys):
    n = len(Workspace.load(repo_root).cluster_names())
    assert run(repo_root, "validate") == 0
    assert capsys.readouterr().out == (f"ok: {n} cluster config(s), their stack files, 2 project "
                                          "config(s), the IAM file and the [guard] policy are valid\n")
    assert run(repo_root, "validate", "cw-demo-h100", "gcp-demo") == 0
    assert capsys.readouterr().out == ("ok: 2 cluster config(s), their stack files, 2 project config(s), "
                                          "the IAM file and the [guard] policy are valid\n")


# ---------------------------------------------------------------------------------------
# plan (tree)

def test_plan_tree_shows_components_resources_options_and_counts(repo_root, capsys, example_plans):
    assert run(repo_root, "plan", "cw-demo-h100") == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert lines[0] == "clusterstack/cw-demo-h100"
    out = cap.out
    for comp in ("clusterstack:coreweave:NodePools  nodepools", "clusterstack:coreweave:Rbac  rbac",
                 "clusterstack:coreweave:Kueue  kueue", "clusterstack:coreweave:Ingress  ingress",
                 "clusterstack:cloudflare:FederationDns  dns", "pulumi:providers:kubernetes  k8s"):
        assert comp in out
    for pool in ("cwdemo-cpu-general", "cwdemo-h100"):
        assert (f"{NODEPOOL}  {pool}  "
                "[protect ignore_changes=spec.targetNodes delete_before_replace]") in out
    # what replaces a resource, on lines of its own below it (the NodePool's immutable fields)
    assert ('replaces on: spec.instanceType, spec.nodeLabels["cwdemo/managed"], '
            'spec.nodeLabels["cwdemo/scale-group"]') in out
    assert "replaces on: value, preemptionPolicy" in out
    assert "replaced with: cwdemo-cpu-general-flavor, cwdemo-h100-flavor, hostname, infiniband" in out
    assert "cloudflare:index/dnsRecord:DnsRecord  ctl-cw-demo-h100.example.org  [protect]" in out
    counts = example_plans["cw-demo-h100"].counts_by_type()
    assert f"cw-demo-h100: {sum(counts.values())} resources" in out
    for typ, n in counts.items():
        (row,) = [ln for ln in lines if ln.split("│")[0].strip() == typ]
        assert row.split("│")[1].strip() == str(n)
    # Resources are drawn under their component.
    idx = lines.index(next(ln for ln in lines if "clusterstack:coreweave:NodePools" in ln))
    assert "cwdemo-cpu-general" in lines[idx + 1] and lines[idx + 1].startswith("│   ")
    assert cap.err == ""


def test_plan_tree_shows_retain_on_delete(repo_root, capsys):
    assert run(repo_root, "plan", "gcp-demo") == 0
    out = capsys.readouterr().out
    assert "gcp:compute/address:Address  controller-ingress  [protect retain_on_delete]" in out


def test_plan_all_plans_every_stack(repo_root, plan_all_output):
    lines = plan_all_output().splitlines()
    for stack in Workspace.load(repo_root).cluster_names():
        assert f"clusterstack/{stack}" in lines


def test_plan_all_of_a_fresh_workspace_says_there_is_nothing_to_plan(tmp_path, capsys):
    """Nothing to plan is no error (exit 0: `validate` passes the same workspace, and a CI job
    planning a fresh repository must not fail), but it is said, on stderr; stdout stays the
    (empty) tree or the JSON document."""
    ws = tmp_path / "ws"
    assert main(["init", str(ws)]) == 0
    capsys.readouterr()
    assert run(ws, "plan", "--all") == 0
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == (
        "no stacks to plan: clusters/ holds no <cluster>.yaml and no [projects] project has a "
        "Pulumi.<stack>.yaml — add a cluster with `clusterstack cluster new NAME`\n")
    assert run(ws, "plan", "--all", "--json") == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"format": "clusterstack.plan/v1", "stacks": []}
    assert cap.err.startswith("no stacks to plan: clusters/ holds no <cluster>.yaml")
    # a [projects] project without a stack file, planned alone
    (ws / "extra").mkdir()
    (ws / "extra" / "Pulumi.yaml").write_bytes((REPO / "buckets" / "Pulumi.yaml").read_bytes())
    with open(ws / "clusterstack.toml", "a", encoding="utf-8") as f:
        f.write('\n[projects.extra]\ndir = "extra"\nkind = "buckets"\n')
    assert run(ws, "plan", "--project", "extra") == 0
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ("no stacks to plan: [projects.extra] has no Pulumi.<stack>.yaml "
                                         "— add one beside its Pulumi.yaml to plan a stack of it\n")


# ---------------------------------------------------------------------------------------
# plan --json / --output

def test_plan_json_of_named_stacks(repo_root, capsys, example_plans):
    assert run(repo_root, "plan", "gcp-demo", "cw-demo-h100", "--json") == 0
    out = capsys.readouterr().out
    assert out == dumps([example_plans["cw-demo-h100"], example_plans["gcp-demo"]])
    assert [p.stack for p in loads(out)] == ["cw-demo-h100", "gcp-demo"]


def test_a_stack_named_twice_is_planned_once(repo_root, capsys, example_plans):
    assert run(repo_root, "plan", "cw-demo-h100", "cw-demo-h100", "--json") == 0
    assert capsys.readouterr().out == dumps([example_plans["cw-demo-h100"]])


def test_output_file_is_the_json_written_atomically(repo_root, tmp_path, capsys, example_plans):
    target = tmp_path / "plan.json"
    target.write_text("old contents\n", encoding="utf-8")
    as_json = dumps([example_plans["cw-demo-gb200"], example_plans["gcp-demo"]])  # what --json prints
    assert run(repo_root, "plan", "cw-demo-gb200", "gcp-demo", "--json", "--output", str(target)) == 0
    assert capsys.readouterr().out == as_json
    assert target.read_bytes() == as_json.encode("utf-8")
    assert os.listdir(tmp_path) == ["plan.json"]  # no temp file left behind
    assert target.stat().st_mode & 0o777 == 0o644


def test_output_with_the_tree(repo_root, tmp_path, capsys, example_plans):
    target = tmp_path / "h100.json"
    as_json = dumps([example_plans["cw-demo-h100"]])  # what `plan cw-demo-h100 --json` prints
    assert run(repo_root, "plan", "cw-demo-h100", "-o", str(target)) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("clusterstack/cw-demo-h100\n")
    assert cap.err == f"wrote {target}\n"
    assert target.read_text(encoding="utf-8") == as_json


def test_output_untouched_when_planning_fails(workspace_copy, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "plan.json"
    target.write_text("previous plan\n", encoding="utf-8")
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    assert run(workspace_copy, "plan", "--all", "--json", "-o", str(target)) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert target.read_text(encoding="utf-8") == "previous plan\n"
    assert os.listdir(out_dir) == ["plan.json"]


def test_output_into_a_missing_directory_is_a_user_error(repo_root, tmp_path, capsys):
    target = tmp_path / "no-such-dir" / "plan.json"
    assert run(repo_root, "plan", "gcp-demo", "--json", "-o", str(target)) == 2
    cap = capsys.readouterr()
    assert cap.err == (f"error: {shown(target)}: cannot write the plan: the directory does not exist — "
                       "pass --output a path in an existing, writable directory\n")
    assert cap.out == ""
    no_traceback(cap)


# ---------------------------------------------------------------------------------------
# Stack pointers

def _every_command_fails_with(root: Path, capsys, expected: str) -> None:
    for argv in (["stacks"], ["stacks", "--json"], ["validate"], ["plan", "--all"], ["plan", "cw-demo-h100"]):
        assert run(root, *argv) == 2, argv
        cap = capsys.readouterr()
        assert cap.err == expected, argv
        assert cap.out == ""
        no_traceback(cap)


def test_stack_file_pointing_at_no_cluster(workspace_copy, capsys):
    f = workspace_copy.resolve() / "infra" / "Pulumi.ghost.yaml"
    f.write_text("# a stack whose cluster was removed\nconfig:\n  clusterstack:cluster: ghost\n", encoding="utf-8")
    line = line_of(f.read_text(encoding="utf-8"), "clusterstack:cluster")
    _every_command_fails_with(workspace_copy, capsys, (
        f"error: {shown(f)}:{line}: config.clusterstack:cluster: points at cluster 'ghost', which has no "
        "config in clusters/ — add the cluster config or delete this stack file\n"))


def test_cluster_without_stack_file(workspace_copy, capsys):
    root = workspace_copy.resolve()
    (root / "infra" / "Pulumi.gcp-demo.yaml").unlink()
    _every_command_fails_with(workspace_copy, capsys, (
        f"error: clusters/gcp-demo.yaml: cluster config has no stack file — create "
        "infra/Pulumi.gcp-demo.yaml with `config: {clusterstack:cluster: gcp-demo}` "
        "(clusterstack stack init gcp-demo)\n"))


def test_stack_file_pointing_at_another_cluster(workspace_copy, capsys):
    f = workspace_copy.resolve() / "infra" / "Pulumi.gcp-demo.yaml"
    text = edit(f, ("clusterstack:cluster: gcp-demo", "clusterstack:cluster: cw-demo-h100"))
    _every_command_fails_with(workspace_copy, capsys, (
        f"error: {shown(f)}:{line_of(text, 'clusterstack:cluster')}: config.clusterstack:cluster: stack "
        "'gcp-demo' points at cluster 'cw-demo-h100' — a stack is named after its cluster: fix the "
        "pointer or the file name\n"))


def test_stack_file_without_pointer(workspace_copy, capsys):
    f = workspace_copy.resolve() / "infra" / "Pulumi.gcp-demo.yaml"
    f.write_text("config: {}\n", encoding="utf-8")
    _every_command_fails_with(workspace_copy, capsys, (
        f"error: {shown(f)}:1: config: no `clusterstack:cluster` config — add `clusterstack:cluster: gcp-demo`\n"))


# ---------------------------------------------------------------------------------------
# Usage errors

@pytest.mark.parametrize("argv,message", [
    (["plan"], "error: no cluster given — name one or more clusters, or pass --all\n"),
    (["plan", "--json"], "error: no cluster given — name one or more clusters, or pass --all\n"),
    (["plan", "gcp-demo", "--all"], "error: give cluster names or --all, not both — drop one of them\n"),
])
def test_plan_selection_errors(repo_root, capsys, argv, message):
    assert run(repo_root, *argv) == 2
    cap = capsys.readouterr()
    assert (cap.out, cap.err) == ("", message)


@pytest.mark.parametrize("argv,fragment", [
    (["frobnicate"], "No such command 'frobnicate'"),
    (["plan", "--everything"], "No such option: --everything"),
])
def test_unknown_command_or_option(repo_root, capsys, argv, fragment):
    assert run(repo_root, *argv) == 2
    cap = capsys.readouterr()
    assert fragment in cap.err
    no_traceback(cap)


def test_not_a_workspace(tmp_path, capsys):
    assert run(tmp_path, "validate") == 2
    cap = capsys.readouterr()
    assert cap.err == (f"error: {tmp_path.resolve()}/clusterstack.toml: no clusterstack.toml here — "
                       "run clusterstack from the repository root, or pass --root DIR\n")


def test_debug_shows_the_traceback(workspace_copy, capsys):
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    assert main(["--root", str(workspace_copy), "--debug", "validate", "cw-demo-h100"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "ConfigError" in err
    assert err.rstrip().endswith("below the 2Gi minimum for the Kueue manager — fix the value")


def test_plan_output_into_missing_directory_fails_before_planning(workspace_copy, tmp_path, capsys):
    """--output is checked first: with a cluster config that would fail to load (and so fail
    the plan), the error is still the missing directory — nothing was loaded or planned."""
    from clusterstack.cli import main

    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    code = main(["--root", str(workspace_copy), "plan", "--all", "-o", str(tmp_path / "nodir" / "p.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "directory does not exist" in err
    assert "manager_memory_limit" not in err


def test_messages_print_colon_words_as_written_not_as_emoji(repo_root, capsys):
    """rich renders ``:warning:`` as an emoji even with markup off; messages carry file names,
    keys and names as the user wrote them."""
    capsys.readouterr()
    assert main(["--root", str(repo_root), "plan", "x:warning:"]) == 2
    err = capsys.readouterr().err
    assert "x:warning:" in err and "\u26a0" not in err


@pytest.mark.parametrize("argv, stream, code", [
    (["validate"], "stderr", 2),           # the errors go to a reader that has gone: the code stands
    (["schema", "cluster"], "stdout", 141),  # output to a reader that has gone (`| head`): SIGPIPE's code
])
def test_a_closed_pipe_is_not_an_internal_error(workspace_copy, argv, stream, code):
    import os
    import subprocess
    import sys
    root = workspace_copy.resolve()
    if argv == ["validate"]:
        edit(root / "clusters/cw-demo-h100.yaml", "name: cw-demo-h100\n", "name: 7\nnum_vms: lots\n")
    read, write = os.pipe()
    os.close(read)                         # every write the child makes gets EPIPE
    other = open(os.devnull, "w")
    try:
        proc = subprocess.run([sys.executable, "-c", "from clusterstack.cli import entrypoint; entrypoint()",
                               "--root", str(root), *argv],
                              stdout=write if stream == "stdout" else other,
                              stderr=write if stream == "stderr" else subprocess.PIPE, timeout=120)
    finally:
        os.close(write)
        other.close()
    assert proc.returncode == code
    if stream == "stdout":
        assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr


def test_plan_ends_with_the_fleet_per_cluster_that_inventory_reports(capsys, plan_all_output):
    """`make demo` (= `plan --all`) closes with one row per cluster — pools, nodes, racks,
    GPUs, GPU quota — and the totals, the same figures as `inventory --json`."""
    import json

    from clusterstack.cli import main
    from helpers import REPO

    assert main(["--root", str(REPO), "inventory", "--json"]) == 0
    inv = json.loads(capsys.readouterr().out)
    out = plan_all_output()   # `plan --all` of the repository, exit 0 asserted by the fixture
    tail = out[out.index("fleet: what the plans above declare"):].splitlines()
    rows = {cells[0]: cells for cells in ([c.strip() for c in ln.split("│")] for ln in tail[3:])
            if cells[0]}
    for stack in {p["stack"] for p in inv["pools"]}:
        gpus = sum(p["gpus"] for p in inv["pools"] if p["stack"] == stack)
        quota = sum(q["gpus"] for q in inv["queues"] if q["stack"] == stack)
        assert rows[stack][-2:] == [str(gpus), str(quota)], rows[stack]
    assert rows["total"][-2] == str(inv["total_gpus"])
    assert "gcp-demo" not in rows   # no NodePool, no queue: not a row
