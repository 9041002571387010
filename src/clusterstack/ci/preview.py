"""Preview many stacks at once and write what each would do: ``<out>/<slug>/meta.json`` and
``<out>/<slug>/diff.txt``.

The engine calls are bound by the Pulumi CLI subprocess (and the cloud APIs behind it), not by
Python, so stacks are previewed on a bounded thread pool (:func:`run_previews`): the wall time
of N stacks on N workers is about that of the slowest, not the sum (measured in
``bench/ci_bench.py``, recorded in ``docs/performance.md``). Each stack gets its own engine
(one Automation API workspace per stack) and one stack's failure never hides the others: it is
recorded as an ``error`` outcome.

``meta.json`` (schema 2; keys sorted, no timestamps, so a re-run over the same state writes the
same bytes)::

    {"schema": 2, "stack": "cw-demo-h100", "project": "clusters", "slug": "cw-demo-h100",
     "refresh": false, "result": "ok" | "error",
     "severity": "error" | "blocked" | "delete" | "change" | "none",
     "counts": {op: n},              # the engine's resource changes, by Pulumi OpType (incl. same)
     "changes": {group: n},          # logical changes: create/import/update/replace/delete/other
     "guard": <the verdict document, clusterstack.verdict/v1> | null,   # views/verdict.py
     "error": null | {"kind": "StackLockedError", "message": "…", "internal": false},
     "diff": "diff.txt",
     "review": {"file": "review.json", "digest": "sha256:…"}   # when a record was written
             | {"warning": "no review record: …"}        # when none could be (why), else absent}

``review.json`` beside it is the stack's review record (:mod:`clusterstack.guard.review`,
``clusterstack.review/v2``) for ``up --reviewed``: its steps carry no values, and when the
redactor changes any of its URNs or paths the record says ``"redacted": true`` and binds
nothing. A stack previewed without error whose ``stack history`` could not be read has no
state version to bind, so no record: ``review.warning`` says so and why (``ci comment`` shows
it on the stack's line) rather than the record silently missing.

Severity, worst first: ``error`` (no preview), then the verdict's (:func:`clusterstack.guard.severity`):
``blocked`` (a guard violation), ``delete`` (a replace or delete the policy allows), ``change``
(anything else that would change), ``none``. ``severity`` is written for people and tools
reading the directory; ``ci comment`` never trusts it: it recomputes the severity from the
verdict document and the counts and refuses a ``meta.json`` whose stored severity disagrees
(:func:`clusterstack.ci.comment.load_reports`). Schema 2 (the verdict document under
``guard``) replaced schema 1 (a guard object of its own shape).
Every string written passes through :class:`clusterstack.ci.redaction.Redactor`.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from clusterstack.ci.discover import StackTarget
from clusterstack.ci.redaction import Redactor
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import write_atomic
from clusterstack.engine.errors import EngineInterruptedError
from clusterstack.flows.up import guarded_preview
from clusterstack.engine.model import Engine, PreviewResult
from clusterstack.guard import GuardPolicy, Verdict, severity
from clusterstack.guard.intent import IntentRule
from clusterstack.guard.review import ReviewRecord
from clusterstack.inventory import capacity_from_steps
from clusterstack.views.preview import group_changes, render_changes
from clusterstack.views.verdict import verdict_json, verdict_lines
from clusterstack.config.prices import DEFAULT_PRICES, PriceTable

SCHEMA = 2
SEVERITIES = ("error", "blocked", "delete", "change", "none")  # worst first
CHANGED = frozenset({"blocked", "delete", "change"})
META = "meta.json"
DIFF = "diff.txt"


@dataclass(frozen=True)
class ErrorInfo:
    """Why a stack has no preview: ``kind`` (the exception class), ``message`` (the rendered
    ``file:line: field: problem — hint`` lines of a ClusterstackError, else the exception text),
    ``internal``: True for an unexpected exception (a bug), False for a user-fixable one."""

    kind: str
    message: str
    internal: bool = False


@dataclass(frozen=True)
class StackOutcome:
    """One stack's preview (``result`` + guard ``verdict``) or its ``error``."""

    target: StackTarget
    result: PreviewResult | None = None
    verdict: Verdict | None = None
    error: ErrorInfo | None = None
    refresh: bool = False
    #: the review record of the preview, or None
    record: ReviewRecord | None = None
    #: why no record was written for a successful preview (``meta.json`` ``review.warning``)
    record_warning: str | None = None

    @property
    def severity(self) -> str:
        """One of :data:`SEVERITIES` (module docstring): ``error``, else the verdict's own
        (:func:`clusterstack.guard.severity`, from the verdict and the steps)."""
        if self.error is not None or self.result is None or self.verdict is None:
            return "error"
        return severity(self.verdict, self.result.steps)

    def previewed(self) -> tuple[PreviewResult, Verdict]:
        """``(result, verdict)`` of a stack that was previewed. Raises ValueError for an error
        outcome (it has neither)."""
        if self.error is not None or self.result is None or self.verdict is None:
            raise ValueError(f"{self.target.id}: no preview (an error outcome)")
        return self.result, self.verdict


