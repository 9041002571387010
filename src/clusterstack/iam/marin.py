"""Marin's IAM declaration (``iam_data.yaml``), read as Marin's own loader reads it.

marin-community/marin keeps the GCP IAM of its project in
``infra/pulumi/src/iac/gcp/iam_data.yaml``, loaded by ``iam_config.py`` (``load_iam_config``) and
applied by ``iam.py`` (``GcpIam``). The shape, from the stored versions read:

- ``schema_version: 1`` (@ 8f9a38ebf2db) and ``2`` (@ 0fe5f595bef8, which adds
  ``cloud_run_services`` and ``cloud_run_jobs``); every other key is the same in both::

    schema_version: 2
    kms: {location, key_ring, key}          # the key people's emails are encrypted with; its
                                            # project is the stack's (iam_kms.py @ 60ff7748: PROJECT)
    principals: {human-NNN: <base64 Cloud KMS ciphertext of the bare email>}
    custom_roles: [{role_id, title, description, permissions: [...]}]
    owned_service_accounts: [{account_id, display_name}]
    project_grants: [GRANT]
    kms_grants: [GRANT]                     # on the crypto key named by `kms`
    secrets: [{secret, grants: [GRANT]}]
    buckets: [{bucket, grants}]
    artifact_repositories: [{location, repository, grants}]
    service_accounts: [{email, grants}]     # grants on the account (who may impersonate it)
    cloud_run_services: [{location, service, grants, iap_grants}]   # schema 2
    cloud_run_jobs: [{location, job, grants}]                       # schema 2

    GRANT = {role, members: [<plain member> | {principal: human-NNN}], condition?: {title,
             expression, description?}}

- Marin's rules (``iam_config.py`` @ 0fe5f595: ``_fields``, ``_parse_principals``,
  ``_validate_plain_member``, ``_parse_grant``): every mapping strict (required fields,
  nothing unknown), principal ids ``human-NNN``, no ciphertext twice, a plain member is a
  non-personal form (``user:`` refused: "contains a plaintext user principal"), a person is
  ``{principal: human-NNN}`` naming a declared principal, a grant has at least one member and
  no member twice. They are checked here too, each reported at its line (exit 2).

Every grant is additive in Marin (``iam.py``: "Resources use additive ``*IAMMember`` grants").
:func:`marin_grants` lists them as clusterstack targets (:mod:`clusterstack.iam.targets`); the
conversion into the IAM file is :mod:`clusterstack.iam.adopt`.

Nothing here decrypts: principals are Marin's Cloud KMS ciphertexts, opaque base64.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal

from pydantic import AfterValidator, Field, PlainValidator, StringConstraints

from clusterstack.config.document import Document, Strict
from clusterstack.errors import ConfigError, FieldError
from clusterstack.iam import model as iam_model
from clusterstack.iam.loader import KEEP_DOMAINS
from clusterstack.iam.targets import (EMAIL_RE, HUMAN_RE, ConditionSpec, MemberError, Target,
                                      classify_member)
from clusterstack.redact import redact_text

MARIN_SOURCE = "marin-community/marin infra/pulumi/src/iac/gcp/iam_config.py @ 0fe5f595"


class MarinIamError(ConfigError):
    """Marin's ``iam_data.yaml`` is missing, unreadable or not in Marin's format (exit 2)."""


def _redact(text: str) -> str:
    return redact_text(text, keep=KEEP_DOMAINS)


def _like(model: type, name: str) -> Any:
    """The type (with every constraint) of ``model``'s field ``name``: the IAM file's rule for
    the same value, so a name clusterstack could not hold is refused at Marin's line."""
    f = model.model_fields[name]
    return Annotated[f.annotation, *f.metadata]  # type: ignore[valid-type]


def _plain_member(value: str) -> str:
    """A plain (non-personal) member, as Marin's ``_validate_plain_member`` accepts it."""
    if HUMAN_RE.match(value):
        raise ValueError(f"{value} as a plain string is not a member; Marin names a person as "
                         "{principal: human-NNN}")
    try:
        kind = classify_member(value)
    except MemberError as exc:
        if value.startswith("user:") or EMAIL_RE.match(value):
            # never repeat the address: this error is printed (and may land in a CI log)
            raise ValueError("a plaintext user principal (a personal email); Marin's loader refuses "
                             "it too — encrypt it with Marin's tooling first, or leave it out and "
                             "grant it after adoption with `clusterstack iam grant`") from None
        raise ValueError(str(exc)) from None
    assert kind == "plain"
    return value


def _ciphertext(value: str) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64 (Marin stores each person as a base64 Cloud KMS ciphertext)") from None
    if not raw:
        raise ValueError("empty ciphertext")
    return value


def _principal_id(value: str) -> str:
    if not HUMAN_RE.match(value):
        raise ValueError("principal ids are human-NNN (at least three digits)")
    return value


PrincipalId = Annotated[str, AfterValidator(_principal_id)]
KmsName = Annotated[str, StringConstraints(pattern=r"\A[a-zA-Z0-9_-]{1,63}\Z")]


class PrincipalRef(Strict):
    """A person in a grant: ``{principal: human-NNN}``."""

    principal: PrincipalId


