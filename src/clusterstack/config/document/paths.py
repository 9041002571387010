"""Key paths into a document: the type every located problem carries, and its text
(``("a", "b", 0, "c")`` → ``a.b[0].c``)."""

from __future__ import annotations

Path_ = tuple[str | int, ...]


def format_path(path: Path_) -> str:
    """``("a", "b", 0, "c")`` → ``a.b[0].c``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
