"""Engine steps: :class:`Step`, Pulumi's op sets, and the one rule that turns a step record of
either document format (a ``preview --json`` step, an event's ``StepEventMetadata``) into a
:class:`Step`.

Ops are Pulumi's ``OpType`` strings (pulumi/pulumi ``pkg/resource/deploy/step.go`` ``StepOps``,
read at commit 004205f26edf; the Python SDK 3.272.0 ``pulumi.automation.events.OpType`` has the
same fifteen): same, create, update, delete, replace, create-replacement, delete-replaced, read,
read-replacement, refresh, discard, discard-replaced, remove-pending-replace, import,
import-replacement; plus the CLI's internal ops of the pinned version, ``extend-parameterize``
(written to ``--event-log`` when a package is parameterized) and ``diff`` (``pulumi preview
--diff`` bookkeeping), which touch no resource and are skipped deliberately
(:data:`INTERNAL_OPS`). A replacement shows as one ``replace`` step,
or with ``--show-replacement-steps`` as the pair ``create-replacement`` / ``delete-replaced``
around it (``pkg/backend/display`` ``shouldShow``), so a replacement is counted once per URN.
"""

from __future__ import annotations

import collections.abc
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.urn import type_of

#: Pulumi's resource ``OpType`` / ``deploy.StepOp`` values (``pkg/resource/deploy/step.go``
#: ``StepOps`` @004205f26edf; equal to the pinned SDK's ``OpType`` enum, a test holds them together).
RESOURCE_OPS = frozenset({
    "same", "create", "update", "delete", "replace", "create-replacement", "delete-replaced",
    "read", "read-replacement", "refresh", "discard", "discard-replaced",
    "remove-pending-replace", "import", "import-replacement"})
#: Ops of the pinned CLI that are not resource steps: skipped on purpose, never guessed at.
INTERNAL_OPS = frozenset({"extend-parameterize", "diff"})
KNOWN_OPS = RESOURCE_OPS | INTERNAL_OPS
#: A ``discard-replaced`` step drops a *read* resource's old state (``OpDiscardReplaced``:
#: "discarding a read resource that was replaced"): nothing live is destroyed, so it is not a
#: replace; likewise ``read-replacement`` (re-reading a resource Pulumi does not manage).
REPLACE_OPS = frozenset({"replace", "create-replacement", "delete-replaced", "import-replacement"})
DELETE_OPS = frozenset({"delete"})
DESTRUCTIVE_OPS = REPLACE_OPS | DELETE_OPS

#: The two document formats a :class:`ParsedSteps` comes from.
PREVIEW = "preview"
EVENTS = "events"

# isinstance against typing.Mapping goes through a slow generic-alias hook; decoded JSON is
# always dict, so test that first (the abc still admits other mappings).
MAP = (dict, collections.abc.Mapping)

HINT = ("give the output of `pulumi preview --json` (one JSON document with \"steps\") or an "
        "engine event log (`--event-log FILE`, `pulumi up --json`: one JSON event per line)")


