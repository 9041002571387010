"""The Loom session Role and RoleBinding, once ``[conventions] loom_session_role`` names them:
the plan declares Marin's objects (labels app.kubernetes.io/name=marin-loom and
component=session-connect, one rule: create pods/exec and pods/portforward; one User subject per
configured username, in the config's order — marin-community/marin
infra/pulumi/tests/test_coreweave_rbac.py, the version importing loom_session_manifests), and
with ``loom_session_role = ""`` none."""

from __future__ import annotations

import shutil

import pytest

from marin.catalogue import loom_session_objects, plan_key
from marin.counts import CONFIGS, EXAMPLE, STACKS, config

STACK = "cw-us-east-08a"


@pytest.fixture
def example_copy(tmp_path):
    if not CONFIGS.is_dir():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    root = tmp_path / "marin"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
    for s in STACKS:
        shutil.copy(CONFIGS / f"{s}.yaml", root / "lib" / "iris" / "config" / f"{s}.yaml")
    return root


def _roles(root):
    from clusterstack.plan import plan_stack

    plan = plan_stack(root / "infra" / "clusterstack", STACK)
    return {plan_key(r): r for r in plan.resources if r.type.endswith((":Role", ":RoleBinding"))}


def test_named_loom_role_is_marins(example_copy):
    toml = example_copy / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('loom_session_role = ""',
                                                            'loom_session_role = "loom-session-connect"'),
                    encoding="utf-8")
    got = _roles(example_copy)
    want = loom_session_objects(config(STACK), "loom-session-connect")
    assert set(got) == {("Role", "iris", "loom-session-connect"), ("RoleBinding", "iris", "loom-session-connect")}
    for (kind, _, _), r in got.items():
        assert r.inputs == want[kind]


def test_without_a_name_no_loom_role_is_declared(example_copy):
    assert _roles(example_copy) == {}
