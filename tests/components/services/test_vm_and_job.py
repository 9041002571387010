"""GceVmService and CloudRunJob under Pulumi mocks (clusterstack.plan.run_program): the VM's
metadata (the launcher, the image key, provenance, guest attributes on, the revision record left
to ``deploy``), protect and import ids; the job's template with its provenance, secrets by
reference, the Cloud SQL connector, the scheduler trigger and the one grant its stack owns —
and Marin's GCE Finelog project (examples/marin/infra/finelog-gce) planned offline."""

from __future__ import annotations

import runpy
from pathlib import Path

import pulumi_gcp as gcp
import pytest

from clusterstack.components.services import marks
from clusterstack.components.services.cloudrun import SecretEnv
from clusterstack.components.services.cloudrunjob import CloudRunJob, CloudRunJobArgs
from clusterstack.components.services.gce import GceVmService, GceVmServiceArgs, launcher_script
from clusterstack.plan import StackPlan, dumps, run_program
from clusterstack.plan.runtime import ProjectInfo
from clusterstack.pulumi.values import SECRET

ROOT = "urn:pulumi:test::unit::"
IMAGE = "us-central1-docker.pkg.dev/p/apps/finelog@sha256:" + "ab" * 32
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = Path(__file__).resolve().parents[3]


def run(program) -> StackPlan:
    return run_program("unit", "test", {}, program)


def of_type(plan: StackPlan, type_: str):
    return [r for r in plan.resources if r.type == type_]


def vm_args(**kw) -> GceVmServiceArgs:
    base = dict(project="demo-project", zone="us-central1-a", instance_name="finelog", image=IMAGE,
                runtime_account_id="finelog-vm", port=10001, health_path="/health",
                env=(("RUST_LOG", "info"),), source_revision=COMMIT, change_cause="finelog 1.4")
    base.update(kw)
    return GceVmServiceArgs(**base)


@pytest.fixture(scope="module")
def vm_plan() -> StackPlan:
    return run(lambda: GceVmService("finelog", vm_args(), provider=gcp.Provider("gcp", project="demo-project")))


def test_the_vm_names_its_image_and_provenance_in_metadata(vm_plan):
    (vm,) = of_type(vm_plan, "gcp:compute/instance:Instance")
    md = vm.inputs["metadata"]
    assert md[marks.GCE_IMAGE_KEY] == IMAGE
    assert md[marks.GCE_SOURCE_REVISION_KEY] == COMMIT and md[marks.GCE_CHANGE_CAUSE_KEY] == "finelog 1.4"
    assert md["enable-guest-attributes"] == "TRUE"
    assert md["startup-script"] == launcher_script(port=10001, health_path="/health", env=(("RUST_LOG", "info"),))
    # the record is deploy's: never declared, and kept across updates
    assert marks.GCE_REVISIONS_KEY not in md
    assert vm.ignore_changes == (f'metadata["{marks.GCE_REVISIONS_KEY}"]',)
    assert vm.protect and vm.adopt_id == "projects/demo-project/zones/us-central1-a/instances/finelog"
    assert vm.inputs["serviceAccount"] == {"email": "finelog-vm@demo-project.iam.gserviceaccount.com",
                                           "scopes": ["cloud-platform"]}
    assert vm.inputs["bootDisk"]["autoDelete"] is False
    (sa,) = of_type(vm_plan, "gcp:serviceaccount/account:Account")
    assert sa.urn in vm.dependencies


def test_the_launcher_watches_the_key_and_reports_in_guest_attributes():
    script = launcher_script(port=10001, health_path="/health", env=(("A", "x y"),))
    assert f"attributes/{marks.GCE_IMAGE_KEY}?wait_for_change=true&last_etag=$etag" in script
    assert f"guest-attributes/{marks.GUEST_NAMESPACE}/$1" in script
    assert "report image \"$image\"" in script and "report health \"$verdict\"" in script
    assert "http://127.0.0.1:10001/health" in script and "--env 'A=x y'" in script
    assert launcher_script(port=10001, health_path="/health", env=(("A", "x y"),)) == script   # deterministic


@pytest.mark.parametrize("kw, message", [({"image": "ghcr.io/x/finelog:latest"}, "not pinned by digest"),
                                         ({"instance_name": "Finelog_1"}, "RFC 1035"),
                                         ({"env": (("1BAD", "x"),)}, "invalid environment variable"),
                                         ({"health_path": "health"}, "must start with /")])
def test_vm_args_refuse(kw, message):
    with pytest.raises(ValueError, match=message):
        vm_args(**kw)


def test_an_existing_account_is_used_not_created():
    plan = run(lambda: GceVmService("finelog", vm_args(), provider=gcp.Provider("gcp", project="demo-project"),
                                    create_account=False))
    assert of_type(plan, "gcp:serviceaccount/account:Account") == []


