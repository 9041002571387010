"""``iam review``: who gains or loses what between two revisions of the IAM file.

Both revisions are loaded (so a broken base or head is an error, not a silent diff) and turned
into sets of *accesses* — (target, condition title, person, role) — from the merged bindings;
the change is their set difference. Lines::

    + user:alice@example.org (human-004) roles/storage.objectViewer on bucket:ml-data
    - serviceAccount:ci@demo-project.iam.gserviceaccount.com roles/editor on project
    ~ user:bob@example.org (human-002) roles/viewer → roles/logging.viewer on project
    ! human-001 now refers to a different person: user:alice@example.org → user:mallory@example.net
    + user:carol@example.org (human-007) registered
    + user:alice@example.org (human-004) referenced in clusters/cw-demo-h100.yaml:41

``~`` is a *move*: one member losing one role and gaining another on the same target (and
condition) in the same change. A conditional access ends with ``if <condition title>``.

**People are compared by who they are, never by id.** Every principal of both revisions is
decrypted (once per ciphertext) and an access's member is the decrypted email, so a re-created
file whose ``human-001`` is now someone else, a keyset rotation, or one person registered
under another id all come out right. An id whose email differs between base and head is an
explicit ``!`` finding on top of the old person's losses and the new person's gains.

When a base ciphertext decrypts with none of the keysets given (the head's, plus ``base_ciphers``
such as the previous keyset after ``iam rotate``), its person is unknown: the review says so and
is *incomplete* (:attr:`Review.incomplete`; the CLI exits 2 unless ``--allow-undecryptable``) —
it never guesses that the same id is the same person. Without any keyset, ids whose ciphertext
is unchanged are the same person (deterministic encryption); a changed ciphertext makes the
review incomplete for the same reason.

``redact=True`` prints ``a***@example.org`` (:func:`clusterstack.redact.redact_email`) for
output that goes into a public PR.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from clusterstack.iam.crypto import KeysetError, PrincipalCipher
from clusterstack.adapters.git import ChangedLine
from clusterstack.iam.loader import LoadedIam, load_iam_text
from clusterstack.iam.scanner import HUMAN_REF_RE
from clusterstack.iam.targets import HUMAN_RE
from clusterstack.redact import redact_email

_UNKNOWN = "?"  # identity prefix of a base principal whose person could not be decrypted


@dataclass(frozen=True, order=True)
class Access:
    """One member holding one role on one target (``condition`` = title, "" for none).
    ``member`` is an *identity*: ``user:<email>`` for a decrypted principal, the id for one
    compared by id (no keyset), ``?<id>`` for an undecryptable base principal, else the
    member string."""

    target: str
    condition: str
    member: str
    role: str


@dataclass(frozen=True, order=True)
class Change:
    """One review line. ``sign`` is ``+``, ``-``, ``~`` (move: ``old_role`` → ``role``) or
    ``!`` (an id now names another person); ``kind`` is ``access``, ``principal``
    (registered/unregistered), ``identity`` (``who`` → ``where``: old → new person of the id
    in ``target``) or ``reference`` (a config line at ``where``)."""

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
        if self.kind == "identity":
            return f"! {self.target} now refers to a different person: {self.who} → {self.where}"
        role = f"{self.old_role} → {self.role}" if self.sign == "~" else self.role
        cond = f" if {self.condition}" if self.condition else ""
        return f"{self.sign} {self.who} {role} on {self.target}{cond}"


@dataclass(frozen=True)
class Review:
    """The change lines (sorted), notes, and ``incomplete``: why the review could not tell who
    some ids are (empty = complete)."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...]
    incomplete: tuple[str, ...] = ()

    def render(self) -> str:
        lines = [c.render() for c in self.changes] or ["no IAM change"]
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"INCOMPLETE: {n}" for n in self.incomplete]
        return "\n".join(lines) + "\n"


