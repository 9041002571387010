"""Where an import file may live, and reading one for ``import apply``.

An import file holds provider IDs of live objects (and the operator's record IDs): it must never
be committed, so it may not even be written inside the work tree, and it must be readable and
writable by its owner only. The format itself — entries, ``nameTable``, Pulumi's rules, the
digest — is :mod:`clusterstack.pulumi.importfile`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.importfile import ImportFile, ImportFileError, parse
from clusterstack.config.document import MAX_STATE_BYTES, read_text

FILE_MODE = 0o600


class ImportRefused(ClusterstackError):
    """``import apply`` (or ``generate``) refuses: the file, its place, or its content is not
    the reviewed transaction. Exit code 2; nothing was changed."""


# --- where the file may live ---------------------------------------------------------------


def repository_roots(workspace_root: Path) -> tuple[Path, ...]:
    """The directories an import file must stay out of: the workspace root and, when the
    workspace sits inside a larger git work tree, that tree's root (symlinks resolved)."""
    root = workspace_root.resolve()
    roots = [root]
    for d in (root, *root.parents):
        if (d / ".git").exists():
            if d != root:
                roots.append(d)
            break
    return tuple(roots)


def check_outside(path: Path, workspace_root: Path) -> Path:
    """Resolve ``path`` (symlinks included, even for a file that does not exist yet) and
    refuse it when it lies inside the repository. Returns the resolved path.

    Rule: an import file holds provider IDs of live objects (and the operator's record IDs);
    it must never be committed, so it may not even be written inside the work tree.
    """
    resolved = Path(os.path.abspath(path)).resolve()
    for root in repository_roots(workspace_root):
        if resolved == root or root in resolved.parents:
            raise ImportRefused(
                f"inside the repository ({root})" + (f", via symlinks: {resolved}"
                                                     if resolved != Path(os.path.abspath(path)) else ""),
                "import files hold provider IDs and must never be committed: use a path "
                "outside it, e.g. ~/clusterstack-imports/<cluster>.json", file=Path(path))
    return resolved


def check_writable_target(path: Path, workspace_root: Path) -> Path:
    """For ``generate --output``: outside the repository (:func:`check_outside`), in an
    existing directory, and not a directory itself. Returns the resolved path."""
    resolved = check_outside(path, workspace_root)
    if resolved.is_dir():
        raise ImportRefused("is a directory", "give a file name, e.g. <dir>/<cluster>.json",
                            file=Path(path))
    if not resolved.parent.is_dir():
        raise ImportRefused(f"directory {resolved.parent} does not exist",
                            f"create it first (mkdir -m 700 {resolved.parent})", file=Path(path))
    return resolved


def check_mode(path: Path) -> None:
    """Refuse a file that is not a regular file readable and writable by its owner only
    (mode 0600; 0400 is accepted too). Raises ImportRefused."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ImportRefused("no such file", "give the file `import generate --output` wrote",
                            file=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise ImportRefused("not a regular file", "give the file `import generate` wrote",
                            file=path)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise ImportRefused(
            f"mode {mode:04o}: readable or writable by others than its owner",
            f"the file holds provider IDs: `chmod 600 {path}` after checking nobody else "
            "edited it, or regenerate it", file=path)


def read_checked(path: Path, workspace_root: Path) -> ImportFile:
    """Read an import file for ``apply``: outside the repository, mode 0600, valid shape."""
    resolved = check_outside(path, workspace_root)
    check_mode(resolved)
    try:
        return parse(read_text(resolved, missing="import file not found", error=ImportFileError,
                               limit=MAX_STATE_BYTES), file=path)
    except ImportFileError as exc:
        raise ImportRefused(problems=exc.problems) from None
