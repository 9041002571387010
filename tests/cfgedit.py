"""Helpers for tests that break a copy of the shipped workspace and check where the error points.

Expected line numbers are computed from the edited text, never hard-coded.
"""

from __future__ import annotations

from pathlib import Path


def edit(path: Path, *replacements: tuple[str, str]) -> str:
    """Apply ``(old, new)`` text replacements to the file at ``path``; each ``old`` must occur
    exactly once. Returns the new text (also written back)."""
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return text


def line_of(text: str, needle: str) -> int:
    """1-based line on which the only occurrence of ``needle`` starts."""
    assert text.count(needle) == 1, f"{needle!r} occurs {text.count(needle)} times"
    return text[:text.index(needle)].count("\n") + 1
