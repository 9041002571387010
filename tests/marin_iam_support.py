"""The synthetic Marin ``iam_data.yaml`` of the adoption tests, and the fake Cloud KMS key its
principals are encrypted with.

Format: Marin's, exactly — marin-community/marin ``infra/pulumi/src/iac/gcp/iam_data.yaml`` and
its loader/writer ``iam_config.py`` (``load_iam_config``, ``iam_config_data``,
``write_iam_config``: ``yaml.safe_dump(sort_keys=False, width=120, default_flow_style=False)``),
both @ 0fe5f595bef8 (schema_version 2). Principals are base64 Cloud KMS ciphertexts of the bare
email, made as Marin's ``iam_kms.py`` @ 60ff7748 ``encrypt_email`` makes them (Encrypt on the
``kms`` key of the stack's project, no additional authenticated data).

Identities are fake: people at example.org (RFC 2606), service accounts named ``*example*`` in
Marin's project id, project number 123456789012. The Cloud KMS key is a fake too: Cloud KMS
Encrypt/Decrypt is answered by :class:`fakes.gcp_api.FakeKms`, whose key for Marin's crypto key
name is the committed test keyset ``tests/iam/fixtures/marin-fake-kms-keyset.json`` (AES256-GCM, a test
key that protects nothing), so the committed ciphertexts decrypt in every test run.

Regenerate both files (new ciphertexts, same emails) with ``python tests/marin_iam_support.py``.
"""

from __future__ import annotations

import base64
from pathlib import Path

HERE = Path(__file__).resolve().parent / "iam" / "fixtures"
FIXTURE = HERE / "marin-iam_data.yaml"
KEYSET = HERE / "marin-fake-kms-keyset.json"

PROJECT = "hai-gcp-models"   # Marin's project (lib/iris/config/marin.yaml provisioning.gcp.project)
KMS = {"location": "us-central1", "key_ring": "marin-iac-keyring", "key": "marin-iac-key"}
CRYPTO_KEY = (f"projects/{PROJECT}/locations/{KMS['location']}/keyRings/{KMS['key_ring']}"
              f"/cryptoKeys/{KMS['key']}")

# Marin's principal ids are not dense (a person removed leaves a gap): human-009 follows 006.
PEOPLE = {"human-001": "ada@example.org", "human-002": "grace@example.org",
          "human-003": "alan@example.org", "human-004": "barbara@example.org",
          "human-005": "edsger@example.org", "human-006": "katherine@example.org",
          "human-009": "donald@example.org"}


def sa(name: str) -> str:
    return f"serviceAccount:{name}@{PROJECT}.iam.gserviceaccount.com"


def p(pid: str) -> dict[str, str]:
    return {"principal": pid}


def role(name: str) -> str:
    return f"projects/{PROJECT}/roles/{name}"


IAP_AGENT = "serviceAccount:service-123456789012@gcp-sa-iap.iam.gserviceaccount.com"


