"""Rollback of a Kubernetes service: the official `kubernetes` client against a local server
that serves apps/v1 Deployment and ReplicaSet objects of the real shape and simulates the
Deployment controller (tests/fakes/kubernetes_api.py, tests/fakes/gcp_api.py).

Covered: history, target selection, explicit revision, conflict (the world moved — caught by
the re-check, or by the patch's server-side test ops), activation failure with a successful
restore, a failed restore, uncertain activation (the server drops the connection), and the
CLI end to end with `pulumi refresh` through the engine afterwards."""

from __future__ import annotations

import json
import re

import pytest

from clusterstack.adapters.kubernetes import KubernetesApi
from clusterstack.cli import main
from clusterstack.deploy.kubernetes import KubernetesBackend
from clusterstack.deploy.model import (ActivationUncertain, FailedRestored, FailedRestoreFailed,
                                       RollbackRefused, RolledBack, WorldMoved)
from clusterstack.config.services import HttpCheck
from clusterstack.deploy.rollback import execute, plan_rollback
from fakes.pulumi import FakeEngine, FakeStack
from fakes.clock import FakeClock
from fakes.gcp_api import FakeSecretManager
from fakes.kubernetes_api import REVISION, FakeKubernetes, kube_status
from deploy_support import Typing, kube_client, make_workspace, timing
from fakes.clients import bound_engine, fake_clients

IMG = "ghcr.io/example-lab/logrelay@sha256:" + "%064x"
HEALTH = "clusterstack.dev/health"


def world(healths: dict[int, str | None], serving: int) -> FakeKubernetes:
    revs = [{"revision": n, "image": IMG % n, "commit": f"{n:x}" * 40, "health": h, "message": f"relay 1.{n}"}
            for n, h in sorted(healths.items())]
    return FakeKubernetes().seed(revs, serving=serving)


def backend(srv: FakeKubernetes, refreshed: list | None = None) -> KubernetesBackend:
    return KubernetesBackend("logrelay", KubernetesApi(kube_client(srv.url), timeout=(5.0, 30.0)),
                             namespace="logging", deployment="logrelay",
                             http=HttpCheck(service="logrelay", port=8080, path="/healthz"),
                             refresh=(lambda: refreshed.append("refresh")) if refreshed is not None else None)


def rs_health(srv: FakeKubernetes, n: int) -> str | None:
    return srv.by_revision(n)["metadata"]["annotations"].get(HEALTH)


def serving_image(srv: FakeKubernetes) -> str:
    return srv.deployment["spec"]["template"]["spec"]["containers"][0]["image"]


# --- history and target selection -----------------------------------------------------------

def test_history_lists_the_retained_replicasets():
    with world({1: "healthy", 2: "unhealthy", 3: None, 4: "healthy"}, serving=4) as srv:
        snap = backend(srv).snapshot()
    assert [(r.number, r.health, r.serving) for r in snap.revisions] == [
        (4, "healthy", True), (3, "unknown", False), (2, "unhealthy", False), (1, "healthy", False)]
    top = snap.revisions[0]
    assert top.git_commit == "4" * 40 and top.message == "relay 1.4" and top.name.startswith("logrelay-")
    assert IMG % 4 in top.detail
    assert dict(snap.world) == {"deployment uid": srv.uid, "revision": "4"}


def test_default_target_is_the_next_older_healthy_revision():
    with world({1: "healthy", 2: "unhealthy", 3: None, 4: "rolled-back", 5: "healthy"}, serving=5) as srv:
        plan = plan_rollback(backend(srv))
        assert srv.writes() == []  # planning changes nothing
    assert (plan.source.number, plan.target.number) == (5, 1)
    assert any("kubectl rollout undo --to-revision=1" in n for n in plan.notes)


def test_no_healthy_older_revision_is_refused_with_the_reasons():
    with world({1: "unhealthy", 2: None, 3: "healthy"}, serving=3) as srv:
        with pytest.raises(RollbackRefused) as exc:
            plan_rollback(backend(srv))
    assert "no revision older than the serving one (3) is known healthy" in exc.value.render()
    assert "2 (unknown); 1 (unhealthy)" in exc.value.render()


@pytest.mark.parametrize("n, message", [(9, "revision 9 is not retained"), (4, "revision 4 is serving"),
                                         (2, "not known healthy (health: unhealthy)"),
                                         (3, "not known healthy (health: unknown)")])
def test_explicit_revision_must_be_retained_not_serving_and_healthy(n, message):
    with world({1: "healthy", 2: "unhealthy", 3: None, 4: "healthy"}, serving=4) as srv:
        with pytest.raises(RollbackRefused, match=re.escape(message)):
            plan_rollback(backend(srv), to_revision=n)


