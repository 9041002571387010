"""Rollback of a Cloud Run service: `google-cloud-run` ServicesClient / RevisionsClient (REST
transport, anonymous credentials) against a local server that serves run.googleapis.com/v2
Service, Revision and long-running Operation objects of the real shape
(tests/fakes/kubernetes_api.py, tests/fakes/gcp_api.py).

Covered: history, target selection, explicit revision, conflict (etag moved — at the re-check,
or between re-check and write, refused by the API's etag precondition), activation failure
with a successful restore, a failed restore, uncertain activation (a dropped connection), the
exact restore of a split, and the CLI with `pulumi refresh` afterwards."""

from __future__ import annotations

import json
import re

import pytest

from clusterstack.cli import main
from clusterstack.deploy.cloudrun import CloudRunBackend
from clusterstack.deploy.model import (ActivationUncertain, FailedRestored, FailedRestoreFailed,
                                       RollbackRefused, RolledBack, WorldMoved)
from clusterstack.config.services import CloudRunTarget, HttpCheck
from clusterstack.deploy.rollback import execute, plan_rollback
from fakes.pulumi import FakeEngine, FakeStack
from fakes.clock import FakeClock
from fakes.gcp_api import FakeGcp, FakeSecretManager, grpc_error
from deploy_support import cloud_run_api, cloud_run_clients, make_workspace, timing
from fakes.clients import bound_engine, fake_clients

IMG = "us-central1-docker.pkg.dev/demo-project/apps/echo@sha256:" + "%064x"
LATEST = [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}]
TARGET = CloudRunTarget(project="demo-project", region="us-central1", service="echo")


def world(ready: dict[int, bool], traffic=None) -> FakeGcp:
    revs = [{"n": n, "image": IMG % n, "commit": f"{n:x}" * 40, "ready": ok, "message": f"echo 1.{n}"}
            for n, ok in sorted(ready.items())]
    return FakeGcp().seed(revs, traffic or LATEST)


def backend(srv: FakeGcp, refreshed: list | None = None, *, url: bool = True) -> CloudRunBackend:
    return CloudRunBackend("echo", cloud_run_api(srv.url), target=TARGET,
                           http=HttpCheck(url=f"{srv.url}/healthz") if url else None,
                           refresh=(lambda: refreshed.append("refresh")) if refreshed is not None else None,
                           timeout=10)


def rev(srv: FakeGcp, n: int) -> str:
    return srv.revision_name(n)


def test_history_lists_the_retained_revisions():
    with world({1: True, 2: False, 3: True}) as srv:
        snap = backend(srv).snapshot()
        etag = srv.service["etag"]
    assert [(r.number, r.health, r.serving) for r in snap.revisions] == [
        (3, "healthy", True), (2, "unhealthy", False), (1, "healthy", False)]
    top = snap.revisions[0]
    assert top.name == "echo-00003-dxq" and top.git_commit == "3" * 40 and top.message == "echo 1.3"
    assert "traffic 100%" in top.detail and IMG % 3 in top.detail
    assert dict(snap.world) == {"serving": "echo-00003-dxq=100", "etag": etag}


def test_default_target_skips_a_revision_that_never_became_ready():
    with world({1: True, 2: False, 3: True}) as srv:
        plan = plan_rollback(backend(srv))
        assert srv.writes() == []
    assert (plan.source.number, plan.target.number) == (3, 1)
    assert plan.notes[0] == "traffic: echo-00003-dxq 100% → echo-00001-byq 100%"


@pytest.mark.parametrize("n, message", [(7, "revision 7 is not retained"), (3, "revision 3 is serving"),
                                         (2, "not known healthy (health: unhealthy)")])
def test_explicit_revision_rules(n, message):
    with world({1: True, 2: False, 3: True}) as srv:
        with pytest.raises(RollbackRefused, match=re.escape(message)):
            plan_rollback(backend(srv), to_revision=n)