@dataclass(frozen=True)
class Step:
    """One engine step, normalised from ``preview --json`` steps, engine events or the
    Automation API (parsers: :mod:`clusterstack.pulumi.preview`, :mod:`clusterstack.pulumi.events`).

    ``op`` is Pulumi's ``OpType`` string; ``old_protect`` / ``old_retain_on_delete`` are the
    ``protect`` / ``retainOnDelete`` flags of the resource's old state (``False`` when absent);
    ``replace_reasons`` are the top-level keys that force a replacement (``replaceReasons`` /
    event ``keys``); ``diffs`` the changed top-level keys (``diffReasons`` / event ``diffs``);
    ``detailed_diff`` maps a property path (``spec.instanceType``) to
    ``{"kind": "update-replace" | "add" | …, "inputDiff": bool}``.
    """

    op: str
    urn: str
    type: str
    old_protect: bool = False
    replace_reasons: tuple[str, ...] = ()
    diffs: tuple[str, ...] = ()
    detailed_diff: Mapping[str, Any] | None = None
    old_inputs: Mapping[str, Any] | None = None
    new_inputs: Mapping[str, Any] | None = None
    old_retain_on_delete: bool = False
    #: the old state's ``pendingReplacement``: a delete-before-replace whose delete ran and whose
    #: create did not (``DeleteStep.Apply`` with ``pendingReplacement``) — the live resource is
    #: already gone, so re-creating it is recovery, not a new replace
    old_pending_replacement: bool = False
    #: the old state's URN when it differs from :attr:`urn`: the engine found the old state by an
    #: alias (``step_generator.go`` ``getOldResource``) and the resource moves from it — e.g. a
    #: NodePool from ``…/v1alpha1:NodePool`` to ``…/v1beta1:NodePool``; ``""`` otherwise
    old_urn: str = ""

    @property
    def changed_paths(self) -> tuple[str, ...]:
        """The property paths this step changes, sorted: the keys of its detailed diff
        (``spec.maxNodes``, ``rules[0].verbs[2]``, :mod:`clusterstack.pulumi.paths`), else its
        changed top-level keys (``diffs``). What a review record lists per step and a later
        preview is compared with, path by path."""
        if self.detailed_diff:
            return tuple(sorted(self.detailed_diff))
        return tuple(sorted(set(self.diffs)))


#: ``diag.Severity`` (pulumi/pulumi ``sdk/go/common/diag/sink.go:48-52``): the only severities a
#: diagnostic carries. Anything else (``ERROR``, ``fatal``) is refused, never guessed at.
SEVERITIES = ("debug", "info", "info#err", "warning", "error")


@dataclass(frozen=True)
class Diagnostic:
    """THE diagnostic type of clusterstack: one ``diagnosticEvent`` of the engine event stream
    (:mod:`clusterstack.pulumi.events`) or one ``diagnostics[]`` entry of a ``preview --json``
    document. ``severity`` is one of :data:`SEVERITIES`; ``message`` has Pulumi's colour
    directives and the ``error: `` / ``warning: `` prefix removed; ``urn`` is empty for
    engine-wide messages. The engine's results (:class:`clusterstack.engine.model.PreviewResult`)
    carry this type too."""

    severity: str
    message: str
    urn: str = ""


@dataclass(frozen=True)
class Refusal:
    """A destructive op the engine itself refused because the resource is protected, read from
    its error diagnostic: ``op`` is ``delete`` (``DeleteStep.Apply`` / the preview's "cannot be
    deleted because it is protected") or ``replace`` (``step_generator.go``: "unable to replace
    resource … as it is currently marked for protection"); ``urn`` the refused resource."""

    op: str
    urn: str
    message: str


# One pattern per wording the engine has used, newest first. A URN holds no space or quote.
_URN = r"[\"']?(urn:pulumi:[^\"'\s]+)[\"']?"
_PROTECT_REFUSALS = (
    # DeleteStep.Apply ``deleteProtectedError`` (step.go:620, since v3.52.0, commit bf239e04d0)
    (re.compile(_URN + r"\s+cannot be deleted\s+because it is protected"), "delete"),
    # DeleteStep.Apply from v3.3.0 (commit 03e7601301, #7055) to v3.51: "unable to delete
    # resource %q\nas it is currently marked for protection"
    (re.compile(r"unable to delete resource\s+" + _URN + r"\s+as it is currently marked for protection"),
     "delete"),
    # DeleteStep.Apply before v3.3.0: "refusing to delete protected resource '%s'"
    (re.compile(r"refusing to delete protected resource\s+" + _URN), "delete"),
    # step_generator.go:1959/2113 (since #8810): "unable to replace resource %q\nas it is
    # currently marked for protection"
    (re.compile(r"unable to replace resource\s+" + _URN + r".*?marked for protection", re.S), "replace"),
)


