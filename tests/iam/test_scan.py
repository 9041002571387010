"""``clusterstack iam scan`` against the GCP fake's Resource Manager ``getIamPolicy``
(tests/fakes/gcp_api.py): undeclared members, service agents, broad roles, conditions, what an
authoritative role would remove, people compared through the keyset, redaction, refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import requests
from google.auth.credentials import AnonymousCredentials

from helpers import iam_file_head
from clusterstack.adapters.gcp import GcpApiError, GcpClients
from clusterstack.cli import main
from clusterstack.iam.crypto import PrincipalCipher, store_cipher
from clusterstack.iam.loader import load_iam, load_iam_text
from clusterstack.iam.scan import is_service_agent, parse_policy, scan_project
from fakes.clients import fake_clients
from fakes.gcp_api import FakeGcp, iam_policy

REPO = Path(__file__).resolve().parents[2]
P = "demo-project"
CI = f"serviceAccount:ci-deployer@{P}.iam.gserviceaccount.com"
RELAY = f"serviceAccount:log-relay@{P}.iam.gserviceaccount.com"
GKE_AGENT = "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com"
AR_AGENT = "serviceAccount:service-123456789012@gcp-sa-artifactregistry.iam.gserviceaccount.com"
APIS_AGENT = "serviceAccount:123456789012@cloudservices.gserviceaccount.com"
EXPIRABLE = {"title": "expirable access", "description": "Does not grant access after Sep 2020",
             "expression": "request.time < timestamp('2020-10-01T00:00:00.000Z')"}

# The live policy of an adopted project: what the lab granted by hand, what Google granted
# when APIs were enabled, and what the file declares.
LIVE = iam_policy([
    {"role": "roles/viewer", "members": ["user:alice@lab.example", "user:bob@lab.example", "user:carol@lab.example",
                                         "group:ml-platform@lab.example"]},
    {"role": "roles/container.admin", "members": [CI, "user:dave@lab.example"]},
    {"role": "roles/owner", "members": ["user:erin@lab.example"]},
    {"role": "roles/editor", "members": [APIS_AGENT]},
    {"role": "roles/container.serviceAgent", "members": [GKE_AGENT]},
    {"role": "roles/artifactregistry.serviceAgent", "members": [AR_AGENT]},
    {"role": "roles/storage.admin", "members": ["user:frank@lab.example"], "condition": EXPIRABLE},
])


def iam_text(principals: dict[str, str]) -> str:
    return iam_file_head(P, principals) + f"""\
project_grants:
  - role: roles/container.admin
    authoritative: true
    members: ["{CI}"]
  - role: roles/logging.viewer
    members: ["{RELAY}"]
  - role: roles/viewer
    members: [human-001, group:ml-platform@lab.example]
