"""clusterstack.secrets.resolve for gcp-secret:// specs: every failure of the Secret Manager
client — no credentials, rejected credentials, an API error — is a SecretResolutionError
(exit 2) naming the spec, never an internal error."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth

from clusterstack.secrets import SecretResolutionError, SecretSpec, resolve

SPEC = SecretSpec.parse("gcp-secret://projects/demo-project/secrets/pulumi-state-passphrase/versions/latest")


class RaisingSecretManager:
    """The SecretManagerServiceClient slice, failing the way the real client does."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.names: list[str] = []

    def access_secret_version(self, *, name: str):
        self.names.append(name)
        raise self.error


@pytest.mark.parametrize("error, fragment", [
    (gauth.DefaultCredentialsError("Your default credentials were not found."), "Secret Manager: no Google credentials (Your default credentials were not found"),
    (gauth.RefreshError("invalid_grant: Token has been expired or revoked."), "Google credentials rejected (RefreshError)"),
    (gexc.PermissionDenied("Permission 'secretmanager.versions.access' denied"), "Secret Manager: Permission 'secretmanager.versions.access' denied (403)"),
    (gexc.NotFound("Secret [pulumi-state-passphrase] not found"), "Secret Manager: Secret [pulumi-state-passphrase] not found (404)"),
    (gexc.RetryError("Deadline of 60.0s exceeded", cause=None), "Secret Manager: unreachable (RetryError)"),
], ids=["no-credentials", "refresh", "permission-denied", "not-found", "retry"])
def test_client_failures_become_secret_resolution_errors(error, fragment):
    sm = RaisingSecretManager(error)
    with pytest.raises(SecretResolutionError) as e:
        resolve(SPEC, secret_manager=sm)
    text = e.value.render()
    assert e.value.exit_code == 2
    assert str(SPEC) in text and fragment in text
    assert "gcloud auth application-default login" in text
    assert sm.names == [SPEC.ref]


def test_the_real_client_without_credentials_is_a_secret_resolution_error(monkeypatch, tmp_path):
    """No client injected: the real SecretManagerServiceClient's constructor raises
    DefaultCredentialsError when ADC point at a file that does not exist."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(SecretResolutionError) as e:
        resolve(SPEC)
    assert "no Google credentials" in e.value.render() and str(SPEC) in e.value.render()


def test_a_working_client_still_resolves():
    sm = SimpleNamespace(access_secret_version=lambda name: SimpleNamespace(
        payload=SimpleNamespace(data=b"correct horse")))
    assert resolve(SPEC, secret_manager=sm) == "correct horse"