def refusals_from(diagnostics: Iterable[Diagnostic]) -> tuple[Refusal, ...]:
    """The protect refusals among ``diagnostics`` (error severity), in order, one per (op, URN).
    Wording of the pinned engine: ``DeleteStep.Apply`` ("resource %q cannot be deleted\nbecause
    it is protected", prefixed "Preview failed: " in a preview — recorded in the lifecycle test
    ``TestMultipleProtectedDeletes``) and ``step_generator.go`` ("unable to replace resource
    %q\nas it is currently marked for protection", ``TestProtect``, ``TestDBRProtect``); and the
    wordings of older CLIs still in the field for the same refused delete: "unable to delete
    resource %q\nas it is currently marked for protection" (v3.3.0-v3.51, #7055, removed by
    commit bf239e04d0) and "refusing to delete protected resource '%s'" (before v3.3.0)."""
    out: dict[tuple[str, str], Refusal] = {}
    for d in diagnostics:
        if d.severity != "error":
            continue
        for rx, op in _PROTECT_REFUSALS:
            m = rx.search(d.message)
            if m:
                out.setdefault((op, m.group(1)), Refusal(op=op, urn=m.group(1), message=d.message))
                break
    return tuple(out.values())


#: The root stack's generic failure lines that follow a refusal ("preview failed",
#: "update failed"): they add no cause of their own.
GENERIC_FAILURES = frozenset({"preview failed", "update failed"})


#: ``apitype.OperationResult`` (pulumi/pulumi ``sdk/go/common/apitype/events.go:24-34``, added to
#: ``summaryEvent`` in v3.237.0 by #22883): the only results a summary carries. ``canceled`` has
#: one ``l``; ``cancelled``, ``FAILED`` or a number are refused.
RESULTS = ("succeeded", "failed", "canceled")
#: ``apitype.EnforcementLevel`` (``sdk/go/common/apitype/policy.go:164-173``) of a ``policyEvent``.
ENFORCEMENT_LEVELS = ("advisory", "mandatory", "remediate", "disabled")


@dataclass(frozen=True)
class Summary:
    """One ``summaryEvent`` (``apitype.SummaryEvent``): which pass it ends (``is_preview``,
    always written: no ``omitempty``), its ``result`` (one of :data:`RESULTS`, ``None`` from a
    CLI older than v3.237.0, which writes none), the op → count ``resource_changes`` and
    ``maybe_corrupt`` (the snapshot may hold resources in an invalid state)."""

    is_preview: bool
    result: str | None
    resource_changes: Mapping[str, int]
    maybe_corrupt: bool = False
    sequence: int = 0


@dataclass(frozen=True)
class PolicyViolation:
    """One ``policyEvent`` (``apitype.PolicyEvent``): a policy pack reported ``message`` about
    ``urn`` (empty: the stack) under ``enforcement_level`` (:data:`ENFORCEMENT_LEVELS`); a
    ``mandatory`` one fails the run."""

    urn: str
    policy: str
    pack: str
    enforcement_level: str
    message: str


