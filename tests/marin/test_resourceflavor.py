"""Marin catalogue: ResourceFlavor. One topology-aware ResourceFlavor ``cw-tas`` over every Iris node (the cw-tas version of
kueue_manifests.py; infra/pulumi/src/iac/coreweave/kueue.py@28d310ae declares only
RESOURCE_FLAVOR_NAME), and no other flavor."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_resourceflavors_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ResourceFlavor")
