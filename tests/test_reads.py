"""The one record of what a run read (clusterstack.reads): free when nobody observes, every
observer of a block sees every note, and the readers that feed the plan cache note what they
read — THE byte reader (a missing file too), the workspace listings, a source digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterstack import reads
from clusterstack.components.services.command import source_digest
from clusterstack.config.document import read_bytes
from clusterstack.errors import ConfigError
from clusterstack.workspace import Workspace
from clusterstack.workspace.projects import stack_names
from helpers import copy_workspace


def test_observers_see_the_notes_of_their_block_only():
    seen: list[tuple[str, str]] = []
    reads.note(reads.FILE, "/before")
    with reads.observing(lambda kind, path: seen.append((kind, path))):
        reads.note(reads.FILE, Path("/a"))
        reads.note(reads.DIR, "/d")
    reads.note(reads.FILE, "/after")
    assert seen == [("file", "/a"), ("dir", "/d")]


def test_the_byte_reader_and_the_listings_note_what_they_read(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    seen: list[tuple[str, str]] = []
    with reads.observing(lambda kind, path: seen.append((kind, path))):
        read_bytes(root / "clusterstack.toml")
        with pytest.raises(ConfigError):
            read_bytes(root / "missing.yaml")  # asked for: an input even when absent
        Workspace.load(root).cluster_names()
        stack_names(root / "infra")
    assert ("file", str(root / "clusterstack.toml")) in seen
    assert ("file", str(root / "missing.yaml")) in seen
    assert ("dir", str(root / "clusters")) in seen and ("dir", str(root / "infra")) in seen


def test_a_source_digest_notes_each_file_and_the_directories_down_to_it(tmp_path):
    (tmp_path / "pkg").mkdir()
    files = [tmp_path / "main.py", tmp_path / "pkg" / "util.py"]
    for f in files:
        f.write_text("x = 1\n")
    seen: list[tuple[str, str]] = []
    with reads.observing(lambda kind, path: seen.append((kind, path))):
        source_digest(files, tmp_path)
    base = tmp_path.resolve()
    assert sorted(seen) == sorted([("file", str(files[0])), ("file", str(files[1])),
                                   ("dir", str(base)), ("dir", str(base / "pkg"))])
