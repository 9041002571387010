"""The one pull-request comment: every stack's status and diff, under GitHub's size limit.

Layout (Markdown)::

    <!-- clusterstack-ci:preview -->                     the marker: the comment to update
    <!-- clusterstack-ci:data {"changed": […], …} -->    machine-readable (deployment-check)
    ### clusterstack preview
    **5 stacks** at `1a2b3c4d5e6f`: ⛔ 1 blocked · ✏️ 2 to change · ✅ 2 no changes

    - ⛔ `cw-demo-h100` — 1 to replace (12 unchanged) · **guard: blocked** — replace of …
    - ✏️ `gcp-demo` — 2 to update (40 unchanged) · guard: ok
    …
    <details><summary>⛔ cw-demo-h100 — 1 to replace</summary>   one per changed or failed stack
    ```text
    <the plain-text diff>
    ```
    </details>
    > ✂️ truncation note (only when something was cut)
    footer

Status lines are the fixed part: every stack keeps its line whatever the budget. The diffs
share what remains *fairly* (max-min fair share, "water filling"): a diff smaller than the
equal share is shown whole and its leftover is shared among the larger ones; a cut diff ends on
a line boundary with a ``… N more lines`` note, and the comment says which stacks were cut and
where the full diffs are. Sizes are UTF-8 bytes (GitHub's limit is 65,536 characters; bytes are
never fewer, so a comment under the byte budget is under the limit).

Stacks are listed worst first (error, blocked, delete, change, none), then by name. Output is
deterministic: no timestamps; the same inputs render the same bytes.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from clusterstack.ci.preview import CHANGED, DIFF, META, SCHEMA, SEVERITIES, severity_rank
from clusterstack import markdown as md
from clusterstack.ci.redaction import Redactor
from clusterstack.config.document import json_loads, parse_json
from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.urn import name_of
from clusterstack.pulumi.wire import SIG_KEY
from clusterstack.pulumi.steps import DESTRUCTIVE_OPS
from clusterstack.views.verdict import VERDICT_FORMAT

MARKER = "<!-- clusterstack-ci:preview -->"
DATA_PREFIX = "<!-- clusterstack-ci:data "
DEFAULT_MAX_BYTES = 60_000
GITHUB_LIMIT = md.GITHUB_LIMIT
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024   # a preview file larger than this is not a preview's
ICONS = {"error": "❌", "blocked": "⛔", "delete": "⚠️", "change": "✏️", "none": "✅"}
LABELS = {"error": "failed", "blocked": "blocked", "delete": "destructive", "change": "to change",
          "none": "no changes"}
_VERBS = (("create", "create"), ("import", "import"), ("update", "update"), ("replace", "replace"),
          ("delete", "delete"))
_MAX_VIOLATIONS_INLINE = 3


class CommentError(ClusterstackError):
    """The preview directory cannot be read, or the comment cannot fit the byte budget."""


@dataclass(frozen=True)
class StackReport:
    """What the comment shows for one stack (read back from ``meta.json`` + ``diff.txt``).
    ``missing``: the stack was expected (in the matrix) but its preview left no result."""

    stack: str
    severity: str
    counts: Mapping[str, int] = field(default_factory=dict)
    guard: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    diff: str = ""
    missing: bool = False
    capacity: tuple[str, ...] = ()   # capacity changes in words (clusterstack.inventory)
    #: the static plan diff against the PR's base (``clusterstack diff STACK --base REF --json``,
    #: saved beside ``meta.json`` as :data:`STATIC_DIFF` by the preview job), or None
    static: Mapping[str, Any] | None = None
    #: the digest of the stack's review record (``review.json``, clusterstack.guard.review), or ""
    review_digest: str = ""
    #: why the stack has no review record (``meta.json`` ``review.warning``), or ""
    review_warning: str = ""

    @property
    def static_findings(self) -> list[Mapping[str, Any]]:
        """The static diff's destructive findings (``stacks[].findings[]``)."""
        return [f for st in (self.static or {}).get("stacks") or [] if isinstance(st, Mapping)
                for f in st.get("findings") or [] if isinstance(f, Mapping)]

    @property
    def changed(self) -> bool:
        return self.severity in CHANGED

    @property
    def shows_diff(self) -> bool:
        """A changed or failed stack gets a collapsible block (a missing one has no text)."""
        return self.severity != "none" and not self.missing


