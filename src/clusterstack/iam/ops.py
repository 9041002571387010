"""The IAM commands as library functions (the CLI in :mod:`clusterstack.cli.iam` only parses
arguments and prints). Every function that writes re-validates the new text with the loader and
runs ``iam check``'s file rules on it (:func:`unconfirmed_public_members` and the ``file_rules``
the caller passes, :func:`clusterstack.validation.iam.check_rules`) before an atomic write, so
a command never leaves an invalid or non-canonical file, nor adds a problem ``iam check`` (and
``validate``, ``plan``) would report.
"""

from __future__ import annotations

import contextlib

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from clusterstack.adapters.git import Git, GitError
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.fsutil import locked, testpoint, write_atomic, write_output
from clusterstack.iam import canonical
from clusterstack.iam.crypto import (KeysetError, KmsAeadFactory, PrincipalCipher, RotationJournal,
                                     ciphertext_key_id, gcp_kms_aead, keyset_path, load_cipher,
                                     normalize_email, normalize_kms_uri, pending_rotation,
                                     read_rotation_journal, store_cipher, store_keyset_text,
                                     write_rotation_journal)
from clusterstack.iam.loader import IamFileError, LoadedIam, load_iam, load_iam_text, parse_document
from clusterstack.iam.model import ROLE_RE, SCHEME, Encryption
from clusterstack.iam.settings import IamSettings
from clusterstack.iam.targets import (HUMAN_RE, ConditionSpec, MemberError, Target, classify_member,
                                      human_number, parse_target)
from clusterstack.redact import redact_email
from clusterstack.workspace import Workspace
from clusterstack.iam.review import review as do_review
from clusterstack.iam.scanner import (config_paths, field_at_line, personal_emails,
    scan_dangling_refs, scan_personal_emails)

LOCAL_KEYSET = ".iam/keyset.json"
KMS_KEYSET = "iam/keyset.kms.json"


def _edit_lock(path: Path):
    """The lock of a read-modify-write of the IAM file (fsutil.locked); none when the file does
    not exist — the read then fails with "IAM file not found", and no lock file (nor directory)
    is left behind by a command that changed nothing."""
    return locked(path) if path.exists() else contextlib.nullcontext()


class IamUsageError(ClusterstackError):
    """A command argument that cannot be applied to the IAM file (exit 2)."""


FileRule = Callable[[LoadedIam], Iterable[Problem]]
"""A rule of ``iam check`` over a loaded IAM file that needs more than the file (the stack's
configs): :func:`clusterstack.validation.iam.check_rules`. Returns located Problems."""


def _unwritten(loaded: LoadedIam, problems: Iterable[Problem], hint: Callable[[Problem], str]
               ) -> IamUsageError:
    """The refusal of an edit: one Problem per ``problems``, naming the field but no line — a
    line of the *edited* text does not exist in the file on disk (it could even lie past its
    end), and the cause is the command's arguments, not the file."""
    return IamUsageError(problems=[
        Problem(message=f"this change would make the file invalid: {p.message}",
                hint=f"nothing was written; {hint(p)}", file=loaded.path, field=p.field)
        for p in problems])


def personal_email_problems(loaded: LoadedIam, settings: IamSettings) -> list[Problem]:
    """A Problem per personal email in the IAM file's own text — any free-text field (a
    condition's title, description or CEL expression, a description, a comment) — by the one
    rule of ``iam check``'s repository scan (:func:`clusterstack.iam.scanner.personal_emails`:
    service accounts, groups, documentation domains and ``[iam] allow_emails`` /
    ``allow_email_domains`` are not personal), the email redacted and the field named. People
    are ``human-NNN``; their emails exist only as ciphertext (docs/iam.md)."""
    return [Problem(f"plaintext personal email {redact_email(email)}",
                    "people are `human-NNN`: grant the person by email (it is encrypted) and write "
                    "no address in a title, description or expression",
                    file=loaded.path, line=line, field=field_at_line(loaded.text, loaded.path.name, line))
            for line, email in personal_emails(loaded.text, settings)]


