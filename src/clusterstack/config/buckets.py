"""Typed model of ``buckets/buckets.yaml``: the lab's shared data buckets on every provider.

The whole file is read only by the IaC, so every section is strict (unknown keys rejected).
Lab-wide rules are declared once at the top and applied to every bucket of every provider:

- ``ttl_days: [7, 30]`` → for each N a prefix ``<temp_prefix>/ttl=<N>d/`` whose objects the
  provider deletes N days after creation (:func:`clusterstack.derive.buckets.ttl_rules`);
- ``protected_prefixes`` (plus a bucket's own) → object deletion there is denied, in each
  provider's native form (docs/buckets.md says what each can enforce);
- ``abort_incomplete_multipart_days`` → unfinished multipart uploads are aborted.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field


from clusterstack.config.document import Strict  # unknown keys rejected
from clusterstack.config.types import CoreweaveZone, GcpProjectId, Int, unique_items
from clusterstack.config.secretspec import SecretSpecField


def _soft_delete_days(days: int) -> int:
    # Rule: GCS accepts a soft-delete retention of 0 (off) or 7–90 days
    # (Cloud Storage "Soft delete": retentionDurationSeconds 0 or 604800–7776000).
    if days != 0 and not 7 <= days <= 90:
        raise ValueError(f"{days} is not 0 (off) or between 7 and 90 days (GCS soft delete)")
    return days


def _gcs_name(name: str) -> str:
    # Rule: GCS bucket names cannot begin with "goog" nor contain "google" (Cloud Storage
    # "Bucket names"; the pattern below covers length and characters).
    if name.startswith("goog") or "google" in name:
        raise ValueError(f"{name!r}: GCS bucket names cannot begin with 'goog' or contain 'google'")
    return name


def _coreweave_name(name: str) -> str:
    # Rule: CoreWeave reserves bucket names beginning with cw- or vip- (pulumi-coreweave
    # ObjectStorageBucket, CoreWeave "Create buckets").
    if name.startswith(("cw-", "vip-")):
        raise ValueError(f"{name!r}: CoreWeave reserves bucket names beginning with cw- or vip-")
    return name


#: An object key prefix: relative (no leading '/'), ends with '/', no empty segment.
ObjectPrefix = Annotated[str, Field(pattern=r"\A[A-Za-z0-9][A-Za-z0-9._=-]*(/[A-Za-z0-9][A-Za-z0-9._=-]*)*/\Z",
                                    max_length=512)]
#: Lowercase label/tag key and value (GCS labels: lowercase letters, digits, '_' and '-').
LabelKey = Annotated[str, Field(pattern=r"\A[a-z][a-z0-9_-]{0,62}\Z")]
LabelValue = Annotated[str, Field(pattern=r"\A[a-z0-9_-]{0,63}\Z")]
Prefixes = Annotated[tuple[ObjectPrefix, ...], AfterValidator(unique_items)]
def _not_personal(member: str) -> str:
    """Reject a plaintext ``user:`` member: a person's email would become part of resource
    names and URNs (permanently in state) and of every plan. People are only ever stored
    encrypted, as ``human-NNN`` in the IAM file (docs/iam.md); grant a person access there."""
    if member.startswith("user:"):
        raise ValueError("a plaintext user: member (a personal email) is not allowed here; use a "
                         "group:, serviceAccount: or domain: member, or grant the person in the "
                         "IAM file (`clusterstack iam grant EMAIL --role ROLE --on bucket:NAME`)")
    return member


#: An IAM principal as GCS IAM takes it (Cloud IAM "Principal identifiers"), never a person:
#: ``user:`` is rejected by :func:`_not_personal`.
Principal = Annotated[str, Field(pattern=r"\A((user|group|serviceAccount|domain):[^\s:]+"
                                         r"|principal(Set)?://\S+)\Z"), AfterValidator(_not_personal)]
GcsName = Annotated[str, Field(pattern=r"\A[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]\Z"),
                    AfterValidator(_gcs_name)]
# CoreWeave AI Object Storage: S3 naming, and names beginning with cw- or vip- are reserved
# (pulumi-coreweave ObjectStorageBucket).
CoreweaveName = Annotated[str, Field(pattern=r"\A[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\Z"),
                          AfterValidator(_coreweave_name)]
# Cloudflare R2: 3–63 lowercase letters, digits and hyphens, alphanumeric at both ends.
R2Name = Annotated[str, Field(pattern=r"\A[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\Z")]


class GcsAutoclass(Strict):
    # Autoclass moves objects between classes by access; the terminal class is the coldest it
    # may use (Cloud Storage "Autoclass": NEARLINE or ARCHIVE).
    terminal_storage_class: Literal["NEARLINE", "ARCHIVE"] = "NEARLINE"


class GcsLogBucket(Strict):
    """The bucket that receives every data bucket's usage logs (Cloud Storage "Usage logs")."""

    name: GcsName
    location: str = Field(pattern=r"\A[A-Z]+(-[A-Z0-9]+)*\Z")
    retention_days: Int = Field(default=365, ge=1, le=3650)   # logs deleted after this age
    soft_delete_days: Annotated[int, AfterValidator(_soft_delete_days)] = 7


