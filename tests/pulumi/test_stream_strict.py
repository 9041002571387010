"""The one strict engine event stream against the engine mis-readings and the hostile
streams, each through ``clusterstack guard FILE`` (the saved-file path; the live
adapter's path is tests/engine/test_refusals.py).

Every input is derived from Pulumi's own recorded output — a lifecycle run of
``../shared/reference/pulumi/pkg/engine/lifecycletest/testdata/output/<Test>/<step>/eventstream.json``
(pulumi/pulumi @1b5949891b3c), named at each test — or from this project's fixtures in
tests/fixtures/engine/events/ (tests/fixtures/pulumi/README.md: Pulumi's shapes, this project's
resources), changed only where the case says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.pulumi.tokens import NODEPOOL, kubernetes_token
from k8s_schemas import reference_dir

ENGINE = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "events"
PULUMI = Path(__file__).resolve().parents[1] / "fixtures" / "pulumi"
REF = reference_dir()
OUTPUT = REF / "pulumi/pkg/engine/lifecycletest/testdata/output" if REF else None
needs_reference = pytest.mark.skipif(REF is None, reason="../shared/reference (Pulumi's recorded "
                                     "engine outputs) is absent")
STACK = "cw-demo-h100"
PARENT = f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools"
H100 = f"{PARENT}${NODEPOOL}::cwdemo-h100"
CPU = f"{PARENT}${NODEPOOL}::cwdemo-cpu-general"


def _events(name: str) -> list[dict]:
    return [json.loads(x) for x in (ENGINE / name).read_text().splitlines() if x.strip()]


def _recorded(test: str) -> list[dict]:
    return [json.loads(x) for x in (OUTPUT / test / "eventstream.json").read_text().splitlines() if x.strip()]


def _renumbered(events: list[dict]) -> list[dict]:
    """Sequence numbers in order (the recorded streams carry 0 throughout; the CLI numbers them)."""
    return [{**e, "sequence": i} for i, e in enumerate(events)]


def _guard(tmp_path: Path, capsys, text: str, name: str = "doc.jsonl") -> tuple[int, str, str]:
    (tmp_path / "clusterstack.toml").write_text('[workspace]\nproject_name = "clusterstack"\n')
    f = tmp_path / name
    f.write_text(text)
    rc = main(["--root", str(tmp_path), "guard", str(f)])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    return rc, cap.out, cap.err


def _lines(events: list[dict]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def _meta(e: dict) -> dict | None:
    body = e.get("resourcePreEvent") or e.get("resOutputsEvent") or e.get("resOpFailedEvent")
    return body["metadata"] if body else None


def _summary(e: dict) -> dict | None:
    return e.get("summaryEvent")


# --- real engine output the guard mis-read ------------------------------------------

@needs_reference
def test_a_recorded_aliased_old_state_of_another_type_is_judged_not_refused(tmp_path, capsys):
    # TestAliases/t5-n3-0-0: an update of pkgA:index:t5::n3 whose old state is the aliased
    # pkgA:index:t4::n2 (step_generator.go getOldResource keeps the old state's own URN and type)
    events = _renumbered(_recorded("TestAliases/t5-n3-0-0"))
    [md] = [m for e in events if "resourcePreEvent" in e and (m := _meta(e))["op"] == "update"]
    assert md["old"]["type"] != md["type"] and md["old"]["urn"] != md["urn"]
    rc, out, err = _guard(tmp_path, capsys, _lines(events))
    assert rc == 0, err
    assert out.splitlines()[-1].startswith("guard: ok — 0 violation(s); 0 destructive change(s)")


def _aliased_nodepool(op: str) -> list[dict]:
    """preview-update.jsonl with the cwdemo-h100 NodePool moving v1alpha1 → v1beta1 by an alias,
    in the shape of TestAliases/t5-n3: the step and its new state under the new URN and type,
    the old state found by the alias, keeping its own URN and type."""
    v1beta1 = kubernetes_token("compute.coreweave.com/v1beta1", "NodePool")
    new_urn = f"{PARENT}${v1beta1}::cwdemo-h100"
    out = []
    for e in _events("preview-update.jsonl"):
        md = _meta(e)
        if md and md["urn"] == H100:
            md.update(op=op, urn=new_urn, type=v1beta1)
            md["new"].update(urn=new_urn, type=v1beta1)
            md["new"]["inputs"]["apiVersion"] = "compute.coreweave.com/v1beta1"
            md["detailedDiff"] = {"apiVersion": {"diffKind": "update-replace" if op == "replace" else "update",
                                                 "inputDiff": True}}
            md["diffs"] = ["apiVersion"]
            if op == "replace":
                md["keys"] = ["apiVersion"]
            assert md["old"]["urn"] == H100 and md["old"]["type"] == NODEPOOL
        if _summary(e) is not None and op == "replace":
            e["summaryEvent"]["resourceChanges"] = {"same": 6, "update": 1, "replace": 1, "create": 1}
        out.append(e)
    return out


def test_an_aliased_nodepool_update_is_judged_and_passes(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, _lines(_aliased_nodepool("update")))
    assert rc == 0, err


def test_an_aliased_nodepool_replace_is_judged_and_blocked_naming_the_pool(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, _lines(_aliased_nodepool("replace")))
    assert rc == 3, err
    assert out.startswith("BLOCKED replace NodePool cwdemo-h100 — forced by apiVersion")


def test_an_old_state_that_contradicts_its_own_urn_is_still_refused(tmp_path, capsys):
    events = _aliased_nodepool("update")
    for e in events:
        md = _meta(e)
        if md and md.get("old") and md["old"]["urn"] == H100:
            md["old"]["urn"] = md["urn"]  # no alias: the step's own URN, with the old type
    rc, _, err = _guard(tmp_path, capsys, _lines(events))
    assert rc == 2 and "the old state's type" in err and "contradicts the URN's type" in err


def _with_extend_parameterize(events: list[dict]) -> list[dict]:
    """``ExtensionParameterizeStep`` (pkg/resource/deploy/step.go:1813-1821): URN, type,
    provider empty, no states, not logical — as makeStepEventMetadata (pkg/engine/events.go)
    writes it, announced and completed like any step."""
    md = {"op": "extend-parameterize", "urn": "", "type": "", "old": None, "new": None,
          "detailedDiff": None, "provider": ""}
    at = next(i for i, e in enumerate(events) if "resourcePreEvent" in e)
    out = events[:at] + [{"sequence": 0, "timestamp": 1736848931, "resourcePreEvent": {"metadata": md, "planning": True}},
                         {"sequence": 0, "timestamp": 1736848931, "resOutputsEvent": {"metadata": md, "planning": True}}
                         ] + events[at:]
    return _renumbered(out)


def test_an_internal_op_with_an_empty_urn_is_skipped_not_a_refused_log(tmp_path, capsys):
    rc, out, err = _guard(tmp_path, capsys, _lines(_with_extend_parameterize(_events("preview-clean.jsonl"))))
    assert rc == 0, err


@needs_reference
def test_the_older_protect_text_is_the_blocked_nodepool_delete_it_is(tmp_path, capsys):
    # TestMultipleProtectedDeletes/1 as a CLI from v3.3.0 to v3.51 wrote it: DeleteStep.Apply's
    # "unable to delete resource %q\nas it is currently marked for protection" (pulumi/pulumi
    # commit 03e7601301; replaced by "cannot be deleted because it is protected" in bf239e04d0,
    # whose diff of TestProtect in pulumi_test.go quotes the old expected message)
    text = _lines(_renumbered(_recorded("TestMultipleProtectedDeletes/1")))
    assert "cannot be deleted\\nbecause it is protected" in text
    text = text.replace("Preview failed: resource ", "Preview failed: unable to delete resource ")
    text = text.replace(" cannot be deleted\\nbecause it is protected.",
                        "\\nas it is currently marked for protection.")
    text = text.replace("pkgA:m:typA", NODEPOOL)
    rc, out, err = _guard(tmp_path, capsys, text)
    assert rc == 3, err
    assert "the Pulumi run failed" not in err
    assert [ln.split(" —")[0].split(":")[0] for ln in out.splitlines() if ln.startswith("BLOCKED")] == \
        ["BLOCKED delete NodePool resA", "BLOCKED delete NodePool resB"]


def test_a_repeated_key_never_hides_a_nodepool_delete(tmp_path, capsys):
    # preview-nodepool-delete.json's unprotected pool: its step says "op": "delete" and again
    # "op": "same" at its end (a last-value reader sees a harmless step)
    doc = json.loads((PULUMI / "preview-nodepool-delete.json").read_text())
    stack, cpu = doc["steps"][0], doc["steps"][1]
    assert cpu["op"] == "delete" and cpu["urn"] == CPU
    text = json.dumps({"steps": [stack, cpu], "changeSummary": {"same": 27}})
    text = text.replace(f'"urn": "{CPU}"', f'"urn": "{CPU}", "op": "same"', 1)
    assert text.count('"op"') == 3
    rc, _, err = _guard(tmp_path, capsys, text, "preview.json")
    assert rc == 2 and "the key 'op' appears twice in one object" in err


def test_a_repeated_key_in_an_event_line_is_refused_naming_the_line(tmp_path, capsys):
    events = _events("preview-update.jsonl")
    text = _lines(events)
    line = next(n for n, e in enumerate(events, 1) if (_meta(e) or {}).get("urn") == H100)
    lines = text.splitlines()
    lines[line - 1] = lines[line - 1].replace('"op": "update"', '"op": "delete", "op": "update"', 1)
    rc, _, err = _guard(tmp_path, capsys, "\n".join(lines) + "\n")
    assert rc == 2 and f"doc.jsonl:{line}: not accepted JSON: the key 'op' appears twice" in err


# --- hostile and inconsistent streams -----------------------------------------------

def _delete_labelled_configmap() -> list[dict]:
    """preview-update.jsonl with the h100 NodePool's step turned into a delete whose step
    ``type`` says ConfigMap (its states and URN still say NodePool)."""
    out = []
    for e in _events("preview-update.jsonl"):
        md = _meta(e)
        if md and md["urn"] == H100:
            md.update(op="delete", type="kubernetes:core/v1:ConfigMap", new=None, detailedDiff=None)
            md.pop("diffs", None)
        out.append(e)
    return out


def test_a_step_type_that_contradicts_its_urn_is_refused(tmp_path, capsys):
    rc, _, err = _guard(tmp_path, capsys, _lines(_delete_labelled_configmap()))
    assert rc == 2
    assert "the step's type 'kubernetes:core/v1:ConfigMap' contradicts its URN's type" in err


def _with_summary(events: list[dict], **fields) -> list[dict]:
    for e in events:
        if _summary(e) is not None:
            e["summaryEvent"].update(fields)
    return events


@pytest.mark.parametrize("result, problem", [
    ("cancelled", "result \"cancelled\" is not one of Pulumi's"),      # the old code's own spelling
    ("FAILED", "result \"FAILED\" is not one of Pulumi's"),
    ("partial", "result \"partial\" is not one of Pulumi's"),
    (1, "result 1 is not one of Pulumi's"),
    ("canceled", "the run was cancelled"),                              # apitype: it stopped part way
])
def test_a_summary_result_that_is_not_a_finished_success_is_refused(tmp_path, capsys, result, problem):
    rc, _, err = _guard(tmp_path, capsys, _lines(_with_summary(_events("preview-clean.jsonl"), result=result)))
    assert rc == 2 and problem in err, err


def test_a_refused_event_line_is_located_as_file_line_field(tmp_path, capsys):
    # read: `doc.jsonl: line 7.summaryEvent.result: …`; every other located problem reads
    # `file:line: field: …`
    events = _with_summary(_events("preview-clean.jsonl"), result=7)
    n = next(i for i, e in enumerate(events, 1) if _summary(e) is not None)
    rc, _, err = _guard(tmp_path, capsys, _lines(events))
    assert rc == 2 and f"doc.jsonl:{n}: summaryEvent.result: result 7 is not one of Pulumi's" in err, err
    assert "line " not in err.split("—")[0]


@pytest.mark.parametrize("value", ["true", 1, None])
def test_is_preview_that_is_not_a_boolean_is_refused(tmp_path, capsys, value):
    rc, _, err = _guard(tmp_path, capsys, _lines(_with_summary(_events("preview-clean.jsonl"), isPreview=value)))
    assert rc == 2 and "isPreview must be true or false" in err


def test_a_log_that_is_only_an_empty_summary_is_refused(tmp_path, capsys):
    [summary] = [e for e in _events("preview-clean.jsonl") if _summary(e) is not None]
    summary["summaryEvent"]["resourceChanges"] = {}
    rc, _, err = _guard(tmp_path, capsys, _lines([summary]))
    assert rc == 2 and "no preludeEvent" in err


def test_a_failed_summary_placed_later_with_a_lower_sequence_is_refused(tmp_path, capsys):
    events = _events("preview-clean.jsonl")
    [summary] = [e for e in events if _summary(e) is not None]
    failed = json.loads(json.dumps(summary))
    failed["sequence"] = 3
    failed["summaryEvent"]["result"] = "failed"
    rc, _, err = _guard(tmp_path, capsys, _lines(events + [failed]))
    assert rc == 2 and "2 summaryEvents end the preview pass" in err


def test_a_step_after_the_final_summary_is_refused(tmp_path, capsys):
    events = _events("preview-clean.jsonl")
    late = next(e for e in _events("preview-update.jsonl") if (_meta(e) or {}).get("urn") == H100)
    late["sequence"] = 999
    rc, _, err = _guard(tmp_path, capsys, _lines(events + [late]))
    assert rc == 2 and "a step event follows the run's final summaryEvent" in err


def test_an_error_diagnostic_with_an_upper_case_severity_is_refused(tmp_path, capsys):
    events = _events("preview-clean.jsonl")
    at = next(i for i, e in enumerate(events) if _summary(e) is not None)
    events.insert(at, {"sequence": 14, "timestamp": 1736848946, "diagnosticEvent": {
        "message": "<{%fg 1%}>error: <{%reset%}>boom<{%reset%}>\n", "color": "raw", "severity": "ERROR"}})
    rc, _, err = _guard(tmp_path, capsys, _lines(_renumbered(events)))
    assert rc == 2 and 'severity "ERROR" is not one of Pulumi\'s' in err


def test_a_preview_document_without_steps_is_refused(tmp_path, capsys):
    doc = json.loads((PULUMI / "preview-clean.json").read_text())
    del doc["steps"]
    rc, _, err = _guard(tmp_path, capsys, json.dumps(doc), "preview.json")
    assert rc == 2 and 'a preview document without "steps"' in err


def test_a_line_of_text_among_the_events_is_refused_naming_it(tmp_path, capsys):
    lines = _lines(_events("preview-clean.jsonl")).splitlines()
    lines.insert(3, "Previewing update (cw-demo-h100):")
    rc, _, err = _guard(tmp_path, capsys, "\n".join(lines) + "\n")
    assert rc == 2 and "doc.jsonl:4: not a JSON event" in err


@needs_reference
def test_a_refresh_that_says_gone_then_a_real_delete_is_judged_as_the_delete(tmp_path, capsys):
    # TestRefreshBasics/3-0-0-preview (pre op `refresh`, outputs op `delete`: gone), with its
    # resource as this project's NodePool, and then a real delete step of that NodePool
    text = _lines(_renumbered(_recorded("TestRefreshBasics/3-0-0-preview")))
    text = text.replace("urn:pulumi:test::test::pkgA:m:typA::resC", H100).replace("pkgA:m:typA", NODEPOOL)
    events = [json.loads(x) for x in text.splitlines()]
    gone = next(e for e in events if "resOutputsEvent" in e)
    delete = {"sequence": 0, "timestamp": 0, "resourcePreEvent": {"metadata": {**_meta(gone), "op": "delete"}}}
    done = {"sequence": 0, "timestamp": 0, "resOutputsEvent": {"metadata": {**_meta(gone), "op": "delete"}}}
    at = next(i for i, e in enumerate(events) if _summary(e) is not None)
    rc, out, err = _guard(tmp_path, capsys, _lines(_renumbered(events[:at] + [delete, done] + events[at:])))
    assert rc == 3, err
    assert out.startswith("BLOCKED delete NodePool cwdemo-h100")
    # without the real delete, the same stream is drift: no verdict against it
    rc, out, err = _guard(tmp_path, capsys, _lines(events))
    assert rc == 0 and "drift gone NodePool cwdemo-h100" in out