def test_explicit_revision_gets_all_traffic_with_the_etag_precondition():
    refreshed: list = []
    with world({1: True, 2: True, 3: True}) as srv:
        b = backend(srv, refreshed)
        plan = plan_rollback(b, to_revision=1)
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, RolledBack) and outcome.refreshed is True
        assert srv.service["traffic"] == [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION",
                                           "revision": rev(srv, 1), "percent": 100}]
        assert srv.serving() == {rev(srv, 1): 100}
        assert [p for m, p in srv.requests if m == "PATCH"] == [f"/v2/{srv.name}"]
        assert any("/operations/" in p for _, p in srv.requests)  # the LRO was polled
    assert refreshed == ["refresh"]


# --- conflict -------------------------------------------------------------------------------

def _someone_shifts_traffic(srv: FakeGcp) -> None:
    srv.service["traffic"] = [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION", "revision": rev(srv, 2),
                               "percent": 100}]
    srv.service["etag"] = '"etag-99"'
    srv._settle()


def test_a_change_after_planning_is_caught_by_the_recheck():
    with world({1: True, 2: True, 3: True}) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        _someone_shifts_traffic(srv)
        with pytest.raises(WorldMoved) as exc:
            execute(b, plan, timing())
        assert srv.writes() == []
    assert "serving 'echo-00003-dxq=100' → 'echo-00002-czq=100'" in exc.value.render()


def test_a_change_between_recheck_and_write_fails_the_etag_precondition():
    with world({1: True, 2: True, 3: True}) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.before_write = lambda: _someone_shifts_traffic(srv)
        with pytest.raises(WorldMoved, match="etag precondition"):
            execute(b, plan, timing())
        assert srv.serving() == {rev(srv, 2): 100}  # the other change stands, ours was refused


# --- failures after activation --------------------------------------------------------------

def test_failed_operation_restores_the_source():
    with world({1: True, 2: True}) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.faults = ["op-error"]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, FailedRestored)
        assert "Revision is not ready to serve traffic" in outcome.reason
        assert srv.service["traffic"] == LATEST  # restored exactly as it was
        assert srv.serving() == {rev(srv, 2): 100}


def test_unhealthy_target_is_restored_after_the_bounded_health_wait():
    clock = FakeClock()
    with world({1: True, 2: True}) as srv:
        srv.unhealthy.add(rev(srv, 1))
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing(timeout=30, interval=10, clock=clock))
        assert isinstance(outcome, FailedRestored) and "503" in outcome.reason
        assert srv.service["traffic"] == LATEST and srv.serving() == {rev(srv, 2): 100}
    assert clock.sleeps == 3


def test_failed_restore():
    with world({1: True, 2: True}) as srv:
        srv.unhealthy.add(rev(srv, 1))
        b = backend(srv)
        plan = plan_rollback(b)
        srv.faults = [None, (503, grpc_error(503, "UNAVAILABLE", "The service is currently unavailable."))]
        outcome = execute(b, plan, timing(timeout=10, interval=10))
        assert isinstance(outcome, FailedRestoreFailed)
        assert "restore failed" in outcome.restore_error
        assert srv.serving() == {rev(srv, 1): 100}


def test_split_traffic_is_restored_exactly():
    with world({1: True, 2: True, 3: True}) as srv:
        split = [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION", "revision": rev(srv, 3), "percent": 90},
                 {"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION", "revision": rev(srv, 2), "percent": 10,
                  "tag": "canary"}]
        srv.service["traffic"] = split
        srv._settle()
        b = backend(srv)
        plan = plan_rollback(b)
        assert (plan.source.number, plan.target.number) == (3, 1)  # the majority revision is the source
        srv.unhealthy.add(rev(srv, 1))
        outcome = execute(b, plan, timing(timeout=10, interval=10))
        assert isinstance(outcome, FailedRestored)
        assert srv.service["traffic"] == split


# --- lost responses -------------------------------------------------------------------------

def test_dropped_connection_without_the_change_is_uncertain():
    with world({1: True, 2: True}) as srv:
        b = backend(srv)
        plan = plan_rollback(b)
        srv.faults = ["drop"]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, ActivationUncertain) and outcome.observed == "source"
        assert len(srv.writes()) == 1 and srv.service["traffic"] == LATEST


def test_dropped_connection_after_the_change_landed_carries_on():
    with world({1: True, 2: True}) as srv:
        b = backend(srv)
        srv.faults = ["apply-drop"]
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, RolledBack)
        assert srv.serving() == {rev(srv, 1): 100}


# --- the CLI --------------------------------------------------------------------------------

