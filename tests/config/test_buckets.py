"""buckets.yaml: the shipped file loads, the derivations (TTL prefixes, protected prefixes and
their deny forms), and every bad input located as file:line: field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import shown
from clusterstack.validation import load_buckets
from clusterstack.derive.buckets import (TtlRule, coreweave_policy, gcs_delete_condition,
                                         lock_rule_id, overlaps, protected_prefixes, ttl_prefix,
                                         ttl_rules)
from clusterstack.cli import main
from clusterstack.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "buckets" / "buckets.yaml"

MINIMAL = """\
temp_prefix: tmp
ttl_days: [7, 30]
protected_prefixes: [checkpoints/hero/]
gcs:
  project: demo-project
  log_bucket: {name: lab-logs, location: US}
  buckets:
    - name: lab-data
      location: US-CENTRAL1
      storage_class: STANDARD
      object_writers: ["serviceAccount:w@demo-project.iam.gserviceaccount.com"]
coreweave:
  buckets:
    - name: lab-cw
      zone: US-EAST-04A
r2:
  account_id: 0123456789abcdef0123456789abcdef
  buckets:
    - name: lab-r2
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "buckets.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def problems(path: Path) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as ei:
        load_buckets(path)
    assert ei.value.exit_code == 2
    return [(p.line, p.field, p.message) for p in ei.value.problems]


# ---------------------------------------------------------------------------------------------
# The shipped file and the derivations


def test_the_shipped_file_loads():
    cfg = load_buckets(SHIPPED)
    assert cfg.ttl_days == (7, 30) and cfg.temp_prefix == "tmp"
    assert [b.name for b in cfg.gcs.buckets] == ["demo-lab-training-data", "demo-lab-checkpoints"]
    assert cfg.coreweave.api_token.scheme == "gcp-secret" and cfg.r2.api_token.scheme == "gcp-secret"


def test_minimal_file_loads(tmp_path):
    cfg = load_buckets(write(tmp_path, MINIMAL))
    assert cfg.r2.buckets[0].jurisdiction == "default" and cfg.gcs.buckets[0].soft_delete_days == 7


@pytest.mark.parametrize("temp, days, expected", [
    ("tmp", 7, "tmp/ttl=7d/"), ("scratch/expiring", 30, "scratch/expiring/ttl=30d/")])
def test_ttl_prefix(temp, days, expected):
    assert ttl_prefix(temp, days) == expected


def test_ttl_rules_are_sorted_and_declared_once(tmp_path):
    cfg = load_buckets(write(tmp_path, MINIMAL.replace("[7, 30]", "[30, 1, 7]")))
    assert ttl_rules(cfg) == (TtlRule(1, "tmp/ttl=1d/"), TtlRule(7, "tmp/ttl=7d/"),
                              TtlRule(30, "tmp/ttl=30d/"))
    assert [r.rule_id for r in ttl_rules(cfg)] == ["ttl-1d", "ttl-7d", "ttl-30d"]
    assert ttl_rules(cfg)[1].seconds == 604800


def test_protected_prefixes_merge_lab_wide_and_own(tmp_path):
    cfg = load_buckets(write(tmp_path, MINIMAL))
    assert protected_prefixes(cfg, ("a/", "checkpoints/hero/")) == ("a/", "checkpoints/hero/")
    assert protected_prefixes(cfg, ()) == ("checkpoints/hero/",)


@pytest.mark.parametrize("a, b, expected", [
    ("tmp/", "tmp/ttl=7d/", True), ("tmp/x/", "tmp/", True), ("tmpx/", "tmp/", False),
    ("checkpoints/hero/", "tmp/", False)])
def test_overlaps(a, b, expected):
    assert overlaps(a, b) is expected


def test_gcs_delete_condition_excludes_every_prefix():
    expr = gcs_delete_condition("b", ["z/", "a/"])
    assert expr == ('!resource.name.startsWith("projects/_/buckets/b/objects/a/") && '
                    '!resource.name.startsWith("projects/_/buckets/b/objects/z/")')
    with pytest.raises(ValueError):
        gcs_delete_condition("b", [])


