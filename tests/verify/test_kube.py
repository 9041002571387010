"""``clusterstack verify`` on a CoreWeave stack: the official ``kubernetes`` client against a
local server that serves Kubernetes API objects of the real shape.

The "live cluster" below is written out by hand from the example config
(clusters/cw-demo-h100.yaml): it is the test's oracle, not derived from the code under test.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from kubernetes import client

from clusterstack.cli import main
from clusterstack.adapters.kubernetes import KubernetesApi, plural
from clusterstack.adapters.lookups import CheckError
from clusterstack.verify import (EXIT_MISSING, EXIT_OK, EXIT_UNVERIFIED, check_expectations,
                                 verify_prerequisites)
from clusterstack.verify.expect import expectations
from clusterstack.workspace import Workspace
from clusterstack.pulumi.tokens import NODEPOOL
from fakes.kubernetes_api import FakeKubernetes, helm_secret, kube_forbidden, kube_object, kube_path

CLUSTER = "cw-demo-h100"
LE_PROD = "https://acme-v02.api.letsencrypt.org/directory"
LE_STAGING = "https://acme-staging-v02.api.letsencrypt.org/directory"


def h100_world() -> dict[str, dict]:
    """Every object the cw-demo-h100 stack declares, as the API server would return it."""
    w: dict[str, dict] = {}

    def put(api_version: str, kind: str, name: str, namespace: str | None = None, **body) -> None:
        w[kube_path(api_version, plural(kind), name, namespace)] = kube_object(
            api_version, kind, name, namespace, **body)

    put("v1", "Namespace", "training", spec={"finalizers": ["kubernetes"]}, status={"phase": "Active"})
    put("v1", "ServiceAccount", "controller", "training")
    for role in ("cwdemo-controller", "cwdemo-node-observer"):
        put("rbac.authorization.k8s.io/v1", "ClusterRole", role,
            rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}])
        put("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", role,
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            subjects=[{"kind": "ServiceAccount", "name": "controller", "namespace": "training"}])
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    for pool, itype, n, taints in (("cwdemo-cpu-general", "cd-gp-i64-erapids", 2, []),
                                   ("cwdemo-h100", "gd-8xh100ib-i128", 32, [gpu_taint])):
        put("compute.coreweave.com/v1alpha1", "NodePool", pool,
            spec={"computeClass": "default", "instanceType": itype, "autoscaling": True,
                  "minNodes": n, "maxNodes": n, "targetNodes": n,
                  **({"nodeTaints": taints} if taints else {})},
            status={"currentNodes": n, "conditions": [{"type": "Validated", "status": "True"}]})
    put("rbac.authorization.k8s.io/v1", "Role", "cwdemo-controller", "training",
        rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}])
    put("rbac.authorization.k8s.io/v1", "RoleBinding", "cwdemo-controller", "training",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cwdemo-controller"},
        subjects=[{"kind": "ServiceAccount", "name": "controller", "namespace": "training"}])
    put("kueue.x-k8s.io/v1beta1", "Topology", "infiniband", spec={"levels": [
        {"nodeLabel": "backend.coreweave.cloud/fabric"}, {"nodeLabel": "backend.coreweave.cloud/leafgroup"},
        {"nodeLabel": "kubernetes.io/hostname"}]})
    put("kueue.x-k8s.io/v1beta1", "Topology", "hostname", spec={"levels": [{"nodeLabel": "kubernetes.io/hostname"}]})
    put("kueue.x-k8s.io/v1beta1", "ResourceFlavor", "cwdemo-cpu-general-flavor",
        spec={"nodeLabels": {"cwdemo/scale-group": "cpu-general"}, "topologyName": "hostname"})
    put("kueue.x-k8s.io/v1beta1", "ResourceFlavor", "cwdemo-h100-flavor",
        spec={"nodeLabels": {"cwdemo/scale-group": "h100"}, "nodeTaints": [gpu_taint],
              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
              "topologyName": "infiniband"})
    put("kueue.x-k8s.io/v1beta1", "ClusterQueue", "training-cq", spec={
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "training"}},
        "queueingStrategy": "BestEffortFIFO", "flavorFungibility": {
            "whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
        "resourceGroups": [{"coveredResources": ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu",
                                                 "rdma/ib"], "flavors": [
            {"name": "cwdemo-cpu-general-flavor", "resources": [{"name": "cpu", "nominalQuota": "256"}]},
            {"name": "cwdemo-h100-flavor", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "256"},
                                                         {"name": "rdma/ib", "nominalQuota": "256"}]}]}]})
    put("kueue.x-k8s.io/v1beta1", "LocalQueue", "training-cq", "training", spec={"clusterQueue": "training-cq"})
    put("scheduling.k8s.io/v1", "PriorityClass", "cwdemo-system", value=1000000, globalDefault=False,
        preemptionPolicy="PreemptLowerPriority")
    put("cert-manager.io/v1", "ClusterIssuer", "letsencrypt-http01-prod",
        spec={"acme": {"server": LE_PROD, "email": "ops@example.org"}})
    put("cert-manager.io/v1", "ClusterIssuer", "letsencrypt-http01-staging",
        spec={"acme": {"server": LE_STAGING, "email": "ops@example.org"}})
    put("traefik.io/v1alpha1", "Middleware", "federation-allowlist", "training",
        spec={"ipAllowList": {"sourceRange": ["203.0.113.10/32", "198.51.100.0/24"]}})
    put("networking.k8s.io/v1", "Ingress", "cwdemo-federation", "training",
        metadata={"annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-http01-prod"}},
        spec={"ingressClassName": "traefik", "rules": [{"host": "ctl-cw-demo-h100.example.org"}]},
        status={"loadBalancer": {}})
    for ns, rel in (("kueue-system", "kueue"), ("cert-manager", "cert-manager"), ("traefik", "traefik")):
        s1 = helm_secret(ns, rel, 1, "superseded")
        s2 = helm_secret(ns, rel, 2, "deployed")
        w[kube_path("v1", "secrets", s1["metadata"]["name"], ns)] = s1
        w[kube_path("v1", "secrets", s2["metadata"]["name"], ns)] = s2
    return w




@pytest.fixture(scope="module")
def h100_expected(example_plans):
    return expectations(example_plans[CLUSTER])   # the shipped stack, planned once per run


def _api(url: str) -> KubernetesApi:
    cfg = client.Configuration(host=url)
    cfg.retries = 0
    return KubernetesApi(client.ApiClient(cfg), timeout=(2.0, 5.0))


def _no_gcp():
    raise AssertionError("a CoreWeave stack must not touch GCP")


def _by_name(report):
    return {f.name: f for f in report.findings}


def test_complete_cluster_is_ok(h100_expected):
    with FakeKubernetes() as srv:
        srv.objects.update(h100_world())
        report = check_expectations(CLUSTER, h100_expected, kube=lambda: _api(srv.url), gcp=_no_gcp)
    states = {f.name: f.state for f in report.findings}
    assert report.exit_code == EXIT_OK, [f for f in report.findings if f.state not in ("ok", "skipped")]
    for name in ("training", "training-controller", "cwdemo-controller", "cwdemo-h100",
                 "cwdemo-cpu-general", "cwdemo-h100-flavor", "cwdemo-cpu-general-flavor", "training-cq",
                 "training-training-cq", "training-cwdemo-controller", "infiniband", "cwdemo-system",
                 "letsencrypt-http01-prod", "training-cwdemo-federation",
                 "training-federation-allowlist", "kueue", "traefik", "cert-manager"):
        assert states[name] == "ok", name
    # The Cloudflare record is declared but not a Kubernetes object: reported, not failed.
    assert states["ctl-cw-demo-h100.example.org"] == "skipped"
    assert report.fix == ()
    # Read-only: every request was a GET.
    assert {m for m, _ in srv.requests} == {"GET"}
    assert ("GET", "/apis/compute.coreweave.com/v1alpha1/nodepools/cwdemo-h100") in srv.requests


def test_missing_and_different_objects(h100_expected):
    world = h100_world()
    pool = world[kube_path("compute.coreweave.com/v1alpha1", "nodepools", "cwdemo-h100")]
    pool["spec"]["instanceType"] = "gd-8xa100-i128"
    del world[kube_path("kueue.x-k8s.io/v1beta1", "clusterqueues", "training-cq")]
    del world[kube_path("v1", "serviceaccounts", "controller", "training")]
    world[kube_path("v1", "secrets", "sh.helm.release.v1.kueue.v2", "kueue-system")]["metadata"]["labels"]["status"] = "failed"
    ingress = world[kube_path("networking.k8s.io/v1", "ingresses", "cwdemo-federation", "training")]
    ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] = "letsencrypt-http01-staging"
    with FakeKubernetes() as srv:
        srv.objects.update(world)
        report = check_expectations(CLUSTER, h100_expected, kube=lambda: _api(srv.url), gcp=_no_gcp)
    f = _by_name(report)
    assert f["cwdemo-h100"].state == "different"
    assert [(d.field, d.declared, d.live) for d in f["cwdemo-h100"].diffs] == [
        ("spec.instanceType", "gd-8xh100ib-i128", "gd-8xa100-i128")]
    assert f["training-cq"].state == "missing"
    assert f["training-controller"].state == "missing"
    assert f["kueue"].state == "different"
    assert [(d.field, d.live) for d in f["kueue"].diffs] == [("status", "failed")]
    assert [(d.field, d.declared, d.live) for d in f["training-cwdemo-federation"].diffs] == [
        ("metadata.annotations[cert-manager.io/cluster-issuer]", "letsencrypt-http01-prod",
         "letsencrypt-http01-staging")]
    assert f["cwdemo-cpu-general"].state == "ok"
    assert report.exit_code == EXIT_MISSING
    assert report.fix == (f"clusterstack preview {CLUSTER}", f"clusterstack up {CLUSTER}")


def test_forbidden_and_malformed_objects_are_unverified(h100_expected):
    world = h100_world()
    # A binding without roleRef is not a valid ClusterRoleBinding: the client's model rejects it.
    del world[kube_path("rbac.authorization.k8s.io/v1", "clusterrolebindings", "cwdemo-node-observer")]["roleRef"]
    del world[kube_path("kueue.x-k8s.io/v1beta1", "clusterqueues", "training-cq")]
    with FakeKubernetes() as srv:
        srv.objects.update(world)
        forbidden = kube_path("rbac.authorization.k8s.io/v1", "clusterroles", "cwdemo-controller")
        srv.failures[forbidden] = kube_forbidden(forbidden)
        report = check_expectations(CLUSTER, h100_expected, kube=lambda: _api(srv.url), gcp=_no_gcp)
    f = _by_name(report)
    role = next(x for x in report.findings if x.type.endswith(":ClusterRole") and x.name == "cwdemo-controller")
    assert role.state == "error" and "403" in role.message
    binding = next(x for x in report.findings
                   if x.type.endswith(":ClusterRoleBinding") and x.name == "cwdemo-node-observer")
    assert binding.state == "error" and "roleRef" in binding.message
    assert f["training-cq"].state == "missing"
    # Something could not be checked: the answer is incomplete, so 1 wins over 4.
    assert report.exit_code == EXIT_UNVERIFIED


def test_unreachable_api_is_asked_once(h100_expected):
    with FakeKubernetes() as srv:
        url = srv.url
    calls = []

    class Counting(KubernetesApi):
        def get(self, obj):
            calls.append(obj)
            return super().get(obj)

    cfg = client.Configuration(host=url)   # the server is gone: connection refused
    cfg.retries = 0
    report = check_expectations(CLUSTER, h100_expected,
                                kube=lambda: Counting(client.ApiClient(cfg), timeout=(1.0, 1.0)),
                                gcp=_no_gcp)
    kube_findings = [x for x in report.findings if x.type.startswith("kubernetes:")]
    assert len(calls) == 1
    assert all(x.state == "error" for x in kube_findings) and len(kube_findings) > 10
    assert "unreachable" in kube_findings[-1].message
    assert report.exit_code == EXIT_UNVERIFIED


def test_from_kubeconfig_without_context(tmp_path):
    empty = tmp_path / "kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    with pytest.raises(CheckError, match="demo-h100_US-EAST-04A"):
        KubernetesApi.from_kubeconfig("demo-h100_US-EAST-04A", config_file=str(empty))


def _kubeconfig(path: Path, url: str) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "demo", "cluster": {"server": url}}],
        "users": [{"name": "verify", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "demo-h100_US-EAST-04A", "context": {"cluster": "demo", "user": "verify"}},
                     {"name": "other", "context": {"cluster": "nowhere", "user": "verify"}}]}))
    return path


def test_cli_uses_the_clusters_kube_context(repo_root, tmp_path, monkeypatch, capsys):
    """End to end: `clusterstack verify cw-demo-h100` → kubeconfig context from the config →
    the fake API server; text report, then JSON, with the exit codes."""
    world = h100_world()
    del world[kube_path("compute.coreweave.com/v1alpha1", "nodepools", "cwdemo-cpu-general")]
    with FakeKubernetes() as srv:
        srv.objects.update(world)
        monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "config", srv.url)))
        assert main(["--root", str(repo_root), "verify", CLUSTER]) == EXIT_MISSING
        text = capsys.readouterr()
        assert main(["--root", str(repo_root), "verify", CLUSTER, "--json"]) == EXIT_MISSING
        doc = json.loads(capsys.readouterr().out)
        srv.objects.update(h100_world())
        report = verify_prerequisites(CLUSTER, workspace=Workspace.load(repo_root))
    assert f"MISSING   {NODEPOOL}  NodePool cwdemo-cpu-general" in text.out
    assert f"clusterstack up {CLUSTER}" in text.out
    assert "error:" in text.err and "missing or different" in text.err
    assert doc["status"] == "missing" and doc["exit_code"] == EXIT_MISSING
    assert doc["counts"]["missing"] == 1
    assert doc["fix"] == [f"clusterstack preview {CLUSTER}", f"clusterstack up {CLUSTER}"]
    assert [x["name"] for x in doc["findings"] if x["state"] == "missing"] == ["cwdemo-cpu-general"]
    assert report.ok and report.exit_code == EXIT_OK


def test_cli_bad_config_is_exit_2(workspace_copy, capsys):
    cfg = workspace_copy / "clusters" / f"{CLUSTER}.yaml"
    cfg.write_text(cfg.read_text().replace("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    assert main(["--root", str(workspace_copy), "verify", CLUSTER]) == 2
    assert "manager_memory_limit" in capsys.readouterr().err


def test_report_json_is_deterministic(h100_expected):
    with FakeKubernetes() as srv:
        srv.objects.update(h100_world())
        a = check_expectations(CLUSTER, h100_expected, kube=lambda: _api(srv.url), gcp=_no_gcp)
        b = check_expectations(CLUSTER, copy.deepcopy(h100_expected), kube=lambda: _api(srv.url),
                               gcp=_no_gcp)
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)


def test_cli_without_access_says_the_cause_once(repo_root, tmp_path, monkeypatch, capsys):
    with FakeKubernetes() as srv:
        url = srv.url                       # gone after the block: connection refused
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "config", url)))
    assert main(["--root", str(repo_root), "verify", CLUSTER, "--timeout", "1"]) == EXIT_UNVERIFIED == 2
    cap = capsys.readouterr()
    unchecked = [ln for ln in cap.out.splitlines() if ln.startswith("UNCHECKED")]
    assert len(unchecked) == 1 and "unreachable" in unchecked[0]
    assert "Traceback" not in cap.err and "internal error" not in cap.err
