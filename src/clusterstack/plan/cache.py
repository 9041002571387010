"""The plan cache: one entry per stack, addressed by the code that plans it and the files it read.

Used by ``clusterstack diff --base REF`` for REF's side (:mod:`clusterstack.plan.at_ref`, both
in this process and in the child that runs REF's own package) so that a pull request which
edits one cluster re-plans one stack of its base, and CI plans a base commit's stacks once for
every pull request against it (the workflow keeps the directory in the Actions cache).

Address of one stack's plan (SHA-256 throughout):

- ``program``: the planning code — the ``clusterstack`` package's files (git blob ids, file by
  file: REF's tree, or the running package when they are the same), the driver
  (``plan/__main__.py``), every installed distribution's name and version (the provider
  SDKs decide the requests a program makes) and Python's version — computed by the caller
  (:func:`program_key`);
- the project directory (relative to the workspace root) and the stack name;
- the stack's reviewed inputs: every file under the workspace root that planning the stack
  read and every directory it listed, as :mod:`clusterstack.reads` notes them — THE byte
  reader (:func:`clusterstack.config.document.read_bytes`), the workspace listings and the
  entry point the plan runs (:class:`Recording`; files of the environment or of the planning
  package are left out: the program key covers them), each with its content's digest
  (a listing: its sorted names; ``absent`` when it does not exist). Each path is recorded as
  the program opened it, not resolved: one that goes through a symlink under the root (the
  file itself or a directory on the way) has a digest that also names where it leads
  (:func:`_digest`), so a link repointed to another file is a miss even when both target
  files are unchanged. Recorded when the stack is planned, so it is exactly what THAT
  stack reads: its cluster file, the clusters it references, its stack file, the project's
  entry point, ``clusterstack.toml`` — and not the other clusters' files, nor the listing of
  ``clusters/`` (whether a referenced cluster exists is asked of that file alone,
  ``validation/clusters.py`` ``_KnownClusters``; it is then opened, or the plan fails): adding
  a cluster misses no other stack's entry.

The stack list of a run (which stacks REF has, :meth:`PlanCache.listing`) is kept the same way
under ``lists/``, addressed by the run's arguments, the files the listing opened and
``paths`` — every path under the root with its mode (a listing also depends on what exists,
which an existence check reveals without a read; all paths cover it). With both, a run finds
every entry from git's objects alone (:class:`clusterstack.plan.treeview.TreeView`, whose
digests are this module's :func:`_digest` of a checkout of the same commit, tested path by
path): no worktree when everything hits. The digest is of the bytes, not the git blob id;
a checkout whose bytes are not its blobs (``.gitattributes`` filters, ``eol``, ``ident``,
``working-tree-encoding``; ``core.autocrlf``) could give a blob equal to another commit's
checkout, a wrong hit, so the git view is used only when git converts nothing
(:meth:`clusterstack.adapters.git.Git.checkout_converts`); else REF is checked out and its
checkout's bytes are digested.

Layout under the cache directory (``lists/`` alike): ``<stack>.reads.json`` (the paths the last plan of this
stack read) and ``<stack>-<inputs>.json`` (the plan), both written atomically
(:func:`clusterstack.fsutil.write_atomic`), so concurrent runs never read half an entry and at
worst both plan and write the same bytes. A lookup hashes the listed paths as they are now;
the plan entry holds the path set it was planned from, and a program that reads the same
contents reads the same paths (it is deterministic), so a stale ``reads`` list can only miss.
A damaged entry is a miss. What is not covered: files outside the workspace root other than
the package and the installed distributions (programs read none; :mod:`clusterstack.plan.runtime`
hides the environment from them).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator
import clusterstack
from clusterstack import reads

FORMAT = "clusterstack.plancache/v4"  # v4: reads recorded by clusterstack.reads, not an audit hook


def _outside() -> tuple[Path, ...]:
    """Trees whose files the program key already covers: the environment's prefixes (the
    installed distributions) and the ``clusterstack`` package that plans."""
    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(clusterstack.__file__).parent}
    return tuple(sorted({d.resolve() for d in dirs}))


class Recording:
    """The paths under ``root`` read or listed while the block runs (``with`` it): what the
    importable package's :mod:`clusterstack.reads` notes — THE byte reader, the workspace
    listings, the entry point the plan runs. Imported on entry, not at the top: in the child
    that is REF's package (whose reader is the one that reads), and the driver only records
    with a package that has it (:data:`clusterstack.plan.refproto.CACHE_NEEDS`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._roots = tuple(dict.fromkeys([self.root, Path(os.path.normpath(Path(root).absolute()))]))
        self._seen: list[tuple[str, str]] = []
        self._observing: contextlib.AbstractContextManager[None] | None = None

    def _note(self, kind: str, path: str) -> None:
        self._seen.append((kind, path))

    def __enter__(self) -> "Recording":
        self._observing = reads.observing(self._note)
        self._observing.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._observing is not None:
            self._observing.__exit__(None, None, None)
            self._observing = None

    def _lexical(self, p: Path) -> str | None:
        """``p`` relative to the root as the program named it (symlinks NOT followed: a link
        repointed must change the address, :func:`_digest`), or None when it is not under
        the root by name. ``..`` is collapsed by name only where that names the same file
        the system opens (no symlink before it); else it is kept, and the system resolves it."""
        norm = Path(os.path.normpath(p))
        if ".." in p.parts and os.path.realpath(p) != os.path.realpath(norm):
            cands = [p]  # a/link/../b is not a/b: keep the path as opened
        else:
            cands = [norm]
        for cand in cands:
            for root in self._roots:
                try:
                    rel = cand.relative_to(root)
                except ValueError:
                    continue
                if not Path(os.path.normpath(root / rel)).is_relative_to(root):
                    return None  # climbs out of the root
                return rel.as_posix()
        return None

    def inputs(self) -> list[tuple[str, str]]:
        """``[(kind, path relative to root)]``, sorted, once each (``kind``: file | dir). The
        path is the one the program opened (a symlink under the root is not followed: its
        target is in the digest, :func:`_digest`); a path under the root only through a link
        from outside it is recorded as its target."""
        out = set()
        covered = _outside()
        for kind, raw in self._seen:
            p = Path(raw)
            p = (p if p.is_absolute() else Path.cwd() / p)
            try:
                full = Path(os.path.normpath(p)).resolve()
            except (ValueError, OSError):
                continue
            rel = self._lexical(p)
            if rel is None:
                try:
                    rel = full.relative_to(self.root).as_posix()
                except ValueError:
                    continue
            parts = tuple(rel.split("/"))
            if "__pycache__" in parts or any(full.is_relative_to(d) for d in covered):
                continue
            if parts[:2] == ("src", "clusterstack"):
                continue  # REF's package in the child: part of the program key
            out.add((kind, "." if rel == "" else rel))
        return sorted(out)


def _digest(root: Path, kind: str, rel: str) -> str:
    """The digest of ``rel`` (relative to ``root``; ``kind``: file | dir): SHA-256 of a file's
    bytes or of a directory's sorted names, ``absent``, ``unreadable``. A path that resolves
    through a symlink (any component under the root, or the link itself) is, instead,
    ``link:`` + SHA-256 of where it leads (its real path relative to the root) and that
    digest, so repointing a link changes it; without links the digest is the plain one (what
    :class:`clusterstack.plan.treeview.TreeView` computes from git's objects)."""
    path = Path(root) / rel
    plain = _plain_digest(path, kind)
    top = os.path.realpath(root)
    lexical = os.path.normpath(os.path.join(top, rel))
    real = os.path.realpath(os.path.join(top, rel))
    if real == lexical:
        return plain
    where = os.path.relpath(real, top).replace(os.sep, "/")
    return "link:" + hashlib.sha256(json.dumps([where, plain]).encode(
        "utf-8", errors="surrogateescape")).hexdigest()


def _plain_digest(path: Path, kind: str) -> str:
    try:
        if kind == "dir":
            return hashlib.sha256("\0".join(sorted(os.listdir(path))).encode()).hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except OSError:
        return "unreadable"


Digest = Callable[[str, str], str]  # (kind, path relative to the root) -> digest


def _sha(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _distributions() -> list[str]:
    """The installed distributions, as the names of their metadata directories on
    ``sys.path`` (``<name>-<version>.dist-info``, or ``.egg-info``: the name and version are in
    the directory name — the "Recording installed projects" specification of the PyPA), sorted.
    A directory scan, not ``importlib.metadata.distributions()``: that parses every METADATA
    file (measured ~0.1 s of CPU for ~100 distributions, on every diff; this is ~2 ms)."""
    names: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue  # a zip, or a path that does not exist
    return sorted(names)


def program_key(package_tree: dict[str, str], driver: bytes) -> str:
    """The ``program`` part of every address: ``package_tree`` (``{path: git blob id}`` of the
    ``clusterstack`` package that plans), the driver file's bytes, the installed
    distributions (:func:`_distributions`: name and version of each) and Python's version."""
    import platform

    return _sha({"format": FORMAT, "package": sorted(package_tree.items()),
                 "driver": hashlib.sha256(driver).hexdigest(), "dists": _distributions(),
                 "python": platform.python_version()})


class PlanCache:
    """Per-stack plans under ``directory`` for the code ``program`` (:func:`program_key`).

    :meth:`plan` returns one stack's plan as canonical JSON text of a one-plan list (what
    ``dumps([plan])`` writes), from the cache or by calling ``make`` and storing the result.
    :attr:`hits` / :attr:`misses` count the stacks read / planned. Never raises for the cache
    itself (an unwritable directory only plans); ``make``'s exceptions propagate (a failed
    plan is not stored)."""

    def __init__(self, directory: Path, program: str) -> None:
        self.directory = Path(directory)
        self.program = program
        self.hits: list[str] = []
        self.misses: list[str] = []

    def _stack_key(self, project: str, stack: str) -> str:
        return _sha({"format": FORMAT, "program": self.program, "project": project,
                     "stack": stack})[:40]

    @staticmethod
    def _entry_name(key: str, reads: list[list[str]], digest: Digest) -> str:
        inputs = _sha([[kind, rel, digest(kind, rel)] for kind, rel in reads])[:40]
        return f"{key}-{inputs}.json"

    def _address(self, root: Path, project_dir: Path, stack: str) -> tuple[Path, str, str]:
        root = Path(root).resolve()
        project = Path(project_dir).resolve().relative_to(root).as_posix()
        return root, self._stack_key(project, stack), f"{project}/{stack}"

    def stack_reads(self, project: str, stack: str) -> list[list[str]] | None:
        """The paths the last plan of ``stack`` of the project at ``project`` (relative to the
        workspace root) read, or None (never planned, or a damaged list)."""
        return _read_reads(self.directory / f"{self._stack_key(project, stack)}.reads.json")

    def lookup_at(self, project: str, stack: str, digest: Digest,
                  reads: list[list[str]] | None = None) -> str | None:
        """The stored plan JSON of ``stack`` when the files it read have the same digests
        under ``digest`` (``(kind, path relative to the root) -> digest``: :func:`_digest` of
        a directory, or a git tree's, :class:`clusterstack.plan.treeview.TreeView`), else None.
        ``reads``: :meth:`stack_reads`, when the caller has it already."""
        key = self._stack_key(project, stack)
        reads = self.stack_reads(project, stack) if reads is None else reads
        if reads is None:
            return None
        entry = _read_entry(self.directory / self._entry_name(key, reads, digest), reads)
        plan = entry.get("plan") if entry is not None else None
        return plan if isinstance(plan, str) else None

    def lookup(self, root: Path, project_dir: Path, stack: str) -> str | None:
        """The stored plan JSON of ``stack`` when its address is unchanged, else None."""
        root, _, label = self._address(root, project_dir, stack)
        return self.lookup_at(label.rsplit("/", 1)[0], stack, functools.partial(_digest, root))

    def plan(self, root: Path, project_dir: Path, stack: str, make: Callable[[], str]) -> str:
        """The plan JSON of ``stack`` of the project in ``project_dir`` (under ``root``)."""
        cached = self.lookup(root, project_dir, stack)
        root, key, label = self._address(root, project_dir, stack)
        if cached is not None:
            self.hits.append(label)
            return cached
        with Recording(root) as rec:
            text = make()
        # the workspace file is read before a stack is planned (Workspace.load): always an input
        reads = [list(r) for r in sorted({*rec.inputs(), ("file", "clusterstack.toml")})]
        self.misses.append(label)
        self._store(self.directory, key, reads, functools.partial(_digest, root),
                    {"stack": label, "plan": text})
        return text

    # -- the stack list: which stacks a run plans -------------------------------------------
    def _listing_key(self, what: Any, paths: str) -> str:
        return _sha({"format": FORMAT, "program": self.program, "listing": what,
                     "paths": paths})[:40]

    def listing_reads(self, what: Any, paths: str) -> list[list[str]] | None:
        """The files the stored stack list for ``what`` (the run's arguments) and ``paths``
        (the digest of every path under the root, :attr:`TreeView.paths`) read, or None."""
        return _read_reads(self.directory / LISTS / f"{self._listing_key(what, paths)}.reads.json")

    def lookup_listing(self, what: Any, paths: str, digest: Digest,
                       reads: list[list[str]] | None = None) -> list[tuple[str, str]] | None:
        """The stored ``[(project relative to the root, stack)]`` of a run, as
        :meth:`listing` stored it, when the files it read have the same digests; else None."""
        key = self._listing_key(what, paths)
        reads = self.listing_reads(what, paths) if reads is None else reads
        if reads is None:
            return None
        entry = _read_entry(self.directory / LISTS / self._entry_name(key, reads, digest), reads)
        stacks = entry.get("stacks") if entry is not None else None
        try:
            return [(str(d), str(n)) for d, n in stacks] if isinstance(stacks, list) else None
        except (TypeError, ValueError):
            return None

    def listing(self, root: Path, what: Any, paths: str,
                make: Callable[[], list[tuple[Path, str]]]) -> list[tuple[Path, str]]:
        """``make()`` (the ``[(project directory, stack)]`` a run plans, e.g.
        :func:`clusterstack.plan.__main__.stack_list`), stored with the files it read under
        ``root`` so that :meth:`lookup_listing` can answer without a checkout. What the list
        depends on beyond the files opened (a path's existence, a directory's entries) is in
        ``paths``, which covers every path under the root."""
        root = Path(root).resolve()
        with Recording(root) as rec:
            out = make()
        reads = [list(r) for r in sorted({*rec.inputs(), ("file", "clusterstack.toml")})]
        stacks = [[Path(d).resolve().relative_to(root).as_posix(), n] for d, n in out]
        self._store(self.directory / LISTS, self._listing_key(what, paths), reads,
                    functools.partial(_digest, root), {"stacks": stacks})
        return out

    def _store(self, directory: Path, key: str, reads: list[list[str]], digest: Digest,
               doc: dict[str, Any]) -> None:
        name = self._entry_name(key, reads, digest)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            write_atomic(directory / name, json.dumps({"format": FORMAT, "reads": reads, **doc}))
            write_atomic(directory / f"{key}.reads.json", json.dumps(reads))
        except OSError:
            pass  # a read-only checkout still plans


LISTS = "lists"  # the stack lists (PlanCache.listing), in their own directory


def _read_reads(path: Path) -> list[list[str]] | None:
    try:
        # plain json.loads: this file also runs under REF's package, which may predate
        # config.document.json_loads; a damaged entry (any decode failure) is a miss
        reads = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    ok = isinstance(reads, list) and all(
        isinstance(r, list) and len(r) == 2 and r[0] in ("file", "dir") and isinstance(r[1], str)
        for r in reads)
    return reads if ok else None


def _read_entry(path: Path, reads: list[list[str]]) -> dict[str, Any] | None:
    """The entry at ``path`` when it is whole and of these ``reads`` (a damaged one: None)."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))  # as in _read_reads
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("reads") == reads:
        return entry
    return None


def write_atomic(path: Path, text: str) -> None:
    """:func:`clusterstack.fsutil.write_atomic` where the planning package has it; a REF's
    older package (this file also runs in the child under REF's code) may not: then the same
    temp-file-and-rename in the same directory."""
    try:
        from clusterstack.fsutil import write_atomic as atomic
    except ImportError:
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return
    atomic(path, text)


def entries(directory: Path) -> Iterator[Path]:
    """The plan entries in ``directory`` (not the ``reads`` lists)."""
    return (p for p in sorted(Path(directory).glob("*.json")) if not p.name.endswith(".reads.json"))
