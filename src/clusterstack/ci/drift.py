"""Drift: code versus cloud, reported in one tracking issue.

``ci drift`` previews every stack *with refresh* (the cloud's current state first), so a stack
that would change means the cloud moved away from the code (someone edited a resource by hand)
or a merged change was never applied. The result is summarised by a **fingerprint**: SHA-256 of
the canonical JSON of ``[(stack, severity, counts without "same")]`` over the stacks that are not
clean, sorted by stack. It has no time, run id or resource text in it, so the same drift gives the
same fingerprint on every run; ``same`` counts are left out because applying an unrelated new
resource is not drift.

A stack whose preview failed (severity ``error``: no credentials, a locked stack, an
unreachable cluster) was **not checked**: it is not drift — nothing is known about it — and it
is not clean either. It is listed apart (:func:`unchecked_entries`, with the first line of its
error), takes part in the fingerprint as ``not checked`` (so the issue changes when the set of
unchecked stacks does), keeps the tracking issue open, and makes the run fail (exit 2).

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
from typing import Iterable, Sequence

from clusterstack import markdown as md
from clusterstack.ci.comment import ICONS, LABELS, StackReport, status_line
from clusterstack.adapters.github import GitHubRepo
from clusterstack.ci.preview import SEVERITIES

MARKER = "<!-- clusterstack-ci:drift"
LABEL = "clusterstack-drift"
TITLE = "Drift: stacks differ from the code"
_FP = re.compile(r"<!-- clusterstack-ci:drift fingerprint=([0-9a-f]{64}) -->")


UNCHECKED = "error"   # the severity of a stack whose preview failed (ci.preview.SEVERITIES)


def drift_entries(reports: Iterable[StackReport]) -> list[dict]:
    """``[{"stack", "severity", "counts"}]`` of the checked stacks that differ, sorted by stack;
    ``counts`` without ``same``. Unchecked stacks (failed previews) are not drift."""
    return [{"stack": r.stack, "severity": r.severity,
             "counts": {k: int(v) for k, v in sorted(r.counts.items()) if k != "same" and v}}
            for r in sorted(reports, key=lambda r: r.stack) if r.severity not in ("none", UNCHECKED)]


def unchecked_reason(r: StackReport) -> str:
    """Why ``r`` could not be checked: the first line of its preview's error."""
    if r.missing:
        return "the preview job left no result (cancelled or crashed; see the run)"
    message = str((r.error or {}).get("message", "")) or str((r.error or {}).get("kind", "")) or "preview failed"
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "preview failed")
    return ("internal error: " if (r.error or {}).get("internal") else "") + first


def unchecked_entries(reports: Iterable[StackReport]) -> list[dict]:
    """``[{"stack", "reason"}]`` of the stacks whose preview failed, sorted by stack."""
    return [{"stack": r.stack, "reason": unchecked_reason(r)}
            for r in sorted(reports, key=lambda r: r.stack) if r.severity == UNCHECKED]


def fingerprint(reports: Iterable[StackReport]) -> str:
    """Hex SHA-256 of the canonical JSON of :func:`drift_entries`, plus the names of the
    unchecked stacks when there are any (module docstring). Reasons are left out: an error's
    text changes from run to run."""
    reports = list(reports)
    doc: object = drift_entries(reports)
    unchecked = [e["stack"] for e in unchecked_entries(reports)]
    if unchecked:
        doc = {"drift": doc, "not_checked": unchecked}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def issue_fingerprint(body: str) -> str | None:
    """The fingerprint recorded in a tracking issue's body (None if it has none)."""
    m = _FP.search(body)
    return m.group(1) if m else None


