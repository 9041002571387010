"""Rollback of a service on one Compute Engine VM (kind gce-vm): `google-cloud-compute`'s
InstancesClient / ZoneOperationsClient (REST, anonymous credentials) against the local Compute
Engine fake (tests/fakes/gcp_api.py: Instance, setMetadata with its fingerprint precondition,
getGuestAttributes, stop/start, zone operations; the guest's launcher simulated).

Covered: history from the recorded revisions (and an unrecorded image), target selection and
the --to-revision refusals, a watch rollback recorded on the VM, the fingerprint precondition at
the re-check and at the write, an unhealthy target restored, a failed operation, lost responses,
the restart activation of a VM whose startup script reads the key at boot (Marin's Loom), the
guest-attribute poll floor, and a refused read (exit 2)."""

from __future__ import annotations

import json
import re

import pytest
from google.auth.credentials import AnonymousCredentials

from clusterstack.adapters.gcp import GcpClients, GoogleCompute
from clusterstack.config.services import GceVmTarget, HttpCheck
from clusterstack.deploy.gce import GUEST_POLL_MIN_S, REVISIONS_KEY, GceVmBackend
from clusterstack.deploy.model import (ActivationUncertain, CredentialsUnavailable, FailedRestored,
                                       RollbackRefused, RolledBack, WorldMoved)
from clusterstack.deploy.rollback import execute, plan_rollback
from deploy_support import timing
from fakes.gcp_api import FakeGcp, google_error

IMG = "us-central1-docker.pkg.dev/demo-project/apps/finelog@sha256:" + "%064x"
PROJECT, ZONE, VM = "demo-project", "us-central1-a", "finelog"


def record(*entries: tuple[int, str]) -> str:
    return json.dumps([{"revision": n, "image": IMG % n, "commit": f"{n:x}" * 40, "message": f"finelog 1.{n}",
                        "time": f"2025-03-0{n}T10:00:00Z", "health": h} for n, h in entries])


def world(srv: FakeGcp, entries: list[tuple[int, str]], serving: int, **kw):
    return srv.add_vm(PROJECT, ZONE, VM, image=IMG % serving, items={REVISIONS_KEY: record(*entries),
                                                                    "startup-script": "#!/bin/bash\n"}, **kw)


def backend(srv: FakeGcp, refreshed: list | None = None, *, activation: str = "watch", http=None) -> GceVmBackend:
    api = GoogleCompute(GcpClients(api_endpoint=srv.url, credentials=AnonymousCredentials()), timeout=10)
    return GceVmBackend("finelog", api, target=GceVmTarget(project=PROJECT, zone=ZONE, instance=VM,
                                                           activation=activation), http=http,
                        refresh=(lambda: refreshed.append("refresh")) if refreshed is not None else None)


def recorded(vm) -> dict[int, str]:
    return {e["revision"]: e["health"] for e in json.loads(vm.items[REVISIONS_KEY])}


def set_metadata_calls(srv: FakeGcp) -> list[str]:
    return [p for m, p in srv.requests if m == "POST" and p.endswith("/setMetadata")]


# --- history and target selection -----------------------------------------------------------

def test_history_is_the_record_on_the_vm_and_the_serving_image():
    with FakeGcp() as srv:
        world(srv, [(1, "healthy"), (2, "unhealthy"), (3, "healthy")], serving=3)
        snap = backend(srv).snapshot()
        assert srv.writes() == []
    assert [(r.number, r.health, r.serving) for r in snap.revisions] == [
        (3, "healthy", True), (2, "unhealthy", False), (1, "healthy", False)]
    top = snap.revisions[0]
    assert top.git_commit == "3" * 40 and top.message == "finelog 1.3" and top.detail == IMG % 3
    assert top.name == "finelog@sha256:" + ("%064x" % 3)[:12]
    assert dict(snap.world)["image"] == IMG % 3 and dict(snap.world)["metadata fingerprint"] == "fp-1="


def test_an_image_no_record_names_shows_as_unrecorded_and_serving():
    with FakeGcp() as srv:
        world(srv, [(1, "healthy"), (2, "healthy")], serving=9)
        snap = backend(srv).snapshot()
    assert [(r.number, r.health, r.serving) for r in snap.revisions] == [
        (3, "unknown", True), (2, "healthy", False), (1, "healthy", False)]
    assert snap.revisions[0].message == "(not recorded by clusterstack)"