def test_cli_rollback_and_history(tmp_path, monkeypatch, capsys):
    from clusterstack.adapters.gcp import CloudRunClients

    root = make_workspace(tmp_path)
    eng = FakeEngine({"prod": FakeStack()})
    sm = FakeSecretManager(default="pw")
    with world({1: True, 2: True}) as srv:
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: sm,
                               cloud_run=lambda: CloudRunClients(*cloud_run_clients(srv.url)))
        assert main(["--root", str(root), "deploy", "echo", "rollback", "--yes"], clients=clients) == 0
        assert main(["--root", str(root), "deploy", "echo", "history", "--json"], clients=clients) == 0
    out = capsys.readouterr().out
    assert "echo: rolled back to revision 1 (echo-00001-byq)" in out
    doc = json.loads(out[out.index("{"):])
    assert [(r["revision"], r["serving"]) for r in doc["revisions"]] == [(2, False), (1, True)]
    assert [op for op, _, _ in eng.calls if op == "refresh"] == ["refresh"]


# --- no usable Google credentials: exit 2, nothing changed ---------------------------------

@pytest.mark.parametrize("argv", [["history"], ["rollback", "--yes"], ["rollback", "--json", "--yes"]],
                         ids=["history", "rollback", "rollback-json"])
def test_cli_without_google_credentials_exits_2(tmp_path, monkeypatch, capsys, argv):
    """The real client factory with Application Default Credentials pointing at a missing
    file: a refusal before anything was read or changed (exit 2, docs/rolling-back.md §3)."""
    from clusterstack.clients import Clients

    root = make_workspace(tmp_path)
    eng = FakeEngine({"prod": FakeStack()})
    clients = Clients.production().replace(engine=bound_engine(eng))  # the real Cloud Run clients
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    assert main(["--root", str(root), "deploy", "echo", *argv], clients=clients) == 2
    captured = capsys.readouterr()
    assert "no Google credentials for the Cloud Run API" in captured.err
    assert "gcloud auth application-default login" in captured.err
    assert captured.out == "" and eng.calls == []


def test_cli_rollout_without_secret_manager_credentials_exits_2(tmp_path, monkeypatch, capsys):
    """The registry's gcp-secret:// spec cannot be resolved without credentials: exit 2 naming
    the spec, before any engine runs (was an internal error)."""
    from clusterstack.clients import Clients

    root = make_workspace(tmp_path)
    eng = FakeEngine({"prod": FakeStack()})
    clients = Clients.production().replace(engine=bound_engine(eng))  # the real Secret Manager client
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    assert main(["--root", str(root), "deploy", "echo", "rollout", "--yes"], clients=clients) == 2
    err = capsys.readouterr().err
    assert "gcp-secret://projects/demo-project/secrets/pulumi-state-passphrase/versions/latest" in err
    assert "no Google credentials" in err and "internal error" not in err.lower()
    assert eng.calls == []


def test_rejected_google_credentials_while_reading_are_credentials_unavailable(monkeypatch):
    """Expired/revoked ADC surface as google.auth RefreshError on the first request: exit 2
    (was an internal error)."""
    from google.auth.exceptions import RefreshError

    from clusterstack.deploy.model import CredentialsUnavailable

    with world({1: True, 2: True}) as srv:
        b = backend(srv)

        def refused(*args, **kwargs):
            raise RefreshError("invalid_grant: Token has been expired or revoked.")

        monkeypatch.setattr(b._api, "get_service", refused)
        with pytest.raises(CredentialsUnavailable) as e:
            b.snapshot()
        assert e.value.exit_code == 2 and "Google credentials missing or refused by the Cloud Run API while reading service " in e.value.render()
    assert srv.writes() == []


