"""Atomic writes: replace by default, create-only with ``exclusive`` (nothing clobbered)."""

from __future__ import annotations

import os

import pytest

from clusterstack.errors import ConfigError
from clusterstack.fsutil import write_atomic
from clusterstack.scaffold import Plan


def test_exclusive_write_never_replaces_a_file(tmp_path):
    target = tmp_path / "gcp-new.yaml"
    write_atomic(target, "first\n", exclusive=True)
    assert target.read_text() == "first\n" and oct(target.stat().st_mode & 0o777) == oct(0o644)
    with pytest.raises(FileExistsError):
        write_atomic(target, "second\n", exclusive=True)
    assert target.read_text() == "first\n"
    assert os.listdir(tmp_path) == ["gcp-new.yaml"]   # no temp file left behind
    write_atomic(target, "third\n")                     # the default replaces
    assert target.read_text() == "third\n"


class _RacedPlan(Plan):
    """A scaffold plan whose file appears after the existence check (another process in the
    window between ``check_new`` and the write)."""

    def check_new(self) -> None:
        super().check_new()
        for p in self.files:
            if p.name == "b.yaml":
                p.write_text("someone else's\n")


def test_a_file_created_while_scaffolding_is_kept(tmp_path):
    a, b = tmp_path / "clusters" / "a.yaml", tmp_path / "clusters" / "b.yaml"
    b.parent.mkdir()
    plan = _RacedPlan(tmp_path, files={a: "a\n", b: "b\n"})
    with pytest.raises(ConfigError) as ei:
        plan.write()
    assert b.read_text() == "someone else's\n"
    assert "created while scaffolding" in str(ei.value) and "written so far: clusters/a.yaml" in str(ei.value)
