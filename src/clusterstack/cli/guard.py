"""``clusterstack guard FILE…``: the destructive-change guard over saved Pulumi previews or
engine event logs (format auto-detected, see :mod:`clusterstack.pulumi.documents`), one
report over every file given.

The policy is the workspace's ``[guard]`` table (``clusterstack.toml``). Exit codes: 0 clean,
3 blocked (any violation, including a resource Pulumi itself refused because it is protected),
2 bad input (unreadable file, not a Pulumi format, bad ``[guard]``, and a document that is no
evidence: a failed, cancelled or truncated run, a stream or document that contradicts itself
— see :func:`clusterstack.pulumi.documents.check_usable`). The verdict is THE verdict document
(:mod:`clusterstack.views.verdict`), as text or ``--json``.
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any

import typer

from clusterstack.cli import emit_json, out, workspace
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.guard import GuardBlocked, check_document
from clusterstack.pulumi.documents import parse_file
from clusterstack.views.verdict import verdict_json, verdict_lines, verdict_set_json

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


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
    ``clusterstack.verdict/v1`` document (:func:`clusterstack.views.verdict.verdict_json`);
    several, ``{"format": "clusterstack.verdict-set/v1", "ok", "verdicts": [one per file]}``.
    Exit 3 (an ``error:`` line per blocked file on stderr) when any file is blocked."""
    ws = workspace()
    policy = ws.guard
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
    if as_json:
        docs = [verdict_json(verdict, parsed.steps, source=str(file), input_format=parsed.format,
                             change_summary=parsed.change_summary)
                for file, parsed, verdict in checked]
        emit_json(docs[0] if len(docs) == 1 else verdict_set_json(docs))
    elif len(checked) == 1:
        _, parsed, verdict = checked[0]
        out.file.write("\n".join(verdict_lines(verdict, parsed.steps)) + "\n")
    else:
        lines = []
        for file, parsed, verdict in checked:
            lines += [f"== {file}", *verdict_lines(verdict, parsed.steps), ""]
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
