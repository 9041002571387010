"""Drift: code versus cloud, reported in one tracking issue.

``ci drift`` previews every stack *with refresh* (the cloud's current state first), so a stack
that would change means the cloud moved away from the code (someone edited a resource by hand)
or a merged change was never applied. The result is summarised by a **fingerprint**: SHA-256 of
the canonical JSON of ``[(stack, severity, counts without "same")]`` over the stacks that are not
clean, sorted by stack. It has no time, run id or resource text in it, so the same drift gives the
same fingerprint on every run; ``same`` counts are left out because applying an unrelated new
resource is not drift.

The tracking issue (label :data:`LABEL`, body starting with :data:`MARKER` and the fingerprint)
is a small state machine, :func:`sync_issue`:

====================  ==================  ============================================
open issue            drift now           action
====================  ==================  ============================================
none                  none                nothing (``clean``)
none                  some                create it (``created``)
yes, same fingerprint some                nothing (``unchanged``) — no notification noise
yes, other fprint     some                rewrite the body, comment what changed (``updated``)
yes                   none                comment "clean", close as completed (``closed``)
====================  ==================  ============================================

Several open marker issues (one re-opened by hand): the lowest-numbered is the tracking issue.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Iterable

from clusterstack.ci.comment import ICONS, LABELS, StackReport, status_line
from clusterstack.ci.github import GitHubRepo
from clusterstack.ci.preview import SEVERITIES

MARKER = "<!-- clusterstack-ci:drift"
LABEL = "clusterstack-drift"
TITLE = "Drift: stacks differ from the code"
_FP = re.compile(r"<!-- clusterstack-ci:drift fingerprint=([0-9a-f]{64}) -->")


def drift_entries(reports: Iterable[StackReport]) -> list[dict]:
    """``[{"stack", "severity", "counts"}]`` of the stacks that are not clean, sorted by stack;
    ``counts`` without ``same``."""
    return [{"stack": r.stack, "severity": r.severity,
             "counts": {k: int(v) for k, v in sorted(r.counts.items()) if k != "same" and v}}
            for r in sorted(reports, key=lambda r: r.stack) if r.severity != "none"]


def fingerprint(reports: Iterable[StackReport]) -> str:
    """Hex SHA-256 of the canonical JSON of :func:`drift_entries` (module docstring)."""
    doc = json.dumps(drift_entries(reports), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def issue_fingerprint(body: str) -> str | None:
    """The fingerprint recorded in a tracking issue's body (None if it has none)."""
    m = _FP.search(body)
    return m.group(1) if m else None


def issue_body(reports: list[StackReport], fp: str, *, run_url: str | None = None) -> str:
    """The tracking issue's body: marker with the fingerprint, the drifting stacks' status lines,
    and what to do. Deterministic for the same reports and ``run_url``."""
    drifting = [r for r in reports if r.severity != "none"]
    tally = " · ".join(f"{ICONS[s]} {sum(1 for r in drifting if r.severity == s)} {LABELS[s]}"
                       for s in SEVERITIES if any(r.severity == s for r in drifting))
    lines = [f"{MARKER} fingerprint={fp} -->",
             f"**{len(drifting)} of {len(reports)} stacks** differ from the code after a refresh: {tally}",
             ""]
    lines += [status_line(r) for r in sorted(drifting, key=lambda r: (SEVERITIES.index(r.severity), r.stack))]
    lines += ["",
              "What to do (docs/ci.md, \"Drift\"): run `clusterstack preview <stack> --refresh` to see "
              "each difference. A change made by hand in the cloud is either put into the reviewed "
              "config (a PR) or undone by applying the code from main; a merged change that was "
              "never applied is applied from main. This issue is updated when the drift changes "
              "and closed when every stack is clean."]
    if run_url:
        lines += ["", f"Diffs: [the drift run's artifacts]({run_url})."]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DriftSync:
    """What :func:`sync_issue` did: ``action`` (clean / created / unchanged / updated / closed)
    and the issue number (None when there is none)."""

    action: str
    issue: int | None


def sync_issue(repo: GitHubRepo, reports: list[StackReport], *, run_url: str | None = None) -> DriftSync:
    """Bring the one tracking issue in line with ``reports`` (the table in the module docstring).
    Raises GitHubError from the API."""
    fp = fingerprint(reports)
    drifting = any(r.severity != "none" for r in reports)
    current = next((i for i in repo.open_issues(LABEL) if i.body.lstrip().startswith(MARKER)), None)
    if not drifting:
        if current is None:
            return DriftSync("clean", None)
        repo.create_comment(current.number, "Every stack matches the code again "
                            f"({len(reports)} previewed with refresh). Closing."
                            + (f" Run: {run_url}" if run_url else ""))
        repo.edit_issue(current.number, state="closed", state_reason="completed")
        return DriftSync("closed", current.number)
    body = issue_body(reports, fp, run_url=run_url)
    if current is None:
        issue = repo.create_issue(TITLE, body, (LABEL,))
        return DriftSync("created", issue.number)
    if issue_fingerprint(current.body) == fp:
        return DriftSync("unchanged", current.number)
    old = {e["stack"]: e for e in _entries_from_body(current.body)}
    repo.edit_issue(current.number, body=body)
    repo.create_comment(current.number, _change_note(old, drift_entries(reports), run_url))
    return DriftSync("updated", current.number)


def _entries_from_body(body: str) -> list[dict]:
    """Stacks named on the status lines of an old body (``- <icon> `stack` — …``)."""
    out = []
    for line in body.splitlines():
        m = re.match(r"^- (\S+) `+ ?([^`]+?) ?`+ — ", line)
        if m:
            sev = next((s for s, icon in ICONS.items() if icon == m.group(1)), "change")
            out.append({"stack": m.group(2), "severity": sev})
    return out


def _change_note(old: dict[str, dict], new: list[dict], run_url: str | None) -> str:
    now = {e["stack"]: e for e in new}
    parts = []
    added = sorted(set(now) - set(old))
    gone = sorted(set(old) - set(now))
    changed = sorted(s for s in set(now) & set(old) if now[s]["severity"] != old[s]["severity"])
    if added:
        parts.append("now drifting: " + ", ".join(f"`{s}`" for s in added))
    if gone:
        parts.append("clean again: " + ", ".join(f"`{s}`" for s in gone))
    if changed:
        parts.append("severity changed: " + ", ".join(f"`{s}` ({old[s]['severity']} → {now[s]['severity']})"
                                                       for s in changed))
    what = "; ".join(parts) or "the counts of changes differ"
    return f"Drift changed — {what}. The description above is current." + (f" Run: {run_url}" if run_url else "")
