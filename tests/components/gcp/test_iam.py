"""The GCP IAM component under Pulumi mocks: additive members and opted-in authoritative
bindings per target kind, merges, import IDs, protection, dependencies, secret members; and the
IAM file inside the real gcp-demo program."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest

from helpers import iam_file_head
from clusterstack import secrets
from clusterstack.components.gcp.iam import IamBindings, binding_import_id, member_import_id
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
    return iam_file_head(P, principals) + f"""\
custom_roles:
  - role_id: clusterOperator
    title: Cluster operator
    permissions: [container.clusters.get]
owned_service_accounts:
  - account_id: ci-deployer
    display_name: CI deployer
project_grants:
  - role: roles/viewer
    authoritative: true
    members: [human-001]
  - role: roles/viewer
    authoritative: true
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


ADDITIVE = {
    "project-custom-clusteroperator-until-2027-human-002": "gcp:projects/iAMMember:IAMMember",
    "bucket-demo-data-storage-objectviewer-sa-ci-deployer": "gcp:storage/bucketIAMMember:BucketIAMMember",
    "secret-hf-token-secretmanager-secretaccessor-human-002": "gcp:secretmanager/secretIamMember:SecretIamMember",
    "repo-us-dockerhub-mirror-artifactregistry-reader-sa-ci-deployer":
        "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
    "sa-ci-deployer-iam-serviceaccountuser-human-001": "gcp:serviceaccount/iAMMember:IAMMember",
    "kms-global-ring-state-cloudkms-cryptokeyencrypterdecrypter-sa-ci-deployer":
        "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember",
    "kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter-human-001": "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember",
}


def test_grants_are_one_member_resource_each_unless_the_role_is_authoritative(plan):
    grants = {r.name: r.type for r in plan.resources if r.custom and ("Binding" in r.type or "Member" in r.type)}
    assert grants == {"project-viewer": "gcp:projects/iAMBinding:IAMBinding", **ADDITIVE}


def test_every_iam_type_is_in_the_token_table(plan):
    from clusterstack.pulumi import tokens

    assert {r.type for r in plan.resources} <= tokens.ALL


def test_target_inputs(plan):
    r = by_name(plan)
    assert r["bucket-demo-data-storage-objectviewer-sa-ci-deployer"].inputs == {
        "bucket": "demo-data", "member": f"serviceAccount:{SA}", "role": "roles/storage.objectViewer"}
    assert r["secret-hf-token-secretmanager-secretaccessor-human-002"].inputs["secretId"] == "hf-token"
    repo = r["repo-us-dockerhub-mirror-artifactregistry-reader-sa-ci-deployer"].inputs
    assert (repo["project"], repo["location"], repo["repository"]) == (P, "us", "dockerhub-mirror")
    assert r["sa-ci-deployer-iam-serviceaccountuser-human-001"].inputs["serviceAccountId"] == \
        f"projects/{P}/serviceAccounts/{SA}"
    # the full key name: what the provider's import stores (iam_kms_crypto_key.go CryptoIdParseFunc)
    # and what Marin declares; kept as state has it (a short-form state does not plan a replace)
    kms = r["kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter-human-001"]
    assert kms.inputs["cryptoKeyId"] == OTHER_KEY
    assert kms.ignore_changes == ("cryptoKeyId",)
    assert r["bucket-demo-data-storage-objectviewer-sa-ci-deployer"].ignore_changes == ()
    cond = r["project-custom-clusteroperator-until-2027-human-002"].inputs["condition"]
    assert cond == {"expression": 'request.time < timestamp("2027-01-01T00:00:00Z")', "title": "Until 2027"}


def test_authoritative_grants_of_one_role_merge_into_one_binding_and_people_are_secret(plan):
    r = by_name(plan)
    assert r["project-viewer"].inputs["members"] == "[secret]"   # a person is among them
    assert r["sa-ci-deployer-iam-serviceaccountuser-human-001"].inputs["member"] == "[secret]"
    assert r["bucket-demo-data-storage-objectviewer-sa-ci-deployer"].inputs["member"] == f"serviceAccount:{SA}"
    text = dumps([plan])
    assert "placeholder" not in text
    assert "user:" not in text.replace("user:<email>", "")   # only the import ID template names it


def test_accounts_are_protected_and_roles_declared(plan):
    r = by_name(plan)
    acc = r["ci-deployer"]
    assert acc.type == "gcp:serviceaccount/account:Account" and acc.protect
    assert acc.inputs["accountId"] == "ci-deployer" and acc.inputs["project"] == P
    role = r["clusterOperator"]
    assert role.type == "gcp:projects/iAMCustomRole:IAMCustomRole" and not role.protect
    assert role.inputs["permissions"] == ["container.clusters.get"]
    assert not any(x.protect for x in plan.resources if "Binding" in x.type or "Member" in x.type)
    assert all(x.parent and x.parent.endswith("::iam") for x in plan.resources if x.custom and x.type != "pulumi:providers:gcp")


