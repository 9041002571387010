"""``import generate --live``: in a Marin-convention workspace the import file lists exactly
the objects that exist on the live cluster under the declared names; what the plan adds
(clusterstack's namespaced controller Role) is left for `up` to create, never imported.

The live cluster is :class:`fakes.kubernetes_api.FakeKubernetes` holding the objects Marin's
program declares (tests/programs/test_marin_example.py ``marin_objects``, each citing Marin's
source) plus the LocalQueue the scheduler reconciles itself (declared by nobody, imported by nothing) (Marin's
lib/iris/config/cw-us-west-04a.yaml: "Iris reconciles the namespaced LocalQueue ... at
controller start").
"""

from __future__ import annotations

import shutil

import pytest
import yaml
from kubernetes import client

from fakes.kubernetes_api import FakeKubernetes, helm_secret, kube_object, kube_path
from programs.test_marin_example import CONFIGS, EXAMPLE, STACKS, kind_ns_name, marin_objects
from clusterstack.imports.generate import existing, generate
from clusterstack.plan import plan_stack
from clusterstack.adapters.kubernetes import KubernetesApi, plural

STACK = "cw-us-west-04a"

pytestmark = pytest.mark.skipif(
    CONFIGS is None or not CONFIGS.is_dir(),
    reason="Marin's published configs are not in ../shared/reference/marin/lib/iris/config")


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    root = tmp_path_factory.mktemp("marin-live") / "marin"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
    for name in STACKS:
        shutil.copy(CONFIGS / f"{name}.yaml", root / "lib/iris/config" / f"{name}.yaml")
    return plan_stack(root / "infra" / "clusterstack", STACK)


def live_world(plan, live: set[tuple[str, str, str]]) -> dict[str, dict]:
    """The fake's objects: every planned object whose (kind, namespace, name) is in ``live``."""
    world: dict[str, dict] = {}
    for r in plan.resources:
        key = kind_ns_name(r)
        if key is None or key not in live:
            continue
        kind, ns, name = key
        if kind == "Release":
            s = helm_secret(ns, name, 3, "deployed")
            world[kube_path("v1", "secrets", s["metadata"]["name"], ns)] = s
            continue
        api_version = r.inputs.get("apiVersion") or r.type.split(":")[1].removeprefix("core/")
        # The live body: what Marin's program applied (the same shape the plan declares).
        body = {k: v for k, v in r.inputs.items() if k not in ("apiVersion", "kind", "metadata")}
        world[kube_path(api_version, plural(kind), name, ns or None)] = kube_object(
            api_version, kind, name, ns or None, **body)
    return world


def api(url: str) -> KubernetesApi:
    cfg = client.Configuration(host=url)
    cfg.retries = 0
    return KubernetesApi(client.ApiClient(cfg), timeout=(2.0, 5.0))


def test_live_import_lists_exactly_the_objects_that_exist(plan):
    cfg = yaml.safe_load((CONFIGS / f"{STACK}.yaml").read_text(encoding="utf-8"))
    ns, prefix = cfg["kubernetes_provider"]["namespace"], cfg["platform"]["label_prefix"]
    # Everything Marin's program declares, less its PriorityClass (as if never installed), plus
    # the scheduler's own LocalQueue <label_prefix>-lq, which neither Marin's program nor the
    # example declares ([conventions] local_queue = false) and nothing imports. With
    # controller_rbac = "iris" the plan declares no namespaced controller Role/RoleBinding
    # (Marin declares none: rbac_manifests.py@33283163).
    missing = ("PriorityClass", "", "iris-system")
    scheduler_queue = ("LocalQueue", ns, f"{prefix}-lq")
    live = (marin_objects(cfg) | {scheduler_queue}) - {missing}
    with FakeKubernetes() as srv:
        srv.objects.update(live_world(plan, live))
        g = generate(plan, exists=existing(plan, api(srv.url)))
        assert {m for m, _ in srv.requests} == {"GET"}          # read only
    by_urn = plan.by_urn()
    imported = {kind_ns_name(by_urn[g.urns[e.name]]) for e in g.imports}
    k8s_imported = {k for k in imported if k is not None}
    # the manager's priority DeploymentPatch is never imported (Pulumi cannot: tokens.is_patch);
    # `up` applies its one field, which the adoption report compares with the live Deployment
    manager = ("Deployment", "kueue-system", "kueue-controller-manager")
    assert k8s_imported == live - {scheduler_queue, manager}
    assert [kind_ns_name(by_urn[u]) for u in g.patches] == [manager]
    absent = sorted(kind_ns_name(by_urn[u]) for u in g.absent)
    assert absent == [missing]
    # The Cloudflare record is not a Kubernetes object: kept (its ID is a placeholder).
    assert [p.type for p in g.placeholders] == ["cloudflare:index/dnsRecord:DnsRecord"]


def test_without_live_every_leaf_is_listed(plan):
    g = generate(plan)
    assert g.absent == ()
    leaves = [r for r in plan.resources if r.custom and not r.is_provider]
    assert len(g.imports) == len(leaves) - len(g.patches)
    assert g.patches == tuple(r.urn for r in leaves if r.type == "kubernetes:apps/v1:DeploymentPatch")
