"""The one boundary between untrusted text and GitHub Markdown (PR comments, issues).

Everything clusterstack posts to GitHub — the preview comment (:mod:`clusterstack.ci.comment`),
the drift issue and its comments (:mod:`clusterstack.ci.drift`), the deployment reminder
(:mod:`clusterstack.ci.deployment`) — is built from trusted layout (icons, headings, counts)
and *untrusted* strings: stack names, error text, URN tails, paths, capacity notes, diff text,
which all come from a pull request's files or from a preview directory anyone could have
written. Every untrusted string enters the body through exactly one function of this module,
chosen by the place it goes:

==================  =========================================================================
:func:`text`        running Markdown text (a status line, a reason)
:func:`html_text`   text inside raw HTML (``<summary>…</summary>``)
:func:`code`        an inline code span (a stack name, a path)
:func:`fence`       a fenced code block (a diff, shell commands)
:func:`link`        a link — only to a well-formed ``https://`` URL, else shown as code
:func:`bound`       a whole body cut to GitHub's size limit on a line boundary
==================  =========================================================================

The rules, and where they come from:

- **@mentions neutralised**: a U+200B ZERO WIDTH SPACE after every ``@`` (``@octocat`` renders
  the same but is not a mention, and an ``a@b.example`` is no email autolink). GitHub's mention
  filter matches ``@`` directly followed by a login; Dependabot sanitises the same way
  (dependabot/dependabot-core ``common/lib/dependabot/pull_request_creator/message_builder/
  link_and_mention_sanitizer.rb`` @05c98de, ``insert_zero_width_space_in_mention``), also inside
  code spans "to prevent email replies … triggering notifications" — so :func:`code` and
  :func:`fence` do it too. A backslash (``\\@``) is *not* enough: the mention filter runs on the
  rendered HTML text, where the escape is gone. ``#123`` issue references get the same treatment
  (a reference posts a "mentioned this" event into the referenced issue).
- **HTML escaped**: ``& < > "`` become entities (GitHub renders a whitelist of raw HTML —
  ``<details>``, ``<img>``, ``<a>``, ``<sub>`` … — GitHub Docs, "Basic writing and formatting
  syntax"; an escaped tag is shown as text).
- **Markdown syntax escaped** in running text: every ASCII punctuation character that starts
  inline syntax (``\\ ` * _ [ ] ! ~``) gets a backslash (CommonMark 0.31 §2.4: any ASCII
  punctuation may be backslash-escaped), so ``[x](https://…)`` and ``![](…)`` are no link or
  image; a leading ``# + - =`` or ``1.`` is escaped too (no heading or list item if the text
  ever starts a line).
- **No autolinks**: GFM's extended autolinks (GFM spec §6.9: ``www.``, ``http://``,
  ``https://``, emails) are broken by a U+200B after ``www`` and after the scheme's ``:``.
- **One line**: control characters (C0, DEL, C1) and the bidirectional overrides
  (U+202A–U+202E, U+2066–U+2069, "Trojan source") are removed; newlines become spaces in
  inline text, so a crafted stack name cannot end an HTML block (a blank line ends
  ``<details>``: CommonMark §4.6, type 6) or start a heading.
- **Code spans safe**: delimited by one more backtick than the longest run inside, padded with
  a space when the content starts or ends with a backtick or space (CommonMark §6.1).
- **Fences safe**: one backtick more than the longest run of three or more inside (§4.5).
- **Sizes bounded**: GitHub refuses an issue or comment body over 65,536 characters
  (:data:`GITHUB_LIMIT`); sizes here are UTF-8 bytes, never fewer than characters.

Deterministic: the same input gives the same output.
"""

from __future__ import annotations

import re

GITHUB_LIMIT = 65_536
"""GitHub's limit on an issue / comment body, in characters (REST "Create an issue comment":
422 "body is too long (maximum is 65536 characters)")."""

ZWSP = "\u200b"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INLINE_SPACE = re.compile(r"[\t\n\r\f\v\u2028\u2029]+")
_MD_PUNCT = re.compile(r"([\\`*_\[\]!~])")
_LINE_START = re.compile(r"\A([#+\-=]|\d+(?=[.)]))")
_AT = re.compile("@")
_ISSUE_REF = re.compile(r"#(?=\d)")
_WWW = re.compile(r"(?i)\b(www)(?=\.)")
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,31}):(?=//)")
_SAFE_URL = re.compile(r"https://[A-Za-z0-9.\-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~/?=&%+,;:\-]*)?\Z")
_ELLIPSIS = "…"


def _clean(value: object, limit: int | None, *, keep_newlines: bool = False) -> str:
    s = str(value)
    if keep_newlines:
        s = _CONTROL.sub("", s.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    "))
    else:
        s = " ".join(_CONTROL.sub("", _INLINE_SPACE.sub(" ", s)).split())
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 0)] + _ELLIPSIS
    return s


