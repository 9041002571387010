"""Marin catalogue: PriorityClass. PriorityClass ``iris-system``: value 10000, PreemptLowerPriority, description
"Iris system priority band" (lib/iris/.../k8s/types.py@0bb47aa8 IRIS_PRIORITY_CLASSES,
build_priority_class_manifest). ``value`` is immutable: a difference is refused."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_priorityclasses_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "PriorityClass")
