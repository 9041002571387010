"""Marin catalogue: ServiceAccount. The controller's ServiceAccount ``provisioning.coreweave.rbac.service_account`` in the
namespace, nothing else (rbac_manifests.py@33283163 service_account_manifest)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_serviceaccounts_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ServiceAccount")
