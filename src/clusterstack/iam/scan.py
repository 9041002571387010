"""``clusterstack iam scan``: what the project's live IAM policy has and the IAM file lacks.

Read-only. Grants are additive by default (:mod:`clusterstack.components.gcp.iam`), so
``pulumi preview`` never sees a member granted outside the file; this scan compares the
project's live policy (Resource Manager ``projects.getIamPolicy``, version 3 so conditions come
back: :class:`clusterstack.adapters.gcp.ResourceManagerClient`) with the file's project grants,
and reports, per live (role, condition title, member) the file does not declare:

- ``undeclared``: a member granted outside the file (a hand-run grant, another tool's);
- ``service-agent``: a Google-managed service agent (``service-<n>@gcp-sa-<api>.iam.gserviceaccount.com``,
  the legacy agent domains such as ``compute-system`` or ``container-engine-robot``, and the
  Google APIs agent ``<n>@cloudservices.gserviceaccount.com``; GCP "Service agents"). Google
  grants these when an API is enabled: keep them out of an authoritative role;
- and ``missing``: a grant the file declares that the project lacks (the next ``up`` adds it).

Each finding says whether the role is ``broad`` (:data:`BROAD_ROLES`) and whether the next
``up`` **removes** it (``removed_by_up``: the file makes that role authoritative, and an
authoritative binding of (role, condition title) keeps exactly the file's members). So making a
role authoritative is a reviewed change: scan, add the members to keep, then opt the role in.

People: a live ``user:`` member is compared with the file's ``human-NNN`` principals by
encrypting its email with the file's keyset (deterministic AEAD: same email, same
ciphertext) — never by decrypting the file. Without a usable keyset people are listed but not
compared (``people_compared`` false). Every email in a finding is redacted by the one rule
(:func:`clusterstack.redact.redact_text`); a registered person is shown as their ``human-NNN``.

Marin runs the same kind of scan after moving to additive grants (marin-community/marin
``infra/pulumi/src/iac/gcp/iam_scan.py`` @ 0bf222b42cb2: undeclared bindings, broad roles,
service agents); its :data:`BROAD_ROLES` and agent domains are the starting point here.
Scope: the project's own policy (grants on buckets, secrets, … are not read).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

from clusterstack.iam.loader import LoadedIam, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.iam.targets import HUMAN_RE
from clusterstack.redact import redact_text
from clusterstack.adapters.gcp import GcpApiError, GcpClients

if TYPE_CHECKING:   # iam.crypto (tink) is imported when a scan decrypts
    from clusterstack.iam.crypto import KmsAeadFactory

BROAD_ROLES = frozenset({"roles/owner", "roles/editor", "roles/iam.securityAdmin",
                         "roles/resourcemanager.projectIamAdmin"})
"""Roles that let their holder change (almost) anything, IAM included: Marin's list (owner,
editor, iam.securityAdmin) and ``resourcemanager.projectIamAdmin``, which can grant any role on
the project (GCP "Basic roles" and "IAM roles" reference)."""

LEGACY_AGENT_NAMES = frozenset({
    "compute-system", "container-engine-robot", "container-analysis", "containerregistry",
    "cloud-tpu", "cloud-filer", "cloud-redis", "dataproc-accounts", "storage-transfer-service",
    "storageinsights", "websecurityscanner", "cloud-ml", "cloudbuild", "gae-api-prod",
    "genomics-api", "dataflow-service-producer-prod", "serverless-robot-prod"})
"""Service-agent domains ``<name>.iam.gserviceaccount.com`` outside the ``gcp-sa-*`` convention
(Marin's ``SYSTEM_AGENT_APIS`` keys and GCP "Service agents" list)."""

_AGENT_RE = re.compile(r"\AserviceAccount:[^@]+@(?P<name>[a-z0-9-]+)\.iam\.gserviceaccount\.com\Z")

Kind = Literal["undeclared", "service-agent", "missing"]


def is_service_agent(member: str, project: str) -> bool:
    """True for a Google-managed service agent (see the module docstring); False for the
    project's own service accounts and every other member."""
    if member.startswith("serviceAccount:") and member.endswith("@cloudservices.gserviceaccount.com"):
        return True
    m = _AGENT_RE.match(member)
    if m is None or m["name"] == project:
        return False
    return m["name"].startswith("gcp-sa-") or m["name"] in LEGACY_AGENT_NAMES


@dataclass(frozen=True, order=True)
class LiveGrant:
    """One (role, condition title, member) of a live policy; ``condition`` is "" without one."""

    role: str
    condition: str
    member: str


def parse_policy(policy: dict) -> list[LiveGrant]:
    """Flatten a ``getIamPolicy`` response (``bindings[].role|members|condition.title``) into
    sorted grants. Raises ValueError for a policy below version 3 that hides conditions (a role
    with ``_withcond_``: it cannot be compared)."""
    out = set()
    for b in policy.get("bindings", []):
        if "_withcond_" in b["role"]:
            raise ValueError("the policy was read below version 3 and hides its conditions")
        title = (b.get("condition") or {}).get("title", "")
        out.update(LiveGrant(b["role"], title, m) for m in b.get("members", []))
    return sorted(out)


@dataclass(frozen=True)
class Finding:
    """One difference. ``member`` is display text (redacted, or ``human-NNN``)."""

    kind: Kind
    role: str
    condition: str | None
    member: str
    broad: bool
    removed_by_up: bool

    def render(self) -> str:
        cond = f" if {self.condition!r}" if self.condition else ""
        tags = [t for t, on in (("broad role", self.broad), ("REMOVED by the next up", self.removed_by_up)) if on]
        extra = f"  [{', '.join(tags)}]" if tags else ""
        return f"{self.kind:<13} {self.role}{cond}: {self.member}{extra}"


@dataclass
class ScanReport:
    """The scan of one project: its policy's ``etag`` and ``version``, the findings (sorted:
    removed first, then broad, then by kind, role, member), and whether people were compared."""

    project: str
    etag: str
    version: int
    live_grants: int
    findings: list[Finding]
    people_compared: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project, "etag": self.etag, "version": self.version,
                "live_grants": self.live_grants, "people_compared": self.people_compared,
                "notes": list(self.notes), "findings": [asdict(f) for f in self.findings]}

    def render(self) -> str:
        lines = [f"project {self.project}: {self.live_grants} live grant(s), policy etag {self.etag} "
                 f"(version {self.version}); {len(self.findings)} difference(s) from the IAM file"]
        lines += ["  " + f.render() for f in self.findings]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def scan_project(loaded: LoadedIam, policy: dict, *,
                 encrypt: Callable[[str], str] | None = None) -> ScanReport:
    """Compare the live ``policy`` of the file's project with its ``project_grants``.

    ``encrypt``: email → ciphertext with the file's keyset (``PrincipalCipher.encrypt``), or None
    when no keyset is usable (people are then listed, not compared). Raises ValueError for a
    policy that hides its conditions (see :func:`parse_policy`).
    """
    model = loaded.model
    project = model.project
    live = parse_policy(policy)
    pid_of_ct = {ct: pid for pid, ct in model.principals.items()}
    bindings = [b for b in loaded.bindings() if b.target.kind == "project"]
    authoritative = {(b.role, b.key[2]) for b in bindings if b.authoritative}
    declared = {(b.role, b.key[2], m) for b in bindings for m in b.members}

    def as_declared(member: str) -> str | None:
        """The file's form of a live member: human-NNN for a registered person, else itself."""
        if not member.startswith("user:"):
            return member
        if encrypt is None:
            return None
        try:
            return pid_of_ct.get(encrypt(member.removeprefix("user:")))
        except ValueError:
            return None

    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for g in live:
        ours = as_declared(g.member)
        if ours is not None:
            seen.add((g.role, g.condition, ours))
            if (g.role, g.condition, ours) in declared:
                continue
        shown = ours if ours is not None and HUMAN_RE.match(ours) else redact_text(g.member)
        kind: Kind = "service-agent" if is_service_agent(g.member, project) else "undeclared"
        people_unknown = g.member.startswith("user:") and encrypt is None
        findings.append(Finding(kind, g.role, g.condition or None, shown, g.role in BROAD_ROLES,
                                (g.role, g.condition) in authoritative and not people_unknown))
    for role, cond, member in sorted(declared - seen):
        if HUMAN_RE.match(member) and encrypt is None:
            continue  # a person's live presence is unknown without the keyset
        findings.append(Finding("missing", role, cond or None, redact_text(member), role in BROAD_ROLES, False))
    order = {"undeclared": 0, "service-agent": 1, "missing": 2}
    findings.sort(key=lambda f: (not f.removed_by_up, not f.broad, order[f.kind], f.role, f.condition or "",
                                 f.member))
    notes = []
    if encrypt is None:
        notes.append("people (user: members) were not compared: no usable keyset; a person listed "
                     "as undeclared may be a registered principal")
    return ScanReport(project=project, etag=str(policy.get("etag", "")), version=int(policy.get("version", 1)),
                      live_grants=len(live), findings=findings, people_compared=encrypt is not None,
                      notes=notes)


