"""The GCP IAM component under Pulumi mocks: bindings per target kind, merges, import IDs,
protection, dependencies, secret members; and the IAM file inside the real gcp-demo program."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest

from clusterstack import secrets
from clusterstack.components.gcp.iam import (IamBindings, binding_import_id)
from clusterstack.iam.crypto import PrincipalCipher, store_cipher
from clusterstack.iam.loader import IamFileError, load_iam, load_iam_text
from clusterstack.programs.iam import declare_iam, iam_args
from clusterstack.plan import dumps, plan_stack, run_program
from clusterstack.workspace import Workspace

REPO = Path(__file__).resolve().parents[3]
P = "demo-project"
KEY = f"projects/{P}/locations/global/keyRings/ring/cryptoKeys/state"
OTHER_KEY = "projects/shared-kms/locations/us/keyRings/ring/cryptoKeys/k"
SA = f"ci-deployer@{P}.iam.gserviceaccount.com"


def iam_text(principals: dict[str, str]) -> str:
    lines = "".join(f"  {pid}: {ct}\n" for pid, ct in principals.items())
    return f"""\
schema_version: 1
project: {P}
encryption:
  scheme: tink-daead-aes256-siv
  keyset: .iam/keyset.json
principals:
{lines}custom_roles:
  - role_id: clusterOperator
    title: Cluster operator
    permissions: [container.clusters.get]
owned_service_accounts:
  - account_id: ci-deployer
    display_name: CI deployer
project_grants:
  - role: roles/viewer
    members: [human-001]
  - role: roles/viewer
    members: [group:ml@example.org]
  - role: projects/{P}/roles/clusterOperator
    members: [human-002]
    condition: {{title: Until 2027, expression: 'request.time < timestamp("2027-01-01T00:00:00Z")'}}
buckets:
  - name: demo-data
    grants:
      - role: roles/storage.objectViewer
        members: [serviceAccount:{SA}]
secrets:
  - name: hf-token
    grants:
      - role: roles/secretmanager.secretAccessor
        members: [human-002]
artifact_repositories:
  - location: us
    name: dockerhub-mirror
    grants:
      - role: roles/artifactregistry.reader
        members: [serviceAccount:{SA}]
service_accounts:
  - email: {SA}
    grants:
      - role: roles/iam.serviceAccountUser
        members: [human-001]
kms_keys:
  - key: {KEY}
    grants:
      - role: roles/cloudkms.cryptoKeyEncrypterDecrypter
        members: [serviceAccount:{SA}]
  - key: {OTHER_KEY}
    grants:
      - role: roles/cloudkms.cryptoKeyDecrypter
        members: [human-001]
