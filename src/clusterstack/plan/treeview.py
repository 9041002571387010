"""A commit's files without a checkout: the package tree it holds (compared with the running
package: :func:`same_code`, which decides whether ``diff --base`` plans REF in this process)
and :class:`TreeView`, the workspace root as of the commit seen through git's objects — what
:mod:`clusterstack.plan.cache` digests on a checkout, answered from ``git ls-tree`` and one
``git cat-file --batch``. git runs through the one adapter (:class:`clusterstack.adapters.git.Git`)."""

from __future__ import annotations

import hashlib
import posixpath
from pathlib import Path

from clusterstack.adapters.git import GitRepo, TreeEntry
import clusterstack


def _blob_id(data: bytes) -> str:
    """git's object id of a blob with ``data`` (``git hash-object``: SHA-1 of
    ``b"blob <len>\\0" + data``; git's object format, Documentation/gitformat-pack)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


_RUNNING: dict[str, str] | None = None


def running_package_tree() -> dict[str, str]:
    """``{path under the package: git blob id}`` of every file of the running ``clusterstack``
    package (``__pycache__`` and ``.pyc`` left out), computed once per process."""
    global _RUNNING
    if _RUNNING is None:
        pkg = Path(clusterstack.__file__).resolve().parent
        _RUNNING = {f.relative_to(pkg).as_posix(): _blob_id(f.read_bytes())
                    for f in pkg.rglob("*")
                    if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc"}
    return _RUNNING


def ref_package_tree(git: GitRepo, top: Path, commit: str,
                     entries: dict[str, TreeEntry] | None = None) -> dict[str, str] | None:
    """``{path under src/clusterstack: blob id}`` at ``commit`` (from ``entries``,
    :meth:`Git.tree` of the commit, else ``git ls-tree -r``), or None when the commit has no
    ``src/clusterstack``."""
    entries = git.tree(commit) if entries is None else entries
    tree: dict[str, str] = {}
    for path, entry in entries.items():
        if entry.kind != "blob" or not path.startswith("src/clusterstack/"):
            continue
        rel = path.removeprefix("src/clusterstack/")
        if "__pycache__" not in rel.split("/") and not rel.endswith(".pyc"):
            tree[rel] = entry.sha
    return tree or None


class TreeView:
    """The workspace root as of a commit, seen through git's objects instead of a checkout:
    :meth:`digest` answers what :func:`clusterstack.plan.cache._digest` would answer on a
    worktree of the commit (a file: SHA-256 of its bytes, ``unreadable`` for a directory; a
    directory: SHA-256 of its sorted entry names, ``.git`` included at the worktree's top —
    ``git worktree add`` writes that file; ``absent`` for what does not exist), so a cache entry
    written from a checkout is found without one. ``entries``: :meth:`Git.tree` of the commit;
    ``prefix``: the root's path under the top level (``""`` or ``"dir/"``). :attr:`paths`:
    SHA-256 of every path under the root with its mode (what a stack list depends on beyond
    the files it opens: existence, listings). :attr:`plain`: no symlink and no submodule under
    the root (else a checkout's bytes are not the blobs': callers check out instead, as they
    do when :meth:`Git.checkout_converts`: filters and line-ending conversions). File
    contents come from :meth:`fetch` (one ``git cat-file --batch`` for all)."""

    def __init__(self, entries: dict[str, TreeEntry], prefix: str, git: GitRepo) -> None:
        self._git = git
        self._top = prefix == ""
        self._entries = {p[len(prefix):]: e for p, e in entries.items() if p.startswith(prefix)}
        self._children: dict[str, set[str]] = {"": set()}
        for path in self._entries:
            parent, _, name = path.rpartition("/")
            self._children.setdefault(parent, set()).add(name)
        if self._top:
            self._children[""].add(".git")
        self._blobs: dict[str, bytes] = {}
        self._digests: dict[tuple[str, str], str] = {}
        self.plain = all(e.mode not in ("120000", "160000") for e in self._entries.values())
        self.paths = hashlib.sha256("\n".join(
            f"{e.mode} {e.kind} {p}" for p, e in sorted(self._entries.items())).encode(
                "utf-8", errors="surrogateescape")).hexdigest()

    def fetch(self, rels: list[str]) -> None:
        """Read the blobs of the files ``rels`` (relative to the root) in one git process."""
        want = [e.sha for r in rels if (e := self._entries.get(r)) is not None
                and e.kind == "blob" and e.sha not in self._blobs]
        self._blobs.update(self._git.blobs(want))

    def digest(self, kind: str, rel: str) -> str:
        """:func:`clusterstack.plan.cache._digest` of ``rel`` (``kind``: file | dir) in a
        checkout of the commit, from the objects (each answer computed once)."""
        done = self._digests.get((kind, rel))
        if done is None:
            done = self._digests[kind, rel] = self._digest(kind, rel)
        return done

    def _digest(self, kind: str, rel: str) -> str:
        rel = posixpath.normpath(rel) if rel else "."  # no symlinks in a plain tree: by name
        rel = "" if rel == "." else rel
        entry = self._entries.get(rel)
        if kind == "dir":
            if rel == "" or (entry is not None and entry.kind == "tree"):
                names = sorted(self._children.get(rel, ()))
                return hashlib.sha256("\0".join(names).encode(
                    "utf-8", errors="surrogateescape")).hexdigest()
            return "absent"
        if rel == "" or (entry is not None and entry.kind != "blob"):
            return "unreadable"
        if entry is None:
            return "absent"
        if entry.sha not in self._blobs:
            self.fetch([rel])
        return hashlib.sha256(self._blobs[entry.sha]).hexdigest()


def same_code(git: GitRepo, top: Path, commit: str) -> bool:
    """True when ``commit``'s ``src/clusterstack`` is the running package file for file (or
    absent: the installed package plans it either way), so REF can be planned in-process."""
    ref = ref_package_tree(git, top, commit)
    return ref is None or ref == running_package_tree()