def test_coreweave_policy_denies_deletes_in_prefixes_and_bucket_deletion():
    doc = coreweave_policy("bkt", ["hero/", "ckpt/final/"])
    assert doc["Version"] == "2012-10-17"
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert by_sid["DenyBucketDeletion"]["Action"] == ["s3:DeleteBucket"]
    deny = by_sid["DenyDeleteInProtectedPrefixes"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == {"CW": ["*"]}
    assert deny["Action"] == ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    assert deny["Resource"] == ["arn:aws:s3:::bkt/ckpt/final/*", "arn:aws:s3:::bkt/hero/*"]
    assert [s["Sid"] for s in coreweave_policy("bkt", [])["Statement"]] == ["DenyBucketDeletion"]
    json.dumps(doc)  # serialisable


def test_lock_rule_id():
    assert lock_rule_id("checkpoints/hero/") == "protect-checkpoints-hero"


# ---------------------------------------------------------------------------------------------
# Bad input: each located


BAD = [
    # (replace old → new in MINIMAL, expected line, field, message fragment)
    (("temp_prefix: tmp", "temp_prefix: tmp\ncolour: blue"), 2, "colour", "Extra inputs are not permitted"),
    (("protected_prefixes: [checkpoints/hero/]", "protected_prefixes: [tmp/keep/]"), 3,
     "protected_prefixes[0]", "overlaps the TTL area 'tmp/'"),
    (("protected_prefixes: [checkpoints/hero/]", "protected_prefixes: [checkpoints/hero]"), 3,
     "protected_prefixes[0]", "' is not "),
    (("ttl_days: [7, 30]", "ttl_days: [7, 7]"), 2, "ttl_days", "7 is listed twice"),
    (("ttl_days: [7, 30]", "ttl_days: [0]"), 2, "ttl_days[0]", "greater than or equal to 1"),
    (("      storage_class: STANDARD\n", ""), 8, "gcs.buckets[0].storage_class",
     "exactly one of storage_class and autoclass"),
    (("      storage_class: STANDARD\n", "      storage_class: STANDARD\n      autoclass: {}\n"), 10,
     "gcs.buckets[0].storage_class", "exactly one of storage_class and autoclass"),
    (("      storage_class: STANDARD\n", "      storage_class: STANDARD\n      soft_delete_days: 3\n"),
     11, "gcs.buckets[0].soft_delete_days", "not 0 (off) or between 7 and 90"),
    (('      object_writers: ["serviceAccount:w@demo-project.iam.gserviceaccount.com"]\n', ""), 8,
     "gcs.buckets[0].object_writers", "protected prefixes need object_writers on GCS"),
    (("[\"serviceAccount:w@demo-project.iam.gserviceaccount.com\"]", "[w@example.org]"), 11,
     "gcs.buckets[0].object_writers[0]", "' is not "),
    (("[\"serviceAccount:w@demo-project.iam.gserviceaccount.com\"]", "[\"user:bob.smith@" "gmail.com\"]"), 11,
     "gcs.buckets[0].object_writers[0]", "a plaintext user: member (a personal email) is not allowed"),
    (("name: lab-data", "name: google-data"), 8, "gcs.buckets[0].name", "contain 'google'"),
    (("name: lab-data", "name: lab-logs"), 8, "gcs.buckets[0].name",
     "declared twice (also the log bucket)"),
    (("name: lab-cw", "name: cw-lab"), 14, "coreweave.buckets[0].name", "reserves bucket names"),
    (("zone: US-EAST-04A", "zone: us-east-04a"), 15, "coreweave.buckets[0].zone", "' is not "),
    (("account_id: 0123456789abcdef0123456789abcdef", "account_id: xyz"), 17, "r2.account_id",
     "' is not "),
    (("    - name: lab-r2\n", "    - name: lab-r2\n      protected_prefixes: [tmp/]\n"), 20,
     "r2.buckets[0].protected_prefixes[0]", "overlaps the TTL area"),
    (("    - name: lab-r2\n", "    - name: lab-r2\n    - name: lab-r2\n"), 20,
     "r2.buckets[1].name", "'lab-r2' is declared twice (also r2.buckets[0])"),
    (("r2:\n", "r2:\n  api_token: hunter2\n"), 17, "r2.api_token", "not a secret spec"),
]


@pytest.mark.parametrize("change, line, field, fragment", BAD, ids=[b[2] + ":" + b[3][:20] for b in BAD])
def test_bad_input_is_located(tmp_path, change, line, field, fragment):
    old, new = change
    assert old in MINIMAL
    found = problems(write(tmp_path, MINIMAL.replace(old, new, 1)))
    assert any(ln == line and f == field and fragment in m for ln, f, m in found), found


def test_no_provider_section(tmp_path):
    assert problems(write(tmp_path, "ttl_days: [7]\n")) == [
        (1, "gcs", "no provider section")]


def test_every_problem_is_reported_at_once(tmp_path):
    text = MINIMAL.replace("zone: US-EAST-04A", "zone: nowhere").replace("account_id: 0123456789abcdef0123456789abcdef", "account_id: x")
    assert {f for _, f, _ in problems(write(tmp_path, text))} == {"coreweave.buckets[0].zone",
                                                                   "r2.account_id"}


def test_invalid_yaml_and_duplicate_keys(tmp_path):
    assert problems(write(tmp_path, "gcs: [\n"))[0][0] == 2
    found = problems(write(tmp_path, "ttl_days: [7]\nttl_days: [8]\n"))
    assert found[0][0] == 2 and "duplicate key" in found[0][2]


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load_buckets(tmp_path / "nope.yaml")
    assert ei.value.problems[0].message == "file not found"


def test_bad_buckets_file_fails_the_plan_with_file_line(workspace_copy, capsys):
    path = workspace_copy / "buckets" / "buckets.yaml"
    path.write_text(path.read_text().replace("zone: US-EAST-04A\n      tags",
                                             "zone: east\n      tags"), encoding="utf-8")
    assert main(["--root", str(workspace_copy), "plan", "--project", "buckets"]) == 2
    cap = capsys.readouterr()
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "zone: east" in t)
    assert cap.err.startswith(f"error: {shown(path)}:{line}: coreweave.buckets[0].zone: 'east' is not a CoreWeave zone")
    assert "Traceback" not in cap.err and cap.out == ""


def test_a_personal_object_writer_never_reaches_a_plan(workspace_copy, capsys):
    """``user:EMAIL`` would put the email into logical names and URNs (permanently in state):
    the plan fails at the line, and the error itself shows the email redacted."""
    path = workspace_copy / "buckets" / "buckets.yaml"
    text = path.read_text()
    old = "        - group:ml-data-writers@example.org\n"
    assert old in text
    path.write_text(text.replace(old, old + "        - user:bob.smith@" "gmail.com\n"), encoding="utf-8")
    assert main(["--root", str(workspace_copy), "plan", "--project", "buckets"]) == 2
    cap = capsys.readouterr()
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "user:bob" in t)
    assert f"buckets.yaml:{line}:" in cap.err and "plaintext user: member" in cap.err
    assert "bob.smith" not in cap.out + cap.err
    # non-personal members stay allowed
    path.write_text(text.replace(old, old + "        - domain:example.org\n"), encoding="utf-8")
    assert main(["--root", str(workspace_copy), "plan", "--project", "buckets"]) == 0