class _People:
    """Maps the ``human-NNN`` members of both revisions to identities (module docstring) and
    renders identities; decrypts each ciphertext at most once."""

    def __init__(self, base: LoadedIam | None, head: LoadedIam, cipher: PrincipalCipher | None,
                 base_ciphers: tuple[PrincipalCipher, ...], redact: bool) -> None:
        self.base, self.head, self.redact = base, head, redact
        self.cipher, self.base_ciphers = cipher, base_ciphers
        self._emails: dict[str, str | None] = {}
        self.undecryptable: list[str] = []     # base ids whose person is unknown
        self.by_previous: list[str] = []       # base ids decrypted only by a base_ciphers keyset
        self.unverifiable: list[str] = []      # ids whose ciphertext changed, no keyset at all
        self.pids: dict[str, list[str]] = defaultdict(list)  # identity → ids (head first)
        self.head_ids = {pid: self._identity(pid, ct, base_side=False)
                         for pid, ct in sorted(head.model.principals.items())}
        self.base_ids = ({pid: self._identity(pid, ct, base_side=True)
                          for pid, ct in sorted(base.model.principals.items())} if base else {})
        for side in (self.head_ids, self.base_ids):
            for pid, ident in side.items():
                if pid not in self.pids[ident]:
                    self.pids[ident].append(pid)

    def _decrypt(self, ct: str, pid: str, base_side: bool) -> str | None:
        if ct in self._emails:
            return self._emails[ct]
        assert self.cipher is not None
        try:
            email: str | None = self.cipher.decrypt(ct, pid=pid)
        except KeysetError:
            if not base_side:
                raise
            email = None
            for c in self.base_ciphers:
                try:
                    email = c.decrypt(ct, pid=pid)
                    self.by_previous.append(pid)
                    break
                except KeysetError:
                    continue
        self._emails[ct] = email
        return email

    def _identity(self, pid: str, ct: str, *, base_side: bool) -> str:
        if self.cipher is None:
            if base_side and pid in self.head.model.principals and self.head.model.principals[pid] != ct:
                self.unverifiable.append(pid)
                return _UNKNOWN + pid
            return pid
        email = self._decrypt(ct, pid, base_side)
        if email is None:
            self.undecryptable.append(pid)
            return _UNKNOWN + pid
        return "user:" + email

    def member(self, member: str, *, base_side: bool) -> str:
        """The identity of ``member`` in the base (``base_side``) or head revision."""
        if not HUMAN_RE.match(member):
            return member
        return (self.base_ids if base_side else self.head_ids)[member]

    def label(self, identity: str) -> str:
        """How an identity is printed: ``user:EMAIL (human-001)``, ``human-001`` or
        ``human-001 (base revision, undecryptable)``."""
        if identity.startswith(_UNKNOWN):
            return f"{identity[1:]} (base revision, person unknown)"
        if not identity.startswith("user:"):
            return identity
        email = identity[len("user:"):]
        shown = redact_email(email) if self.redact else email
        return f"user:{shown} ({', '.join(self.pids.get(identity, ())) or '?'})"

    def person(self, identity: str) -> str:
        """``user:EMAIL`` (redacted when asked) of a decrypted identity, without its ids."""
        email = identity.removeprefix("user:")
        return "user:" + (redact_email(email) if self.redact else email)

    def ref(self, pid: str) -> str:
        """The label of a ``human-NNN`` referenced in a config (head identity first)."""
        ident = self.head_ids.get(pid) or self.base_ids.get(pid)
        return self.label(ident) if ident else pid


def accesses(loaded: LoadedIam | None, people: _People, *, base_side: bool) -> set[Access]:
    """Every (target, condition, identity, role) of ``loaded`` (empty for None)."""
    if loaded is None:
        return set()
    return {Access(b.target.spec, b.key[2], people.member(m, base_side=base_side), b.role)
            for b in loaded.bindings() for m in b.members}


def mode_notes(base: LoadedIam | None, head: LoadedIam) -> list[str]:
    """One note per (target, role) whose ``authoritative`` flag the change flips: becoming
    authoritative removes, on the next ``up``, every live member the file does not list —
    the reviewer needs ``clusterstack iam scan``'s list for it."""
    def modes(loaded: LoadedIam | None) -> dict[tuple[str, str], bool]:
        return {} if loaded is None else {(b.target.spec, b.role): b.authoritative for b in loaded.bindings()}

    before, after = modes(base), modes(head)
    out = []
    for key in sorted(after):
        target, role = key
        if after[key] and not before.get(key, False):
            out.append(f"{role} on {target} becomes authoritative: the next `up` removes every member "
                       "of it the file does not list — attach `clusterstack iam scan` output")
        elif not after[key] and before.get(key, False):
            out.append(f"{role} on {target} becomes additive: members granted outside the file are "
                       "no longer removed")
    return out