def body(principals: dict[str, str]) -> dict:
    """The document, in Marin's key order (iam_config.py ``iam_config_data``)."""
    return {
        "schema_version": 2,
        "kms": dict(KMS),
        "principals": principals,
        "custom_roles": [
            {"role_id": "exampleResourcePreviewer", "title": "Example GCP Resource Previewer",
             "description": "Read the GCP resources declared by the example preview stack.",
             "permissions": ["compute.addresses.get", "iam.roles.get", "storage.buckets.getIamPolicy"]},
            {"role_id": "ci.example.launcher", "title": "Example CI launcher",
             "description": "Created on: 2024-05-20",
             "permissions": ["tpu.nodes.create", "tpu.nodes.delete", "tpu.nodes.get"]},
            {"role_id": "example_agent", "title": "Example Agent",
             "description": "Role designed for autonomous agents.\n\nCreated on: 2026-03-18. ",
             "permissions": ["compute.instances.get", "storage.objects.get"]},
        ],
        "owned_service_accounts": [
            {"account_id": "pulumi-ci-example", "display_name": "Pulumi CI preview (read-only)"}],
        "project_grants": [
            {"role": role("ci.example.launcher"), "members": [sa("github-ci-example")]},
            {"role": role("example_agent"), "members": [sa("agent-example")]},
            {"role": role("exampleResourcePreviewer"), "members": [sa("pulumi-ci-example"), p("human-003")]},
            {"role": "roles/compute.instanceAdmin.v1",
             "members": [sa("iris-example-controller"), p("human-002"), p("human-001"), p("human-004")]},
            {"role": "roles/containeranalysis.ServiceAgent",
             "members": ["serviceAccount:service-123456789012@container-analysis.iam.gserviceaccount.com"]},
            {"role": "roles/cloudsql.client", "members": ["group:eng-all@example.org", sa("echo-example")]},
            {"role": "roles/editor",
             "members": ["serviceAccount:123456789012-compute@developer.gserviceaccount.com",
                         "serviceAccount:123456789012@cloudservices.gserviceaccount.com", p("human-005")]},
            {"role": "roles/iap.httpsResourceAccessor", "members": [sa("iris-example-controller"), p("human-006")]},
            {"role": "roles/owner", "members": [p("human-001"), p("human-009")]},
            {"role": "roles/secretmanager.admin", "members": [p("human-002")]},
            {"role": "roles/secretmanager.admin",
             "members": ["serviceAccount:service-123456789012@gcp-sa-cloudbuild.iam.gserviceaccount.com"],
             "condition": {"title": "cloudbuild-connection-setup",
                           "expression": 'request.time < timestamp("2025-03-03T22:36:03.397Z")'}},
            {"role": "roles/storage.objectAdmin", "members": [sa("iris-example-controller")]},
            {"role": "roles/storage.objectAdmin", "members": [sa("iris-example-ci")],
             "condition": {"title": "example-buckets-only",
                           "expression": 'resource.name.startsWith("projects/_/buckets/example-")',
                           "description": "Grant objectAdmin on all example-* buckets"}},
        ],
        "kms_grants": [
            {"role": "roles/cloudkms.cryptoKeyDecrypter", "members": [sa("pulumi-ci-example")]},
            {"role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
             "members": [sa("iris-example-ci"), p("human-003")]},
        ],
        "secrets": [
            {"secret": "EXAMPLE_ALERT_WEBHOOK", "grants": [
                {"role": "roles/secretmanager.secretAccessor",
                 "members": ["serviceAccount:123456789012-compute@developer.gserviceaccount.com"]}]},
            {"secret": "example-grafana-password", "grants": [
                {"role": role("exampleResourcePreviewer"), "members": [sa("deploy-example")]},
                {"role": "roles/secretmanager.secretAccessor", "members": [sa("grafana-example")]}]},
        ],
        "buckets": [
            {"bucket": "example-iac-state", "grants": [
                {"role": "roles/storage.legacyBucketOwner",
                 "members": [f"projectEditor:{PROJECT}", f"projectOwner:{PROJECT}"]},
                {"role": "roles/storage.legacyBucketReader", "members": [f"projectViewer:{PROJECT}"]},
                {"role": "roles/storage.objectAdmin", "members": [p("human-002")]},
                {"role": "roles/storage.objectUser", "members": [sa("pulumi-ci-example")],
                 "condition": {"title": "pulumi-ci-pulumi-locks",
                               "expression": 'resource.name.startsWith("projects/_/buckets/example-iac-state'
                                             '/objects/.pulumi/locks/")',
                               "description": "Create/delete stack lock objects only; no access to state content."}},
            ]},
            {"bucket": "example-us-central1", "grants": [
                {"role": "roles/storage.objectViewer", "members": [sa("grafana-example")]}]},
        ],
        "artifact_repositories": [
            {"location": "europe-west4", "repository": "levanter", "grants": [
                {"role": "roles/artifactregistry.reader", "members": ["allAuthenticatedUsers", "allUsers"]}]},
            {"location": "us", "repository": "pypi-mirror", "grants": [
                {"role": "roles/artifactregistry.reader", "members": [sa("iris-example-worker")]}]},
            {"location": "us-central1", "repository": "example-grafana", "grants": [
                {"role": role("exampleResourcePreviewer"), "members": [p("human-003")]},
                {"role": "roles/artifactregistry.writer", "members": [sa("deploy-example")]}]},
            {"location": "us-central1", "repository": "levanter", "grants": [
                {"role": "roles/artifactregistry.reader", "members": ["allUsers"]}]},
        ],
        "service_accounts": [
            {"email": f"github-example@{PROJECT}.iam.gserviceaccount.com", "grants": [
                {"role": "roles/iam.workloadIdentityUser", "members": [
                    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
                    "github-pool/subject/repo:example-org/example-repo:ref:refs/heads/main",
                    "principalSet://iam.googleapis.com/projects/123456789012/locations/global/"
                    "workloadIdentityPools/github-pool/attribute.repository/example-org/example-repo"]}]},
            {"email": f"iris-example-controller@{PROJECT}.iam.gserviceaccount.com", "grants": [
                {"role": "roles/iam.serviceAccountTokenCreator",
                 "members": [sa("iris-example-controller"), p("human-002"), p("human-001")]},
                {"role": "roles/iam.serviceAccountUser",
                 "members": [sa("iris-example-ci"), p("human-002"), p("human-001")]}]},
        ],
        "cloud_run_services": [
            {"location": "us-central1", "service": "example-api",
             "grants": [{"role": "roles/run.invoker", "members": [IAP_AGENT]}],
             "iap_grants": [{"role": "roles/iap.httpsResourceAccessor",
                             "members": ["domain:example.org", sa("loom-example"), p("human-004")]}]},
            {"location": "us-central1", "service": "example-dash",
             "grants": [{"role": "roles/run.invoker", "members": [IAP_AGENT]}],
             "iap_grants": [{"role": "roles/iap.httpsResourceAccessor",
                             "members": [p("human-004"), p("human-006")]}]},
        ],
        "cloud_run_jobs": [
            {"location": "us-central1", "job": "example-sync",
             "grants": [{"role": "roles/run.invoker", "members": [sa("echo-example")]}]},
        ],
    }


