"""Marin catalogue: LocalQueue. No LocalQueue: Marin's program declares none; the scheduler reconciles its own
``<label_prefix>-lq`` at controller start (Marin's configs, kubernetes_provider.kueue comment;
lib/iris/.../k8s/types.py@0bb47aa8 LOCAL_QUEUES)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_localqueues_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "LocalQueue")
