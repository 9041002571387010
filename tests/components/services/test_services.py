"""Service components under Pulumi mocks (clusterstack.plan.run_program with the capturing
MockMonitor): no secret value in any input, probes and Recreate, revision history 10, IAP
bindings, the protected PVC, CommandService's re-run inputs — and the two example service
projects planned offline."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from clusterstack.components.services import marks
from clusterstack.components.services.cloudrun import (CloudRunService, CloudRunServiceArgs, SecretEnv,
                                                       iap_member)
from clusterstack.components.services.command import (SOURCE_DIGEST_ENV, CommandService, CommandServiceArgs,
                                                      canonical_spec, parse_outputs, source_digest,
                                                      tracked_files)
from clusterstack.components.services.kubernetes import (KubernetesService, KubernetesServiceArgs,
                                                         VolumeSpec)
from clusterstack.plan import StackPlan, dumps, plan_stack, run_program
from clusterstack.plan.model import PlannedResource
from clusterstack.pulumi.values import SECRET

PROJECT, STACK = "unit", "test"
ROOT = f"urn:pulumi:{STACK}::{PROJECT}::"
DIGEST = "sha256:" + "ab" * 32
IMAGE = f"us-central1-docker.pkg.dev/p/apps/echo@{DIGEST}"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = Path(__file__).resolve().parents[3]


def run(program) -> StackPlan:
    return run_program(PROJECT, STACK, {}, program)


def of_type(plan: StackPlan, type_: str) -> dict[str, PlannedResource]:
    return {r.name: r for r in plan.resources if r.type == type_}


def one(plan: StackPlan, type_: str) -> PlannedResource:
    (r,) = of_type(plan, type_).values()
    return r


def assert_child(r: PlannedResource, component_type: str, name: str, provider: str | None) -> None:
    assert r.custom and r.parent == f"{ROOT}{component_type}::{name}"
    assert r.provider == provider


# --- CloudRunService ------------------------------------------------------------------------

CR = "clusterstack:services:CloudRunService"
GCP_PROVIDER = f"{ROOT}pulumi:providers:gcp::gcp"


def cr_args(**kw) -> CloudRunServiceArgs:
    base = dict(project="demo-project", project_number="123456789012", region="us-central1",
                service_name="echo", image=IMAGE, runtime_account_id="echo-runtime",
                env=(("LOG_LEVEL", "info"),),
                secret_env=(SecretEnv("API_TOKEN", "echo-api-token"), SecretEnv("DB_PASSWORD", "db-pass", "3")),
                min_instances=1, max_instances=4,
                iap_access=("group:Ops@Example.org", "*@example.org", "group:sre@example.org"),
                source_revision=COMMIT, change_cause="bump echo")
    base.update(kw)
    return CloudRunServiceArgs(**base)


@pytest.fixture(scope="module")
def cloudrun_plan() -> StackPlan:
    return run(lambda: CloudRunService("echo", cr_args(),
                                       provider=gcp.Provider("gcp", project="demo-project")))


def test_cloudrun_service_is_iap_gated_and_pins_the_image(cloudrun_plan):
    svc = one(cloudrun_plan, "gcp:cloudrunv2/service:Service")
    assert_child(svc, CR, "echo", GCP_PROVIDER)
    i = svc.inputs
    assert i["iapEnabled"] is True and i["launchStage"] == "BETA"
    assert i["name"] == "echo" and i["location"] == "us-central1" and i["project"] == "demo-project"
    t = i["template"]
    assert t["serviceAccount"] == "echo-runtime@demo-project.iam.gserviceaccount.com"
    assert t["scaling"] == {"minInstanceCount": 1, "maxInstanceCount": 4}
    (c,) = t["containers"]
    assert c["image"] == IMAGE
    assert c["startupProbe"]["httpGet"]["path"] == c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert t["annotations"] == {marks.SOURCE_REVISION: COMMIT, marks.CLOUD_RUN_CHANGE_CAUSE: "bump echo"}
    # traffic follows the latest ready revision; older revisions stay retained for rollback
    assert i["traffics"] == [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}]
    assert svc.adopt_id == "projects/demo-project/locations/us-central1/services/echo"


def test_cloudrun_secret_env_is_a_reference_and_no_input_holds_a_secret(cloudrun_plan):
    svc = one(cloudrun_plan, "gcp:cloudrunv2/service:Service")
    envs = {e["name"]: e for e in svc.inputs["template"]["containers"][0]["envs"]}
    assert envs["LOG_LEVEL"] == {"name": "LOG_LEVEL", "value": "info"}
    assert envs["API_TOKEN"] == {"name": "API_TOKEN",
                                 "valueSource": {"secretKeyRef": {"secret": "echo-api-token", "version": "latest"}}}
    assert envs["DB_PASSWORD"]["valueSource"]["secretKeyRef"] == {"secret": "db-pass", "version": "3"}
    assert "value" not in envs["API_TOKEN"] and "value" not in envs["DB_PASSWORD"]
    # nothing secret reached Pulumi at all: no input anywhere is a secret Output
    assert SECRET not in dumps([cloudrun_plan])
    # the runtime SA may read exactly the referenced secrets
    grants = of_type(cloudrun_plan, "gcp:secretmanager/secretIamMember:SecretIamMember")
    assert {g.inputs["secretId"]: (g.inputs["role"], g.inputs["member"]) for g in grants.values()} == {
        s: ("roles/secretmanager.secretAccessor", "serviceAccount:echo-runtime@demo-project.iam.gserviceaccount.com")
        for s in ("db-pass", "echo-api-token")}
    assert set(svc.dependencies) >= {g.urn for g in grants.values()}  # no revision before its access


def test_cloudrun_iap_invoker_and_access_grants(cloudrun_plan):
    inv = one(cloudrun_plan, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
    assert_child(inv, CR, "echo", GCP_PROVIDER)
    assert inv.inputs["role"] == "roles/run.invoker"
    assert inv.inputs["member"] == "serviceAccount:service-123456789012@gcp-sa-iap.iam.gserviceaccount.com"
    assert inv.adopt_id == ("projects/demo-project/locations/us-central1/services/echo roles/run.invoker "
                            "serviceAccount:service-123456789012@gcp-sa-iap.iam.gserviceaccount.com")
    grants = of_type(cloudrun_plan, "gcp:iap/webCloudRunServiceIamMember:WebCloudRunServiceIamMember")
    assert {g.inputs["member"] for g in grants.values()} == {
        "group:ops@example.org", "domain:example.org", "group:sre@example.org"}
    for g in grants.values():
        assert g.inputs["role"] == "roles/iap.httpsResourceAccessor"
        assert g.inputs["cloudRunServiceName"] == "echo"
        assert g.adopt_id == (f"projects/demo-project/iap_web/cloud_run-us-central1/services/echo "
                              f"roles/iap.httpsResourceAccessor {g.inputs['member']}")
    sa = one(cloudrun_plan, "gcp:serviceaccount/account:Account")
    assert sa.inputs["accountId"] == "echo-runtime"
    assert sa.adopt_id == "projects/demo-project/serviceAccounts/echo-runtime@demo-project.iam.gserviceaccount.com"


@pytest.mark.parametrize("given, member", [
    ("group:ML-Team@Example.ORG", "group:ml-team@example.org"),
    ("*@example.org", "domain:example.org"),
    ("group:ml-team@example.org", "group:ml-team@example.org"),
    ("serviceAccount:ci@p.iam.gserviceaccount.com", "serviceAccount:ci@p.iam.gserviceaccount.com"),
    ("domain:example.org", "domain:example.org"),
])
def test_iap_member_normalisation(given, member):
    assert iap_member(given) == member


@pytest.mark.parametrize("bad", ["alice", "*@", "user:not-an-email", "allUsers", "domain:*.org", "@example.org",
                                 "alice@example.org", "user:alice@example.org", "User:bob.smith@" "gmail.com"])
def test_iap_member_rejects_what_iam_would(bad):
    with pytest.raises(ValueError):
        iap_member(bad)


@pytest.mark.parametrize("kw, message", [
    ({"image": "us-docker.pkg.dev/p/apps/echo:latest"}, "not pinned by digest"),
    ({"image": "echo@sha256:abc"}, "not pinned by digest"),
    ({"min_instances": 5, "max_instances": 2}, "instances"),
    ({"env": (("API_TOKEN", "x"),)}, "set twice"),
    ({"env": (("1BAD", "x"),)}, "invalid environment variable"),
    ({"iap_access": ("group:a.b@example.org", "group:a-b@example.org")}, "same resource name"),
    ({"iap_access": ("bob.smith@" "gmail.com",)}, "personal email is not allowed"),
])
def test_cloudrun_args_refuse(kw, message):
    with pytest.raises(ValueError, match=message):
        cr_args(**kw)


# --- KubernetesService ----------------------------------------------------------------------

KS = "clusterstack:services:KubernetesService"
K8S_PROVIDER = f"{ROOT}pulumi:providers:kubernetes::k8s"


def ks_args(**kw) -> KubernetesServiceArgs:
    base = dict(namespace="logging", name="logrelay", image=f"ghcr.io/lab/logrelay@{DIGEST}", port=8080,
                env_secret="logrelay-env", env=(("RETENTION_DAYS", "14"),), args=("--listen=:8080",),
                volume=VolumeSpec(size="200Gi", mount_path="/var/lib/logrelay", storage_class="fast"),
                source_revision=COMMIT, change_cause="relay 1.4")
    base.update(kw)
    return KubernetesServiceArgs(**base)


def k8s_plan(args: KubernetesServiceArgs) -> StackPlan:
    return run(lambda: KubernetesService("logrelay", args,
                                         provider=k8s.Provider("k8s", context="ctx", kubeconfig="")))


@pytest.fixture(scope="module")
def relay_plan() -> StackPlan:
    return k8s_plan(ks_args())


def test_deployment_is_a_single_writer_with_history_and_probes(relay_plan):
    dep = one(relay_plan, "kubernetes:apps/v1:Deployment")
    assert_child(dep, KS, "logrelay", K8S_PROVIDER)
    spec = dep.inputs["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    assert spec["revisionHistoryLimit"] == 10
    (c,) = spec["template"]["spec"]["containers"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    # the startup probe gives the server minutes; liveness cannot kill it before it is up
    assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] >= 300
    assert c["ports"] == [{"name": "http", "containerPort": 8080}]
    assert c["image"] == f"ghcr.io/lab/logrelay@{DIGEST}"
    assert spec["template"]["metadata"]["annotations"] == {marks.SOURCE_REVISION: COMMIT}
    assert dep.inputs["metadata"]["annotations"] == {marks.CHANGE_CAUSE: "relay 1.4"}
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert dep.adopt_id == "logging/logrelay"


def test_secrets_come_from_an_existing_secret_and_no_input_holds_a_value(relay_plan):
    dep = one(relay_plan, "kubernetes:apps/v1:Deployment")
    (c,) = dep.inputs["spec"]["template"]["spec"]["containers"]
    assert c["envFrom"] == [{"secretRef": {"name": "logrelay-env"}}]
    assert c["env"] == [{"name": "RETENTION_DAYS", "value": "14"}]
    assert SECRET not in dumps([relay_plan])
    assert not of_type(relay_plan, "kubernetes:core/v1:Secret")  # the component never makes one


def test_pvc_is_protected_and_mounted(relay_plan):
    pvc = one(relay_plan, "kubernetes:core/v1:PersistentVolumeClaim")
    assert_child(pvc, KS, "logrelay", K8S_PROVIDER)
    assert pvc.protect is True
    assert pvc.inputs["spec"] == {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                  "resources": {"requests": {"storage": "200Gi"}}}
    dep = one(relay_plan, "kubernetes:apps/v1:Deployment")
    assert pvc.urn in dep.dependencies
    pod = dep.inputs["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "logrelay-data"}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/var/lib/logrelay"}]
    assert not dep.protect  # the Deployment itself rolls; only the data is protected


def test_cluster_ip_service(relay_plan):
    svc = one(relay_plan, "kubernetes:core/v1:Service")
    assert svc.inputs["spec"] == {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": "logrelay"},
                                  "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}


def test_no_volume_no_pvc_and_unreleased_source():
    plan = k8s_plan(ks_args(volume=None, env_secret=None, source_revision=marks.UNRELEASED, change_cause=""))
    assert not of_type(plan, "kubernetes:core/v1:PersistentVolumeClaim")
    dep = one(plan, "kubernetes:apps/v1:Deployment")
    assert dep.inputs["spec"]["template"]["metadata"]["annotations"] == {marks.SOURCE_REVISION: "unreleased"}
    assert dep.inputs["spec"]["template"]["spec"]["containers"][0]["envFrom"] == []


@pytest.mark.parametrize("kw, message", [({"image": "ghcr.io/lab/logrelay:1.4"}, "digest"),
                                          ({"name": "Log_Relay"}, "DNS label"),
                                          ({"port": 0}, "port"), ({"health_path": "healthz"}, "healthPath")])
def test_kubernetes_args_refuse(kw, message):
    with pytest.raises(ValueError, match=message):
        ks_args(**kw)


# --- CommandService -------------------------------------------------------------------------

def test_command_service_reruns_on_spec_or_source_change_and_carries_no_secret():
    spec = canonical_spec({"replicas": 2, "name": "nightly-eval", "args": ["--full"]})
    args = CommandServiceArgs(deploy_command=("sched", "deploy", "--spec", "-"), spec=spec,
                              source_sha256="c" * 64, delete_command=("sched", "delete", "nightly-eval"),
                              environment=(("SCHED_REGION", "us-east"),))
    plan = run(lambda: CommandService("nightly-eval", args))
    cmd = one(plan, "command:local:Command")
    assert cmd.parent == f"{ROOT}clusterstack:services:CommandService::nightly-eval"
    assert cmd.inputs["create"] == cmd.inputs["update"] == "sched deploy --spec -"
    assert cmd.inputs["delete"] == "sched delete nightly-eval"
    assert cmd.inputs["stdin"] == '{"args":["--full"],"name":"nightly-eval","replicas":2}'
    assert cmd.inputs["environment"] == {"SCHED_REGION": "us-east", SOURCE_DIGEST_ENV: "c" * 64}
    assert cmd.inputs["addPreviousOutputInEnv"] is False
    assert SECRET not in dumps([plan])


def test_canonical_spec_ignores_key_order_and_formatting():
    assert canonical_spec({"b": 1, "a": {"y": [1, 2], "x": "é"}}) == canonical_spec(
        json.loads('{ "a": {"x": "é", "y": [1, 2]},\n "b": 1 }')) == '{"a":{"x":"é","y":[1,2]},"b":1}'
    with pytest.raises(ValueError, match="canonical"):
        CommandServiceArgs(deploy_command=("x",), spec='{"b": 1, "a": 2}', source_sha256="0" * 64)
    for spec in ('{"a":NaN}', '{"a":' + "9" * 5000 + "}", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ValueError, match="canonical"):  # past the one reader's limits
            CommandServiceArgs(deploy_command=("x",), spec=spec, source_sha256="0" * 64)


def test_source_digest_tracks_content_names_and_git_tracking(tmp_path):
    d = tmp_path / "job"
    (d / "pkg").mkdir(parents=True)
    (d / "main.py").write_text("print('v1')\n")
    (d / "pkg" / "util.py").write_text("X = 1\n")
    (d / "scratch.log").write_text("not tracked\n")
    subprocess.run(["git", "init", "-q"], cwd=d, check=True)
    subprocess.run(["git", "add", "main.py", "pkg/util.py"], cwd=d, check=True)
    files = tracked_files(d)
    assert [f.relative_to(d).as_posix() for f in files] == ["main.py", "pkg/util.py"]
    first = source_digest(files, d)
    # the sha256sum-style manifest, hashed — computed here independently
    manifest = "".join(sorted(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(d).as_posix()}\n"
                              for f in files))
    assert first == hashlib.sha256(manifest.encode()).hexdigest()
    assert source_digest(reversed(files), d) == first          # order-independent
    (d / "scratch.log").write_text("changed, still untracked\n")
    assert source_digest(tracked_files(d), d) == first         # untracked files never count
    (d / "main.py").write_text("print('v2')\n")
    assert source_digest(tracked_files(d), d) != first         # an edit re-deploys
    (d / "main.py").write_text("print('v1')\n")
    subprocess.run(["git", "mv", "pkg/util.py", "pkg/helpers.py"], cwd=d, check=True)
    assert source_digest(tracked_files(d), d) != first         # so does a rename


@pytest.mark.parametrize("stdout, expected", [
    ('{"job_id": "j-42", "url": "https://sched/j-42"}\n', {"job_id": "j-42", "url": "https://sched/j-42"}),
    ('  \n{"a": 1}\n\n', {"a": 1}),
    (None, {}),
])
def test_parse_outputs_accepts_one_json_object(stdout, expected):
    assert parse_outputs(stdout) == expected


@pytest.mark.parametrize("stdout, message", [
    ("", "printed nothing"),
    ('{"a": 1}\n{"b": 2}\n', "not a single JSON document"),
    ("deploying...\n{\"a\": 1}", "not a single JSON document"),
    ("[1, 2]", "not an object"),
    ('{"replicas": ' + "9" * 5000 + "}", "does not accept: integer 999999999999… is out of range"),
    ('{"score": NaN}', "does not accept: NaN is not a JSON number"),
    ('{"score": -Infinity}', "does not accept: -Infinity is not a JSON number"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"job_id": "j-42"', "not a single JSON document"),
])
def test_parse_outputs_refuses_anything_else(stdout, message):
    with pytest.raises(ValueError, match=message):
        parse_outputs(stdout)


# --- the example service projects, planned offline ------------------------------------------

@pytest.mark.parametrize("project, stack", [("services/echo", "prod"), ("services/logrelay", "cw-demo-h100")])
def test_example_services_plan_offline_with_import_ids_and_no_secret(project, stack):
    plan = plan_stack(REPO / project, stack)
    assert SECRET not in dumps([plan])
    custom = [r for r in plan.resources if r.custom and not r.type.startswith("pulumi:providers:")]
    assert custom and all(r.adopt_id for r in custom), [r.urn for r in custom if not r.adopt_id]
    if project.endswith("logrelay"):
        dep = one(plan, "kubernetes:apps/v1:Deployment")
        provider = one(plan, "pulumi:providers:kubernetes")
        # the kube context comes from the reviewed cluster config, not from the service
        assert provider.inputs["context"] == "demo-h100_US-EAST-04A"
        assert dep.inputs["spec"]["strategy"] == {"type": "Recreate"}
        assert one(plan, "kubernetes:core/v1:PersistentVolumeClaim").protect
    else:
        svc = one(plan, "gcp:cloudrunv2/service:Service")
        assert svc.inputs["template"]["annotations"] == {marks.SOURCE_REVISION: marks.UNRELEASED}


@pytest.mark.parametrize("who", ["bob.smith@" "gmail.com", "user:bob.smith@" "gmail.com"])
def test_iap_member_refuses_a_person_without_echoing_the_email(who):
    """A person in the IAP list would be stored in logical names and state; the error (which
    ends up in CI logs) shows the address redacted."""
    with pytest.raises(ValueError, match="personal email is not allowed") as ei:
        iap_member(who)
    assert "bob.smith" not in str(ei.value) and "b***@gmail.com" in str(ei.value)
