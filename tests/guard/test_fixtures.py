"""The guard over every fixture in Pulumi's real formats: zero misses, zero false blocks.

Each row says which (logical op, resource name) the guard must block, by which rule, and which
destructive changes it must count; every fixture file must have a row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.guard import check, check_document
from clusterstack.pulumi import tokens
from clusterstack.pulumi.documents import parse_file
from clusterstack.pulumi.steps import EVENTS, PREVIEW
from clusterstack.pulumi.tokens import NODEPOOL as NP

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"

ADDR = tokens.ADDRESS
GADDR = tokens.GLOBAL_ADDRESS
DNS = tokens.DNS_RECORD

R_REPLACE = "may never be replaced"
R_DELETE = "may never be deleted"
R_DNS = "protected cloudflare:index/dnsRecord:DnsRecord may not be deleted"
R_PROTECT = "protect: true"
R_RETAIN = "retainOnDelete"

# fixture → (format, {(op, name, type): (rule fragment, forcing properties)}, [(op, name)] destructive)
EXPECTED = {
    "preview-clean.json": (PREVIEW, {}, []),
    "preview-update-in-place.json": (PREVIEW, {}, []),
    "preview-nodepool-replace.json": (
        PREVIEW, {("replace", "cwdemo-h100", NP): (R_REPLACE, ("spec.instanceType",))},
        [("replace", "cwdemo-h100")]),
    "preview-nodepool-replace-steps.json": (
        PREVIEW, {("replace", "cwdemo-h100", NP): (R_REPLACE, ("spec.instanceType",))},
        [("replace", "cwdemo-h100")]),
    "preview-nodepool-delete.json": (
        PREVIEW, {("delete", "cwdemo-h100", NP): (R_DELETE, ()),
                  ("delete", "cwdemo-cpu-general", NP): (R_DELETE, ())},
        [("delete", "cwdemo-h100"), ("delete", "cwdemo-cpu-general")]),
    "preview-protected-delete.json": (
        PREVIEW, {("delete", "ctl-cw-demo-h100.example.org", DNS): (R_DNS, ()),
                  ("delete", "training", tokens.NAMESPACE): (R_PROTECT, ())},
        [("delete", "ctl-cw-demo-h100.example.org"), ("delete", "training"),
         ("delete", "cwdemo-node-observer"), ("delete", "cwdemo-node-observer")]),
    "preview-address-replace.json": (
        PREVIEW, {("replace", "log-relay", ADDR): (R_REPLACE, ("region",)),
                  ("replace", "federation-anycast", GADDR): (R_REPLACE, ("description",))},
        [("replace", "log-relay"), ("replace", "federation-anycast")]),
    "preview-address-delete.json": (PREVIEW, {}, [("delete", "log-relay")]),
    "preview-address-delete-unretained.json": (
        PREVIEW, {("delete", "log-relay", ADDR): (R_RETAIN, ())}, [("delete", "log-relay")]),
    "preview-import.json": (PREVIEW, {}, []),
    "preview-delete-before-replace.json": (
        PREVIEW, {("replace", "cwdemo-cpu-general", NP): (R_REPLACE, ("metadata.name",))},
        [("replace", "cwdemo-cpu-general"), ("replace", "cwdemo-node-observer")]),
    "events-up-guarded.jsonl": (
        EVENTS, {("replace", "cwdemo-h100", NP): (R_REPLACE, ("spec.instanceType",))},
        [("replace", "cwdemo-h100")]),
    "events-preview.jsonl": (
        EVENTS, {("replace", "log-relay", ADDR): (R_REPLACE, ("region",))},
        [("replace", "log-relay"), ("delete", "controller-ingress")]),
    "events-up-clean.jsonl": (EVENTS, {}, []),
    "preview-nodepool-instancetype-update.json": (
        PREVIEW, {("replace", "cwdemo-h100", NP): ("is immutable", ("spec.instanceType",))},
        [("replace", "cwdemo-h100")]),
    "events-up-protected-replace.jsonl": (
        EVENTS, {("replace", "cwdemo-h100", NP): ("Pulumi refused to replace", ())},
        [("replace", "cwdemo-h100")]),
}


def _name(urn: str) -> str:
    return urn.split("::", 3)[3]


def test_every_fixture_has_an_expectation():
    files = {p.name for p in FIX.iterdir() if p.suffix in (".json", ".jsonl")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_guard_blocks_exactly_the_expected_changes(fixture):
    fmt, violations, destructive = EXPECTED[fixture]
    parsed = parse_file(FIX / fixture)
    assert parsed.format == fmt
    verdict = check_document(parsed)
    got = {(v.op, _name(v.urn), v.type): v for v in verdict.violations}
    assert set(got) == set(violations), "missed or false block"
    for key, (rule, reasons) in violations.items():
        assert rule in got[key].rule
        assert got[key].reasons == reasons
        assert "a deliberate" in got[key].hint and "pulumi state" not in got[key].hint
    # a replacement counts once per URN, with or without the pair steps
    assert len(verdict.destructive) == len({u for _, u in verdict.destructive})
    got_destructive = sorted((op, _name(u)) for op, u in verdict.destructive)
    assert got_destructive == sorted(destructive)
    assert verdict.ok == (not violations)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_cli_exit_code_per_fixture(fixture, tmp_path, capsys):
    (tmp_path / "clusterstack.toml").write_text("[workspace]\n")
    _, violations, _ = EXPECTED[fixture]
    rc = main(["--root", str(tmp_path), "guard", str(FIX / fixture)])
    cap = capsys.readouterr()
    assert rc == (3 if violations else 0)
    blocked_lines = [ln for ln in cap.out.splitlines() if ln.startswith("BLOCKED ")]
    assert len(blocked_lines) == len(violations)
    assert cap.out.splitlines()[-1].startswith("guard: " + ("BLOCKED" if violations else "ok"))
    if violations:
        assert f"error: {FIX / fixture}: {len(violations)} guarded change(s) blocked" in cap.err


def test_change_summary_agrees_with_folded_replacements():
    """Pulumi's own changeSummary counts a replacement once; so does the guard's fold."""
    for fixture in ("preview-nodepool-replace.json", "preview-nodepool-replace-steps.json",
                    "preview-delete-before-replace.json", "events-preview.jsonl"):
        parsed = parse_file(FIX / fixture)
        verdict = check_document(parsed)
        replaces = sum(1 for op, _ in verdict.destructive if op == "replace")
        assert replaces == parsed.change_summary.get("replace", 0), fixture


def test_pair_steps_and_single_step_give_the_same_verdict():
    a = check(parse_file(FIX / "preview-nodepool-replace.json").steps)
    b = check(parse_file(FIX / "preview-nodepool-replace-steps.json").steps)
    assert [(v.op, v.urn, v.reasons, v.rule) for v in a.violations] == \
           [(v.op, v.urn, v.reasons, v.rule) for v in b.violations]


def test_fixtures_are_pulumis_shapes():
    """Guard against fixtures drifting from the documented schema they claim to follow."""
    for name in EXPECTED:
        text = (FIX / name).read_text()
        if name.endswith(".jsonl"):
            events = [json.loads(ln) for ln in text.splitlines()]
            assert [e["sequence"] for e in events] == list(range(len(events)))
            assert "cancelEvent" in events[-1] and "summaryEvent" in events[-2]
            for e in events:
                kinds = [k for k in e if k not in ("sequence", "timestamp")]
                assert len(kinds) == 1, e  # EngineEvent is a union: exactly one member set
                body = e[kinds[0]]
                if kinds[0] in ("resourcePreEvent", "resOutputsEvent"):
                    assert set(body["metadata"]) >= {"op", "urn", "type", "old", "new", "detailedDiff",
                                                     "provider"}
        else:
            doc = json.loads(text)
            assert set(doc) <= {"config", "steps", "diagnostics", "duration", "changeSummary",
                                "maybeCorrupt"}
            for s in doc["steps"]:
                assert set(s) <= {"op", "urn", "provider", "oldState", "newState", "diffReasons",
                                  "replaceReasons", "detailedDiff"}
                assert "detailedDiff" in s  # not omitempty in display.PreviewStep
                for st in (s.get("oldState"), s.get("newState")):
                    if st:
                        assert st["urn"] == s["urn"] and "type" in st and "custom" in st