def test_default_target_is_the_next_older_healthy_revision():
    with FakeGcp() as srv:
        world(srv, [(1, "healthy"), (2, "unhealthy"), (3, "rolled-back"), (4, "healthy")], serving=4)
        plan = plan_rollback(backend(srv))
        assert srv.writes() == []
    assert (plan.source.number, plan.target.number) == (4, 1)
    assert plan.notes[0] == f"image (clusterstack-image): {IMG % 4} → {IMG % 1}"
    assert "fingerprint fp-1=" in plan.notes[2] and "no reboot" in plan.notes[2]


@pytest.mark.parametrize("n, message", [(7, "revision 7 is not retained"), (3, "revision 3 is serving"),
                                         (2, "not known healthy (health: unhealthy)")])
def test_explicit_revision_rules(n, message):
    with FakeGcp() as srv:
        world(srv, [(1, "healthy"), (2, "unhealthy"), (3, "healthy")], serving=3)
        with pytest.raises(RollbackRefused, match=re.escape(message)) as exc:
            plan_rollback(backend(srv), to_revision=n)
    assert exc.value.exit_code == 2


# --- the watch activation ---------------------------------------------------------------------

def test_rollback_sets_the_image_with_the_fingerprint_and_records_the_verdicts():
    refreshed: list = []
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy"), (3, "healthy")], serving=3)
        b = backend(srv, refreshed)
        plan = plan_rollback(b, to_revision=1)
        outcome = execute(b, plan, timing())
        assert isinstance(outcome, RolledBack) and outcome.refreshed is True
        assert vm.items["clusterstack-image"] == IMG % 1 and vm.running == IMG % 1
        assert vm.items["startup-script"] == "#!/bin/bash\n"   # the other keys are kept
        assert recorded(vm) == {1: "healthy", 2: "healthy", 3: "rolled-back"}
        # the activation, then one write per verdict — each with the fingerprint it read
        assert len(set_metadata_calls(srv)) == 3
        assert any("getGuestAttributes" in p for _, p in srv.requests)
    assert refreshed == ["refresh"]
    assert any(line.startswith("revision 1 is healthy (guest attribute clusterstack/health: ok")
               for line in outcome.log)


def test_a_change_after_planning_is_caught_by_the_recheck():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        b = backend(srv)
        plan = plan_rollback(b)
        vm.set_items({**vm.items, "clusterstack-image": IMG % 5})   # someone rolled out meanwhile
        with pytest.raises(WorldMoved) as exc:
            execute(b, plan, timing())
        assert set_metadata_calls(srv) == []
    assert "metadata fingerprint 'fp-1=' → 'fp-2='" in exc.value.render()


def test_a_change_between_recheck_and_write_fails_the_fingerprint_precondition():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        b = backend(srv)
        plan = plan_rollback(b)
        srv.before_write = lambda: vm.set_items({**vm.items, "ssh-keys": "ops:ssh-ed25519 AAAA"})
        with pytest.raises(WorldMoved, match="metadata fingerprint precondition of instances.setMetadata failed .*412 Supplied fingerprint"):
            execute(b, plan, timing())
        assert vm.items["clusterstack-image"] == IMG % 2 and vm.items["ssh-keys"]  # theirs stands


def test_an_unhealthy_target_is_restored_and_recorded_unhealthy():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        vm.broken = {IMG % 1}
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing(timeout=60.0, interval=6.0))
        assert isinstance(outcome, FailedRestored)
        assert "guest attribute clusterstack/health: failing: GET /healthz: 503" in outcome.reason
        assert vm.items["clusterstack-image"] == IMG % 2 and vm.running == IMG % 2
        assert recorded(vm)[1] == "unhealthy"


def test_a_launcher_that_never_applies_the_change_times_out_and_is_restored():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        vm.dead = True
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing(timeout=30.0, interval=6.0))
        assert isinstance(outcome, FailedRestored)
        assert "not done after 30s (the launcher reports finelog@sha256:" in outcome.reason


def test_a_failed_operation_restores_the_source():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        srv.faults = ["op-error"]
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, FailedRestored)
        assert "the instances.setMetadata operation failed" in outcome.reason and "Metadata update failed" in outcome.reason
        assert vm.items["clusterstack-image"] == IMG % 2


def test_a_lost_response_whose_write_landed_carries_on():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        srv.faults = ["apply-drop"]
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, RolledBack)
        assert any(line.startswith("activation response lost") for line in outcome.log)
        assert "re-read: target" in outcome.log and vm.running == IMG % 1


