"""Marin catalogue: ClusterQueue. The ClusterQueue: one cw-tas flavor, non-binding cpu/memory/ephemeral-storage, GPU and RDMA
quota = the fleet's GPUs, ``namespaceSelector: {}`` (kueue.py@28d310ae accelerator_nominal_quotas;
the cw-tas version of kueue_manifests.py NON_BINDING_QUOTA, build_cluster_queue)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_clusterqueues_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ClusterQueue")
