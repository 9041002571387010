"""clusterstack.secrets.resolve for gcp-secret:// specs: every failure of the Secret Manager
client — no credentials, rejected credentials, an API error — is a SecretResolutionError
(exit 2) naming the spec, never an internal error."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth

from clusterstack.config.secretspec import SecretSpec
from clusterstack.secrets import SecretResolutionError, resolve
from fakes.gcp_api import FakeSecretManager

SPEC = SecretSpec.parse("gcp-secret://projects/demo-project/secrets/pulumi-state-passphrase/versions/latest")


WHILE = f"while reading {SPEC.ref}"


def failing(error: BaseException) -> FakeSecretManager:
    sm = FakeSecretManager({SPEC.ref: "unused"})
    sm.access_error = error
    return sm


@pytest.mark.parametrize("error, fragment", [
    (gauth.DefaultCredentialsError("Your default credentials were not found."),
     f"Secret Manager: Google credentials missing or refused by the Secret Manager API {WHILE} "
     "(Your default credentials were not found)"),
    (gauth.RefreshError("invalid_grant: Token has been expired or revoked."),
     f"Google credentials missing or refused by the Secret Manager API {WHILE} (invalid_grant: Token has been expired or revoked)"),
    (gexc.PermissionDenied("Permission 'secretmanager.versions.access' denied"),
     f"Secret Manager: the Secret Manager API refused reading {SPEC.ref}: 403 Permission 'secretmanager.versions.access' denied"),
    (gexc.NotFound("Secret [pulumi-state-passphrase] not found"),
     f"Secret Manager: the Secret Manager API refused reading {SPEC.ref}: 404 Secret [pulumi-state-passphrase] not found"),
    (gexc.ServiceUnavailable("failed to connect to all addresses"),
     f"Secret Manager: cannot reach the Secret Manager API {WHILE}: failed to connect to all addresses"),
    (gexc.RetryError("Deadline of 60.0s exceeded", cause=None),
     f"Secret Manager: cannot reach the Secret Manager API {WHILE}: Deadline of 60.0s exceeded"),
], ids=["no-credentials", "refresh", "permission-denied", "not-found", "unavailable", "retry"])
def test_client_failures_become_secret_resolution_errors(error, fragment):
    sm = failing(error)
    with pytest.raises(SecretResolutionError) as e:
        resolve(SPEC, secret_manager=sm)
    text = e.value.render()
    assert e.value.exit_code == 2
    assert str(SPEC) in text and fragment in text
    assert "gcloud auth application-default login" in text
    assert sm.names == [SPEC.ref]


def test_a_bug_in_the_client_is_not_hidden_as_a_user_error():
    with pytest.raises(TypeError):
        resolve(SPEC, secret_manager=failing(TypeError("unexpected keyword")))


def test_the_real_client_without_credentials_is_a_secret_resolution_error(monkeypatch, tmp_path):
    """No client injected: the real SecretManagerServiceClient's constructor raises
    DefaultCredentialsError when ADC point at a file that does not exist."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(SecretResolutionError) as e:
        resolve(SPEC)
    assert "no Google credentials" in e.value.render() and str(SPEC) in e.value.render()
    # google-auth's "File …/missing.json was not found." keeps its file name whole
    assert f"(File {tmp_path / 'missing.json'} was not found)" in e.value.render()


def test_a_working_client_still_resolves():
    sm = SimpleNamespace(access_secret_version=lambda name: SimpleNamespace(
        payload=SimpleNamespace(data=b"correct horse")))
    assert resolve(SPEC, secret_manager=sm) == "correct horse"


def test_a_well_formed_spec_with_a_too_short_project_id_says_so():
    # "a well-formed secret spec with a too-short project id is called 'not a secret spec'"
    with pytest.raises(ValueError) as exc:
        SecretSpec.parse("gcp-secret://projects/lab/secrets/dns/versions/latest")
    assert "not a secret spec" not in str(exc.value)
    assert "project 'lab' is 3 characters; a GCP project id has 6–30" in str(exc.value)
