"""Shared data buckets, one component per provider: GCS, CoreWeave AI Object Storage, R2.

Every bucket is ``protect=True`` (the engine refuses its delete or replace) and
``retain_on_delete=True`` (removing it from the program never deletes the bucket or its data);
the guard forbids bucket delete/replace on top (:mod:`clusterstack.guard`). Each bucket gets
the lab's TTL rules (:func:`clusterstack.derive.buckets.ttl_rules`: delete objects under
``<temp_prefix>/ttl=<N>d/`` after N days), an abort-incomplete-multipart rule, and a native
form of "no object deletion under the protected prefixes":

- GCS has no prefix-scoped deny (IAM deny policies only condition on tags, retention policies
  are bucket-wide): the bucket's ``object_writers`` get read + create everywhere and the
  delete-capable ``roles/storage.objectUser`` under an IAM Conditions expression that excludes
  the protected prefixes (overwriting an object needs ``storage.objects.delete`` too, so they
  are write-once there). Plus soft delete and ``deletion_policy: PREVENT``.
- CoreWeave: an S3 bucket policy denying ``s3:DeleteObject``/``s3:DeleteObjectVersion`` on
  ``<bucket>/<prefix>*`` to every principal, and ``s3:DeleteBucket``.
- R2 (no bucket policies): bucket-lock rules with an ``Indefinite`` retention per prefix.

docs/buckets.md says what each form enforces and what it cannot.

The R2 resources and their provider are declared by type token, not through the
``pulumi_cloudflare`` SDK, as :mod:`clusterstack.components.dns` declares its records (its
docstring says why: the SDK's ``__init__`` imports all of its ~780 modules, whose bytecode the
first ``make demo`` compiled for this project alone). What the SDK's classes add is repeated
here, read from ``pulumi_cloudflare`` 6.23.1 (``r2_bucket.py``, ``r2_bucket_lifecycle.py``,
``r2_bucket_lock.py`` ``_internal_init``; ``provider.py``): the type tokens, the camelCase
input names (nested ones too: ``deleteObjectsTransition``, ``maxAge``), the bucket's
``creationDate`` output, the installed SDK's version, and the provider's secret token with its
``additional_secret_outputs``; none of the three has an alias. The golden plan of the buckets
stack (tests/golden/buckets-lab.json) is unchanged byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_coreweave as coreweave

from clusterstack.components.bytoken import Declared
from clusterstack.derive.buckets import (SECONDS_PER_DAY, TtlRule, coreweave_policy,
                                         gcs_delete_condition, lock_rule_id, policy_json)
from clusterstack.components.dns import CLOUDFLARE
from clusterstack.components.gcp import kinds as gcp
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import (
    COREWEAVE_BUCKETS_COMPONENT,
    GCS_BUCKETS_COMPONENT,
    R2_BUCKET,
    R2_BUCKET_LIFECYCLE,
    R2_BUCKET_LOCK,
    R2_BUCKETS_COMPONENT,
)

ABORT_MULTIPART_RULE_ID = "abort-incomplete-multipart"
#: The group that writes GCS usage logs into the log bucket (Cloud Storage "Usage logs & storage
#: logs": grant it roles/storage.objectCreator on the log bucket).
GCS_LOG_WRITER = "group:cloud-storage-analytics@google.com"
#: Roles of a GCS object writer: read and create everywhere, delete/overwrite outside the
#: protected prefixes (Cloud Storage "IAM roles": objectUser = objectViewer + create, delete,
#: update; objectCreator has no delete).
GCS_READ_ROLE = "roles/storage.objectViewer"
GCS_CREATE_ROLE = "roles/storage.objectCreator"
GCS_DELETE_ROLE = "roles/storage.objectUser"


def _bucket_opts(parent: pulumi.Resource, provider: pulumi.ProviderResource,
                 **kw) -> pulumi.ResourceOptions:
    """Options of every bucket: explicit provider, protected, retained on delete."""
    return pulumi.ResourceOptions(parent=parent, provider=provider, protect=True,
                                  retain_on_delete=True, **kw)


# ---------------------------------------------------------------------------------------------
# GCS


@dataclass(frozen=True)
class GcsBucketSpec:
    name: str                              # gcs.buckets[].name
    location: str                          # gcs.buckets[].location
    storage_class: str | None              # gcs.buckets[].storage_class (None with autoclass)
    autoclass_terminal: str | None         # gcs.buckets[].autoclass.terminal_storage_class
    soft_delete_days: int                  # gcs.buckets[].soft_delete_days (0 = off)
    protected_prefixes: tuple[str, ...]    # derive.protected_prefixes: lab-wide + the bucket's own
    object_writers: tuple[str, ...]        # gcs.buckets[].object_writers
    labels: tuple[tuple[str, str], ...]    # labels (lab-wide) overlaid by gcs.buckets[].labels, sorted


@dataclass(frozen=True)
class GcsLogBucketSpec:
    name: str                  # gcs.log_bucket.name
    location: str              # gcs.log_bucket.location
    retention_days: int        # gcs.log_bucket.retention_days (logs deleted after this age)
    soft_delete_days: int      # gcs.log_bucket.soft_delete_days


@dataclass(frozen=True)
class GcsBucketsArgs:
    project: str                           # gcs.project
    log_bucket: GcsLogBucketSpec           # gcs.log_bucket
    buckets: tuple[GcsBucketSpec, ...]     # gcs.buckets, in file order
    ttl_rules: tuple[TtlRule, ...]         # derive.ttl_rules(ttl_days, temp_prefix)
    abort_multipart_days: int              # abort_incomplete_multipart_days


def gcs_lifecycle(ttl_rules: tuple[TtlRule, ...], abort_days: int) -> list[dict]:
    """GCS lifecycle rules: one ``Delete`` at ``age`` N per TTL rule, matched on its prefix, and
    ``AbortIncompleteMultipartUpload`` at ``abort_days`` (Cloud Storage "Object Lifecycle
    Management": conditions ``age`` and ``matchesPrefix``)."""
    rules = [{"action": {"type": "Delete"},
              "condition": {"age": r.days, "matchesPrefixes": [r.prefix]}} for r in ttl_rules]
    rules.append({"action": {"type": "AbortIncompleteMultipartUpload"},
                  "condition": {"age": abort_days}})
    return rules


def _member_name(bucket: str, role: str, member: str) -> str:
    """Logical name of a bucket IAM member: ``<bucket>/<role without roles/storage.>/<member>``."""
    return f"{bucket}/{role.removeprefix('roles/storage.')}/{member}"


def _soft_delete(days: int) -> dict:
    return {"retentionDurationSeconds": days * SECONDS_PER_DAY}


class GcsBuckets(pulumi.ComponentResource):
    """The GCS log bucket and the data buckets (uniform access, public access prevention
    enforced, soft delete, usage logs to the log bucket, lifecycle) with their writers' IAM."""

    buckets: dict[str, Declared]

    def __init__(self, name: str, args: GcsBucketsArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GCS_BUCKETS_COMPONENT, name, None, opts)
        lb = args.log_bucket
        log = gcp.GCS_BUCKET(
            lb.name,
            {"name": lb.name, "project": args.project, "location": lb.location,
             "storageClass": "STANDARD", "uniformBucketLevelAccess": True,
             "publicAccessPrevention": "enforced", "softDeletePolicy": _soft_delete(lb.soft_delete_days),
             "lifecycleRules": [  # usage logs are deleted after retention_days
                 {"action": {"type": "Delete"}, "condition": {"age": lb.retention_days}},
                 {"action": {"type": "AbortIncompleteMultipartUpload"},
                  "condition": {"age": args.abort_multipart_days}}],
             "forceDestroy": False, "deletionPolicy": "PREVENT"},
            _bucket_opts(self, provider))
        ids.importable(log, f"{args.project}/{lb.name}")
        log_writer = gcp.GCS_BUCKET_IAM_MEMBER(
            _member_name(lb.name, GCS_CREATE_ROLE, GCS_LOG_WRITER),
            {"bucket": log.output("name"), "role": GCS_CREATE_ROLE, "member": GCS_LOG_WRITER},
            pulumi.ResourceOptions(parent=self, provider=provider))

        self.buckets = {}
        for b in args.buckets:
            extra: dict = ({"storageClass": b.storage_class} if b.storage_class else
                           {"storageClass": "STANDARD",
                            "autoclass": {"enabled": True,
                                          "terminalStorageClass": b.autoclass_terminal}})
            bucket = gcp.GCS_BUCKET(
                b.name,
                {"name": b.name, "project": args.project, "location": b.location,
                 "uniformBucketLevelAccess": True, "publicAccessPrevention": "enforced",
                 "softDeletePolicy": _soft_delete(b.soft_delete_days),
                 "logging": {"logBucket": log.output("name"), "logObjectPrefix": b.name},
                 "lifecycleRules": gcs_lifecycle(args.ttl_rules, args.abort_multipart_days),
                 "labels": dict(b.labels) or None, "forceDestroy": False, "deletionPolicy": "PREVENT",
                 **extra},
                _bucket_opts(self, provider, depends_on=[log_writer]))
            ids.importable(bucket, f"{args.project}/{b.name}")
            self.buckets[b.name] = bucket
            for member in b.object_writers:
                for role in (GCS_READ_ROLE, GCS_CREATE_ROLE):
                    gcp.GCS_BUCKET_IAM_MEMBER(
                        _member_name(b.name, role, member),
                        {"bucket": bucket.output("name"), "role": role, "member": member},
                        pulumi.ResourceOptions(parent=self, provider=provider))
                condition = None
                if b.protected_prefixes:
                    condition = {
                        "title": "outside-protected-prefixes",
                        "description": "delete/overwrite only outside: "
                                       + ", ".join(b.protected_prefixes),
                        "expression": gcs_delete_condition(b.name, b.protected_prefixes)}
                gcp.GCS_BUCKET_IAM_MEMBER(
                    _member_name(b.name, GCS_DELETE_ROLE, member),
                    {"bucket": bucket.output("name"), "role": GCS_DELETE_ROLE, "member": member,
                     "condition": condition},
                    pulumi.ResourceOptions(parent=self, provider=provider))
        self.register_outputs({"log_bucket": log.output("name"),
                               "buckets": {n: r.output("url") for n, r in self.buckets.items()}})


# ---------------------------------------------------------------------------------------------
# CoreWeave AI Object Storage


@dataclass(frozen=True)
class CoreweaveBucketSpec:
    name: str                              # coreweave.buckets[].name
    zone: str                              # coreweave.buckets[].zone
    protected_prefixes: tuple[str, ...]    # derive.protected_prefixes: lab-wide + the bucket's own
    tags: tuple[tuple[str, str], ...]      # labels (lab-wide) overlaid by coreweave.buckets[].tags, sorted


@dataclass(frozen=True)
class CoreweaveBucketsArgs:
    buckets: tuple[CoreweaveBucketSpec, ...]   # coreweave.buckets, in file order
    ttl_rules: tuple[TtlRule, ...]             # derive.ttl_rules(ttl_days, temp_prefix)
    abort_multipart_days: int                  # abort_incomplete_multipart_days


def coreweave_lifecycle(ttl_rules: tuple[TtlRule, ...], abort_days: int) -> list[Any]:
    """S3 lifecycle rules (CoreWeave "Bucket lifecycles"): ``Expiration.Days`` N per TTL rule on a
    ``Filter.Prefix``, and ``AbortIncompleteMultipartUpload.DaysAfterInitiation`` on every key."""
    rules = [{"id": r.rule_id, "status": "Enabled", "filter": {"prefix": r.prefix},
              "expiration": {"days": r.days}} for r in ttl_rules]
    rules.append({"id": ABORT_MULTIPART_RULE_ID, "status": "Enabled", "filter": {"prefix": ""},
                  "abort_incomplete_multipart_upload": {"days_after_initiation": abort_days}})
    return rules


class CoreweaveBuckets(pulumi.ComponentResource):
    """Per bucket: the ObjectStorageBucket, its lifecycle configuration and its bucket policy."""

    buckets: dict[str, coreweave.ObjectStorageBucket]

    def __init__(self, name: str, args: CoreweaveBucketsArgs, *, provider: coreweave.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(COREWEAVE_BUCKETS_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.buckets = {}
        for b in args.buckets:
            bucket = coreweave.ObjectStorageBucket(
                b.name, name=b.name, zone=b.zone, tags=dict(b.tags) or None,
                opts=_bucket_opts(self, provider))
            ids.importable(bucket, b.name)   # pulumi-coreweave "Import": {{name}}
            self.buckets[b.name] = bucket
            lifecycle = coreweave.ObjectStorageBucketLifecycleConfiguration(
                b.name, bucket=bucket.name,
                rules=coreweave_lifecycle(args.ttl_rules, args.abort_multipart_days), opts=child)
            ids.importable(lifecycle, b.name)   # {{bucket_name}}
            policy = coreweave.ObjectStorageBucketPolicy(
                b.name, bucket=bucket.name,
                policy=policy_json(coreweave_policy(b.name, b.protected_prefixes)), opts=child)
            ids.importable(policy, b.name)      # {{bucket_name}}
        self.register_outputs({"buckets": {n: r.name for n, r in self.buckets.items()}})


# ---------------------------------------------------------------------------------------------
# Cloudflare R2


@dataclass(frozen=True)
class R2BucketSpec:
    name: str                              # r2.buckets[].name
    location: str | None                   # r2.buckets[].location (a hint; None: Cloudflare picks)
    jurisdiction: str                      # r2.buckets[].jurisdiction
    storage_class: str                     # r2.buckets[].storage_class
    protected_prefixes: tuple[str, ...]    # derive.protected_prefixes: lab-wide + the bucket's own


@dataclass(frozen=True)
class R2BucketsArgs:
    account_id: str                        # r2.account_id
    buckets: tuple[R2BucketSpec, ...]      # r2.buckets, in file order
    ttl_rules: tuple[TtlRule, ...]         # derive.ttl_rules(ttl_days, temp_prefix)
    abort_multipart_days: int              # abort_incomplete_multipart_days


def r2_lifecycle(ttl_rules: tuple[TtlRule, ...], abort_days: int) -> list[dict]:
    """R2 lifecycle rules (Cloudflare R2 "Object lifecycles"; ages in seconds): a
    ``deleteObjectsTransition`` of type ``Age`` per TTL rule on its prefix, and an
    ``abortMultipartUploadsTransition`` on every key. Managing the rules replaces R2's default
    7-day multipart rule, hence the explicit one."""
    rules = [{"id": r.rule_id, "enabled": True, "conditions": {"prefix": r.prefix},
              "deleteObjectsTransition": {"condition": {"type": "Age", "maxAge": r.seconds}}}
             for r in ttl_rules]
    rules.append({"id": ABORT_MULTIPART_RULE_ID, "enabled": True, "conditions": {"prefix": ""},
                  "abortMultipartUploadsTransition": {
                      "condition": {"type": "Age", "maxAge": abort_days * SECONDS_PER_DAY}}})
    return rules


def r2_provider(name: str, api_token: pulumi.Input[str] | None) -> pulumi.ProviderResource:
    """The Cloudflare provider of the R2 buckets (``pulumi:providers:cloudflare``), the token a
    secret input (None: the provider reads ``CLOUDFLARE_API_TOKEN``), as
    ``pulumi_cloudflare.Provider(name, api_token=…)`` declares it."""
    return CLOUDFLARE.provider(
        name, {"apiToken": None if api_token is None else pulumi.Output.secret(api_token)})


class R2Buckets(pulumi.ComponentResource):
    """Per bucket: the R2Bucket, its lifecycle and, with protected prefixes, its bucket lock."""

    buckets: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, args: R2BucketsArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(R2_BUCKETS_COMPONENT, name, None, opts)
        version = CLOUDFLARE.version()
        child = pulumi.ResourceOptions(parent=self, provider=provider, version=version)
        self.buckets = {}
        for b in args.buckets:
            bucket = pulumi.CustomResource(
                R2_BUCKET, b.name,
                {"accountId": args.account_id, "jurisdiction": b.jurisdiction, "location": b.location,
                 "name": b.name, "storageClass": b.storage_class, "creationDate": None},
                _bucket_opts(self, provider, version=version))
            # pulumi-cloudflare R2Bucket "Import": <account_id>/<bucket_name>/<jurisdiction>
            ids.importable(bucket, f"{args.account_id}/{b.name}/{b.jurisdiction}")
            self.buckets[b.name] = bucket
            bucket_name = bucket.name  # type: ignore[attr-defined]  # the output "name" (props)
            pulumi.CustomResource(
                R2_BUCKET_LIFECYCLE, b.name,
                {"accountId": args.account_id, "bucketName": bucket_name, "jurisdiction": b.jurisdiction,
                 "rules": r2_lifecycle(args.ttl_rules, args.abort_multipart_days)}, child)
            if b.protected_prefixes:
                pulumi.CustomResource(
                    R2_BUCKET_LOCK, b.name,
                    {"accountId": args.account_id, "bucketName": bucket_name, "jurisdiction": b.jurisdiction,
                     "rules": [{"id": lock_rule_id(p), "enabled": True, "prefix": p,
                                "condition": {"type": "Indefinite"}} for p in b.protected_prefixes]},
                    child)
        self.register_outputs({"buckets": {n: r.name for n, r in self.buckets.items()}})  # type: ignore[attr-defined]