def test_a_lost_response_that_changed_nothing_is_uncertain():
    with FakeGcp() as srv:
        vm = world(srv, [(1, "healthy"), (2, "healthy")], serving=2)
        srv.faults = ["drop"]
        b = backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, ActivationUncertain) and outcome.exit_code == 1
        assert outcome.observed == "source" and vm.items["clusterstack-image"] == IMG % 2


# --- the restart activation (a startup script that reads the key at boot: Marin's Loom) ---------

def loom(srv: FakeGcp):
    # infra/loom/infrastructure.py@002b940b: the image in metadata "loom-image"; readiness
    # https://<domain>/api/ready answers {"status": "ready"} (marin_deploy/loom.py@52e58bb8)
    return srv.add_vm(PROJECT, ZONE, "loom", image=IMG % 2, image_key="loom-image", activation="restart",
                      items={REVISIONS_KEY: record((1, "healthy"), (2, "healthy"))})


def loom_backend(srv: FakeGcp) -> GceVmBackend:
    api = GoogleCompute(GcpClients(api_endpoint=srv.url, credentials=AnonymousCredentials()), timeout=10)
    return GceVmBackend("loom", api, target=GceVmTarget(project=PROJECT, zone=ZONE, instance="loom",
                                                        image_key="loom-image", activation="restart"),
                        http=HttpCheck(url=f"{srv.url}/vm/loom/api/ready", expect_json={"status": "ready"}))


def test_restart_activation_stops_and_starts_the_vm_and_checks_readiness():
    with FakeGcp() as srv:
        vm = loom(srv)
        b = loom_backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, RolledBack)
        posts = [p.rsplit("/", 1)[-1] for m, p in srv.requests if m == "POST" and "/instances/" in p]
        assert posts[:3] == ["setMetadata", "stop", "start"]
        assert vm.running == IMG % 1 and vm.instance["status"] == "RUNNING"
        assert not any("getGuestAttributes" in p for _, p in srv.requests)
        assert f"revision 1 is healthy (GET {srv.url}/vm/loom/api/ready: 200)" in outcome.log


def test_restart_activation_not_ready_is_restored():
    with FakeGcp() as srv:
        vm = loom(srv)
        vm.broken = {IMG % 1}
        b = loom_backend(srv)
        outcome = execute(b, plan_rollback(b), timing())
        assert isinstance(outcome, FailedRestored)
        assert "body has status='starting', expected status='ready'" in outcome.reason
        assert vm.running == IMG % 2


# --- reading ----------------------------------------------------------------------------------

def test_a_refused_read_is_no_credentials_exit_2_nothing_changed():
    with FakeGcp() as srv:
        world(srv, [(1, "healthy")], serving=1)
        srv.failures[f"/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances/{VM}"] = (
            403, google_error(403, "Required 'compute.instances.get' permission", "forbidden"))
        with pytest.raises(CredentialsUnavailable) as exc:
            backend(srv).snapshot()
        assert srv.writes() == []
    assert exc.value.exit_code == 2 and "roles/compute.viewer" in exc.value.render()


def test_a_record_that_is_not_clusterstacks_is_refused_with_the_key():
    with FakeGcp() as srv:
        srv.add_vm(PROJECT, ZONE, VM, image=IMG % 1, items={REVISIONS_KEY: "{not json"})
        with pytest.raises(Exception, match=f"metadata {REVISIONS_KEY} is not clusterstack's record"):
            backend(srv).snapshot()


def test_the_watch_poll_is_no_faster_than_guest_attributes_allow(tmp_path):
    from clusterstack.deploy.service import Service
    from fakes.clients import fake_clients
    from helpers import git

    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "Pulumi.yaml").write_text("name: svc\nruntime: python\n")
    (tmp_path / "svc" / "Pulumi.prod.yaml").write_text("config: {}\n")
    (tmp_path / "clusterstack.toml").write_text('[workspace]\nproject_dir = "svc"\n')
    (tmp_path / "services.yaml").write_text(
        "services:\n  vm:\n    project_dir: svc\n    stack: prod\n    kind: gce-vm\n"
        "    gce_vm: {project: demo-project, zone: us-central1-a, instance: vm}\n"
        "    health: {poll_seconds: 1}\n")
    git(tmp_path, "init", "-q")
    from clusterstack.workspace import Workspace

    svc = Service(Workspace.load(tmp_path), "vm", clients=fake_clients())
    assert svc.timing().interval == GUEST_POLL_MIN_S == 6.0