def issue_body(reports: list[StackReport], fp: str, *, run_url: str | None = None) -> str:
    """The tracking issue's body: marker with the fingerprint, the drifting stacks' status lines,
    and what to do. Deterministic for the same reports and ``run_url``. Every string from the
    preview files passes :mod:`clusterstack.markdown`; the body is bounded by
    :data:`clusterstack.markdown.GITHUB_LIMIT` (status lines past it are cut, with a note)."""
    drifting = [r for r in reports if r.severity not in ("none", UNCHECKED)]
    unchecked = unchecked_entries(reports)
    checked = len(reports) - len(unchecked)
    tally = " · ".join(f"{ICONS[s]} {sum(1 for r in drifting if r.severity == s)} {LABELS[s]}"
                       for s in SEVERITIES if any(r.severity == s for r in drifting))
    lines = [f"{MARKER} fingerprint={fp} -->",
             f"**{len(drifting)} of {checked} checked stacks** differ from the code after a refresh"
             + (f": {tally}" if tally else ""), ""]
    lines += [status_line(r) for r in sorted(drifting, key=lambda r: (SEVERITIES.index(r.severity), r.stack))]
    if unchecked:
        lines += ["" if drifting else None, f"**{len(unchecked)} stack{'s' * (len(unchecked) != 1)} could not be "
                  "checked** (the preview failed; nothing is known about their drift):", ""]
        lines = [ln for ln in lines if ln is not None]
        lines += [f"- {ICONS[UNCHECKED]} {md.code(e['stack'])} — not checked: {md.text(e['reason'], limit=300)}"
                  for e in unchecked]
    lines += ["",
              "What to do (docs/ci.md, \"Drift\"): run `clusterstack preview <stack> --refresh` to see "
              "each difference. A change made by hand in the cloud is either put into the reviewed "
              "config (a PR) or undone by applying the code from main; a merged change that was "
              "never applied is applied from main. This issue is updated when the drift changes "
              "and closed when every stack is clean."]
    if run_url:
        where = md.link("the drift run's artifacts", run_url)
        lines += ["", f"Diffs: {where}."]
    return md.bound("\n".join(lines) + "\n", note="… more stacks cut to fit GitHub's size limit "
                    "(the full list is in drift.json of the run's artifacts)")


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
    drifting = any(r.severity != "none" for r in reports)   # unchecked stacks keep it open
    current = next((i for i in repo.open_issues(LABEL) if i.body.lstrip().startswith(MARKER)), None)
    if not drifting:
        if current is None:
            return DriftSync("clean", None)
        repo.create_comment(current.number, "Every stack matches the code again "
                            f"({len(reports)} previewed with refresh). Closing."
                            + (f" Run: {md.link('the drift run', run_url)}." if run_url else ""))
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
    repo.create_comment(current.number, _change_note(old, drift_entries(reports), run_url,
                                                     unchecked_entries(reports)))
    return DriftSync("updated", current.number)


def _entries_from_body(body: str) -> list[dict]:
    """Stacks named on the status lines of an old body (``- <icon> `stack` — …``)."""
    out = []
    for line in body.splitlines():
        m = re.match(r"^- (\S+) `+ ?([^`]+?) ?`+ — ", md.strip_neutralisers(line))
        if m and " — not checked: " in line:
            out.append({"stack": m.group(2), "severity": UNCHECKED})
        elif m:
            sev = next((s for s, icon in ICONS.items() if icon == m.group(1)), "change")
            out.append({"stack": m.group(2), "severity": sev})
    return out


def _change_note(old: dict[str, dict], new: list[dict], run_url: str | None,
                 unchecked: Sequence[dict] = ()) -> str:
    now = {e["stack"]: e for e in new}
    was_unchecked = {s for s, e in old.items() if e["severity"] == UNCHECKED}
    old = {s: e for s, e in old.items() if e["severity"] != UNCHECKED}
    not_checked = {e["stack"] for e in unchecked}
    parts = []
    added = sorted(set(now) - set(old))
    gone = sorted(set(old) - set(now) - not_checked)
    changed = sorted(s for s in set(now) & set(old) if now[s]["severity"] != old[s]["severity"])
    if added:
        parts.append("now drifting: " + ", ".join(map(md.code, added)))
    if gone:
        parts.append("clean again: " + ", ".join(map(md.code, gone)))
    if changed:
        parts.append("severity changed: " + ", ".join(f"{md.code(s)} ({md.text(old[s]['severity'])} → "
                                                       f"{md.text(now[s]['severity'])})"
                                                       for s in changed))
    if sorted(not_checked - was_unchecked):
        parts.append("not checked now: " + ", ".join(map(md.code, sorted(not_checked - was_unchecked))))
    if sorted(was_unchecked - not_checked):
        parts.append("checked again: " + ", ".join(map(md.code, sorted(was_unchecked - not_checked))))
    what = "; ".join(parts) or "the counts of changes differ"
    return md.bound(f"Drift changed — {what}. The description above is current."
                    + (f" Run: {md.link('the drift run', run_url)}." if run_url else ""))
