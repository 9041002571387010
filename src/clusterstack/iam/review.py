"""``iam review``: who gains or loses what between two revisions of the IAM file.

Both revisions are loaded (so a broken base or head is an error, not a silent diff) and turned
into sets of *accesses* — (target, condition title, member, role) — from the merged bindings;
the change is their set difference. Only the principals that appear in a change are
decrypted. Lines::

    + user:alice@example.org (human-004) roles/storage.objectViewer on bucket:ml-data
    - serviceAccount:ci@demo-project.iam.gserviceaccount.com roles/editor on project
    ~ user:bob@example.org (human-002) roles/viewer → roles/editor on project
    + user:carol@example.org (human-007) registered
    + user:alice@example.org (human-004) referenced in clusters/cw-demo-h100.yaml:41

``~`` is a *move*: one member losing one role and gaining another on the same target (and
condition) in the same change. A conditional access ends with ``if <condition title>``.

Identity changes are caught too: when an id keeps its name but its ciphertext changes, both
ciphertexts are decrypted; different emails mean every access of the old person is removed and
every access of the new one added. When the base ciphertext does not decrypt with the current
keyset (a key rotation), the id is compared by name and a note says so.

``redact=True`` prints ``a***@example.org`` (:func:`clusterstack.redact.redact_email`) for
output that goes into a public PR.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from clusterstack.iam.crypto import KeysetError, PrincipalCipher
from clusterstack.iam.git import ChangedLine
from clusterstack.iam.loader import LoadedIam, load_iam_text
from clusterstack.iam.scanner import HUMAN_REF_RE
from clusterstack.iam.targets import HUMAN_RE
from clusterstack.redact import redact_email

_BASE_SUFFIX = "#base"  # marks a base-revision id whose identity differs from the head's


@dataclass(frozen=True, order=True)
class Access:
    """One member holding one role on one target (``condition`` = title, "" for none)."""

    target: str
    condition: str
    member: str
    role: str


@dataclass(frozen=True, order=True)
class Change:
    """One review line. ``sign`` is ``+``, ``-`` or ``~`` (move: ``old_role`` → ``role``);
    ``kind`` is ``access``, ``principal`` (registered/unregistered) or ``reference`` (a config
    line at ``where``)."""

    who: str
    target: str
    role: str
    sign: str
    condition: str = ""
    old_role: str = ""
    kind: str = "access"
    where: str = ""

    def render(self) -> str:
        if self.kind == "principal":
            return f"{self.sign} {self.who} {'registered' if self.sign == '+' else 'unregistered'}"
        if self.kind == "reference":
            return f"{self.sign} {self.who} referenced in {self.where}"
        role = f"{self.old_role} → {self.role}" if self.sign == "~" else self.role
        cond = f" if {self.condition}" if self.condition else ""
        return f"{self.sign} {self.who} {role} on {self.target}{cond}"


@dataclass(frozen=True)
class Review:
    """The change lines (sorted) and notes (e.g. ids compared by name after a rotation)."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...]

    def render(self) -> str:
        lines = [c.render() for c in self.changes] or ["no IAM change"]
        return "\n".join(lines + [f"note: {n}" for n in self.notes]) + "\n"


def accesses(loaded: LoadedIam | None, renamed: frozenset[str] = frozenset()) -> set[Access]:
    """Every (target, condition, member, role) of ``loaded``; ids in ``renamed`` get the
    base-identity suffix."""
    if loaded is None:
        return set()
    out = set()
    for b in loaded.bindings():
        for m in b.members:
            member = m + _BASE_SUFFIX if m in renamed else m
            out.add(Access(b.target.spec, b.key[2], member, b.role))
    return out


