"""``clusterstack guard FILE…``: the destructive-change guard over saved Pulumi previews or
engine event logs (format auto-detected, see :mod:`clusterstack.pulumi.documents`), one
report over every file given.

The policy is the workspace's ``[guard]`` table (``clusterstack.toml``). Exit codes: 0 clean,
3 blocked (any violation, including a resource Pulumi itself refused because it is protected),
2 bad input (unreadable file, not a Pulumi format, bad ``[guard]``, and a document that is no
evidence: a failed or truncated run, a change summary that contradicts the steps — see
:func:`clusterstack.pulumi.documents.check_usable`).
:func:`verdict_document` and :func:`print_verdict` are shared with ``preview`` / ``up``.
"""

from __future__ import annotations

import os

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import typer
from rich.console import Console

from clusterstack.cli import app, emit_json, out, workspace

GUARD_FORMAT = "clusterstack.guard/v1"


def _types(steps: Iterable[Any]) -> dict[str, str]:
    return {s.urn: s.type for s in steps}


def verdict_document(verdict: Any, steps: Iterable[Any], *, source: str | None = None,
                     input_format: str | None = None,
                     change_summary: dict[str, int] | None = None) -> dict[str, Any]:
    """The canonical JSON form of a guard verdict (``format: clusterstack.guard/v1``)::

        {"format", "source", "input_format", "ok": bool,
         "counts": {"steps": int, "ops": {op: int}, "destructive": int,
                    "destructive_ops": {"replace": int, "delete": int}, "violations": int},
         "destructive": [{"op", "urn", "type", "blocked": bool}],      # sorted by URN
         "violations": [{"op", "urn", "type", "reasons": [str], "rule", "hint"}],
         "change_summary": {op: int} | null}                           # Pulumi's own counts

    ``steps`` are the parsed :class:`~clusterstack.pulumi.steps.Step` rows the verdict was computed
    from. No timestamps; serialise with sorted keys for byte-identical output."""
    steps = list(steps)
    types = _types(steps)
    blocked = {v.urn for v in verdict.violations}
    destructive = [{"op": op, "urn": urn, "type": types.get(urn, ""), "blocked": urn in blocked}
                   for op, urn in verdict.destructive]
    return {
        "format": GUARD_FORMAT,
        "source": source,
        "input_format": input_format,
        "ok": verdict.ok,
        "counts": {
            "steps": len(steps),
            "ops": dict(sorted(Counter(s.op for s in steps).items())),
            "destructive": len(destructive),
            "destructive_ops": dict(sorted(Counter(d["op"] for d in destructive).items())),
            "violations": len(verdict.violations),
        },
        "destructive": destructive,
        "violations": [{"op": v.op, "urn": v.urn, "type": v.type, "reasons": list(v.reasons),
                        "rule": v.rule, "hint": v.hint} for v in verdict.violations],
        "change_summary": dict(sorted(change_summary.items())) if change_summary else None,
    }


def summary_line(verdict: Any, n_steps: int) -> str:
    """One line: ``guard: ok|BLOCKED — N violation(s); M destructive change(s) (…) in K step(s)``."""
    ops = Counter(op for op, _ in verdict.destructive)
    detail = f" ({', '.join(f'{n} {op}' for op, n in sorted(ops.items()))})" if ops else ""
    head = "ok" if verdict.ok else "BLOCKED"
    return (f"guard: {head} — {len(verdict.violations)} violation(s); "
            f"{len(verdict.destructive)} destructive change(s){detail} in {n_steps} step(s)")


def verdict_lines(verdict: Any, n_steps: int, types: dict[str, str] | None = None) -> list[str]:
    """Every violation (:meth:`Violation.lines`: the entry on one line — op, kind, name, the
    forcing properties, the rule — then what to do, naming the URN once), then each allowed
    destructive change (``allowed <op> <Kind> <name>``; ``types``: URN → type token of the
    steps, else the URN's own), then :func:`summary_line`."""
    from clusterstack.guard import entry_lines
    from clusterstack.pulumi.urn import type_of

    blocked = {v.urn for v in verdict.violations}
    allowed = [line for op, urn in verdict.destructive if urn not in blocked
               for line in entry_lines("allowed", op, (types or {}).get(urn) or type_of(urn), urn,
                                       rule="allowed by the [guard] policy")]
    return ([line for v in verdict.violations for line in v.lines()] + allowed
            + [summary_line(verdict, n_steps)])