def _checked_text(loaded: LoadedIam, text: str, file_rules: Iterable[FileRule],
                  settings: IamSettings | None = None) -> None:
    """Refuse the would-be ``text`` of the file ``loaded`` when it does not load, or when
    ``iam check``'s file rules (:func:`unconfirmed_public_members`, with ``settings`` the
    personal-email scan :func:`personal_email_problems`, then ``file_rules``) find a problem in
    it that ``loaded`` does not already have (compared by message: the edit is refused, a
    problem already in the file is ``iam check``'s to report and must not block the command
    that fixes it). Raises IamUsageError (exit 2); nothing is written by the caller, and no
    email appears in the message (redacted)."""
    try:
        edited = load_iam_text(text, loaded.path)
    except ClusterstackError as exc:
        raise _unwritten(loaded, exc.problems, lambda _p: "fix the command's arguments") from None
    new: list[Problem] = []
    if settings is not None:  # compared by address, not by the redacted message

        had_emails = {e.lower() for _, e in personal_emails(loaded.text, settings)}
        new += [p for p, (_, e) in zip(personal_email_problems(edited, settings),
                                       personal_emails(edited.text, settings))
                if e.lower() not in had_emails]
    rules = (unconfirmed_public_members, *file_rules)
    had = {p.message for rule in rules for p in rule(loaded)}
    new += [p for rule in rules for p in rule(edited) if p.message not in had]
    if new:
        raise _unwritten(loaded, new, lambda p: p.hint or "fix the command's arguments")


def _write_checked(loaded: LoadedIam, doc, file_rules: Iterable[FileRule] = (),
                   settings: IamSettings | None = None) -> str:
    """Dump ``doc`` canonically, check it (:func:`_checked_text`), write it atomically; returns
    the text. Raises IamUsageError (exit 2, nothing written) when the edited document would not
    be a valid IAM file or would fail a rule of ``iam check``."""
    text = canonical.canonical_text(doc)
    _checked_text(loaded, text, file_rules, settings)
    write_atomic(loaded.path, text)
    return text


def check_keyset_matches(loaded: LoadedIam, cipher: PrincipalCipher) -> None:
    """Refuse a keyset that did not encrypt the file's principals (compares Tink key ids, no
    decryption) — registering under it would create a second id for an existing person."""
    # None: a ciphertext of no Tink key (listed first)
    foreign = sorted({kid for ct in loaded.model.principals.values()
                      if (kid := ciphertext_key_id(ct)) not in cipher.key_ids},
                     key=lambda kid: (kid is not None, kid or 0))
    if foreign:
        raise KeysetError(f"this keyset (key ids {list(cipher.key_ids)}) did not encrypt the "
                          f"principals of {loaded.path.name} (key ids {foreign})",
                          "use the keyset the file was encrypted with (see docs/iam.md)")


# --- init ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InitResult:
    iam_file: Path
    keyset: Path
    created_file: bool
    kms_key: str | None
    key_id: int


def _template(project: str, enc: Encryption) -> str:
    lines = ["# IAM of the GCP project, applied by its Pulumi stack. Reviewed like code; edit with",
             "# `clusterstack iam grant|revoke` (see docs/iam.md). People appear only as human-NNN;",
             "# their emails are stored encrypted under `principals`.",
             "schema_version: 1", f"project: {project}", "encryption:", f"  scheme: {enc.scheme}",
             f"  keyset: {enc.keyset}"]
    if enc.kms_key:
        lines.append(f"  kms_key: {enc.kms_key}")
    return "\n".join(lines) + "\n"