@dataclass(frozen=True)
class ParsedSteps:
    """What a preview document or an engine event stream says the engine will do (or did) —
    the record of the ONE stream reader (:class:`clusterstack.pulumi.events.StreamReader`) and
    of the preview-document reader (:mod:`clusterstack.pulumi.preview`).

    ``format`` is :data:`PREVIEW` or :data:`EVENTS`; ``steps`` in file order (events: by
    ``sequence``), one per (op, URN); ``change_summary`` is the op → count map Pulumi computed
    itself (``changeSummary`` / the final ``summaryEvent.resourceChanges``), ``None`` when the
    file has none; ``summaries`` every ``summaryEvent`` in stream order (a preview document has
    none); ``is_preview`` / ``result`` are the final summary's (``True`` / ``None`` for a
    preview document, ``None`` / ``None`` for a stream without summary).
    """

    format: str
    steps: tuple[Step, ...]
    change_summary: Mapping[str, int] | None = None
    is_preview: bool | None = None
    #: the final ``summaryEvent.result`` (:data:`RESULTS`); ``None`` when absent (a CLI before
    #: v3.237.0) or a preview document, which has no result field
    result: str | None = None
    #: a stream ended with its ``summaryEvent``; a preview document is complete by construction
    complete: bool = True
    diagnostics: tuple[Diagnostic, ...] = ()
    #: URNs a refresh found gone (pre op ``refresh``, outputs op ``delete``) and that no later
    #: step deletes or replaces: drift, not a delete
    gone: tuple[str, ...] = ()
    summaries: tuple[Summary, ...] = ()
    #: the stream began with Pulumi's ``preludeEvent`` (a preview document: True)
    prelude: bool = True
    policy: tuple[PolicyViolation, ...] = ()
    #: steps the engine reported done (``resOutputsEvent`` outside planning) and failed
    #: (``resOpFailedEvent``), in stream order
    applied: tuple[Step, ...] = ()
    failed_steps: tuple[Step, ...] = ()
    #: internal ops skipped deliberately (``extend-parameterize``, ``diff``), in stream order
    internal: tuple[str, ...] = ()
    #: what makes the record contradict itself or disown its evidence (two summaries of one
    #: pass, a step after the summary, a preview summary after the update's, ``maybeCorrupt``),
    #: found while reading; refused by :func:`clusterstack.pulumi.documents.check_usable`
    contradictions: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        return refusals_from(self.diagnostics)

    @property
    def mandatory_policy(self) -> tuple[PolicyViolation, ...]:
        return tuple(v for v in self.policy if v.enforcement_level == "mandatory")

    @property
    def failed(self) -> bool:
        """The run failed: a summary says so, or it reported an error diagnostic or a mandatory
        policy violation (each fails the run, whatever the summary says)."""
        return (any(s.result == "failed" for s in self.summaries) or self.result == "failed"
                or bool(self.errors) or bool(self.mandatory_policy))

    @property
    def cancelled(self) -> bool:
        """A summary says the run was cancelled (``canceled``): it stopped part way."""
        return any(s.result == "canceled" for s in self.summaries)


def forcing_properties(step: Step) -> tuple[str, ...]:
    """The properties that force ``step``'s replacement, most precise first: every
    detailed-diff path whose kind is ``add-replace`` / ``update-replace`` / ``delete-replace``
    (Pulumi ``apitype.DiffKind``; e.g. ``spec.instanceType``), sorted, then each
    ``replace_reasons`` key (top-level, e.g. ``spec``) that none of those paths lies under.
    Empty for a plain delete."""
    paths = [k for k, v in sorted((step.detailed_diff or {}).items())
             if isinstance(v, Mapping) and str(v.get("kind", "")).endswith("-replace")]
    keys = [k for k in step.replace_reasons
            if not any(p == k or p.startswith((f"{k}.", f"{k}[")) for p in paths)]
    return tuple(dict.fromkeys((*paths, *keys)))


def logical_ops(steps: Iterable[Step]) -> dict[str, tuple[str, Step]]:
    """Fold steps into one logical destructive op per URN: ``replace`` wins over ``delete``.

    Returns ``{urn: (op, representative step)}`` for destructive URNs only. The representative
    step merges replace reasons and the ``protect`` flag across the pair steps (protected if any
    step says so; retained on delete only if every step says so — both err towards blocking).
    """
    acc: dict[str, tuple[str, Step]] = {}
    for s in steps:
        if s.op not in DESTRUCTIVE_OPS:
            continue
        op = "replace" if s.op in REPLACE_OPS else "delete"
        prev = acc.get(s.urn)
        if prev is None:
            acc[s.urn] = (op, s)
            continue
        pop, ps = prev
        merged = Step(op=s.op if op == "replace" else ps.op, urn=s.urn, type=s.type or ps.type,
                      old_protect=ps.old_protect or s.old_protect,
                      replace_reasons=tuple(dict.fromkeys(ps.replace_reasons + s.replace_reasons)),
                      diffs=tuple(dict.fromkeys(ps.diffs + s.diffs)),
                      detailed_diff=ps.detailed_diff or s.detailed_diff,
                      old_inputs=ps.old_inputs or s.old_inputs, new_inputs=ps.new_inputs or s.new_inputs,
                      old_retain_on_delete=ps.old_retain_on_delete and s.old_retain_on_delete,
                      old_pending_replacement=ps.old_pending_replacement or s.old_pending_replacement,
                      old_urn=ps.old_urn or s.old_urn)
        acc[s.urn] = ("replace" if "replace" in (op, pop) else "delete", merged)
    return acc


