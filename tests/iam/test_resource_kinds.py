"""The resource kinds the IAM file holds for Marin's IAM beyond the first seven: KMS key rings,
Cloud Run services and jobs, IAP on Cloud Run; and custom-role stages. Each grant is planned
with the pulumi-gcp resource and inputs Marin's ``infra/pulumi/src/iac/gcp/iam.py`` @ 0fe5f595
declares (``_grant_cloud_run_service_iam``, ``_grant_cloud_run_job_iam``), additive by default
and as the ``…IamBinding`` when a role is authoritative."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest

from helpers import iam_file_head
from clusterstack.components.gcp.iam import IamBindings, binding_import_id, member_import_id
from clusterstack.errors import ClusterstackError
from clusterstack.iam import ops
from clusterstack.iam.canonical import canonical_text
from clusterstack.iam.crypto import PrincipalCipher
from clusterstack.iam.loader import IamFileError, load_iam, load_iam_text, parse_document
from clusterstack.iam.settings import DOC_DOMAINS, IamSettings
from clusterstack.iam.targets import Target, parse_target
from clusterstack.plan import run_program
from clusterstack.programs.iam import iam_args
from clusterstack.pulumi import tokens

P = "demo-project"
RING = f"projects/{P}/locations/us-central1/keyRings/ring"
AGENT = "serviceAccount:service-123456789012@gcp-sa-iap.iam.gserviceaccount.com"
SA = f"serviceAccount:ci@{P}.iam.gserviceaccount.com"


def text(principals: dict[str, str]) -> str:
    return iam_file_head(P, principals) + f"""\
custom_roles:
  - role_id: runViewer
    title: Run viewer
    permissions: [run.services.get]
    stage: BETA
kms_key_rings:
  - key_ring: {RING}
    grants:
      - role: roles/cloudkms.viewer
        members: [human-001]
cloud_run_services:
  - location: us-central1
    name: grafana
    grants:
      - role: roles/run.invoker
        members: [{AGENT}]
      - role: projects/{P}/roles/runViewer
        authoritative: true
        members: [{SA}]
cloud_run_jobs:
  - location: us-central1
    name: echo-sync
    grants:
      - role: roles/run.invoker
        members: [{SA}]
        condition: {{title: until 2027, expression: 'request.time < timestamp("2027-01-01T00:00:00Z")'}}
iap_cloud_run_services:
  - location: us-central1
    name: grafana
    grants:
      - role: roles/iap.httpsResourceAccessor
        members: [human-001, domain:example.org]
