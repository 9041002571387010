"""Marin catalogue: Ingress. The federation Ingress (network_manifests.py@6019f395 federation_ingress,
default_federation_host, DEFAULT_TLS_SECRET)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_ingresses_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Ingress")
