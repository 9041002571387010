"""Encryption of principals: Tink deterministic AEAD (AES256-SIV) over the bare email.

Why deterministic: the same email always gives the same ciphertext under one keyset, so a
person registered twice is caught by comparing ciphertexts (no decryption needed), ``grant``
finds an existing principal by encrypting the email it was given, and re-running a command
never churns the file. What it gives up (an observer can tell that two ciphertexts are equal)
is exactly what the file shows anyway (one id per person). Source: Tink "Deterministic AEAD"
primitive docs; RFC 5297 (SIV).

Every ciphertext is bound to :data:`PRINCIPAL_AD` (associated data), so a ciphertext of this
tool cannot be replayed into another context that uses the same keyset.

Where the keyset lives (``encryption:`` of the IAM file):

- local (default): ``keyset`` is a cleartext Tink JSON keyset, created by ``iam init``,
  mode 0600 and git-ignored;
- production: ``kms_key: gcp-kms://projects/…/cryptoKeys/…`` — ``keyset`` is the keyset
  encrypted with that Cloud KMS key (Tink ``json_proto_keyset_format.serialize_encrypted``
  with :data:`KEYSET_AD`); it is safe to commit, and Cloud KMS *decrypt* permission is all a
  reader (the preview-only CI) needs. The KMS call goes through :mod:`clusterstack.adapters.kms` (Tink's ``gcpkms`` integration; ``Clients.kms``).

Key material is never printed, logged or passed to Pulumi: only key *ids* (public metadata of
a Tink keyset, also the 4 bytes after the first of each ciphertext) appear in messages.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tink
from tink import aead, daead, secret_key_access

from clusterstack.adapters.kms import Kms, gcp_kms_aead
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import write_atomic
from clusterstack.iam.model import SCHEME, Encryption
from clusterstack.iam.targets import EMAIL_RE
from clusterstack.config.document import json_loads, read_text
from clusterstack.workspace.paths import confined

PRINCIPAL_AD = b"clusterstack/iam/principal/v1"
"""Associated data of every principal ciphertext (fixed: changing it orphans every ciphertext)."""
KEYSET_AD = b"clusterstack/iam/keyset/v1"
"""Associated data of the KMS-encrypted keyset."""

PAD_TO = 32
"""Plaintexts are NUL-padded to a multiple of this many bytes, so a ciphertext's length tells
only whether an email is longer than 32, 64, … characters, not its exact length."""

daead.register()
aead.register()

KmsAeadFactory = Kms
"""``gcp-kms://…`` key URI → a Tink AEAD backed by that Cloud KMS key
(:class:`clusterstack.adapters.kms.Kms`; the default, :func:`~clusterstack.adapters.kms.gcp_kms_aead`)."""


class KeysetError(ClusterstackError):
    """The keyset is missing, unreadable, or does not match the IAM file (exit 2)."""


_KMS_URI = re.compile(r"^(?:gcp-kms|gcpkms)://(projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+)$")


def normalize_kms_uri(uri: str) -> str:
    """Accept ``gcpkms://…`` or Tink's ``gcp-kms://…``; return the Tink form.

    Raises KeysetError when ``uri`` is not a crypto key URI.
    """
    m = _KMS_URI.match(uri.strip())
    if not m:
        raise KeysetError(f"not a Cloud KMS key URI: {uri!r}",
                          "use gcp-kms://projects/P/locations/L/keyRings/R/cryptoKeys/K", field="--kms-key")
    return f"gcp-kms://{m.group(1)}"


def normalize_email(email: str) -> str:
    """Trim and lower-case an email (Google account addresses are case-insensitive), so one
    person has one ciphertext. Raises ValueError for something that is not an email."""
    e = email.strip()
    if e.startswith("user:"):
        e = e[len("user:"):]
    if not EMAIL_RE.match(e):
        raise ValueError(f"not an email address: {email!r}")
    return e.lower()


def ciphertext_key_id(ciphertext: str) -> int | None:
    """The Tink key id a ciphertext was made with (bytes 1–4, big-endian), or None."""
    try:
        raw = base64.b64decode(ciphertext, validate=True)
    except ValueError:
        return None
    return int.from_bytes(raw[1:5], "big") if len(raw) >= 5 and raw[0] == 1 else None


class PrincipalCipher:
    """Encrypts and decrypts principal emails with one Tink keyset (deterministic AEAD)."""

    def __init__(self, handle: tink.KeysetHandle) -> None:
        self._handle = handle
        self._primitive = handle.primitive(daead.DeterministicAead)

    @classmethod
    def generate(cls) -> "PrincipalCipher":
        """A fresh keyset with one AES256-SIV key (Tink's ``AES256_SIV`` template)."""
        return cls(tink.new_keyset_handle(daead.deterministic_aead_key_templates.AES256_SIV))

    @property
    def key_ids(self) -> tuple[int, ...]:
        return tuple(sorted(k.key_id for k in self._handle.keyset_info().key_info))

    @property
    def primary_key_id(self) -> int:
        return self._handle.keyset_info().primary_key_id

    def encrypt(self, email: str) -> str:
        """Base64 ciphertext of the normalized ``email``. Raises ValueError for a non-email."""
        plain = normalize_email(email).encode()
        plain += b"\0" * (-len(plain) % PAD_TO)
        raw = self._primitive.encrypt_deterministically(plain, PRINCIPAL_AD)
        return base64.b64encode(raw).decode("ascii")

    def decrypt(self, ciphertext: str, *, pid: str = "") -> str:
        """The email inside ``ciphertext``. Raises KeysetError when it does not decrypt."""
        try:
            return self._primitive.decrypt_deterministically(
                base64.b64decode(ciphertext, validate=True), PRINCIPAL_AD).rstrip(b"\0").decode()
        except (tink.TinkError, ValueError):
            kid = ciphertext_key_id(ciphertext)
            raise KeysetError(
                f"principal {pid or '?'} does not decrypt with this keyset (ciphertext key id "
                f"{kid}, keyset key ids {list(self.key_ids)})",
                "use the keyset the file was encrypted with (see docs/iam.md)") from None

    def serialize(self, kms: aead.Aead | None) -> str:
        """Tink JSON: cleartext when ``kms`` is None, else encrypted with ``kms`` (KEYSET_AD)."""
        if kms is None:
            return tink.json_proto_keyset_format.serialize(self._handle, secret_key_access.TOKEN)
        return tink.json_proto_keyset_format.serialize_encrypted(self._handle, kms, KEYSET_AD)

    @classmethod
    def parse(cls, text: str, kms: aead.Aead | None) -> "PrincipalCipher":
        """Inverse of :meth:`serialize`. Raises tink.TinkError on a bad or foreign keyset."""
        if kms is None:
            return cls(tink.json_proto_keyset_format.parse(text, secret_key_access.TOKEN))
        return cls(tink.json_proto_keyset_format.parse_encrypted(text, kms, KEYSET_AD))


def keyset_path(enc: Encryption, root: Path) -> Path:
    """Where the keyset of ``enc`` lives: ``<root>/<encryption.keyset>``, resolved.

    Rule (docs/iam.md "Keys"): the keyset is inside the workspace root — ``.iam/keyset.json``
    (git-ignored, local) or ``iam/keyset.kms.json`` (committed, KMS-wrapped). The model refuses
    an absolute path or a ``..`` part at its line; here, with symlinks followed, a link out of
    the root or a dangling link raises KeysetError (exit 2) — a reviewed file never makes the
    tool read a file elsewhere (``keyset: ../../../../etc/passwd``)."""
    return confined(Path(root) / enc.keyset, root, what="the keyset", error=KeysetError)


def check_keyset_mode(path: Path) -> None:
    """Refuse a cleartext keyset that anyone but its owner may read or write (``mode & 0o077``).

    Refused, not warned about: this key decrypts every person of the IAM file, a warning scrolls
    by unread (in a CI log above all), and the fix is one ``chmod 600``. The rule is OpenSSH's for
    private keys (``sshkey_perm_ok`` in ``authfile.c``: "UNPROTECTED PRIVATE KEY FILE!" and the
    key is ignored when ``st_mode & 077``). A missing file passes here (the reader says so); on a
    system without POSIX modes nothing is checked. Raises KeysetError (exit 2)."""
    if os.name != "posix":
        return
    try:
        st = path.stat()
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
        raise KeysetError(f"the keyset is readable or writable by others (mode {stat.S_IMODE(st.st_mode):04o})",
                          f"it decrypts every person of the IAM file: `chmod 600 {path}` (the tool writes "
                          "it 0600), and ask who else could have read it", file=path)


def load_cipher(enc: Encryption, root: Path, *, kms_aead: KmsAeadFactory = gcp_kms_aead) -> PrincipalCipher:
    """Read the keyset named by ``enc`` (relative to ``root``).

    Raises KeysetError when the file is missing (hint: ``iam init`` or get the keyset), is not
    a keyset, or (KMS) cannot be decrypted with the key — and while an interrupted ``iam
    rotate`` is pending (:func:`pending_rotation`): the IAM file and the keyset may then be of
    two different rotations, and the message names the one command that settles it.
    """
    if (journal := pending_rotation(root)) is not None:
        raise KeysetError("an `iam rotate` was interrupted before it finished: the IAM file and "
                          "the keyset may not match yet", "run `clusterstack iam rotate --resume` (it "
                          "finishes the rotation or undoes it; any `clusterstack iam` command does too)",
                          file=journal)
    path = keyset_path(enc, root)

    hint = ("the keyset is not in the repository on purpose: ask a key holder for it (see "
            "docs/iam.md), or start a new IAM file with `clusterstack iam init`")
    if enc.kms_key:
        hint = "the KMS-encrypted keyset is committed: restore it from git"
    if not enc.kms_key:
        check_keyset_mode(path)
    # The loader's hygiene: a directory, a non-UTF-8 byte or a control character is exit 2.
    text = read_text(path, missing="keyset file not found", missing_hint=hint, error=KeysetError)
    try:
        kms = kms_aead(enc.kms_key) if enc.kms_key else None
        cipher = PrincipalCipher.parse(text, kms)
    except (tink.TinkError, ValueError) as exc:
        what = "cannot decrypt the keyset with " + enc.kms_key if enc.kms_key else "not a Tink keyset"
        # TinkError text may name the KMS key or API error; it never holds key material.
        raise KeysetError(f"{what}: {type(exc).__name__}", "check the file and your KMS access",
                          file=path) from None
    return cipher


def store_cipher(cipher: PrincipalCipher, enc: Encryption, root: Path, *,
                 kms_aead: KmsAeadFactory = gcp_kms_aead) -> Path:
    """Write the keyset where ``enc`` says, atomically: 0600 cleartext (local) or 0644 encrypted
    with ``enc.kms_key``. Returns the path."""
    return store_keyset_text(cipher.serialize(kms_aead(enc.kms_key) if enc.kms_key else None), enc, root)


def store_keyset_text(text: str, enc: Encryption, root: Path) -> Path:
    """Write an already serialised keyset (:meth:`PrincipalCipher.serialize`) where ``enc``
    says, atomically, with its mode (0644 KMS-wrapped, 0600 cleartext). Returns the path."""
    path = keyset_path(enc, root)
    if enc.kms_key:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text, mode=0o644)
    else:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, text, mode=0o600)
    return path