@pytest.mark.parametrize("status, body, says, hint", [
    (403, grpc_error(403, "PERMISSION_DENIED", "Permission 'run.services.get' denied on resource"),
     "the Cloud Run API refused reading service projects/demo-project/locations/us-central1/services/echo: "
     "403 Permission 'run.services.get' denied",
     "check your credentials/role: the account of your Google credentials needs run.services.get and "
     "run.revisions.list on project demo-project (roles/run.viewer)"),
    (401, grpc_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
     "Google credentials missing or refused by the Cloud Run API while reading service "
     "projects/demo-project/locations/us-central1/services/echo",
     "check your credentials: run `gcloud auth application-default login`"),
], ids=["permission-denied", "unauthenticated"])
def test_a_read_refused_for_the_operators_credentials_exits_2_and_nothing_is_written(
        tmp_path, capsys, status, body, says, hint):
    """403 and 401 on GetService are the operator's credentials or role, not a platform failure:
    CredentialsUnavailable (exit 2, docs/rolling-back.md §3 "no credentials"), through the
    library and through the CLI."""
    from clusterstack.adapters.gcp import CloudRunClients
    from clusterstack.deploy.model import CredentialsUnavailable

    with world({1: True, 2: True}) as srv:
        srv.failures[f"/v2/{srv.name}"] = (status, body)
        with pytest.raises(CredentialsUnavailable) as e:
            backend(srv).snapshot()
        eng = FakeEngine({"prod": FakeStack()})
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager(default="pw"),
                               cloud_run=lambda: CloudRunClients(*cloud_run_clients(srv.url)))
        capsys.readouterr()
        rc = main(["--root", str(make_workspace(tmp_path)), "deploy", "echo", "rollback", "--yes"],
                  clients=clients)
    problem = e.value.problems[0]
    assert e.value.exit_code == 2 and says in problem.message and hint in problem.hint
    assert problem.field == "service echo"
    err = capsys.readouterr().err
    assert rc == 2 and says in err and hint in err and "Traceback" not in err
    assert srv.writes() == [] and eng.calls == []


def test_a_get_service_answering_503_states_its_retry_budget():
    """GetService is retried on 503 for the backend's budget (google-cloud-run's own 10 s by
    default, GET_SERVICE_RETRY_S); the message says how long it was tried."""
    from clusterstack.deploy.cloudrun import GET_SERVICE_RETRY_S
    from clusterstack.deploy.model import BackendError

    assert GET_SERVICE_RETRY_S == 10.0
    with world({1: True, 2: True}) as srv:
        srv.failures[f"/v2/{srv.name}"] = (503, grpc_error(503, "UNAVAILABLE", "The service is currently unavailable."))
        b = CloudRunBackend("echo", cloud_run_api(srv.url), target=TARGET, timeout=10, get_retry_s=0.5)
        with pytest.raises(BackendError) as e:
            b.snapshot()
    problem = e.value.problems[0]
    # an API that cannot be read changed nothing: exit 2, as verify and github audit answer it
    # (the one exit-code table, clusterstack.cli.help)
    assert e.value.exit_code == 2
    assert problem.message.startswith("cannot reach the Cloud Run API while reading service ")
    assert problem.hint.startswith("GetService was retried for 0.5 s while the API answered 503")
    assert srv.requests and srv.writes() == []


@pytest.mark.parametrize("status, body, says, hint", [
    (404, grpc_error(404, "NOT_FOUND", "Resource 'echo' of kind 'SERVICE' does not exist."),
     "the Cloud Run API refused reading service projects/demo-project/locations/us-central1/services/echo: "
     "404 Resource 'echo' of kind 'SERVICE' does not exist.", "check cloud_run of echo in services.yaml"),
    (503, grpc_error(503, "UNAVAILABLE", "The service is currently unavailable."),
     "cannot reach the Cloud Run API while reading revisions: The service is currently unavailable.",
     "check the network"),
], ids=["not-found", "unavailable"])
def test_a_refused_read_is_a_backend_error_and_nothing_is_written(status, body, says, hint):
    from clusterstack.deploy.model import BackendError, CredentialsUnavailable

    with world({1: True, 2: True}) as srv:
        # GetService retries a 503 for 10 s (google-cloud-run 0.16.2, run_v2/services/services/
        # transports/base.py, get_service default_retry), ListRevisions does not: answer it there
        path = f"/v2/{srv.name}" + ("/revisions" if status == 503 else "")
        srv.failures[path] = (status, body)
        with pytest.raises(BackendError) as e:
            backend(srv).snapshot()
    assert not isinstance(e.value, CredentialsUnavailable)
    problem = e.value.problems[0]
    assert says in problem.message and hint in problem.hint and problem.field == "service echo"
    assert srv.writes() == []