def init(settings: IamSettings, *, project: str | None, kms_key: str | None,
         kms_aead: KmsAeadFactory = gcp_kms_aead) -> InitResult:
    """Create a keyset (and the IAM file when missing).

    Local: the keyset goes to ``.iam/keyset.json`` (0600), which must be git-ignored. KMS:
    ``kms_key`` (``gcpkms://…`` or ``gcp-kms://…``) encrypts the keyset, written to
    ``iam/keyset.kms.json`` for committing. Refuses (IamUsageError) when a keyset already
    exists, or when the file already holds principals (they were encrypted under a keyset
    this one could never decrypt). Holds the IAM file's lock (fsutil.locked) like every other
    edit, the first ``init`` too: it creates the file's directory to hold the lock in, and
    removes it again (with the lock file) when it fails before writing anything.
    """
    directory = settings.file.parent
    made = [d for d in (directory, *directory.parents) if not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with locked(settings.file):
            return _init(settings, project=project, kms_key=kms_key, kms_aead=kms_aead)
    except BaseException:
        if made and not settings.file.exists():  # nothing was written: leave no directory behind
            settings.file.with_name(f".{settings.file.name}.lock").unlink(missing_ok=True)
            for d in made:  # deepest first
                with contextlib.suppress(OSError):
                    d.rmdir()
        raise


def _init(settings: IamSettings, *, project: str | None, kms_key: str | None,
          kms_aead: KmsAeadFactory) -> InitResult:
    kms = normalize_kms_uri(kms_key) if kms_key else None
    enc = Encryption(scheme=SCHEME, keyset=KMS_KEYSET if kms else LOCAL_KEYSET, kms_key=kms)
    created = not settings.file.exists()
    if not created:
        _recover(settings)
        loaded = load_iam(settings.file)
        current = loaded.model.encryption
        if loaded.model.principals:
            raise IamUsageError(
                f"{settings.file.name} already has {len(loaded.model.principals)} encrypted "
                "principal(s)", "get their keyset from a key holder (docs/iam.md); a new keyset "
                "could not decrypt them")
        if keyset_path(current, settings.root).exists():
            raise IamUsageError("already initialised: the keyset exists",
                                "nothing to do; `clusterstack iam rotate` replaces a keyset",
                                file=keyset_path(current, settings.root))
        if not kms:
            enc = current
    if not enc.kms_key:
        git = Git(settings.root)
        path = keyset_path(enc, settings.root)
        if git.is_repo() and path.is_relative_to(settings.root) and not git.is_ignored(path):
            raise IamUsageError(f"the local keyset {enc.keyset} would not be git-ignored",
                                f"add /{Path(enc.keyset).parts[0]}/ to .gitignore first")
    if created and project is None:
        raise IamUsageError("no project given for the new IAM file", "pass --project PROJECT_ID")
    cipher = PrincipalCipher.generate()
    path = store_cipher(cipher, enc, settings.root, kms_aead=kms_aead)
    if created:
        settings.file.parent.mkdir(parents=True, exist_ok=True)
        text = _template(project, enc)  # type: ignore[arg-type]
        load_iam_text(text, settings.file)
        write_atomic(settings.file, text)
    elif kms:
        loaded = load_iam(settings.file)
        doc = loaded.document
        doc["encryption"]["keyset"] = enc.keyset
        doc["encryption"]["kms_key"] = enc.kms_key
        _write_checked(loaded, doc, settings=settings)
    return InitResult(settings.file, path, created, enc.kms_key, cipher.primary_key_id)


# --- grant / revoke ---------------------------------------------------------------------------

@dataclass
class GrantResult:
    """``changed`` False: the grant already existed (revoke: it never existed → error instead).
    ``lines`` are ready to print, emails redacted."""

    changed: bool
    pid: str | None = None
    registered: bool = False
    lines: list[str] = field(default_factory=list)


def _condition(title: str | None, expression: str | None, description: str | None) -> ConditionSpec | None:
    if expression and not title:
        raise IamUsageError("a condition needs a title", "add --condition-title",
                            field="--condition-expression")
    if description and not expression:
        raise IamUsageError("--condition-description needs --condition-expression", "add both",
                            field="--condition-description")
    return ConditionSpec(title, expression, description) if title and expression else None


PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
"""IAM's public principals: anyone on the internet / anyone with a Google account (GCP IAM
docs, "Principal types": ``allUsers``, ``allAuthenticatedUsers``). Granting either is a public
disclosure, so :func:`grant` refuses it unless asked explicitly (``allow_public``)."""


def _check_public(member: str, target_spec: str, role: str, allow_public: bool) -> str | None:
    """Refuse a public member without ``allow_public``; with it, the warning line to print."""
    if member not in PUBLIC_MEMBERS:
        return None
    who = "anyone on the internet" if member == "allUsers" else "anyone with a Google account"
    if not allow_public:
        raise IamUsageError(f"{member} is {who}: granting {role} on {target_spec} makes it public",
                            "if that is really intended (a public bucket of open data), repeat with "
                            "--allow-public; otherwise grant a person, a group or a service account",
                            field="WHO")
    return f"! {member} ({who}) gets {role} on {target_spec}: this is public"


def unconfirmed_public_members(loaded: LoadedIam) -> list[Problem]:
    """A Problem per :data:`PUBLIC_MEMBERS` member of a grant without ``public: true`` — put in
    the file by hand, never confirmed the way ``iam grant --allow-public`` confirms it —
    located at the member's line (``iam check``)."""
    problems = []
    for path, target, g in loaded.model.grants():
        if g.public:
            continue
        for j, member in enumerate(g.members):
            if str(member) in PUBLIC_MEMBERS:
                where = (*path, "members", j)
                problems.append(Problem(
                    f"{member} gets {g.role} on {target.spec}: this is public, and the grant does "
                    "not say so", "if it is intended, add `public: true` to the grant (what `iam grant "
                    "--allow-public` writes); otherwise remove the member",
                    file=loaded.path, line=loaded.line_of(where),
                    field=".".join(str(k) for k in where)))
    return problems


def _check_role(role: str) -> None:
    if not re.match(ROLE_RE, role):
        raise IamUsageError(f"not a role: {role!r}", "use roles/NAME, projects/P/roles/ID or "
                            "organizations/O/roles/ID", field="--role")


def _is_email(who: str) -> bool:
    try:
        normalize_email(who)
        return True
    except ValueError:
        return False


def _next_id(principals: dict[str, str]) -> str:
    n = max((human_number(p) for p in principals), default=0) + 1
    return f"human-{n:03d}"


def _resolve_member(loaded: LoadedIam, who: str, cipher_factory, *, register: bool
                    ) -> tuple[str, str, str | None, bool]:
    """``who`` → (member, display, ciphertext-or-None, newly registered)."""
    principals = loaded.model.principals
    if HUMAN_RE.match(who):
        if who not in principals:
            raise IamUsageError(f"{who} is not a registered principal", "grant by email to register a "
                                "person, or check `clusterstack iam whois`", field="WHO")
        return who, who, None, False
    if _is_email(who):
        cipher = cipher_factory()
        check_keyset_matches(loaded, cipher)
        email = normalize_email(who)
        ct = cipher.encrypt(email)
        display = f"user:{redact_email(email)}"
        for pid, existing in principals.items():
            if existing == ct:
                return pid, f"{display} ({pid})", None, False
        if not register:
            raise IamUsageError(f"{display} is not a registered principal", "nothing to revoke",
                                field="WHO")
        pid = _next_id(principals)
        return pid, f"{display} ({pid})", ct, True
    try:
        classify_member(who)
    except MemberError as exc:
        raise IamUsageError(str(exc), "pass an email, human-NNN, or a member such as "
                            "serviceAccount:EMAIL or group:EMAIL", field="WHO") from None
    return who, who, None, False


def grant(settings: IamSettings, who: str, role: str, on: str = "project", **kwargs) -> GrantResult:
    """Grant ``role`` on target ``on`` to ``who`` (an email — registered as the next free
    ``human-NNN`` if new —, a ``human-NNN``, or a non-personal member), merging into the one
    matching grant; writes the file canonically. The keyset is read only for an email.
    Keywords: ``condition_title``, ``condition_expression``, ``condition_description``,
    ``kms_aead``, ``allow_public`` (a :data:`PUBLIC_MEMBERS` member is refused without it),
    ``file_rules`` (``iam check``'s rules over the file, run on the result: :data:`FileRule`).
    The read-modify-write holds the file's lock (fsutil.locked). Raises IamUsageError (exit 2,
    nothing written) for a bad argument or an edit that would make the file invalid or fail
    ``iam check`` (e.g. an accessor grant on a backend the stack does not declare)."""
    with _edit_lock(settings.file):
        return _grant(settings, who, role, on, **kwargs)


def _grant(settings: IamSettings, who: str, role: str, on: str = "project", *,
           condition_title: str | None = None, condition_expression: str | None = None,
           condition_description: str | None = None,
           kms_aead: KmsAeadFactory = gcp_kms_aead, allow_public: bool = False,
           file_rules: Iterable[FileRule] = ()) -> GrantResult:
    _check_role(role)
    _recover(settings)
    loaded = load_iam(settings.file)
    target = parse_target(on, loaded.model.project)
    public = _check_public(who.strip(), target.spec, role, allow_public)
    cond = _condition(condition_title, condition_expression, condition_description)
    member, display, ct, registered = _resolve_member(
        loaded, who, lambda: load_cipher(loaded.model.encryption, settings.root, kms_aead=kms_aead),
        register=True)
    doc = loaded.document
    if ct is not None:
        canonical.set_principal(doc, member, ct)
    changed = canonical.add_member(doc, target, role, cond, member, condition_title=condition_title,
                                   public=public is not None)
    cond_txt = f" if {condition_title}" if condition_title else ""
    result = GrantResult(changed=changed or registered, pid=member if HUMAN_RE.match(member) else None,
                         registered=registered)
    if public:
        result.lines.append(public)
    if registered:
        result.lines.append(f"registered {display}")
    if changed:
        result.lines.append(f"+ {display} {role} on {target.spec}{cond_txt}")
    else:
        result.lines.append(f"= {display} already has {role} on {target.spec}{cond_txt}")
    if result.changed:
        _write_checked(loaded, doc, file_rules, settings)
    return result


def revoke(settings: IamSettings, who: str, role: str, on: str = "project", **kwargs) -> GrantResult:
    """Remove ``who`` from the grant of ``role`` (and condition title) on ``on``; emptied
    grants and targets disappear, the principal stays registered (configs may reference it).
    Keywords: ``condition_title``, ``kms_aead``, ``file_rules`` (as :func:`grant`). Holds the
    file's lock (fsutil.locked). Raises IamUsageError when there is no such grant or the
    result would fail ``iam check``."""
    with _edit_lock(settings.file):
        return _revoke(settings, who, role, on, **kwargs)


def _revoke(settings: IamSettings, who: str, role: str, on: str = "project", *,
            condition_title: str | None = None, kms_aead: KmsAeadFactory = gcp_kms_aead,
            file_rules: Iterable[FileRule] = ()) -> GrantResult:
    _check_role(role)
    _recover(settings)
    loaded = load_iam(settings.file)
    target = parse_target(on, loaded.model.project)
    member, display, _, _ = _resolve_member(
        loaded, who, lambda: load_cipher(loaded.model.encryption, settings.root, kms_aead=kms_aead),
        register=False)
    doc = loaded.document
    cond_txt = f" if {condition_title}" if condition_title else ""
    if not canonical.remove_member(doc, target, role, condition_title or "", member):
        raise IamUsageError(f"{display} has no {role} on {target.spec}{cond_txt}", "nothing to revoke; "
                            "check the role, --on and --condition-title", field="WHO")
    _write_checked(loaded, doc, file_rules, settings)
    return GrantResult(changed=True, pid=member if HUMAN_RE.match(member) else None,
                       lines=[f"- {display} {role} on {target.spec}{cond_txt}"])


# --- whois / decrypt ---------------------------------------------------------------------------

def whois(settings: IamSettings, pid: str, *, kms_aead: KmsAeadFactory = gcp_kms_aead) -> dict:
    """``{"id", "email", "grants": [{"role", "target", "condition"}]}`` for one principal."""
    recover_interrupted(settings)
    loaded = load_iam(settings.file)
    if pid not in loaded.model.principals:
        raise IamUsageError(f"{pid} is not a registered principal", "list them with `clusterstack iam "
                            "decrypt --out FILE`", field="ID")
    cipher = load_cipher(loaded.model.encryption, settings.root, kms_aead=kms_aead)
    email = cipher.decrypt(loaded.model.principals[pid], pid=pid)
    grants = [{"role": b.role, "target": b.target.spec,
               "condition": b.condition.title if b.condition else None}
              for b in loaded.bindings() if pid in b.members]
    return {"id": pid, "email": email, "grants": grants}


def decrypt_to(settings: IamSettings, out: Path, *, kms_aead: KmsAeadFactory = gcp_kms_aead) -> int:
    """Write ``{human-NNN: email}`` (JSON, sorted) to ``out`` with mode 0600. Refuses a path
    inside the repository (where it could be committed). Returns the number of principals."""
    target = out.expanduser().resolve()
    roots = {settings.root.resolve()}
    git = Git(settings.root)
    if git.is_repo():
        roots.add(git.toplevel())
    if any(target == r or target.is_relative_to(r) for r in roots):
        raise IamUsageError(f"refusing to write decrypted emails inside the repository ({out})",
                            "write them outside, e.g. --out ~/iam-principals.json", field="--out")
    if not target.parent.is_dir():
        raise IamUsageError(f"directory {target.parent} does not exist", "create it first", field="--out")
    recover_interrupted(settings)
    loaded = load_iam(settings.file)
    cipher = load_cipher(loaded.model.encryption, settings.root, kms_aead=kms_aead)
    emails = {pid: cipher.decrypt(ct, pid=pid) for pid, ct in loaded.model.principals.items()}
    # clear text: only in the file the operator named (written in place, 0600 from its first
    # byte; never a temp file a kill could leave behind), or through a pipe / /dev/stdout
    write_output(out.expanduser(), json.dumps(dict(sorted(emails.items(), key=lambda kv: human_number(kv[0]))),
                                              indent=2) + "\n", mode=0o600, temp=False)
    return len(emails)


# --- rotate ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RotateResult:
    principals: int
    old_key_ids: tuple[int, ...]
    new_key_id: int
    keyset: Path
    backup: Path | None
    kms_key: str | None


def rotate(settings: IamSettings, *, new_kms_key: str | None = None,
           kms_aead: KmsAeadFactory = gcp_kms_aead, file_rules: Iterable[FileRule] = ()) -> RotateResult:
    """Re-encrypt every principal under a fresh keyset (optionally wrapped by a new KMS key).

    Ids, grants and every reference stay as they are; only ``principals`` values (and
    ``encryption`` for a new KMS key) change. Before anything is written, the new keyset is
    serialised, parsed back (through KMS when wrapped) and every new ciphertext decrypted and
    compared with the old plaintext. A local previous keyset is kept as ``<keyset>.previous``
    (0600, git-ignored with it) until the rotation is merged. The new file text is checked like
    every edit (``file_rules`` as :func:`grant`) before any file is written. The
    read-modify-write holds the IAM file's lock (fsutil.locked).

    Two files change, so the rotation is a journaled transaction
    (:class:`~clusterstack.iam.crypto.RotationJournal`, ``.iam/rotation.json``): the journal
    (holding the new keyset) is written first, then the IAM file, then the keyset, then the
    journal is removed. A kill at any point leaves the old state or the new one, never an IAM
    file its keyset cannot decrypt: the next command (:func:`recover_interrupted`) finishes the
    rotation when the IAM file was rewritten, and undoes it when it was not. Test points
    (fsutil.testpoint): ``iam-rotate:journal-written``, ``iam-rotate:iam-file-written``,
    ``iam-rotate:keyset-written``.
    """
    with _edit_lock(settings.file):
        _recover(settings)
        return _rotate(settings, new_kms_key=new_kms_key, kms_aead=kms_aead, file_rules=file_rules)


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rotate(settings: IamSettings, *, new_kms_key: str | None, kms_aead: KmsAeadFactory,
            file_rules: Iterable[FileRule]) -> RotateResult:
    loaded = load_iam(settings.file)
    enc = loaded.model.encryption
    old = load_cipher(enc, settings.root, kms_aead=kms_aead)
    check_keyset_matches(loaded, old)
    emails = {pid: old.decrypt(ct, pid=pid) for pid, ct in loaded.model.principals.items()}
    kms = normalize_kms_uri(new_kms_key) if new_kms_key else enc.kms_key
    keyset = enc.keyset if (kms is None) == (enc.kms_key is None) else (KMS_KEYSET if kms else LOCAL_KEYSET)
    new_enc = Encryption(scheme=SCHEME, keyset=keyset, kms_key=kms)
    new = PrincipalCipher.generate()
    new_cts = {pid: new.encrypt(email) for pid, email in emails.items()}
    # verify: the keyset as it will be stored must decrypt every new ciphertext to the old email
    keyset_text = new.serialize(kms_aead(kms) if kms else None)
    reread = PrincipalCipher.parse(keyset_text, kms_aead(kms) if kms else None)
    for pid, ct in new_cts.items():
        if reread.decrypt(ct, pid=pid) != emails[pid]:
            raise KeysetError(f"rotation check failed for {pid}", "nothing was written; report a bug")
    if len(set(new_cts.values())) != len(new_cts):
        raise KeysetError("two principals share one email", "run `clusterstack iam check`")
    doc = loaded.document
    for pid, ct in new_cts.items():
        doc["principals"][pid] = ct
    doc["encryption"]["keyset"] = new_enc.keyset
    if kms:
        doc["encryption"]["kms_key"] = kms
    text = canonical.canonical_text(doc)
    _checked_text(loaded, text, file_rules, settings)  # before touching any file
    backup = None
    old_path = keyset_path(enc, settings.root)
    if enc.kms_key is None:
        backup = old_path.with_name(old_path.name + ".previous")
        write_atomic(backup, old.serialize(None), mode=0o600)
    journal = RotationJournal(keyset=new_enc.keyset, kms_key=kms, keyset_text=keyset_text,
                              old_sha256=_sha256(loaded.text), new_sha256=_sha256(text),
                              old_key_ids=old.key_ids, new_key_ids=new.key_ids)
    journal_path = write_rotation_journal(journal, settings.root)
    testpoint("iam-rotate:journal-written")
    write_atomic(loaded.path, text)
    testpoint("iam-rotate:iam-file-written")
    path = store_keyset_text(keyset_text, new_enc, settings.root)
    testpoint("iam-rotate:keyset-written")
    journal_path.unlink()
    return RotateResult(len(new_cts), old.key_ids, new.primary_key_id, path, backup, kms)


def recover_interrupted(settings: IamSettings) -> list[str]:
    """Settle an ``iam rotate`` that was interrupted (killed, Ctrl-C'd, the disk full) — the
    journal ``.iam/rotation.json`` is still there — under the IAM file's lock; returns the
    lines to tell the operator (none when nothing was pending).

    The IAM file decides, by the key ids of its principals' ciphertexts (by its SHA-256 when it
    has no principal): written by the rotation → the journal's keyset is stored (the rotation
    finished); as before the rotation → the journal is dropped (undone: the old keyset still
    decrypts the file). Anything else raises KeysetError (exit 2) saying what to restore.
    Every ``clusterstack iam`` command runs this first."""
    if pending_rotation(settings.root) is None or not settings.file.is_file():
        return []
    with _edit_lock(settings.file):
        return _recover(settings)


def _recover(settings: IamSettings) -> list[str]:
    journal_path = pending_rotation(settings.root)
    if journal_path is None:
        return []
    journal = read_rotation_journal(settings.root)
    loaded = load_iam(settings.file)
    kids = {ciphertext_key_id(ct) for ct in loaded.model.principals.values()}
    rel = journal_path.relative_to(settings.root) if journal_path.is_relative_to(settings.root) else journal_path
    if kids and kids <= set(journal.new_key_ids) or not kids and _sha256(loaded.text) == journal.new_sha256:
        path = store_keyset_text(journal.keyset_text, journal.encryption, settings.root)
        journal_path.unlink()
        shown = path.relative_to(settings.root) if path.is_relative_to(settings.root) else path
        return [f"note: finished an interrupted `iam rotate`: {settings.file.name} already held the "
                f"new ciphertexts; the new keyset (key ids {list(journal.new_key_ids)}) is now at {shown}"
                " — review and commit the IAM file"]
    if kids and kids <= set(journal.old_key_ids) or not kids and _sha256(loaded.text) == journal.old_sha256:
        journal_path.unlink()
        return [f"note: undid an interrupted `iam rotate`: {settings.file.name} was never rewritten and "
                f"its keyset (key ids {list(journal.old_key_ids)}) still decrypts it; run "
                "`clusterstack iam rotate` again to rotate"]
    raise KeysetError(
        f"an interrupted `iam rotate` left {rel}, and {settings.file.name} matches neither the keyset "
        "before it nor the one after it (it was edited since)",
        f"restore {settings.file.name} from git (`git checkout -- {settings.file.name}`) and run any "
        f"`clusterstack iam` command; it then settles the rotation", file=journal_path)


def fmt(settings: IamSettings, *, file_rules: Iterable[FileRule] = ()) -> bool:
    """Rewrite the IAM file in canonical form; returns True when it changed. The new text is
    checked like every edit (``file_rules`` as :func:`grant`). Holds the file's lock
    (fsutil.locked) from the read to the write."""
    with _edit_lock(settings.file):
        return _fmt(settings, file_rules)


def _fmt(settings: IamSettings, file_rules: Iterable[FileRule]) -> bool:
    _recover(settings)
    loaded = load_iam(settings.file)
    text = canonical.canonical_text(parse_document(loaded.text, loaded.path))
    if text == loaded.text:
        return False
    _checked_text(loaded, text, file_rules, settings)
    write_atomic(loaded.path, text)
    return True


# --- check -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckReport:
    """What ``iam check`` looked at, and every problem found (empty = pass)."""

    problems: tuple[Problem, ...]
    tracked_files: int
    principals: int
    bindings: int


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), start=1):
        if x != y:
            return i
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def check(settings: IamSettings, ws: Workspace, *, required_emails: tuple[str, ...] = (),
          file_rules: Iterable[FileRule] = ()) -> CheckReport:
    """CI's IAM gate, no keyset needed: the IAM file's schema and cross-entry rules, its
    canonical form, no plaintext personal email in any git-tracked file (``required_emails``,
    the addresses the configs require — :func:`clusterstack.validation.iam.config_addresses` —
    are accepted), and no ``human-NNN`` in a config that names no principal. ``file_rules``:
    the rules over the loaded file that need the stack's configs too, shared with ``validate``
    and the program (:func:`clusterstack.validation.iam.check_rules`: accessor grants name an
    IAP backend the stack declares); run only when the file loads, their Problems reported
    with the rest. Raises GitError outside a git checkout."""
    import dataclasses


    settings = dataclasses.replace(settings, allow_emails=settings.allow_emails
                                   + tuple(a.lower() for a in required_emails))

    problems: list[Problem] = []
    loaded: LoadedIam | None = None
    try:
        loaded = load_iam(settings.file)
    except IamFileError as exc:
        problems.extend(exc.problems)
    if loaded is not None:
        want = canonical.canonical_text(parse_document(loaded.text, loaded.path))
        if want != loaded.text:
            problems.append(Problem("not in canonical form", "run `clusterstack iam fmt` and commit "
                                    "the result", file=loaded.path,
                                    line=_first_difference(loaded.text, want)))
    if loaded is not None:
        problems.extend(unconfirmed_public_members(loaded))
        for rule in file_rules:
            problems.extend(rule(loaded))
    git = Git(settings.root)
    if not git.is_repo():
        raise GitError("iam check scans the git-tracked files: this is not a git checkout",
                       "run it inside the repository")
    tracked = git.tracked_files()
    top = git.toplevel()
    if loaded is not None and (settings.file.resolve().relative_to(top).as_posix()
                               if settings.file.resolve().is_relative_to(top) else None) not in tracked:
        problems.extend(personal_email_problems(loaded, settings))  # not tracked yet: scanned here
    for f in scan_personal_emails(top, tracked, settings):
        problems.append(Problem(f.message, "remove it (people are encrypted as human-NNN); if it is "
                                "not a person's, list it in [iam] allow_emails (one address) or its "
                                "domain in [iam] allow_email_domains in clusterstack.toml",
                                file=Path(f.path), line=f.line, field=f.field))

    def rel(p: Path) -> str:
        return p.resolve().relative_to(top).as_posix() if p.resolve().is_relative_to(top) else str(p)

    configs = config_paths(tracked, rel(ws.clusters_dir), rel(ws.project_dir), rel(settings.file))
    known = set(loaded.model.principals) if loaded is not None else set()
    if loaded is not None:
        for f in scan_dangling_refs(top, configs, known):
            problems.append(Problem(f.message, "register the person with `clusterstack iam grant` "
                                    "or fix the id", file=Path(f.path), line=f.line,
                                    field=f.field))
    return CheckReport(tuple(problems), len(tracked), len(known),
                       len(loaded.bindings()) if loaded is not None else 0)


