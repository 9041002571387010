"""The git adapter: the only code in clusterstack that runs ``git`` (read-only, local; nothing
here talks to a remote).

One runner (:meth:`Git.run`), typed results (:class:`GitState`, :class:`ChangedLine`) and one
error class (:class:`GitError`, exit 2): git missing, a path outside a repository, or a ref that
names no commit is a clear ``error:`` line, never an internal error. What each caller reads:

- ``up`` / ``deploy … rollout`` — :meth:`Git.state`: commit, branch and dirty flag, recorded
  in the update message (Pulumi itself records ``git.head`` / ``git.dirty`` in the update's
  environment, ``pulumi stack history --json``, so both places agree); an update from a tree
  that is not a clean checkout of ``[workspace] release_branch`` asks for a typed phrase;
- ``preview --record`` / ``ci preview`` / ``up --reviewed`` (:mod:`clusterstack.guard.review`) —
  :meth:`Git.state`'s ``tree`` (:meth:`Git.tree_of`): a record binds the reviewed git tree;
- ``diff --base REF`` (:mod:`clusterstack.plan.at_ref`) — :meth:`Git.resolve`, :meth:`Git.show`
  and :meth:`Git.worktree` (REF checked out next to the repository, never touching the tree);
- ``ci stacks --changed-since`` / ``ci rollouts`` (:mod:`clusterstack.ci.discover`) —
  :meth:`Git.merge_base`, :meth:`Git.changed_files`, :meth:`Git.show`;
- ``iam review`` / ``iam check`` — :meth:`Git.show`, :meth:`Git.tracked_files`,
  :meth:`Git.changed_lines`, :meth:`Git.is_ignored`;
- ``deploy … rollback`` of a Pulumi service (:mod:`clusterstack.deploy.stack`) —
  :meth:`Git.commit_of` and :meth:`Git.worktree` at the commit an update recorded.

Tests run it on real temporary repositories (the git "fake" is git itself).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager, Iterator, Protocol

from clusterstack.errors import ClusterstackError

_REF_HINT = ("give a branch, tag or commit of this repository (e.g. origin/main, HEAD~1); fetch a "
             "remote branch first (in CI: actions/checkout with fetch-depth: 0)")


#: The variables that point git at a repository, an index or an object store other than the
#: one found from the working directory — git's own ``local_repo_env`` list (git/environment.c;
#: ``git rev-parse --local-env-vars`` prints it), which git clears itself before it runs in
#: another repository (a submodule). Inside a git hook ``GIT_DIR`` / ``GIT_INDEX_FILE`` are set
#: for the *outer* repository: inherited, they made ``diff --base`` fail or read another
#: repository. Unlike git, the ``-c`` configuration (``GIT_CONFIG_PARAMETERS``,
#: ``GIT_CONFIG_COUNT``) is kept: it carries the operator's settings (``safe.directory`` in a CI
#: container), not a repository.
LOCAL_REPO_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_OBJECT_DIRECTORY", "GIT_DIR",
                  "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE",
                  "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
                  "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR")


def git_env() -> dict[str, str]:
    """The environment every ``git`` of clusterstack runs with: the process's, without
    :data:`LOCAL_REPO_ENV` — git finds the repository from ``-C <dir>`` alone."""
    return {k: v for k, v in os.environ.items() if k not in LOCAL_REPO_ENV}


class GitError(ClusterstackError):
    """A git command failed: git is not installed, the directory is not in a git repository,
    or a ref names no commit (exit 2). The message names the command or the ref; the hint says
    what to do."""


@dataclass(frozen=True)
class GitState:
    """Where an update comes from. ``commit``: full SHA of HEAD (None outside a git repository
    or before the first commit); ``branch``: the checked-out branch (None when detached or not
    a repository); ``dirty``: tracked or untracked changes in the working tree (``git status
    --porcelain``); ``tree``: the tree id of HEAD (``git rev-parse HEAD^{tree}``: the
    content a commit names, equal for two commits of the same files — a PR's head and the
    merge of it into an up-to-date base), None without a commit."""

    commit: str | None
    branch: str | None
    dirty: bool
    tree: str | None = None

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit else "no-commit"

    def describe(self) -> str:
        """``git 1a2b3c4d5e6f[ dirty] on <branch>`` — the suffix ``up`` puts in update messages."""
        where = f"on {self.branch}" if self.branch else "detached" if self.commit else "outside git"
        return f"git {self.short}{' dirty' if self.dirty else ''} {where}"

    def is_release(self, release_branch: str) -> bool:
        """A clean checkout of ``release_branch``."""
        return self.commit is not None and self.branch == release_branch and not self.dirty


@dataclass(frozen=True)
class TreeEntry:
    """One entry of ``git ls-tree``: ``mode`` (``100644``, ``100755``, ``120000`` a symlink,
    ``160000`` a submodule, ``040000`` a tree), ``kind`` (blob, tree, commit), ``sha``."""

    mode: str
    kind: str
    sha: str


@dataclass(frozen=True)
class ChangedLine:
    """One ``+``/``-`` line of a diff: ``path`` relative to the repository root, ``line`` the
    1-based line number in the new (``+``) or old (``-``) file."""

    path: str
    sign: str
    line: int
    text: str


class GitRepo(Protocol):
    """A git repository as clusterstack uses it: the one runner and the reads of commits,
    trees and changes (implemented by :class:`Git`; tests run it on real repositories in
    temporary directories). Every method raises :class:`GitError` (exit 2) when git fails;
    see :class:`Git` for each method's rule."""

    root: Path

    def run(self, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        ...

    def is_repo(self) -> bool:
        ...

    def toplevel(self) -> Path:
        ...

    def rel(self, path: Path) -> str:
        ...

    def state(self) -> GitState:
        ...

    def tree_of(self, commit: str) -> str | None:
        ...

    def commit_of(self, ref: str) -> str | None:
        ...

    def resolve(self, ref: str, *, field: str = "") -> str:
        ...

    def merge_base(self, ref: str, *, field: str = "") -> str:
        ...

    def show(self, ref: str, path: str) -> str | None:
        ...

    def tree(self, commit: str) -> dict[str, TreeEntry]:
        ...

    def checkout_converts(self, entries: dict[str, TreeEntry]) -> bool:
        ...

    def blobs(self, shas: list[str]) -> dict[str, bytes]:
        ...

    def tracked_files(self, under: Path | None = None) -> list[str]:
        ...

    def is_ignored(self, path: Path) -> bool:
        ...

    def changed_files(self, ref: str, *, field: str = "") -> tuple[str, ...]:
        ...

    def changed_lines(self, base: str, head: str | None, paths: list[str]) -> list[ChangedLine]:
        ...

    def worktree(self, commit: str, *, prefix: str = "clusterstack-") -> ContextManager[Path]:
        ...


class Git:
    """Git commands run in ``root`` (a directory inside the repository, usually the workspace
    root). Paths given as ``./x`` are relative to ``root``, others to the repository's top
    level (git's own rule for ``REF:PATH``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._top: Path | None = None          # toplevel(), once found (it cannot move)
        self._commits: dict[str, str] = {}     # full SHA -> itself, once verified (immutable)

    # -- the runner --------------------------------------------------------------------------
    def run(self, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        """``git -C <cwd or root> ARGS``; stdout/stderr captured as bytes. Raises GitError when
        git is not installed, and with ``check`` when git exits non-zero (the message ends with
        git's last stderr line)."""
        try:
            proc = subprocess.run(["git", "-C", str(cwd or self.root), *args], capture_output=True,
                                  env=git_env())
        except FileNotFoundError:
            raise GitError("git is not installed", "install git (https://git-scm.com/downloads)") from None
        if check and proc.returncode != 0:
            msg = proc.stderr.decode(errors="replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed: {msg[-1] if msg else f'exit code {proc.returncode}'}",
                           "check that this is a git checkout and the revision exists")
        return proc

    def _text(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", errors="surrogateescape")

    # -- the repository ----------------------------------------------------------------------
    def is_repo(self) -> bool:
        """``root`` is inside a git work tree (False also when git is not installed)."""
        try:
            return self.run("rev-parse", "--git-dir", check=False).returncode == 0
        except GitError:
            return False

    def toplevel(self) -> Path:
        """The repository's top-level directory (resolved). Raises GitError outside a repository."""
        if self._top is not None:
            return self._top
        proc = self.run("rev-parse", "--show-toplevel", check=False)
        if proc.returncode != 0:
            raise GitError(f"{self.root} is not inside a git repository",
                           "run the command in the repository's checkout")
        self._top = Path(proc.stdout.decode().strip()).resolve()
        return self._top

    def rel(self, path: Path) -> str:
        """``path`` relative to the repository's top level, POSIX form."""
        return path.resolve().relative_to(self.toplevel()).as_posix()

    def state(self) -> GitState:
        """The commit, branch and dirty flag of the checkout (no network, read-only). Outside a
        repository, or without git, the state has no commit: ``up`` then asks for the typed
        ``<stack>@no-commit`` phrase rather than refusing."""
        try:
            head = self.run("rev-parse", "--verify", "HEAD", check=False)
        except GitError:  # no git at all: nothing to record, as outside a repository
            return GitState(commit=None, branch=None, dirty=False)
        commit = head.stdout.decode().strip() if head.returncode == 0 else ""
        if head.returncode != 0:
            inside = self.run("rev-parse", "--is-inside-work-tree", check=False).stdout.decode().strip()
            if inside != "true":
                return GitState(commit=None, branch=None, dirty=False)
        branch = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        status = self.run("status", "--porcelain", check=False).stdout.decode().strip()
        name = branch.stdout.decode().strip()
        return GitState(commit=commit or None, branch=name if branch.returncode == 0 and name else None,
                        dirty=bool(status), tree=self.tree_of(commit) if commit else None)

    def tree_of(self, commit: str) -> str | None:
        """The tree id of ``commit`` (``git rev-parse --verify <commit>^{tree}``), or None when
        it names no commit here."""
        if not commit or commit.startswith("-"):
            return None
        proc = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{tree}}",
                        check=False)
        sha = proc.stdout.decode().strip()
        return sha if proc.returncode == 0 and sha else None

    # -- refs --------------------------------------------------------------------------------
    def commit_of(self, ref: str) -> str | None:
        """The full SHA of the commit ``ref`` names (a branch, tag, full or abbreviated SHA), or
        None when it names none here (not fetched, ambiguous, or not a commit)."""
        if not ref or ref.startswith("-"):
            return None
        if ref in self._commits:  # a full SHA this object verified: a commit id never changes
            return self._commits[ref]
        proc = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                        check=False)
        sha = proc.stdout.decode().strip()
        if proc.returncode == 0 and sha:
            self._commits[sha] = sha
            return sha
        return None

    def resolve(self, ref: str, *, field: str = "") -> str:
        """The full SHA of ``ref``. Raises GitError (``field``: the option the ref came from,
        e.g. ``--base``) outside a repository, for an option-like ref and for a ref that names
        no commit (``unknown git ref 'x'``)."""
        self.toplevel()
        if ref.startswith("-"):
            raise GitError(f"bad git ref {ref!r}", "give a branch, tag or commit", field=field)
        sha = self.commit_of(ref)
        if sha is None:
            raise GitError(f"unknown git ref {ref!r}", _REF_HINT, field=field)
        return sha

    def merge_base(self, ref: str, *, field: str = "") -> str:
        """The commit ``ref`` and HEAD fork from (``ref`` itself when it is an ancestor of HEAD;
        unrelated histories fall back to ``ref``). Raises GitError for an unknown ref."""
        commit = self.resolve(ref, field=field)
        proc = self.run("merge-base", commit, "HEAD", check=False)
        return proc.stdout.decode().strip() or commit if proc.returncode == 0 else commit

    # -- content -----------------------------------------------------------------------------
    def show(self, ref: str, path: str) -> str | None:
        """The text of ``path`` at ``ref`` (``./x``: relative to ``root``; else to the top
        level), or None when the file does not exist there. Raises GitError for an unknown ref."""
        sha = self.resolve(ref)
        proc = self.run("show", f"{sha}:{path}", check=False)
        return proc.stdout.decode("utf-8", errors="replace") if proc.returncode == 0 else None

    def tree(self, commit: str) -> dict[str, TreeEntry]:
        """Every entry of ``commit``'s tree, recursively, by path (relative to the top level,
        POSIX): blobs, symlinks, submodules and the trees themselves (``git ls-tree -r -t -z
        --full-tree``: one process, no checkout). Raises GitError for an unknown commit."""
        out = self.run("ls-tree", "-r", "-t", "-z", "--full-tree", commit, cwd=self.toplevel()).stdout
        entries: dict[str, TreeEntry] = {}
        for item in out.decode("utf-8", errors="surrogateescape").split("\0"):
            if item:
                meta, path = item.split("\t", 1)
                mode, kind, sha = meta.split()
                entries[path] = TreeEntry(mode, kind, sha)
        return entries

    def checkout_converts(self, entries: dict[str, TreeEntry]) -> bool:
        """True unless a checkout of the tree ``entries`` (:meth:`tree`) is byte for byte its
        blobs. git converts on checkout what attributes ask for (``filter`` smudge commands,
        ``text``/``eol`` line endings, ``ident``, ``working-tree-encoding``) and what config
        asks for (``core.autocrlf``, ``core.eol``; Documentation/gitattributes.txt). So: False
        only when no ``.gitattributes`` is anywhere in the tree, no ``info/attributes`` in the
        repository (``git rev-parse --git-path``), no global or system attributes file
        (``core.attributesFile``, else ``$XDG_CONFIG_HOME/git/attributes`` or
        ``~/.config/git/attributes``; ``/etc/gitattributes``) and no config ``filter.*``,
        ``core.autocrlf``, ``core.eol`` or ``core.attributesFile`` (one ``git config
        --get-regexp``). Conservative: a config such as ``core.autocrlf=false`` counts too."""
        if any(p == ".gitattributes" or p.endswith("/.gitattributes") for p in entries):
            return True
        top = self.toplevel()
        info = self.run("rev-parse", "--git-path", "info/attributes", check=False, cwd=top)
        path = Path(info.stdout.decode("utf-8", errors="surrogateescape").strip())
        if info.returncode != 0 or (top / path).exists():
            return True
        xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        if Path(xdg, "git", "attributes").exists() or (
                not os.environ.get("GIT_ATTR_NOSYSTEM") and Path("/etc/gitattributes").exists()):
            return True
        conf = self.run("config", "--get-regexp", r"^filter\.|^core\.(autocrlf|eol|attributesfile)$",
                        check=False, cwd=top)
        # exit 1: no such key (git-config(1) EXIT STATUS); anything else: assume conversions
        return conf.returncode != 1 or bool(conf.stdout.strip())

    def blobs(self, shas: list[str]) -> dict[str, bytes]:
        """The contents of the blobs ``shas`` (``git cat-file --batch``: one process for all;
        its output per object is ``<sha> <type> <size>\\n<content>\\n``, Documentation/
        git-cat-file.txt "BATCH OUTPUT"). Raises GitError for an object that is missing or not
        a blob."""
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        try:
            proc = subprocess.run(["git", "-C", str(self.toplevel()), "cat-file", "--batch"],
                                  input="".join(f"{s}\n" for s in wanted).encode(),
                                  capture_output=True, env=git_env())
        except FileNotFoundError:
            raise GitError("git is not installed", "install git (https://git-scm.com/downloads)") from None
        data, pos, out = proc.stdout, 0, {}
        for sha in wanted:
            end = data.find(b"\n", pos)
            header = data[pos:end].decode(errors="replace").split() if end >= 0 else []
            if proc.returncode != 0 or len(header) != 3 or header[1] != "blob":
                raise GitError(f"git cat-file: {sha[:12]} is not a blob here",
                               "check that this is a git checkout and the revision exists")
            size = int(header[2])
            out[sha] = data[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return out

    def tracked_files(self, under: Path | None = None) -> list[str]:
        """Every tracked path, sorted: relative to the repository root, or with ``under`` (a
        directory inside the work tree) only those below it, relative to it. Raises GitError
        outside a work tree."""
        if under is None:
            return sorted(p for p in self._text("ls-files", "-z").split("\0") if p)
        out = self.run("ls-files", "-z", "--", ".", cwd=under).stdout.decode("utf-8", errors="surrogateescape")
        return sorted(p for p in out.split("\0") if p)

    def is_ignored(self, path: Path) -> bool:
        return self.run("check-ignore", "-q", str(path), check=False).returncode == 0

    def changed_files(self, ref: str, *, field: str = "") -> tuple[str, ...]:
        """Paths (POSIX, relative to ``root``) that differ between the merge base of ``ref`` and
        HEAD and the working tree — committed, staged or not — plus untracked files not
        ignored (``git diff --merge-base`` semantics). Renames count as a delete and an add
        (both paths). Sorted, unique. Raises GitError for an unknown ref."""
        base = self.merge_base(ref, field=field)
        diff = self._text("diff", "--name-only", "--relative", "--no-renames", "-z", base, "--")
        untracked = self._text("ls-files", "--others", "--exclude-standard", "-z")
        return tuple(sorted({p for p in (diff + untracked).split("\0") if p}))

    def changed_lines(self, base: str, head: str | None, paths: list[str]) -> list[ChangedLine]:
        """Added and removed lines of ``paths`` between ``base`` and ``head`` (None = the
        working tree), from ``git diff --unified=0 --no-renames``."""
        if not paths:
            return []
        revs = [base] if head is None else [base, head]
        out = self.run("diff", "--unified=0", "--no-renames", "--no-color", "--no-ext-diff",
                       *revs, "--", *paths).stdout.decode("utf-8", errors="replace")
        lines: list[ChangedLine] = []
        path, old_no, new_no = "", 0, 0
        for raw in out.splitlines():
            if raw.startswith("+++ "):
                path = raw[6:] if raw.startswith("+++ b/") else path
            elif raw.startswith("--- "):
                path = raw[6:] if raw.startswith("--- a/") else path
            elif raw.startswith("@@"):
                # @@ -old[,n] +new[,m] @@
                old, new = raw.split(" ")[1:3]
                old_no = int(old[1:].split(",")[0])
                new_no = int(new[1:].split(",")[0])
            elif raw.startswith("+"):
                lines.append(ChangedLine(path, "+", new_no, raw[1:]))
                new_no += 1
            elif raw.startswith("-"):
                lines.append(ChangedLine(path, "-", old_no, raw[1:]))
                old_no += 1
        return lines

    # -- worktrees ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def worktree(self, commit: str, *, prefix: str = "clusterstack-") -> Iterator[Path]:
        """``commit`` checked out with ``git worktree add --detach`` in a new temporary
        directory (hooks off: a post-checkout hook must not run in a read-only checkout);
        yields the worktree's path. Removed, with its temporary directory, and pruned on every
        exit path; a crash that skips even that leaves an entry the next ``git worktree prune``
        clears. Raises GitError when git refuses (outside a repository, unknown commit)."""
        top = self.toplevel()
        tmp = Path(tempfile.mkdtemp(prefix=prefix))
        tree = tmp / "tree"
        try:
            add = self.run("-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet",
                           str(tree), commit, check=False, cwd=top)
            if add.returncode != 0:
                raise GitError(f"git worktree add {commit[:12]} failed: "
                               f"{add.stderr.decode(errors='replace').strip()}",
                               "check `git worktree list`; run `git worktree prune`")
            try:
                yield tree
            finally:
                self.run("worktree", "remove", "--force", str(tree), check=False, cwd=top)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            self.run("worktree", "prune", check=False, cwd=top)