def run_scan(settings: IamSettings, gcp: GcpClients, *, kms_aead: KmsAeadFactory | None = None) -> ScanReport:
    """Load the IAM file (``settings``: :class:`clusterstack.iam.settings.IamSettings`), read
    its project's live policy through ``gcp`` (:class:`clusterstack.adapters.gcp.GcpClients`:
    ``resource_manager()``), try the keyset, and scan. Raises IamFileError (file), GcpApiError
    and GcpCredentialsError (the API; exit 2)."""
    from clusterstack.iam.crypto import KeysetError, gcp_kms_aead, load_cipher

    loaded = load_iam(settings.file)
    policy = gcp.resource_manager().get_project_iam_policy(loaded.model.project)
    encrypt, note = None, None
    try:
        encrypt = load_cipher(loaded.model.encryption, settings.root,
                              kms_aead=kms_aead or gcp_kms_aead).encrypt
    except KeysetError as exc:
        note = f"keyset: {exc.problems[0].message if exc.problems else exc}"
    try:
        report = scan_project(loaded, policy, encrypt=encrypt)
    except ValueError as exc:
        raise GcpApiError(f"cannot compare the policy of {loaded.model.project}: {exc}",
                          "retry; clusterstack requests policy version 3, which includes conditions") from None
    if note:
        report.notes.append(note)
    return report
