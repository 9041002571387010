"""Marin catalogue: NodePool. NodePools: name, labels, counts, and ``ignoreChanges: [spec.targetNodes]`` on node-based pools
(nodepool_manifests.py@f7d97558, infra/pulumi/src/iac/nodepools.py@47384f1a,
coreweave/cluster.py@031c515d). Already exact; branch ``cw`` reshapes nodepools.py and must keep
this passing."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_nodepools_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "NodePool", options=True)
