"""Marin catalogue: Release. Helm releases. cks-kueue (infra/pulumi/src/iac/coreweave/kueue.py@28d310ae: chart 1.5.0 from
CoreWeave's repo, values of build_cks_values — six feature gates incl. TASBalancedPlacement=false
(kueue_manifests.py@a1e72a14 CKS_KUEUE_FEATURE_GATES), the memory override where configured, the
Configuration as YAML with metrics :8080 and internalCertManagement); traefik and cert-manager
(traefik.py@9865fe73: charts ``coreweave/<name>`` by repo alias, no repositoryOpts, no values)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_releases_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Release")
