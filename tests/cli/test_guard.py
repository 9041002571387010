"""`clusterstack guard FILE [--json]` end to end through clusterstack.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import shown
from clusterstack.cli import main
from clusterstack.pulumi.tokens import NODEPOOL

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"


def _ws(tmp_path: Path, guard: str = "") -> Path:
    (tmp_path / "clusterstack.toml").write_text(f"[workspace]\nproject_name = \"clusterstack\"\n{guard}")
    return tmp_path


def run(capsys, *argv):
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_json_verdict_is_canonical_and_byte_identical(tmp_path, capsys):
    ws = _ws(tmp_path)
    f = str(FIX / "preview-nodepool-replace-steps.json")
    rc1, out1, err1 = run(capsys, "--root", str(ws), "guard", "--json", f)
    rc2, out2, _ = run(capsys, "--root", str(ws), "guard", f, "--json")
    assert rc1 == rc2 == 3 and out1 == out2
    doc = json.loads(out1)
    assert out1 == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert doc["format"] == "clusterstack.verdict/v1" and doc["input_format"] == "preview"
    assert doc["severity"] == "blocked" and doc["drift"] == [] and doc["recovery"] == []
    assert doc["ok"] is False and doc["source"] == f
    assert doc["counts"] == {"steps": 5, "destructive": 1, "violations": 1,
                             "destructive_ops": {"replace": 1},
                             "ops": {"create-replacement": 1, "delete-replaced": 1, "replace": 1,
                                     "same": 1, "update": 1}}
    (v,) = doc["violations"]
    assert v["op"] == "replace" and v["reasons"] == ["spec.instanceType"]
    assert v["type"] == NODEPOOL
    # the replace states the capacity it destroys: the whole autoscaled pool (maxNodes 32 of
    # gd-8xh100ib-i128, 8 GPUs a node)
    cap = v["capacity"]
    assert (cap["op"], cap["nodes_lost"], cap["gpus_lost"]) == ("replace", 32, 256)
    assert doc["destructive"] == [{"op": "replace", "urn": v["urn"], "type": v["type"], "blocked": True,
                                   "capacity": cap}]
    assert doc["capacity"] == [cap]
    assert doc["change_summary"] == {"replace": 1, "same": 26, "update": 1}
    assert 'see "violations" in the JSON above' in err1


def test_clean_json_exits_zero(tmp_path, capsys):
    rc, out, err = run(capsys, "--root", str(_ws(tmp_path)), "guard", "--json",
                       str(FIX / "preview-address-delete.json"))
    doc = json.loads(out)
    assert rc == 0 and err == ""
    assert doc["ok"] is True and doc["violations"] == []
    assert doc["destructive"][0]["blocked"] is False and doc["destructive"][0]["op"] == "delete"


def test_text_output_lists_allowed_destructive_changes(tmp_path, capsys):
    rc, out, _ = run(capsys, "--root", str(_ws(tmp_path)), "guard", str(FIX / "events-preview.jsonl"))
    lines = out.splitlines()
    assert rc == 3
    # the entry on one line (op, kind, name, forcing property, rule), without the URN
    assert lines[0].startswith("BLOCKED replace Address ") and " — forced by region: " in lines[0]
    assert "urn:" not in lines[0]
    assert lines[1].startswith("  to do: ") and lines[1].count("urn:pulumi:gcp-demo::") == 1
    assert lines[2].startswith("allowed delete ") and " controller-ingress: " in lines[2]
    assert "urn:" not in lines[2]
    assert lines[3] == ("guard: BLOCKED — 1 violation(s); 2 destructive change(s) (1 delete, 1 replace) "
                        "in 5 step(s)")


def test_a_recorded_update_says_it_already_ran(tmp_path, capsys):
    _, _, err = run(capsys, "--root", str(_ws(tmp_path)), "guard", str(FIX / "events-up-guarded.jsonl"))
    assert "this log records an update that performed them" in err


def test_policy_comes_from_the_workspace(tmp_path, capsys):
    f = str(FIX / "preview-address-replace.json")
    rc, _, _ = run(capsys, "--root", str(_ws(tmp_path)), "guard", f)
    assert rc == 3
    (tmp_path / "relaxed").mkdir()
    relaxed = _ws(tmp_path / "relaxed",
                  f'[guard]\nforbid_replace = ["{NODEPOOL}"]\n'
                  "forbid_delete_unretained = []\nprotected_state = false\n")
    f = str(FIX / "preview-address-delete-unretained.json")
    rc, _, _ = run(capsys, "--root", str(_ws(tmp_path)), "guard", f)
    assert rc == 3
    rc, out, _ = run(capsys, "--root", str(relaxed), "guard", f)
    assert rc == 0 and out.splitlines()[-1].startswith("guard: ok — 0 violation(s); 1 destructive")


def test_a_refusal_by_pulumi_blocks_whatever_the_policy_says(tmp_path, capsys):
    # the engine itself refused the protected replaces (step_generator.go): no [guard] table
    # can turn the failed preview into a clean one
    (tmp_path / "relaxed").mkdir()
    relaxed = _ws(tmp_path / "relaxed", "[guard]\nforbid_replace = []\nprotected_state = false\n")
    rc, out, _ = run(capsys, "--root", str(relaxed), "guard", str(FIX / "preview-address-replace.json"))
    assert rc == 3 and out.count("Pulumi refused to replace it") == 2


def test_unknown_guard_key_is_exit_2_naming_the_file(tmp_path, capsys):
    ws = _ws(tmp_path, "[guard]\nblock_everything = true\n")
    rc, out, err = run(capsys, "--root", str(ws), "guard", str(FIX / "preview-clean.json"))
    assert rc == 2 and out == ""
    text = (ws / "clusterstack.toml").read_text(encoding="utf-8")
    line = text[:text.index("block_everything = true")].count("\n") + 1
    assert f"error: clusterstack.toml:{line}: guard.block_everything: unknown key 'block_everything'" in err


def test_not_a_pulumi_file_is_exit_2(tmp_path, capsys):
    ws = _ws(tmp_path)
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"format": "clusterstack.plan/v1", "stacks": []}))
    rc, out, err = run(capsys, "--root", str(ws), "guard", str(bad))
    assert rc == 2 and out == ""
    assert err.startswith(f"error: {shown(bad)}: a JSON object that is neither a Pulumi preview document")


def test_requires_a_workspace(tmp_path, capsys):
    rc, _, err = run(capsys, "--root", str(tmp_path), "guard", str(FIX / "preview-clean.json"))
    assert rc == 2 and "no clusterstack.toml here" in err


@pytest.mark.parametrize("name, preview", [
    ("preview-nodepool-replace.jsonl", True), ("preview-clean.jsonl", True),
    ("up-guarded-midupdate.jsonl", False), ("up-update.jsonl", False)])
def test_engine_fixture_logs_say_which_pass_they_record(name, preview):
    # Pulumi always writes summaryEvent.isPreview (apitype.SummaryEvent); the fixtures must too
    from clusterstack.pulumi.documents import parse_file
    assert parse_file(FIX.parent / "engine" / "events" / name).is_preview is preview


def test_a_preview_event_log_does_not_claim_an_update_ran(tmp_path, capsys):
    f = str(FIX.parent / "engine" / "events" / "preview-nodepool-replace.jsonl")
    rc, _, err = run(capsys, "--root", str(_ws(tmp_path)), "guard", f)
    assert rc == 3
    assert "performed them" not in err


def test_a_summary_without_is_preview_is_refused():
    # apitype.SummaryEvent.IsPreview has no omitempty: a summary without it is not Pulumi's
    from clusterstack.errors import ClusterstackError
    from clusterstack.pulumi.documents import parse_document
    summary = {"sequence": 1, "timestamp": 1, "summaryEvent": {
        "maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": {"same": 1}, "PolicyPacks": {}}}
    with pytest.raises(ClusterstackError, match="isPreview must be true or false"):
        parse_document([summary])


# --- several files: one report ---------------------------------------------------------------

SEVERAL = [str(FIX / "preview-clean.json"), str(FIX / "preview-nodepool-replace-steps.json"),
           str(FIX / "events-preview.jsonl")]


def test_several_files_are_each_checked_in_one_report(tmp_path, capsys):
    ws = str(_ws(tmp_path))
    singles = []
    for f in SEVERAL:                           # each file alone, as the one-file command reports it
        singles.append(run(capsys, "--root", ws, "guard", f))
    rc, out, err = run(capsys, "--root", ws, "guard", *SEVERAL)
    assert rc == 3                              # any blocked file blocks the run
    assert out == "".join(f"== {f}\n{o}\n" for f, (_, o, _) in zip(SEVERAL, singles)) + \
        "guard: BLOCKED — 2 of 3 file(s) blocked\n"
    # one error line per blocked file, each naming its file
    assert err.splitlines() == [e.rstrip("\n") for rc1, _, e in singles if rc1 == 3]
    assert [rc1 for rc1, _, _ in singles] == [0, 3, 3]


def test_several_files_json_is_one_document_of_each_verdict(tmp_path, capsys):
    ws = str(_ws(tmp_path))
    singles = [json.loads(run(capsys, "--root", ws, "guard", f, "--json")[1]) for f in SEVERAL]
    rc, out, err = run(capsys, "--root", ws, "guard", *SEVERAL, "--json")
    assert rc == 3 and len(err.splitlines()) == 2
    assert json.loads(out) == {"format": "clusterstack.verdict-set/v1", "ok": False, "verdicts": singles}
    rc, out, _ = run(capsys, "--root", ws, "guard", SEVERAL[0], SEVERAL[0], str(FIX / "preview-update-in-place.json"),
                     "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["ok"] is True and len(doc["verdicts"]) == 2   # a file named twice: once
    other = str(FIX / ".." / FIX.name / "preview-clean.json")            # another spelling of it
    rc, out, _ = run(capsys, "--root", ws, "guard", SEVERAL[0], other, "--json")
    assert rc == 0 and json.loads(out) == singles[0]                       # one file: its own document


def test_a_bad_file_among_several_refuses_the_run_before_any_verdict(tmp_path, capsys):
    ws = _ws(tmp_path)
    bad = tmp_path / "notes.txt"
    bad.write_text("not a preview\n")
    rc, out, err = run(capsys, "--root", str(ws), "guard", SEVERAL[1], str(tmp_path / "missing.json"), str(bad))
    assert (rc, out) == (2, "")
    lines = err.splitlines()
    assert len(lines) == 2 and "Traceback" not in err
    assert lines[0] == f"error: {shown(tmp_path / 'missing.json')}: no such file — give the path of a saved preview or event log"
    assert lines[1].startswith(f"error: {shown(bad)}:1: not JSON")


def test_a_failed_update_log_is_refused_as_an_update_not_a_preview(tmp_path, capsys):
    # a recorded `pulumi up` that failed (the fixture's summaryEvent says isPreview false)
    rc, out, err = run(capsys, "--root", str(_ws(tmp_path)), "guard", str(FIX.parent / "engine" / "events" / "up-resource-error.jsonl"))
    assert (rc, out) == (2, "")
    assert "the Pulumi update failed" in err and "check the live resources" in err
    assert "failed preview" not in err
