"""`clusterstack deploy <service> rollout` on the in-memory FakeEngine: overrides never touch the
checked-in stack file, secrets are resolved at rollout time and masked, the guard blocks,
Pulumi's failures are the command's failures — and a Kubernetes rollout is verified and its
health recorded on the ReplicaSet (real `kubernetes` client against the fake API server)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from ruamel.yaml import YAML

from clusterstack.cli import main
from clusterstack.engine import ProgramFailedError, ResourceFailedError, StackLockedError
from fakes.pulumi import FakeEngine, FakeStack, res_step
from fakes.kubernetes_api import FakeKubernetes
from deploy_support import Typing, kube_client, make_workspace
from helpers import git
from fakes.clients import bound_engine, fake_clients
from fakes.clock import FakeClock
from fakes.gcp_api import FakeSecretManager

SERVICE_TYPE = "command:local:Command"
STACK_FILE = """\
# the production stack of jobs — reviewed
config:
  jobs:region: us-central1   # where the scheduler runs
  jobs:replicas: 2
  jobs:apiKey:
    secure: v1:AAAABBBBCCCCDDDD:EEEEFFFF
"""
REGISTRY = """\
services:
  jobs:
    project_dir: services/jobs
    stack: prod
    kind: pulumi
    secrets:
      DEPLOY_TOKEN: gcp-secret://projects/demo-project/secrets/deploy-token/versions/latest
      SCHED_KEY: env:SCHED_KEY
      CA_BUNDLE: file:{ca}