# --- the rotation journal ----------------------------------------------------------------------

#: Where ``iam rotate`` journals a rotation in progress (relative to the workspace root): the
#: git-ignored, 0700 directory of the local keyset (docs/iam.md "Keys").
ROTATION_JOURNAL = ".iam/rotation.json"
#: The journal's format marker.
JOURNAL_FORMAT = "clusterstack.iam-rotation/v1"


@dataclass(frozen=True)
class RotationJournal:
    """A rotation in progress, written before the IAM file or the keyset is touched, removed
    once both are: the new keyset as it will be stored (``keyset_text``, cleartext Tink JSON or
    KMS-wrapped, for ``encryption`` ``keyset``/``kms_key``), the SHA-256 of the IAM file before
    and after, and the key ids of both keysets — enough for the next command to finish the
    rotation (the IAM file already holds the new ciphertexts: store the keyset) or undo it (it
    does not: drop the journal). Key material is in it exactly as in the keyset file, and it
    lives beside the local keyset, 0600 in a 0700 directory."""

    keyset: str
    kms_key: str | None
    keyset_text: str
    old_sha256: str
    new_sha256: str
    old_key_ids: tuple[int, ...]
    new_key_ids: tuple[int, ...]

    @property
    def encryption(self) -> Encryption:
        return Encryption(scheme=SCHEME, keyset=self.keyset, kms_key=self.kms_key)

    def dumps(self) -> str:
        return json.dumps({"format": JOURNAL_FORMAT, "keyset": self.keyset, "kms_key": self.kms_key,
                           "keyset_text": self.keyset_text, "old_sha256": self.old_sha256,
                           "new_sha256": self.new_sha256, "old_key_ids": list(self.old_key_ids),
                           "new_key_ids": list(self.new_key_ids)}, indent=2, sort_keys=True) + "\n"


