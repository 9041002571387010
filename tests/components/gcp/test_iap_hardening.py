"""GCP: a working IAP and no way around it.

- IAP accessor grants (``roles/iap.httpsResourceAccessor``) from the IAM file's
  ``iap_backend_services``, bound on each backend service's IAP resource;
- a deny-public rule for every controller behind the load balancer (no opt-in flag);
- IAP settings named after the backend's generated id, so a replaced backend carries them;
- Artifact Registry remotes in the canonical ``commonRepository`` form.

Expected values are spelled out here, not recomputed by the code under test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest

from clusterstack.components.gcp.gclb import GcpGclbIap, GcpGclbIapArgs
from clusterstack.components.gcp.iam import IamBindings, binding_import_id
from clusterstack.components.gcp.registries import (RegistryMirrors, RegistryMirrorsArgs, RegistrySpec,
                                                    remote_repository_config)
from clusterstack.config.cluster import DEFAULT_CLEANUP
from clusterstack.derive.gclb import ControllerBackendSpec
from clusterstack.iam.canonical import canonical_text
from clusterstack.iam.loader import IamFileError, load_iam, load_iam_text
from clusterstack.programs.iam import declare_iam, iam_args
from clusterstack.iam.targets import Target, parse_target
from clusterstack.plan import plan_stack, run_program
from clusterstack.plan.runtime import _Mocks
from clusterstack.workspace import Workspace

REPO = Path(__file__).resolve().parents[3]
P = "demo-project"
ACCESSOR = "roles/iap.httpsResourceAccessor"
GOOGLE_LB = ["130.211.0.0/22", "35.191.0.0/16"]

CTL = ControllerBackendSpec(
    cluster="tpu-a", domain="a.example.com", zone="us-central1-a", instance="a-ctl", port=10000,
    network_tag="a-controller", backend_service_id="111", programmatic_clients=("desk",),
    token_proxy=False)
ARGS = GcpGclbIapArgs(project=P, project_number="999", frontend_name="tpu-a", network="default",
                      subnetwork="default", controllers=(CTL,))


def _by_name(plan):
    return {r.name: r for r in plan.resources}


# --- 3. IAP settings keyed by the backend's generated id ------------------------------------

def _with_generated_ids(ids: dict[str, int]) -> _Mocks:
    """The mock answers like the Compute API: a created backend service has a numeric id."""

    class GeneratedIds(_Mocks):
        def new_resource(self, args):
            rid, outputs = super().new_resource(args)
            if args.typ == "gcp:compute/backendService:BackendService" and args.name in ids:
                outputs = {**outputs, "generatedId": ids[args.name]}
            return rid, outputs

    return GeneratedIds()


def _gclb_plan(mocks: _Mocks | None = None):
    holder = {}

    def program():
        gclb = GcpGclbIap("gclb", ARGS, provider=gcp.Provider("gcp", project=P))
        holder["gclb"] = gclb
        pulumi.export("iap_audiences", gclb.iap_audiences)

    return run_program("clusterstack", "test", {}, program, mocks=mocks), holder["gclb"]


def test_iap_settings_follow_the_backends_generated_id():
    plan, gclb = _gclb_plan(_with_generated_ids({"tpu-a-be": 4242}))
    settings = _by_name(plan)["tpu-a-iap-settings"]
    # Not the hand-copied id 111 of the cluster's audience: the backend's own id.
    assert settings.inputs["name"] == "projects/999/iap_web/compute/services/4242"
    assert _by_name(plan)["tpu-a-be"].urn in settings.dependencies
    assert plan.outputs["iap_audiences"] == {"tpu-a": "/projects/999/global/backendServices/4242"}
    # The import ID (adopting the live backend, whose id the audience holds) keeps the copied id.
    (imp,) = [i for i in gclb.import_ids if i.logical_name == "tpu-a-iap-settings"]
    assert imp.import_id == "projects/999/iap_web/compute/services/111/iapSettings"


def test_a_replaced_backend_carries_its_iap_settings():
    def settings_name(backend_id: int) -> str:
        plan, _ = _gclb_plan(_with_generated_ids({"tpu-a-be": backend_id}))
        return _by_name(plan)["tpu-a-iap-settings"].inputs["name"]

    before, after = settings_name(4242), settings_name(5353)   # the replacement gets a new id
    assert (before, after) == ("projects/999/iap_web/compute/services/4242",
                               "projects/999/iap_web/compute/services/5353")


def test_offline_the_settings_name_is_unknown_not_stale():
    plan, _ = _gclb_plan()
    assert _by_name(plan)["tpu-a-iap-settings"].inputs["name"] == "[unknown]"


# --- 2. deny-public whenever a controller sits behind the load balancer ----------------------

def test_every_shipped_controller_behind_the_lb_denies_the_public(example_plans):
    """gcp-tpu-a had no deny rule (IAP could be bypassed on its port); now every controller
    of the shipped gcp-demo load balancer has one, and only Google's load-balancer and
    health-check ranges and the VPC's range are allowed above it."""
    plan = example_plans["gcp-demo"]
    rules = {r.name: r.inputs for r in plan.resources if r.type == "gcp:compute/firewall:Firewall"}
    for cluster, tag, port in (("gcp-tpu-a", "tpua-controller", "10000"), ("gcp-tpu-b", "tpub-ctl", "10000")):
        deny = rules[f"{cluster}-deny-public-{port}"]
        assert (deny["sourceRanges"], deny["targetTags"], deny["denies"], deny["priority"]) == (
            ["0.0.0.0/0"], [tag], [{"protocol": "tcp", "ports": [port]}], 1000)
        allows = {n: r for n, r in rules.items() if "allows" in r and r["targetTags"] == [tag]}
        assert {n: (r["sourceRanges"], r["priority"]) for n, r in allows.items()} == {
            f"{cluster}-allow-lb": (GOOGLE_LB, 900),
            f"{cluster}-allow-internal": (["10.128.0.0/9"], 900)}
        assert all(r["allows"] == [{"protocol": "tcp", "ports": [port]}] for r in allows.values())


