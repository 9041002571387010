"""A controller's ``auth.admin_users`` against the IAP binding of its backend.

Behind the shared load balancer every request to a controller passes IAP first, and IAP
answers 403 to anyone without ``roles/iap.httpsResourceAccessor`` on the backend service it
guards (or on the project: a project grant admits to every IAP-secured resource) — IAP
"Managing access to IAP-secured resources" (docs.cloud.google.com/iap/docs/managing-access,
read 2026-12-02). An admin the controller lists (marin-community/marin
lib/iris/.../controller/auth_setup.py@136ec1bc: each ``admin_users`` entry is made an admin
at start) whom the binding does not admit can never reach it. The binding is the IAM file's
(docs/iam.md "IAP access"), applied by the ``[iam] stack``: this rule checks the controllers
of that stack's load balancer. (The organization rule of IAP's Google-managed OAuth client is
:func:`clusterstack.derive.gclb.gclb_problems`'s: it needs no IAM file.)

What admits an address, per member of an accessor grant: ``allUsers`` /
``allAuthenticatedUsers``; ``domain:<d>`` when the address is in ``d``; a ``human-NNN``
whose ciphertext is the address's (people are ciphertext only, docs/iam.md: compared with
the local cleartext keyset when there is one — encrypting the address, never decrypting the
file; without a keyset, or under a KMS-wrapped one, which offline ``validate`` does not call,
a person *may* be the admin). A ``group:`` *may* hold the address (group membership is Google
Groups', not readable offline); a conditional grant counts as granted (its condition is not
evaluated). An admin no member admits or may admit is refused at its line in the
controller's file.
"""

from __future__ import annotations

from pathlib import Path

from clusterstack.config.cluster import ClusterConfig
from clusterstack.derive.gclb import derive_gclb
from clusterstack.errors import ClusterstackError, FieldError, Problem
from clusterstack.iam.crypto import KeysetError, PrincipalCipher, ciphertext_key_id, load_cipher
from clusterstack.iam.loader import LoadedIam
from clusterstack.iam.targets import EMAIL_RE, HUMAN_RE, SPECIAL_MEMBERS
from clusterstack.redact import redact_text
from clusterstack.workspace import Workspace
from clusterstack.validation.clusters import load_cluster, load_references

ACCESSOR_ROLE = "roles/iap.httpsResourceAccessor"


def _offline_kms(key_uri: str):
    raise KeysetError(f"not read offline: {key_uri}", "validate does not call Cloud KMS")


def _cipher(loaded: LoadedIam, root: Path) -> PrincipalCipher | None:
    """The local cleartext keyset, or None (missing, KMS-wrapped, unreadable)."""
    try:
        return load_cipher(loaded.model.encryption, root, kms_aead=_offline_kms)
    except ClusterstackError:
        return None


def _is(cipher: PrincipalCipher, ciphertext: str, email: str) -> bool:
    """Whether ``ciphertext`` holds ``email``: equal ciphertexts under the primary key
    (deterministic AEAD), else — a principal of an older key of the keyset — decrypted."""
    if ciphertext_key_id(ciphertext) == cipher.primary_key_id:
        return cipher.encrypt(email) == ciphertext
    try:
        return cipher.decrypt(ciphertext).lower() == email.lower()
    except KeysetError:
        return False


def admits(members: tuple[str, ...], email: str, principals: dict[str, str],
           cipher: PrincipalCipher | None) -> str:
    """``"yes"``, ``"maybe"`` or ``"no"``: whether the accessor ``members`` let ``email``
    through IAP (module docstring)."""
    domain = email.rsplit("@", 1)[1].lower()
    maybe = False
    for m in members:
        if m in SPECIAL_MEMBERS or (m.startswith("domain:") and m[len("domain:"):].lower() == domain):
            return "yes"
        if m.startswith("group:"):
            maybe = True
        elif HUMAN_RE.match(m) and m in principals:
            if cipher is None:
                maybe = True
            elif _is(cipher, principals[m], email):
                return "yes"
    return "maybe" if maybe else "no"


def admin_binding_problems(ws: Workspace, loaded: LoadedIam, file: Path, cfg: ClusterConfig) -> list[Problem]:
    """One Problem per ``auth.admin_users`` address of a controller behind ``cfg``'s load
    balancer (``cfg``: the ``[iam] stack``) that the accessor grants of the IAM file
    ``loaded`` (at ``file``) on ``<cluster>-be`` or on the project cannot admit (module
    docstring), located at the address in the controller's file. [] without a load
    balancer, or when its references do not load (their problems are the clusters')."""
    try:
        backends = derive_gclb(cfg, load_references(ws, cfg), ws.conventions)
    except (ClusterstackError, FieldError):
        return []
    if backends is None:
        return []
    bindings = [b for b in loaded.bindings() if b.role == ACCESSOR_ROLE]
    entries = {e.name: i for i, e in enumerate(loaded.model.iap_backend_services)}
    principals = dict(loaded.model.principals)
    cipher = _cipher(loaded, ws.root) if principals else None
    out: list[Problem] = []
    for c in backends.controllers:
        ctl = load_cluster(ws, c.cluster, references=False)
        backend = c.names.backend
        members = tuple(m for b in bindings if (b.target.kind == "iap" and b.target.name == backend)
                        or b.target.kind == "project" for m in b.members)
        rel = file.relative_to(ws.root) if file.is_relative_to(ws.root) else file
        where = None   # the binding's line: looked up only for a problem (a round-trip parse)
        for i, email in enumerate(ctl.config.auth.admin_users):
            if not EMAIL_RE.match(email):
                continue  # not an address: derive.gclb's rule says so
            verdict = admits(members, email, principals, cipher)
            if verdict != "no":
                continue
            if where is None:
                line = (loaded.line_of(("iap_backend_services", entries[backend], "name"))
                        if backend in entries else None)
                where = f"{rel}:{line}" if line else str(rel)
            granted = (f"the IAP binding of {backend} ({where}) does not admit it" if backend in entries
                       else f"the IAM file ({rel}) grants no access to {backend}")
            out.append(ctl.problem(
                ("auth", "admin_users", i),
                f"admin {redact_text(email)} of controller {c.cluster} cannot pass IAP: {granted}, and "
                f"IAP answers 403 to anyone without {ACCESSOR_ROLE} on the backend or the project "
                "(IAP \"Managing access to IAP-secured resources\")",
                f"grant it: `clusterstack iam grant <this address> --role {ACCESSOR_ROLE} --on "
                f"iap:{backend}`, or remove the admin"))
    return out
