"""Confinement: every path a reviewed file or a command names stays inside the place it belongs.

The rules (docs/making-a-change.md, "Where files may live"):

1. A path written in a reviewed file (``clusterstack.toml`` directories and ``[iam] file``,
   the IAM file's ``encryption.keyset``, ``services.yaml`` ``project_dir``, a stack's
   ``<project>:file``) is relative and has no ``..`` part — the model's
   :data:`~clusterstack.config.types.RepoPath` type, an error at its line.
2. Where it is used, the path resolved with symlinks followed must still be inside the
   workspace root (:func:`confined`): a symlink out of the workspace — a cluster file linked
   to ``/etc/passwd``, a keyset linked to another user's file — is refused, as is a dangling
   one (named as such, never as an unknown name). A Pulumi program's entry point (``main:``
   of Pulumi.yaml) stays inside its project directory. Each refusal names the root it left.
3. A name given on the command line that becomes a file name (a cluster = a stack) has no path
   parts (:func:`check_name`), checked before any file is read: ``plan ../iam/iam`` would
   otherwise read ``clusters/../iam/iam.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path

from clusterstack.config.types import PATTERN_RULES, STACK_NAME, STACK_NAME_RE
from clusterstack.errors import ClusterstackError, ConfigError


def check_name(name: str, what: str = "cluster") -> str:
    """``name`` when it is a stack name (letters, digits, ``-``, ``_``, ``.``; not ``.`` or
    ``..``; Pulumi's ``stackNameRE``); raises ConfigError (exit 2) otherwise — so a name never
    carries a path part into a file name. Returns ``name``."""
    if not isinstance(name, str) or not STACK_NAME_RE.match(name):
        raise ConfigError(f"{what} name {name!r} is not {PATTERN_RULES[STACK_NAME]}",
                          f"give the {what}'s name, not a path (clusterstack stacks lists them)")
    return name


#: What ``root`` is unless a caller says otherwise: the workspace root, which need not be the
#: top of a git repository (a workspace may live in a subdirectory of one).
WORKSPACE_ROOT = "the workspace root (the directory of clusterstack.toml)"
#: The root of a Pulumi program's entry point (:mod:`clusterstack.workspace.projects`).
PROJECT_DIRECTORY = "the project directory (the directory of Pulumi.yaml)"


def confined(path: Path, root: Path, *, what: str = "file", within: str = WORKSPACE_ROOT,
             error: type[ClusterstackError] = ConfigError, file: Path | None = None,
             line: int | None = None, field: str = "") -> Path:
    """``path`` resolved (symlinks followed), after checking it is inside ``root``.

    ``within`` names what ``root`` is, for the message and the hint (:data:`WORKSPACE_ROOT`,
    :data:`PROJECT_DIRECTORY`). Raises ``error`` (exit 2) located at ``file:line: field`` when
    given, else at ``path``: when ``path`` is a symlink whose target does not exist
    ("dangling"), or when the resolved path is outside ``root`` (rule 2 of this module). A
    missing plain file is not an error here (the reader reports it).
    """
    path = Path(path)
    root = Path(root).resolve()
    where = {"file": file if file is not None else path, "line": line, "field": field}
    if path.is_symlink() and not path.exists():
        raise error(f"{what} is a symlink to {os.readlink(path)}, which does not exist",
                    "replace the link with the file itself", **where)
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        how = "is a symlink" if path.is_symlink() else "resolves"
        raise error(f"{what} {how} outside {within} ({resolved})",
                    f"keep it inside {within}; a reviewed path never leaves it", **where)
    return resolved