# ---------------------------------------------------------------------------------------------
# the step-record rule shared by the preview and event parsers

def malformed(message: str, where: str, source: str | Path | None) -> ClusterstackError:
    """The parsers' error: ``message`` at ``where`` (a field path) of ``source`` (exit 2)."""
    return ClusterstackError(message, HINT, file=Path(source) if source is not None else None,
                             field=where)


def strs(value: Any, where: str, source: Any) -> tuple[str, ...]:
    """A list of property names (``replaceReasons``, ``keys``, ``diffs``) or absent."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise malformed("must be a list of property names", where, source)
    return tuple(value)


def detailed(value: Any, kind_key: str, where: str, source: Any) -> dict[str, Any] | None:
    """Normalise a detailed diff to ``{path: {"kind": str, "inputDiff": bool}}`` (sorted);
    ``kind_key`` is the format's spelling (``kind`` in a preview, ``diffKind`` in events)."""
    if value is None:
        return None
    if not isinstance(value, MAP):
        raise malformed("must be an object of property path → diff", where, source)
    out: dict[str, Any] = {}
    for path in sorted(value):
        d = value[path]
        if not isinstance(d, MAP):
            raise malformed("must be an object with the diff kind", f"{where}.{path}", source)
        kind = d.get(kind_key) or d.get("kind") or d.get("diffKind")
        out[path] = {"kind": str(kind) if kind is not None else "", "inputDiff": bool(d.get("inputDiff", False))}
    return out


def state_record(value: Any, where: str, source: Any) -> Mapping[str, Any] | None:
    """A resource state object (``oldState`` / ``old`` …) or absent."""
    if value is None:
        return None
    if not isinstance(value, MAP):
        raise malformed("must be a resource state object", where, source)
    return value


def check_state_types(urn: str, urn_type: str, old: Mapping | None, new: Mapping | None,
                      where: str, source: Any, *, old_key: str = "old", new_key: str = "new") -> str:
    """The URN decides the type: refuse a state whose type or URN contradicts the step's URN.

    ``new`` (the resource as the step leaves it) must be of the URN's type and name the URN.
    ``old`` may differ in one legitimate way: the engine found it through an *alias*
    (pulumi/pulumi ``pkg/resource/deploy/step_generator.go`` ``getOldResource``, lines 671-705 at
    1b5949891b3c: looked up by URN, then by each alias, and kept as stored) — then it carries its
    own URN and that URN's type (``TestAliases`` ``t5-n3``: ``old.type`` ``pkgA:index:t4`` with
    ``old.urn`` ``…::pkgA:index:t4::n2`` under an update of ``…::pkgA:index:t5::n3``). An old
    state whose type differs from the step's URN without such a URN of its own is a
    contradiction. Returns the old state's URN when it is an alias (``""`` otherwise). Raises
    ClusterstackError naming the field."""
    alias = ""
    for label, st in ((old_key, old), (new_key, new)):
        if st is None:
            continue
        st_type, st_urn = st.get("type"), st.get("urn")
        if st_type is not None and not isinstance(st_type, str):
            raise malformed(f"the {label} state's type must be a type token, not {st_type!r}",
                            f"{where}.{label}.type", source)
        if st_urn is not None and not isinstance(st_urn, str):
            raise malformed(f"the {label} state's urn must be a URN, not {st_urn!r}",
                            f"{where}.{label}.urn", source)
        own = st_urn not in (None, "", urn)  # the state names another URN than the step
        if label == new_key:
            if own:
                raise malformed(f"the {label} state's URN {st_urn!r} is not the step's URN {urn!r}",
                                f"{where}.{label}.urn", source)
            if st_type not in (None, "", urn_type):
                raise malformed(f"the {label} state's type {st_type!r} contradicts the URN's type "
                                f"{urn_type!r}", f"{where}.{label}.type", source)
            continue
        if own:  # found by an alias: it must be self-consistent, of its own URN's type
            if st_type not in (None, "", type_of(st_urn)):
                raise malformed(f"the {label} state's type {st_type!r} contradicts its own URN "
                                f"{st_urn!r}", f"{where}.{label}.type", source)
            alias = st_urn
        elif st_type not in (None, "", urn_type):
            raise malformed(f"the {label} state's type {st_type!r} contradicts the URN's type "
                            f"{urn_type!r} (an aliased old state names its own URN)",
                            f"{where}.{label}.type", source)
    for label, st in ((old_key, old), (new_key, new)):
        for key in ("protect", "retainOnDelete", "pendingReplacement", "delete"):
            if st is not None and st.get(key) is not None and not isinstance(st[key], bool):
                raise malformed(f"{key} must be true or false, not {st[key]!r}",
                                f"{where}.{label}.{key}", source)
    return alias


