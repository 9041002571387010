"""THE verdict document: one guard :class:`~clusterstack.guard.Verdict` over its steps, rendered
as human text (:func:`verdict_lines`) and as the versioned JSON document (:func:`verdict_json`).

Every command that shows a verdict uses these two and nothing else: ``guard`` (text, and
``--json``), ``preview`` / ``up`` (text; ``preview --json`` embeds the JSON under each stack's
``guard``), ``ci preview`` (``diff.txt`` holds the text, ``meta.json``'s ``guard`` the JSON, which
``ci comment`` reads back), ``deploy`` and the review record.

The JSON document, ``format: clusterstack.verdict/v1`` (docs/reference/verdict.md)::

    {"format": "clusterstack.verdict/v1",
     "ok": bool,                                   # no violation
     "severity": "blocked" | "delete" | "change" | "none",     # clusterstack.guard.severity
     "source": str | null, "input_format": "preview" | "events" | null,
     "counts": {"steps": int, "ops": {op: int}, "destructive": int,
                "destructive_ops": {"replace": int, "delete": int}, "violations": int},
     "destructive": [{"op", "urn", "type", "blocked": bool, "capacity": loss | null}],  # by URN
     "violations": [{"op", "urn", "type", "reasons": [str], "rule", "hint",
                     "capacity": loss | null}],                                       # by URN
     "warnings": [same shape as violations],   # capacity cuts [guard.capacity] warns of
     "intended": [same shape as violations],   # let through by a reviewed intent of the cluster file
     "stale_intents": [{"intent", "source"}],  # intents no step matches (the change is done)
     "capacity": [loss],                       # what every destructive change destroys, by URN
     "drift": [urn], "recovery": [urn],                               # sorted
     "change_summary": {op: int} | null}                              # Pulumi's own counts

    loss = {"urn", "type", "op": "shrink" | "delete" | "replace", "name",
            "cuts": [{"path", "old": int, "new": int, "unit": "nodes" | "racks" | "GPUs"}],
            "nodes_lost": int, "gpus_lost": int | null, "words": str}
    (clusterstack.guard.capacity.CapacityLoss.to_json)

``op`` ``shrink`` is a capacity cut by an in-place update (``destructive_ops`` counts it).

Version rule: a reader of ``v1`` ignores keys it does not know; a key is never removed or given
another meaning within ``v1`` (that is ``v2``). No timestamps: serialised with sorted keys
(:func:`clusterstack.cli.dump_json`) the document is byte-identical for the same input.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

from clusterstack.guard import Verdict, Violation, entry_lines, severity
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.urn import type_of

VERDICT_FORMAT = "clusterstack.verdict/v1"
#: Several files checked in one ``guard`` run: ``{"format", "ok", "verdicts": [v1 documents]}``.
VERDICT_SET_FORMAT = "clusterstack.verdict-set/v1"


def _types(steps: Iterable[Step]) -> dict[str, str]:
    return {s.urn: s.type for s in steps}


def verdict_json(verdict: Verdict, steps: Iterable[Step], *, source: str | None = None,
                 input_format: str | None = None,
                 change_summary: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The verdict document (module docstring) of ``verdict`` over ``steps`` (the
    :class:`~clusterstack.pulumi.steps.Step` rows it was computed from); ``source`` names the
    file or stack, ``input_format`` the document format (``preview`` / ``events``),
    ``change_summary`` Pulumi's own op counts."""
    steps = list(steps)
    types = _types(steps)
    blocked = {v.urn for v in verdict.violations}
    def loss(urn: str) -> dict[str, Any] | None:
        c = verdict.capacity_of(urn)
        return c.to_json() if c is not None else None

    def entry(v: Violation) -> dict[str, Any]:
        return {"op": v.op, "urn": v.urn, "type": v.type, "reasons": list(v.reasons),
                "rule": v.rule, "hint": v.hint, "capacity": loss(v.urn)}

    destructive = [{"op": op, "urn": urn, "type": types.get(urn) or type_of(urn),
                    "blocked": urn in blocked, "capacity": loss(urn)}
                   for op, urn in verdict.destructive]
    return {
        "format": VERDICT_FORMAT,
        "ok": verdict.ok,
        "severity": severity(verdict, steps),
        "source": source,
        "input_format": input_format,
        "counts": {
            "steps": len(steps),
            "ops": dict(sorted(Counter(s.op for s in steps).items())),
            "destructive": len(destructive),
            "destructive_ops": dict(sorted(Counter(d["op"] for d in destructive).items())),
            "violations": len(verdict.violations),
        },
        "destructive": destructive,
        "violations": [entry(v) for v in verdict.violations],
        "warnings": [entry(v) for v in verdict.warnings],
        "intended": [entry(v) for v in verdict.intended],
        "stale_intents": [{"intent": r.words(), "source": r.source} for r in verdict.stale_intents],
        "capacity": [c.to_json() for c in verdict.capacity],
        "drift": list(verdict.drift),
        "recovery": list(verdict.recovery),
        "change_summary": dict(sorted(change_summary.items())) if change_summary else None,
    }


