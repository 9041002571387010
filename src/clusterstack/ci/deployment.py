"""After a merge: was every stack the pull request changed actually updated from main?

CI never applies cluster stacks (an operator runs ``clusterstack up`` from a clean checkout of
main, docs/making-a-change.md), so a merged change can sit unapplied. ``ci deployment-check``
reads the PR's preview comment (its hidden data line lists the stacks whose preview showed a
change), and for each asks the stack's update history (``pulumi stack history``) for an update
that **succeeded and started after the merge** — an update that started before the merge
cannot contain the merged code. Missing ones get a reminder on the PR (one comment, updated
in place, marker :data:`MARKER`); when a later check finds everything applied, the same comment
says so.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Sequence

from clusterstack import markdown as md
from clusterstack.engine.model import HistoryEntry
from clusterstack.errors import ClusterstackError

MARKER = "<!-- clusterstack-ci:deployment-check -->"


@dataclass(frozen=True)
class Deployment:
    """One changed stack: ``update`` is the first successful update that started at or after the
    merge (None when there is none); ``problem`` says why the history could not be read."""

    stack: str
    update: HistoryEntry | None = None
    problem: str | None = None

    @property
    def deployed(self) -> bool:
        return self.update is not None


def first_update_after(history: Sequence[HistoryEntry], merged_at: datetime) -> HistoryEntry | None:
    """The earliest ``kind == "update"`` entry with ``result == "succeeded"`` whose start time is
    at or after ``merged_at`` (history entries are timezone-aware UTC); None if there is none.
    Previews, refreshes, failed and in-progress updates do not count."""
    hits = [(e.start_time, e) for e in history if e.kind == "update" and e.result == "succeeded"
            and e.start_time is not None and e.start_time >= merged_at]
    return min(hits, key=lambda hit: hit[0])[1] if hits else None


def check(stacks: Sequence[str], history: Callable[[str], Sequence[HistoryEntry]], merged_at: datetime
          ) -> list[Deployment]:
    """For each stack id, look up its history (``history(stack)``; a ClusterstackError — the
    stack does not exist in the backend, the passphrase is missing — becomes a ``problem``)."""
    out = []
    for s in stacks:
        try:
            out.append(Deployment(s, update=first_update_after(history(s), merged_at)))
        except ClusterstackError as exc:
            out.append(Deployment(s, problem=exc.render().splitlines()[0]))
    return out


def apply_command(stack: str, project_dir: str | None = None) -> str:
    """How an operator applies ``stack``: ``clusterstack up <cluster>`` for a cluster stack; for
    a ``<project>/<stack>`` of another project, the Pulumi CLI in its directory. Every word is
    shell-quoted (:func:`shlex.quote`): the operator pastes this into a shell, and a stack name
    comes from the pull request."""
    q = shlex.quote
    if "/" not in stack:
        return f"clusterstack up {q(stack)}"
    project, name = stack.split("/", 1)
    return f"pulumi up --cwd {q(project_dir or project)} --stack {q(name)}"


def reminder_body(pr: int, merged_at: datetime, results: list[Deployment], *, failed_previews: Sequence[str] = (),
                  commands: dict[str, str] | None = None) -> str:
    """The PR comment: what is applied, what is not and the command to apply it from main."""
    commands = commands or {}
    pending = [d for d in results if not d.deployed]
    when = merged_at.strftime("%Y-%m-%d %H:%M UTC")
    lines = [MARKER]
    if pending:
        lines += [f"### ⏳ Not applied yet: {len(pending)} of {len(results)} changed stack"
                  f"{'s' * (len(results) != 1)}",
                  "",
                  f"#{pr} was merged at {when}, but these stacks have no successful update that "
                  "started after the merge. CI never applies cluster stacks — from a clean checkout "
                  "of main, run:",
                  ""]
        shell = ["git switch main && git pull --ff-only"]
        shell += [commands.get(d.stack) or apply_command(d.stack) for d in pending]
        lines += [md.fence("\n".join(shell), "sh").rstrip("\n"), ""]
        for d in pending:
            if d.problem:
                lines.append(f"- {md.code(d.stack)}: history not readable — {md.text(d.problem, limit=300)}")
    else:
        lines += [f"### ✅ Applied: every stack #{pr} changed was updated after the merge ({when})", ""]
    for d in results:
        # deployed: an update whose start time is known (first_update_after)
        if d.update is not None and d.update.start_time is not None:
            v = f" version {d.update.version}" if d.update.version is not None else ""
            lines.append(f"- ✅ {md.code(d.stack)}: update{v} started "
                         f"{d.update.start_time.strftime('%Y-%m-%d %H:%M UTC')}")
    if failed_previews:
        lines += ["", "The preview of " + ", ".join(map(md.code, failed_previews)) +
                  " failed on the PR, so whether it changed is unknown: preview it from main."]
    return md.bound("\n".join(lines).rstrip() + "\n")