def print_verdict(verdict: Any, n_steps: int, console: Console,
                  types: dict[str, str] | None = None) -> None:
    """Write :func:`verdict_lines` to ``console``'s file as plain text, in one write: no rich
    markup (URNs contain ``[`` and ``$``) and no per-line rendering (a 20,000-step preview has
    thousands of lines; rich costs ~0.2 ms each)."""
    console.file.write("\n".join(verdict_lines(verdict, n_steps, types)) + "\n")


GUARD_SET_FORMAT = "clusterstack.guard-set/v1"


@app.command("guard")
def guard_cmd(files: list[Path] = typer.Argument(..., metavar="FILE...",
                                                 help="Saved `pulumi preview --json` documents, or "
                                                 "engine event logs (`--event-log FILE`, `pulumi up "
                                                 "--json`): one or more, e.g. one per stack."),
              as_json: bool = typer.Option(False, "--json", help="Print the canonical JSON verdict "
                                           "(several files: one document holding each file's).")) -> None:
    """Check saved previews or event logs against the guard policy of clusterstack.toml; exit 3 when any is blocked.

    Every file is read and checked first: one that is no usable Pulumi document is exit 2 for
    the whole run (every such file named), before any verdict. Then one report: a single file's
    verdict as before; for several, each file's verdict under a ``== FILE`` line, in argument
    order, and a closing ``guard: …`` line over all of them. ``--json``: one file, its
    ``clusterstack.guard/v1`` document (:func:`verdict_document`); several,
    ``{"format": "clusterstack.guard-set/v1", "ok", "verdicts": [one v1 document per file]}``.
    Exit 3 (an ``error:`` line per blocked file on stderr) when any file is blocked."""
    from clusterstack.errors import ClusterstackError, Problem
    from clusterstack.guard import GuardBlocked, GuardPolicy, check_document
    from clusterstack.pulumi.documents import parse_file

    ws = workspace()
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file, line_of=ws.line_of)
    # a file named twice (or by two spellings: a/../b.json, a link to it) is checked once, shown
    # as first named
    first: dict[str, Path] = {}
    for f in files:
        first.setdefault(os.path.realpath(f), f)
    files = list(first.values())
    checked, problems = [], []
    for file in files:                     # every file before any verdict: all or nothing
        try:
            parsed = parse_file(file)
            checked.append((file, parsed, check_document(parsed, policy, source=file)))
        except ClusterstackError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ClusterstackError(problems=problems)
    docs = [verdict_document(verdict, parsed.steps, source=str(file), input_format=parsed.format,
                             change_summary=dict(parsed.change_summary) if parsed.change_summary else None)
            for file, parsed, verdict in checked] if as_json else []
    if as_json:
        emit_json(docs[0] if len(docs) == 1 else {
            "format": GUARD_SET_FORMAT, "ok": all(d["ok"] for d in docs), "verdicts": docs})
    elif len(checked) == 1:
        _, parsed, verdict = checked[0]
        print_verdict(verdict, len(parsed.steps), out, _types(parsed.steps))
    else:
        lines = []
        for file, parsed, verdict in checked:
            lines += [f"== {file}", *verdict_lines(verdict, len(parsed.steps), _types(parsed.steps)), ""]
        n_blocked = sum(not v.ok for _, _, v in checked)
        lines.append(f"guard: {'BLOCKED' if n_blocked else 'ok'} — {n_blocked} of {len(checked)} "
                     "file(s) blocked")
        out.file.write("\n".join(lines) + "\n")
    blocked: list[tuple[Any, Problem]] = []
    for file, parsed, verdict in checked:
        if verdict.ok:
            continue
        p = GuardBlocked(verdict).problems[0]
        p.file = file
        p.hint = 'see "violations" in the JSON above' if as_json else "see the BLOCKED lines above"
        if parsed.is_preview is False:  # a recorded update: the engine already ran these steps
            p.hint += "; this log records an update that performed them — check the live resources"
        blocked.append((verdict, p))
    if blocked:   # one error line per blocked file; the first blocked verdict is the exception's
        exc = GuardBlocked(blocked[0][0])
        exc.problems = [p for _, p in blocked]
        raise exc
