"""services.yaml: the shipped registry loads; every broken entry is reported at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import shown
from clusterstack.cli import main
from clusterstack.deploy.registry import load_registry
from clusterstack.errors import ConfigError
from clusterstack.workspace import Workspace
from deploy_support import make_workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def test_shipped_registry(repo_root):
    reg = load_registry(Workspace.load(repo_root))
    assert list(reg.services) == ["echo", "logrelay"]
    echo, relay = reg.services["echo"], reg.services["logrelay"]
    assert (echo.kind, echo.stack, echo.project_dir) == ("cloud-run", "prod", repo_root / "services" / "echo")
    assert echo.spec.cloud_run.resource_name == "projects/demo-project/locations/us-central1/services/echo"
    assert (relay.kind, relay.stack) == ("kubernetes", "cw-demo-h100")
    # `cluster:` resolves to the reviewed cluster's kube context
    assert relay.kube_context == "demo-h100_US-EAST-04A"
    assert relay.spec.health.http.path == "/healthz"
    assert str(relay.spec.secrets["PULUMI_CONFIG_PASSPHRASE"]).startswith("gcp-secret://projects/demo-project/")


def test_deploy_list_json(repo_root, capsys):
    assert main(["--root", str(repo_root), "deploy", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["services"]
    assert [(r["service"], r["kind"], r["stack"], r["target"]) for r in rows] == [
        ("echo", "cloud-run", "prod", "demo-project/us-central1/echo"),
        ("logrelay", "kubernetes", "cw-demo-h100", "demo-h100_US-EAST-04A/logging/logrelay")]


BROKEN = [
    # (entry yaml, line of the problem within the file, field, message fragment)
    ("  web:\n    project_dir: services/echo\n    stack: prod\n    kind: cloud-run\n",
     2, "services.web", "needs a cloud_run block"),
    ("  web:\n    project_dir: services/echo\n    stack: prod\n    kind: pulumi\n"
     "    kubernetes: {context: c, namespace: n, deployment: d}\n", 2, "services.web", "takes no kubernetes block"),
    ("  web:\n    project_dir: services/echo\n    stack: prod\n    kind: lambda\n",
     5, "services.web.kind", "Input should be"),
    ("  web:\n    project_dir: services/echo\n    stack: prod\n    kind: pulumi\n    replicas: 2\n",
     6, "services.web.replicas", "Extra inputs"),
    ("  web:\n    project_dir: services/echo\n    stack: prod\n    kind: pulumi\n"
     "    secrets: {TOKEN: hunter2}\n", 6, "services.web.secrets.TOKEN", "not a secret spec"),
    ("  web:\n    project_dir: services/nope\n    stack: prod\n    kind: pulumi\n",
     3, "services.web.project_dir", "does not exist"),
    ("  web:\n    project_dir: services/echo\n    stack: staging\n    kind: pulumi\n",
     4, "services.web.stack", "Pulumi.staging.yaml does not exist"),
    ("  rollout:\n    project_dir: services/echo\n    stack: prod\n    kind: pulumi\n",
     2, "services.rollout", "is a deploy verb"),
    ("  web:\n    project_dir: services/logrelay\n    stack: cw-demo-h100\n    kind: kubernetes\n"
     "    kubernetes: {namespace: logging, deployment: logrelay}\n", 6, "services.web.kubernetes",
     "exactly one of context"),
    ("  web:\n    project_dir: services/logrelay\n    stack: cw-demo-h100\n    kind: kubernetes\n"
     "    kubernetes: {context: c, namespace: logging, deployment: logrelay}\n"
     "    health: {http: {url: 'https://x.example.org/healthz'}}\n", 2, "services.web",
     "needs service, port and path"),
    ("  web:\n    project_dir: services/logrelay\n    stack: cw-demo-h100\n    kind: kubernetes\n"
     "    kubernetes: {cluster: gcp-demo, namespace: logging, deployment: logrelay}\n", 6,
     "services.web.kubernetes.cluster", "no CoreWeave kube context"),
    # the Compute Engine VM and Cloud Run job kinds
    ("  vm:\n    project_dir: services/echo\n    stack: prod\n    kind: gce-vm\n"
     "    cloud_run: {project: demo-project, region: us-central1, service: echo}\n", 2, "services.vm",
     "needs a gce_vm block"),
    ("  vm:\n    project_dir: services/echo\n    stack: prod\n    kind: gce-vm\n"
     "    gce_vm: {project: demo-project, zone: us-central1-a, instance: vm, activation: restart}\n", 2,
     "services.vm", "activation restart needs health.http.url"),
    ("  vm:\n    project_dir: services/echo\n    stack: prod\n    kind: gce-vm\n"
     "    gce_vm: {project: demo-project, zone: us-central1, instance: vm}\n", 6,
     "services.vm.gce_vm.zone", "is not a GCP zone"),
    ("  vm:\n    project_dir: services/echo\n    stack: prod\n    kind: gce-vm\n"
     "    gce_vm: {project: demo-project, zone: us-central1-a, instance: Vm_1}\n", 6,
     "services.vm.gce_vm.instance", "is not a lowercase letter, then lowercase letters"),
    ("  job:\n    project_dir: services/echo\n    stack: prod\n    kind: cloud-run-job\n"
     "    cloud_run_job: {project: demo-project, region: us-central1, job: sync}\n"
     "    health: {http: {url: 'https://x.example.org/healthz'}}\n", 2, "services.job",
     "a cloud-run-job has no HTTP health check"),
    ("  job:\n    project_dir: services/echo\n    stack: prod\n    kind: cloud-run-job\n"
     "    cloud_run_job: {project: demo-project, region: us-central1, job: sync, stack_grants: [run.invoker]}\n",
     6, "services.job.cloud_run_job.stack_grants[0]", "is not an IAM role"),
    ("  web:\n    project_dir: services/logrelay\n    stack: cw-demo-h100\n    kind: kubernetes\n"
     "    kubernetes: {context: c, namespace: logging, deployment: logrelay}\n"
     "    health: {http: {service: logrelay, port: 8080, path: /healthz, expect_json: {status: ready}}}\n",
     2, "services.web", "expect_json is checked on a url health check only"),
]


@pytest.mark.parametrize("entry, line, field, message", BROKEN)
def test_broken_entries_are_located(root, entry, line, field, message):
    (root / "services.yaml").write_text("services:\n" + entry)
    with pytest.raises(ConfigError) as exc:
        load_registry(Workspace.load(root))
    (p,) = exc.value.problems
    assert (p.file, p.line, p.field) == (root / "services.yaml", line, field), p.render()
    assert message in p.message


def test_cli_reports_the_problem_and_exits_2(root, capsys):
    (root / "services.yaml").write_text("services:\n  web:\n    project_dir: services/echo\n"
                                        "    stack: prod\n    kind: pulumi\n    secrets: {TOKEN: plaintext}\n")
    assert main(["--root", str(root), "deploy", "web", "history"]) == 2
    err = capsys.readouterr().err
    assert f"error: services.yaml:6: services.web.secrets.TOKEN: " in err
    assert "plaintext" not in err.split("—")[0].split("TOKEN:")[0]


def test_unknown_service(root, capsys):
    assert main(["--root", str(root), "deploy", "nosuch", "history"]) == 2
    assert "unknown service 'nosuch'" in capsys.readouterr().err


def test_the_new_kinds_load_with_their_defaults(root):
    (root / "services.yaml").write_text(
        "services:\n"
        "  vm:\n    project_dir: services/echo\n    stack: prod\n    kind: gce-vm\n"
        "    gce_vm: {project: demo-project, zone: us-central1-a, instance: vm}\n"
        "  job:\n    project_dir: services/echo\n    stack: prod\n    kind: cloud-run-job\n"
        "    cloud_run_job: {project: demo-project, region: us-central1, job: sync}\n")
    reg = load_registry(Workspace.load(root))
    vm, job = reg.services["vm"].spec.gce_vm, reg.services["job"].spec.cloud_run_job
    assert (vm.image_key, vm.activation) == ("clusterstack-image", "watch")
    assert (job.run_to_verify, job.stack_grants) == (False, ["roles/run.invoker"])
    assert job.resource_name == "projects/demo-project/locations/us-central1/jobs/sync"
    from clusterstack.config.services import CloudRunTarget

    assert CloudRunTarget(project="demo-project", region="us-central1", service="echo").stack_grants == [
        "roles/run.invoker", "roles/iap.httpsResourceAccessor"]
    assert reg.services["vm"].target_text() == "demo-project/us-central1-a/vm (clusterstack-image, watch)"
    assert reg.services["job"].target_text() == "demo-project/us-central1/jobs/sync"


def test_http_check_expect_json():
    """deploy.health.http_check with ``expect_json`` against the one local fake server."""
    from clusterstack.deploy.health import http_check
    from fakes.http import FakeServer

    class Ready(FakeServer):
        body: object = {"status": "ready", "version": 3}

        def handle(self, method, path, query, raw, headers):
            return (200, self.body) if path == "/api/ready" else (404, "no")

    with Ready() as srv:
        url = f"{srv.url}/api/ready"
        assert http_check(url, expect_json={"status": "ready"}).ok
        srv.body = {"status": "starting"}
        r = http_check(url, expect_json={"status": "ready"})
        assert not r.ok and r.detail.endswith("body has status='starting', expected status='ready'")
        srv.body = "ready"   # text/plain: not a JSON object
        assert "not JSON" in http_check(url, expect_json={"status": "ready"}).detail
        srv.body = ["ready"]
        assert "body has status=None" in http_check(url, expect_json={"status": "ready"}).detail
        assert http_check(f"{srv.url}/other", expect_json={"status": "ready"}).detail.endswith("404, expected 200")