def test_no_internal_ranges_means_no_internal_allow():
    plan, _ = _gclb_plan()
    names = sorted(r.name for r in plan.resources if r.type == "gcp:compute/firewall:Firewall")
    assert names == ["tpu-a-allow-lb", "tpu-a-deny-public-10000"]


# --- 1. IAP accessor grants from the IAM file ----------------------------------------------

IAM_TEXT = f"""\
schema_version: 1
project: {P}
encryption:
  scheme: tink-daead-aes256-siv
  keyset: .iam/keyset.json
iap_backend_services:
  - name: tpu-a-be
    grants:
      - role: {ACCESSOR}
        members: [group:ml@example.org, serviceAccount:ci@{P}.iam.gserviceaccount.com]
"""


def test_the_iam_file_models_iap_backend_services():
    loaded = load_iam_text(IAM_TEXT, Path("iam.yaml"))
    (binding,) = loaded.bindings()
    assert (binding.target, binding.role, binding.logical_name) == (
        Target("iap", "tpu-a-be", P), ACCESSOR, "iap-tpu-a-be-iap-httpsresourceaccessor")
    assert binding_import_id(binding) == (
        f"projects/{P}/iap_web/compute/services/tpu-a-be {ACCESSOR}")
    assert parse_target("iap:tpu-a-be", P) == Target("iap", "tpu-a-be", P)
    assert binding.target.spec == "iap:tpu-a-be"


def test_iap_backend_service_names_are_gce_names():
    with pytest.raises(IamFileError) as exc:
        load_iam_text(IAM_TEXT.replace("name: tpu-a-be", "name: Tpu_A"), Path("iam.yaml"))
    assert "iap_backend_services" in exc.value.render()


