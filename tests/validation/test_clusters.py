"""``load_cluster`` (clusterstack.validation.clusters): the specs it derives are kept on the
result, and within ``one_load_per_file`` a file is loaded once and its reads noted again — so
the plan cache (plan/cache.py), which addresses a plan by what it read, sees the same inputs."""

from __future__ import annotations

import pytest

from helpers import REPO, copy_workspace, edit
from clusterstack import reads
from clusterstack.derive.cluster import derive_cluster
from clusterstack.errors import ConfigError
from clusterstack.validation.clusters import load_cluster, one_load_per_file
from clusterstack.workspace import Workspace


def _noted(ws: Workspace, name: str) -> tuple[object, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    with reads.observing(lambda kind, path: seen.append((kind, path))):
        loaded = load_cluster(ws, name)
    return loaded, seen


def test_the_loaded_cluster_carries_what_it_derived():
    ws = Workspace.load(REPO)
    loaded = load_cluster(ws, "cw-demo-teams")
    assert loaded.specs == derive_cluster(loaded.config, ws.conventions)
    assert load_cluster(ws, "gcp-demo").specs is None


def test_within_a_block_a_file_is_loaded_once_and_its_reads_noted_again():
    ws = Workspace.load(REPO)
    with one_load_per_file():
        first, first_reads = _noted(ws, "gcp-demo")         # references: other files read too
        again, again_reads = _noted(Workspace.load(REPO), "gcp-demo")   # as a program loads it
    assert again is first
    assert any(path.endswith("gcp-demo.yaml") for _, path in first_reads)
    assert again_reads == first_reads
    outside, _ = _noted(ws, "gcp-demo")
    assert outside is not first and outside == first     # no block: loaded again, same result


def test_a_load_that_fails_is_not_kept(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    path = root / "clusters" / "cw-demo-h100.yaml"
    good = path.read_text()
    ws = Workspace.load(root)
    with one_load_per_file():
        edit(path, ("name: cw-demo-h100", "name: wrong-name"))
        with pytest.raises(ConfigError):
            load_cluster(ws, "cw-demo-h100")
        path.write_text(good)
        assert load_cluster(ws, "cw-demo-h100").config.name == "cw-demo-h100"
