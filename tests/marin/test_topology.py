"""Marin catalogue: Topology. Both Kueue Topologies with Marin's levels, incl. ``backend.coreweave.cloud/superpod``
(kueue_manifests.py@a1e72a14 TOPOLOGIES; coreweave_topology.py@2b2c4286). Immutable: a wrong level
is an update the API server refuses."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_topologies_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Topology")
