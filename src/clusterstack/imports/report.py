"""The adoption report: per adopted object, what the first ``up`` after the adoption does.

One document for both adoption paths (``clusterstack import report`` / ``import apply`` from
live objects, ``clusterstack import migrate`` from an existing Pulumi stack), rendered once as
human text (:func:`render_text`) and as versioned JSON (``clusterstack.adoption-report/v1``,
:meth:`AdoptionReport.to_json`). Verdicts, worst first:

- ``replace`` — the provider replaces the object (a forceNew field differs);
- ``refused`` — the API server refuses the update (an immutable field differs): the preview
  succeeds, the ``up`` fails;
- ``change`` — the object changes live (the fields are listed, declared ← live);
- ``unverified`` — the live object could not be read, so nothing is proven;
- ``no-op`` — Pulumi shows ``~ update`` but nothing changes live; each line says why
  (:func:`clusterstack.imports.rules.artefact_reason`);
- ``same`` — Pulumi shows no change;
- ``create`` — not live (or not in the old stack): ``up`` creates it, an object the running
  system does not have.

:attr:`AdoptionReport.summary` is the countable line: "N of M adopted objects are same or a
proven no-op; K live changes; R refused; P replaces; C created that <who> does not run; U
unverified" (M: every object that is not created). Rows are keyed by the import file's entry
name (``import generate`` names them the same way; unique per stack) and sorted by verdict
then URN, so the output is byte-identical for the same input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterstack.imports import rules
from clusterstack.imports.live import ABSENT, FOUND, LiveView, Lookup
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens
from clusterstack.imports.generate import generate
from clusterstack.pulumi.paths import contains, lenient_parse

REPORT_FORMAT = "clusterstack.adoption-report/v1"

SAME, NO_OP, CHANGE, REFUSED, REPLACE, CREATE, UNVERIFIED = (
    "same", "no-op", "change", "refused", "replace", "create", "unverified")
#: display order, worst first
ORDER = (REPLACE, REFUSED, CHANGE, UNVERIFIED, NO_OP, SAME, CREATE)
#: verdicts ``import apply`` lets through without ``--accept``
QUIET = frozenset({SAME, NO_OP})


@dataclass(frozen=True)
class Row:
    """The verdict on one declared object. ``name``: its import-file entry name; ``ref``: the
    live identity; ``changes``: the live field changes; ``artefacts``: Pulumi's no-op update
    lines; ``reason``: why unverified, or a note."""

    name: str
    urn: str
    type: str
    ref: str
    verdict: str
    changes: tuple[rules.FieldChange, ...] = ()
    artefacts: tuple[rules.Artefact, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "urn": self.urn, "type": self.type,
                             "ref": self.ref, "verdict": self.verdict,
                             "changes": [c.to_json() for c in self.changes],
                             "noOps": [a.to_json() for a in self.artefacts]}
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass(frozen=True)
class AdoptionReport:
    """Every row of one stack. ``source`` describes what was compared with; ``absent_label``
    names who does not run a created object (``the live cluster``, ``marin-iac/<stack>``);
    ``not_adopted``: objects the old stack manages that nothing adopts (migration only);
    ``accepted``: names confirmed with ``--accept``."""

    stack: str
    source: Mapping[str, Any]
    rows: tuple[Row, ...]
    absent_label: str = "the live system"
    not_adopted: tuple[Mapping[str, Any], ...] = ()
    accepted: tuple[str, ...] = ()

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.rows if r.verdict == verdict)

    @property
    def counts(self) -> dict[str, int]:
        return {v: self.count(v) for v in ORDER}

    @property
    def adopted(self) -> int:
        return sum(1 for r in self.rows if r.verdict != CREATE)

    @property
    def summary(self) -> str:
        c = self.counts
        return (f"{c[SAME] + c[NO_OP]} of {self.adopted} adopted objects are same or a proven "
                f"no-op; {c[CHANGE]} live change{'s' if c[CHANGE] != 1 else ''}; {c[REFUSED]} "
                f"refused; {c[REPLACE]} replace{'s' if c[REPLACE] != 1 else ''}; {c[CREATE]} "
                f"created that {self.absent_label} does not run; {c[UNVERIFIED]} unverified")

    def needing_confirmation(self) -> tuple[Row, ...]:
        """Rows ``import apply`` will not pass without ``--accept`` (all but same/no-op)."""
        return tuple(r for r in self.rows if r.verdict not in QUIET)

    def to_json(self) -> dict[str, Any]:
        return {"format": REPORT_FORMAT, "stack": self.stack, "source": dict(self.source),
                "summary": self.summary, "counts": self.counts,
                "objects": [r.to_json() for r in self.rows],
                "notAdopted": [dict(n) for n in self.not_adopted],
                "accepted": list(self.accepted)}

    def dumps(self) -> str:
        """Canonical JSON: sorted keys, 2-space indent, trailing newline."""
        return json.dumps(self.to_json(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def sort_rows(rows: Iterable[Row]) -> tuple[Row, ...]:
    return tuple(sorted(rows, key=lambda r: (ORDER.index(r.verdict), r.urn)))


def verdict_of(changes: Sequence[rules.FieldChange], artefacts: Sequence[rules.Artefact]) -> str:
    """The verdict of a found object from its live changes and Pulumi's no-op lines."""
    worst = rules.worst(changes)
    if worst is not None:
        return {rules.REPLACE: REPLACE, rules.REFUSED: REFUSED, rules.CHANGE: CHANGE}[worst]
    return NO_OP if artefacts else SAME