def test_explicit_revision_rolls_back_like_kubectl_rollout_undo():
    refreshed: list = []
    with world({1: "healthy", 2: "healthy", 3: "healthy"}, serving=3) as srv:
        b = backend(srv, refreshed)
        plan = plan_rollback(b, to_revision=1)
        target_rs = srv.by_revision(1)["metadata"]["name"]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, RolledBack) and outcome.exit_code == 0 and outcome.refreshed is True
        # the controller reused revision 1's ReplicaSet and gave it the next number
        rs = srv.replicasets[target_rs]
        assert rs["metadata"]["annotations"][REVISION] == "4"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
        assert serving_image(srv) == IMG % 1
        assert rs["metadata"]["annotations"][HEALTH] == "healthy"
        assert rs_health(srv, 3) == "rolled-back"
        # kubectl's annotation merge: the change-cause comes from the ReplicaSet
        assert srv.deployment["metadata"]["annotations"]["kubernetes.io/change-cause"] == "relay 1.1"
        (patch,) = [p for m, p in srv.requests if m == "PATCH" and "/deployments/" in p]
    assert refreshed == ["refresh"]


# --- conflict: the world moved --------------------------------------------------------------

def test_a_rollout_after_planning_is_caught_by_the_recheck():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.rollout(IMG % 7, "7" * 40, "hotfix")  # someone rolled out in between
        with pytest.raises(WorldMoved) as exc:
            execute(b, plan, timing())
        assert srv.writes() == []
        assert serving_image(srv) == IMG % 7
    assert "revision '2' → '3'" in exc.value.render() and "plan again" in exc.value.render()


def test_a_change_between_recheck_and_patch_fails_the_patch_test_ops():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.before_write = lambda: srv.rollout(IMG % 7, "7" * 40, "hotfix")
        with pytest.raises(WorldMoved, match="preconditions"):
            execute(b, plan, timing())
        assert serving_image(srv) == IMG % 7  # the patch was refused as a whole


def test_a_recreated_deployment_is_a_moved_world():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.deployment["metadata"]["uid"] = "another-uid"
        with pytest.raises(WorldMoved, match="deployment uid"):
            execute(b, plan, timing())


# --- failures after activation --------------------------------------------------------------

def test_target_that_never_becomes_available_is_restored():
    with world({1: "healthy", 2: "healthy", 3: "healthy"}, serving=3) as srv:
        srv.stuck.add(srv.by_revision(2)["metadata"]["name"])
        b = backend(srv)
        plan = plan_rollback(b)
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, FailedRestored) and outcome.exit_code == 1
        assert "ProgressDeadlineExceeded" in outcome.reason
        assert serving_image(srv) == IMG % 3           # the source runs again …
        assert srv.deployment["status"]["availableReplicas"] == 1
        stuck = srv.replicasets[plan.target.name]["metadata"]["annotations"]
        assert stuck[HEALTH] == "unhealthy"            # … and the target is marked for next time
        assert stuck[REVISION] == "4"                  # (the controller renumbered it when it ran)
        assert srv.serving_rs()["metadata"]["annotations"][REVISION] == "5"
        assert srv.serving_rs()["metadata"]["name"] == plan.source.name


def test_unhealthy_target_is_restored_after_the_bounded_health_wait():
    clock = FakeClock()
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        srv.unhealthy.add(srv.by_revision(1)["metadata"]["name"])
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing(timeout=60, interval=10, clock=clock))
        assert isinstance(outcome, FailedRestored)
        assert "503" in outcome.reason
        assert serving_image(srv) == IMG % 2
    assert clock.monotonic() >= 60 and clock.sleeps == 6


def test_failed_restore():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        srv.stuck.add(srv.by_revision(1)["metadata"]["name"])
        b = backend(srv)
        plan = plan_rollback(b)
        srv.faults = [None, (500, kube_status(500, "InternalError", "etcdserver: request timed out"))]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, FailedRestoreFailed) and outcome.exit_code == 1
        assert "ProgressDeadlineExceeded" in outcome.reason
        assert "restore patch failed" in outcome.restore_error and "500" in outcome.restore_error
        assert serving_image(srv) == IMG % 1  # still the broken target: a human is needed
    assert "the service may be down" in outcome.summary()


def test_restore_that_does_not_become_healthy_is_a_failed_restore():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        srv.stuck.add(srv.by_revision(1)["metadata"]["name"])
        srv.unhealthy.add(srv.by_revision(2)["metadata"]["name"])  # the source broke meanwhile
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing(timeout=20, interval=10))
        assert isinstance(outcome, FailedRestoreFailed)
        assert "health of revision 2" in outcome.restore_error


# --- lost responses -------------------------------------------------------------------------