def _neutralise(s: str) -> str:
    """Mentions, issue references and autolinks broken by U+200B (module docstring)."""
    s = _AT.sub("@" + ZWSP, s)
    s = _ISSUE_REF.sub("#" + ZWSP, s)
    s = _WWW.sub(lambda m: m.group(1) + ZWSP, s)
    return _SCHEME.sub(lambda m: m.group(1) + ":" + ZWSP, s)


def _entities(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def text(value: object, *, limit: int | None = None) -> str:
    """``value`` as one line of running Markdown text that renders as itself: no mention, link,
    image, HTML, emphasis or heading. ``limit``: at most that many characters of the (cleaned)
    input, cut with ``…``. Example: ``text("<b>@x</b> [a](b)")`` renders ``<b>@x</b> [a](b)``."""
    s = _clean(value, limit)
    s = _LINE_START.sub(lambda m: m.group(1) + "\\" if m.group(1)[0].isdigit() else "\\" + m.group(1),
                        _MD_PUNCT.sub(r"\\\1", s))
    return _entities(_neutralise(s))


def html_text(value: object, *, limit: int | None = None) -> str:
    """``value`` as one line of text inside raw HTML (``<summary>``, where Markdown is not
    parsed): entities, no mention, no autolink, no newline."""
    return _entities(_neutralise(_clean(value, limit)))


def code(value: object, *, limit: int | None = None) -> str:
    """``value`` as one inline code span, whatever backticks it holds (module docstring)."""
    s = _neutralise(_clean(value, limit))
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if (not s or s[0] in "` " or s[-1] in "` ") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def block_text(value: object) -> str:
    """``value`` prepared for a fenced block: line ends normalised to ``\\n``, control
    characters removed (tabs become four spaces), mentions and autolinks neutralised. Idempotent
    in effect: the fence itself is chosen by :func:`fence_of`."""
    return _neutralise(_clean(value, None, keep_newlines=True))


def fence_of(body: str) -> str:
    """The backtick fence for ``body``: three, or one more than its longest run of three or more."""
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    return "`" * max(3, longest + 1)


def fence(value: object, info: str = "text") -> str:
    """``value`` as a fenced code block ending in a newline; ``info`` is trusted (a language)."""
    body = block_text(value)
    if not body.endswith("\n"):
        body += "\n"
    f = fence_of(body)
    return f"{f}{info}\n{body}{f}\n"


def link(label: str, url: str | None) -> str:
    """A Markdown link to ``url`` when it is a plain ``https://`` URL (host, optional port and a
    path/query of URL-safe characters: no spaces, parentheses, quotes or angle brackets);
    otherwise ``label`` followed by the URL as code, so nothing is linked from text that is not
    a URL. ``label`` is escaped as :func:`text`."""
    if url and _SAFE_URL.match(url):
        return f"[{text(label)}]({url})"
    return text(label) + (f" ({code(url, limit=200)})" if url else "")


def nbytes(s: str) -> int:
    """UTF-8 size of ``s`` (never fewer than its characters, so a bytes budget bounds both)."""
    return len(s.encode("utf-8"))


def bound(body: str, limit: int = GITHUB_LIMIT, *,
          note: str = "… cut to fit GitHub's size limit (full text in the run's artifacts)") -> str:
    """``body`` unchanged when it is at most ``limit`` UTF-8 bytes; otherwise cut on a line
    boundary, an open code fence closed, and ``note`` (trusted) appended — the result is at
    most ``limit`` bytes. Raises ValueError when not even the note fits."""
    if nbytes(body) <= limit:
        return body
    tail = "\n> " + note + "\n"
    kept: list[str] = []
    used = 0
    open_fence: str | None = None
    for line in body.splitlines(keepends=True):
        m = re.match(r"(`{3,})(.*)$", line.rstrip("\n"))
        nxt = open_fence
        if m and open_fence is None:
            nxt = m.group(1)
        elif m and open_fence is not None and len(m.group(1)) >= len(open_fence) and not m.group(2).strip():
            nxt = None
        closer = (nxt + "\n") if nxt else ""
        if used + nbytes(line) + nbytes(closer) + nbytes(tail) > limit:
            break
        kept.append(line)
        used += nbytes(line)
        open_fence = nxt
    out = "".join(kept)
    if out and not out.endswith("\n"):
        out += "\n"
    if open_fence:
        out += open_fence + "\n"
    out += tail
    if nbytes(out) > limit:
        raise ValueError(f"a body of {limit} bytes cannot hold even its truncation note")
    return out


def strip_neutralisers(s: str) -> str:
    """``s`` without the U+200B this module inserts (to read back a name from a posted body)."""
    return s.replace(ZWSP, "")