def review_diff(settings: IamSettings, ws: Workspace, *, base: str = "HEAD", head: str | None = None,
                redact: bool = False, warn: Callable[[str], None] = lambda _line: None,
                kms_aead: KmsAeadFactory = gcp_kms_aead):
    """``iam review``: who gains or loses which role on what between ``base`` and ``head``
    (None: the working tree) — the IAM file's text at both, and the ``human-NNN`` lines changed
    in the git-tracked cluster configs and stack files (:meth:`Git.changed_lines`).

    People are compared by decrypted email, never by id. Base ciphertexts the current keyset
    cannot read are tried with the previous local keyset (``<keyset>.previous``, kept by
    ``iam rotate``) and the base revision's committed KMS-wrapped keyset. A keyset that does
    not load is a ``warn`` line and the review runs without decryption. Returns the
    :class:`clusterstack.iam.review` result (``changes``, ``notes``, ``incomplete``). Raises
    GitError (unknown revision, not a checkout), IamFileError (no IAM file at ``head``). A ``warn`` line shows
    paths relative to the workspace root, as every other message does."""
    recover_interrupted(settings)
    git = Git(settings.root)
    top = git.toplevel()
    rel = settings.file.resolve().relative_to(top).as_posix()
    base_text = git.show(base, rel)
    if head is None:
        head_text = settings.file.read_text(encoding="utf-8") if settings.file.is_file() else None
    else:
        head_text = git.show(head, rel)
    if head_text is None:
        raise IamFileError("the IAM file does not exist in the reviewed revision", "nothing to review",
                           file=settings.file)
    head_loaded = load_iam_text(head_text, Path(f"{head or 'worktree'}:{rel}"))
    try:
        cipher = load_cipher(head_loaded.model.encryption, settings.root, kms_aead=kms_aead)
    except KeysetError as exc:
        warn(f"warning: {exc.problems[0].render(settings.root)}")  # paths as every message shows them
        cipher = None

    def r(p: Path) -> str:
        return p.resolve().relative_to(top).as_posix()

    configs = config_paths(git.tracked_files(), r(ws.clusters_dir), r(ws.project_dir), rel)
    lines = [cl for cl in git.changed_lines(base, head, configs) if "human-" in cl.text]
    base_ciphers = (_base_ciphers(git, base, base_text, settings.root, rel, cipher, kms_aead)
                    if cipher is not None else ())
    return do_review(base_text, head_text, base_label=f"{base}:{rel}", head_label=f"{head or 'worktree'}:{rel}",
                     cipher=cipher, config_lines=lines, redact=redact, base_ciphers=base_ciphers)