def test_dropped_connection_without_the_change_is_uncertain_and_nothing_else_happens():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.faults = ["drop"]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, ActivationUncertain) and outcome.exit_code == 1
        assert outcome.observed == "source"
        assert len(srv.writes()) == 1  # the lost patch; no retry, no restore
        assert serving_image(srv) == IMG % 2
    assert "Do not retry blindly" in outcome.summary()


def test_dropped_connection_after_the_change_landed_carries_on():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = backend(srv)
        srv.faults = ["apply-drop"]
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, RolledBack)
        assert any("activation response lost" in line for line in outcome.log)
        assert any("re-read: target" in line for line in outcome.log)
        assert serving_image(srv) == IMG % 1


def test_a_paused_deployment_is_refused():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        srv.deployment["spec"]["paused"] = True
        with pytest.raises(RollbackRefused, match="paused"):
            plan_rollback(backend(srv))


# --- the CLI, end to end --------------------------------------------------------------------

@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The example workspace; logrelay's API is the fake server, its engine a FakeEngine."""
    root = make_workspace(tmp_path)
    eng = FakeEngine({"cw-demo-h100": FakeStack()})
    return root, eng, monkeypatch


def clients_for(eng: FakeEngine, url: str | None = None):
    """The fake engine and Secret Manager; the kube context's client is the fake API server at
    ``url`` (None: the real adapter over the ambient kubeconfig)."""
    from clusterstack.adapters.kubernetes import api_client

    return fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager(default="correct horse"),
                        kubernetes=(lambda ctx: kube_client(url)) if url else api_client)


def test_cli_history_json(cli, capsys):
    root, eng, monkeypatch = cli
    with world({1: "healthy", 2: None}, serving=2) as srv:
        clients = clients_for(eng, srv.url)
        assert main(["--root", str(root), "deploy", "logrelay", "history", "--json"], clients=clients) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "kubernetes"
    assert [(r["revision"], r["serving"], r["health"], r["git_commit"], r["message"]) for r in doc["revisions"]] == [
        (2, True, "unknown", "2" * 40, "relay 1.2"), (1, False, "healthy", "1" * 40, "relay 1.1")]
    assert doc["revisions"][0]["time"].endswith("Z")
    assert eng.calls == []  # history of a Kubernetes service needs no engine (and no secret)


def test_cli_rollback_confirms_rolls_back_and_refreshes(cli, capsys):
    root, eng, monkeypatch = cli
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        clients = clients_for(eng, srv.url)
        Typing(monkeypatch, "nope")
        assert main(["--root", str(root), "deploy", "logrelay", "rollback"], clients=clients) == 2
        assert srv.writes() == []
        assert "rollback not confirmed; nothing was changed" in capsys.readouterr().err
        Typing(monkeypatch, "logrelay")
        assert main(["--root", str(root), "deploy", "logrelay", "rollback", "--json"], clients=clients) == 0
        assert serving_image(srv) == IMG % 1
    captured = capsys.readouterr()
    assert "rollback logrelay (kubernetes): revision 2" in captured.err and "→ revision 1" in captured.err
    doc = json.loads(captured.out)  # with --json, stdout is only the outcome document
    assert doc["outcome"] == "rolled-back" and doc["refreshed"] is True
    assert [(op, kw) for op, _, kw in eng.calls if op == "refresh"] == [("refresh", {"preview_only": False})]
    (bound,) = [kw for op, _, kw in eng.calls if op == "bind"]
    assert bound["env"] == {"PULUMI_CONFIG_PASSPHRASE": "correct horse"} and bound["config_file"] is None


@pytest.mark.parametrize("prepare, code, text", [
    (lambda srv: srv.stuck.add(srv.by_revision(1)["metadata"]["name"]), 1, "was restored and is healthy"),
    (lambda srv: srv.faults.append("drop"), 1, "is uncertain"),
])
def test_cli_rollback_failures_exit_1(cli, capsys, prepare, code, text):
    root, eng, monkeypatch = cli
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        clients = clients_for(eng, srv.url)
        prepare(srv)
        assert main(["--root", str(root), "deploy", "logrelay", "rollback", "--yes"], clients=clients) == code
    assert text in capsys.readouterr().err
    assert not [c for c in eng.calls if c[0] == "refresh"]


def test_cli_rollback_refusal_exits_2(cli, capsys):
    root, eng, monkeypatch = cli
    with world({1: "unhealthy", 2: "healthy"}, serving=2) as srv:
        clients = clients_for(eng, srv.url)
        assert main(["--root", str(root), "deploy", "logrelay", "rollback", "--yes"], clients=clients) == 2
        assert main(["--root", str(root), "deploy", "logrelay", "rollback", "--to-revision", "1", "--yes"], clients=clients) == 2
    err = capsys.readouterr().err
    assert "error: service logrelay: no revision older than the serving one (2) is known healthy" in err
    assert "revision 1 is not known healthy" in err


