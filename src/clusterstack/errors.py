"""One exception family for every failure a user can fix.

``ClusterstackError`` carries a user message and a hint; the CLI renders it as
``error: <file>:<line>: <field>: <message> — <hint>`` and exits with ``exit_code``
(2 for user errors, see ../shared/GUIDE.md "Conventions"). Tracebacks are shown only
with ``--debug``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: The exit codes of every command (what each means, and which command returns which, is the
#: table of :mod:`clusterstack.cli.help`, shown by ``--help`` and README).
EXIT_OK = 0
EXIT_FAILED = 1     # an operation that ran failed, or a bug of clusterstack
EXIT_REFUSED = 2    # bad input, a refusal, an unusable environment: nothing changed
EXIT_BLOCKED = 3    # blocked by the guard (clusterstack.guard.GUARD_EXIT_CODE)
EXIT_DIFFERS = 4    # checked, and the live system differs from the declaration


@dataclass
class Problem:
    """One located problem: ``file:line: field: message — hint``.

    ``field`` is a dotted path such as ``provisioning.coreweave.kueue.manager_memory_limit``;
    ``line`` is 1-based, or ``None`` when the problem has no position in a file.
    """

    message: str
    hint: str = ""
    file: Path | None = None
    line: int | None = None
    field: str = ""

    def render(self, relative_to: Path | None = None) -> str:
        """Return the one-line rendering used by the CLI (no ``error:`` prefix). With
        ``relative_to`` (the workspace root), a file inside it is shown relative to it, as the
        docs show paths (``clusters/cw-demo-h100.yaml:12``); a file outside stays absolute."""
        parts = []
        if self.file is not None:
            shown = display_path(self.file, relative_to)
            parts.append(f"{shown}:{self.line}" if self.line else shown)
        if self.field:
            parts.append(self.field)
        # the head names things read from files: one line (a hint may show a shape on the lines
        # below, written by us)
        head = one_line(": ".join(parts + [self.message]))
        return f"{head} — {self.hint}" if self.hint else head


#: Characters that would break an ``error:`` line or drive the terminal, by the escape Python's
#: ``repr`` gives them (the rule of every ``{name!r}`` in a message): C0 controls including tab,
#: LF and CR, DEL, C1 controls, and Unicode's line and paragraph separators (U+2028/U+2029).
_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """``text`` with every control character escaped as ``repr`` escapes it (``\\n``,
    ``\\x1b``, ``\\u2028``): a name taken from a file — a TOML key may hold any character
    through an escape — cannot split a problem over two lines or colour the terminal."""
    return text.translate(_ESCAPES)


def display_path(path: Path | str, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies inside it (``root`` None, or a path outside
    it — a file in ``/tmp``, a ``REF:clusterstack.toml`` — : as given)."""
    if root is None:
        return str(path)
    p = Path(path)
    try:
        full = p if p.is_absolute() else (Path.cwd() / p)
        # the directory resolved, the name kept: a symlinked file is shown by its own name,
        # not its target's
        return str((full.parent.resolve() / full.name).relative_to(Path(root).resolve()))
    except (ValueError, OSError):
        return str(path)


class ClusterstackError(Exception):
    """Base of every error a user can act on. Exit code 2 unless a subclass says otherwise.

    Holds one or more :class:`Problem` rows so a loader can report every bad field at once.
    """

    exit_code = EXIT_REFUSED

    def __init__(self, message: str = "", hint: str = "", *, file: Path | None = None,
                 line: int | None = None, field: str = "",
                 problems: list[Problem] | None = None) -> None:
        self.problems: list[Problem] = problems if problems else [
            Problem(message=message, hint=hint, file=file, line=line, field=field)]
        super().__init__(self.render())

    def render(self, relative_to: Path | None = None) -> str:
        """All problems, one per line (:meth:`Problem.render`)."""
        return "\n".join(p.render(relative_to) for p in self.problems)


class ConfigError(ClusterstackError):
    """A reviewed config (cluster YAML, ``clusterstack.toml``, stack file) is invalid."""


@dataclass
class FieldError(Exception):
    """A problem found by a pure function (a derivation) that knows only the field path.

    The loader, which knows the file and the YAML positions, turns it into a located
    :class:`ConfigError`. ``path`` is the key path inside the cluster document.
    """

    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{'.'.join(map(str, self.path))}: {self.message}"


#: What to do about a file-system or device failure, by ``errno`` name: the outside world's
#: failures are the operator's to fix (exit 2), never an internal error.
_OS_HINTS = {
    "ENOSPC": "the disk is full: free some space and run the command again (no file was left "
              "half-written)",
    "EDQUOT": "the disk quota is used up: free some space and run the command again",
    "EROFS": "the file system is read-only: run the command in a writable checkout",
    "EACCES": "permission denied: check the owner and mode of the file and its directory",
    "EPERM": "not permitted: check the owner and mode of the file and its directory",
    "ENOENT": "a directory on the path does not exist: check the path",
    "ENOTDIR": "a part of the path is not a directory: check the path",
    "EISDIR": "it is a directory: give the path of a file",
    "ELOOP": "a symbolic link where a file was expected (or a loop of links): replace it with "
             "the file",
    "ENXIO": "no process is reading the named pipe: start the reader first, or write to a file",
    "EIO": "an input/output error: check the disk or the device",
    "EMFILE": "too many open files: raise the limit (`ulimit -n`) and run again",
    "ENAMETOOLONG": "the path is too long: use a shorter one",
    "EXDEV": "the path crosses file systems: use a path on the same file system",
    "ETXTBSY": "the file is busy (being executed): try again",
}


def os_error(exc: OSError, *, doing: str | None = None) -> ClusterstackError:
    """A file-system or device failure (``ENOSPC``, ``EROFS``, ``EACCES``, a full
    ``/dev/full``, …) as a :class:`ClusterstackError` (exit 2) naming the file and what to do
    (:data:`_OS_HINTS`, by errno) — never an internal error, never a traceback. ``doing``:
    what was being done (default: the system's own words)."""
    import errno as errno_module

    name = errno_module.errorcode.get(exc.errno or 0, "")
    what = exc.strerror or str(exc) or type(exc).__name__
    message = f"{doing}: {what}" if doing else what
    hint = _OS_HINTS.get(name, "check the path and the file system, then run the command again")
    file = Path(exc.filename) if isinstance(exc.filename, (str, Path)) else None
    return ClusterstackError(message, hint, file=file)