def test_grants_depend_on_the_accounts_and_roles_they_name(plan):
    r = by_name(plan)
    acc, role = r["ci-deployer"].urn, r["clusterOperator"].urn
    assert r["project-custom-clusteroperator-until-2027-human-002"].dependencies == (role,)
    assert r["sa-ci-deployer-iam-serviceaccountuser-human-001"].dependencies == (acc,)          # as target
    assert r["bucket-demo-data-storage-objectviewer-sa-ci-deployer"].dependencies == (acc,)     # as member
    assert r["project-viewer"].dependencies == ()


def test_import_ids(loaded):
    binding = {b.logical_name: binding_import_id(b) for b in loaded.bindings() if b.authoritative}
    assert binding == {"project-viewer": f"{P} roles/viewer"}
    members = {b.member_name(m): member_import_id(b, m) for b in loaded.bindings() if not b.authoritative
               for m in b.members}
    assert members == {
        "project-custom-clusteroperator-until-2027-human-002":
            f"{P} projects/{P}/roles/clusterOperator user:<email> Until 2027",
        "bucket-demo-data-storage-objectviewer-sa-ci-deployer":
            f"b/demo-data roles/storage.objectViewer serviceAccount:{SA}",
        "secret-hf-token-secretmanager-secretaccessor-human-002":
            f"projects/{P}/secrets/hf-token roles/secretmanager.secretAccessor user:<email>",
        "repo-us-dockerhub-mirror-artifactregistry-reader-sa-ci-deployer":
            f"projects/{P}/locations/us/repositories/dockerhub-mirror roles/artifactregistry.reader "
            f"serviceAccount:{SA}",
        "sa-ci-deployer-iam-serviceaccountuser-human-001":
            f"projects/{P}/serviceAccounts/{SA} roles/iam.serviceAccountUser user:<email>",
        "kms-global-ring-state-cloudkms-cryptokeyencrypterdecrypter-sa-ci-deployer":
            f"{KEY} roles/cloudkms.cryptoKeyEncrypterDecrypter serviceAccount:{SA}",
        "kms-shared-kms-us-ring-k-cloudkms-cryptokeydecrypter-human-001":
            f"{OTHER_KEY} roles/cloudkms.cryptoKeyDecrypter user:<email>",
    }
    # the binding form keeps serving an authoritative conditional binding
    cond = next(b for b in loaded.bindings() if b.condition)
    assert binding_import_id(cond) == f"{P} projects/{P}/roles/clusterOperator Until 2027"


def test_component_keeps_import_ids_but_never_imports(loaded):
    seen = {}

    def program():
        c = IamBindings("iam", iam_args(loaded, {p: pulumi.Output.secret("user:x@example.org")
                                                 for p in ("human-001", "human-002")}),
                        provider=gcp.Provider("gcp", project=P))
        seen.update(c.import_ids)

    plan = run(program)
    assert seen == {**{b.logical_name: binding_import_id(b) for b in loaded.bindings() if b.authoritative},
                    **{b.member_name(m): member_import_id(b, m) for b in loaded.bindings()
                       if not b.authoritative for m in b.members}}
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
    assert r["mirror"].urn in r["repo-us-dockerhub-mirror-artifactregistry-reader-sa-ci-deployer"].dependencies
    assert r["mirror"].urn not in r["project-viewer"].dependencies


# --- the IAM file inside the real program ---------------------------------------------------------

def test_shipped_gcp_demo_plan_shows_ids_never_emails():
    plan = plan_stack(REPO / "infra", "gcp-demo")
    loaded = load_iam(REPO / "iam" / "iam.yaml")
    text = dumps([plan])
    assert plan.outputs["iam"] == json.loads(json.dumps({
        b.logical_name: {"target": b.target.spec, "role": b.role, "members": list(b.members),
                         "authoritative": b.authoritative,
                         "condition": b.condition.title if b.condition else None} for b in loaded.bindings()}))
    assert "human-001" in json.dumps(plan.outputs["iam"])
    assert not any(ct in text for ct in loaded.model.principals.values())
    assert "user:" not in text.replace("user:<email>", "")
    names = {r.name for r in plan.resources}
    assert {n for b in loaded.bindings() for n in b.resource_names} <= names


def test_other_gcp_stacks_of_the_project_do_not_declare_iam():
    # gcp-tpu-a shares demo-project; only [iam] stack = "gcp-demo" owns its IAM
    plan = plan_stack(REPO / "infra", "gcp-tpu-a")
    assert not any(r.type.startswith(("gcp:projects/", "gcp:storage/bucketIAM")) for r in plan.resources)
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
        for name, res in c.members.items():
            res.member.apply(lambda v, name=name: values.__setitem__(name, [v]))

    plan = run(program)
    assert values["project-viewer"] == ["user:alice@example.org", "group:ml@example.org"]
    assert values["secret-hf-token-secretmanager-secretaccessor-human-002"] == ["user:bob@example.org"]
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
