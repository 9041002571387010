"""`ci preview`: bounded-parallel previews on the FakeEngine, meta.json and diff.txt per stack,
severities, exit codes, determinism, and the redaction canary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_support import (CANARY_EMAIL, CANARY_ENV, CANARY_KEYED, CANARY_LOCAL, CANARY_TOKEN, BarrierEngine,
                        CanaryEngine, canary_steps, change_steps, severity_engine)
from clusterstack.ci.discover import StackTarget
from clusterstack.ci.preview import preview_target, run_previews
from clusterstack.cli import main
from fakes.pulumi import FakeEngine, FakeStack
from clusterstack.guard import GuardPolicy
from fakes.clients import fake_clients

CLUSTERS = ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]


def use_engines(clusters: FakeEngine, projects: dict[Path, FakeEngine] | None = None):
    """Clients whose engine is ``clusters`` for the cluster project and one FakeEngine per other
    project directory (stacks ``lab`` and ``repo``)."""
    projects = {} if projects is None else projects

    def engine(_ws, *, project_dir=None, **_kw):
        if project_dir is None:
            return clusters
        return projects.setdefault(project_dir, FakeEngine({"lab": FakeStack(), "repo": FakeStack()}))

    return fake_clients(engine=engine)


def read_meta(out: Path, slug: str) -> dict:
    return json.loads((out / slug / "meta.json").read_text())


def test_every_severity_is_written_with_counts_and_verdict(workspace_copy, tmp_path, monkeypatch):
    clients = use_engines(severity_engine(CLUSTERS))
    out = tmp_path / "out"
    code = main(["--root", str(workspace_copy), "ci", "preview", "--all", "--out", str(out), "-j", "3"], clients=clients)
    assert code == 3  # a stack is blocked by the guard
    sev = {slug: read_meta(out, slug)["severity"] for slug in CLUSTERS + ["buckets.lab", "github.repo"]}
    assert sev == {"cw-demo-h100": "blocked", "gcp-demo": "delete", "cw-demo-gb200": "change",
                   "gcp-tpu-a": "error", "gcp-tpu-b": "none", "cw-demo-teams": "none", "buckets.lab": "none", "github.repo": "none"}
    h100 = read_meta(out, "cw-demo-h100")
    assert h100["counts"] == {"replace": 1, "same": 1} and h100["changes"] == {"replace": 1}
    assert h100["guard"]["ok"] is False
    [v] = h100["guard"]["violations"]
    assert v["op"] == "replace" and v["reasons"] == ["spec.instanceType"] and v["urn"].endswith("::cwdemo-h100")
    demo = read_meta(out, "gcp-demo")
    assert demo["guard"]["format"] == "clusterstack.verdict/v1" and demo["guard"]["severity"] == "delete"
    assert demo["guard"]["ok"] is True and demo["guard"]["violations"] == []
    assert demo["guard"]["destructive"] == [{"op": "delete", "urn": demo["guard"]["destructive"][0]["urn"],
                                             "type": "gcp:compute/address:Address", "blocked": False,
                                             "capacity": None}]
    locked = read_meta(out, "gcp-tpu-a")
    assert locked["result"] == "error" and locked["error"]["kind"] == "StackLockedError"
    assert "another update is currently in progress" in locked["error"]["message"]
    assert locked["error"]["internal"] is False
    lab = read_meta(out, "buckets.lab")
    assert lab["stack"] == "buckets/lab" and lab["project"] == "buckets"
    diff = (out / "cw-demo-h100" / "diff.txt").read_text()
    assert "~ spec.instanceType: \"gd-8xh100ib-i128\" → \"gd-8xh200ib-i128\"  (forces replacement)" in diff
    assert "BLOCKED replace NodePool cwdemo-h100" in diff
    assert "preview failed (StackLockedError)" in (out / "gcp-tpu-a" / "diff.txt").read_text()


def test_exit_codes(workspace_copy, tmp_path, monkeypatch):
    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    eng.stacks["cw-demo-gb200"].steps = change_steps("cw-demo-gb200")
    clients = use_engines(eng)
    root = str(workspace_copy)
    assert main(["--root", root, "ci", "preview", "cw-demo-gb200", "gcp-demo", "--out", str(tmp_path / "a")], clients=clients) == 0
    from clusterstack.engine.errors import StackNotFoundError
    eng.fail("preview", "gcp-demo", StackNotFoundError("gcp-demo"))
    assert main(["--root", root, "ci", "preview", "cw-demo-gb200", "gcp-demo", "--out", str(tmp_path / "b")], clients=clients) == 2
    eng.fail("preview", "cw-demo-gb200", RuntimeError("boom"))
    assert main(["--root", root, "ci", "preview", "cw-demo-gb200", "gcp-demo", "--out", str(tmp_path / "c")], clients=clients) == 1
    meta = read_meta(tmp_path / "c", "cw-demo-gb200")
    assert meta["error"] == {"internal": True, "kind": "RuntimeError", "message": "boom"}
    assert main(["--root", root, "ci", "preview", "nope", "--out", str(tmp_path / "d")], clients=clients) == 2
    assert main(["--root", root, "ci", "preview", "--out", str(tmp_path / "d")], clients=clients) == 2


def test_a_config_error_is_reported_with_its_location_and_the_engine_is_not_called(workspace_copy, tmp_path,
                                                                                  monkeypatch):
    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    clients = use_engines(eng)
    f = workspace_copy / "clusters/cw-demo-h100.yaml"
    f.write_text(f.read_text().replace("label_prefix: cwdemo", "label_prefix: CW_DEMO"))
    code = main(["--root", str(workspace_copy), "ci", "preview", "cw-demo-h100", "cw-demo-gb200",
                 "--out", str(tmp_path / "o")], clients=clients)
    assert code == 2
    meta = read_meta(tmp_path / "o", "cw-demo-h100")
    assert meta["error"]["kind"] == "ConfigError"
    assert "cw-demo-h100.yaml:" in meta["error"]["message"] and "label_prefix" in meta["error"]["message"]
    assert [c[1] for c in eng.calls if c[0] == "preview"] == ["cw-demo-gb200"]


def test_refresh_is_passed_to_the_engine(workspace_copy, tmp_path, monkeypatch):
    eng = FakeEngine({c: FakeStack() for c in CLUSTERS})
    clients = use_engines(eng)
    assert main(["--root", str(workspace_copy), "ci", "preview", "gcp-demo", "--refresh",
                 "--out", str(tmp_path / "o")], clients=clients) == 0
    assert ("preview", "gcp-demo", {"refresh": True}) in eng.calls
    assert read_meta(tmp_path / "o", "gcp-demo")["refresh"] is True


def test_outputs_are_byte_identical_across_runs(workspace_copy, tmp_path, monkeypatch):
    clients = use_engines(severity_engine(CLUSTERS))
    for name in ("one", "two"):
        main(["--root", str(workspace_copy), "ci", "preview", "--all", "--out", str(tmp_path / name), "-j", "4"], clients=clients)
    one = {p.relative_to(tmp_path / "one"): p.read_bytes() for p in (tmp_path / "one").rglob("*") if p.is_file()}
    two = {p.relative_to(tmp_path / "two"): p.read_bytes() for p in (tmp_path / "two").rglob("*") if p.is_file()}
    # meta.json + diff.txt per stack (8), and review.json for each stack previewed (7 of them)
    assert one == two and len(one) == 23


# --- parallelism (no timing: a barrier proves N previews run together) -------------------------

def _targets(n: int) -> list[StackTarget]:
    return [StackTarget("clusters", f"s{i}") for i in range(n)]


def test_previews_run_concurrently_up_to_the_bound():
    eng = BarrierEngine({f"s{i}": FakeStack() for i in range(3)}, barrier=3)
    outcomes = run_previews(_targets(3), lambda t: preview_target(t, engine=lambda _: eng, policy=GuardPolicy()),
                            parallel=3)
    # each preview waited at a 3-party barrier: they can only have finished if all 3 ran at once
    assert [o.severity for o in outcomes] == ["none"] * 3 and eng.max_active == 3


def test_never_more_than_parallel_at_once_and_results_keep_their_order():
    eng = BarrierEngine({f"s{i}": FakeStack() for i in range(7)}, barrier=2)
    done = []
    outcomes = run_previews(_targets(6), lambda t: preview_target(t, engine=lambda _: eng, policy=GuardPolicy()),
                            parallel=2, on_done=lambda o: done.append(o.target.stack))
    assert eng.max_active == 2
    assert [o.target.stack for o in outcomes] == [f"s{i}" for i in range(6)]
    assert sorted(done) == [f"s{i}" for i in range(6)]


def test_one_crashing_stack_does_not_lose_the_others():
    eng = FakeEngine({f"s{i}": FakeStack() for i in range(3)}).fail("preview", "s1", KeyError("x"))
    outcomes = run_previews(_targets(3), lambda t: preview_target(t, engine=lambda _: eng, policy=GuardPolicy()),
                            parallel=3)
    assert [o.severity for o in outcomes] == ["none", "error", "none"]
    assert outcomes[1].error.internal is True
    with pytest.raises(ValueError):
        run_previews(_targets(1), lambda t: None, parallel=0)


# --- redaction canary ------------------------------------------------------------------------------

CANARIES = (CANARY_EMAIL, CANARY_LOCAL, CANARY_TOKEN, CANARY_KEYED, CANARY_ENV)


def test_redaction_canary_never_reaches_a_written_file(workspace_copy, tmp_path, monkeypatch):
    eng = CanaryEngine({c: FakeStack() for c in CLUSTERS})
    eng.stacks["gcp-demo"].steps = canary_steps("gcp-demo")
    # a stack whose failure message quotes the canaries too
    from clusterstack.engine.errors import ProgramFailedError
    eng.fail("preview", "gcp-tpu-a", ProgramFailedError(
        "gcp-tpu-a", f"grant for {CANARY_EMAIL} failed: token={CANARY_KEYED} ({CANARY_TOKEN})"))
    clients = use_engines(eng)
    monkeypatch.setenv("STATE_PASSPHRASE", CANARY_ENV)   # known only as a secret-named env var
    out = tmp_path / "out"
    main(["--root", str(workspace_copy), "ci", "preview", "--all", "--out", str(out)], clients=clients)
    comment = tmp_path / "comment.md"
    assert main(["--root", str(workspace_copy), "ci", "comment", str(out), "--output", str(comment)], clients=clients) == 0
    files = [p for p in out.rglob("*") if p.is_file()] + [comment]
    assert len(files) == 24   # review.json of the 7 previewed stacks included
    for p in files:
        text = p.read_text()
        for canary in CANARIES:
            assert canary not in text, f"{canary!r} leaked into {p}"
    diff = (out / "gcp-demo" / "diff.txt").read_text()
    # what stays: the domain of the address, the shape of the change, secrets marked as such
    assert "user:a***@lab.example" in diff
    assert '~ apiToken: "[secret]" → "[secret]"' in diff
    assert '~ content: "34.16.10.20" → "34.16.10.21"' in diff
    # type tokens and resource names are not mistaken for `secret: value` assignments
    assert "+ kubernetes:core/v1:Secret  relay-env" in diff
    assert "+ gcp:secretmanager/secretVersion:SecretVersion  passphrase" in diff
    assert "a***@lab.example" in (out / "gcp-tpu-a" / "meta.json").read_text()
    assert "a***@\u200blab.example" in comment.read_text()  # redacted, then mention-safe


def test_redactor_keeps_names_that_only_mention_secrets():
    from clusterstack.ci.redaction import Redactor

    r = Redactor()
    masked = r.mask_value({"envFrom": [{"secretRef": {"name": "relay-env"}}], "tokenProxy": True,
                           "clientSecret": "s3cr3t-value", "members": ["serviceAccount:ci@p.iam.gserviceaccount.com",
                                                                       "user:bob.smith@lab.example"]})
    assert masked == {"envFrom": [{"secretRef": {"name": "relay-env"}}], "tokenProxy": True,
                      "clientSecret": "[secret]",
                      "members": ["serviceAccount:ci@p.iam.gserviceaccount.com", "user:b***@lab.example"]}
    assert r.text("password: hunter2hunter2 and AKIAIOSFODNN7EXAMPLE") == "password: [secret] and [secret]"
    env = Redactor.from_env({"DEPLOY_TOKEN": "tok-1234567890", "PATH": "/usr/bin:/bin", "SHORT_KEY": "abc"})
    assert env.known == ("tok-1234567890",)
    assert env.text("using tok-1234567890 on /usr/bin") == "using [secret] on /usr/bin"
