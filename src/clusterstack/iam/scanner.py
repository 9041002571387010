"""``iam check``'s repository scans: plaintext personal emails in tracked files, and
``human-NNN`` references in configs that name no registered principal.

A *personal* email is any address in the text except: one whose domain is (a subdomain of) an
allowed domain (:mod:`clusterstack.iam.settings`: documentation domains, service accounts,
``[iam] allow_email_domains``), one listed in ``[iam] allow_emails``, and one written as a
non-personal IAM member (``serviceAccount:``, ``group:``, ``domain:`` right before it).
Findings are reported with the email redacted: CI logs are public.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from clusterstack.config.document import format_path, parse_yaml, read_bytes, toml_index
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.iam.settings import IamSettings
from clusterstack.redact import EMAIL_RE, redact_email

NON_PERSONAL_PREFIXES = ("serviceAccount:", "group:", "domain:")
HUMAN_REF_RE = re.compile(r"(?<![A-Za-z0-9_-])human-\d{3,}(?![A-Za-z0-9_-])")
MAX_BYTES = 5 * 1024 * 1024  # larger tracked files are data, not text we write by hand


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in a tracked file: ``path`` relative to the root, 1-based ``line``, and
    ``field`` — the key path defined on that line (``a.b[0].c``, :func:`field_at_line`), ""
    where none is (a comment, prose, a file that is not YAML or TOML)."""

    path: str
    line: int
    message: str
    field: str = ""


def _yaml_path_at(node: Any, line0: int, path: tuple = ()) -> tuple | None:
    """The deepest key path of ruamel round-trip ``node`` whose key (mapping) or item
    (sequence) starts on 0-based ``line0``; None when none does."""
    if isinstance(node, CommentedMap):
        entries = [(k, node.lc.key(k)[0], v) for k, v in node.items()]
    elif isinstance(node, CommentedSeq):
        entries = [(i, node.lc.item(i)[0], v) for i, v in enumerate(node)]
    else:
        return None
    found = None
    for key, start, value in entries:
        if start > line0:
            break
        deeper = _yaml_path_at(value, line0, (*path, key))
        if deeper is not None:
            found = deeper
        elif start == line0:
            found = (*path, key)
    return found


def field_at_line(text: str, rel: str, line: int) -> str:
    """The key path (``a.b[0].c``, :func:`clusterstack.config.document.format_path`) defined
    on 1-based ``line`` of ``text``, the file ``rel``: for ``.yaml``/``.yml`` the deepest key or
    list item starting on it (ruamel's round-trip positions), for ``.toml`` the longest key
    path :func:`clusterstack.config.document.toml_index` puts there. "" for other files, a line
    that defines no key (a comment, a continuation line) or a file that does not parse (its
    own checks report that)."""
    suffix = Path(rel).suffix
    if suffix == ".toml":
        keys = [k for k, n in toml_index(text).items() if n == line]
        return format_path(max(keys, key=len)) if keys else ""
    if suffix not in (".yaml", ".yml"):
        return ""
    try:
        doc = parse_yaml(text, Path(rel), positions=True)
    except ClusterstackError:
        return ""
    found = _yaml_path_at(doc, line - 1)
    return format_path(found) if found else ""


def _allowed(email: str, settings: IamSettings) -> bool:
    addr = email.lower()
    domain = addr.rpartition("@")[2]
    return addr in settings.allow_emails or any(
        domain == d or domain.endswith("." + d) for d in settings.allow_email_domains)


def personal_emails(text: str, settings: IamSettings) -> list[tuple[int, str]]:
    """``(line, email)`` of every personal email in ``text`` (see the module docstring)."""
    found = []
    for m in EMAIL_RE.finditer(text):
        before = text[max(0, m.start() - 16):m.start()]
        if before.endswith(NON_PERSONAL_PREFIXES) or _allowed(m.group(0), settings):
            continue
        found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return found


def _read_text(path: Path) -> str | None:
    try:  # the one byte reader: a tracked path that is a named pipe or a device is not read
        data = read_bytes(path, limit=MAX_BYTES)
    except ConfigError:
        return None  # tracked but deleted in the working tree, a submodule, a pipe, too large, …
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def scan_personal_emails(root: Path, paths: Iterable[str], settings: IamSettings) -> list[Finding]:
    """Scan ``paths`` (relative to ``root``; binary and >5 MiB files skipped)."""
    findings = []
    for rel in paths:
        text = _read_text(root / rel)
        if text is None:
            continue
        for line, email in personal_emails(text, settings):
            findings.append(Finding(rel, line, f"plaintext personal email {redact_email(email)}",
                                    field_at_line(text, rel, line)))
    return sorted(findings)


def scan_dangling_refs(root: Path, paths: Iterable[str], principals: set[str]) -> list[Finding]:
    """``human-NNN`` tokens in ``paths`` that are not keys of ``principals``."""
    findings = []
    for rel in paths:
        text = _read_text(root / rel)
        if text is None:
            continue
        for m in HUMAN_REF_RE.finditer(text):
            if m.group(0) not in principals:
                line = text.count("\n", 0, m.start()) + 1
                findings.append(Finding(rel, line, f"{m.group(0)} is not a registered principal",
                                        field_at_line(text, rel, line)))
    return sorted(findings)


def config_paths(tracked: Iterable[str], clusters_dir: str, project_dir: str, iam_file: str) -> list[str]:
    """The tracked configs that may reference principals: cluster configs, stack files and
    ``clusterstack.toml`` (the IAM file itself is checked by its loader)."""
    out = []
    for p in tracked:
        if p == iam_file:
            continue
        if p == "clusterstack.toml" or (p.startswith(clusters_dir.rstrip("/") + "/") and p.endswith((".yaml", ".yml"))) \
                or (p.startswith(project_dir.rstrip("/") + "/") and p.endswith((".yaml", ".yml"))):
            out.append(p)
    return out
