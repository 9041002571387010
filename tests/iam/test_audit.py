"""``iam audit-keys`` against the in-memory IAM Admin / Secret Manager fakes (tests/fakes/gcp_api.py)
that take and return the client libraries' own request and response types (proto-plus messages,
the real pager)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth
from google.cloud import iam_admin_v1

from clusterstack.cli import main
from clusterstack.adapters.gcp import GcpApiError
from clusterstack.iam.audit import AuditError, list_keys, parse_max_age, rotate_account
from fakes.gcp_api import FakeIam, FakeSecretManager

REPO = Path(__file__).resolve().parents[2]
P = "demo-project"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
KEY_MATERIAL = b'{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nTOPSECRET\\n"}'


def email(account: str) -> str:
    return f"{account}@{P}.iam.gserviceaccount.com"


@pytest.fixture
def fakes():
    iam, sm = FakeIam(P, NOW, KEY_MATERIAL), FakeSecretManager()
    ci = iam.add_account("ci-deployer")
    iam.add_key(ci, "old1", 200)
    iam.add_key(ci, "fresh", 10)
    iam.add_key(ci, "sys", 500, system=True)       # Google-managed: not ours to audit
    relay = iam.add_account("log-relay")
    iam.add_key(relay, "old2", 120)
    legacy = iam.add_account("legacy")
    iam.add_key(legacy, "gone", 400, disabled=True)
    return iam, sm


def test_max_age_forms():
    assert parse_max_age("90d") == dt.timedelta(days=90)
    assert parse_max_age("12w") == dt.timedelta(weeks=12)
    assert parse_max_age("36h") == dt.timedelta(hours=36)
    for bad in ("90", "0d", "3m", "-1d"):
        with pytest.raises(AuditError):
            parse_max_age(bad)


def test_list_keys_ages_and_staleness(fakes):
    iam, _ = fakes
    rows = list_keys(iam, P, dt.timedelta(days=90), NOW)
    got = [(r.account.split("@")[0], r.key_id, r.age_days, r.stale, r.disabled) for r in rows]
    assert got == [("ci-deployer", "fresh", 10, False, False), ("ci-deployer", "old1", 200, True, False),
                   ("legacy", "gone", 400, True, True), ("log-relay", "old2", 120, True, False)]
    assert all(req.key_types == [iam_admin_v1.ListServiceAccountKeysRequest.KeyType.USER_MANAGED]
               for kind, req in iam.requests if kind == "list_keys")


def test_rotate_account_stores_the_new_key_then_disables_the_old(fakes):
    iam, sm = fakes
    stale = [r for r in list_keys(iam, P, dt.timedelta(days=90), NOW) if r.account == email("ci-deployer") and r.stale]
    rot = rotate_account(iam, sm, project=P, account=email("ci-deployer"), secret="ci-deployer-key",
                         stale=stale, confirm_disable=lambda: True)
    assert sm.versions == {f"projects/{P}/secrets/ci-deployer-key": [KEY_MATERIAL]}
    assert rot.secret_version == f"projects/{P}/secrets/ci-deployer-key/versions/1"
    assert rot.disabled == ("old1",) and rot.new_key_id.startswith("new")
    assert [k for k, _ in iam.requests if k != "list_keys"] == ["create", "disable"]


def test_declining_keeps_old_keys_enabled(fakes):
    iam, sm = fakes
    stale = [r for r in list_keys(iam, P, dt.timedelta(days=90), NOW) if r.account == email("ci-deployer") and r.stale]
    rot = rotate_account(iam, sm, project=P, account=email("ci-deployer"), secret="ci-deployer-key",
                         stale=stale, confirm_disable=lambda: False)
    assert rot.disabled == () and not any(k == "disable" for k, _ in iam.requests)


def test_a_key_that_cannot_be_stored_is_deleted_again(fakes):
    iam, sm = fakes
    sm.fail = True
    stale = [r for r in list_keys(iam, P, dt.timedelta(days=90), NOW) if r.stale and not r.disabled]
    with pytest.raises(AuditError, match="was deleted again") as ei:
        rotate_account(iam, sm, project=P, account=email("ci-deployer"), secret="ci-deployer-key",
                       stale=stale, confirm_disable=lambda: True)
    assert "TOPSECRET" not in ei.value.render()
    assert [k for k, _ in iam.requests if k != "list_keys"] == ["create", "delete"]
    assert not any(k.name.rsplit("/", 1)[-1].startswith("new") for keys in iam.keys.values() for k in keys)


def stale_of(iam, account="ci-deployer"):
    return [r for r in list_keys(iam, P, dt.timedelta(days=90), NOW) if r.account == email(account) and r.stale]


def rotate_ci(iam, sm):
    """Rotate ci-deployer's stale keys into secret ci-deployer-key, saying yes to disabling."""
    return rotate_account(iam, sm, project=P, account=email("ci-deployer"), secret="ci-deployer-key",
                          stale=stale_of(iam), confirm_disable=lambda: True)


