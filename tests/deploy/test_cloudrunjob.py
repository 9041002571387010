"""Rollback of a Cloud Run job (kind cloud-run-job): `google-cloud-run`'s JobsClient /
ExecutionsClient (REST, anonymous credentials) against the local Cloud Run fake
(tests/fakes/gcp_api.py: Job with its etag, jobs.patch, jobs.run, executions with the template
each ran, long-running operations).

Covered: revisions from the executions (health = the newest finished run of each template), a
template not run yet, target selection and refusals, the etag-guarded patch, the etag
precondition failing between re-check and write, a failed update operation restored,
run_to_verify (a run that succeeds; a run that fails → restored), and a lost response."""

from __future__ import annotations

import re

import pytest
from google.auth.credentials import AnonymousCredentials

from clusterstack.adapters.gcp import GcpClients, GoogleCloudRun
from clusterstack.config.services import CloudRunJobTarget
from clusterstack.deploy.cloudrunjob import CloudRunJobBackend
from clusterstack.deploy.model import (ActivationUncertain, FailedRestored, RollbackRefused, RolledBack,
                                       WorldMoved)
from clusterstack.deploy.rollback import execute, plan_rollback
from deploy_support import timing
from fakes.gcp_api import FakeGcp

IMG = "us-central1-docker.pkg.dev/demo-project/echo-sync/echo-sync@sha256:" + "%064x"
TARGET = CloudRunJobTarget(project="demo-project", region="us-central1", job="echo-sync")
JOB = TARGET.resource_name


def revs(n: int) -> list[dict]:
    return [{"image": IMG % i, "commit": f"{i:x}" * 40, "message": f"sync 1.{i}"} for i in range(1, n + 1)]


def backend(srv: FakeGcp, refreshed: list | None = None, *, verify: bool = False) -> CloudRunJobBackend:
    api = GoogleCloudRun(GcpClients(api_endpoint=srv.url, credentials=AnonymousCredentials()), timeout=10)
    target = TARGET.model_copy(update={"run_to_verify": verify})
    return CloudRunJobBackend("echo-sync", api, target=target,
                              refresh=(lambda: refreshed.append("refresh")) if refreshed is not None else None)


def current_image(srv: FakeGcp) -> str:
    return srv.jobs[JOB]["template"]["template"]["containers"][0]["image"]


def test_revisions_are_the_templates_the_executions_ran():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(3), schedule_runs=[(0, "succeeded"), (0, "failed"), (1, "failed"),
                                                           (2, "succeeded"), (2, "running")])
        snap = backend(srv).snapshot()
        assert srv.writes() == []
    assert [(r.number, r.health, r.serving) for r in snap.revisions] == [
        (3, "healthy", True), (2, "unhealthy", False), (1, "unhealthy", False)]   # 1: its newest run failed
    top = snap.revisions[0]
    assert top.git_commit == "3" * 40 and top.message == "sync 1.3" and "2 execution(s)" in top.detail
    assert top.name.startswith("echo-sync-")


def test_a_template_no_execution_ran_yet_is_the_next_revision_health_unknown():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded")])
        snap = backend(srv).snapshot()
    assert [(r.number, r.health, r.serving, r.name) for r in snap.revisions] == [
        (2, "unknown", True, "(not run yet)"), (1, "healthy", False, snap.revisions[1].name)]


@pytest.mark.parametrize("n, message", [(9, "revision 9 is not retained"), (3, "revision 3 is serving"),
                                         (2, "not known healthy (health: unhealthy)")])
def test_explicit_revision_rules(n, message):
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(3), schedule_runs=[(0, "succeeded"), (1, "failed"), (2, "succeeded")])
        with pytest.raises(RollbackRefused, match=re.escape(message)):
            plan_rollback(backend(srv), to_revision=n)


def test_rollback_patches_the_template_with_the_etag_and_refreshes():
    refreshed: list = []
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(3), schedule_runs=[(0, "succeeded"), (1, "failed"), (2, "succeeded")])
        etag = srv.jobs[JOB]["etag"]
        b = backend(srv, refreshed)
        plan = plan_rollback(b)
        assert (plan.source.number, plan.target.number) == (3, 1)
        assert plan.notes[0] == f"image: {IMG % 3} → {IMG % 1}" and etag in plan.notes[2]
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, RolledBack) and outcome.refreshed is True
        assert current_image(srv) == IMG % 1
        assert [p for m, p in srv.requests if m == "PATCH"] == [f"/v2/{JOB}"]
        assert not any(p.endswith(":run") for _, p in srv.requests)   # no run unless run_to_verify
        assert backend(srv).snapshot().serving[0].number == 1
    assert refreshed == ["refresh"]


def test_a_change_between_recheck_and_write_fails_the_etag_precondition():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded"), (1, "succeeded")])
        b = backend(srv)
        plan = plan_rollback(b)

        def someone_updates():
            srv.jobs[JOB]["etag"] = '"etag-77"'
        srv.before_write = someone_updates
        with pytest.raises(WorldMoved, match="etag precondition of jobs.patch failed"):
            execute(b, plan, timing())
        assert current_image(srv) == IMG % 2


def test_a_failed_update_operation_restores_the_source():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded"), (1, "succeeded")])
        srv.faults = ["op-error"]
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, FailedRestored) and "image not found" in outcome.reason
        assert current_image(srv) == IMG % 2


def test_run_to_verify_runs_the_job_once_and_requires_success():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded"), (1, "succeeded")])
        b = backend(srv, verify=True)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, RolledBack)
        assert [p for m, p in srv.requests if m == "POST"] == [f"/v2/{JOB}:run"]
        assert any("1/1 task(s) succeeded" in line for line in outcome.log)


def test_run_to_verify_a_failed_run_restores_the_source():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded"), (1, "succeeded")])
        srv.run_outcomes = ["failed", "succeeded"]   # the target's run fails, the source's passes
        b = backend(srv, verify=True)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, FailedRestored)
        assert "failed: 1 of 1 task(s)" in outcome.reason
        assert current_image(srv) == IMG % 2
        assert [p for m, p in srv.requests if m == "POST"] == [f"/v2/{JOB}:run"] * 2


def test_a_lost_response_that_changed_nothing_is_uncertain():
    with FakeGcp() as srv:
        srv.add_job(JOB, revisions=revs(2), schedule_runs=[(0, "succeeded"), (1, "succeeded")])
        srv.faults = ["drop"]
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, ActivationUncertain) and outcome.observed == "source"
