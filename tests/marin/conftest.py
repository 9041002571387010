"""Fixtures of the Marin catalogue tests: the plans of ``examples/marin`` with Marin's published
configs (``../shared/reference/marin/lib/iris/config``, see its SOURCE.md; never copied into
the repository), planned once per session, and the configs themselves."""

from __future__ import annotations

import pytest

from marin.counts import CONFIGS, STACKS, config, plan_example

@pytest.fixture(scope="session")
def marin_plans():
    """Stack → clusterstack.plan.StackPlan of examples/marin, every stack."""
    if not CONFIGS.is_dir():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    return plan_example()


@pytest.fixture(scope="session")
def marin_configs():
    """Stack → Marin's config (a dict, as Marin's own loader reads the YAML)."""
    if not CONFIGS.is_dir():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    return {s: config(s) for s in STACKS}
