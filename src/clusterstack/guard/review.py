"""The review record: what a reviewed preview of one stack showed, so that ``up --reviewed RECORD``
applies exactly that and nothing else (pulumi/pulumi#2318: Pulumi's own
update plans never became generally available).

``preview --record DIR`` and ``ci preview`` write one record per stack; its digest is shown in
the PR comment. The document, ``format: clusterstack.review/v2``::

    {"format": "clusterstack.review/v2",
     "project": str, "stack": str,
     "commit": str | null,            # git HEAD of the reviewed tree
     "tree": str | null,              # its tree id (`git rev-parse <commit>^{tree}`): the content
     "dirty": bool,                   # the tree had uncommitted changes (such a record binds nothing)
     "state": {"version": int | null},  # the stack's last update version (`pulumi stack history`)
     "steps": [{"op", "urn", "type", "paths": [str]}],   # every step but `same`, by URN then op
     "verdict": <clusterstack.verdict/v1 of the preview>,
     "redacted": bool,                # a string was redacted for a public artifact (binds nothing)
     "digest": "sha256:<hex>"}        # of the canonical JSON of every other key

``op`` is the logical op (a replacement's ``create-replacement``/``delete-replaced`` pair is one
``replace``); ``paths`` the property paths the step changes
(:attr:`clusterstack.pulumi.steps.Step.changed_paths`: its detailed diff, else its changed keys).
Canonical JSON: sorted keys, no whitespace, UTF-8 as is; no timestamps, so the same preview of the
same commit and state gives the same bytes and digest. A reader of ``v2`` ignores keys it does not
know; a key is never removed or given another meaning within ``v2``. ``v2`` added the required
``tree`` (a change of shape, so a new version); a ``v1`` record (no tree) is refused by
:func:`load` (exit 2, "preview again"): a record is short-lived (one state version), so a
fresh preview replaces it at no cost, and accepting it would need a second binding rule.

What binds an update to a record (:func:`binding_problems`, :func:`step_problems`): the same
stack, the same commit from a clean tree — or another commit of the same git tree (a PR's
head commit and the merge commit of that up-to-date PR: same files, so the same reviewed
content) —, the same state version (an update or refresh since —
including the one this record was applied by — makes it stale: no replay), and a preview whose
every step is in the record with no changed path the record lacks. A record's own digest must
match its content (a hand-edited record is refused, exit 2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.steps import REPLACE_OPS, Step
from clusterstack.config.document import parse_json, read_text

REVIEW_FORMAT = "clusterstack.review/v2"
#: the formats of earlier versions, refused with a reason (module docstring)
OLD_FORMATS = ("clusterstack.review/v1",)
GUARD_EXIT_CODE = 3


def logical_op(op: str) -> str:
    """A step's op as a reviewer saw it: every op of a replacement (``REPLACE_OPS``:
    ``create-replacement``, ``delete-replaced``, ``import-replacement``) is ``replace``."""
    return "replace" if op in REPLACE_OPS else op


@dataclass(frozen=True)
class ReviewedStep:
    """One step of the record: logical ``op``, ``urn``, ``type``, the changed ``paths``."""

    op: str
    urn: str
    type: str
    paths: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "urn": self.urn, "type": self.type, "paths": list(self.paths)}


def reviewed_steps(steps: Iterable[Step]) -> tuple[ReviewedStep, ...]:
    """The record's steps of a preview: every step but ``same``, a replacement's pair folded
    into one ``replace`` (paths united), sorted by URN then op."""
    out: dict[tuple[str, str], ReviewedStep] = {}
    for s in steps:
        if s.op == "same":
            continue
        key = (s.urn, logical_op(s.op))
        prev = out.get(key)
        paths = tuple(sorted(set(s.changed_paths) | set(prev.paths if prev else ())))
        out[key] = ReviewedStep(key[1], s.urn, s.type, paths)
    return tuple(out[k] for k in sorted(out))


def canonical(doc: Mapping[str, Any]) -> str:
    """The canonical JSON of a record without its ``digest`` (what the digest is taken of)."""
    return json.dumps({k: v for k, v in doc.items() if k != "digest"}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)


def digest_of(doc: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of :func:`canonical` of ``doc``."""
    return "sha256:" + hashlib.sha256(canonical(doc).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ReviewRecord:
    """One stack's review record (module docstring). ``state_version``: None for a stack
    without an update yet."""

    project: str
    stack: str
    commit: str | None
    dirty: bool
    state_version: int | None
    steps: tuple[ReviewedStep, ...]
    verdict: Mapping[str, Any]
    redacted: bool = False
    #: the git tree id of ``commit`` (None without a commit)
    tree: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The document with its digest."""
        doc: dict[str, Any] = {"format": REVIEW_FORMAT, "project": self.project, "stack": self.stack,
                               "commit": self.commit, "tree": self.tree, "dirty": self.dirty,
                               "state": {"version": self.state_version},
                               "steps": [s.to_json() for s in self.steps],
                               "verdict": dict(self.verdict), "redacted": self.redacted}
        doc["digest"] = digest_of(doc)
        return doc

    @property
    def digest(self) -> str:
        return self.to_json()["digest"]

    def text(self) -> str:
        """The record's bytes as written (canonical JSON with its digest, 2-space indent, sorted
        keys, one trailing newline)."""
        return json.dumps(self.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def build(*, project: str, stack: str, commit: str | None, dirty: bool, state_version: int | None,
          steps: Iterable[Step], verdict: Mapping[str, Any], tree: str | None = None) -> ReviewRecord:
    """The record of one preview (its ``steps`` and its verdict document); ``tree``: the git
    tree id of ``commit``."""
    return ReviewRecord(project, stack, commit, dirty, state_version, reviewed_steps(steps), verdict,
                        tree=tree)


def _bad(path: Path, problem: str, field: str = "") -> ClusterstackError:
    return ClusterstackError(problem, "give the review.json that `clusterstack preview --record` or "
                             "`ci preview` wrote, unchanged", file=path, field=field)


def load(path: Path) -> ReviewRecord:
    """Read a record written by :meth:`ReviewRecord.text`, through the one strict JSON reader.
    Raises ClusterstackError (exit 2): missing, not JSON, another format, a field of the wrong
    shape, or a digest that does not match the content (the record was changed)."""
    doc = parse_json(read_text(Path(path), missing="review record not found"), Path(path))
    if isinstance(doc, dict) and doc.get("format") in OLD_FORMATS:
        raise ClusterstackError(f"a {doc['format']} review record: this clusterstack reads "
                                f"{REVIEW_FORMAT} (the record also names the reviewed git tree)",
                                "preview again (`clusterstack preview --record DIR` or `ci preview`), "
                                "have the new record reviewed, then `up --reviewed` it",
                                file=Path(path), field="format")
    if not isinstance(doc, dict) or doc.get("format") != REVIEW_FORMAT:
        raise _bad(path, f"not a {REVIEW_FORMAT} review record", "format")
    if doc.get("digest") != digest_of(doc):
        raise _bad(path, "the record's digest does not match its content: it was changed after "
                   "it was written", "digest")
    try:
        steps = tuple(ReviewedStep(str(s["op"]), str(s["urn"]), str(s["type"]),
                                   tuple(str(p) for p in s["paths"])) for s in doc["steps"])
        version = doc["state"]["version"]
        if version is not None and type(version) is not int:
            raise TypeError("state.version")
        if not isinstance(doc["stack"], str) or not isinstance(doc["verdict"], dict):
            raise TypeError("stack")
        tree = doc["tree"]
        if tree is not None and not isinstance(tree, str):
            raise TypeError("tree")
        return ReviewRecord(str(doc["project"]), doc["stack"], doc["commit"], bool(doc["dirty"]),
                            version, steps, doc["verdict"], bool(doc.get("redacted", False)), tree=tree)
    except (KeyError, TypeError, IndexError) as exc:
        raise _bad(path, f"a field of another shape ({exc})") from None


class ReviewRefused(ClusterstackError):
    """``up --reviewed``: the update is not the one reviewed (exit 3, like a guard block)."""

    exit_code = GUARD_EXIT_CODE


def binding_problems(record: ReviewRecord, *, stack: str, commit: str | None, dirty: bool,
                     state_version: int | None, tree: str | None = None) -> list[str]:
    """Why ``record`` does not bind an update of ``stack`` from ``commit`` (git tree id
    ``tree``, ``dirty`` working tree) at state ``state_version``, one line each; empty when it
    does. Another commit binds when its tree is the record's (the same content: a merge commit
    of the reviewed, up-to-date PR head)."""
    out = []
    if record.stack != stack:
        out.append(f"the record is of stack {record.stack!r}, not {stack!r}")
    if record.redacted:
        out.append("the record was redacted for a public artifact: its steps are not the engine's")
    if record.dirty or record.commit is None:
        out.append("the record was written from a tree with uncommitted changes: no commit names what was reviewed")
    elif record.commit != commit and not (record.tree is not None and record.tree == tree):
        out.append(f"the record is of git tree {(record.tree or 'unknown')[:12]} (commit "
                   f"{record.commit[:12]}), this checkout is tree {(tree or 'none')[:12]} (commit "
                   f"{(commit or 'no commit')[:12]}): other content was reviewed; preview again")
    if dirty:
        out.append("this tree has uncommitted changes: they were not reviewed")
    if record.state_version != state_version:
        older = (record.state_version or 0) < (state_version or 0)
        out.append(f"the record was written at state version {record.state_version}, the stack is at "
                   f"{state_version}: " + ("the state changed since the review (an update or refresh "
                                           "ran; a record is used once)" if older else
                                           "the record is not of this stack's state"))
    return out


def step_problems(record: ReviewRecord, steps: Iterable[Step]) -> list[str]:
    """The steps of a new preview (or of the update's stream) the record does not cover, one
    line each: a step (logical op, URN) not in the record, or a changed path of a step the
    record does not list for it. Steps the record has and the preview lacks are not problems
    (less is applied than was reviewed)."""
    reviewed = {(s.urn, s.op): set(s.paths) for s in record.steps}
    out = []
    for s in reviewed_steps(steps):
        paths = reviewed.get((s.urn, s.op))
        if paths is None:
            out.append(f"unreviewed step: {s.op} {s.urn}")
            continue
        extra = [p for p in s.paths if p not in paths]
        if extra:
            out.append(f"changed path not reviewed: {', '.join(extra)} of {s.op} {s.urn}")
    return out


__all__ = ["REVIEW_FORMAT", "ReviewRecord", "ReviewRefused", "ReviewedStep", "binding_problems",
           "build", "canonical", "digest_of", "load", "logical_op", "reviewed_steps", "step_problems"]