class _Who:
    """Renders members, decrypting each principal at most once: a person's *current*
    ciphertext (head) is used unless the id changed identity (then the base one for the old
    person); a base-only ciphertext that no longer decrypts (rotation) shows the id."""

    def __init__(self, base: LoadedIam | None, head: LoadedIam, cipher: PrincipalCipher | None,
                 redact: bool, notes: list[str]) -> None:
        self.base, self.head, self.cipher, self.redact, self.notes = base, head, cipher, redact, notes
        self._cache: dict[tuple[str, bool], str | None] = {}

    def email(self, pid: str, base_identity: bool) -> str | None:
        if self.cipher is None:
            return None
        if not base_identity and pid in self.head.model.principals:
            src = self.head
        elif self.base is not None and pid in self.base.model.principals:
            src = self.base
        else:
            return None
        key = (pid, src is self.base)
        if key not in self._cache:
            try:
                self._cache[key] = self.cipher.decrypt(src.model.principals[pid], pid=pid)
            except KeysetError:
                if src is self.head:
                    raise
                self.notes.append(f"{pid}: only in the base revision, under another keyset; shown by id")
                self._cache[key] = None
        return self._cache[key]

    def __call__(self, member: str) -> str:
        base_identity = member.endswith(_BASE_SUFFIX)
        pid = member.removesuffix(_BASE_SUFFIX)
        if not HUMAN_RE.match(pid):
            return member
        email = self.email(pid, base_identity)
        if email is None:
            return pid
        return f"user:{redact_email(email) if self.redact else email} ({pid})"


def review(base_text: str | None, head_text: str, *, base_label: str, head_label: str,
           cipher: PrincipalCipher | None, config_lines: list[ChangedLine] = (),  # type: ignore[assignment]
           redact: bool = False) -> Review:
    """Compare two texts of the IAM file (``base_text`` None: the file is new).

    ``cipher`` None shows ids instead of emails (with a note). ``config_lines`` are the changed
    lines of configs; those holding ``human-NNN`` become ``reference`` changes. Raises
    IamFileError (either revision invalid; ``*_label`` names it in errors) and KeysetError
    (a head principal that does not decrypt).
    """
    base = load_iam_text(base_text, Path(base_label)) if base_text is not None else None
    head = load_iam_text(head_text, Path(head_label))
    notes: list[str] = []
    renamed: set[str] = set()
    rekeyed: list[str] = []
    if cipher is None:
        notes.append("no keyset available: people are shown by id")
    if base is not None:
        for pid, ct in sorted(head.model.principals.items()):
            old = base.model.principals.get(pid)
            if old is None or old == ct or cipher is None:
                continue
            new_email = cipher.decrypt(ct, pid=pid)
            try:
                old_email = cipher.decrypt(old, pid=pid)
            except KeysetError:
                rekeyed.append(pid)
                continue
            if old_email != new_email:
                renamed.add(pid)
    if rekeyed:
        notes.append(f"{len(rekeyed)} principal(s) re-encrypted under another keyset (a rotation?), "
                     f"compared by id: {', '.join(rekeyed)}")
    who = _Who(base, head, cipher, redact, notes)
    removed = accesses(base, frozenset(renamed)) - accesses(head)
    added = accesses(head) - accesses(base, frozenset(renamed))
    changes: list[Change] = []
    # moves: one member losing and gaining roles on one target/condition → pair them up
    by_slot: dict[tuple[str, str, str], list[list[Access]]] = defaultdict(lambda: [[], []])
    for a in removed:  # a renamed id's base accesses carry the suffix: never paired as a move
        by_slot[(a.target, a.condition, a.member)][0].append(a)
    for a in added:
        by_slot[(a.target, a.condition, a.member)][1].append(a)
    for (target, cond, _member), (gone, new) in sorted(by_slot.items()):
        gone.sort()
        new.sort()
        for old_a, new_a in zip(gone, new):
            changes.append(Change(who(new_a.member), target, new_a.role, "~", cond, old_role=old_a.role))
        for a in gone[len(new):]:
            changes.append(Change(who(a.member), target, a.role, "-", cond))
        for a in new[len(gone):]:
            changes.append(Change(who(a.member), target, a.role, "+", cond))
    base_ids = set(base.model.principals) if base else set()
    head_ids = set(head.model.principals)
    for pid in sorted(head_ids - base_ids) + sorted(renamed):
        changes.append(Change(who(pid), "", "", "+", kind="principal"))
    for pid in sorted(base_ids - head_ids):
        changes.append(Change(who(pid), "", "", "-", kind="principal"))
    for pid in sorted(renamed):
        changes.append(Change(who(pid + _BASE_SUFFIX), "", "", "-", kind="principal"))
    for cl in config_lines:
        for m in HUMAN_REF_RE.finditer(cl.text):
            changes.append(Change(who(m.group(0)), "", "", cl.sign,
                                  kind="reference", where=f"{cl.path}:{cl.line}"))
    return Review(tuple(sorted(set(changes), key=lambda c: (c.kind != "access", c.who, c.target,
                                                           c.condition, c.role, c.sign, c.where))),
                  tuple(dict.fromkeys(notes)))