HEADER = """\
# SYNTHETIC test data in the format of Marin's infra/pulumi/src/iac/gcp/iam_data.yaml
# (marin-community/marin @ 0fe5f595bef8, schema_version 2; loader iam_config.py at the same
# commit). Every identity is fake (example.org people, *example* service accounts, project
# number 123456789012); principals are ciphertexts under the fake Cloud KMS key of
# marin-fake-kms-keyset.json. Regenerate with `python tests/marin_iam_support.py`.
"""


def fake_kms_aead():
    """The AEAD that stands for Marin's Cloud KMS crypto key (the committed test keyset)."""
    import tink
    from tink import aead, secret_key_access

    aead.register()
    return tink.json_proto_keyset_format.parse(KEYSET.read_text(encoding="utf-8"),
                                               secret_key_access.TOKEN).primitive(aead.Aead)


def install_fake_kms(monkeypatch):
    """Answer Cloud KMS with :class:`fakes.gcp_api.FakeKms`, Marin's key being the committed
    test key (every other key name gets a fresh one, as before). Returns FakeKms."""
    from google.cloud import kms_v1

    from fakes.gcp_api import FakeKms

    FakeKms.keys, FakeKms.calls, FakeKms.deny = {CRYPTO_KEY: fake_kms_aead()}, [], False
    monkeypatch.setattr(kms_v1, "KeyManagementServiceClient", FakeKms)
    return FakeKms


def marin_emails(text: str) -> dict[str, str]:
    """``{human-NNN: email}`` of a Marin file's principals, decrypted with the fake key — what
    Marin's ``_KmsMemberDecryptor`` would resolve (iam.py @ 0fe5f595)."""
    import yaml

    key = fake_kms_aead()
    return {pid: key.decrypt(base64.b64decode(ct), b"").decode("utf-8")
            for pid, ct in yaml.safe_load(text)["principals"].items()}


def main() -> None:
    import tink
    import yaml
    from tink import aead, secret_key_access

    aead.register()
    handle = tink.new_keyset_handle(aead.aead_key_templates.AES256_GCM)
    HERE.mkdir(parents=True, exist_ok=True)
    KEYSET.write_text(tink.json_proto_keyset_format.serialize(handle, secret_key_access.TOKEN) + "\n",
                      encoding="utf-8")
    key = handle.primitive(aead.Aead)
    principals = {pid: base64.b64encode(key.encrypt(email.encode("utf-8"), b"")).decode("ascii")
                  for pid, email in PEOPLE.items()}
    text = yaml.safe_dump(body(principals), sort_keys=False, width=120, default_flow_style=False)
    FIXTURE.write_text(HEADER + text, encoding="utf-8")


if __name__ == "__main__":
    main()
