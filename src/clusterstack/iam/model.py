"""The typed model of the IAM file (``iam/iam.yaml``, ``schema_version: 1``).

Shape (every mapping strict — an unknown field is an error)::

    schema_version: 1
    project: demo-project                  # the GCP project every grant is on / in
    encryption:
      scheme: tink-daead-aes256-siv        # Tink deterministic AEAD, AES256-SIV
      keyset: .iam/keyset.json             # local: cleartext keyset, git-ignored, 0600
      kms_key: gcp-kms://projects/…/cryptoKeys/…   # optional; then `keyset` is the keyset
                                           # encrypted with this key (safe to commit)
    principals: {human-001: <base64 ciphertext of the bare email>, …}
    custom_roles: [{role_id, title, description, permissions: [...], stage?}]
    owned_service_accounts: [{account_id, display_name, description?, key_secret?}]
    project_grants: [GRANT, …]             # grants on the project itself
    buckets: [{name, grants: [GRANT, …]}]
    secrets: [{name, grants}]              # Secret Manager secret ids in `project`
    artifact_repositories: [{location, name, grants}]
    service_accounts: [{email, grants}]    # grants *on* a service account (e.g. actAs)
    kms_keys: [{key, grants}]              # projects/P/locations/L/keyRings/R/cryptoKeys/K
    iap_backend_services: [{name, grants}] # IAP-protected backends of the load balancer (<cluster>-be)
    kms_key_rings: [{key_ring, grants}]    # projects/P/locations/L/keyRings/R
    cloud_run_services: [{location, name, grants}]      # grants on a Cloud Run service (run.invoker, …)
    cloud_run_jobs: [{location, name, grants}]          # grants on a Cloud Run job
    iap_cloud_run_services: [{location, name, grants}]  # IAP accessors of a Cloud Run service

    GRANT = {role, authoritative?: bool, members: [human-NNN | serviceAccount:… | group:… | …],
             condition?: {title, expression, description?}}

Grants are *additive* by default: each member is one non-authoritative ``*IAMMember`` resource,
and members the file does not list keep their access (an adopted project loses nobody).
``authoritative: true`` on a grant makes its role *role-authoritative on that target*: one
``*IAMBinding`` whose members are exactly the file's, so the next ``up`` removes every other
member of that role there. Every grant of one role on one target must agree on the flag
(the provider: an IAMBinding and IAMMembers of the same role fight over the policy). Run
``clusterstack iam scan`` before opting a role in: it lists the live members the file lacks.

Rules a field's type cannot express (dangling ids, duplicates, conflicting conditions) are
checked by :mod:`clusterstack.iam.loader`, which knows each value's line.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Iterator, Literal

from pydantic import AfterValidator, Field, StringConstraints

from clusterstack.config.document import Strict
from clusterstack.config.types import GCP_PROJECT_ID, GcpRegion, GcpResourceName, RepoPath
from clusterstack.iam.targets import (EMAIL_RE, HUMAN_RE, KEY_RING_RE, KMS_KEY_RE, LOCATED_KINDS, ConditionSpec,
                                      MemberError, Target, classify_member)

SCHEMA_VERSION = 1
SCHEME = "tink-daead-aes256-siv"
TINK_PREFIX = 0x01  # Tink "TINK" output prefix: 0x01 + 4-byte key id (Tink wire format docs)
_MIN_CIPHERTEXT = 5 + 16 + 32  # prefix + SIV tag + one padding block (crypto.PAD_TO)

PROJECT_RE = GCP_PROJECT_ID
ROLE_RE = (r"\A(roles/[A-Za-z0-9_.]+|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/roles/[A-Za-z0-9_.]{3,64}"
           r"|organizations/[0-9]+/roles/[A-Za-z0-9_.]{3,64})\Z")
KMS_URI_RE = (r"\Agcp-kms://projects/[^/]+/locations/[a-zA-Z0-9_-]{1,63}/keyRings/[a-zA-Z0-9_-]{1,63}"
              r"/cryptoKeys/[a-zA-Z0-9_-]{1,63}\Z")


def _member(value: str) -> str:
    try:
        classify_member(value)
    except MemberError as exc:
        raise ValueError(str(exc)) from None
    return value


def _ciphertext(value: str) -> str:
    if EMAIL_RE.match(value.strip()):
        raise ValueError("a plaintext email is not allowed here; principals hold ciphertext — "
                         "register people with `clusterstack iam grant EMAIL …`")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    if len(raw) < _MIN_CIPHERTEXT or raw[0] != TINK_PREFIX:
        raise ValueError("not a Tink deterministic-AEAD ciphertext")
    return value


def _human_id(value: str) -> str:
    if not HUMAN_RE.match(value):
        raise ValueError("principal ids are human-NNN (at least three digits)")
    return value


def _kms_key(value: str) -> str:
    if not KMS_KEY_RE.match(value):
        raise ValueError("must be projects/P/locations/L/keyRings/R/cryptoKeys/K")
    return value


def _key_ring(value: str) -> str:
    if not KEY_RING_RE.match(value):
        raise ValueError("must be projects/P/locations/L/keyRings/R")
    return value


def _sa_email(value: str) -> str:
    if not EMAIL_RE.match(value) or not value.endswith(".gserviceaccount.com"):
        raise ValueError("must be a service account email (…@….gserviceaccount.com)")
    return value


Member = Annotated[str, AfterValidator(_member)]
Ciphertext = Annotated[str, AfterValidator(_ciphertext)]
HumanId = Annotated[str, AfterValidator(_human_id)]
Role = Annotated[str, StringConstraints(pattern=ROLE_RE)]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class Encryption(Strict):
    """Where the keyset lives. ``keyset`` is relative to the workspace root."""

    scheme: Literal["tink-daead-aes256-siv"]
    # Rule: a path inside the workspace root (no '..', not absolute) — docs/iam.md "Keys".
    keyset: RepoPath
    kms_key: Annotated[str, StringConstraints(pattern=KMS_URI_RE)] | None = None


class Condition(Strict):
    """An IAM condition; ``title`` identifies the binding (GCP "IAM Conditions overview")."""

    title: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    expression: NonEmpty
    description: str | None = None

    def spec(self) -> ConditionSpec:
        return ConditionSpec(self.title, self.expression, self.description)


class Grant(Strict):
    """``role`` for ``members`` (at least one), optionally under ``condition``.

    ``authoritative`` (default false: additive, one ``*IAMMember`` per member): true makes
    the file the only source of this role's members on this target (one ``*IAMBinding``;
    members added elsewhere are removed by the next ``up``). pulumi-gcp ``projects.IAMMember``
    / ``IAMBinding`` docs: "Non-authoritative … other members for the role are preserved" /
    "Authoritative for a given role".

    ``public`` (default false): the grant's public members (``allUsers``,
    ``allAuthenticatedUsers``: anyone on the internet / with a Google account) were granted
    knowingly — ``iam grant --allow-public`` writes it; ``iam check`` flags a public member of
    a grant without it (added by hand, never confirmed)."""

    role: Role
    authoritative: bool = False
    public: bool = False
    members: list[Member] = Field(min_length=1)
    condition: Condition | None = None


class CustomRole(Strict):
    """A project custom role (``gcp.projects.IAMCustomRole``; role id rules from the IAM
    "Creating and managing custom roles" guide)."""

    role_id: Annotated[str, StringConstraints(pattern=r"\A[A-Za-z0-9_.]{3,64}\Z")]
    title: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    description: Annotated[str, StringConstraints(max_length=256)] = ""
    permissions: list[Annotated[str, StringConstraints(pattern=r"\A[a-z0-9]+(\.[A-Za-z0-9]+){2,}\Z")]] = Field(min_length=1)
    # The role's launch stage (IAM API ``Role.stage``, enum RoleLaunchStage; pulumi-gcp
    # ``projects.IAMCustomRole`` "stage": "Defaults to GA"). The default is not written.
    stage: Literal["ALPHA", "BETA", "GA", "DEPRECATED", "DISABLED", "EAP"] = "GA"


class OwnedServiceAccount(Strict):
    """A service account this stack creates (and protects). ``key_secret`` names the Secret
    Manager secret (id in ``project``) that ``audit-keys --rotate`` stores a new key in."""

    account_id: Annotated[str, StringConstraints(pattern=r"\A[a-z][a-z0-9-]{4,28}[a-z0-9]\Z")]
    display_name: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    description: Annotated[str, StringConstraints(max_length=256)] | None = None
    key_secret: Annotated[str, StringConstraints(pattern=r"\A[A-Za-z0-9_-]{1,255}\Z")] | None = None


class _Target(Strict):
    grants: list[Grant] = Field(min_length=1)


class Bucket(_Target):
    name: Annotated[str, StringConstraints(pattern=r"\A[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]\Z")]


class Secret(_Target):
    name: Annotated[str, StringConstraints(pattern=r"\A[A-Za-z0-9_-]{1,255}\Z")]


class ArtifactRepository(_Target):
    location: Annotated[str, StringConstraints(pattern=r"\A[a-z][a-z0-9-]*\Z")]
    name: GcpResourceName


class ServiceAccountTarget(_Target):
    email: Annotated[str, AfterValidator(_sa_email)]


class KmsKey(_Target):
    key: Annotated[str, AfterValidator(_kms_key)]


class IapBackendService(_Target):
    """Who may pass IAP on one backend service of the stack's load balancer: grants of
    ``roles/iap.httpsResourceAccessor`` ("IAP-Secured Web App User") on its IAP resource
    (IAP "Enabling IAP for Compute Engine" and "Managing access to IAP-secured resources":
    access is that role; without it IAP answers 403). ``name`` is the backend service's GCE
    name, ``<cluster>-be`` (:class:`clusterstack.derive.gclb.BackendNames`)."""

    name: GcpResourceName


class KmsKeyRing(_Target):
    """Grants on a Cloud KMS key ring (``kms.KeyRingIAMMember``): they apply to every key in it
    (Cloud KMS "Permissions and roles": a key inherits its key ring's policy)."""

    key_ring: Annotated[str, AfterValidator(_key_ring)]


# Cloud Run service names: a letter first, ≤ 49 characters (Cloud Run "Service names"; the
# one pattern of config/services.py CloudRunTarget.service).
CloudRunServiceName = Annotated[str, StringConstraints(pattern=r"\A[a-z]([-a-z0-9]{0,47}[a-z0-9])?\Z")]


class CloudRunService(_Target):
    """Grants on a Cloud Run service (``cloudrunv2.ServiceIamMember``): who may invoke
    (``roles/run.invoker``) or manage it. ``location`` is its region."""

    location: GcpRegion
    name: CloudRunServiceName


class CloudRunJob(_Target):
    """Grants on a Cloud Run job (``cloudrunv2.JobIamMember``), e.g. who may run it."""

    location: GcpRegion
    name: GcpResourceName


class IapCloudRunService(_Target):
    """IAP accessors of a Cloud Run service with IAP enabled (``iap.WebCloudRunServiceIamMember``
    on ``projects/P/iap_web/cloud_run-<location>/services/<name>``; Cloud Run "Configure IAP for
    Cloud Run": a person reaches the service through IAP with ``roles/iap.httpsResourceAccessor``
    there)."""

    location: GcpRegion
    name: CloudRunServiceName


SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bucket": ("buckets", ("name",)),
    "secret": ("secrets", ("name",)),
    "repo": ("artifact_repositories", ("location", "name")),
    "sa": ("service_accounts", ("email",)),
    "kms": ("kms_keys", ("key",)),
    "iap": ("iap_backend_services", ("name",)),
    "keyring": ("kms_key_rings", ("key_ring",)),
    "run": ("cloud_run_services", ("location", "name")),
    "run-job": ("cloud_run_jobs", ("location", "name")),
    "iap-run": ("iap_cloud_run_services", ("location", "name")),
}
"""Target kind → (top-level section, identifying fields of an entry). Project grants live in
``project_grants`` directly."""


