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
