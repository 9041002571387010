"""Cloud KMS: the key-encryption key of the IAM keyset (docs/iam.md), behind one Protocol.

:class:`Kms` is what the IAM flows need of KMS: a ``gcp-kms://…`` key URI → a Tink AEAD
backed by that Cloud KMS key. :class:`GcpKms` is the production one: Tink's own Cloud KMS
integration (``tink.integration.gcpkms.new_client(kms_v1_client=…, key_uri=…)``, tink 1.16.1
``tink/integration/gcpkms/_gcp_kms_client.py`` ``new_client``/``_KmsClient.get_aead``) over a
``google.cloud.kms_v1.KeyManagementServiceClient`` with Application Default Credentials
(``gcloud auth application-default login`` or the CI's workload identity). The client is
built on first call (no ``google.*``/``tink`` import before): ``Clients.kms`` holds one, and
tests pass ``GcpKms(make_client=FakeKms)`` (``tests/fakes/gcp_api.py``) — Tink's real wiring
against a fake KMS, with no module attribute replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from tink import aead


class Kms(Protocol):
    """``gcp-kms://projects/P/locations/L/keyRings/R/cryptoKeys/K`` → the Tink ``aead.Aead``
    of that key (Encrypt/Decrypt calls of Cloud KMS API v1). Raises ``tink.TinkError`` for a
    URI Tink refuses; the KMS call's own errors (``google.api_core.exceptions``) surface at
    ``encrypt``/``decrypt``."""

    def __call__(self, key_uri: str) -> "aead.Aead":
        ...


class GcpKms:
    """The production :class:`Kms`; ``make_client()`` builds the KMS API client (default:
    ``kms_v1.KeyManagementServiceClient()``, Application Default Credentials) on first call."""

    def __init__(self, make_client: Callable[[], Any] | None = None) -> None:
        self._make_client = make_client
        self._client: Any = None

    def __call__(self, key_uri: str) -> "aead.Aead":
        from tink.integration import gcpkms

        if self._client is None:
            if self._make_client is None:
                from google.cloud import kms_v1

                self._client = kms_v1.KeyManagementServiceClient()
            else:
                self._client = self._make_client()
        return gcpkms.new_client(kms_v1_client=self._client, key_uri=key_uri).get_aead(key_uri)


def gcp_kms_aead(key_uri: str) -> "aead.Aead":
    """:class:`GcpKms` with Application Default Credentials (a fresh client per call): the
    default ``kms_aead=`` of the IAM flows called outside the CLI."""
    return GcpKms()(key_uri)