"""
TOKEN = "tok-line-one\ntok-line-two"
SCHED = "sched-7f3a9c"
CA = "-----BEGIN CERT----- ca-1b2c -----END CERT-----"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_workspace(tmp_path)
    jobs = root / "services" / "jobs"
    jobs.mkdir()
    (jobs / "Pulumi.yaml").write_text("name: jobs\nruntime: python\n")
    (jobs / "Pulumi.prod.yaml").write_text(STACK_FILE)
    (jobs / "__main__.py").write_text("# never run by the fake engine\n")
    ca = tmp_path / "ca.pem"  # outside the repository: the tree stays clean
    ca.write_text(CA + "\n")
    (root / "services.yaml").write_text(REGISTRY.format(ca=ca))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "jobs service")
    return root


@pytest.fixture
def sm(monkeypatch) -> FakeSecretManager:
    client = FakeSecretManager({
        "projects/demo-project/secrets/deploy-token/versions/latest": TOKEN,
        "projects/demo-project/secrets/pulumi-state-passphrase/versions/latest": "correct horse"})
    monkeypatch.setenv("SCHED_KEY", SCHED)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return client


def update_step(stack: str = "prod"):
    return res_step("update", stack, SERVICE_TYPE, "nightly", old={"stdin": '{"replicas":2}'},
                    new={"stdin": '{"replicas":5}'}, detailed_diff={"stdin": {"kind": "update", "inputDiff": True}})


@pytest.fixture
def fake(sm) -> FakeEngine:
    return FakeEngine({"prod": FakeStack(steps=(update_step(),))})


@pytest.fixture
def clients(fake, sm):
    """The fake engine (bound to the service project, config copy and secrets it is asked
    for) and the fake Secret Manager."""
    return fake_clients(engine=bound_engine(fake), secret_manager=lambda: sm)


def binds(eng: FakeEngine) -> list[dict]:
    return [kw for op, _, kw in eng.calls if op == "bind"]


def ops(eng: FakeEngine) -> list[str]:
    return [op for op, _, _ in eng.calls]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_overrides_go_to_a_temporary_copy_and_the_checked_in_file_stays_byte_identical(root, fake, capsys, clients):
    stack_file = root / "services" / "jobs" / "Pulumi.prod.yaml"
    before = sha(stack_file)
    head = git(root, "rev-parse", "HEAD")
    code = main(["--root", str(root), "deploy", "jobs", "rollout", "--config", "replicas=5",
                 "--config", "jobs:region=us-east1", "--yes", "-m", "raise replicas"], clients=clients)
    assert code == 0, capsys.readouterr().err
    assert sha(stack_file) == before
    assert git(root, "status", "--porcelain") == ""
    (bound,) = binds(fake)
    config_file = Path(bound["config_file"])
    assert config_file.parent != stack_file.parent and config_file.name == "Pulumi.prod.yaml"
    assert not config_file.exists()  # removed after the update
    assert bound["project_dir"] == root / "services" / "jobs"
    doc = YAML(typ="safe").load(bound["config_text"])["config"]
    assert doc == {"jobs:region": "us-east1", "jobs:replicas": "5",
                   "jobs:apiKey": {"secure": "v1:AAAABBBBCCCCDDDD:EEEEFFFF"},
                   "jobs:sourceRevision": head, "jobs:changeCause": "raise replicas"}
    assert "# the production stack of jobs — reviewed" in bound["config_text"]  # a round-trip copy
    (entry,) = fake.stacks["prod"].history
    assert entry.message == f"raise replicas [clusterstack: git {head[:12]} on main]"
    assert entry.config["jobs:replicas"] == "5" and entry.config_secrets == ("jobs:apiKey",)
    assert "override jobs:replicas = 5" in capsys.readouterr().out


def test_secrets_are_resolved_at_rollout_time_and_masked_under_github_actions(root, fake, sm, monkeypatch,
                                                                               capsys, tmp_path, clients):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    masks = ["::add-mask::" + v for v in (CA, "tok-line-one", "tok-line-two", SCHED)]
    assert lines[:4] == masks  # before anything else is printed, one per line of a multi-line value
    (bound,) = binds(fake)
    assert bound["env"] == {"CA_BUNDLE": CA, "DEPLOY_TOKEN": TOKEN, "SCHED_KEY": SCHED}
    assert sm.names == ["projects/demo-project/secrets/deploy-token/versions/latest"]
    rest = "\n".join(lines[4:]) + captured.err + bound["config_text"]
    for value in (TOKEN, "tok-line-one", SCHED, "ca-1b2c"):
        assert value not in rest
        # never written to disk: not in the workspace, not in any temp file left behind
        for f in [*root.rglob("*"), *tmp_path.rglob("*")]:
            if f.is_file() and f.name != "ca.pem" and ".git" not in f.parts:
                assert value.encode() not in f.read_bytes(), f


def test_no_masks_outside_github_actions(root, fake, capsys, clients):
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 0
    assert "::add-mask::" not in capsys.readouterr().out


@pytest.mark.parametrize("value", ["", "   \n"])
def test_an_empty_secret_is_an_error_and_nothing_runs(root, fake, monkeypatch, capsys, value, clients):
    monkeypatch.setenv("SCHED_KEY", value)
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 2
    assert "secret SCHED_KEY (env:SCHED_KEY) is empty" in capsys.readouterr().err
    assert fake.calls == []


def test_a_missing_secret_names_the_variable(root, fake, monkeypatch, capsys, clients):
    monkeypatch.delenv("SCHED_KEY")
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 2
    assert "secrets.SCHED_KEY: secret SCHED_KEY (env:SCHED_KEY): environment variable SCHED_KEY is not set" \
        in capsys.readouterr().err
    assert fake.calls == []


def test_the_guard_blocks_a_destructive_rollout(root, fake, capsys, clients):
    fake.stacks["prod"].steps = (res_step("delete", "prod", "kubernetes:core/v1:PersistentVolumeClaim",
                                          "data", protect=True),)
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 3
    assert "up" not in ops(fake)
    assert "PersistentVolumeClaim::data" in capsys.readouterr().out


@pytest.mark.parametrize("error, code", [
    (ResourceFailedError("prod", ["nightly: exit status 1"]), 1),
    (StackLockedError("prod"), 2),
    (ProgramFailedError("prod", "error: jobs:region is required"), 2),
])
def test_pulumi_failures_are_the_commands_failures(root, fake, capsys, error, code, clients):
    fake.fail("up", "prod", error)
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == code
    assert error.problems[0].message in capsys.readouterr().err


def test_a_guarded_step_during_the_update_cancels_it(root, fake, clients):
    fake.stacks["prod"].up_steps = (res_step("delete", "prod", "kubernetes:core/v1:PersistentVolumeClaim",
                                             "data", protect=True),)
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 3


def test_without_yes_the_service_name_must_be_typed(root, fake, monkeypatch, clients):
    Typing(monkeypatch, None)
    assert main(["--root", str(root), "deploy", "jobs", "rollout"], clients=clients) == 2
    assert "up" not in ops(fake)
    Typing(monkeypatch, "jobs")
    assert main(["--root", str(root), "deploy", "jobs", "rollout"], clients=clients) == 0
    assert ops(fake).count("up") == 1


@pytest.mark.parametrize("args, message", [
    (["--config", "replicas"], "use --config KEY=VALUE"),
    (["--config", "=5"], "use --config KEY=VALUE"),
    (["--config", "replicas=1", "--config", "jobs:replicas=2"], "given twice"),
    (["--config", "apiKey=plain"], "holds a secret (secure:) value"),
])
def test_bad_overrides(root, fake, capsys, args, message, clients):
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes", *args], clients=clients) == 2
    assert message in capsys.readouterr().err
    assert "up" not in ops(fake)


def test_verb_first_spelling(root, fake, clients):
    assert main(["--root", str(root), "deploy", "rollout", "jobs", "--yes"], clients=clients) == 0


# --- a Kubernetes rollout is verified and its verdict recorded -------------------------------

IMG = "ghcr.io/example-lab/logrelay@sha256:" + "%064x"


class ApplyingEngine(FakeEngine):
    """A FakeEngine whose update also changes the cluster the way pulumi-kubernetes would:
    the Deployment's template becomes the program's (a new ReplicaSet)."""

    def __init__(self, srv: FakeKubernetes, *, unhealthy: bool) -> None:
        super().__init__({"cw-demo-h100": FakeStack(steps=(res_step(
            "update", "cw-demo-h100", "kubernetes:apps/v1:Deployment", "logrelay"),))})
        self.srv, self.make_unhealthy = srv, unhealthy

    def up(self, stack, **kw):
        res = super().up(stack, **kw)
        with self.srv.lock:
            self.srv.rollout(IMG % 6, "6" * 40, "relay 1.6")
            if self.make_unhealthy:
                self.srv.unhealthy.add(self.srv.serving_rs()["metadata"]["name"])
        return res


@pytest.mark.parametrize("unhealthy", [False, True])
def test_kubernetes_rollout_is_verified_and_recorded(tmp_path, monkeypatch, sm, capsys, unhealthy):
    root = make_workspace(tmp_path)
    registry = root / "services.yaml"  # a 60 s health bound (the shipped one is 600 s)
    registry.write_text(registry.read_text().replace("timeout_seconds: 600", "timeout_seconds: 60"))
    git(root, "commit", "-q", "-am", "logrelay: 60 s health bound")
    revs = [{"revision": n, "image": IMG % n, "commit": f"{n}" * 40, "health": "healthy"} for n in (4, 5)]
    with FakeKubernetes().seed(revs, serving=5) as srv:
        eng = ApplyingEngine(srv, unhealthy=unhealthy)
        clock = FakeClock()
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: sm,
                               kubernetes=lambda context: kube_client(srv.url), clock=clock)
        code = main(["--root", str(root), "deploy", "logrelay", "rollout", "--yes", "-m", "relay 1.6"],
                    clients=clients)
        new = srv.serving_rs()
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "6"
    (bound,) = binds(eng)
    assert bound["env"] == {"PULUMI_CONFIG_PASSPHRASE": "correct horse"}
    if unhealthy:
        assert code == 1
        assert "rollout applied, but revision 6" in capsys.readouterr().err
        assert new["metadata"]["annotations"]["clusterstack.dev/health"] == "unhealthy"
        assert clock.monotonic() >= 60  # the health check was polled until its bound
    else:
        assert code == 0, capsys.readouterr().err
        assert new["metadata"]["annotations"]["clusterstack.dev/health"] == "healthy"
        assert clock.sleeps == 0


def test_secret_manager_refusal_names_the_variable(root, fake, monkeypatch, capsys):
    from google.api_core.exceptions import PermissionDenied

    denying = FakeSecretManager(default="unused")
    denying.access_error = PermissionDenied("Permission 'secretmanager.versions.access' denied for resource "
                                            "'projects/demo-project/secrets/deploy-token/versions/latest'")
    clients = fake_clients(engine=bound_engine(fake), secret_manager=lambda: denying)
    assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes"], clients=clients) == 2
    err = capsys.readouterr().err
    assert "secrets.DEPLOY_TOKEN: secret DEPLOY_TOKEN (gcp-secret://projects/demo-project/secrets/deploy-token/" \
           "versions/latest): Secret Manager: the Secret Manager API refused reading projects/demo-project/" \
           "secrets/deploy-token/versions/latest: 403 Permission 'secretmanager.versions.access' denied" in err
    assert fake.calls == []


def test_a_broken_stack_file_is_a_located_error_not_a_yaml_traceback(tmp_path):
    # the override copy reads the stack file through the one loader (config/document.parse_yaml)
    from clusterstack.deploy.rollout import config_copy
    from clusterstack.errors import ConfigError
    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text("config:\n  app:image: a\n  app:image: b\n")
    with pytest.raises(ConfigError) as ei:
        with config_copy(stack, {"app:tag": "v2"}):
            pass
    problem = ei.value.problems[0]
    assert (problem.line, ei.value.exit_code) == (3, 2) and "duplicate key" in problem.message