def test_a_key_the_caller_may_not_create_is_refused_and_nothing_changes(fakes):
    iam, sm = fakes
    iam.errors["create"] = gexc.PermissionDenied("Permission 'iam.serviceAccountKeys.create' denied")
    with pytest.raises(GcpApiError) as ei:
        rotate_ci(iam, sm)
    assert ei.value.exit_code == 2 and ei.value.kind == "permission-denied"
    assert (f"the IAM API refused creating a key for {email('ci-deployer')}: 403 Permission "
            "'iam.serviceAccountKeys.create' denied") in ei.value.render()
    assert "iam.serviceAccountKeys.create on the account" in ei.value.problems[0].hint
    assert sm.versions == {} and [k for k, _ in iam.requests if k != "list_keys"] == ["create"]


def test_a_missing_secret_deletes_the_new_key_and_says_so(fakes):
    iam, sm = fakes
    sm.add_error = gexc.NotFound("Secret [projects/123/secrets/ci-deployer-key] not found or has no versions.")
    with pytest.raises(AuditError) as ei:
        rotate_ci(iam, sm)
    text = ei.value.render()
    assert (f"the Secret Manager API refused adding a version to projects/{P}/secrets/ci-deployer-key: "
            "404 Secret [projects/123/secrets/ci-deployer-key] not found") in text
    assert "was deleted again" in text and "TOPSECRET" not in text
    assert [k for k, _ in iam.requests if k != "list_keys"] == ["create", "delete"]


def test_an_unreachable_api_while_disabling_says_the_new_key_is_stored(fakes):
    iam, sm = fakes
    iam.errors["disable"] = gexc.ServiceUnavailable("failed to connect to all addresses")
    with pytest.raises(AuditError) as ei:
        rotate_ci(iam, sm)
    text = ei.value.render()
    assert (f"stored as projects/{P}/secrets/ci-deployer-key/versions/1, but cannot reach the IAM API "
            "while disabling key old1: failed to connect to all addresses") in text
    assert "disable the old key by hand" in text
    assert sm.versions == {f"projects/{P}/secrets/ci-deployer-key": [KEY_MATERIAL]}


def test_a_bug_in_a_call_is_not_hidden_as_a_refusal(fakes):
    iam, sm = fakes
    iam.errors["create"] = TypeError("unexpected keyword argument 'nmae'")
    with pytest.raises(TypeError):
        rotate_ci(iam, sm)


@pytest.fixture
def ws(tmp_path, fakes, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "iam").mkdir()
    (root / "iam" / "iam.yaml").write_text(f"""\
schema_version: 1
project: {P}
encryption:
  scheme: tink-daead-aes256-siv
  keyset: .iam/keyset.json
owned_service_accounts:
  - account_id: ci-deployer
    display_name: CI deployer
    key_secret: ci-deployer-key
  - account_id: log-relay
    display_name: Log relay
""")
    return root