def verdict_set_json(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Several verdict documents (one per file) as one: ``ok`` when every one is."""
    return {"format": VERDICT_SET_FORMAT, "ok": all(d["ok"] for d in documents),
            "verdicts": documents}


def summary_line(verdict: Verdict, n_steps: int) -> str:
    """One line: ``guard: ok|BLOCKED — N violation(s); M destructive change(s) (…) in K step(s)``."""
    ops = Counter(op for op, _ in verdict.destructive)
    detail = f" ({', '.join(f'{n} {op}' for op, n in sorted(ops.items()))})" if ops else ""
    head = "ok" if verdict.ok else "BLOCKED"
    return (f"guard: {head} — {len(verdict.violations)} violation(s); "
            f"{len(verdict.destructive)} destructive change(s){detail} in {n_steps} step(s)")


def verdict_lines(verdict: Verdict, steps: Iterable[Step]) -> list[str]:
    """The verdict as text lines: every violation (:meth:`~clusterstack.guard.Violation.lines`:
    op, kind, name, the forcing properties and the rule on one line, then what to do, naming
    the URN once, and the capacity it destroys), each capacity cut the policy warns of
    (``WARNING shrink …``), each allowed destructive change (``allowed <op> <Kind> <name>: allowed by
    the [guard] policy``), each URN a refresh found gone (``drift …``) or re-created after an
    interrupted replacement (``recovery …``), then :func:`summary_line`. Plain text (URNs hold
    ``[`` and ``$``): no markup, so the same lines serve the terminal, CI logs and the PR
    comment."""
    steps = list(steps)
    types = _types(steps)

    def kind(urn: str) -> str:
        return types.get(urn) or type_of(urn)

    blocked = {v.urn for v in verdict.violations}
    warned = {v.urn for v in verdict.warnings}
    lines = [line for v in verdict.violations for line in v.lines()]
    lines += [line for v in verdict.warnings for line in v.lines(verb="WARNING")]
    intended = {v.urn for v in verdict.intended}
    lines += [line for v in verdict.intended
              for line in entry_lines("intended", v.op, v.type, v.urn, rule="a reviewed intent of "
                                      "the cluster file lets exactly this through", capacity=v.capacity)]
    lines += [f"stale intent {r.words()} ({r.source}): no step makes this change — it is done; "
              "remove the stanza" for r in verdict.stale_intents]
    lines += [line for op, urn in verdict.destructive
              if urn not in blocked and urn not in warned and urn not in intended
              for line in entry_lines("allowed", op, kind(urn), urn,
                                      rule="allowed by the [guard] policy",
                                      capacity=verdict.capacity_of(urn))]
    lines += [line for urn in verdict.drift
              for line in entry_lines("drift", "gone", kind(urn), urn,
                                      rule="a refresh found it gone from the cloud (this run "
                                      "deletes nothing): reconcile the config with reality")]
    lines += [line for urn in verdict.recovery
              for line in entry_lines("recovery", "replace", kind(urn), urn,
                                      rule="re-created after an interrupted delete-before-replace "
                                      "(its old resource is already gone)")]
    return lines + [summary_line(verdict, len(steps))]
