"""What ``clusterstack verify`` looks up, and what it found.

Lookups (:mod:`clusterstack.adapters.lookups`) name one live object by the API's own identity; a
:class:`Finding` is the answer for one declared resource; a :class:`VerifyReport` holds them
all and decides the exit code: 0 every resource exists and matches, 4 one is missing or
different (``clusterstack up`` fixes it), 1 one could not be checked (no credentials, no
access, API unreachable) — the answer is then incomplete, whatever else was found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# the lookups and their errors: the adapters' vocabulary, defined there
from clusterstack.adapters.lookups import (CheckError, GcpObject, HelmRelease, KubeObject, NegMember,
    Unreachable)

EXIT_OK = 0
EXIT_UNVERIFIED = 2   # could not check (credentials, access, network): the operator acts; 1 is a bug
EXIT_MISSING = 4

State = Literal["ok", "missing", "different", "error", "skipped"]



Lookup = KubeObject | HelmRelease | GcpObject | NegMember


@dataclass(frozen=True)
class Expected:
    """One declared resource and what must hold for it live.

    ``declared`` maps a field label (the API's field path) to the normalised declared value;
    values the offline plan cannot know (``[unknown]``/``[secret]``) are left out.
    ``lookup`` is None for a type verify cannot read; ``reason`` then says why.
    """

    system: str                  # "kubernetes" | "gcp" | other provider package
    type: str                    # Pulumi type token
    name: str                    # Pulumi logical name
    lookup: Lookup | None
    declared: tuple[tuple[str, Any], ...] = ()
    reason: str = ""

    @property
    def ref(self) -> str:
        return self.lookup.ref if self.lookup is not None else self.name


@dataclass(frozen=True)
class Diff:
    """A field whose live value differs from the declared one."""

    field: str
    declared: Any
    live: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "declared": self.declared, "live": self.live}


@dataclass(frozen=True)
class Finding:
    """The answer for one declared resource."""

    state: State
    type: str
    name: str
    ref: str
    diffs: tuple[Diff, ...] = ()
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "type": self.type, "name": self.name, "ref": self.ref,
                "diffs": [d.to_json() for d in self.diffs], "message": self.message}


@dataclass(frozen=True)
class VerifyReport:
    """Every finding for one cluster's stack, in plan (URN) order."""

    cluster: str
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    def count(self, state: State) -> int:
        return sum(1 for f in self.findings if f.state == state)

    @property
    def status(self) -> Literal["ok", "missing", "unverified"]:
        if self.count("error"):
            return "unverified"
        if self.count("missing") or self.count("different"):
            return "missing"
        return "ok"

    @property
    def exit_code(self) -> int:
        return {"ok": EXIT_OK, "missing": EXIT_MISSING, "unverified": EXIT_UNVERIFIED}[self.status]

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def fix(self) -> tuple[str, ...]:
        """The commands that create or correct what is missing or different (empty when
        nothing is): preview shows the change, up applies it behind the guard."""
        if not (self.count("missing") or self.count("different")):
            return ()
        return (f"clusterstack preview {self.cluster}", f"clusterstack up {self.cluster}")

    def to_json(self) -> dict[str, Any]:
        """Deterministic JSON shape (``format: clusterstack.verify/v1``)."""
        return {
            "format": "clusterstack.verify/v1", "cluster": self.cluster, "status": self.status,
            "exit_code": self.exit_code,
            "counts": {s: self.count(s) for s in ("ok", "missing", "different", "error", "skipped")},
            "fix": list(self.fix),
            "findings": [f.to_json() for f in self.findings],
        }