@pytest.fixture
def clients(fakes):
    """The fake IAM Admin and Secret Manager clients, and a clock standing at NOW."""
    from types import SimpleNamespace

    from fakes.clients import fake_clients
    from fakes.clock import FakeClock

    iam, sm = fakes
    return fake_clients(gcp=SimpleNamespace(iam_admin=lambda: iam), secret_manager=lambda: sm,
                        clock=FakeClock(NOW))


def test_cli_report(ws, capsys, clients):
    assert main(["--root", str(ws), "iam", "audit-keys", "--json"], clients=clients) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["project"] == P and report["stale"] == 2 and report["rotations"] == []
    assert [k["key_id"] for k in report["keys"]] == ["fresh", "old1", "gone", "old2"]


def test_cli_rotate_with_yes(ws, fakes, capsys, clients):
    iam, sm = fakes
    assert main(["--root", str(ws), "iam", "audit-keys", "--max-age", "90d", "--rotate", "--yes"], clients=clients) == 0
    out = capsys.readouterr().out
    assert f"rotated {email('ci-deployer')}: new key new101 stored as projects/{P}/secrets/ci-deployer-key/versions/1" in out
    assert f"skipped {email('log-relay')}" in out                  # owned, but no key_secret
    assert "TOPSECRET" not in out and "PRIVATE KEY" not in out
    assert [k for k, _ in iam.requests if k != "list_keys"] == ["create", "disable"]


def test_cli_rotate_asks_before_disabling(ws, fakes, capsys, monkeypatch, clients):
    import typer

    answers = iter([True, False])  # yes, rotate; no, do not disable yet
    monkeypatch.setattr(typer, "confirm", lambda *a, **k: next(answers))
    assert main(["--root", str(ws), "iam", "audit-keys", "--rotate"], clients=clients) == 0
    assert "disabled none" in capsys.readouterr().out
    assert not any(k == "disable" for k, _ in fakes[0].requests)


# What google-api-core / google-auth raise when the call cannot be made: a refresh refused
# (google/oauth2/_client.py _handle_error_response → RefreshError), retries run out on an
# unresolvable host (google/api_core/retry/retry_unary.py → RetryError with the last
# ServiceUnavailable as cause; the message recorded from a run without network), a 403.
@pytest.mark.parametrize("exc, says, exit_code", [
    (gauth.RefreshError("invalid_grant: Token has been expired or revoked."),
     "Google credentials missing or refused by the IAM API", 2),
    (gexc.RetryError("Timeout of 60.0s exceeded", cause=gexc.ServiceUnavailable(
        "errors resolving iam.googleapis.com:443: Domain name not found")),
     "cannot reach the IAM API while listing the service-account keys of project demo-project: "
     "errors resolving iam.googleapis.com:443", 2),
    (gexc.PermissionDenied("Permission 'iam.serviceAccounts.list' denied on resource"),
     "the IAM API refused listing the service-account keys of project demo-project: 403", 2),
], ids=["refused-credentials", "no-network", "permission-denied"])
def test_a_call_that_cannot_be_made_is_a_user_error_in_one_line(ws, capsys, clients, fakes, exc, says,
                                                                 exit_code):
    iam, _ = fakes

    def fail(request):
        raise exc
    iam.list_service_accounts = fail
    assert main(["--root", str(ws), "iam", "audit-keys"], clients=clients) == exit_code
    cap = capsys.readouterr()
    assert cap.out == "" and "internal error" not in cap.err
    (line,) = cap.err.splitlines()
    assert line.startswith("error: ") and says in line and " — " in line


def test_without_application_default_credentials(ws, capsys, monkeypatch, tmp_path):
    """The real IAM Admin client with ADC pointing at a file that does not exist: the one-line
    cause and how to provide credentials (google.auth._default: DefaultCredentialsError)."""
    from clusterstack.clients import Clients

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    assert main(["--root", str(ws), "iam", "audit-keys"], clients=Clients.production()) == 2
    cap = capsys.readouterr()
    (line,) = cap.err.splitlines()
    assert cap.out == "" and line.startswith("error: no Google credentials for the IAM API")
    assert "gcloud auth application-default login" in line and "GOOGLE_APPLICATION_CREDENTIALS" in line
