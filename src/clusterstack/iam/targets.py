"""Grant targets, members and bindings: the pure vocabulary shared by the loader, the
canonical writer, ``review`` and the GCP IAM component.

A *target* is what a role is granted on: the project, a bucket, a secret, an Artifact Registry
repository, a service account, a KMS crypto key, an IAP-protected backend service of the
load balancer, a KMS key ring, a Cloud Run service, a Cloud Run job, or the IAP resource of a
Cloud Run service. On the command line it is written ``project``, ``bucket:NAME``,
``secret:NAME``, ``repo:LOCATION/NAME``, ``sa:EMAIL``,
``kms:projects/P/locations/L/keyRings/R/cryptoKeys/K``, ``iap:BACKEND_SERVICE``,
``keyring:projects/P/locations/L/keyRings/R``, ``run:LOCATION/SERVICE``,
``run-job:LOCATION/JOB`` or ``iap-run:LOCATION/SERVICE`` (:meth:`Target.spec`). The last four
are the resource kinds Marin grants on besides the first six (marin-community/marin
``infra/pulumi/src/iac/gcp/iam.py`` @ 0fe5f595: ``_grant_cloud_run_service_iam``,
``_grant_cloud_run_job_iam``; a key ring is the KMS resource one level up from a key).

A *binding* is one IAM binding of the file: (target, role, condition title) → members.
Grants of one role and condition title on one target are merged into one binding
(:func:`merge_bindings`), because GCP identifies a conditional binding by role and condition
title. A binding is *additive* (the default: one non-authoritative ``*IAMMember`` resource per
member, named :meth:`BindingSpec.member_name`) or *authoritative* (``authoritative: true``: one
``*IAMBinding``, authoritative for exactly that key — two resources for the same key would
overwrite each other on every ``up``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Literal

from clusterstack.errors import ClusterstackError
from clusterstack.redact import redact_text

Kind = Literal["project", "bucket", "secret", "repo", "sa", "kms", "iap", "keyring", "run", "run-job", "iap-run"]
KINDS: tuple[Kind, ...] = ("project", "bucket", "secret", "repo", "sa", "kms", "iap", "keyring", "run", "run-job",
                           "iap-run")
LOCATED_KINDS = ("repo", "run", "run-job", "iap-run")
"""Target kinds named ``LOCATION/NAME`` (an Artifact Registry repository, a Cloud Run service or
job: resources of a region)."""

HUMAN_RE = re.compile(r"^human-(\d{3,})$")
"""A principal reference: ``human-`` and at least three digits (``human-001``)."""

PLAIN_MEMBER_PREFIXES = ("serviceAccount:", "group:", "domain:", "principal://", "principalSet://",
                         "projectOwner:", "projectEditor:", "projectViewer:")
"""Non-personal member forms (GCP IAM "Principal identifiers"). ``user:`` is deliberately absent:
a person is always an encrypted ``human-NNN`` principal."""

SPECIAL_MEMBERS = ("allUsers", "allAuthenticatedUsers")

EMAIL_RE = re.compile(r"\A[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\Z")
KMS_KEY_RE = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[a-zA-Z0-9_-]{1,63})/"
                        r"keyRings/(?P<ring>[a-zA-Z0-9_-]{1,63})/cryptoKeys/(?P<key>[a-zA-Z0-9_-]{1,63})$")
"""A crypto key resource name (Cloud KMS "Resource names": ``projects/*/locations/*/keyRings/*/cryptoKeys/*``)."""
KEY_RING_RE = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[a-zA-Z0-9_-]{1,63})/"
                         r"keyRings/(?P<ring>[a-zA-Z0-9_-]{1,63})$")
"""A key ring resource name (Cloud KMS "Resource names": ``projects/*/locations/*/keyRings/*``)."""


class MemberError(ValueError):
    """A member string that is not allowed in the IAM file; the message says what to do."""


def classify_member(member: str) -> Literal["human", "plain"]:
    """Return ``"human"`` for a ``human-NNN`` reference, ``"plain"`` for a non-personal member.

    Raises MemberError for a plaintext ``user:`` member or a bare email (people are only ever
    stored encrypted), and for any other unknown form.
    """
    if HUMAN_RE.match(member):
        return "human"
    if member in SPECIAL_MEMBERS or member.startswith(PLAIN_MEMBER_PREFIXES):
        if member.endswith(":"):
            raise MemberError(f"member {member!r} has no identity after the prefix")  # no email in it
        return "plain"
    if member.startswith("user:") or EMAIL_RE.match(member):
        raise MemberError("a plaintext user: member (a personal email) is not allowed; people are "
                          "stored encrypted as human-NNN — use `clusterstack iam grant EMAIL …`")
    # error messages land in public CI logs: never echo a personal email back in full
    raise MemberError(f"unknown member form {redact_text(member)!r}; use human-NNN or one of "
                      f"{', '.join(PLAIN_MEMBER_PREFIXES + SPECIAL_MEMBERS)}")


def member_sort_key(member: str) -> tuple[int, int, str]:
    """Canonical member order: ``human-NNN`` by number first, then other members by text."""
    m = HUMAN_RE.match(member)
    return (0, int(m.group(1)), "") if m else (1, 0, member)


def human_number(pid: str) -> int:
    """``human-012`` → 12. Raises ValueError for anything else."""
    m = HUMAN_RE.match(pid)
    if not m:
        raise ValueError(f"not a principal id: {pid!r}")
    return int(m.group(1))


def slug(text: str) -> str:
    """Lower-case, every run of other characters → ``-`` (``roles/storage.objectViewer`` →
    ``roles-storage-objectviewer``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True, order=True)
class Target:
    """What a role is granted on. ``name`` is the part after ``kind:`` in :meth:`spec`:
    the project id, a bucket name, a secret id, ``LOCATION/REPOSITORY``, a service account
    email or a crypto key resource name. ``project`` is the IAM file's project (where
    secrets and repositories live)."""

    kind: Kind
    name: str
    project: str

    @property
    def spec(self) -> str:
        """The command-line form (``bucket:ml-data``); the project is just ``project``."""
        return "project" if self.kind == "project" else f"{self.kind}:{self.name}"

    @property
    def slug(self) -> str:
        """The target part of a binding's logical name (``bucket-ml-data``).

        Service accounts and KMS keys of the file's own project drop the project (``sa-ci-deployer``,
        ``kms-global-ring-key``); those of other projects keep it, so names stay unique.
        """
        if self.kind == "project":
            return "project"
        if self.kind == "sa":
            local, _, domain = self.name.partition("@")
            own = domain == f"{self.project}.iam.gserviceaccount.com"
            return "sa-" + slug(local if own else self.name)
        if self.kind in ("kms", "keyring"):
            m = (KMS_KEY_RE if self.kind == "kms" else KEY_RING_RE).match(self.name)
            assert m is not None  # validated by the model
            parts = [m["location"], m["ring"], *([m["key"]] if self.kind == "kms" else [])]
            if m["project"] != self.project:
                parts.insert(0, m["project"])
            return f"{self.kind}-" + slug("-".join(parts))
        return f"{self.kind}-{slug(self.name)}"

    def sort_key(self) -> tuple[int, str]:
        return (KINDS.index(self.kind), self.name)


def parse_target(text: str, project: str) -> Target:
    """Parse a ``--on`` value (``project``, ``bucket:NAME``, ``secret:NAME``,
    ``repo:LOCATION/NAME``, ``sa:EMAIL``, ``kms:KEY``, ``iap:BACKEND_SERVICE``,
    ``keyring:KEY_RING``, ``run:LOCATION/SERVICE``, ``run-job:LOCATION/JOB``,
    ``iap-run:LOCATION/SERVICE``). Raises ClusterstackError (exit 2)."""
    hint = ("use project, bucket:NAME, secret:NAME, repo:LOCATION/NAME, sa:EMAIL, "
            "kms:projects/P/locations/L/keyRings/R/cryptoKeys/K, iap:BACKEND_SERVICE, "
            "keyring:projects/P/locations/L/keyRings/R, run:LOCATION/SERVICE, "
            "run-job:LOCATION/JOB or iap-run:LOCATION/SERVICE")
    if text in ("project", f"project:{project}"):
        return Target("project", project, project)
    kind, sep, name = text.partition(":")
    if not sep or not name or kind not in KINDS or kind == "project":
        raise ClusterstackError(f"unknown target {text!r}", hint, field="--on")
    if kind in LOCATED_KINDS and (name.count("/") != 1 or "" in name.split("/")):
        raise ClusterstackError(f"target {text!r} must be {kind}:LOCATION/NAME", hint, field="--on")
    if kind == "sa" and not EMAIL_RE.match(name):
        raise ClusterstackError(f"service account target {text!r} must be sa:EMAIL", hint, field="--on")
    if kind == "kms" and not KMS_KEY_RE.match(name):
        raise ClusterstackError(f"KMS target {text!r} must name a crypto key", hint, field="--on")
    if kind == "keyring" and not KEY_RING_RE.match(name):
        raise ClusterstackError(f"key ring target {text!r} must name a key ring", hint, field="--on")
    return Target(kind, name, project)  # type: ignore[arg-type]


@dataclass(frozen=True, order=True)
class ConditionSpec:
    """An IAM condition (CEL ``expression``); GCP and the provider key a binding by ``title``."""

    title: str
    expression: str
    description: str | None = None


def member_slug(member: str, project: str) -> str:
    """The member part of an additive grant's logical name: ``human-001`` as is; a service
    account of ``project`` → ``sa-<account id>``; any other member → the slug of its text
    (``group:ml@example.org`` → ``group-ml-example-org``). Never an email of a person: people
    are ``human-NNN`` in the file."""
    if HUMAN_RE.match(member):
        return member
    if member.startswith("serviceAccount:"):
        local, _, domain = member.removeprefix("serviceAccount:").partition("@")
        if domain == f"{project}.iam.gserviceaccount.com":
            return "sa-" + slug(local)
    return slug(member)


@dataclass(frozen=True)
class BindingSpec:
    """One binding of the file: the members of ``role`` (under ``condition``) on ``target``.

    ``members`` holds ``human-NNN`` references and plain non-personal members, in canonical
    order; people are resolved to ``user:<email>`` only inside the Pulumi program, as secrets.
    ``authoritative``: the binding is the role's only source of members on the target (an
    ``*IAMBinding``); otherwise each member is granted additively (``*IAMMember``).
    """

    target: Target
    role: str
    condition: ConditionSpec | None
    members: tuple[str, ...]
    authoritative: bool = False

    def member_name(self, member: str) -> str:
        """The Pulumi logical name of the additive grant of ``member``:
        ``<logical_name>-<member slug>`` (``project-viewer-human-001``,
        ``bucket-demo-ml-logs-storage-objectcreator-sa-log-relay``)."""
        return f"{self.logical_name}-{member_slug(member, self.target.project)}"

    @property
    def resource_names(self) -> tuple[str, ...]:
        """The logical names this binding declares: one (authoritative) or one per member."""
        if self.authoritative:
            return (self.logical_name,)
        return tuple(self.member_name(m) for m in self.members)

    @property
    def key(self) -> tuple[Target, str, str]:
        """What GCP (and the provider) identify a binding by: target, role, condition title."""
        return (self.target, self.role, self.condition.title if self.condition else "")

    @property
    def logical_name(self) -> str:
        """The Pulumi logical name: target slug + role slug [+ condition slug].

        The role slug drops ``roles/``; a custom role of the file's project becomes
        ``custom-<id>`` (``bucket-ml-data-storage-objectviewer``,
        ``project-custom-clusteroperator-until-2026``).
        """
        role = self.role
        own_custom = f"projects/{self.target.project}/roles/"
        if role.startswith("roles/"):
            role_slug = slug(role[len("roles/"):])
        elif role.startswith(own_custom):
            role_slug = "custom-" + slug(role[len(own_custom):])
        else:
            role_slug = slug(role)
        name = f"{self.target.slug}-{role_slug}"
        if self.condition is not None:
            name += "-" + slug(self.condition.title)
        return name

    @property
    def humans(self) -> tuple[str, ...]:
        return tuple(m for m in self.members if HUMAN_RE.match(m))


def merge_bindings(grants: Iterable[tuple[Target, str, ConditionSpec | None, Iterable[str], bool]]
                   ) -> tuple[BindingSpec, ...]:
    """Merge ``(target, role, condition, members, authoritative)`` grants into one binding per
    (target, role, condition title); members are de-duplicated and put in canonical order.

    The first condition seen for a title wins (the loader has already rejected grants whose
    conditions with one title disagree); a binding is authoritative when any of its grants is
    (the loader has already rejected grants of one role and target that disagree). Result
    sorted by target, role, condition title.
    """
    merged: dict[tuple[Target, str, str], tuple[ConditionSpec | None, set[str], list[bool]]] = {}
    for target, role, condition, members, authoritative in grants:
        key = (target, role, condition.title if condition else "")
        cond, acc, auth = merged.setdefault(key, (condition, set(), [False]))
        acc.update(members)
        auth[0] = auth[0] or authoritative
    out = [BindingSpec(target=t, role=r, condition=cond, members=tuple(sorted(ms, key=member_sort_key)),
                       authoritative=auth[0])
           for (t, r, _), (cond, ms, auth) in merged.items()]
    return tuple(sorted(out, key=lambda b: (b.target.sort_key(), b.role, b.key[2])))