def pending_rotation(root: Path) -> Path | None:
    """The journal of an interrupted ``iam rotate`` under ``root``, or None."""
    path = Path(root) / ROTATION_JOURNAL
    return path if os.path.lexists(path) else None


def write_rotation_journal(journal: RotationJournal, root: Path) -> Path:
    """Write ``journal`` (0600, atomically, its directory 0700). Returns its path."""
    path = Path(root) / ROTATION_JOURNAL
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(path, journal.dumps(), mode=0o600)
    return path


def read_rotation_journal(root: Path) -> RotationJournal:
    """The pending journal under ``root``. Raises KeysetError (exit 2) when it cannot be read
    or is not one (the message says what to do by hand)."""
    path = Path(root) / ROTATION_JOURNAL
    text = read_text(path, missing="the rotation journal disappeared", error=KeysetError)
    hint = (f"it is not a journal clusterstack wrote: if the IAM file decrypts with the keyset "
            f"(`clusterstack iam whois human-001` after moving it away), delete {ROTATION_JOURNAL}; "
            "otherwise restore the IAM file and the keyset from before the rotation")
    try:
        doc = json_loads(text)
        if not isinstance(doc, dict) or doc.get("format") != JOURNAL_FORMAT:
            raise ValueError("not a rotation journal")
        return RotationJournal(keyset=str(doc["keyset"]), kms_key=doc.get("kms_key"),
                               keyset_text=str(doc["keyset_text"]), old_sha256=str(doc["old_sha256"]),
                               new_sha256=str(doc["new_sha256"]),
                               old_key_ids=tuple(int(k) for k in doc["old_key_ids"]),
                               new_key_ids=tuple(int(k) for k in doc["new_key_ids"]))
    except (ValueError, KeyError, TypeError, RecursionError):
        raise KeysetError("the rotation journal is damaged", hint, file=path) from None