#: The static diff's file beside ``meta.json`` (written by the preview workflow).
STATIC_DIFF = "static-diff.json"


def load_reports(directory: Path, expected: Iterable[str] = ()) -> list[StackReport]:
    """Read every ``<directory>/**/meta.json`` (and the ``diff.txt`` beside it) — artifacts of
    several matrix jobs may be nested one level deeper. ``expected`` stack ids without a result
    become ``missing`` error reports. Returns the reports worst first, then by stack.

    Raises CommentError (exit 2) for a missing directory, a symbolic link anywhere in it (never
    followed), unreadable JSON, an unknown schema or severity, counts that are not non-negative
    integers, a guard, error, capacity or diff of another shape than ``ci preview`` writes, or
    two results for one stack."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CommentError(f"no such directory {directory}", "pass the --out DIR of `ci preview` "
                           "(in CI: the downloaded preview artifacts)", file=directory)
    out: dict[str, StackReport] = {}
    for entry in sorted(directory.rglob("*")):   # rglob lists a link but never descends into it
        if entry.is_symlink():
            raise CommentError(f"{entry.relative_to(directory)} is a symbolic link: refused, never followed",
                               "preview artifacts are regular files written by `ci preview`; "
                               "remove the link", file=entry)
    for meta in sorted(directory.rglob(META)):
        try:
            text = _read_artifact(directory, meta)
        except (OSError, ValueError) as exc:
            raise CommentError(f"unreadable preview result: {exc}", "re-run `ci preview`", file=meta) from None
        # the one JSON reader's limits: depth, integers of at most 19 digits, no NaN
        doc = parse_json(text, meta, error=CommentError, hint="re-run `ci preview`")
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise CommentError(f"unknown meta.json schema {doc.get('schema') if isinstance(doc, dict) else doc!r}",
                               f"this clusterstack writes and reads schema {SCHEMA}", file=meta)
        sev, stack = doc.get("severity"), doc.get("stack")
        if sev not in SEVERITIES or not isinstance(stack, str) or not stack:
            raise CommentError(f"bad stack or severity ({stack!r}, {sev!r})",
                               f"severity is one of {', '.join(SEVERITIES)}", file=meta)
        if stack in out:
            raise CommentError(f"two results for stack {stack}", "give each matrix job its own "
                               "artifact and download them into one directory", file=meta)
        counts = doc.get("counts") or {}
        if not isinstance(counts, dict) or not all(
                isinstance(k, str) and type(v) is int and v >= 0 for k, v in counts.items()):
            raise CommentError("counts is not an object of non-negative integers",
                               "re-run `ci preview`", file=meta, field="counts")
        _check_meta_shape(doc, meta)
        sev = _recheck_severity(doc, meta)
        diff_file = meta.parent / Path(str(doc.get("diff") or DIFF)).name  # beside meta.json, nowhere else
        try:
            diff = _read_artifact(directory, diff_file) if os.path.lexists(diff_file) else ""
        except (OSError, ValueError) as exc:
            raise CommentError(f"unreadable diff: {exc}", "re-run `ci preview`", file=diff_file) from None
        static = None
        static_file = meta.parent / STATIC_DIFF
        if os.path.lexists(static_file):
            try:
                text = _read_artifact(directory, static_file)
            except (OSError, ValueError) as exc:
                raise CommentError(f"unreadable static diff: {exc}", "re-run `clusterstack diff --base`",
                                   file=static_file) from None
            static = parse_json(text, static_file, error=CommentError,
                                hint="re-run `clusterstack diff --base`")
            if not isinstance(static, dict) or type(static.get("destructive", 0)) not in (int, bool):
                raise CommentError("the static diff is not a `diff --json` document",
                                   "re-run `clusterstack diff --base`", file=static_file)
            # an immutable-field change the engine would not call destructive still blocks
            if static.get("destructive") and severity_rank(sev) > severity_rank("blocked"):
                sev = "blocked"
        out[stack] = StackReport(stack=stack, severity=sev, counts=dict(counts),
                                 guard=doc.get("guard"), error=doc.get("error"), diff=diff,
                                 capacity=tuple(str(c) for c in doc.get("capacity") or ()),
                                 static=static, review_digest=_review_digest(doc, meta),
                                 review_warning=_review_warning(doc))
    for stack in expected:
        if stack not in out:
            out[stack] = StackReport(stack=stack, severity="error", missing=True)
    return sorted(out.values(), key=lambda r: (severity_rank(r.severity), r.stack))


def _check_meta_shape(doc: Mapping[str, Any], meta: Path) -> None:
    """Raise CommentError (exit 2) naming the field when ``guard``, ``error``, ``capacity`` or
    ``diff`` of a ``meta.json`` is not the shape ``ci preview`` writes (module docstring of
    :mod:`clusterstack.ci.preview`); the comment reads them without further checks."""
    def bad(name: str, problem: str) -> CommentError:
        return CommentError(f"{problem} (got {json.dumps(doc.get(name))[:60]})",
                            "re-run `ci preview`", file=meta, field=name)


    guard, error = doc.get("guard"), doc.get("error")
    for name, value in (("guard", guard), ("error", error)):
        if value is not None and (not isinstance(value, dict) or SIG_KEY in value):
            raise bad(name, f"{name} is not an object or null")
    if guard is not None:
        if guard.get("format") != VERDICT_FORMAT:
            raise bad("guard", f"guard is not a {VERDICT_FORMAT} verdict document")
        for key in ("violations", "destructive"):
            items = guard.get(key)
            if not (isinstance(items, list) and all(isinstance(x, dict) and SIG_KEY not in x for x in items)):
                raise bad("guard", f"guard.{key} is not a list of objects")
            if not all(isinstance(x.get(k), str) for x in items for k in ("op", "urn")):
                raise bad("guard", f"guard.{key}[].op and .urn are not strings")
        ops = (guard.get("counts") or {}).get("ops") if isinstance(guard.get("counts"), dict) else None
        if not isinstance(ops, dict) or not all(isinstance(k, str) and type(v) is int and v >= 0
                                                for k, v in ops.items()):
            raise bad("guard", "guard.counts.ops is not an object of step op → count")
        warnings = guard.get("warnings", [])
        if not (isinstance(warnings, list) and all(isinstance(w, dict) and isinstance(w.get("rule"), str)
                                                   for w in warnings)):
            raise bad("guard", "guard.warnings is not a list of objects with a rule")
    elif error is None:
        raise bad("guard", "a preview result without its verdict (guard) or its error")
    capacity = doc.get("capacity")
    if capacity is not None and not (isinstance(capacity, list) and all(isinstance(c, str) for c in capacity)):
        raise bad("capacity", "capacity is not a list of strings")
    if doc.get("diff") is not None and not isinstance(doc.get("diff"), str):
        raise bad("diff", "diff is not a file name")


_DIGEST = __import__("re").compile(r"\Asha256:[0-9a-f]{64}\Z")


def _review_warning(doc: Mapping[str, Any]) -> str:
    """Why a ``meta.json`` has no review record (``review.warning``, checked by
    :func:`_review_digest`), or ""."""
    review = doc.get("review")
    return review["warning"] if isinstance(review, dict) and isinstance(review.get("warning"), str) else ""


def _review_digest(doc: Mapping[str, Any], meta: Path) -> str:
    """The review record's digest a ``meta.json`` names (``review.digest``), or "" when it has
    none. Raises CommentError (exit 2) for anything but ``{"file": "review.json", "digest":
    "sha256:<64 hex>"}``; the digest is shown, so a reviewer can tell the record ``up
    --reviewed`` will be given is the one previewed here."""
    review = doc.get("review")
    if review is None:
        return ""
    if isinstance(review, dict) and set(review) == {"warning"} and isinstance(review["warning"], str):
        return ""   # no record, and why (_review_warning)
    if not isinstance(review, dict) or not isinstance(review.get("digest"), str) \
            or not _DIGEST.match(review["digest"]) or review.get("file") != "review.json":
        raise CommentError("review is not {\"file\": \"review.json\", \"digest\": \"sha256:…\"} "
                           "nor {\"warning\": \"…\"}",
                           "re-run `ci preview`", file=meta, field="review")
    return review["digest"]


def _recheck_severity(doc: Mapping[str, Any], meta: Path) -> str:
    """The severity of one ``meta.json``, recomputed from what it lists — never taken from its
    ``severity`` field: ``error`` for a failed preview; else :func:`clusterstack.guard.severity`'s
    rule over the verdict document (a violation → ``blocked``, a destructive change →
    ``delete``) and the steps' ops (``guard.counts.ops``) and the engine's counts (a replace or
    delete op → at least ``delete``, any op but ``same`` → at least ``change``). Raises
    CommentError (exit 2) when a stored severity (``severity``, ``guard.severity``) disagrees:
    a blocked stack headlined "no changes" and left out of the data block ``ci
    deployment-check`` reads is what trusting it would do."""
    guard = doc.get("guard")
    if doc.get("error") is not None or guard is None:
        sev = "error"
    else:
        ops = {**{k: v for k, v in (doc.get("counts") or {}).items() if v},
               **{k: v for k, v in guard["counts"]["ops"].items() if v}}
        if guard["violations"]:
            sev = "blocked"
        elif guard["destructive"] or any(op in DESTRUCTIVE_OPS for op in ops):
            sev = "delete"
        elif any(op != "same" for op in ops):
            sev = "change"
        else:
            sev = "none"
    for field_name, stored in (("severity", doc.get("severity")),
                               ("guard.severity", (guard or {}).get("severity", sev))):
        if stored != sev:
            raise CommentError(f"{field_name} says {stored!r} but what the file lists says {sev!r} "
                               "(its verdict and counts)", "re-run `ci preview`; the comment never "
                               "trusts a stored severity", file=meta, field=field_name)
    return sev


def _read_artifact(directory: Path, path: Path) -> str:
    """The UTF-8 text of the preview file ``path`` under ``directory``, refusing a symbolic link
    anywhere below ``directory`` (a link is never followed: an artifact could point it at any
    file of the runner, whose text would then be posted publicly), anything but a regular file,
    and a file over :data:`MAX_ARTIFACT_BYTES`. Raises CommentError (exit 2)."""
    rel = path.relative_to(directory)
    here = directory
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise CommentError(f"{here.relative_to(directory)} is a symbolic link: refused, never followed",
                               "preview artifacts are regular files written by `ci preview`; "
                               "remove the link", file=here)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise CommentError(f"cannot open: {exc.strerror}", "re-run `ci preview`", file=path) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CommentError("not a regular file", "preview artifacts are regular files", file=path)
        data = fh.read(MAX_ARTIFACT_BYTES + 1)
    if len(data) > MAX_ARTIFACT_BYTES:
        raise CommentError(f"over {MAX_ARTIFACT_BYTES} bytes", "this is not a preview's output", file=path)
    return data.decode("utf-8")


# --- pieces -----------------------------------------------------------------------------------------

def counts_text(counts: Mapping[str, int]) -> str:
    """``1 to create, 2 to update (12 unchanged)`` / ``no changes`` — as ``clusterstack preview``."""
    parts = [f"{counts[k]} to {verb}" for k, verb in _VERBS if counts.get(k)]
    same = counts.get("same", 0)
    return (", ".join(parts) or "no changes") + (f" ({same} unchanged)" if same else "")


def status_line(r: StackReport) -> str:
    """The status line of one stack: icon, name, counts, guard verdict (or the error). Every
    string from the preview files passes :mod:`clusterstack.markdown`."""
    head = f"- {ICONS[r.severity]} {md.code(r.stack)} — "
    if r.missing:
        return head + "no result: the preview job did not finish (cancelled or crashed; see the run)"
    if r.error is not None:
        first = next((ln for ln in str(r.error.get("message", "")).splitlines() if ln.strip()), "")
        kind = "internal error" if r.error.get("internal") else "preview failed"
        return head + f"**{kind}**: {md.text(first, limit=160)}"
    guard = r.guard or {}
    violations = guard.get("violations") or []
    if violations:
        shown = "; ".join(f"{md.text(v.get('op'), limit=20)} of {md.code(name_of(str(v.get('urn', ''))), limit=120)}"
                          for v in violations[:_MAX_VIOLATIONS_INLINE] if isinstance(v, Mapping))
        more = len(violations) - _MAX_VIOLATIONS_INLINE
        g = f"**guard: blocked** ({len(violations)} violation{'s' * (len(violations) != 1)}: {shown}" + \
            (f"; +{more} more" if more > 0 else "") + ")"
    elif guard.get("destructive"):
        n = len(guard["destructive"])
        g = f"guard: ok — {n} destructive change{'s' * (n != 1)} allowed by policy"
    else:
        g = "guard: ok"
    if r.static is not None:  # the second verdict: the static plan diff against the base
        found = r.static_findings
        if found or r.static.get("destructive"):
            shown = "; ".join(f"{md.text(f.get('op'), limit=20)} of {md.code(name_of(str(f.get('urn', ''))), limit=120)}"
                              + (f" ({md.code(f.get('path'), limit=120)})" if f.get("path") else "")
                              for f in found[:_MAX_VIOLATIONS_INLINE])
            n = int(r.static.get("destructive") or len(found))
            g += f" · **static diff: {n} destructive**" + (f" ({shown})" if shown else "")
        else:
            g += " · static diff: clean"
    if r.review_digest:   # what `up --reviewed` must be given (clusterstack.guard.review)
        g += f" · review record {md.code(r.review_digest)}"
    elif r.review_warning:   # a preview without a record: say so, never silently
        g += f" · ⚠️ {md.text(r.review_warning, limit=300)}"
    return head + f"{counts_text(r.counts)} · {g}"


def _block_parts(r: StackReport) -> tuple[str, str]:
    """(prefix, suffix) around a diff body."""
    summary = "preview failed" if r.error is not None else counts_text(r.counts)
    fence = md.fence_of(r.diff)
    prefix = (f"<details><summary>{ICONS[r.severity]} {md.html_text(r.stack)} — {summary}</summary>"
              f"\n\n{fence}text\n")
    return prefix, f"{fence}\n\n</details>\n\n"


def _cut_note(lines: int) -> str:
    return f"… {lines} more line{'s' * (lines != 1)} cut (full diff in the run's artifacts)\n"


_nbytes = md.nbytes


def cut_lines(text: str, budget: int) -> tuple[str, bool]:
    """``text`` cut on a line boundary so that the result, including the cut note, is at most
    ``budget`` bytes (or just the note, when not even one line fits); returns (text, was_cut).
    Whole text when it fits."""
    if not text.endswith("\n"):
        text += "\n"
    if _nbytes(text) <= budget:
        return text, False
    lines = text.splitlines(keepends=True)
    kept, used = [], 0
    for i, line in enumerate(lines):
        if used + _nbytes(line) + _nbytes(_cut_note(len(lines) - i - 1)) > budget:
            break
        kept.append(line)
        used += _nbytes(line)
    return "".join(kept) + _cut_note(len(lines) - len(kept)), True


def fair_shares(sizes: list[int], budget: int) -> list[int]:
    """Max-min fair allocation of ``budget`` among demands ``sizes``: each gets
    ``min(size, equal share of what is left)``, smallest first. Sum ≤ budget."""
    shares = [0] * len(sizes)
    left, n = max(budget, 0), len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        share = min(sizes[i], left // n) if n else 0
        shares[i] = share
        left -= share
        n -= 1
    return shares


# --- the comment ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comment:
    """A rendered comment: ``body`` and which stacks' diffs were ``cut`` or ``omitted``."""

    body: str
    cut: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()

    @property
    def truncated(self) -> bool:
        return bool(self.cut or self.omitted)