"""


@pytest.fixture(scope="module")
def cipher() -> PrincipalCipher:
    return PrincipalCipher.generate()


@pytest.fixture
def ws(tmp_path, cipher) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "iam").mkdir()
    (root / "iam" / "iam.yaml").write_text(iam_text({"human-001": cipher.encrypt("alice@lab.example"),
                                                      "human-002": cipher.encrypt("bob@lab.example")}))
    store_cipher(cipher, load_iam(root / "iam" / "iam.yaml").model.encryption, root)
    return root


@pytest.fixture
def gcp():
    with FakeGcp() as srv:
        srv.iam_policies[P] = LIVE
        yield srv


def scan_cli(ws: Path, srv, capsys, *args: str) -> tuple[int, str, str]:
    clients = fake_clients(gcp=GcpClients(api_endpoint=srv.url, credentials=AnonymousCredentials()))
    capsys.readouterr()
    rc = main(["--root", str(ws), "iam", "scan", *args], clients=clients)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_scan_lists_what_the_project_has_and_the_file_lacks(ws, gcp, capsys):
    rc, out, _ = scan_cli(ws, gcp, capsys, "--json")
    assert rc == 0
    report = json.loads(out)
    assert (report["project"], report["etag"], report["version"]) == (P, "BwWWja0YfJA=", 3)
    assert report["people_compared"] is True and report["live_grants"] == 11
    rows = [(f["kind"], f["role"], f["condition"], f["member"], f["broad"], f["removed_by_up"])
            for f in report["findings"]]
    assert rows == [
        # an authoritative role keeps exactly the file's members: the next up removes dave
        ("undeclared", "roles/container.admin", None, "user:d***@lab.example", False, True),
        ("undeclared", "roles/owner", None, "user:e***@lab.example", True, False),
        ("service-agent", "roles/editor", None, APIS_AGENT, True, False),
        ("undeclared", "roles/storage.admin", "expirable access", "user:f***@lab.example", False, False),
        # bob is registered (human-002) but not granted viewer; carol is not registered
        ("undeclared", "roles/viewer", None, "human-002", False, False),
        ("undeclared", "roles/viewer", None, "user:c***@lab.example", False, False),
        ("service-agent", "roles/artifactregistry.serviceAgent", None, AR_AGENT, False, False),
        ("service-agent", "roles/container.serviceAgent", None, GKE_AGENT, False, False),
        ("missing", "roles/logging.viewer", None, RELAY, False, False),
    ]
    # alice (human-001) holds viewer as declared: no finding; no email is printed whole
    assert "alice" not in out and "carol" not in out and "dave@" not in out
    assert gcp.requests == [("POST", f"/v3/projects/{P}:getIamPolicy")]


def test_scan_text_output_names_the_removal_and_is_redacted(ws, gcp, capsys):
    rc, out, _ = scan_cli(ws, gcp, capsys)
    assert rc == 0
    assert out.splitlines()[0] == (f"project {P}: 11 live grant(s), policy etag BwWWja0YfJA= (version 3); "
                                   "9 difference(s) from the IAM file")
    assert ("  undeclared    roles/container.admin: user:d***@lab.example  [REMOVED by the next up]"
            in out.splitlines())
    assert "  undeclared    roles/storage.admin if 'expirable access': user:f***@lab.example" in out.splitlines()
    assert "@lab.example" in out and not any(n in out for n in ("alice", "bob@", "carol", "erin@", "frank@"))


def test_without_the_keyset_people_are_listed_not_compared(ws, gcp, capsys):
    (ws / ".iam" / "keyset.json").unlink()
    rc, out, _ = scan_cli(ws, gcp, capsys, "--json")
    assert rc == 0
    report = json.loads(out)
    assert report["people_compared"] is False
    assert any("keyset file not found" in n for n in report["notes"])
    viewer = sorted(f["member"] for f in report["findings"] if f["role"] == "roles/viewer")
    assert viewer == ["user:a***@lab.example", "user:b***@lab.example", "user:c***@lab.example"]
    # whether dave is declared is unknown without the keyset: not claimed as removed
    assert not any(f["removed_by_up"] for f in report["findings"])
    assert not any(f["kind"] == "missing" and f["member"].startswith("human-") for f in report["findings"])


def test_a_fully_declared_project_has_no_findings(cipher):
    loaded = load_iam_text(iam_text({"human-001": cipher.encrypt("alice@lab.example")}), Path("iam.yaml"))
    live = iam_policy([{"role": "roles/container.admin", "members": [CI]},
                       {"role": "roles/logging.viewer", "members": [RELAY]},
                       {"role": "roles/viewer", "members": ["group:ml-platform@lab.example", "user:Alice@lab.example"]}])
    report = scan_project(loaded, live, encrypt=cipher.encrypt)
    assert report.findings == [] and report.live_grants == 4


def test_service_agents_are_googles_never_the_projects_own_accounts():
    assert is_service_agent(AR_AGENT, P) and is_service_agent(GKE_AGENT, P) and is_service_agent(APIS_AGENT, P)
    assert not is_service_agent(CI, P)
    assert not is_service_agent("serviceAccount:123456789012-compute@developer.gserviceaccount.com", P)
    assert not is_service_agent("group:gcp-sa-x@lab.example", P)


def test_a_policy_read_below_version_3_hides_conditions_and_is_refused(gcp):
    # What the API does for a version-1 read of a conditional binding (the fake follows IAM
    # "Policy versions"); the client always asks for version 3.
    v1 = requests.post(f"{gcp.url}/v3/projects/{P}:getIamPolicy", json={}).json()
    assert v1["version"] == 1 and any("_withcond_" in b["role"] for b in v1["bindings"])
    with pytest.raises(ValueError, match="hides its conditions"):
        parse_policy(v1)
    client = GcpClients(api_endpoint=gcp.url, credentials=AnonymousCredentials()).resource_manager()
    assert client.get_project_iam_policy(P) == LIVE


def test_a_project_the_caller_cannot_read_is_exit_2_with_the_permission(ws, gcp, capsys):
    del gcp.iam_policies[P]
    rc, out, err = scan_cli(ws, gcp, capsys)
    assert rc == 2 and out == ""
    assert "the Resource Manager API refused getIamPolicy on project demo-project: 403 The caller does not have permission" in err
    assert "resourcemanager.projects.getIamPolicy" in err and "Traceback" not in err


def test_an_unreachable_api_is_exit_2_check_the_network(ws, capsys):
    with FakeGcp() as srv:
        url = srv.url
    rc, _, err = scan_cli(ws, type("Gone", (), {"url": url})(), capsys)
    assert rc == 2
    assert "cannot reach the Resource Manager API" in err and "check the network" in err


def test_direct_client_errors_are_gcp_api_errors(gcp):
    client = GcpClients(api_endpoint=gcp.url, credentials=AnonymousCredentials()).resource_manager()
    with pytest.raises(GcpApiError) as ei:
        client.get_project_iam_policy("other-project")
    assert ei.value.exit_code == 2


@pytest.mark.parametrize("status, body, says, kind", [
    (404, {"error": {"code": 404, "message": "Project 'demo-project' not found.", "status": "NOT_FOUND"}},
     "the Resource Manager API refused getIamPolicy on project demo-project: 404 Project 'demo-project' not found.",
     "not-found"),
    (503, {"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}},
     "cannot reach the Resource Manager API while getIamPolicy on project demo-project: "
     "The service is currently unavailable.", "unreachable"),
    (401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                     "status": "UNAUTHENTICATED"}},
     "Google credentials missing or refused by the Resource Manager API", None),
], ids=["not-found", "unavailable", "unauthenticated"])
def test_every_refusal_goes_through_the_one_mapping(gcp, status, body, says, kind):
    from clusterstack.adapters.gcp import GcpCredentialsError

    gcp.failures[f"/v3/projects/{P}:getIamPolicy"] = (status, body)
    client = GcpClients(api_endpoint=gcp.url, credentials=AnonymousCredentials()).resource_manager()
    with pytest.raises((GcpApiError, GcpCredentialsError)) as ei:
        client.get_project_iam_policy(P)
    assert ei.value.exit_code == 2 and says in ei.value.render()
    assert getattr(ei.value, "kind", None) == kind