class GcsBucket(Strict):
    name: GcsName
    location: str = Field(pattern=r"\A[A-Z]+(-[A-Z0-9]+)*\Z")    # US, US-CENTRAL1, EUROPE-WEST4 …
    storage_class: Literal["STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE"] | None = None
    autoclass: GcsAutoclass | None = None                     # exactly one of the two
    soft_delete_days: Annotated[int, AfterValidator(_soft_delete_days)] = 7
    protected_prefixes: Prefixes = ()                          # in addition to the lab-wide ones
    # Principals who write the bucket's objects: read + create everywhere, delete/overwrite only
    # outside the protected prefixes (how GCS expresses the deny; docs/buckets.md).
    object_writers: Annotated[tuple[Principal, ...], AfterValidator(unique_items)] = ()
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)


class GcsSection(Strict):
    project: GcpProjectId
    log_bucket: GcsLogBucket
    buckets: list[GcsBucket] = Field(min_length=1)  # a list: a bad item is reported once


class CoreweaveBucket(Strict):
    name: CoreweaveName
    zone: CoreweaveZone                                               # e.g. US-EAST-04A
    protected_prefixes: Prefixes = ()
    tags: dict[LabelKey, LabelValue] = Field(default_factory=dict)


class CoreweaveSection(Strict):
    # The CoreWeave API token (CW-SECRET-…) as a secret spec, resolved only on a real deployment;
    # absent: the provider plugin reads COREWEAVE_API_TOKEN from the operator's environment.
    api_token: SecretSpecField | None = None
    buckets: list[CoreweaveBucket] = Field(min_length=1)  # a list: a bad item is reported once


class R2Bucket(Strict):
    name: R2Name
    # Location hint (Cloudflare R2 "Data location"); jurisdiction pins data to a region.
    location: Literal["apac", "eeur", "enam", "weur", "wnam", "oc"] | None = None
    jurisdiction: Literal["default", "eu", "fedramp"] = "default"
    storage_class: Literal["Standard", "InfrequentAccess"] = "Standard"
    protected_prefixes: Prefixes = ()


class R2Section(Strict):
    account_id: str = Field(pattern=r"\A[0-9a-f]{32}\Z")
    # A Cloudflare API token with R2 edit rights, as a secret spec (resolved only on a real
    # deployment); absent: the provider plugin reads CLOUDFLARE_API_TOKEN.
    api_token: SecretSpecField | None = None
    buckets: list[R2Bucket] = Field(min_length=1)  # a list: a bad item is reported once


class BucketsConfig(Strict):
    """The whole ``buckets.yaml``."""

    # Where expiring data lives: TTL prefixes are <temp_prefix>/ttl=<N>d/.
    temp_prefix: str = Field(default="tmp", pattern=r"\A[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*\Z",
                             max_length=200)
    ttl_days: Annotated[tuple[Annotated[int, Field(ge=1, le=3650)], ...],
                        AfterValidator(unique_items)] = ()
    abort_incomplete_multipart_days: Int = Field(default=7, ge=1, le=365)
    protected_prefixes: Prefixes = ()                          # every bucket of every provider
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)  # GCS labels, CoreWeave tags
    gcs: GcsSection | None = None
    coreweave: CoreweaveSection | None = None
    r2: R2Section | None = None