def _member(value: Any) -> str | PrincipalRef:
    """A member as Marin's ``_parse_member`` reads it: a string is a plain member, a mapping
    ``{principal: human-NNN}`` a person."""
    if isinstance(value, str):
        return _plain_member(value)
    if isinstance(value, dict):
        if set(value) != {"principal"}:
            raise ValueError("a person is written {principal: human-NNN} (that one key only)")
        if not isinstance(value["principal"], str):
            raise ValueError("principal must be a human-NNN id")
        return PrincipalRef(principal=_principal_id(value["principal"]))
    raise ValueError("must be a member string or {principal: human-NNN}")


Member = Annotated[Any, PlainValidator(_member)]


class Condition(Strict):
    title: _like(iam_model.Condition, "title")  # type: ignore[valid-type]
    expression: _like(iam_model.Condition, "expression")  # type: ignore[valid-type]
    description: str = ""


class Grant(Strict):
    role: _like(iam_model.Grant, "role")  # type: ignore[valid-type]
    members: list[Member] = Field(min_length=1)
    condition: Condition | None = None


class Kms(Strict):
    location: KmsName
    key_ring: KmsName
    key: KmsName


class CustomRole(Strict):
    role_id: _like(iam_model.CustomRole, "role_id")  # type: ignore[valid-type]
    title: _like(iam_model.CustomRole, "title")  # type: ignore[valid-type]
    description: _like(iam_model.CustomRole, "description")  # type: ignore[valid-type]
    permissions: _like(iam_model.CustomRole, "permissions")  # type: ignore[valid-type]


class OwnedServiceAccount(Strict):
    account_id: _like(iam_model.OwnedServiceAccount, "account_id")  # type: ignore[valid-type]
    display_name: _like(iam_model.OwnedServiceAccount, "display_name")  # type: ignore[valid-type]


class SecretIam(Strict):
    secret: _like(iam_model.Secret, "name")  # type: ignore[valid-type]
    grants: list[Grant]


class BucketIam(Strict):
    bucket: _like(iam_model.Bucket, "name")  # type: ignore[valid-type]
    grants: list[Grant]


class RepositoryIam(Strict):
    location: _like(iam_model.ArtifactRepository, "location")  # type: ignore[valid-type]
    repository: _like(iam_model.ArtifactRepository, "name")  # type: ignore[valid-type]
    grants: list[Grant]


class ServiceAccountIam(Strict):
    email: _like(iam_model.ServiceAccountTarget, "email")  # type: ignore[valid-type]
    grants: list[Grant]


class CloudRunServiceIam(Strict):
    location: _like(iam_model.CloudRunService, "location")  # type: ignore[valid-type]
    service: _like(iam_model.CloudRunService, "name")  # type: ignore[valid-type]
    grants: list[Grant]
    iap_grants: list[Grant]


class CloudRunJobIam(Strict):
    location: _like(iam_model.CloudRunJob, "location")  # type: ignore[valid-type]
    job: _like(iam_model.CloudRunJob, "name")  # type: ignore[valid-type]
    grants: list[Grant]


class MarinIamData(Strict):
    """The whole file (``GcpIamConfig`` of ``iam_config.py``). Schema 1 has no Cloud Run
    sections; schema 2 requires them (checked in :func:`_cross_checks`)."""

    schema_version: Literal[1, 2]
    kms: Kms
    principals: dict[PrincipalId, Annotated[str, AfterValidator(_ciphertext)]]
    custom_roles: list[CustomRole]
    owned_service_accounts: list[OwnedServiceAccount]
    project_grants: list[Grant]
    kms_grants: list[Grant]
    secrets: list[SecretIam]
    buckets: list[BucketIam]
    artifact_repositories: list[RepositoryIam]
    service_accounts: list[ServiceAccountIam]
    cloud_run_services: list[CloudRunServiceIam] | None = None
    cloud_run_jobs: list[CloudRunJobIam] | None = None

    def crypto_key(self, project: str) -> str:
        """The crypto key of ``kms`` in ``project`` (Marin names no project: it is the stack's,
        ``iam_kms.py`` @ 60ff7748 ``crypto_key_id``; ``iam.py`` ``_crypto_key_id``)."""
        return (f"projects/{project}/locations/{self.kms.location}/keyRings/{self.kms.key_ring}"
                f"/cryptoKeys/{self.kms.key}")

    def grant_lists(self) -> Iterator[tuple[tuple[str | int, ...], str, str, list[Grant]]]:
        """``(path of the grants list, target kind, target name without project, grants)`` for
        every grants list of the file, in file order; the kms target name is filled in by
        :func:`marin_grants` (it needs the project)."""
        yield ("project_grants",), "project", "", self.project_grants
        yield ("kms_grants",), "kms", "", self.kms_grants
        for i, s in enumerate(self.secrets):
            yield ("secrets", i, "grants"), "secret", s.secret, s.grants
        for i, b in enumerate(self.buckets):
            yield ("buckets", i, "grants"), "bucket", b.bucket, b.grants
        for i, r in enumerate(self.artifact_repositories):
            yield ("artifact_repositories", i, "grants"), "repo", f"{r.location}/{r.repository}", r.grants
        for i, a in enumerate(self.service_accounts):
            yield ("service_accounts", i, "grants"), "sa", a.email, a.grants
        for i, c in enumerate(self.cloud_run_services or ()):
            yield ("cloud_run_services", i, "grants"), "run", f"{c.location}/{c.service}", c.grants
            yield ("cloud_run_services", i, "iap_grants"), "iap-run", f"{c.location}/{c.service}", c.iap_grants
        for i, j in enumerate(self.cloud_run_jobs or ()):
            yield ("cloud_run_jobs", i, "grants"), "run-job", f"{j.location}/{j.job}", j.grants


