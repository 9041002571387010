"""``clusterstack iam adopt``: bring an existing IAM declaration into the IAM file.

The one format read today is Marin's ``iam_data.yaml`` (:mod:`clusterstack.iam.marin`). Every
grant becomes an additive grant of the file on the same target, role, condition and member —
planned with the pulumi-gcp ``*IAMMember`` resource Marin declares, with Marin's inputs
(:mod:`clusterstack.components.gcp.iam`) — so the members clusterstack plans are Marin's, one
for one. Marin's custom roles and owned service accounts are declared as they are.

People, the part that must never leak:

- Marin stores each person as a Cloud KMS ciphertext of the bare email under its ``kms`` key
  in the project (``iam_kms.py`` @ 60ff7748). Each is decrypted once, in memory, through the
  one KMS adapter (:data:`clusterstack.iam.crypto.KmsAeadFactory`, Tink's ``gcpkms``: Cloud KMS
  Decrypt, no additional authenticated data — Marin encrypts without), checked to be an email,
  re-encrypted with the IAM file's keyset (deterministic AES256-SIV,
  :class:`~clusterstack.iam.crypto.PrincipalCipher`) and dropped. The email is never written
  (not to the file, not to a temporary file: :func:`clusterstack.fsutil.write_atomic` writes
  the new IAM file's text, which holds ciphertexts only), never printed, never part of an error
  (a value that is not an email is reported by id only), never logged.
- Emails are lower-cased (:func:`~clusterstack.iam.crypto.normalize_email`: one person, one
  ciphertext). A ``user:`` member differing from Marin's only in case is no change to the
  provider (terraform-provider-google ``tpgiamresource/iam.go`` ``iamMemberCaseDiffSuppress``:
  emails compare case-insensitively).
- Ids: a person already registered (the same email → the same deterministic ciphertext) keeps
  the file's id; otherwise Marin's ``human-NNN`` is kept when the file does not use it, else the
  person gets the next free id (after every id of the file and of Marin's file). Two Marin ids
  of one person (KMS ciphertexts are not deterministic) become one id.
- Service accounts, groups, domains and workload-identity principals are not personal and stay
  as they are (docs/iam.md; :func:`clusterstack.redact.redact_text` keeps
  ``*.gserviceaccount.com``).

Public members (``allUsers``, ``allAuthenticatedUsers``) are public in Marin's file already: the
grant gets ``public: true`` (the file's confirmation, :func:`clusterstack.iam.ops.grant`
``--allow-public``) and the result lists each one so the operator sees it.

The edit is the IAM file's one edit discipline (:mod:`clusterstack.iam.ops`): the file's lock
(fsutil.locked) from read to write, the would-be text checked like every edit (the loader and
``iam check``'s file rules; nothing written on a problem, exit 2), one atomic write, canonical
bytes — the same inputs give the same file, and adopting twice changes nothing the second time.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from clusterstack.fsutil import write_atomic
from clusterstack.iam import canonical
from clusterstack.iam.crypto import KmsAeadFactory, PrincipalCipher, gcp_kms_aead, load_cipher, normalize_email
from clusterstack.iam.loader import LoadedIam, load_iam
from clusterstack.iam.marin import LoadedMarin, MarinIamError, load_marin, marin_grants
from clusterstack.iam.settings import IamSettings
from clusterstack.iam.targets import HUMAN_RE, human_number
from clusterstack.iam.ops import _checked_text, _edit_lock, check_keyset_matches

PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


@dataclass
class AdoptResult:
    """What ``iam adopt`` did. ``members``: the input's members per target kind (what Marin
    plans); ``added``: members new to the file; ``ids``: Marin id → file id of every person;
    ``registered``: ids new to the file; ``public``: one line per public member; ``lines``:
    ready to print (ids only, never an email)."""

    changed: bool
    members: dict[str, int]
    added: int
    custom_roles: int
    service_accounts: int
    ids: dict[str, str]
    registered: tuple[str, ...]
    public: tuple[str, ...]
    lines: list[str] = field(default_factory=list)


def adopt(settings: IamSettings, source: Path, *, kms_aead: KmsAeadFactory = gcp_kms_aead,
          file_rules: Iterable = ()) -> AdoptResult:
    """Convert Marin's ``iam_data.yaml`` at ``source`` into the IAM file of ``settings``
    (which must exist: ``clusterstack iam init``; its ``project`` is Marin's project, which
    Marin's file does not name). ``file_rules``: ``iam check``'s rules over the file
    (:data:`clusterstack.iam.ops.FileRule`), run on the would-be file.

    Raises MarinIamError (``source`` missing, unreadable or not in Marin's format — each
    problem at its line —, a principal that does not decrypt with Marin's key or not to an
    email), IamFileError / KeysetError (the IAM file or its keyset), IamUsageError (the result
    would break a rule of ``iam check``: nothing written). Exit 2 for all."""
    marin = load_marin(source)  # before the lock: a bad input file touches nothing
    with _edit_lock(settings.file):
        return _adopt(settings, marin, kms_aead=kms_aead, file_rules=file_rules)


def _problem(marin: LoadedMarin, path: tuple[str | int, ...], message: str, hint: str) -> MarinIamError:
    return MarinIamError(problems=[marin.document.problem(path, message, hint)])


def _decrypt_people(marin: LoadedMarin, project: str, kms_aead: KmsAeadFactory) -> dict[str, str]:
    """Marin id → normalised email, in memory only. Raises MarinIamError (by id, never with a
    decrypted value) when Marin's key cannot be used or a plaintext is not an email."""
    import tink

    data = marin.data
    uri = f"gcp-kms://{data.crypto_key(project)}"
    hint = (f"adopting needs Cloud KMS Decrypt on Marin's key {data.crypto_key(project)} "
            "(roles/cloudkms.cryptoKeyDecrypter) and application-default credentials "
            "(`gcloud auth application-default login`)")
    try:
        key = kms_aead(uri)
    except (tink.TinkError, ValueError) as exc:
        raise _problem(marin, ("kms",), f"cannot use the Cloud KMS key {uri}: {type(exc).__name__}", hint) from None
    people: dict[str, str] = {}
    for pid in sorted(data.principals, key=human_number):
        try:
            plain = key.decrypt(base64.b64decode(data.principals[pid]), b"")
        except (tink.TinkError, ValueError) as exc:
            # TinkError wraps the API error (permission, not found, invalid ciphertext): no plaintext
            raise _problem(marin, ("principals", pid), f"does not decrypt with {uri} "
                           f"({type(exc).__name__}: {str(exc)[:160]})", hint) from None
        try:
            people[pid] = normalize_email(plain.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _problem(marin, ("principals", pid), "does not decrypt to an email address",
                           "Marin encrypts the bare email (iam_kms.py encrypt_email); check this "
                           "principal with Marin's tooling") from None
    return people


def _assign_ids(marin_people: dict[str, str], loaded: LoadedIam, cipher: PrincipalCipher
                ) -> tuple[dict[str, str], dict[str, str]]:
    """``(Marin id → file id, new file id → ciphertext)``: the rule of the module docstring."""
    existing = {ct: pid for pid, ct in loaded.model.principals.items()}
    used = set(loaded.model.principals)
    ids: dict[str, str] = {}
    new: dict[str, str] = {}
    by_ct: dict[str, str] = {}
    later: list[tuple[str, str]] = []
    for mpid, email in marin_people.items():   # sorted by number (_decrypt_people)
        ct = cipher.encrypt(email)
        if ct in existing:
            ids[mpid] = existing[ct]
        elif ct in by_ct:
            ids[mpid] = by_ct[ct]
        elif mpid not in used:
            ids[mpid] = by_ct[ct] = mpid
            used.add(mpid)
            new[mpid] = ct
        else:
            later.append((mpid, ct))
    n = max((human_number(p) for p in (*used, *marin_people)), default=0)
    for mpid, ct in later:
        if ct in by_ct:
            ids[mpid] = by_ct[ct]
            continue
        n += 1
        pid = f"human-{n:03d}"
        ids[mpid] = by_ct[ct] = pid
        new[pid] = ct
    return ids, new


def _declare_roles_and_accounts(doc, marin: LoadedMarin, loaded: LoadedIam) -> tuple[int, int]:
    """Add Marin's custom roles and owned service accounts to the document; an entry the file
    already declares must be the same (else MarinIamError at Marin's line). Returns how many
    were added."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    have_roles = {r.role_id: r for r in loaded.model.custom_roles}
    have_accounts = {a.account_id: a for a in loaded.model.owned_service_accounts}
    roles = accounts = 0
    for i, r in enumerate(marin.data.custom_roles):
        mine = have_roles.get(r.role_id)
        if mine is not None:
            if (mine.title, mine.description, sorted(mine.permissions), mine.stage) != \
                    (r.title, r.description, sorted(r.permissions), "GA"):
                raise _problem(marin, ("custom_roles", i, "role_id"), f"custom role {r.role_id} is "
                               "declared differently in the IAM file",
                               "make the two definitions the same (or remove the IAM file's) first")
            continue
        entry = CommentedMap()
        entry["role_id"], entry["title"] = r.role_id, r.title
        if r.description:
            entry["description"] = r.description
        entry["permissions"] = CommentedSeq(r.permissions)
        doc.setdefault("custom_roles", CommentedSeq()).append(entry)
        have_roles[r.role_id] = r  # type: ignore[assignment]  (a later duplicate compares against it)
        roles += 1
    for i, a in enumerate(marin.data.owned_service_accounts):
        mine = have_accounts.get(a.account_id)
        if mine is not None:
            if mine.display_name != a.display_name:
                raise _problem(marin, ("owned_service_accounts", i, "display_name"), f"service account "
                               f"{a.account_id} has another display_name in the IAM file",
                               "make the two the same first")
            continue
        entry = CommentedMap()
        entry["account_id"], entry["display_name"] = a.account_id, a.display_name
        doc.setdefault("owned_service_accounts", CommentedSeq()).append(entry)
        have_accounts[a.account_id] = a  # type: ignore[assignment]
        accounts += 1
    return roles, accounts


def _adopt(settings: IamSettings, marin: LoadedMarin, *, kms_aead: KmsAeadFactory,
           file_rules: Iterable) -> AdoptResult:
    loaded = load_iam(settings.file)
    project = loaded.model.project
    cipher = load_cipher(loaded.model.encryption, settings.root, kms_aead=kms_aead)
    check_keyset_matches(loaded, cipher)
    grants = marin_grants(marin.data, project)
    people = _decrypt_people(marin, project, kms_aead)
    ids, new = _assign_ids(people, loaded, cipher)
    del people  # the emails are not needed past this point

    doc = loaded.document
    if new:
        from ruamel.yaml.comments import CommentedMap

        if doc.get("principals") is None:
            doc["principals"] = CommentedMap()
        for pid in sorted(new, key=human_number):
            doc["principals"][pid] = new[pid]
    roles, accounts = _declare_roles_and_accounts(doc, marin, loaded)

    counts: Counter[str] = Counter()
    added = 0
    public: list[str] = []
    for g in grants:
        members = [ids[m] if HUMAN_RE.match(m) else m for m in g.members]
        counts[g.target.kind] += len(members)
        is_public = [m for m in members if m in PUBLIC_MEMBERS]
        for m in is_public:
            public.append(f"! {m} gets {g.role} on {g.target.spec}: public in Marin's file, kept "
                          "(the grant says public: true)")
        try:
            added += canonical.add_members(doc, g.target, g.role, g.condition, members, public=bool(is_public))
        except canonical.EditError as exc:
            raise _problem(marin, (*g.path, "condition"), exc.problems[0].message, exc.problems[0].hint or "") from None

    text = canonical.canonical_text(doc)
    changed = text != loaded.text
    if changed:
        _checked_text(loaded, text, file_rules)
        write_atomic(loaded.path, text)
    registered = tuple(sorted(new, key=human_number))
    result = AdoptResult(changed=changed, members=dict(sorted(counts.items())), added=added,
                         custom_roles=roles, service_accounts=accounts, ids=ids,
                         registered=registered, public=tuple(public))
    result.lines = _lines(result, marin, loaded)
    return result


def _lines(r: AdoptResult, marin: LoadedMarin, loaded: LoadedIam) -> list[str]:
    total = sum(r.members.values())
    kinds = ", ".join(f"{k} {n}" for k, n in r.members.items())
    out = [*r.public,
           f"{marin.path.name}: {total} member(s) ({kinds}), {len(marin.data.custom_roles)} custom role(s), "
           f"{len(marin.data.owned_service_accounts)} owned service account(s), {len(r.ids)} person(s)"]
    if r.registered:
        out.append(f"registered {len(r.registered)} person(s): {_span(r.registered)} (emails stored "
                   "encrypted only; `clusterstack iam whois ID` shows one)")
    moved = {m: f for m, f in r.ids.items() if m != f}
    if moved:
        out.append("Marin id → IAM file id where they differ: "
                   + ", ".join(f"{m} → {f}" for m, f in sorted(moved.items(), key=lambda kv: human_number(kv[0]))))
    if r.changed:
        out.append(f"+ {r.added} member(s), {r.custom_roles} custom role(s), {r.service_accounts} owned "
                   f"service account(s) added to {loaded.path.name} (additive: nobody loses access)")
    else:
        out.append(f"= {loaded.path.name} already holds all of it: nothing written")
    return out


def _span(ids: tuple[str, ...]) -> str:
    return ", ".join(ids) if len(ids) <= 6 else f"{ids[0]} … {ids[-1]}"


__all__ = ["AdoptResult", "adopt"]
