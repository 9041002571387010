"""``derive_cluster`` (clusterstack.derive.cluster): every spec of a stack derived together is
what each derivation gives on its own — the program declares these, ``validate`` checks them."""

from __future__ import annotations

import pytest

from helpers import REPO
from clusterstack.config.cluster_file import load_cluster_file
from clusterstack.derive import chart_placement, derive_kueue_quota, derive_nodepools, system_pool, workload_namespace
from clusterstack.derive.cluster import derive_cluster
from clusterstack.derive.kueue import derive_cluster_queues, derive_topologies
from clusterstack.derive.teams import derive_teams
from clusterstack.workspace import Workspace

WS = Workspace.load(REPO)


def _config(name: str):
    return load_cluster_file(WS.cluster_file(name), name,
                             defaults=WS.defaults.model_dump(exclude_none=True), defaults_source=WS.source).config


@pytest.mark.parametrize("name", WS.cluster_names())
def test_the_specs_derived_together_are_each_derivation_on_its_own(name):
    cfg, conv = _config(name), WS.conventions
    specs = derive_cluster(cfg, conv)
    if cfg.provisioning.provider != "coreweave":
        assert specs is None   # a GCP stack declares no NodePool
        return
    assert specs is not None
    assert specs.namespace == workload_namespace(cfg, conv)
    assert specs.nodepools == derive_nodepools(cfg, conv)
    assert specs.quota == derive_kueue_quota(cfg, conv)
    assert specs.cluster_queues == derive_cluster_queues(cfg, conv)
    assert specs.topologies == derive_topologies(cfg, conv)
    assert specs.teams == derive_teams(cfg, conv)
    assert specs.system == system_pool(cfg, conv)
    assert specs.placement == chart_placement(cfg, conv)
    teams = derive_teams(cfg, conv)
    assert specs.cluster_queue == (teams.cluster_queue if teams else derive_cluster_queues(cfg, conv)[0])


def test_the_shipped_workspace_has_a_stack_with_teams_and_one_without():
    """The comparison above covers both queue layouts (the teams' remainder queue, the one queue)."""
    coreweave = [derive_cluster(_config(n), WS.conventions) for n in WS.cluster_names()]
    assert {s.teams is not None for s in coreweave if s is not None} == {True, False}