"""


@pytest.fixture(scope="module")
def loaded():
    c = PrincipalCipher.generate()
    return load_iam_text(text({"human-001": c.encrypt("ada@example.org")}), Path("iam.yaml"))


@pytest.fixture(scope="module")
def plan(loaded):
    def program():
        IamBindings("iam", iam_args(loaded, {"human-001": pulumi.Output.secret("user:ada@example.org")}),
                    provider=gcp.Provider("gcp", project=P))

    return {r.name: r for r in run_program("clusterstack", "gcp-demo", {}, program).resources}


def test_each_kind_is_planned_with_marins_resource_and_inputs(plan):
    cond = {"title": "until 2027", "expression": 'request.time < timestamp("2027-01-01T00:00:00Z")'}
    want = {
        "keyring-us-central1-ring-cloudkms-viewer-human-001": (
            tokens.KMS_KEY_RING_IAM_MEMBER, {"keyRingId": RING, "role": "roles/cloudkms.viewer", "member": "[secret]"}),
        "run-us-central1-grafana-run-invoker-serviceaccount-service-123456789012-gcp-sa-iap-iam-gserviceaccount-com": (
            tokens.CLOUD_RUN_SERVICE_IAM_MEMBER,
            {"project": P, "location": "us-central1", "name": "grafana", "role": "roles/run.invoker", "member": AGENT}),
        "run-us-central1-grafana-custom-runviewer": (
            tokens.CLOUD_RUN_SERVICE_IAM_BINDING,
            {"project": P, "location": "us-central1", "name": "grafana", "role": f"projects/{P}/roles/runViewer",
             "members": [SA]}),
        "run-job-us-central1-echo-sync-run-invoker-until-2027-sa-ci": (
            tokens.CLOUD_RUN_JOB_IAM_MEMBER,
            {"project": P, "location": "us-central1", "name": "echo-sync", "role": "roles/run.invoker",
             "member": SA, "condition": cond}),
        "iap-run-us-central1-grafana-iap-httpsresourceaccessor-human-001": (
            tokens.IAP_CLOUD_RUN_IAM_MEMBER,
            {"project": P, "location": "us-central1", "cloudRunServiceName": "grafana",
             "role": "roles/iap.httpsResourceAccessor", "member": "[secret]"}),
        "iap-run-us-central1-grafana-iap-httpsresourceaccessor-domain-example-org": (
            tokens.IAP_CLOUD_RUN_IAM_MEMBER,
            {"project": P, "location": "us-central1", "cloudRunServiceName": "grafana",
             "role": "roles/iap.httpsResourceAccessor", "member": "domain:example.org"}),
    }
    got = {n: (r.type, r.inputs) for n, r in plan.items() if r.custom and ("Member" in r.type or "Binding" in r.type)}
    assert got == want


def test_custom_role_stage(plan):
    assert plan["runViewer"].inputs["stage"] == "BETA"


def test_import_ids_are_marins(loaded):
    ids = {**{b.member_name(m): member_import_id(b, m) for b in loaded.bindings() if not b.authoritative
              for m in b.members},
           **{b.logical_name: binding_import_id(b) for b in loaded.bindings() if b.authoritative}}
    run = f"projects/{P}/locations/us-central1/services/grafana"
    iap = f"projects/{P}/iap_web/cloud_run-us-central1/services/grafana"
    assert ids == {
        "keyring-us-central1-ring-cloudkms-viewer-human-001": f"{RING} roles/cloudkms.viewer user:<email>",
        "run-us-central1-grafana-run-invoker-serviceaccount-service-123456789012-gcp-sa-iap-iam-gserviceaccount-com":
            f"{run} roles/run.invoker {AGENT}",
        "run-us-central1-grafana-custom-runviewer": f"{run} projects/{P}/roles/runViewer",
        "run-job-us-central1-echo-sync-run-invoker-until-2027-sa-ci":
            f"projects/{P}/locations/us-central1/jobs/echo-sync roles/run.invoker {SA} until 2027",
        "iap-run-us-central1-grafana-iap-httpsresourceaccessor-human-001":
            f"{iap} roles/iap.httpsResourceAccessor user:<email>",
        "iap-run-us-central1-grafana-iap-httpsresourceaccessor-domain-example-org":
            f"{iap} roles/iap.httpsResourceAccessor domain:example.org",
    }


@pytest.mark.parametrize("spec, kind, name", [
    ("run:us-central1/grafana", "run", "us-central1/grafana"),
    ("run-job:us-central1/echo-sync", "run-job", "us-central1/echo-sync"),
    ("iap-run:us-central1/grafana", "iap-run", "us-central1/grafana"),
    (f"keyring:{RING}", "keyring", RING),
])
def test_targets_parse(spec, kind, name):
    assert parse_target(spec, P) == Target(kind, name, P)
    assert parse_target(spec, P).spec == spec


@pytest.mark.parametrize("spec", ["run:grafana", "run-job:us-central1/", "iap-run:a/b/c",
                                  "keyring:projects/p/locations/l/keyRings/r/cryptoKeys/k"])
def test_bad_targets_are_refused(spec):
    with pytest.raises(ClusterstackError):
        parse_target(spec, P)


def head() -> str:
    return iam_file_head(P, {"human-001": PrincipalCipher.generate().encrypt("ada@example.org")})


def test_names_the_file_cannot_hold_are_located_errors():
    bad = head() + """\
cloud_run_services:
  - location: us
    name: Grafana
    grants:
      - role: roles/run.invoker
        members: [domain:example.org]
"""
    with pytest.raises(IamFileError) as err:
        load_iam_text(bad, Path("iam.yaml"))
    assert {(p.line, p.field) for p in err.value.problems} == {
        (9, "cloud_run_services[0].location"), (10, "cloud_run_services[0].name")}


def test_default_stage_is_not_written():
    t = head() + """\
custom_roles:
  - role_id: runViewer
    title: Run viewer
    permissions: [run.services.get]
    stage: GA
"""
    loaded = load_iam_text(t, Path("iam.yaml"))
    assert "stage" not in canonical_text(parse_document(loaded.text, loaded.path))


def test_grant_and_revoke_on_a_cloud_run_service(tmp_path):
    s = IamSettings(root=tmp_path, file=tmp_path / "iam" / "iam.yaml", stack=None,
                    allow_email_domains=DOC_DOMAINS, allow_emails=())
    ops.init(s, project=P, kms_key=None)
    r = ops.grant(s, "group:eng@example.org", "roles/iap.httpsResourceAccessor", "iap-run:us-central1/grafana")
    assert r.lines == ["+ group:eng@example.org roles/iap.httpsResourceAccessor on iap-run:us-central1/grafana"]
    m = load_iam(s.file).model
    assert [(e.location, e.name) for e in m.iap_cloud_run_services] == [("us-central1", "grafana")]
    ops.revoke(s, "group:eng@example.org", "roles/iap.httpsResourceAccessor", "iap-run:us-central1/grafana")
    assert "iap_cloud_run_services" not in s.file.read_text(encoding="utf-8")