def test_accessor_binding_is_on_the_backend_service_and_waits_for_it():
    loaded = load_iam_text(IAM_TEXT, Path("iam.yaml"))

    def program():
        provider = gcp.Provider("gcp", project=P)
        gclb = GcpGclbIap("gclb", ARGS, provider=provider)
        IamBindings("iam", iam_args(loaded, {}), provider=provider, iap_backends=gclb.iap_backends)

    r = _by_name(run_program("clusterstack", "gcp-demo", {}, program))
    # additive (the default): one member resource per accessor
    group = r["iap-tpu-a-be-iap-httpsresourceaccessor-group-ml-example-org"]
    ci = r["iap-tpu-a-be-iap-httpsresourceaccessor-sa-ci"]
    for b in (group, ci):
        assert b.type == "gcp:iap/webBackendServiceIamMember:WebBackendServiceIamMember"
        assert r["tpu-a-be"].urn in b.dependencies
    assert group.inputs == {"project": P, "webBackendService": "tpu-a-be", "role": ACCESSOR,
                            "member": "group:ml@example.org"}
    assert ci.adopt_id == (f"projects/{P}/iap_web/compute/services/tpu-a-be {ACCESSOR} "
                           f"serviceAccount:ci@{P}.iam.gserviceaccount.com")
    # Scoped at the backend, never project-wide.
    assert not [x for x in r.values() if x.type.startswith("gcp:projects/iAM")
                and x.inputs.get("role") == ACCESSOR]


def test_an_authoritative_accessor_grant_is_one_binding_on_the_backend():
    text = IAM_TEXT.replace(f"      - role: {ACCESSOR}\n", f"      - role: {ACCESSOR}\n        authoritative: true\n")
    loaded = load_iam_text(text, Path("iam.yaml"))

    def program():
        provider = gcp.Provider("gcp", project=P)
        gclb = GcpGclbIap("gclb", ARGS, provider=provider)
        IamBindings("iam", iam_args(loaded, {}), provider=provider, iap_backends=gclb.iap_backends)

    r = _by_name(run_program("clusterstack", "gcp-demo", {}, program))
    b = r["iap-tpu-a-be-iap-httpsresourceaccessor"]
    assert b.type == "gcp:iap/webBackendServiceIamBinding:WebBackendServiceIamBinding"
    assert b.inputs == {"project": P, "webBackendService": "tpu-a-be", "role": ACCESSOR,
                        "members": ["group:ml@example.org", f"serviceAccount:ci@{P}.iam.gserviceaccount.com"]}
    assert r["tpu-a-be"].urn in b.dependencies
    assert b.adopt_id == f"projects/{P}/iap_web/compute/services/tpu-a-be {ACCESSOR}"


def test_shipped_gcp_demo_grants_iap_access_per_controller_with_people_secret(example_plans):
    plan = example_plans["gcp-demo"]
    r = _by_name(plan)
    for backend in ("gcp-tpu-a-be", "gcp-tpu-b-be"):
        b = r[f"iap-{backend}-iap-httpsresourceaccessor"]
        assert (b.inputs["webBackendService"], b.inputs["role"], b.inputs["project"]) == (backend, ACCESSOR, P)
        assert b.inputs["members"] == "[secret]"       # people among them: the whole list is secret
        assert r[backend].urn in b.dependencies
    # The reviewer sees ids, never emails.
    assert plan.outputs["iam"]["iap-gcp-tpu-a-be-iap-httpsresourceaccessor"]["members"] == [
        "human-001", "human-002", "group:ml-platform@example.org",
        "serviceAccount:ci-deployer@demo-project.iam.gserviceaccount.com"]


def test_shipped_iam_file_is_canonical_with_the_new_section():
    path = REPO / "iam" / "iam.yaml"
    loaded = load_iam(path)
    assert canonical_text(loaded.document) == path.read_text()