def _base_ciphers(git: Git, base: str, base_text: str | None, root: Path, rel: str, current,
                  kms_aead: KmsAeadFactory) -> tuple:
    """Keysets besides ``current`` that may read the base revision's principals: the local
    ``<keyset>.previous`` that ``iam rotate`` keeps, and the base revision's committed
    KMS-wrapped keyset (read from git). Unreadable candidates are skipped."""
    found = []
    if base_text is None:
        return ()
    try:
        enc = load_iam_text(base_text, Path(f"{base}:{rel}")).model.encryption
    except IamFileError:
        return ()  # review() reports the broken base itself
    path = keyset_path(enc, root)
    candidates: list[tuple[str, str | None]] = []
    previous = path.with_name(path.name + ".previous")
    if previous.is_file():
        candidates.append((previous.read_text(encoding="utf-8"), None))
    if enc.kms_key:
        text = git.show(base, path.relative_to(git.toplevel()).as_posix())
        if text is not None:
            candidates.append((text, enc.kms_key))
    for text, kms_key in candidates:
        try:
            found.append(PrincipalCipher.parse(text, kms_aead(kms_key) if kms_key else None))
        except Exception:  # noqa: BLE001 — a candidate keyset that does not load is just not used
            continue
    return tuple(c for c in found if c.key_ids != current.key_ids)


__all__ = ["FileRule", "GrantResult", "IamFileError", "IamUsageError", "InitResult", "RotateResult", "Target",
           "CheckReport", "check", "check_keyset_matches", "decrypt_to", "fmt", "grant", "init",
           "personal_email_problems", "recover_interrupted", "review_diff", "revoke", "rotate", "whois"]
