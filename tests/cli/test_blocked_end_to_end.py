"""A NodePool delete, replace and ``instanceType`` change, through the real Automation API
adapter with the fake CLI replaying what Pulumi prints (tests/fixtures/engine/events, built by
the rules of the recorded lifecycle runs, tests/fixtures/pulumi/README.md): each ends in exit 3
naming the NodePool in ``preview``, ``up --yes`` and ``ci preview`` + ``ci comment``."""

from __future__ import annotations

import pytest

from clusterstack.cli import main
from fakes.pulumi import FakeCli

STACK = "cw-demo-h100"
SCENARIOS = {
    # TestMultipleProtectedDeletes: the delete steps, each refused, "preview failed", exit 255
    "delete": {"events": "events/preview-nodepool-delete.jsonl", "code": 255},
    # replaceOnChanges + protect, TestProtect: the refusal, the replacement steps, exit 255
    "replace": {"events": "events/preview-nodepool-replace.jsonl", "code": 255},
    # pulumi-kubernetes diff.go: a plain in-place update; the preview itself succeeds
    "instanceType": {"events": "events/preview-nodepool-instancetype-update.jsonl"},
}


@pytest.fixture
def cli(tmp_path, monkeypatch) -> FakeCli:
    return FakeCli(tmp_path, monkeypatch)


@pytest.mark.parametrize("change", sorted(SCENARIOS))
def test_preview_blocks(cli, workspace_copy, capsys, change):
    cli.scenario(preview=SCENARIOS[change])
    assert main(["--root", str(workspace_copy), "preview", STACK]) == 3
    o = capsys.readouterr()
    assert "BLOCKED" in o.out and "cwdemo-h100" in o.out
    assert "the Pulumi program failed" not in o.err


@pytest.mark.parametrize("change", sorted(SCENARIOS))
def test_up_yes_blocks_before_anything_is_applied(cli, workspace_copy, capsys, change):
    cli.scenario(preview=SCENARIOS[change])
    assert main(["--root", str(workspace_copy), "up", STACK, "--yes"]) == 3
    o = capsys.readouterr()
    assert "BLOCKED" in o.out + o.err and "cwdemo-h100" in o.out + o.err
    assert not any(c["argv"][:2] == ["--non-interactive", "up"] or "up" in c["argv"][:2]
                   for c in cli.calls())


@pytest.mark.parametrize("change", sorted(SCENARIOS))
def test_ci_preview_and_comment_carry_the_blocked_nodepool(cli, workspace_copy, tmp_path, capsys, change):
    cli.scenario(preview=SCENARIOS[change])
    out = tmp_path / "previews"
    rc = main(["--root", str(workspace_copy), "ci", "preview", STACK, "--out", str(out)])
    o = capsys.readouterr()
    assert rc == 3, o.err
    # the comment renders the verdict (the failing job is `ci preview`; the comment reports it)
    assert main(["ci", "comment", str(out)]) == 0
    comment = capsys.readouterr().out
    assert "cwdemo-h100" in comment and "BLOCKED" in comment.upper()
    if change != "delete":  # the forcing property travels with the verdict
        assert "spec.instanceType" in comment


def test_ci_preview_refuses_a_nodepool_delete_labelled_as_a_configmap(cli, workspace_copy, tmp_path, capsys):
    # the step's type contradicts its URN — an error outcome (exit 2), never "no changes"
    import json

    from fakes.pulumi import FIXTURES

    events = [json.loads(x) for x in (FIXTURES / "events/preview-update.jsonl").read_text().splitlines()]
    for e in events:
        md = (e.get("resourcePreEvent") or e.get("resOutputsEvent") or {}).get("metadata")
        if md and md["urn"].endswith("NodePool::cwdemo-h100"):
            md.update(op="delete", type="kubernetes:core/v1:ConfigMap", new=None, detailedDiff=None)
    log = tmp_path / "labelled.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    cli.scenario(preview={"events": str(log)})
    out = tmp_path / "previews"
    assert main(["--root", str(workspace_copy), "ci", "preview", STACK, "--out", str(out)]) == 2
    meta = json.loads((out / STACK / "meta.json").read_text())
    assert meta["severity"] == "error" and "contradicts its URN's type" in meta["error"]["message"]