def test_an_accessor_grant_on_a_backend_the_stack_does_not_declare_is_an_error(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "iam").mkdir()
    path = root / "iam" / "iam.yaml"
    path.write_text(IAM_TEXT.replace("name: tpu-a-be", "name: tpu-z-be"))
    ws = Workspace.load(root)

    def program():
        provider = gcp.Provider("gcp", project=P)
        gclb = GcpGclbIap("gclb", ARGS, provider=provider)
        declare_iam(ws, "gcp-demo", P, provider, iap_backends=gclb.iap_backends)

    with pytest.raises(IamFileError) as exc:
        run_program("clusterstack", "gcp-demo", {}, program)
    err = exc.value
    assert "'tpu-z-be' is not an IAP backend of this stack's load balancer (tpu-a-be)" in err.render()
    assert "iap_backend_services[0].name" in err.render()


# --- 4. commonRepository remotes ---------------------------------------------------------

@pytest.mark.parametrize("upstream, uri", [
    ("DOCKER_HUB", "https://registry-1.docker.io"),
    ("https://ghcr.io", "https://ghcr.io"),
    ("https://quay.io/some/path", "https://quay.io/some/path"),
])
def test_remote_repository_config_is_the_canonical_common_form(upstream, uri):
    config = remote_repository_config(upstream)
    assert config["commonRepository"] == {"uri": uri}   # wire names (components/gcp/kinds.py)
    assert "dockerRepository" not in config


def test_declared_remote_inputs_use_common_repository():
    def program():
        RegistryMirrors("registries", RegistryMirrorsArgs(project=P, registries=(
            RegistrySpec("hub", "us", "DOCKER_HUB", "hub", DEFAULT_CLEANUP, "DOCKER_HUB mirror"),
            RegistrySpec("ghcr", "us", "https://ghcr.io", "ghcr", DEFAULT_CLEANUP, "https://ghcr.io mirror"),
            RegistrySpec("bare", "us", "https://quay.io", "", DEFAULT_CLEANUP, ""))),
            provider=gcp.Provider("gcp", project=P))

    r = _by_name(run_program("clusterstack", "test", {}, program))
    assert r["hub-us"].inputs["remoteRepositoryConfig"] == {
        "description": "DOCKER_HUB mirror", "commonRepository": {"uri": "https://registry-1.docker.io"}}
    assert r["ghcr-us"].inputs["remoteRepositoryConfig"] == {
        "description": "https://ghcr.io mirror", "commonRepository": {"uri": "https://ghcr.io"}}
    # An empty description is omitted, never declared "" (Marin's form: registries.py@7caf86cc
    # ``description=spec.description or None`` and no upstream description).
    assert r["bare-us"].inputs["remoteRepositoryConfig"] == {"commonRepository": {"uri": "https://quay.io"}}
    assert "description" not in r["bare-us"].inputs


def test_shipped_mirrors_declare_no_docker_repository_form(example_plans):
    repos = [r for r in example_plans["gcp-demo"].resources
             if r.type == "gcp:artifactregistry/repository:Repository"]
    assert len(repos) == 3
    for r in repos:
        assert set(r.inputs["remoteRepositoryConfig"]) == {"description", "commonRepository"}


def test_iam_grant_on_an_iap_backend_writes_the_canonical_section(tmp_path, capsys):
    """``clusterstack iam grant EMAIL --role roles/iap.httpsResourceAccessor --on iap:NAME``
    registers the person and grants on the backend, in the canonical file."""
    from helpers import Repo, iam_workspace

    root = iam_workspace(tmp_path / "repo")
    repo = Repo(root, capsys)
    repo.commit("init")
    repo.ok("init")
    out = repo.ok("grant", "alice@example.org", "--role", ACCESSOR, "--on", "iap:gcp-tpu-a-be")
    assert out.splitlines()[-1] == f"+ user:a***@example.org (human-001) {ACCESSOR} on iap:gcp-tpu-a-be"
    m = load_iam(repo.iam_file).model
    (entry,) = m.iap_backend_services
    assert (entry.name, entry.grants[0].role, entry.grants[0].members) == ("gcp-tpu-a-be", ACCESSOR, ["human-001"])
    assert canonical_text(load_iam(repo.iam_file).document) == repo.iam_file.read_text()
    assert "alice" not in repo.iam_file.read_text()
