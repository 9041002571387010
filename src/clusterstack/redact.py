"""Redaction of personal emails for output that may become public (PR comments, CI logs).

One rule everywhere: keep the first character of the local part and the whole domain,
``alice.smith@example.org`` → ``a***@example.org``. The domain stays because reviewers need
to see *which organisation* gains access (an outside domain is the thing to catch); the local
part is what identifies a person.

Only machine identities stay readable (:data:`MACHINE_DOMAINS`: GCP service accounts name
workloads, not people) — documentation domains such as ``example.org`` are redacted like any
other, so the same text reads the same in a CLI error, a CI log and a PR comment.

Used by ``clusterstack iam grant|revoke|review --redact``, by the CLI's error printer
(:func:`clusterstack.cli.main`: every ``error:`` line) and by CI's
:class:`clusterstack.ci.redaction.Redactor` (preview files, PR comments, drift issues): call
:func:`redact_text` on anything public that might hold an email.
"""

from __future__ import annotations

import re

EMAIL_RE = re.compile(r"(?<![\w.%+\-])([\w.%+\-]+)@([\w\-]+(?:\.[\w\-]+)*\.(?:xn--[\w\-]+|[^\W\d_]{2,}))")
r"""An email address inside free text: group 1 the local part, group 2 the domain.

Deliberately simpler than RFC 5322 (no quoted local parts, no IP literals), but not ASCII-only:
``\w`` is Unicode, so an internationalised address (RFC 6531 local parts such as
``jürgen@…``, IDN domains such as ``…@bücher.example`` or ``…@example.xn--p1ai``) is found
whole — an ASCII-only pattern matched ``rgen@example.org`` inside ``jürgen@example.org`` and
printed ``jü`` in the clear, and did not match an IDN domain at all. It covers what Google
accounts can be (letters, digits, ``.``, ``_``, ``+``, ``-``).
"""

_MASK = "***"
MACHINE_DOMAINS = ("gserviceaccount.com",)
"""Domains whose addresses are machines (GCP service accounts ``*.iam.gserviceaccount.com``,
Google-managed service agents ``*.gserviceaccount.com``), kept readable by :func:`redact_text`."""


def redact_email(email: str) -> str:
    """``alice@example.org`` → ``a***@example.org``.

    A string without exactly one ``@`` is returned with every character but the first masked
    (``x***``), so a malformed value never leaks either.
    """
    local, sep, domain = email.rpartition("@")
    if not sep or not local or not domain:
        return (email[:1] + _MASK) if email else _MASK
    return f"{local[0]}{_MASK}@{domain}"


def redact_member(member: str) -> str:
    """Redact the email of a ``user:`` member (``user:alice@example.org`` → ``user:a***@example.org``).

    Other member kinds (``serviceAccount:``, ``group:``, ``domain:``, …) name machines or
    organisations, not people, and are returned unchanged.
    """
    if member.startswith("user:"):
        return "user:" + redact_email(member[len("user:"):])
    return member


def redact_text(text: str, *, keep: tuple[str, ...] = MACHINE_DOMAINS) -> str:
    """Redact every email address in ``text``: the one rule for public text.

    Addresses whose lower-cased domain is or ends with one of ``keep`` (default:
    :data:`MACHINE_DOMAINS`) stay readable; pass ``keep=()`` to redact those too.
    """
    def sub(m: re.Match[str]) -> str:
        domain = m.group(2).lower()
        if any(domain == k or domain.endswith("." + k) for k in keep):
            return m.group(0)
        return redact_email(m.group(0))

    return EMAIL_RE.sub(sub, text)
