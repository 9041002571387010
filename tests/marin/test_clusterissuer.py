"""Marin catalogue: ClusterIssuer. Let's Encrypt HTTP-01 ClusterIssuers, one per ``ingress.cluster_issuers`` (network_manifests.py
@6019f395 http01_issuer, declared by infra/pulumi/src/iac/coreweave/traefik.py@9865fe73)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_clusterissuers_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "ClusterIssuer")