"""


@pytest.fixture(scope="module")
def cipher() -> PrincipalCipher:
    return PrincipalCipher.generate()


@pytest.fixture(scope="module")
def loaded(cipher):
    principals = {"human-001": cipher.encrypt("alice@example.org"), "human-002": cipher.encrypt("bob@example.org")}
    return load_iam_text(iam_text(principals), Path("iam.yaml"))


def run(program):
    return run_program("clusterstack", "gcp-demo", {}, program)


@pytest.fixture(scope="module")
def plan(loaded):
    def program():
        provider = gcp.Provider("gcp", project=P)
        principals = {pid: pulumi.Output.secret(f"user:{pid}-placeholder") for pid in ("human-001", "human-002")}
        IamBindings("iam", iam_args(loaded, principals), provider=provider)

    return run(program)


def by_name(plan):
    return {r.name: r for r in plan.resources}


def test_one_binding_resource_per_target_kind(plan):
    types = {r.name: r.type for r in plan.resources if r.custom and "Binding" in r.type}
    assert types == {
        "project-viewer": "gcp:projects/iAMBinding:IAMBinding",
        "project-custom-clusteroperator-until-2027": "gcp:projects/iAMBinding:IAMBinding",
        "bucket-demo-data-storage-objectviewer": "gcp:storage/bucketIAMBinding:BucketIAMBinding",
        "secret-hf-token-secretmanager-secretaccessor": "gcp:secretmanager/secretIamBinding:SecretIamBinding",
        "repo-us-dockerhub-mirror-artifactregistry-reader":
            "gcp:artifactregistry/repositoryIamBinding:RepositoryIamBinding",
        "sa-ci-deployer-iam-serviceaccountuser": "gcp:serviceaccount/iAMBinding:IAMBinding",
        "kms-global-ring-state-cloudkms-cryptokeyencrypterdecrypter":
            "gcp:kms/cryptoKeyIAMBinding:CryptoKeyIAMBinding",
        "kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter": "gcp:kms/cryptoKeyIAMBinding:CryptoKeyIAMBinding",
    }


def test_target_inputs(plan):
    r = by_name(plan)
    assert r["bucket-demo-data-storage-objectviewer"].inputs == {
        "bucket": "demo-data", "members": [f"serviceAccount:{SA}"], "role": "roles/storage.objectViewer"}
    assert r["secret-hf-token-secretmanager-secretaccessor"].inputs["secretId"] == "hf-token"
    repo = r["repo-us-dockerhub-mirror-artifactregistry-reader"].inputs
    assert (repo["project"], repo["location"], repo["repository"]) == (P, "us", "dockerhub-mirror")
    assert r["sa-ci-deployer-iam-serviceaccountuser"].inputs["serviceAccountId"] == \
        f"projects/{P}/serviceAccounts/{SA}"
    assert r["kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter"].inputs["cryptoKeyId"] == "shared-kms/us/ring/k"
    cond = r["project-custom-clusteroperator-until-2027"].inputs["condition"]
    assert cond == {"expression": 'request.time < timestamp("2027-01-01T00:00:00Z")', "title": "Until 2027"}


def test_grants_of_one_role_merge_into_one_binding_and_people_are_secret(plan):
    r = by_name(plan)
    assert r["project-viewer"].inputs["members"] == "[secret]"   # a person is among them
    assert r["bucket-demo-data-storage-objectviewer"].inputs["members"] == [f"serviceAccount:{SA}"]
    text = dumps([plan])
    assert "placeholder" not in text and "user:" not in text


def test_accounts_are_protected_and_roles_declared(plan):
    r = by_name(plan)
    acc = r["ci-deployer"]
    assert acc.type == "gcp:serviceaccount/account:Account" and acc.protect
    assert acc.inputs["accountId"] == "ci-deployer" and acc.inputs["project"] == P
    role = r["clusterOperator"]
    assert role.type == "gcp:projects/iAMCustomRole:IAMCustomRole" and not role.protect
    assert role.inputs["permissions"] == ["container.clusters.get"]
    assert not any(x.protect for x in plan.resources if "Binding" in x.type)
    assert all(x.parent and x.parent.endswith("::iam") for x in plan.resources if x.custom and x.type != "pulumi:providers:gcp")


def test_bindings_depend_on_the_accounts_and_roles_they_name(plan):
    r = by_name(plan)
    acc, role = r["ci-deployer"].urn, r["clusterOperator"].urn
    assert r["project-custom-clusteroperator-until-2027"].dependencies == (role,)
    assert r["sa-ci-deployer-iam-serviceaccountuser"].dependencies == (acc,)          # as target
    assert r["bucket-demo-data-storage-objectviewer"].dependencies == (acc,)          # as member
    assert r["project-viewer"].dependencies == ()


def test_import_ids(loaded):
    ids = {b.logical_name: binding_import_id(b) for b in loaded.bindings()}
    assert ids == {
        "project-viewer": f"{P} roles/viewer",
        "project-custom-clusteroperator-until-2027": f"{P} projects/{P}/roles/clusterOperator Until 2027",
        "bucket-demo-data-storage-objectviewer": "b/demo-data roles/storage.objectViewer",
        "secret-hf-token-secretmanager-secretaccessor":
            f"projects/{P}/secrets/hf-token roles/secretmanager.secretAccessor",
        "repo-us-dockerhub-mirror-artifactregistry-reader":
            f"projects/{P}/locations/us/repositories/dockerhub-mirror roles/artifactregistry.reader",
        "sa-ci-deployer-iam-serviceaccountuser": f"projects/{P}/serviceAccounts/{SA} roles/iam.serviceAccountUser",
        "kms-global-ring-state-cloudkms-cryptokeyencrypterdecrypter":
            f"{P}/global/ring/state roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter": "shared-kms/us/ring/k roles/cloudkms.cryptoKeyDecrypter",
    }


def test_component_keeps_import_ids_but_never_imports(loaded):
    seen = {}

    def program():
        c = IamBindings("iam", iam_args(loaded, {p: pulumi.Output.secret("user:x@example.org")
                                                 for p in ("human-001", "human-002")}),
                        provider=gcp.Provider("gcp", project=P))
        seen.update(c.import_ids)

    plan = run(program)
    assert seen == {b.logical_name: binding_import_id(b) for b in loaded.bindings()}
    assert all(r.import_id is None for r in plan.resources)    # `up` must not become an import


def test_repository_bindings_wait_for_the_stacks_mirrors(loaded):
    def program():
        provider = gcp.Provider("gcp", project=P)
        mirror = gcp.artifactregistry.Repository("mirror", repository_id="dockerhub-mirror", location="us",
                                                 format="DOCKER", opts=pulumi.ResourceOptions(provider=provider))
        IamBindings("iam", iam_args(loaded, {p: pulumi.Output.secret("user:x@example.org")
                                             for p in ("human-001", "human-002")}),
                    provider=provider, repositories=[mirror])

    r = by_name(run(program))
    assert r["mirror"].urn in r["repo-us-dockerhub-mirror-artifactregistry-reader"].dependencies
    assert r["mirror"].urn not in r["project-viewer"].dependencies


# --- the IAM file inside the real program ---------------------------------------------------------

def test_shipped_gcp_demo_plan_shows_ids_never_emails():
    plan = plan_stack(REPO / "infra", "gcp-demo")
    loaded = load_iam(REPO / "iam" / "iam.yaml")
    text = dumps([plan])
    assert plan.outputs["iam"] == json.loads(json.dumps({
        b.logical_name: {"target": b.target.spec, "role": b.role, "members": list(b.members),
                         "condition": b.condition.title if b.condition else None} for b in loaded.bindings()}))
    assert "human-001" in json.dumps(plan.outputs["iam"])
    assert not any(ct in text for ct in loaded.model.principals.values())
    assert "user:" not in text
    names = {r.name for r in plan.resources}
    assert {b.logical_name for b in loaded.bindings()} <= names


def test_other_gcp_stacks_of_the_project_do_not_declare_iam():
    # gcp-tpu-a shares demo-project; only [iam] stack = "gcp-demo" owns its IAM
    plan = plan_stack(REPO / "infra", "gcp-tpu-a")
    assert not any("IAMBinding" in r.type or "IamBinding" in r.type for r in plan.resources)
    assert "iam" not in plan.outputs


@pytest.fixture
def ws_with_keyset(tmp_path, cipher):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "iam").mkdir()
    principals = {"human-001": cipher.encrypt("alice@example.org"), "human-002": cipher.encrypt("bob@example.org")}
    (root / "iam" / "iam.yaml").write_text(iam_text(principals))
    ws = Workspace.load(root)
    store_cipher(cipher, load_iam(root / "iam" / "iam.yaml").model.encryption, root)
    return ws


def test_real_run_decrypts_into_secret_members_only(ws_with_keyset):
    values: dict[str, list[str]] = {}

    def program():
        token = secrets._OFFLINE.set(False)  # as under `pulumi preview`/`up`: principals are decrypted
        try:
            c = declare_iam(ws_with_keyset, "gcp-demo", P, gcp.Provider("gcp", project=P))
        finally:
            secrets._OFFLINE.reset(token)
        for name, res in c.bindings.items():
            res.members.apply(lambda v, name=name: values.__setitem__(name, v))

    plan = run(program)
    assert values["project-viewer"] == ["user:alice@example.org", "group:ml@example.org"]
    assert values["secret-hf-token-secretmanager-secretaccessor"] == ["user:bob@example.org"]
    text = dumps([plan])
    assert "alice" not in text and "bob@" not in text and by_name(plan)["project-viewer"].inputs["members"] == "[secret]"


def test_real_run_without_keyset_fails_with_a_hint(ws_with_keyset):
    (ws_with_keyset.root / ".iam" / "keyset.json").unlink()

    def program():
        token = secrets._OFFLINE.set(False)
        try:
            declare_iam(ws_with_keyset, "gcp-demo", P, gcp.Provider("gcp", project=P))
        finally:
            secrets._OFFLINE.reset(token)

    with pytest.raises(Exception, match="keyset file not found"):
        run(program)
    # the offline plan needs no keyset
    run(lambda: declare_iam(ws_with_keyset, "gcp-demo", P, gcp.Provider("gcp", project=P)))


def test_iam_file_of_another_project_is_an_error(ws_with_keyset):
    path = ws_with_keyset.root / "iam" / "iam.yaml"
    path.write_text(path.read_text().replace(f"project: {P}", "project: other-project"))
    with pytest.raises(IamFileError, match="is not the project of stack gcp-demo"):
        run(lambda: declare_iam(ws_with_keyset, "gcp-demo", P, gcp.Provider("gcp", project=P)))
