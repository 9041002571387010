"""What a run read: the one record of the files the tool opens and the directories it lists.

Two kinds of reads decide what a plan is, and each happens in one place:

- ``file`` — :func:`clusterstack.config.document.read_bytes`, THE byte reader (every reviewed
  file, stack file, ``Pulumi.yaml`` and ``clusterstack.toml``), and the project entry point
  the offline plan runs (:mod:`clusterstack.plan.runtime`);
- ``dir`` — the workspace listings: the stack files of a project (``Pulumi.*.yaml``:
  :mod:`clusterstack.workspace.projects`, :mod:`clusterstack.workspace.stacks`, the plan
  driver), the cluster files (``clusters/*.yaml``).

Each calls :func:`note`; :func:`observing` hands them to an observer for the length of a
block. The plan cache (:mod:`clusterstack.plan.cache`) addresses a stack's plan by what was
noted while it was planned. A path is noted when it is *asked for*, before it is opened: a
file that does not exist is an input too (it may appear).

This module is part of the stable surface of ``diff --base`` (:data:`clusterstack.plan.refproto.SURFACE`):
the driver of a newer package observes an older REF's package through it, so :func:`note` and
:func:`observing` keep their signatures. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator

#: The kinds of read.
FILE, DIR = "file", "dir"

Observer = Callable[[str, str], None]  # (kind, path as asked for) -> None

_observers: list[Observer] = []


def note(kind: str, path: str | os.PathLike[str]) -> None:
    """Record that ``path`` (as the caller names it, relative or absolute) was read
    (``kind``: :data:`FILE`) or listed (:data:`DIR`). Free when nobody observes."""
    if _observers:
        text = os.fsdecode(os.fspath(path))
        for observer in tuple(_observers):
            observer(kind, text)


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """Call ``observer(kind, path)`` for every :func:`note` while the block runs."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)