def _cross_checks(data: MarinIamData) -> list[FieldError]:
    """Marin's rules a field's type cannot state, each at its path: schema 2 has both Cloud Run
    sections; no ciphertext twice; a principal reference names a declared principal; a member
    at most once per grant."""
    errs: list[FieldError] = []
    if data.schema_version == 2:
        for section in ("cloud_run_services", "cloud_run_jobs"):
            if getattr(data, section) is None:
                errs.append(FieldError((section,), f"schema_version 2 requires {section}",
                                       "add it (an empty list if there is none)"))
    seen: dict[str, str] = {}
    for pid, ct in data.principals.items():
        if ct in seen:
            errs.append(FieldError(("principals", pid), f"same ciphertext as {seen[ct]}",
                                   "Marin's loader refuses duplicate ciphertexts: remove one"))
        seen.setdefault(ct, pid)
    for path, _kind, _name, grants in data.grant_lists():
        for g, grant in enumerate(grants):
            members: set[str] = set()
            for m, member in enumerate(grant.members):
                key = member.principal if isinstance(member, PrincipalRef) else member
                if isinstance(member, PrincipalRef) and key not in data.principals:
                    errs.append(FieldError((*path, g, "members", m, "principal"),
                                           f"{key} is not declared under principals",
                                           "declare it or fix the id"))
                if key in members:
                    errs.append(FieldError((*path, g, "members", m), f"{key} is listed twice in this grant",
                                           "list each member once"))
                members.add(key)
    return errs


@dataclass(frozen=True)
class LoadedMarin:
    """A validated ``iam_data.yaml``: the model and the document (for line lookups)."""

    path: Path
    data: MarinIamData
    document: Document

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        return self.document.line_of(path)


def load_marin(path: Path) -> LoadedMarin:
    """Read and validate Marin's ``iam_data.yaml`` at ``path`` through the one loader
    (:class:`clusterstack.config.document.Document`). Raises MarinIamError listing every problem
    as ``file:line: field: problem — hint`` (missing file, not UTF-8, bad YAML, not Marin's
    shape, a plaintext user principal — never quoted —, an undeclared principal, …); exit 2."""
    doc = Document.read(path, format="yaml", missing="Marin's IAM file not found",
                        missing_hint="pass the path of Marin's infra/pulumi/src/iac/gcp/iam_data.yaml",
                        error=MarinIamError, redact=_redact)
    doc.require_mapping("Marin's iam_data.yaml must be a YAML mapping",
                        f"pass Marin's infra/pulumi/src/iac/gcp/iam_data.yaml (format: {MARIN_SOURCE})")
    data = doc.validate(MarinIamData, cross_checks=_cross_checks,
                        strict=f"Marin's format is strict ({MARIN_SOURCE}: _fields)")
    return LoadedMarin(path=Path(path), data=data, document=doc)


@dataclass(frozen=True)
class MarinGrant:
    """One grant of Marin's file as a clusterstack target: ``members`` are plain members and
    Marin principal ids (``human-NNN`` of *Marin's* file); ``path`` is where the grant is."""

    path: tuple[str | int, ...]
    target: Target
    role: str
    condition: ConditionSpec | None
    members: tuple[str, ...]


def marin_grants(data: MarinIamData, project: str) -> list[MarinGrant]:
    """Every grant of ``data`` in file order, on clusterstack targets of ``project``: project,
    ``kms`` (the ``kms`` key of ``project``), ``secret``, ``bucket``, ``repo``, ``sa``, ``run``
    (``cloud_run_services[].grants``), ``iap-run`` (``cloud_run_services[].iap_grants``) and
    ``run-job`` — the targets Marin's ``iam.py`` @ 0fe5f595 grants on (``_grant_*_iam``)."""
    out = []
    for path, kind, name, grants in data.grant_lists():
        if kind == "project":
            name = project
        elif kind == "kms":
            name = data.crypto_key(project)
        target = Target(kind, name, project)  # type: ignore[arg-type]
        for g, grant in enumerate(grants):
            cond = grant.condition
            out.append(MarinGrant(
                path=(*path, g), target=target, role=grant.role,
                condition=ConditionSpec(cond.title, cond.expression, cond.description or None) if cond else None,
                members=tuple(m.principal if isinstance(m, PrincipalRef) else m for m in grant.members)))
    return out


__all__ = ["LoadedMarin", "MarinGrant", "MarinIamData", "MarinIamError", "load_marin", "marin_grants"]
