"""Steps 1 and 2 of the loader: bytes → text. :func:`read_bytes` is THE byte reader of every
file the tool reads; :func:`decode` the text hygiene every file gets."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from clusterstack import reads
from clusterstack.config.document.limits import _CONTROL, MAX_BYTES, _line_col
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.fsutil import file_kind


def read_bytes(path: Path, *, missing: str = "file not found", missing_hint: str = "check the path",
               error: type[ClusterstackError] = ConfigError, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path`` (at most ``limit``): THE byte reader of every file the tool reads.

    Only a regular file (or a link to one) is read. A named pipe, a device (``/dev/zero``, a
    terminal), a socket or a directory is refused at once, before a byte is read: a pipe would
    block until a writer comes (``guard`` on a FIFO hung), ``/dev/zero`` never ends. The file
    is opened non-blocking (opening a FIFO without a writer would itself block, ``open(2)``)
    and checked with ``fstat`` on the descriptor read from, so a swap between check and read
    cannot slip a pipe in.

    Raises ``error`` (exit 2) when it is missing, not a regular file, unreadable or larger
    than ``limit``. Every read is noted (:func:`clusterstack.reads.note`, before the open: a
    missing file is an input too)."""
    path = Path(path)
    reads.note(reads.FILE, path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        raise error(missing, missing_hint, file=path) from None
    except IsADirectoryError:
        raise error("is a directory, not a file", missing_hint, file=path) from None
    except OSError as exc:
        raise error(f"cannot read the file: {exc.strerror or exc}", missing_hint, file=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise error("is a directory, not a file", missing_hint, file=path)
        if not stat.S_ISREG(mode):
            raise error(f"is {file_kind(mode)}, not a regular file: clusterstack reads only files "
                        "(a pipe or a device could block or never end)",
                        "save the input to a file and give its path", file=path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read the file: {exc.strerror or exc}", missing_hint, file=path) from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise error(f"file is larger than {limit // 2**20} MiB", "this is not a config file; "
                    "check the path", file=path)
    return raw



def decode(raw: bytes, path: Path, *, error: type[ClusterstackError] = ConfigError,
           limit: int = MAX_BYTES) -> str:
    """``raw`` as UTF-8 text, the hygiene every file the tool reads gets: at most ``limit``
    bytes, strict UTF-8 (a leading byte-order mark dropped), no control character but tab, LF
    and CR. Raises ``error`` at the line (and column) of the first offending byte."""
    if len(raw) > limit:
        raise error(f"file is larger than {limit // 2**20} MiB", "this is not a config file; "
                    "check the path", file=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_col(raw, exc.start)
        raise error(f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column}",
                    "save the file as UTF-8", file=path, line=line) from None
    text = text.removeprefix("\ufeff")
    if m := _CONTROL.search(text):
        line, column = _line_col(text, m.start())
        raise error(f"control character U+{ord(m.group()):04X} at column {column}",
                    "remove it (only tab, newline and carriage return are allowed)",
                    file=path, line=line)
    return text


def read_text(path: Path, **kwargs: Any) -> str:
    """:func:`read_bytes` then :func:`decode` (``error``, ``limit`` and the missing-file
    wording as :func:`read_bytes`)."""
    error, limit = kwargs.get("error", ConfigError), kwargs.get("limit", MAX_BYTES)
    return decode(read_bytes(path, **kwargs), path, error=error, limit=limit)