def data_line(reports: list[StackReport], sha: str | None) -> str:
    """The hidden data comment: changed / failed stacks and the commit (read by
    :func:`parse_data`)."""
    doc = {"changed": sorted(r.stack for r in reports if r.changed),
           "errors": sorted(r.stack for r in reports if r.severity == "error"),
           "sha": sha or None, "v": 1}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    # no "<" or ">" inside the HTML comment: neither "-->" nor "--!>" can end it early and no
    # tag is in it (WHATWG HTML "comment end state"); json_loads reads the \u escapes back
    return DATA_PREFIX + text.replace("<", "\\u003c").replace(">", "\\u003e") + " -->"


def parse_data(body: str) -> dict[str, Any] | None:
    """The data document of a preview comment body (None when it carries none)."""
    for line in body.splitlines():
        if line.startswith(DATA_PREFIX) and line.endswith("-->"):
            try:  # a comment body anyone could have written: the one reader's limits
                doc = json_loads(line[len(DATA_PREFIX):-3].strip())
            except (ValueError, RecursionError):
                return None
            return doc if isinstance(doc, dict) else None
    return None


def render_comment(reports: list[StackReport], *, max_bytes: int = DEFAULT_MAX_BYTES,
                   sha: str | None = None, run_url: str | None = None,
                   redactor: Redactor | None = None) -> Comment:
    """Render the comment for ``reports`` (as :func:`load_reports` returns them) within
    ``max_bytes`` UTF-8 bytes (see the module docstring for layout and the fair truncation).

    Every diff and error text is redacted again (``redactor``, default: emails and token shapes
    only) — a preview directory written by something else is not trusted — and every string
    from it enters the body through :mod:`clusterstack.markdown` (no mention, HTML, link).
    Raises CommentError when ``max_bytes`` exceeds GitHub's limit or when even the status
    lines alone do not fit."""
    if max_bytes > GITHUB_LIMIT:
        raise CommentError(f"--max-bytes {max_bytes} is over GitHub's comment limit ({GITHUB_LIMIT})",
                           "use 60000 (the default) or less", field="--max-bytes")
    red = redactor or Redactor()
    reports = [StackReport(stack=red.text(r.stack), severity=r.severity, counts=r.counts,
                           guard=_redact_json(r.guard, red), error=_redact_json(r.error, red),
                           diff=md.block_text(red.text(r.diff)), missing=r.missing,
                           capacity=tuple(red.text(c) for c in r.capacity),
                           static=_redact_json(r.static, red),
                           review_digest=r.review_digest if _DIGEST.match(r.review_digest) else "",
                           review_warning=red.text(r.review_warning))
               for r in reports]
    n = len(reports)
    tally = {s: sum(1 for r in reports if r.severity == s) for s in SEVERITIES}
    summary = " · ".join(f"{ICONS[s]} {tally[s]} {LABELS[s]}" for s in SEVERITIES if tally[s]) or "nothing to preview"
    at = f" at {md.code(sha[:12])}" if sha else ""
    head = (f"{MARKER}\n{data_line(reports, sha)}\n### clusterstack preview\n\n"
            f"**{n} stack{'s' * (n != 1)}**{at}: {summary}\n\n")
    status = "".join(status_line(r) + "\n" for r in reports)
    capacity = [c for r in reports for c in r.capacity]
    # what the guard warns of and lets pass ([guard.capacity] warn, [guard.cost]
    # warn_monthly_increase): the stack, the resource and the rule, once per rule and stack
    warned = list(dict.fromkeys((r.stack, str(w.get("rule", ""))) for r in reports
                                for w in (r.guard or {}).get("warnings") or () if isinstance(w, Mapping)))
    if capacity or warned:   # what the change does to the fleet, in words
        status += "\n**Capacity:**\n" + "".join(f"- {md.text(c, limit=300)}\n" for c in capacity)
        status += "".join(f"- {md.text(st, limit=120)}: warning: {md.text(w, limit=300)}\n" for st, w in warned)
    where = md.link("the workflow run's artifacts", run_url)
    footer = ("\n<sub>CI previews only and never applies cluster stacks; apply a merged change "
              "from a clean checkout of main (docs/ci.md).</sub>\n")
    blocks = [r for r in reports if r.shows_diff]

    def notice(cut: list[str], omitted: list[str]) -> str:
        if not cut and not omitted:
            return ""
        parts = []
        if cut:
            parts.append(f"the diff{'s' * (len(cut) != 1)} of {', '.join(map(md.code, cut))} "
                         f"{'were' if len(cut) != 1 else 'was'} cut")
        if omitted:
            parts.append(f"the diff{'s' * (len(omitted) != 1)} of {', '.join(map(md.code, omitted))} "
                         f"{'were' if len(omitted) != 1 else 'was'} left out")
        return (f"\n> ✂️ Truncated to fit GitHub's comment limit ({max_bytes} bytes): "
                f"{'; '.join(parts)}. Full diffs: {where}, or `clusterstack preview <stack>`.\n")

    diffs_head = "\n#### Diffs\n\n" if blocks else ""
    whole = head + status + (diffs_head + "".join(
        pre + (r.diff if r.diff.endswith("\n") else r.diff + "\n") + post
        for r in blocks for pre, post in [_block_parts(r)]) if blocks else "") + footer
    if _nbytes(whole) <= max_bytes:  # everything fits: nothing to cut, no room kept for a notice
        return Comment(body=whole)
    every = [r.stack for r in blocks]
    worst_notice = max(_nbytes(notice(every, [])), _nbytes(notice([], every)))  # the longest possible
    fixed = _nbytes(head + status + footer + diffs_head) + worst_notice
    if fixed > max_bytes:
        raise CommentError(f"{n} status lines alone need {fixed} bytes, over --max-bytes {max_bytes}",
                           "raise --max-bytes (GitHub allows 65536) or preview fewer stacks per comment",
                           field="--max-bytes")
    budget = max_bytes - fixed
    wrappers = [sum(map(_nbytes, _block_parts(r))) for r in blocks]
    bodies = [r.diff if r.diff.endswith("\n") else r.diff + "\n" for r in blocks]
    # every block is guaranteed room for its "all lines cut" note; the rest is shared fairly
    lows = [_nbytes(_cut_note(len(b.splitlines()))) for b in bodies]
    rendered: dict[str, str] = {}
    cut: list[str] = []
    omitted: list[str] = []
    if sum(wrappers) + sum(lows) > budget:
        omitted = [r.stack for r in blocks]   # not even an empty block each: status lines only
    else:
        extra = fair_shares([max(0, _nbytes(b) - low) for b, low in zip(bodies, lows)],
                            budget - sum(wrappers) - sum(lows))
        for r, body, low, more in zip(blocks, bodies, lows, extra):
            text, was_cut = cut_lines(body, low + more)
            if was_cut:
                cut.append(r.stack)
            pre, post = _block_parts(r)
            rendered[r.stack] = pre + text + post
    body = head + status + (diffs_head + "".join(rendered[r.stack] for r in blocks if r.stack in rendered)
                            if rendered else "") + notice(cut, omitted) + footer
    if _nbytes(body) > max_bytes:  # the arithmetic above is the contract; never post over it
        raise AssertionError(f"rendered comment is {_nbytes(body)} bytes, over {max_bytes}")
    return Comment(body=body, cut=tuple(cut), omitted=tuple(omitted))


def _redact_json(value: Any, red: Redactor) -> Any:
    if value is None:
        return None
    return red.mask_value(value)
