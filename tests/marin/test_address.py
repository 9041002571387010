"""Marin catalogue: Address. The federation-egress static addresses (infra/pulumi/src/iac/gcp/addresses.py@031c515d)."""

from __future__ import annotations

import pytest

from marin.check import assert_exact


@pytest.mark.parametrize("stack", ("marin",))
def test_addresses_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Address")