def severity_rank(severity: str) -> int:
    """0 for the worst (``error``) … 4 for ``none``."""
    return SEVERITIES.index(severity)


def preview_target(target: StackTarget, *, engine: Callable[[StackTarget], Engine], policy: GuardPolicy,
                   refresh: bool = False, validate: Callable[[StackTarget], None] | None = None,
                   intents: Callable[[StackTarget], Sequence[IntentRule]] | None = None,
                   check_verdict: Callable[[StackTarget, Verdict], None] | None = None) -> StackOutcome:
    """Preview one stack: ``validate`` (the cluster config, so its errors read ``file:line``
    before the program runs), then ``engine(target).preview(stack, refresh=…)``, then the guard
    (:func:`clusterstack.flows.up.guarded_preview`: a protect refusal is a blocked verdict) with
    the target's reviewed ``intents``, then ``check_verdict``. Never raises for a failing stack:
    a ClusterstackError becomes a user-fixable error outcome, any other exception an internal
    one."""
    try:
        if validate is not None:
            validate(target)
        result, verdict = guarded_preview(engine(target), target.stack, policy, refresh=refresh,
                                          intents=intents(target) if intents is not None else ())
        if check_verdict is not None:   # a stale reviewed intent: an error outcome (exit 2)
            check_verdict(target, verdict)
        return StackOutcome(target, result=result, verdict=verdict, refresh=refresh)
    except EngineInterruptedError:
        raise   # SIGINT/SIGTERM: the whole run stops (exit 130/143), not this stack alone
    except ClusterstackError as exc:
        return StackOutcome(target, error=ErrorInfo(type(exc).__name__, exc.render()), refresh=refresh)
    except Exception as exc:  # noqa: BLE001 — one stack's crash must not lose the others' results
        return StackOutcome(target, error=ErrorInfo(type(exc).__name__, str(exc) or repr(exc), internal=True),
                            refresh=refresh)


def run_previews(targets: Sequence[StackTarget], preview: Callable[[StackTarget], StackOutcome], *,
                 parallel: int = 4, on_done: Callable[[StackOutcome], None] | None = None
                 ) -> list[StackOutcome]:
    """Run ``preview`` over ``targets`` on at most ``parallel`` threads (≥ 1). ``on_done`` is
    called in the calling thread as each stack finishes (progress bars). Returns the outcomes in
    the order of ``targets``. Raises ValueError for ``parallel`` < 1."""
    if parallel < 1:
        raise ValueError("parallel must be at least 1")
    if not targets:
        return []
    results: dict[StackTarget, StackOutcome] = {}
    pool = ThreadPoolExecutor(max_workers=min(parallel, len(targets)), thread_name_prefix="ci-preview")
    try:
        futures = {pool.submit(preview, t): t for t in targets}
        for fut in as_completed(futures):
            outcome = fut.result()
            results[futures[fut]] = outcome
            if on_done is not None:
                on_done(outcome)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [results[t] for t in targets]


# --- writing ---------------------------------------------------------------------------------------

def diff_lines(outcome: StackOutcome, redactor: Redactor) -> list[str]:
    """The plain-text diff of one outcome (the grouped diff of
    :func:`clusterstack.views.preview.render_changes` and the verdict's text,
    :func:`clusterstack.views.verdict.verdict_lines`), redacted; for an error, the error text."""
    t = outcome.target
    if outcome.error is not None:
        kind = "internal error" if outcome.error.internal else "preview failed"
        lines = [f"{t.id}: {kind} ({outcome.error.kind})"] + [
            f"  {line}" for line in outcome.error.message.splitlines()]
    else:
        res, verdict = outcome.previewed()
        shown = replace(res, stack=t.id, steps=tuple(redactor.step(s) for s in res.steps),
                        stdout="", diagnostics=tuple(replace(d, message=redactor.text(d.message),
                                                             urn=redactor.text(d.urn))
                                                     for d in res.diagnostics))
        lines = render_changes(shown) + verdict_lines(_redacted_verdict(verdict, redactor),
                                                      shown.steps)
    return [redactor.text(line) for line in lines]


