"""The ``diff --base`` protocol (clusterstack.plan.refproto): the stable surface resolves in the
running package, the documents round-trip and refuse another protocol, a REAL earlier commit
of this repository is planned through it, and what a plan reads is noted by THE byte reader
and the workspace listings (an audit hook, here only, checks that nothing read escapes them)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterstack import reads
from clusterstack.plan import plan_stack
from clusterstack.plan.__main__ import serve, stack_list
from clusterstack.plan.at_ref import RefPlanner
from clusterstack.plan.cache import Recording, entries
from clusterstack.plan.model import dumps, loads
from clusterstack.plan.refproto import (CACHE_NEEDS, PROTOCOL, SURFACE, ProtocolError, Request,
                                        Response, resolve_surface)
from helpers import REPO, copy_workspace, git

#: A real commit of this repository's main branch (2026-12-02, "tests/imports/test_migrate: …"):
#: its package predates the protocol and the read record (clusterstack/reads.py), so the driver
#: of today plans it through the required names of SURFACE alone, uncached.
EARLIER = "0818074b645097922df7071ec17648ec4448edd7"


def test_every_name_of_the_stable_surface_is_in_the_running_package():
    found = resolve_surface()
    assert sorted(found) == sorted(n.name for n in SURFACE)
    assert set(CACHE_NEEDS) <= {n.name for n in SURFACE if not n.required}


def test_the_documents_round_trip_and_refuse_another_protocol():
    request = Request(root="/w", stacks=["a"], projects="all", cache_dir="/c", cache_program="k")
    assert Request.loads(request.dumps()) == request
    response = Response(plans="[]", cached=True, hits=["infra/a"], missing=["x:y"])
    assert Response.loads(response.dumps()) == response
    other = response.dumps().replace(PROTOCOL, "clusterstack.refplan/v0")
    with pytest.raises(ProtocolError, match="v0"):
        Response.loads(other)
    with pytest.raises(ProtocolError, match="stacks"):
        Request.loads(request.dumps().replace('["a"]', '"a"'))
    with pytest.raises(ProtocolError, match="not JSON"):
        Response.loads("Traceback (most recent call last):")


def test_the_driver_answers_every_request_with_one_response(tmp_path):
    """A request it cannot read: exit 1 and the reason in the response; REF's configs
    refusing: the program's own lines and exit code; a good one: the plans (in-process: the
    running package is the one the surface resolves in)."""
    out = io.StringIO()
    assert serve("{", out) == 1
    assert "not JSON" in Response.loads(out.getvalue()).error["lines"][0]
    root = copy_workspace(tmp_path / "ws")
    (root / "clusterstack.toml").write_text("[workspace]\nnope = 1\n")
    out = io.StringIO()
    assert serve(Request(root=str(root), stacks=["gcp-demo"]).dumps(), out) == 2
    answer = Response.loads(out.getvalue())
    assert answer.plans == "" and answer.error["exit_code"] == 2 and "nope" in "\n".join(answer.error["lines"])
    root = copy_workspace(tmp_path / "ok")
    out = io.StringIO()
    assert serve(Request(root=str(root), stacks=["gcp-demo", "absent"]).dumps(), out) == 0
    answer = Response.loads(out.getvalue())
    assert [p.stack for p in loads(answer.plans)] == ["gcp-demo"] and answer.missing == []
    assert answer.cached is False and answer.error is None  # no cache asked for


def _clone(tmp_path: Path) -> Path:
    if git(REPO, "rev-parse", "--is-shallow-repository") == "true":
        pytest.skip("a shallow clone has no earlier commit (CI: actions/checkout fetch-depth: 0)")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(REPO), str(clone)], check=True)
    git(clone, "cat-file", "-e", f"{EARLIER}^{{commit}}")  # fails loudly in a full clone without it
    return clone


def test_a_real_earlier_commit_of_this_repository_is_planned_through_the_protocol(tmp_path):
    """Today's driver against the package of :data:`EARLIER` (in the child) gives, stack for
    stack, the bytes that commit's OWN driver gives (``python -m clusterstack.plan`` run from
    a checkout of it, at the same time): the protocol changed how the two sides talk, not what
    is planned. A CoreWeave stack, a GCP stack and a ``[projects]`` project's stacks."""
    clone = _clone(tmp_path)
    at = tmp_path / "at"
    git(clone, "worktree", "add", "--detach", str(at), EARLIER)
    env = {**os.environ, "PYTHONPATH": str(at / "src"), "PYTHONSAFEPATH": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    with RefPlanner(clone, EARLIER, ["cw-demo-h100", "gcp-demo"], projects=["buckets"]) as planner:
        planner.start()
        own = subprocess.run([sys.executable, "-m", "clusterstack.plan", "--root", str(at),
                              "--skip-missing", "cw-demo-h100", "gcp-demo", "--project", "buckets"],
                             cwd=at, env=env, capture_output=True, text=True, check=True).stdout
        assert planner.in_process is False and planner.checked_out
        at_ref = planner.result()
    assert at_ref.code == "ref" and at_ref.commit == EARLIER
    # that package has no read record: planned uncached, nothing stored, and said so
    assert planner.ref_missing == ["clusterstack.reads:observing", "clusterstack.reads:note"]
    assert planner.cache_hits == planner.cache_misses == []
    assert list(entries(clone / ".clusterstack-cache" / "plans")) == []

    expected = {(p.project, p.stack): dumps([p]) for p in loads(own)}
    got = {**{(p.project, p.stack): dumps([p]) for p in at_ref.plans.values()},
           **{key: dumps([p]) for key, p in at_ref.project_plans.items()}}
    assert sorted(at_ref.plans) == ["cw-demo-h100", "gcp-demo"]
    assert sorted(at_ref.project_plans) == [("clusterstack-buckets", "lab")]  # buckets/Pulumi.yaml name
    assert got == expected and len(got) == 3


#: The first commit of this repository with ``src/clusterstack`` (2026-11-29, "Foundation skeleton").
FIRST = "fa3dd04889b92a24fa52db04bc32d31124598e06"


def test_the_required_surface_is_in_the_first_package_of_this_repository(tmp_path):
    """SURFACE says its required names are in every version since the first: resolved in a
    child whose ``clusterstack`` is that commit's (extracted with ``git archive``), by the
    protocol module of today loaded by path — as the driver does."""
    clone = _clone(tmp_path)
    first = tmp_path / "first"
    first.mkdir()
    archive = subprocess.run(["git", "archive", FIRST, "src"], cwd=clone, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(first)], input=archive, check=True)
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('proto', sys.argv[1])\n"
            "proto = importlib.util.module_from_spec(spec); sys.modules['proto'] = proto\n"
            "spec.loader.exec_module(proto)\n"
            "import clusterstack; assert clusterstack.__file__.startswith(sys.argv[2]), clusterstack.__file__\n"
            "print(' '.join(sorted(n.name for n in proto.SURFACE if n.name not in proto.resolve_surface())))\n")
    env = {**os.environ, "PYTHONPATH": str(first / "src"), "PYTHONSAFEPATH": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "src" / "clusterstack" / "plan" / "refproto.py"),
                          str(first)], cwd=first, env=env, capture_output=True, text=True, check=True)
    # only optional names are missing there (resolve_surface raises for a required one)
    assert out.stdout.split() == ["clusterstack.reads:note", "clusterstack.reads:observing",
                                  "clusterstack.workspace:Workspace.settings"]


_OPENED: list[str] | None = None


def _opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, os.PathLike)):
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
        if mode.startswith("r"):
            _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_opens)  # audit hooks cannot be removed: inert unless _OPENED is a list


def test_every_file_a_plan_reads_under_the_root_is_noted(tmp_path):
    """What planning a stack opens under the workspace root (every stack of every project)
    is among what :mod:`clusterstack.reads` noted: a read that bypassed THE byte reader would
    be missing from the plan cache's address (a stale hit). The hook sees every ``open``;
    the notes are what the cache uses."""
    global _OPENED
    root = copy_workspace(tmp_path / "ws").resolve()
    for directory, stack in stack_list(root, None, projects="all"):
        _OPENED = []
        try:
            with Recording(root) as rec:
                plan_stack(directory, stack)
            opened = _OPENED
        finally:
            _OPENED = None
        noted = {rel for kind, rel in rec.inputs() if kind == reads.FILE}
        under = {Path(p).resolve().relative_to(root).as_posix() for p in opened
                 if Path(p).resolve().is_relative_to(root) and "__pycache__" not in p}
        assert under and under <= noted, (stack, sorted(under - noted))
