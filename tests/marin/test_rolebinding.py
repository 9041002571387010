"""Marin catalogue: RoleBindings. Marin's IrisRbac declares no namespaced controller RoleBinding
(infra/pulumi/src/iac/coreweave/rbac.py@d0b0c1a1: Namespace, ServiceAccount, ClusterRole,
ClusterRoleBinding; the scheduler's grants are all in its ClusterRole, rbac_manifests.py@33283163),
so with ``controller_rbac = "iris"`` the plan declares none. Where a cluster configures
``loom_session_rbac`` Marin declares the Loom session RoleBinding (infra/pulumi/tests/
test_coreweave_rbac.py, the version importing loom_session_manifests): its labels and rule are
known, its name (LOOM_SESSION_ROLE) is in no stored version of coreweave/rbac.py, so
examples/marin declares none (``loom_session_role = ""``) until the lab sets it."""

from __future__ import annotations

import pytest

from marin.check import assert_exact

LOOM = "cw-us-east-08a"   # the one published config with loom_session_rbac


@pytest.mark.parametrize("stack", ["cw-rno2a", "cw-us-east-02a", "cw-us-west-04a"])
def test_no_rolebinding_marin_does_not_run(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "RoleBinding")


@pytest.mark.xfail(strict=True, reason="Loom Role name: LOOM_SESSION_ROLE is in no stored Marin version; "
                                      "set [conventions] loom_session_role from the live cluster")
def test_loom_session_rolebinding_is_marins(marin_plans, marin_configs):
    assert_exact(marin_plans[LOOM], LOOM, marin_configs[LOOM], "RoleBinding")