def job_args(**kw) -> CloudRunJobArgs:
    base = dict(project="demo-project", region="us-central1", job_name="echo-sync", image=IMAGE,
                runtime_account_id="echo-sync", env=(("PGDATABASE", "context"),),
                secret_env=(SecretEnv("MARINMIRROR_TOKEN", "marinmirror-token"),), cpu="4", memory="4Gi",
                timeout_seconds=7200, max_retries=0, cloudsql_instances=("demo-project:us-central1:metadata",),
                schedule="*/10 * * * *", source_revision=COMMIT, change_cause="sync 2.0")
    base.update(kw)
    return CloudRunJobArgs(**base)


@pytest.fixture(scope="module")
def job_plan() -> StackPlan:
    return run(lambda: CloudRunJob("sync", job_args(), provider=gcp.Provider("gcp", project="demo-project")))


def test_the_job_template_carries_its_provenance_and_references_its_secrets(job_plan):
    (job,) = of_type(job_plan, "gcp:cloudrunv2/job:Job")
    task = job.inputs["template"]["template"]
    assert task["timeout"] == "7200s" and task["maxRetries"] == 0
    assert task["serviceAccount"] == "echo-sync@demo-project.iam.gserviceaccount.com"
    (c,) = task["containers"]
    env = {e["name"]: e for e in c["envs"]}
    assert env[marks.JOB_SOURCE_REVISION_ENV]["value"] == COMMIT
    assert env[marks.JOB_CHANGE_CAUSE_ENV]["value"] == "sync 2.0"
    assert env["MARINMIRROR_TOKEN"] == {"name": "MARINMIRROR_TOKEN", "valueSource": {
        "secretKeyRef": {"secret": "marinmirror-token", "version": "latest"}}}
    assert task["volumes"] == [{"name": "cloudsql", "cloudSqlInstance": {"instances": ["demo-project:us-central1:metadata"]}}]
    assert c["volumeMounts"] == [{"name": "cloudsql", "mountPath": "/cloudsql"}]
    assert SECRET not in dumps([job_plan])
    assert job.adopt_id == "projects/demo-project/locations/us-central1/jobs/echo-sync"


def test_the_trigger_runs_the_job_as_its_account_which_this_stack_grants_invoker(job_plan):
    (trigger,) = of_type(job_plan, "gcp:cloudscheduler/job:Job")
    assert trigger.inputs["schedule"] == "*/10 * * * *"
    assert trigger.inputs["httpTarget"] == {
        "httpMethod": "POST",
        "uri": "https://run.googleapis.com/v2/projects/demo-project/locations/us-central1/jobs/echo-sync:run",
        "oauthToken": {"serviceAccountEmail": "echo-sync@demo-project.iam.gserviceaccount.com"}}
    (inv,) = of_type(job_plan, "gcp:cloudrunv2/jobIamMember:JobIamMember")
    assert (inv.inputs["role"], inv.inputs["member"]) == (
        "roles/run.invoker", "serviceAccount:echo-sync@demo-project.iam.gserviceaccount.com")


def test_no_schedule_no_trigger_and_no_grant():
    plan = run(lambda: CloudRunJob("sync", job_args(schedule=""), provider=gcp.Provider("gcp", project="demo-project")))
    assert of_type(plan, "gcp:cloudscheduler/job:Job") == of_type(plan, "gcp:cloudrunv2/jobIamMember:JobIamMember") == []


@pytest.mark.parametrize("kw, message", [({"env": ((marks.JOB_SOURCE_REVISION_ENV, "x"),)}, "set by clusterstack"),
                                         ({"cloudsql_instances": ("metadata",)}, "project:region:instance"),
                                         ({"image": "ghcr.io/x/y:1"}, "not pinned by digest")])
def test_job_args_refuse(kw, message):
    with pytest.raises(ValueError, match=message):
        job_args(**kw)


def test_marins_gce_finelog_project_plans_offline_with_the_values_of_its_config():
    project = REPO / "examples" / "marin" / "infra" / "finelog-gce"
    info = ProjectInfo.load(project, program=True)
    config = {**info.stack_config("marin"), "finelog-gce:image": IMAGE}
    plan = run_program(info.name, "marin", config, lambda: runpy.run_path(str(info.main), run_name="__main__"))
    (vm,) = of_type(plan, "gcp:compute/instance:Instance")
    # lib/finelog/config/marin.yaml@032da538: deployment.gcp and name/port
    assert (vm.inputs["project"], vm.inputs["zone"], vm.inputs["name"], vm.inputs["machineType"]) == (
        "hai-gcp-models", "us-central1-a", "finelog-marin", "n2-highmem-4")
    assert vm.inputs["bootDisk"]["initializeParams"]["size"] == 200
    assert vm.inputs["serviceAccount"]["email"] == "iris-controller@hai-gcp-models.iam.gserviceaccount.com"
    assert "http://127.0.0.1:10001/health" in vm.inputs["metadata"]["startup-script"]
    assert of_type(plan, "gcp:serviceaccount/account:Account") == []   # Marin's account, not claimed here