def review(base_text: str | None, head_text: str, *, base_label: str, head_label: str,
           cipher: PrincipalCipher | None, config_lines: list[ChangedLine] = (),  # type: ignore[assignment]
           redact: bool = False, base_ciphers: tuple[PrincipalCipher, ...] = ()) -> Review:
    """Compare two texts of the IAM file (``base_text`` None: the file is new).

    ``cipher`` is the head's keyset (None: compare by id, with a note); ``base_ciphers`` are
    further keysets tried for base ciphertexts it cannot decrypt (the previous keyset after a
    rotation). ``config_lines`` are the changed lines of configs; those holding ``human-NNN``
    become ``reference`` changes. Raises IamFileError (either revision invalid; ``*_label``
    names it in errors) and KeysetError (a head principal that does not decrypt). An unknown
    base person is reported in :attr:`Review.incomplete`, never guessed from its id.
    """
    base = load_iam_text(base_text, Path(base_label)) if base_text is not None else None
    head = load_iam_text(head_text, Path(head_label))
    notes: list[str] = []
    incomplete: list[str] = []
    if cipher is None:
        notes.append("no keyset available: people are shown by id")
    people = _People(base, head, cipher, base_ciphers, redact)
    if people.by_previous:
        notes.append(f"{len(people.by_previous)} base principal(s) decrypted with the previous keyset "
                     f"(the head is under another one): {', '.join(people.by_previous)}")
    if people.undecryptable:
        incomplete.append(f"{len(people.undecryptable)} base principal(s) do not decrypt with any "
                          f"available keyset, so who they were is unknown: {', '.join(people.undecryptable)} "
                          "— get the base revision's keyset (after `iam rotate`: .iam/keyset.json.previous)")
    if people.unverifiable:
        incomplete.append(f"{len(people.unverifiable)} principal(s) changed ciphertext and no keyset "
                          f"is available to tell whether they are the same person: {', '.join(people.unverifiable)}")
    notes += mode_notes(base, head)
    removed = accesses(base, people, base_side=True) - accesses(head, people, base_side=False)
    added = accesses(head, people, base_side=False) - accesses(base, people, base_side=True)
    changes: list[Change] = []
    # moves: one member losing and gaining roles on one target/condition → pair them up
    by_slot: dict[tuple[str, str, str], list[list[Access]]] = defaultdict(lambda: [[], []])
    for a in removed:
        by_slot[(a.target, a.condition, a.member)][0].append(a)
    for a in added:
        by_slot[(a.target, a.condition, a.member)][1].append(a)
    for (target, cond, member), (gone, new) in sorted(by_slot.items()):
        gone.sort()
        new.sort()
        who = people.label(member)
        for old_a, new_a in zip(gone, new):
            changes.append(Change(who, target, new_a.role, "~", cond, old_role=old_a.role))
        for a in gone[len(new):]:
            changes.append(Change(who, target, a.role, "-", cond))
        for a in new[len(gone):]:
            changes.append(Change(who, target, a.role, "+", cond))
    base_people = set(people.base_ids.values())
    head_people = set(people.head_ids.values())
    for ident in sorted(head_people - base_people):
        changes.append(Change(people.label(ident), "", "", "+", kind="principal"))
    for ident in sorted(base_people - head_people):
        changes.append(Change(people.label(ident), "", "", "-", kind="principal"))
    for pid in sorted(set(people.base_ids) & set(people.head_ids)):
        old, new_ident = people.base_ids[pid], people.head_ids[pid]
        if old != new_ident and old.startswith("user:") and new_ident.startswith("user:"):
            changes.append(Change(people.person(old), pid, "", "!", kind="identity",
                                  where=people.person(new_ident)))
    for cl in config_lines:
        for m in HUMAN_REF_RE.finditer(cl.text):
            changes.append(Change(people.ref(m.group(0)), "", "", cl.sign,
                                  kind="reference", where=f"{cl.path}:{cl.line}"))
    kind_order = {"identity": 0, "access": 1, "reference": 2, "principal": 2}
    return Review(tuple(sorted(set(changes), key=lambda c: (kind_order[c.kind], c.target if c.kind == "identity" else "", c.who, c.target,
                                                           c.condition, c.role, c.sign, c.where))),
                  tuple(dict.fromkeys(notes)), tuple(incomplete))
