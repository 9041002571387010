"""Marin catalogue: Middleware. The federation ipAllowList Middleware (network_manifests.py@6019f395 ipallowlist_middleware,
normalize_source; sources config.py@9d17f338 MARIN_FEDERATION_EGRESS_SOURCES)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_middlewares_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Middleware")
