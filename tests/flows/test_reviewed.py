"""``up`` applies exactly what was reviewed. ``preview --record`` and ``ci
preview`` write a review record per stack (clusterstack.guard.review); ``up --reviewed RECORD``
previews again and refuses (exit 3) an extra step, a changed path not reviewed, a record of
another git tree (another commit of the same tree — a merge of the reviewed PR head — binds) or
of an older state; it accepts the identical preview and applies it; without a
record ``up`` says that nothing binds it to a review.

Through the real Automation API adapter and the fake CLI replaying this project's engine
fixtures (tests/fixtures/engine/events, tests/fixtures/pulumi/README.md): ``preview-update.jsonl``
(h100 ``spec.maxNodes`` 16 → 24, a controller RBAC rule, a new ClusterRole), ``up-update.jsonl``
(the update applying the NodePool step), ``history.json`` (``pulumi stack history --json``, last
update version 3). The changed cases derive their stream from those, changing only what the
case says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.guard.review import REVIEW_FORMAT, digest_of
from fakes.pulumi import FIXTURES, FakeCli
from helpers import git

STACK = "cw-demo-h100"
H100 = ("urn:pulumi:cw-demo-h100::clusterstack::clusterstack:coreweave:NodePools$"
        "kubernetes:compute.coreweave.com/v1alpha1:NodePool::cwdemo-h100")


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


@pytest.fixture
def repo(workspace_copy: Path) -> Path:
    """The shipped workspace as a clean checkout of main (one commit)."""
    (workspace_copy / ".gitignore").write_text(".pulumi-state/\n*.review.json\nrecords/\n")
    git(workspace_copy, "init", "-q", "-b", "main")
    git(workspace_copy, "add", "-A")
    git(workspace_copy, "commit", "-q", "-m", "base")
    return workspace_copy


def _events(name: str = "preview-update.jsonl") -> list[dict]:
    return [json.loads(x) for x in (FIXTURES / "events" / name).read_text().splitlines() if x.strip()]


def _write(tmp_path: Path, name: str, events: list[dict]) -> str:
    p = tmp_path / name
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(p)


def _meta(e: dict) -> dict | None:
    return (e.get("resourcePreEvent") or e.get("resOutputsEvent") or {}).get("metadata")


def _history(tmp_path: Path, version: int) -> str:
    """history.json with its newest update at ``version`` (an update ran since: version + 1)."""
    doc = json.loads((FIXTURES / "history.json").read_text())
    doc[0]["version"] = version
    p = tmp_path / f"history-{version}.json"
    p.write_text(json.dumps(doc, indent=4))
    return str(p)


def _record(cli, repo, capsys, tmp_path) -> Path:
    cli.scenario(preview={"events": "events/preview-update.jsonl"},
                 stack_history={"stdout_file": "history.json"})
    rc = main(["--root", str(repo), "preview", STACK, "--record", str(tmp_path / "records")])
    out = capsys.readouterr().out
    assert rc == 0
    path = tmp_path / "records" / f"{STACK}.review.json"
    assert f"review record: {path} (sha256:" in out
    return path


def _up(cli, repo, capsys, record: Path | None, *, preview: str = "events/preview-update.jsonl",
        history: str = "history.json") -> tuple[int, str]:
    cli.scenario(preview={"events": preview}, up={"events": "events/up-update.jsonl"},
                 stack_history={"stdout_file": history})
    args = ["--root", str(repo), "up", STACK, "--yes"] + (["--reviewed", str(record)] if record else [])
    rc = main(args)
    o = capsys.readouterr()
    assert "Traceback" not in o.err
    return rc, o.out + o.err


def _ran(cli, verb: str) -> int:
    """How often the fake CLI was asked to run ``verb`` (``pulumi --non-interactive up …``)."""
    return sum(verb in c["argv"][:2] for c in cli.calls())


def test_preview_writes_a_versioned_record_bound_to_commit_state_and_every_step(cli, repo, capsys, tmp_path):
    path = _record(cli, repo, capsys, tmp_path)
    doc = json.loads(path.read_text())
    assert doc["format"] == REVIEW_FORMAT and doc["stack"] == STACK
    assert doc["commit"] == git(repo, "rev-parse", "HEAD").strip() and doc["dirty"] is False
    assert doc["tree"] == git(repo, "rev-parse", "HEAD^{tree}")
    assert doc["state"] == {"version": 3}                       # history.json's newest update
    assert [(s["op"], s["urn"].rsplit("::", 1)[1], s["paths"]) for s in doc["steps"]] == [  # by URN
        ("update", "cwdemo-h100", ["spec.maxNodes"]),
        ("update", "cwdemo-controller", ["rules[0].verbs[2]", "rules[0].verbs[3]"]),
        ("create", "cwdemo-node-observer", []),
    ]
    assert doc["verdict"]["format"] == "clusterstack.verdict/v1" and doc["redacted"] is False
    assert doc["digest"] == digest_of(doc)
    first = path.read_bytes()
    _record(cli, repo, capsys, tmp_path)                        # same input, same bytes
    assert path.read_bytes() == first


def test_up_reviewed_accepts_the_identical_preview_and_applies_it(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    digest = json.loads(record.read_text())["digest"]
    rc, out = _up(cli, repo, capsys, record)
    assert rc == 0, out
    assert f"the preview is the reviewed one (record {digest})" in out
    assert "nothing binds" not in out
    assert _ran(cli, "up")


def test_up_reviewed_refuses_an_extra_step(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    events = _events()
    for e in events:   # the new ClusterRole now has another name: a create nobody reviewed
        md = _meta(e)
        if md and md["urn"].endswith("::cwdemo-node-observer"):
            md["urn"] = md["urn"].replace("cwdemo-node-observer", "cwdemo-escalate")
            md["new"]["urn"] = md["urn"]
    rc, out = _up(cli, repo, capsys, record, preview=_write(tmp_path, "extra.jsonl", events))
    assert rc == 3, out
    assert "unreviewed step: create urn:pulumi:cw-demo-h100::" in out and "cwdemo-escalate" in out
    assert not _ran(cli, "up")   # nothing applied


def test_up_reviewed_refuses_a_changed_path_not_reviewed(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    events = _events()
    for e in events:   # the reviewed NodePool update now also changes its nodeLabels
        md = _meta(e)
        if md and md["urn"] == H100:
            md["detailedDiff"]["spec.nodeLabels"] = {"diffKind": "update", "inputDiff": True}
    rc, out = _up(cli, repo, capsys, record, preview=_write(tmp_path, "path.jsonl", events))
    assert rc == 3, out
    assert f"changed path not reviewed: spec.nodeLabels of update {H100}" in out
    assert not _ran(cli, "up")


def test_up_reviewed_refuses_a_record_of_an_older_state(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    previews = _ran(cli, "preview")
    rc, out = _up(cli, repo, capsys, record, history=_history(tmp_path, 4))
    assert rc == 3, out
    assert "written at state version 3, the stack is at 4: the state changed since the review" in out
    assert not _ran(cli, "up") and _ran(cli, "preview") == previews   # refused before a preview


def test_up_reviewed_refuses_a_record_of_another_commit(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    cfg = repo / "clusters" / f"{STACK}.yaml"
    cfg.write_text(cfg.read_text() + "\n")
    git(repo, "commit", "-qam", "an unreviewed commit")
    rc, out = _up(cli, repo, capsys, record)
    assert rc == 3, out
    doc = json.loads(record.read_text())
    head_tree = git(repo, "rev-parse", "HEAD^{tree}")
    assert doc["tree"] != head_tree                       # another content: refused
    assert (f"the record is of git tree {doc['tree'][:12]} (commit {doc['commit'][:12]}), this checkout "
            f"is tree {head_tree[:12]}") in out and "preview again" in out
    assert not _ran(cli, "up")


def test_up_reviewed_accepts_the_merge_commit_of_the_reviewed_pr_head(cli, repo, capsys, tmp_path):
    """A record of a PR's head commit binds the merge commit of that up-to-date PR: another
    commit, the same git tree (the same reviewed content)."""
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "NOTES.md").write_text("a reviewed change\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "the PR")
    record = _record(cli, repo, capsys, tmp_path)         # the preview job ran on the PR head
    doc = json.loads(record.read_text())
    assert doc["tree"] == git(repo, "rev-parse", "HEAD^{tree}")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge the PR", "pr")
    assert git(repo, "rev-parse", "HEAD") != doc["commit"]
    assert git(repo, "rev-parse", "HEAD^{tree}") == doc["tree"]
    rc, out = _up(cli, repo, capsys, record)
    assert rc == 0, out
    assert f"the preview is the reviewed one (record {doc['digest']})" in out and _ran(cli, "up") == 1


def test_a_v1_record_is_refused_with_a_reason(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    doc = json.loads(record.read_text())
    doc["format"] = "clusterstack.review/v1"
    del doc["tree"], doc["digest"]
    doc["digest"] = digest_of(doc)                        # a genuine v1 document
    record.write_text(json.dumps(doc, indent=2))
    rc, out = _up(cli, repo, capsys, record)
    assert rc == 2 and "a clusterstack.review/v1 review record" in out and "preview again" in out
    assert not _ran(cli, "up")


def test_a_changed_record_is_refused_exit_2(cli, repo, capsys, tmp_path):
    record = _record(cli, repo, capsys, tmp_path)
    doc = json.loads(record.read_text())
    doc["steps"][0]["paths"].append("spec.nodeLabels")   # widened by hand, digest kept
    record.write_text(json.dumps(doc, indent=2))
    previews = _ran(cli, "preview")
    rc, out = _up(cli, repo, capsys, record)
    assert rc == 2 and "digest does not match its content" in out
    assert not _ran(cli, "up") and _ran(cli, "preview") == previews


def test_up_without_a_record_says_nothing_binds_it_to_a_review(cli, repo, capsys, tmp_path):
    rc, out = _up(cli, repo, capsys, None)
    assert rc == 0, out
    assert "nothing binds this update of cw-demo-h100 to a review" in out


def test_ci_preview_writes_the_record_and_the_comment_shows_its_digest(cli, repo, capsys, tmp_path):
    cli.scenario(preview={"events": "events/preview-update.jsonl"},
                 stack_history={"stdout_file": "history.json"})
    out = tmp_path / "previews"
    assert main(["--root", str(repo), "ci", "preview", STACK, "--out", str(out)]) == 0
    meta = json.loads((out / STACK / "meta.json").read_text())
    record = json.loads((out / STACK / "review.json").read_text())
    assert meta["review"] == {"file": "review.json", "digest": record["digest"]}
    assert record["digest"] == digest_of(record) and record["state"] == {"version": 3}
    capsys.readouterr()
    assert main(["ci", "comment", str(out)]) == 0
    assert f"review record `{record['digest']}`" in capsys.readouterr().out
    # the CI record binds an update like a local one
    rc, text = _up(cli, repo, capsys, out / STACK / "review.json")
    assert rc == 0, text


def test_ci_preview_without_a_readable_history_says_why_no_record_was_written(cli, repo, capsys, tmp_path):
    cli.scenario(preview={"events": "events/preview-update.jsonl"},
                 stack_history={"stdout": "{}"})         # not a list of updates: no state version
    out = tmp_path / "previews"
    assert main(["--root", str(repo), "ci", "preview", STACK, "--out", str(out)]) == 0
    meta = json.loads((out / STACK / "meta.json").read_text())
    assert not (out / STACK / "review.json").exists()
    warning = meta["review"]["warning"]
    assert set(meta["review"]) == {"warning"} and meta["result"] == "ok"
    assert warning.startswith("no review record: `stack history` could not be read (") and \
        "pulumi stack history --json" in warning
    capsys.readouterr()
    assert main(["ci", "comment", str(out)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if STACK in x and "guard" in x)
    assert "⚠️ no review record: \\`stack history\\` could not be read" in line   # markdown-escaped
    assert "review record `" not in line
