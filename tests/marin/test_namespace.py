"""Marin catalogue: Namespace. The controller's Namespace: name = kubernetes_provider.namespace and the ``kubernetes``
finalizer declared (marin lib/iris/.../k8s/rbac_manifests.py@33283163 namespace_manifest, declared
by infra/pulumi/src/iac/coreweave/rbac.py@d0b0c1a1 IrisRbac)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_namespaces_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "Namespace")