def target_name(kind: str, entry: dict) -> str:
    """The :class:`Target` name of a section entry (``repo``, ``run``, ``run-job``, ``iap-run``
    → ``LOCATION/NAME``)."""
    _, fields = SECTIONS[kind]
    return "/".join(str(entry[f]) for f in fields)


def target_fields(target: Target) -> dict[str, str]:
    """The identifying fields of ``target``'s section entry (inverse of :func:`target_name`)."""
    _, fields = SECTIONS[target.kind]
    return dict(zip(fields, target.name.split("/", 1) if target.kind in LOCATED_KINDS else (target.name,)))


class IamFile(Strict):
    """The whole IAM file. Sections are optional (absent = empty)."""

    schema_version: Literal[1]
    project: Annotated[str, StringConstraints(pattern=PROJECT_RE)]
    encryption: Encryption
    principals: dict[HumanId, Ciphertext] = Field(default_factory=dict)
    custom_roles: list[CustomRole] = Field(default_factory=list)
    owned_service_accounts: list[OwnedServiceAccount] = Field(default_factory=list)
    project_grants: list[Grant] = Field(default_factory=list)
    buckets: list[Bucket] = Field(default_factory=list)
    secrets: list[Secret] = Field(default_factory=list)
    artifact_repositories: list[ArtifactRepository] = Field(default_factory=list)
    service_accounts: list[ServiceAccountTarget] = Field(default_factory=list)
    kms_keys: list[KmsKey] = Field(default_factory=list)
    iap_backend_services: list[IapBackendService] = Field(default_factory=list)
    kms_key_rings: list[KmsKeyRing] = Field(default_factory=list)
    cloud_run_services: list[CloudRunService] = Field(default_factory=list)
    cloud_run_jobs: list[CloudRunJob] = Field(default_factory=list)
    iap_cloud_run_services: list[IapCloudRunService] = Field(default_factory=list)

    def grants(self) -> Iterator[tuple[tuple[str | int, ...], Target, Grant]]:
        """Every grant with its document path and target, in file order."""
        for i, g in enumerate(self.project_grants):
            yield ("project_grants", i), Target("project", self.project, self.project), g
        for kind, (section, _) in SECTIONS.items():
            for i, entry in enumerate(getattr(self, section)):
                target = Target(kind, target_name(kind, entry.model_dump()), self.project)  # type: ignore[arg-type]
                for j, g in enumerate(entry.grants):
                    yield (section, i, "grants", j), target, g

    def owned_account_email(self, account_id: str) -> str:
        """``<account_id>@<project>.iam.gserviceaccount.com`` (GCP service account email form)."""
        return f"{account_id}@{self.project}.iam.gserviceaccount.com"

    def custom_role_name(self, role_id: str) -> str:
        """``projects/<project>/roles/<role_id>``: how grants refer to a custom role."""
        return f"projects/{self.project}/roles/{role_id}"