def entry_names(plan: StackPlan) -> dict[str, str]:
    """``{URN: import-file entry name}`` of every leaf of ``plan`` (the names ``import
    generate`` writes; the report and ``--accept`` use them)."""
    return {urn: name for name, urn in generate(plan).urns.items()}


def _leaves(plan: StackPlan) -> list[PlannedResource]:
    return [r for r in plan.resources if r.custom and not r.is_provider
            and r.type != tokens.STACK_TYPE]


def live_row(r: PlannedResource, name: str, found: Lookup, replace_paths: Sequence[str]) -> Row:
    """The row of one declared object against its live lookup (path 2: the applier owns
    nothing; Pulumi's lines are what its import reads, :func:`rules.import_read`)."""
    if found.state == ABSENT:
        return Row(name, r.urn, r.type, found.ref, CREATE,
                   reason="not live under this identity: `up` creates it")
    if found.state != FOUND:
        return Row(name, r.urn, r.type, found.ref, UNVERIFIED, reason=found.reason)
    changes = rules.compare(r.type, r.inputs, found.body, owned=False,
                            ignore_changes=r.ignore_changes, replace_paths=replace_paths)
    changed = {c.path for c in changes}
    # Only Kubernetes objects and Helm releases come out of an import with other inputs than
    # the live object's (module docstring of rules): for a bridged provider the import reads
    # every field and the preview's diff is the provider's own, i.e. the changes themselves.
    shown: tuple[str, ...] = ()
    if rules.is_kubernetes_object(r.type) or r.type == tokens.HELM_RELEASE:
        read = rules.import_read(r.type, found.body)
        shown = rules.shown_paths(r.type, read, r.inputs, r.ignore_changes)
    artefacts = tuple(rules.Artefact(p, rules.artefact_reason(r.type, p, found.body))
                      for p in shown if not any(_overlaps(p, c) for c in changed))
    note = ""
    if r.type == tokens.HELM_RELEASE and found.body.get("status") not in (None, "deployed"):
        note = f"the live release's last revision is {found.body.get('status')}"
    return Row(name, r.urn, r.type, found.ref, verdict_of(changes, artefacts), changes,
               artefacts, note)


def _overlaps(a: str, b: str) -> bool:
    """One path is the other or under it (a shown line that covers a live change is not a
    no-op)."""
    pa, pb = lenient_parse(a), lenient_parse(b)
    return contains(pa, pb) or contains(pb, pa)


