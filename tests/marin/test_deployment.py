"""Marin catalogue: Deployment. The kueue-controller-manager pinned to ``iris-system`` by a DeploymentPatch
(infra/pulumi/src/iac/coreweave/kueue.py@28d310ae ``kueue-manager-priority``)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_kueue_manager_priority_patch_is_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Deployment")