def _redacted_verdict(v: Verdict, redactor: Redactor) -> Verdict:
    """``v`` with every URN, rule, reason and hint passed through ``redactor``."""
    return replace(v, violations=tuple(replace(x, urn=redactor.text(x.urn), rule=redactor.text(x.rule),
                                               reasons=tuple(redactor.text(r) for r in x.reasons),
                                               hint=redactor.text(x.hint))
                                       for x in v.violations),
                   destructive=tuple((op, redactor.text(u)) for op, u in v.destructive),
                   drift=tuple(redactor.text(u) for u in v.drift),
                   recovery=tuple(redactor.text(u) for u in v.recovery))


def meta_doc(outcome: StackOutcome, redactor: Redactor, prices: PriceTable | None = None) -> dict[str, Any]:
    """The ``meta.json`` document of one outcome (module docstring), redacted."""
    t = outcome.target
    doc: dict[str, Any] = {"schema": SCHEMA, "stack": t.id, "project": t.project, "slug": t.slug,
                           "refresh": outcome.refresh, "severity": outcome.severity, "diff": DIFF}
    if outcome.error is not None:
        doc.update(result="error", counts={}, changes={}, guard=None,
                   error={"kind": outcome.error.kind, "message": redactor.text(outcome.error.message),
                          "internal": outcome.error.internal})
        return doc
    res, verdict = outcome.previewed()
    steps = tuple(redactor.step(s) for s in res.steps)
    groups = group_changes(steps)
    doc.update(
        result="ok", error=None,
        counts={k: int(n) for k, n in sorted(res.counts.items())},
        changes={k: len(chs) for k, chs in sorted(groups.items()) if chs},
        guard=verdict_json(_redacted_verdict(verdict, redactor), steps, source=t.id,
                           input_format="engine", change_summary=dict(res.counts)))
    # only when the fleet changes (key absent else); priced by [cost] (config/prices.py)
    capacity = capacity_from_steps(t.id, res.steps, prices or DEFAULT_PRICES)
    if capacity:
        doc["capacity"] = [redactor.text(line) for line in capacity]
    return doc


REVIEW = "review.json"


def redacted_record(record: ReviewRecord, verdict_doc: dict[str, Any], redactor: Redactor) -> ReviewRecord:
    """``record`` as a public artifact: its steps' URNs, types and paths through ``redactor``
    (``redacted`` set when any changed: such a record binds no update), its verdict the
    redacted verdict document of ``meta.json``."""
    from dataclasses import replace as dc_replace

    steps = tuple(dc_replace(st, urn=redactor.text(st.urn), type=redactor.text(st.type),
                             paths=tuple(redactor.text(p) for p in st.paths)) for st in record.steps)
    return dc_replace(record, steps=steps, verdict=verdict_doc,
                      redacted=record.redacted or steps != record.steps)


def write_outcome(out_dir: Path, outcome: StackOutcome, redactor: Redactor,
                  prices: PriceTable | None = None) -> Path:
    """Write ``<out_dir>/<slug>/meta.json`` and ``diff.txt`` (and ``review.json`` when the
    outcome has a review record) atomically; returns the directory."""
    d = Path(out_dir) / outcome.target.slug
    d.mkdir(parents=True, exist_ok=True)
    write_atomic(d / DIFF, "\n".join(diff_lines(outcome, redactor)) + "\n")
    meta = meta_doc(outcome, redactor, prices)
    if outcome.record is not None and outcome.error is None:
        record = redacted_record(outcome.record, meta["guard"], redactor)
        write_atomic(d / REVIEW, record.text())
        meta["review"] = {"file": REVIEW, "digest": record.digest}
    elif outcome.record_warning is not None and outcome.error is None:
        meta["review"] = {"warning": redactor.text(outcome.record_warning)}
    write_atomic(d / META, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return d


def exit_code(outcomes: Sequence[StackOutcome]) -> int:
    """The command's exit code over all stacks: 3 if any is blocked by the guard; else 1 if any
    failed with an internal error, 2 if any failed with a user-fixable error; else 0."""
    sev = {o.severity for o in outcomes}
    if "blocked" in sev:
        return 3
    if any(o.error is not None and o.error.internal for o in outcomes):
        return 1
    return 2 if "error" in sev else 0