def live_report(plan: StackPlan, view: LiveView, *, urns: Iterable[str] | None = None,
                replace_paths: Any = None, accepted: Sequence[str] = (),
                absent_label: str = "the live system") -> AdoptionReport:
    """The report of ``plan``'s leaves (those of ``urns`` when given) against ``view``.
    ``replace_paths(type) -> paths``: the guard's replace properties (default: none);
    ``absent_label``: who does not run a created object, in the summary."""
    names = entry_names(plan)
    wanted = set(urns) if urns is not None else None
    rows = []
    for r in _leaves(plan):
        if wanted is not None and r.urn not in wanted:
            continue
        paths = tuple(replace_paths(r.type)) if replace_paths else ()
        rows.append(live_row(r, names.get(r.urn, r.name), view.lookup(r), paths))
    return AdoptionReport(stack=plan.stack, source=view.describe(), rows=sort_rows(rows),
                          absent_label=absent_label, accepted=tuple(sorted(accepted)))


# --- human rendering -----------------------------------------------------------------------------

#: A change line longer than this shows its live and declared values on lines of their own,
#: each whole (never cut: the import decision rests on them; the same constant as the
#: preview's, :data:`clusterstack.views.preview.LONG_LINE`).
_WIDTH = 160
_LABEL = {REPLACE: "REPLACE", REFUSED: "REFUSED", CHANGE: "CHANGE", UNVERIFIED: "UNVERIFIED",
          NO_OP: "NO-OP", SAME: "SAME", CREATE: "CREATE"}


def _change_lines(path: str, before: Any, declared: Any, rule: str) -> list[str]:
    """``    path: live → declared  — rule``, or when the values make it longer than
    :data:`_WIDTH` the path and rule, then ``live:`` and ``declared:`` each whole on a line of its own."""
    old, new = rules.render(before), rules.render(declared)
    one = f"    {path}: {old} → {new}"
    if len(one) <= _WIDTH:   # the rule's text, however long, follows on the same line
        return [one + rule]
    return [f"    {path}:{rule}", f"        live: {old}", f"        declared: {new}"]


def _kind(type_token: str) -> str:
    return "Helm release" if type_token == tokens.HELM_RELEASE else tokens.member(type_token)


def render_text(report: AdoptionReport, *, verbose_same: bool = True) -> list[str]:
    """The report as lines: a header, the summary, then one block per object, worst first
    (a change line longer than 160 characters puts each value whole on a line of its own)."""
    lines = [f"stack {report.stack}: adoption report ({_source(report.source)})",
             f"  {report.summary}"]
    accepted = set(report.accepted)
    for r in report.rows:
        if r.verdict == SAME and not verbose_same:
            continue
        mark = "  (accepted)" if r.name in accepted else ""
        lines.append(f"{_LABEL[r.verdict]:<10} {r.ref}  [{r.name}]{mark}")
        for c in r.changes:
            rule = f"  — {c.rule}" if c.rule else ""
            lines.extend(_change_lines(c.path, c.before, c.declared, rule))
        if r.verdict == NO_OP or (r.artefacts and r.changes):
            for a in r.artefacts:
                lines.append(f"    ~ {a.path}: no live change — {a.reason}")
        if r.reason:
            lines.append(f"    {r.reason}")
    for n in report.not_adopted:
        lines.append(f"{'STAYS':<10} {n['urn']}  — {n['reason']}")
    return lines


def _source(source: Mapping[str, Any]) -> str:
    kind = source.get("kind")
    if kind == "dumps":
        files = source.get("files") or []
        return f"live objects from {len(files)} dump file{'s' if len(files) != 1 else ''}"
    if kind == "adapters":
        return "live objects read through the adapters"
    if kind == "stack":
        return f"state of {source.get('from')}, migrated"
    return str(kind)


__all__ = ["AdoptionReport", "CHANGE", "CREATE", "NO_OP", "ORDER", "QUIET", "REFUSED",
           "REPLACE", "REPORT_FORMAT", "Row", "SAME", "UNVERIFIED", "entry_names", "live_report",
           "live_row", "render_text", "sort_rows", "verdict_of"]
