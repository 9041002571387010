"""The one PR comment carries both verdicts: the live guard's (``meta.json``) and the static
plan diff's against the PR's base (``static-diff.json``, the ``diff --json`` document the
preview workflow saves beside it)."""

from __future__ import annotations

import json

from ci_support import verdict_doc
from clusterstack.ci.comment import STATIC_DIFF, load_reports, status_line

POOL = ("urn:pulumi:cw-demo-h100::clusterstack::clusterstack:coreweave:NodePools$"
        "kubernetes:compute.coreweave.com/v1alpha1:NodePool::cwdemo-h100")


def _meta(d, severity="change", guard=None):
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({
        "schema": 2, "stack": "cw-demo-h100", "project": "clusters", "slug": "cw-demo-h100",
        "refresh": False, "result": "ok", "severity": severity, "counts": {"update": 1, "same": 6},
        "changes": {"update": 1}, "guard": guard or verdict_doc(ops={"update": 1, "same": 6}),
        "error": None, "diff": "diff.txt"}))
    (d / "diff.txt").write_text("~ cwdemo-h100\n")


def test_a_static_finding_is_shown_and_makes_the_stack_blocked(tmp_path):
    _meta(tmp_path / "cw-demo-h100")
    (tmp_path / "cw-demo-h100" / STATIC_DIFF).write_text(json.dumps({
        "format": "clusterstack.diff/v1", "base": {"ref": "main"}, "destructive": 1,
        "stacks": [{"stack": "cw-demo-h100", "findings": [
            {"urn": POOL, "type": "x", "kind": "replace", "op": "replace", "path": "spec.instanceType"}]}]}))
    [r] = load_reports(tmp_path)
    assert r.severity == "blocked"
    line = status_line(r)
    assert "guard: ok" in line and "**static diff: 1 destructive** (replace of `cwdemo-h100` (`spec.instanceType`))" in line


def test_a_clean_static_diff_says_so_and_no_file_says_nothing(tmp_path):
    _meta(tmp_path / "a")
    (tmp_path / "a" / STATIC_DIFF).write_text(json.dumps({"stacks": [], "destructive": 0}))
    [r] = load_reports(tmp_path)
    assert r.severity == "change" and status_line(r).endswith("static diff: clean")
    _meta(tmp_path / "b" / "x")
    [r2] = [x for x in load_reports(tmp_path / "b")]
    assert "static diff" not in status_line(r2)
