"""Pure rules of the bucket project: one place each, used by the components and the tests.

- TTL prefixes: ``ttl_days: [7, 30]`` → ``<temp_prefix>/ttl=7d/`` and ``<temp_prefix>/ttl=30d/``,
  each with a delete-after-N-days rule on every bucket of every provider.
- Protected prefixes: the lab-wide list plus a bucket's own, sorted, de-duplicated.
- The deny forms of the protected prefixes that each provider can express natively:
  an S3 bucket-policy document (CoreWeave), an IAM Conditions expression (GCS), bucket-lock
  rules (R2) — see docs/buckets.md for what each enforces and what it cannot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from clusterstack.config.buckets import BucketsConfig

SECONDS_PER_DAY = 86400

#: S3 actions that remove object data (S3 API "Actions, resources, and condition keys":
#: DeleteObject, DeleteObjectVersion). Overwriting is a PutObject, which writers need for new
#: checkpoints, so it is not denied (docs/buckets.md).
S3_DELETE_ACTIONS = ("s3:DeleteObject", "s3:DeleteObjectVersion")


@dataclass(frozen=True, order=True)
class TtlRule:
    """Objects under ``prefix`` are deleted ``days`` days after creation."""

    days: int
    prefix: str

    @property
    def rule_id(self) -> str:
        """The lifecycle rule ID used on every provider: ``ttl-<N>d``."""
        return f"ttl-{self.days}d"

    @property
    def seconds(self) -> int:
        return self.days * SECONDS_PER_DAY


def ttl_prefix(temp_prefix: str, days: int) -> str:
    """``<temp_prefix>/ttl=<N>d/`` — the one spelling of a TTL prefix."""
    return f"{temp_prefix}/ttl={days}d/"


def ttl_rules(cfg: BucketsConfig) -> tuple[TtlRule, ...]:
    """Every TTL rule of the lab, shortest first."""
    return tuple(sorted(TtlRule(d, ttl_prefix(cfg.temp_prefix, d)) for d in cfg.ttl_days))


def temp_root(cfg: BucketsConfig) -> str:
    """The prefix every TTL prefix lies under: ``<temp_prefix>/``."""
    return f"{cfg.temp_prefix}/"


def protected_prefixes(cfg: BucketsConfig, own: Iterable[str]) -> tuple[str, ...]:
    """The lab-wide protected prefixes plus a bucket's ``own``, sorted and de-duplicated."""
    return tuple(sorted(set(cfg.protected_prefixes) | set(own)))


def overlaps(a: str, b: str) -> bool:
    """True when one prefix lies under the other (a lifecycle rule on one reaches the other)."""
    return a.startswith(b) or b.startswith(a)


def gcs_object_name(bucket: str, prefix: str) -> str:
    """The IAM resource name of objects under ``prefix``: ``projects/_/buckets/<b>/objects/<p>``
    (Cloud Storage "IAM Conditions — resource.name for objects")."""
    return f"projects/_/buckets/{bucket}/objects/{prefix}"


def gcs_delete_condition(bucket: str, prefixes: Iterable[str]) -> str:
    """The CEL expression granting delete/overwrite only outside ``prefixes``:
    ``!resource.name.startsWith("projects/_/buckets/B/objects/P1") && !…``.

    Bucket-level checks (list) have resource name ``projects/_/buckets/B``, which satisfies it.
    Raises ValueError for an empty ``prefixes`` (an unconditional grant needs no expression).
    """
    prefixes = sorted(prefixes)
    if not prefixes:
        raise ValueError("no protected prefixes: grant without a condition")
    return " && ".join(f'!resource.name.startsWith({json.dumps(gcs_object_name(bucket, p))})'
                       for p in prefixes)


def coreweave_policy(bucket: str, prefixes: Iterable[str]) -> dict[str, Any]:
    """The S3 bucket-policy document of a CoreWeave bucket.

    Always: deny ``s3:DeleteBucket`` to everyone (the bucket itself is never deleted through
    the S3 API while the policy stands). Per protected prefix: deny :data:`S3_DELETE_ACTIONS`
    on ``arn:aws:s3:::<bucket>/<prefix>*`` to every principal (``{"CW": ["*"]}``, CoreWeave's
    principal form — "Manage bucket policies"). An explicit Deny wins over any Allow of the
    organization access policies (evaluated first, CoreWeave "Bucket policies").
    """
    statements: list[dict[str, Any]] = [{
        "Sid": "DenyBucketDeletion", "Effect": "Deny", "Principal": {"CW": ["*"]},
        "Action": ["s3:DeleteBucket"], "Resource": [f"arn:aws:s3:::{bucket}"]}]
    prefixes = sorted(prefixes)
    if prefixes:
        statements.append({
            "Sid": "DenyDeleteInProtectedPrefixes", "Effect": "Deny", "Principal": {"CW": ["*"]},
            "Action": list(S3_DELETE_ACTIONS),
            "Resource": [f"arn:aws:s3:::{bucket}/{p}*" for p in prefixes]})
    return {"Version": "2012-10-17", "Statement": statements}


def policy_json(document: dict[str, Any]) -> str:
    """Canonical JSON of a policy document (sorted keys, compact): byte-stable in plans."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def lock_rule_id(prefix: str) -> str:
    """The R2 bucket-lock rule ID of a protected prefix: ``protect-<prefix with / → ->``,
    e.g. ``checkpoints/hero/`` → ``protect-checkpoints-hero``."""
    return "protect-" + prefix.rstrip("/").replace("/", "-").replace("=", "-")
