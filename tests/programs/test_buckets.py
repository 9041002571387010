"""The bucket project under Pulumi mocks: every bucket protected and retained, TTL rules identical
across providers, deletion denied on protected prefixes in each provider's native form, the GCS
baseline (uniform access, public access prevention, soft delete, usage logs), and the guard's
and static diff's bucket rules."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from clusterstack.validation import load_buckets
from clusterstack.derive.buckets import ttl_rules
from clusterstack.guard import GuardPolicy, check
from clusterstack.plan import dumps, plan_stack, run_program
from clusterstack.plan.diff import diff_plans
from clusterstack.plan.model import StackPlan
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import BUCKETS
from clusterstack.pulumi.values import SECRET

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "buckets"
GCS = "gcp:storage/bucket:Bucket"
CW = "coreweave:index/objectStorageBucket:ObjectStorageBucket"
CW_LIFECYCLE = "coreweave:index/objectStorageBucketLifecycleConfiguration:ObjectStorageBucketLifecycleConfiguration"
CW_POLICY = "coreweave:index/objectStorageBucketPolicy:ObjectStorageBucketPolicy"
R2 = "cloudflare:index/r2Bucket:R2Bucket"
R2_LIFECYCLE = "cloudflare:index/r2BucketLifecycle:R2BucketLifecycle"
R2_LOCK = "cloudflare:index/r2BucketLock:R2BucketLock"
IAM_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
DELETE_CAPABLE = {"roles/storage.objectUser", "roles/storage.objectAdmin", "roles/storage.admin",
                  "roles/storage.legacyBucketWriter"}


@pytest.fixture(scope="module")
def plan() -> StackPlan:
    return plan_stack(PROJECT, "lab")


@pytest.fixture(scope="module")
def cfg():
    return load_buckets(PROJECT / "buckets.yaml")


def of_type(plan: StackPlan, typ: str):
    return [r for r in plan.resources if r.type == typ]


def by_name(plan: StackPlan, typ: str) -> dict:
    return {r.name: r for r in of_type(plan, typ)}


# ---------------------------------------------------------------------------------------------
# Protection


def test_every_bucket_is_protected_and_retained(plan, cfg):
    buckets = [r for r in plan.resources if r.type in BUCKETS]
    expected = (1 + len(cfg.gcs.buckets)) + len(cfg.coreweave.buckets) + len(cfg.r2.buckets)
    assert len(buckets) == expected == 6
    assert [r.name for r in buckets if not (r.protect and r.retain_on_delete)] == []
    gcs = of_type(plan, GCS)
    assert {r.inputs["deletionPolicy"] for r in gcs} == {"PREVENT"}
    assert {r.inputs["forceDestroy"] for r in gcs} == {False}


def test_the_guard_forbids_bucket_delete_and_replace_by_default(plan):
    policy = GuardPolicy()
    for r in (r for r in plan.resources if r.type in BUCKETS):
        for op in ("delete", "replace", "create-replacement", "delete-replaced"):
            # even a bucket whose state lost protect is blocked by its type
            verdict = check([Step(op=op, urn=r.urn, type=r.type, old_protect=False,
                                  old_retain_on_delete=True)], policy)
            assert not verdict.ok, (op, r.urn)


def test_the_static_diff_flags_a_bucket_move_and_removal(plan):
    bucket = by_name(plan, GCS)["demo-lab-training-data"]
    moved = dataclasses.replace(bucket, inputs={**bucket.inputs, "location": "EUROPE-WEST4"})
    head = dataclasses.replace(plan, resources=tuple(moved if r.urn == bucket.urn else r
                                                     for r in plan.resources))
    d = diff_plans(plan, head, GuardPolicy())
    assert [(f.urn, f.path) for f in d.findings if f.path] == [(bucket.urn, "location")]
    r2 = by_name(plan, R2)["demo-lab-datasets"]
    gone = dataclasses.replace(plan, resources=tuple(r for r in plan.resources if r.urn != r2.urn))
    assert r2.urn in {f.urn for f in diff_plans(plan, gone, GuardPolicy()).findings}


# ---------------------------------------------------------------------------------------------
# TTL rules: one declaration, the same rules on every provider


def ttl_from_gcs(r) -> set[tuple[str, int]]:
    return {(rule["condition"]["matchesPrefixes"][0], rule["condition"]["age"])
            for rule in r.inputs["lifecycleRules"] if rule["action"]["type"] == "Delete"}


def ttl_from_coreweave(r) -> set[tuple[str, int]]:
    return {(rule["filter"]["prefix"], rule["expiration"]["days"])
            for rule in r.inputs["rules"] if "expiration" in rule}


def ttl_from_r2(r) -> set[tuple[str, int]]:
    out = set()
    for rule in r.inputs["rules"]:
        if "deleteObjectsTransition" in rule:
            seconds = rule["deleteObjectsTransition"]["condition"]["maxAge"]
            assert seconds % 86400 == 0
            out.add((rule["conditions"]["prefix"], seconds // 86400))
    return out


def test_ttl_rules_are_identical_across_providers(plan, cfg):
    expected = {(r.prefix, r.days) for r in ttl_rules(cfg)}
    assert expected == {("tmp/ttl=7d/", 7), ("tmp/ttl=30d/", 30)}
    data = {n: r for n, r in by_name(plan, GCS).items() if n != cfg.gcs.log_bucket.name}
    per_bucket = {("gcs", n): ttl_from_gcs(r) for n, r in data.items()}
    per_bucket |= {("coreweave", n): ttl_from_coreweave(r)
                   for n, r in by_name(plan, CW_LIFECYCLE).items()}
    per_bucket |= {("r2", n): ttl_from_r2(r) for n, r in by_name(plan, R2_LIFECYCLE).items()}
    assert len(per_bucket) == 5   # every data bucket of every provider has its rules
    assert {k: v for k, v in per_bucket.items() if v != expected} == {}


def test_every_bucket_aborts_incomplete_multipart_uploads(plan, cfg):
    days = cfg.abort_incomplete_multipart_days
    for r in of_type(plan, GCS):
        assert {"action": {"type": "AbortIncompleteMultipartUpload"},
                "condition": {"age": days}} in r.inputs["lifecycleRules"], r.name
    for r in of_type(plan, CW_LIFECYCLE):
        assert {"id": "abort-incomplete-multipart", "status": "Enabled", "filter": {"prefix": ""},
                "abortIncompleteMultipartUpload": {"daysAfterInitiation": days}} in r.inputs["rules"]
    for r in of_type(plan, R2_LIFECYCLE):
        [rule] = [x for x in r.inputs["rules"] if "abortMultipartUploadsTransition" in x]
        assert rule["conditions"] == {"prefix": ""}
        assert rule["abortMultipartUploadsTransition"]["condition"] == {"type": "Age",
                                                                        "maxAge": days * 86400}


# ---------------------------------------------------------------------------------------------
# Protected prefixes: deletion denied in each provider's native form


def test_coreweave_policy_denies_deletion_in_protected_prefixes(plan):
    policies = by_name(plan, CW_POLICY)
    assert set(policies) == set(by_name(plan, CW))
    for name, r in policies.items():
        assert r.inputs["bucket"] == name
        doc = json.loads(r.inputs["policy"])
        denies = [s for s in doc["Statement"] if s["Effect"] == "Deny"
                  and "s3:DeleteObject" in s["Action"]]
        assert [s["Resource"] for s in denies] == [[f"arn:aws:s3:::{name}/checkpoints/hero/*"]]
        assert denies[0]["Principal"] == {"CW": ["*"]}


def test_r2_bucket_lock_holds_protected_prefixes_indefinitely(plan):
    [lock] = of_type(plan, R2_LOCK)
    assert lock.inputs["bucketName"] == "demo-lab-datasets"
    assert lock.inputs["rules"] == [{"id": "protect-checkpoints-hero", "enabled": True,
                                     "prefix": "checkpoints/hero/",
                                     "condition": {"type": "Indefinite"}}]


def test_gcs_writers_may_delete_only_outside_protected_prefixes(plan, cfg):
    members = of_type(plan, IAM_MEMBER)
    for b in cfg.gcs.buckets:
        prefixes = sorted({*cfg.protected_prefixes, *b.protected_prefixes})
        mine = [m for m in members if m.inputs["bucket"] == b.name]
        assert {m.inputs["member"] for m in mine} == set(b.object_writers)
        deleters = [m for m in mine if m.inputs["role"] in DELETE_CAPABLE]
        assert len(deleters) == len(b.object_writers)
        for m in deleters:
            expr = m.inputs["condition"]["expression"]
            for p in prefixes:
                assert f'!resource.name.startsWith("projects/_/buckets/{b.name}/objects/{p}")' in expr
        assert {m.inputs["role"] for m in mine if not m.inputs.get("condition")} == {
            "roles/storage.objectViewer", "roles/storage.objectCreator"}
    assert "releases/" in by_name(plan, IAM_MEMBER)[
        "demo-lab-checkpoints/objectUser/serviceAccount:trainer@demo-project.iam.gserviceaccount.com"
    ].inputs["condition"]["expression"]


# ---------------------------------------------------------------------------------------------
# GCS baseline, providers, secrets, determinism


def test_gcs_buckets_baseline(plan, cfg):
    log = cfg.gcs.log_bucket.name
    buckets = by_name(plan, GCS)
    for name, r in buckets.items():
        i = r.inputs
        assert i["uniformBucketLevelAccess"] is True and i["publicAccessPrevention"] == "enforced"
        assert i["project"] == "demo-project" and "softDeletePolicy" in i
        if name != log:
            assert i["logging"] == {"logBucket": log, "logObjectPrefix": name}
    assert buckets["demo-lab-checkpoints"].inputs["autoclass"] == {
        "enabled": True, "terminalStorageClass": "ARCHIVE"}
    assert buckets["demo-lab-checkpoints"].inputs["softDeletePolicy"] == {
        "retentionDurationSeconds": 30 * 86400}
    assert buckets["demo-lab-training-data"].inputs["storageClass"] == "STANDARD"
    assert "autoclass" not in buckets["demo-lab-training-data"].inputs
    assert buckets["demo-lab-training-data"].inputs["labels"] == {"team": "ml-infra", "data": "training"}
    writer = by_name(plan, IAM_MEMBER)[
        f"{log}/objectCreator/group:cloud-storage-analytics@google.com"]
    assert writer.inputs["bucket"] == log and writer.inputs["role"] == "roles/storage.objectCreator"
    # data buckets wait for the log writer grant, or GCS rejects the logging config
    assert all(writer.urn in r.dependencies for n, r in buckets.items() if n != log)


def test_explicit_providers_and_secret_tokens(plan):
    providers = {r.urn: r for r in plan.resources if r.is_provider}
    assert {r.type for r in providers.values()} == {
        "pulumi:providers:gcp", "pulumi:providers:coreweave", "pulumi:providers:cloudflare"}
    custom = [r for r in plan.resources if r.custom and not r.is_provider]
    assert [r.urn for r in custom if r.provider not in providers] == []
    by_type = {r.type: r for r in providers.values()}
    assert by_type["pulumi:providers:coreweave"].inputs == {"token": SECRET}
    assert by_type["pulumi:providers:cloudflare"].inputs == {"apiToken": SECRET}


def test_adopt_ids_follow_the_providers_import_forms(plan):
    assert by_name(plan, GCS)["demo-lab-checkpoints"].adopt_id == "demo-project/demo-lab-checkpoints"
    assert by_name(plan, CW)["demo-lab-cw-datasets"].adopt_id == "demo-lab-cw-datasets"
    assert by_name(plan, R2)["demo-lab-datasets"].adopt_id == (
        "0123456789abcdef0123456789abcdef/demo-lab-datasets/default")


def test_golden_plan(plan):
    from regen_golden import project_golden_path
    path = project_golden_path("buckets", "lab")
    assert dumps([plan]) == path.read_text(encoding="utf-8"), (
        f"the plan of buckets/lab differs from {path}; if intended, run "
        "`.venv/bin/python tests/regen_golden.py` and review `git diff tests/golden`")


def test_plan_is_deterministic(plan):
    assert dumps([plan_stack(PROJECT, "lab")]) == dumps([plan])
    assert plan.outputs["ttl_prefixes"] == {"ttl-7d": "tmp/ttl=7d/", "ttl-30d": "tmp/ttl=30d/"}


# ---------------------------------------------------------------------------------------------
# The components with other inputs


def _run(program) -> StackPlan:
    return run_program("components", "test", {}, program)


def test_components_without_ttl_or_protected_prefixes():
    # clusterstack.components.buckets imports the three provider SDKs (pulumi_cloudflare alone
    # ~3 CPU-s): imported here, not at collection, so only the worker running a buckets test pays.
    from clusterstack.components.buckets import (CoreweaveBucketSpec, CoreweaveBuckets,
                                                 CoreweaveBucketsArgs, GcsBucketSpec, GcsBuckets,
                                                 GcsBucketsArgs, GcsLogBucketSpec, R2BucketSpec,
                                                 R2Buckets, R2BucketsArgs)

    def program() -> None:
        import pulumi_cloudflare as cloudflare
        import pulumi_coreweave as coreweave
        import pulumi_gcp as gcp
        GcsBuckets("gcs", GcsBucketsArgs(
            project="p-123456", log_bucket=GcsLogBucketSpec("logs-b", "US", 30, 0),
            buckets=(GcsBucketSpec("data-b", "EU", None, "NEARLINE", 0, (), ("group:w@example.org",),
                                   ()),), ttl_rules=(), abort_multipart_days=3),
            provider=gcp.Provider("gcp", project="p-123456"))
        CoreweaveBuckets("cw", CoreweaveBucketsArgs(
            buckets=(CoreweaveBucketSpec("cw-free", "US-EAST-04A", (), ()),), ttl_rules=(),
            abort_multipart_days=3), provider=coreweave.Provider("cw"))
        R2Buckets("r2", R2BucketsArgs(
            account_id="0" * 32, buckets=(R2BucketSpec("r2-free", None, "eu", "Standard", ()),),
            ttl_rules=(), abort_multipart_days=3), provider=cloudflare.Provider("cf"))

    p = _run(program)
    assert of_type(p, R2_LOCK) == []       # nothing to lock
    [policy] = of_type(p, CW_POLICY)       # the bucket itself is still never deleted via S3
    assert [s["Sid"] for s in json.loads(policy.inputs["policy"])["Statement"]] == ["DenyBucketDeletion"]
    [lc] = of_type(p, CW_LIFECYCLE)
    assert [r["id"] for r in lc.inputs["rules"]] == ["abort-incomplete-multipart"]
    [r2lc] = of_type(p, R2_LIFECYCLE)
    assert [r["id"] for r in r2lc.inputs["rules"]] == ["abort-incomplete-multipart"]
    assert by_name(p, R2)["r2-free"].inputs["jurisdiction"] == "eu"
    assert "location" not in by_name(p, R2)["r2-free"].inputs
    user = by_name(p, IAM_MEMBER)["data-b/objectUser/group:w@example.org"]
    assert "condition" not in user.inputs   # no protected prefix: an unconditional grant
    data = by_name(p, GCS)["data-b"]
    assert data.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 0}
    assert [r for r in data.inputs["lifecycleRules"] if r["action"]["type"] == "Delete"] == []
    assert all(r.protect and r.retain_on_delete for r in p.resources if r.type in BUCKETS)


def test_the_stack_must_name_its_file(tmp_path):
    from clusterstack.errors import ClusterstackError
    (tmp_path / "clusterstack.toml").write_text('[projects.buckets]\ndir = "buckets"\nkind = "buckets"\n')
    project = tmp_path / "buckets"
    project.mkdir()
    for f in ("Pulumi.yaml", "__main__.py"):
        (project / f).write_text((PROJECT / f).read_text())
    (project / "Pulumi.empty.yaml").write_text("config: {}\n")
    with pytest.raises(ClusterstackError) as ei:
        plan_stack(project, "empty")
    assert "has no clusterstack-buckets:file config" in ei.value.render()


def test_pulumi_program_is_the_package_code():
    # buckets/__main__.py holds no logic: the reviewed file and the package define the stack
    text = (PROJECT / "__main__.py").read_text()
    assert "from clusterstack.programs import main" in text and "sys.path" not in text