def make_step(op: Any, urn: Any, typ: Any, old: Mapping | None, new: Mapping | None,
              keys: tuple[str, ...], diffs: tuple[str, ...], detailed_diff: dict | None,
              where: str, source: Any, *, has_type: bool = False, old_key: str = "old",
              new_key: str = "new") -> Step:
    """A :class:`Step` from the fields of one step record. THE URN decides the type
    (``URN.Type()``, :func:`clusterstack.pulumi.urn.type_of`): a record's own ``type``
    (``has_type``: the record has the field, as every ``StepEventMetadata`` does) and its states'
    types must agree with it (:func:`check_state_types`; an aliased old state is judged, not
    refused) — a delete labelled ``ConfigMap`` under a NodePool URN is refused, never read as
    the label says. Raises ClusterstackError on a missing op or URN, an unknown op (a safety
    gate that does not know an op must not guess it is harmless), a string that is not a URN,
    or a contradiction."""
    if not isinstance(op, str) or not op:
        raise malformed("missing step op", f"{where}.op", source)
    if op not in KNOWN_OPS:
        raise ClusterstackError(f"unknown step op {op!r}",
                                f"this clusterstack knows Pulumi's ops {', '.join(sorted(KNOWN_OPS))};"
                                " upgrade clusterstack before trusting its guard with this Pulumi",
                                file=Path(source) if source is not None else None, field=f"{where}.op")
    if not isinstance(urn, str) or not urn:
        raise malformed("missing step urn", f"{where}.urn", source)
    urn_type = type_of(urn)
    if not urn_type:
        raise malformed(f"cannot tell the resource type of {urn!r}: not a Pulumi URN "
                        "(urn:pulumi:<stack>::<project>::<type>::<name>)", f"{where}.urn", source)
    if has_type and typ != urn_type:
        raise malformed(f"the step's type {typ!r} contradicts its URN's type {urn_type!r} "
                        "(the URN decides)", f"{where}.type", source)
    alias = check_state_types(urn, urn_type, old, new, where, source, old_key=old_key, new_key=new_key)
    old_inputs = old.get("inputs") if old else None
    new_inputs = new.get("inputs") if new else None
    return Step(op=op, urn=urn, type=urn_type,
                old_protect=bool(old.get("protect", False)) if old else False,
                old_retain_on_delete=bool(old.get("retainOnDelete", False)) if old else False,
                old_pending_replacement=bool(old.get("pendingReplacement", False)) if old else False,
                replace_reasons=keys, diffs=diffs, detailed_diff=detailed_diff,
                old_inputs=old_inputs if isinstance(old_inputs, MAP) else None,
                new_inputs=new_inputs if isinstance(new_inputs, MAP) else None,
                old_urn=alias)
