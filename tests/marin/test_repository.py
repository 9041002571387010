"""Marin catalogue: Repository. Artifact Registry pull-through mirrors (infra/pulumi/src/iac/gcp/registries.py@7caf86cc): no
``description`` when empty, no ``remoteRepositoryConfig.description`` (ForceNew), Marin's
default cleanup pair (config.py@9d17f338 DEFAULT_MIRROR_CLEANUP_POLICIES)."""

from __future__ import annotations

import pytest

from marin.check import assert_exact


@pytest.mark.parametrize("stack", ("marin",))
def test_repositories_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Repository")
