"""`ci comment`: the one Markdown comment — golden files for every severity, truncation and
redaction, and the rules of fair truncation.

Golden files: tests/golden/ci-comment-*.md. After an intended change to the comment's layout,
rewrite them with ``CI_REGEN_GOLDEN=1 .venv/bin/pytest tests/test_ci_comment.py`` and review
``git diff tests/golden``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_support import (CANARY_EMAIL, CANARY_ENV, CANARY_KEYED, CANARY_LOCAL, CANARY_TOKEN, CanaryEngine,
                        canary_steps, severity_engine, verdict_doc)
from clusterstack.ci.comment import (MARKER, CommentError, StackReport, cut_lines, fair_shares, load_reports,
                                     parse_data, render_comment, status_line)
from clusterstack.ci.discover import StackTarget
from clusterstack.ci.preview import preview_target, run_previews, write_outcome
from clusterstack.ci.redaction import Redactor
from clusterstack.cli import main
from fakes.pulumi import FakeEngine, FakeStack, res_step
from clusterstack.guard import GuardPolicy

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SHA = "3f2a9c1d7b8e4f60a1b2c3d4e5f60718293a4b5c"
RUN = "https://github.com/example-lab/infra/actions/runs/123456789"
CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]


def check_golden(name: str, body: str) -> None:
    path = GOLDEN / name
    if os.environ.get("CI_REGEN_GOLDEN") == "1":
        path.write_text(body, encoding="utf-8")
    assert path.is_file(), f"no golden {path}: run with CI_REGEN_GOLDEN=1 and review it"
    assert body == path.read_text(encoding="utf-8"), \
        f"the comment differs from {path}; if intended, regenerate with CI_REGEN_GOLDEN=1"


def preview_dir(tmp_path: Path, engine: FakeEngine, stacks: list[str], redactor: Redactor | None = None) -> Path:
    out = tmp_path / "previews"
    red = redactor or Redactor()
    targets = [StackTarget("clusters", s) for s in stacks]
    for o in run_previews(targets, lambda t: preview_target(t, engine=lambda _: engine, policy=GuardPolicy()),
                          parallel=3):
        write_outcome(out, o, red)
    return out


def test_golden_every_severity(tmp_path):
    out = preview_dir(tmp_path, severity_engine(CLUSTERS), CLUSTERS)
    # buckets/lab was in the matrix but its job left no artifact (cancelled)
    reports = load_reports(out, expected=CLUSTERS + ["buckets/lab"])
    assert [(r.stack, r.severity) for r in reports] == [
        ("buckets/lab", "error"), ("gcp-tpu-a", "error"), ("cw-demo-h100", "blocked"),
        ("gcp-demo", "delete"), ("cw-demo-gb200", "change"), ("gcp-tpu-b", "none")]
    c = render_comment(reports, sha=SHA, run_url=RUN)
    assert not c.truncated
    check_golden("ci-comment-severities.md", c.body)
    assert c.body.startswith(MARKER + "\n")
    assert parse_data(c.body) == {"changed": ["cw-demo-gb200", "cw-demo-h100", "gcp-demo"],
                                  "errors": ["buckets/lab", "gcp-tpu-a"], "sha": SHA, "v": 1}
    # a collapsible block per changed or failed stack, none for the clean or the missing one
    assert c.body.count("<details>") == 4 and "gcp-tpu-b — " not in c.body.split("#### Diffs")[1]


def big_engine() -> FakeEngine:
    """gcp-demo: a huge diff (300 changed rules); cw-demo-gb200: a medium one; cw-demo-h100: tiny."""
    fw = "gcp:compute/firewall:Firewall"
    eng = FakeEngine({s: FakeStack() for s in CLUSTERS})
    eng.stacks["gcp-demo"].steps = tuple(
        res_step("update", "gcp-demo", fw, f"rule-{i:03d}", old={"priority": 1000 + i, "sourceRanges": ["10.0.0.0/8"]},
                 new={"priority": 1000 + i, "sourceRanges": [f"10.{i % 250}.0.0/16"]},
                 detailed_diff={"sourceRanges[0]": {"kind": "update"}}) for i in range(300))
    eng.stacks["cw-demo-gb200"].steps = tuple(
        res_step("create", "cw-demo-gb200", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", f"team-{i:02d}",
                 new={"metadata": {"name": f"team-{i:02d}"}}) for i in range(40))
    eng.stacks["cw-demo-h100"].steps = (
        res_step("update", "cw-demo-h100", "kubernetes:core/v1:ConfigMap", "kueue-config",
                 old={"data": {"x": "1"}}, new={"data": {"x": "2"}}, detailed_diff={"data.x": {"kind": "update"}}),)
    return eng


@pytest.fixture(scope="module")
def big_reports(tmp_path_factory) -> list[StackReport]:
    """The reports of :func:`big_engine`'s previews, written and read back once (frozen:
    every test renders from the same ones)."""
    return load_reports(preview_dir(tmp_path_factory.mktemp("big"), big_engine(), CLUSTERS))


def test_golden_truncated(big_reports):
    reports = big_reports
    c = render_comment(reports, max_bytes=6000, sha=SHA, run_url=RUN)
    assert len(c.body.encode()) <= 6000
    assert c.cut == ("cw-demo-gb200", "gcp-demo") and c.omitted == ()
    check_golden("ci-comment-truncated.md", c.body)
    assert "✂️ Truncated to fit GitHub's comment limit (6000 bytes)" in c.body
    assert f"[the workflow run's artifacts]({RUN})" in c.body
    # the tiny diff is shown whole; every stack keeps its status line
    assert '~ data.x: "1" → "2"' in c.body
    for r in reports:
        assert status_line(r) in c.body


def test_golden_redacted(tmp_path, monkeypatch):
    eng = CanaryEngine({"gcp-demo": FakeStack(steps=canary_steps("gcp-demo"))})
    monkeypatch.setenv("STATE_PASSPHRASE", CANARY_ENV)
    out = preview_dir(tmp_path, eng, ["gcp-demo"], Redactor.from_env())
    c = render_comment(load_reports(out), sha=SHA, run_url=RUN, redactor=Redactor.from_env())
    for canary in (CANARY_EMAIL, CANARY_LOCAL, CANARY_TOKEN, CANARY_KEYED, CANARY_ENV):
        assert canary not in c.body
    check_golden("ci-comment-redacted.md", c.body)


def test_the_comment_redacts_again_what_it_reads(tmp_path):
    # a preview directory written by something else is not trusted
    d = tmp_path / "p" / "x"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"schema": 2, "stack": "x", "severity": "change",
                                             "counts": {"update": 1}, "guard": verdict_doc(), "diff": "diff.txt"}))
    (d / "diff.txt").write_text(f"x: 1 to update\n  ~ owner: {CANARY_EMAIL} token {CANARY_TOKEN}\n")
    body = render_comment(load_reports(tmp_path / "p")).body
    assert CANARY_EMAIL not in body and CANARY_TOKEN not in body and "a***@\u200blab.example" in body  # mention-safe (clusterstack.markdown)


# --- truncation rules ------------------------------------------------------------------------------

def test_every_budget_keeps_all_status_lines_and_stays_under_it(big_reports):
    reports = big_reports
    full = render_comment(reports).body
    lines = [status_line(r) for r in reports]
    for budget in range(2000, len(full.encode()) + 400, 250):
        try:
            c = render_comment(reports, max_bytes=budget)
        except CommentError:
            assert budget < 2300, budget  # only when even the status lines do not fit
            continue
        assert len(c.body.encode()) <= budget
        assert all(line in c.body for line in lines)
        assert c.truncated == ("✂️ Truncated" in c.body)
        assert c.truncated == (len(full.encode()) > budget)


def test_a_budget_too_small_for_any_diff_keeps_the_status_lines_and_says_so(big_reports):
    reports = big_reports
    fixed = len(render_comment(reports, max_bytes=60_000).body.split("#### Diffs")[0].encode())
    c = render_comment(reports, max_bytes=fixed + 400)
    assert c.omitted == ("cw-demo-gb200", "cw-demo-h100", "gcp-demo") and c.cut == ()
    assert "<details>" not in c.body and "were left out" in c.body
    assert all(status_line(r) in c.body for r in reports)


def test_diffs_share_the_budget_fairly(big_reports):
    reports = big_reports
    c = render_comment(reports, max_bytes=6000)
    assert c.cut == ("cw-demo-gb200", "gcp-demo")
    # "<summary>✏️ gcp-demo — 300 to update</summary>…" → {"gcp-demo": bytes of its block}
    sizes = {b.split(" ")[1]: len(b.split("</details>")[0].encode()) for b in c.body.split("<details>")[1:]}
    # the two cut diffs got the same share (within one diff line and the summary's length)
    assert abs(sizes["gcp-demo"] - sizes["cw-demo-gb200"]) < 120, sizes
    assert sizes["cw-demo-h100"] < 400  # the small one took only what it needs


def test_fair_shares_is_max_min_fair():
    assert fair_shares([10, 20, 30], 100) == [10, 20, 30]          # everything fits
    assert fair_shares([10, 500, 500], 210) == [10, 100, 100]      # the small one whole, the rest split
    assert fair_shares([300, 50, 300], 250) == [100, 50, 100]
    assert sum(fair_shares([7, 9, 1000, 3], 37)) <= 37
    assert fair_shares([], 10) == [] and fair_shares([5], -3) == [0]


def test_cut_lines_ends_on_a_line_with_a_note():
    text = "".join(f"line {i}\n" for i in range(100))
    cut, was = cut_lines(text, 120)
    assert was and len(cut.encode()) <= 120 and cut.startswith("line 0\n")
    assert cut.endswith("more lines cut (full diff in the run's artifacts)\n")
    assert cut_lines("short\n", 100) == ("short\n", False)
    only_note, was = cut_lines("x" * 500 + "\n", 60)
    assert was and only_note.startswith("… 1 more line cut")


def test_status_lines_that_cannot_fit_are_an_error(tmp_path, capsys):
    reports = [StackReport(stack=f"stack-{i:04d}", severity="none") for i in range(400)]
    with pytest.raises(CommentError, match="status lines alone need"):
        render_comment(reports, max_bytes=10_000)
    with pytest.raises(CommentError, match="over GitHub's comment limit"):
        render_comment(reports, max_bytes=70_000)


def test_a_diff_with_backticks_gets_a_longer_fence():
    r = StackReport(stack="s", severity="change", counts={"update": 1}, guard={"ok": True},
                    diff="s: 1 to update\n  ~ script: \"```\\nrm -rf\\n```\"\n```\n")
    body = render_comment([r]).body
    assert "````text\n" in body and "\n````\n" in body


def test_bad_preview_directories_are_user_errors(tmp_path, capsys):
    assert main(["ci", "comment", str(tmp_path / "missing")]) == 2
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.json").write_text('{"schema": 99, "stack": "x", "severity": "none"}')
    assert main(["ci", "comment", str(tmp_path)]) == 2
    assert "unknown meta.json schema 99" in capsys.readouterr().err
    (tmp_path / "a" / "meta.json").write_text(json.dumps(_META))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.json").write_text(json.dumps(_META))
    assert main(["ci", "comment", str(tmp_path)]) == 2
    assert "two results for stack x" in capsys.readouterr().err
    assert main(["ci", "comment", str(tmp_path / "a"), "--matrix", "not json"]) == 2


def test_cli_prints_the_comment_and_marks_missing_matrix_stacks(tmp_path, capsys):
    out = preview_dir(tmp_path, severity_engine(CLUSTERS), ["cw-demo-gb200"])
    capsys.readouterr()
    matrix = '{"include":[{"stack":"cw-demo-gb200"},{"stack":"gcp-demo"}]}'
    assert main(["ci", "comment", str(out), "--matrix", matrix, "--sha", SHA]) == 0
    body = capsys.readouterr().out
    assert body.startswith(MARKER)
    assert "- ❌ `gcp-demo` — no result: the preview job did not finish" in body
    assert "- ✏️ `cw-demo-gb200` — 1 to update (1 unchanged) · guard: ok" in body


# --- meta.json of another shape: exit 2 naming the field, never an internal error ---------------

_META = {"schema": 2, "stack": "x", "severity": "change", "counts": {"update": 1},
         "guard": verdict_doc(), "error": None, "diff": "diff.txt"}


@pytest.mark.parametrize("key, value, field", [
    ("guard", {"destructive": 5}, "guard"), ("error", "boom", "error"), ("guard", [1, 2], "guard"),
    ("guard", {"violations": {"a": 1}}, "guard"), ("guard", {"violations": [{"op": 1}]}, "guard"),
    ("capacity", 5, "capacity"), ("diff", 3, "diff"),
    ("error", {"4dabf18193072939515e22adb298388d": "x"}, "error")])
def test_a_meta_json_of_another_shape_is_a_user_error(tmp_path, capsys, key, value, field):
    import json
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.json").write_text(json.dumps({**_META, key: value}))
    assert main(["ci", "comment", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    assert f"meta.json: {field}: " in out.err and "re-run `ci preview`" in out.err


_POOL = ("urn:pulumi:cw-demo-h100::clusterstack::clusterstack:coreweave:NodePools$"
         "kubernetes:compute.coreweave.com/v1alpha1:NodePool::cwdemo-h100")


@pytest.mark.parametrize("stored, guard_severity", [("none", "blocked"), ("blocked", "none"), ("change", None)])
def test_a_stored_severity_is_recomputed_never_trusted(tmp_path, capsys, stored, guard_severity):
    # a blocked stack whose meta.json (or its verdict) says otherwise: never headlined "no
    # changes", never left out of the data block — the file is refused as inconsistent
    guard = verdict_doc(ops={"replace": 1, "same": 1}, violations=[{"op": "replace", "urn": _POOL}],
                        destructive=[{"op": "replace", "urn": _POOL}])
    if guard_severity is not None:
        guard["severity"] = guard_severity
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.json").write_text(json.dumps({**_META, "severity": stored,
                                                          "counts": {"replace": 1, "same": 1}, "guard": guard}))
    assert main(["ci", "comment", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "but what the file lists says 'blocked'" in err and "never trusts a stored severity" in err


def test_the_severity_comes_from_the_counts_when_the_verdict_lists_less(tmp_path, capsys):
    # the engine counted a delete the verdict does not list: at least "delete", never "change"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.json").write_text(json.dumps({**_META, "severity": "change",
                                                          "counts": {"delete": 1, "update": 1}}))
    assert main(["ci", "comment", str(tmp_path)]) == 2
    assert "severity says 'change' but what the file lists says 'delete'" in capsys.readouterr().err


_FIELDS = sorted({*_META, "capacity", "project", "slug", "result", "changes", "refresh"})
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["ok", "violations", "destructive", "op", "urn", "message", "internal", "kind", "x"]),
        kids, max_size=4),
    max_leaves=10)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(_FIELDS), value=_JSON)
def test_any_json_value_in_any_meta_json_field_is_never_an_internal_error(tmp_path, capsys, key, value):
    import json
    d = tmp_path / "h" / "a"
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.json").write_text(json.dumps({**_META, key: value}))
    (d / "diff.txt").write_text("x: 1 to update\n")
    rc = main(["ci", "comment", str(tmp_path / "h")])
    out = capsys.readouterr()
    assert rc in (0, 2), (rc, out.err)
    assert "internal error" not in out.err and "Traceback" not in out.err
    if rc == 2:
        assert out.out == "" and "error: " in out.err


# --- hostile JSON in an artifact or a comment body: exit 2 naming the file, never a traceback ---

_HOSTILE = [
    (b'{"schema": 2, "stack": "x", "severity": "none", "counts": {"update": ' + b"9" * 5000 + b"}}",
     "out of range"),
    (b'{"schema": 2, "stack": "x", "severity": "none", "counts": {"update": NaN}}', "NaN is not a JSON number"),
    (b'{"schema": 2, "stack": "x", "severity": "none", "counts": {"update": 1}', "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "nested more than 64 levels deep"),
    (b'{"schema": 2, "stack": "\xff"}', "utf-8"),
]


@pytest.mark.parametrize("raw, problem", _HOSTILE, ids=["5000-digits", "nan", "truncated", "deep", "not-utf8"])
@pytest.mark.parametrize("artifact", ["meta.json", "static-diff.json"])
def test_a_hostile_json_artifact_is_a_user_error_naming_the_file(tmp_path, capsys, raw, problem, artifact):
    import json
    (tmp_path / "a").mkdir()
    if artifact == "meta.json":
        (tmp_path / "a" / "meta.json").write_bytes(raw)
    else:
        (tmp_path / "a" / "meta.json").write_text(json.dumps(_META))
        (tmp_path / "a" / "static-diff.json").write_bytes(raw)
    assert main(["ci", "comment", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err and "internal error" not in out.err
    assert f"a/{artifact}" in out.err and problem in out.err, out.err


def test_a_comment_body_with_hostile_data_carries_no_data():
    from clusterstack.ci.comment import DATA_PREFIX

    for doc in ("[" * 100_000 + "]" * 100_000, '{"changed": [], "v": ' + "9" * 5000 + "}",
                '{"changed": [], "v": NaN}'):
        assert parse_data(f"{MARKER}\n{DATA_PREFIX}{doc} -->\n") is None


def test_a_hostile_matrix_is_a_user_error(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    for matrix in ("[" * 100_000 + "]" * 100_000, '{"include": [{"stack": NaN}]}'):
        assert main(["ci", "comment", str(tmp_path), "--matrix", matrix]) == 2
        out = capsys.readouterr()
        assert "--matrix is not the JSON of `ci stacks --json`" in out.err and "Traceback" not in out.err