def test_health_check_goes_through_the_service_proxy_with_the_path_as_written():
    with world({1: "healthy", 2: "healthy"}, serving=2) as srv:
        b = KubernetesBackend("logrelay", KubernetesApi(kube_client(srv.url)), namespace="logging",
                              deployment="logrelay",
                              http=HttpCheck(service="logrelay", port=8080, path="/api/v1/health"))
        result = b.check_health(b.serving_plan(), "target")
        assert result.ok, result.detail
        srv.unhealthy.add(srv.serving_rs()["metadata"]["name"])
        result = b.check_health(b.serving_plan(), "target")
        assert not result.ok and "503, expected 200" in result.detail
    # "/" inside the health path is sent as is; the ":" of the name is percent-encoded, which
    # the API server decodes (a path segment)
    proxied = [p for p in srv.raw_paths if "/proxy/" in p]
    assert proxied == ["/api/v1/namespaces/logging/services/logrelay%3A8080/proxy/api/v1/health"] * 2


# --- no usable kube context or credentials: exit 2, nothing changed ------------------------

@pytest.mark.parametrize("kubeconfig", ["missing", "no-such-context"])
@pytest.mark.parametrize("argv", [["history"], ["rollback", "--yes"], ["rollback", "--json", "--yes"]],
                         ids=["history", "rollback", "rollback-json"])
def test_cli_without_the_kube_context_exits_2_naming_where_it_comes_from(cli, capsys, tmp_path, kubeconfig,
                                                                          argv):
    """The real api_client over a kubeconfig that is missing or lacks the context: a refusal
    before anything was changed (exit 2, docs/rolling-back.md), and the hint names the cluster
    config the context is read from — services.yaml only names the cluster."""
    root, eng, monkeypatch = cli
    path = tmp_path / "kubeconfig"
    if kubeconfig == "no-such-context":
        path.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster: {server: "
                        "'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n"
                        "- name: other\n  context: {cluster: other, user: u}\ncurrent-context: other\n")
    monkeypatch.setenv("KUBECONFIG", str(path))
    clients = clients_for(eng)
    assert main(["--root", str(root), "deploy", "logrelay", *argv], clients=clients) == 2
    err = capsys.readouterr().err
    assert "cannot use kube context" in err and str(path) in err
    assert "clusters/cw-demo-h100.yaml: platform.coreweave.kube_context" in err
    assert "services.logrelay.kubernetes.cluster" in err
    assert "check the context in services.yaml" not in err
    assert "nothing was changed" in err
    assert eng.calls == []


def test_rejected_kube_credentials_are_credentials_unavailable():
    """A 401 from the API server while reading is a credentials problem (exit 2, nothing
    changed), not the exit 1 of a failed rollback; a 403 stays a BackendError (exit 1)."""
    from clusterstack.adapters.kubernetes import KubeStatusError
    from clusterstack.deploy.kubernetes import KubernetesBackend
    from clusterstack.deploy.model import BackendError, CredentialsUnavailable

    b = KubernetesBackend("logrelay", KubernetesApi(kube_client("http://127.0.0.1:1")), namespace="logging",
                          deployment="logrelay", http=None, refresh=lambda: None)

    def answer(status):
        def call():
            raise KubeStatusError(status, "Unauthorized" if status == 401 else "Forbidden", None)
        return call

    with pytest.raises(CredentialsUnavailable) as e:
        b._call(answer(401), "deployment logging/logrelay")
    assert e.value.exit_code == 2 and "HTTP 401 Unauthorized" in e.value.render()
    with pytest.raises(BackendError) as e:
        b._call(answer(403), "deployment logging/logrelay")
    assert not isinstance(e.value, CredentialsUnavailable) and e.value.exit_code == 1


def test_cli_history_with_an_unreachable_api_exits_2_as_verify_does(cli, capsys):
    """An API that cannot be reached changed nothing: exit 2 for `deploy history` as for
    `verify` (EXIT_UNVERIFIED) and `github audit` — one exit-code table (cli/help.py)."""
    from clusterstack.errors import EXIT_REFUSED
    from clusterstack.verify.model import EXIT_UNVERIFIED

    root, eng, _ = cli
    with world({1: "healthy"}, serving=1) as srv:
        url = srv.url
    # the server is gone: connection refused
    code = main(["--root", str(root), "deploy", "logrelay", "history"], clients=clients_for(eng, url))
    assert code == EXIT_REFUSED == EXIT_UNVERIFIED
    err = capsys.readouterr().err
    assert "Kubernetes API unreachable" in err and "nothing was changed" in err
