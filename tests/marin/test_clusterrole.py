"""Marin catalogue: ClusterRole. ClusterRoles: Iris's ``iris-controller-<namespace>`` with the scheduler's own 8 rules
(rbac_manifests.py@33283163 CLUSTER_ROLE_RULES: NodePool writes, pods/exec/log in every
namespace, nodes, nodes/proxy, configmaps, PDBs, Workload delete, PriorityClass create) — the
scheduler re-applies it at every start — and Grafana's ``marin-grafana-node-reader``: nodes and
NodePools read, Marin's labels (infra/pulumi/src/iac/coreweave/rbac.py@17c9466c
grafana_observer_manifests; infra/pulumi/tests/test_coreweave_rbac.py@5206448e)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_clusterroles_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ClusterRole")
