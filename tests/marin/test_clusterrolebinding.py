"""Marin catalogue: ClusterRoleBinding. ClusterRoleBindings: Iris's binds its ServiceAccount (rbac_manifests.py@33283163
cluster_role_binding_manifest); Grafana's binds each configured username as a User, in the
config's order, with Marin's labels (rbac.py@17c9466c)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_clusterrolebindings_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ClusterRoleBinding")
