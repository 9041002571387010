"""The GCP adapter: every Google Cloud client clusterstack uses, built in one place.

:class:`GcpClients` builds them on first use (no ``google.*`` import before), with Application
Default Credentials unless ``credentials`` is given, against Google's endpoints unless
``api_endpoint`` is (a local fake or emulator: ``http://127.0.0.1:PORT``; tests pass
``AnonymousCredentials``). Transport: REST for the APIs a local fake serves (Cloud Run, Compute
Engine, Artifact Registry), the client's default otherwise.

- Secret Manager (``google-cloud-secret-manager``): :class:`SecretManagerClient` — the two
  calls used, ``AccessSecretVersion`` (:mod:`clusterstack.secrets`) and ``AddSecretVersion``
  (``iam audit-keys --rotate``);
- Cloud Run Admin API v2 (``google-cloud-run``): :class:`CloudRunClients`, the
  ``ServicesClient`` and ``RevisionsClient`` of ``deploy`` (:mod:`clusterstack.deploy.cloudrun`);
  the ``JobsClient`` and ``ExecutionsClient`` behind :class:`CloudRunApi`
  (:mod:`clusterstack.deploy.cloudrunjob`);
- Compute Engine (``google-cloud-compute``) and Artifact Registry
  (``google-cloud-artifact-registry``) behind :class:`ComputeApi` (:class:`GoogleCompute`): the
  instances of a ``gce-vm`` service (:mod:`clusterstack.deploy.gce`) and the reads of ``verify``
  and ``imports``;
- IAM Admin (``google-cloud-iam``): ``IAMClient`` behind :class:`IamAdminClient`, of ``iam audit-keys``
  (:mod:`clusterstack.iam.audit`);
- Resource Manager API v3: :class:`ResourceManagerClient`, the one read ``iam scan`` makes
  (``projects.getIamPolicy``), over ``google.auth``'s ``AuthorizedSession`` (REST; no
  dedicated client library is a dependency for one call).

Missing credentials (``google.auth.exceptions.DefaultCredentialsError`` while a client is built)
raise :class:`GcpCredentialsError` (exit 2) naming the API and saying how to log in; callers
that report per resource (``verify``) turn it into their own finding. Cloud KMS is reached
through Tink's Cloud KMS integration over a KMS API client: :mod:`clusterstack.adapters.kms`.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from clusterstack.adapters.lookups import CheckError, GcpObject, NegMember, Unreachable
from clusterstack.errors import ClusterstackError

LOGIN_HINT = ("run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS")


class GcpCredentialsError(ClusterstackError):
    """No Application Default Credentials for a Google Cloud API (exit 2)."""


class GcpApiError(ClusterstackError):
    """A Google API answered with an error, or could not be reached (exit 2). ``kind``: which
    (:data:`UNREACHABLE`, :data:`NOT_FOUND`, :data:`PERMISSION_DENIED`, :data:`CONFLICT`,
    :data:`REFUSED`), so a caller can act on it without looking at Google's exception types."""

    def __init__(self, message: str = "", hint: str = "", *, kind: str = "refused", **kw: Any) -> None:
        super().__init__(message, hint, **kw)
        self.kind = kind


CREDENTIALS = "credentials"
UNREACHABLE = "unreachable"
NOT_FOUND = "not-found"
PERMISSION_DENIED = "permission-denied"
CONFLICT = "conflict"
REFUSED = "refused"


@dataclass(frozen=True)
class GcpFailure:
    """What a failed call of a Google client means: ``kind`` (one of the constants above),
    ``code`` (the HTTP status, ``None`` when nothing answered) and a one-line ``detail``."""

    kind: str
    code: int | None
    detail: str


def first_sentence(text: object) -> str:
    """The first sentence of ``text`` without its full stop: google-auth's messages are several
    sentences ("File /k.json was not found. …"), and a file name's dots are not sentence ends."""
    return re.split(r"\.(?:\s|$)", str(text).strip(), maxsplit=1)[0]


def classify(exc: BaseException) -> GcpFailure | None:
    """The meaning of ``exc`` raised by a Google client, or ``None`` when it is not a failure of
    the outside system (a bug of ours: let it propagate). The one mapping of Google's errors —
    from google-api-core (``google/api_core/exceptions.py``: one ``GoogleAPICallError`` subclass
    per HTTP status / gRPC code, ``RetryError`` when retries run out), google-auth
    (``google/auth/exceptions.py``: ``TransportError`` a failed refresh request, any other
    ``GoogleAuthError`` missing or refused credentials) and ``requests`` (the REST transport
    and :class:`ResourceManagerClient`):

    - no answer: ``TransportError``, ``requests.RequestException``, ``RetryError``, 503
      ``ServiceUnavailable``, 504 ``GatewayTimeout`` (and its gRPC ``DeadlineExceeded``), 500
      ``InternalServerError`` (Google's guidance retries all of these) → :data:`UNREACHABLE`;
    - ``GoogleAuthError``, 401 ``Unauthorized`` (gRPC ``Unauthenticated``) → :data:`CREDENTIALS`;
    - 404 ``NotFound`` → :data:`NOT_FOUND`; 403 ``Forbidden`` (gRPC ``PermissionDenied``; the
      REST transports raise the HTTP class, ``from_http_response``) → :data:`PERMISSION_DENIED`;
    - 409 ``Conflict`` (gRPC ``Aborted``), ``FailedPrecondition`` (an etag precondition), 412
      ``PreconditionFailed`` (Compute Engine's stale metadata fingerprint, ``conditionNotMet``)
      → :data:`CONFLICT`; any other ``GoogleAPICallError`` → :data:`REFUSED`."""
    import requests
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as gauth

    def first_line(text: object) -> str:
        return str(text).split("\n")[0][:200]

    if isinstance(exc, (gauth.TransportError, requests.RequestException)):
        return GcpFailure(UNREACHABLE, None, first_line(exc) or type(exc).__name__)
    if isinstance(exc, gexc.RetryError):
        cause = getattr(exc, "cause", None)
        detail = (_api_message(cause) if isinstance(cause, gexc.GoogleAPICallError)
                  else str(cause) if cause else "") or exc.message
        return GcpFailure(UNREACHABLE, None, first_line(detail) or "RetryError")
    if isinstance(exc, (gauth.GoogleAuthError, gexc.Unauthorized)):
        detail = first_sentence(exc.args[0] if exc.args else exc)[:200] or type(exc).__name__
        return GcpFailure(CREDENTIALS, 401 if isinstance(exc, gexc.Unauthorized) else None, detail)
    if isinstance(exc, gexc.GoogleAPICallError):
        code = getattr(exc.code, "value", exc.code)
        kind = (UNREACHABLE if isinstance(exc, (gexc.ServiceUnavailable, gexc.GatewayTimeout,
                                                gexc.InternalServerError))
                else NOT_FOUND if isinstance(exc, gexc.NotFound)
                else PERMISSION_DENIED if isinstance(exc, gexc.Forbidden)
                else CONFLICT if isinstance(exc, (gexc.Conflict, gexc.FailedPrecondition,
                                                  gexc.PreconditionFailed))
                else REFUSED)
        return GcpFailure(kind, code, first_line(_api_message(exc)))
    return None


def _api_message(exc: Any) -> str:
    """Google's message of a ``GoogleAPICallError``, without the ``"METHOD url: "`` that
    google-api-core's ``from_http_response`` puts before it (the REST transports)."""
    message = str(exc.message)
    request = getattr(getattr(exc, "response", None), "request", None)
    prefix = f"{getattr(request, 'method', '')} {getattr(request, 'url', '')}: "
    return message[len(prefix):] if request is not None and message.startswith(prefix) else message


_HINTS = {UNREACHABLE: "check the network (and a proxy, if any) and retry",
          PERMISSION_DENIED: "the caller lacks a permission on the project: see the message",
          NOT_FOUND: "check the project id and the resource's name",
          CONFLICT: "it changed meanwhile: read it again and retry",
          REFUSED: "see the message"}


def as_error(exc: BaseException, api: str, what: str, hints: dict[str, str] | None = None,
             ) -> GcpCredentialsError | GcpApiError | None:
    """The located user error (exit 2) for ``exc`` (see :func:`classify`), or ``None``:
    :data:`CREDENTIALS` → :class:`GcpCredentialsError` "Google credentials missing or refused
    by the <api> while <what> (…)" with :data:`LOGIN_HINT`; :data:`UNREACHABLE` →
    :class:`GcpApiError` "cannot reach the <api> while <what>: …"; any other →
    :class:`GcpApiError` "the <api> refused <what>: <code> <message>". ``hints``: per kind,
    instead of the generic hint."""
    failure = classify(exc)
    if failure is None:
        return None
    hint = {**_HINTS, **(hints or {})}.get(failure.kind, "")
    if failure.kind == CREDENTIALS:
        return GcpCredentialsError(f"Google credentials missing or refused by the {api} while "
                                   f"{what} ({failure.detail})", (hints or {}).get(CREDENTIALS, LOGIN_HINT))
    if failure.kind == UNREACHABLE:
        return GcpApiError(f"cannot reach the {api} while {what}: {failure.detail}", hint, kind=UNREACHABLE)
    return GcpApiError(f"the {api} refused {what}: {failure.code} {failure.detail}", hint, kind=failure.kind)


def call_errors(api: str, what: str, hints: dict[str, str] | None = None):
    """A context manager for calls of a Google client: every failure of the outside system
    (:func:`classify`) becomes the located user error of :func:`as_error` (exit 2), never an
    internal error; anything else propagates. ``what``: the operation, e.g. ``listing the
    service accounts of P``; ``hints``: per kind."""
    import contextlib

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except Exception as exc:
            error = as_error(exc, api, what, hints)
            if error is None:
                raise
            raise error from None

    return guard()


RESOURCE_MANAGER = "https://cloudresourcemanager.googleapis.com"
POLICY_VERSION = 3
"""The IAM policy version ``iam scan`` requests. Resource Manager API reference,
``projects.getIamPolicy`` / ``GetPolicyOptions.requestedPolicyVersion``: "Policies with any
conditional role bindings must specify version 3"; a lower version hides the conditions (IAM
"Policy versions": such bindings come back with the role suffixed ``_withcond_<hash>``)."""


class ResourceManagerClient:
    """Resource Manager API v3 over an authorized ``requests`` session (``session``) at
    ``root`` (Google's endpoint, or a fake's)."""

    def __init__(self, session: Any, root: str = RESOURCE_MANAGER, timeout: float = 30.0) -> None:
        self._session, self._root, self._timeout = session, root.rstrip("/"), timeout

    def get_project_iam_policy(self, project: str) -> dict:
        """The project's IAM policy as the API returns it: ``{"version", "etag", "bindings":
        [{"role", "members": [...], "condition"?: {"title", "expression", "description"?}}]}``
        (Resource Manager API reference: ``POST /v3/projects/{project}:getIamPolicy``, body
        ``{"options": {"requestedPolicyVersion": 3}}``, response ``Policy``). Raises
        GcpApiError (an HTTP error, with Google's message, or no connection) and
        GcpCredentialsError (a 401, or a refresh that fails), through :func:`call_errors`."""
        from google.api_core import exceptions as gexc

        url = f"{self._root}/v3/projects/{project}:getIamPolicy"
        hints = {PERMISSION_DENIED: "the caller needs resourcemanager.projects.getIamPolicy on the "
                                    "project (e.g. roles/iam.securityReviewer)"}
        with call_errors("Resource Manager API", f"getIamPolicy on project {project}", hints):
            r = self._session.post(url, json={"options": {"requestedPolicyVersion": POLICY_VERSION}},
                                   timeout=self._timeout)
            if r.status_code != 200:
                try:
                    message = r.json()["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    message = r.text[:200]
                # Google's error document → its exception type (as the client libraries do)
                raise gexc.from_http_status(r.status_code, message, response=r)
        return r.json()


class ServiceAccount(Protocol):
    """``iam_admin_v1.ServiceAccount``: ``name`` (``projects/P/serviceAccounts/EMAIL``), ``email``."""

    @property
    def name(self) -> str: ...
    @property
    def email(self) -> str: ...


class ServiceAccountKey(Protocol):
    """``iam_admin_v1.ServiceAccountKey``: ``name`` (``…/keys/ID``), ``valid_after_time``
    (timezone-aware), ``disabled``; ``private_key_data`` (bytes) only in the answer of
    ``CreateServiceAccountKey``."""

    @property
    def name(self) -> str: ...
    @property
    def valid_after_time(self) -> datetime: ...
    @property
    def disabled(self) -> bool: ...
    @property
    def private_key_data(self) -> bytes: ...


class ServiceAccountKeys(Protocol):
    """``iam_admin_v1.ListServiceAccountKeysResponse``."""

    @property
    def keys(self) -> Sequence[ServiceAccountKey]: ...


class IamAdminClient(Protocol):
    """The slice of ``google.cloud.iam_admin_v1.IAMClient`` that ``iam audit-keys`` uses
    (IAM Admin API v1, request-dict calling convention): raises google-api-core's errors
    (:func:`call_errors` sorts them)."""

    def list_service_accounts(self, request: dict[str, Any]) -> Iterable[ServiceAccount]:
        """``ListServiceAccounts`` of ``request["name"]`` (``projects/P``), every page."""
        ...

    def list_service_account_keys(self, request: dict[str, Any]) -> ServiceAccountKeys:
        """``ListServiceAccountKeys`` of ``request["name"]`` (``key_types``)."""
        ...

    def create_service_account_key(self, request: dict[str, Any]) -> ServiceAccountKey:
        """``CreateServiceAccountKey``: the new key, with its ``private_key_data``."""
        ...

    def disable_service_account_key(self, request: dict[str, Any]) -> None:
        ...

    def delete_service_account_key(self, request: dict[str, Any]) -> None:
        ...


class SecretVersion(Protocol):
    """``secretmanager.SecretVersion``: ``name`` (``projects/P/secrets/S/versions/N``)."""

    @property
    def name(self) -> str: ...


class SecretPayload(Protocol):
    @property
    def data(self) -> bytes: ...


class AccessSecretVersionResponse(Protocol):
    """``secretmanager.AccessSecretVersionResponse``: ``payload.data`` (bytes)."""

    @property
    def payload(self) -> SecretPayload: ...


class SecretManagerClient(Protocol):
    """The slice of ``google.cloud.secretmanager.SecretManagerServiceClient`` clusterstack uses."""

    def access_secret_version(self, *, name: str) -> AccessSecretVersionResponse:
        """``.payload.data`` (bytes) of ``projects/P/secrets/S/versions/V``."""
        ...

    def add_secret_version(self, request: dict[str, Any]) -> SecretVersion:
        """A new version of ``request["parent"]`` with ``request["payload"]``
        (:func:`secret_payload`)."""
        ...


def secret_payload(data: bytes) -> dict[str, Any]:
    """The ``payload`` of an ``AddSecretVersion`` request: ``{"data": data, "data_crc32c":
    CRC32C of data}`` (Secret Manager verifies the checksum and refuses a corrupted payload;
    ``google-crc32c``, the checksum library of Google's clients)."""
    import google_crc32c

    return {"data": data, "data_crc32c": google_crc32c.value(data)}


def access_secret(name: str, secret_manager: SecretManagerClient | None = None) -> str:
    """The value (UTF-8 text) of Secret Manager version ``name``
    (``projects/P/secrets/S/versions/V``, ``AccessSecretVersion``) through ``secret_manager``
    or, when None, the client of :class:`GcpClients` with Application Default Credentials.
    Every failure of the client — also while it is built — is :func:`call_errors`'s
    GcpCredentialsError / GcpApiError (exit 2)."""
    with call_errors("Secret Manager API", f"reading {name}"):
        if secret_manager is None:
            secret_manager = GcpClients().secret_manager()
        response = secret_manager.access_secret_version(name=name)
    return response.payload.data.decode("utf-8")


@dataclass(frozen=True)
class CloudRunClients:
    """The Cloud Run Admin API v2 clients ``deploy`` uses."""

    services: Any   # run_v2.ServicesClient
    revisions: Any  # run_v2.RevisionsClient


def _no_credentials(api: str, exc: Exception) -> GcpCredentialsError:
    detail = first_sentence(exc.args[0] if exc.args else exc)
    return GcpCredentialsError(f"no Google credentials for the {api} ({detail})", LOGIN_HINT)


@dataclass
class GcpClients:
    """Builds (once each) the Google Cloud clients. ``api_endpoint``: every API at this root
    instead of Google's; ``credentials``: instead of Application Default Credentials. Raises
    GcpCredentialsError from each accessor when there are no credentials."""

    api_endpoint: str | None = None
    credentials: Any = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def _options(self) -> Any:
        if self.api_endpoint is None:
            return None
        from google.api_core.client_options import ClientOptions

        return ClientOptions(api_endpoint=self.api_endpoint)

    def _build(self, key: str, api: str, make: Any) -> Any:
        if key not in self._cache:
            from google.auth.exceptions import DefaultCredentialsError

            try:
                self._cache[key] = make()
            except DefaultCredentialsError as exc:
                raise _no_credentials(api, exc) from None
        return self._cache[key]

    def secret_manager(self) -> SecretManagerClient:
        """``SecretManagerServiceClient``."""
        def make():
            from google.cloud import secretmanager

            return secretmanager.SecretManagerServiceClient(credentials=self.credentials,
                                                            client_options=self._options())
        return self._build("secretmanager", "Secret Manager API", make)

    def cloud_run(self) -> CloudRunClients:
        """Cloud Run's ``ServicesClient`` and ``RevisionsClient`` (REST transport)."""
        def make():
            from google.cloud import run_v2

            kw = {"credentials": self.credentials, "transport": "rest", "client_options": self._options()}
            return CloudRunClients(run_v2.ServicesClient(**kw), run_v2.RevisionsClient(**kw))
        return self._build("run", "Cloud Run API", make)

    def run_jobs(self) -> tuple[Any, Any]:
        """Cloud Run's ``JobsClient`` and ``ExecutionsClient`` (REST transport)."""
        def make():
            from google.cloud import run_v2

            kw = {"credentials": self.credentials, "transport": "rest", "client_options": self._options()}
            return run_v2.JobsClient(**kw), run_v2.ExecutionsClient(**kw)
        return self._build("run-jobs", "Cloud Run API", make)

    def compute(self, name: str) -> Any:
        """The ``google.cloud.compute_v1`` client class ``name`` (``AddressesClient``, …), REST."""
        def make():
            from google.cloud import compute_v1

            return getattr(compute_v1, name)(credentials=self.credentials, transport="rest",
                                             client_options=self._options())
        return self._build(f"compute.{name}", "Compute Engine API", make)

    def artifact_registry(self) -> Any:
        """``ArtifactRegistryClient`` (REST)."""
        def make():
            from google.cloud import artifactregistry_v1

            return artifactregistry_v1.ArtifactRegistryClient(credentials=self.credentials, transport="rest",
                                                              client_options=self._options())
        return self._build("artifactregistry", "Artifact Registry API", make)

    def iam_admin(self) -> IamAdminClient:
        """``iam_admin_v1.IAMClient``."""
        def make():
            from google.cloud import iam_admin_v1

            return iam_admin_v1.IAMClient(credentials=self.credentials, client_options=self._options())
        return self._build("iam", "IAM API", make)


    def resource_manager(self) -> ResourceManagerClient:
        """:class:`ResourceManagerClient` (scope ``cloud-platform``)."""
        def make():
            import google.auth
            from google.auth.transport.requests import AuthorizedSession

            creds = self.credentials
            if creds is None:
                creds, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
            return ResourceManagerClient(AuthorizedSession(creds), self.api_endpoint or RESOURCE_MANAGER)
        return self._build("resourcemanager", "Resource Manager API", make)


class LazySecretManager:
    """A :class:`SecretManagerClient` that builds the real one (``factory()``) on its first
    call, so a command whose secrets are all ``env:`` / ``file:`` never needs Google
    credentials, and a missing credential is reported (by :func:`clusterstack.secrets.resolve`)
    for the spec that needed it."""

    def __init__(self, factory: Callable[[], SecretManagerClient]) -> None:
        self._factory = factory
        self._client: SecretManagerClient | None = None

    def _get(self) -> SecretManagerClient:
        if self._client is None:
            self._client = self._factory()
        return self._client

    def access_secret_version(self, *, name: str) -> AccessSecretVersionResponse:
        return self._get().access_secret_version(name=name)

    def add_secret_version(self, request: dict[str, Any]) -> SecretVersion:
        return self._get().add_secret_version(request)


# --- Compute Engine instances and Cloud Run jobs (``deploy``: gce-vm, cloud-run-job) -----------

class GcpCallError(GcpApiError):
    """A call that failed: ``failure`` as :func:`classify` sorts it; ``stage`` says where —
    ``"request"`` (the API answered the request with an error, or no answer came) or
    ``"operation"`` (the request was accepted and its long-running operation ended in an
    error, or could not be followed). A caller decides from both what the failure means (a
    write whose request got no answer may have been applied; one refused at the request was
    not)."""

    def __init__(self, failure: GcpFailure, stage: str, what: str) -> None:
        code = f"{failure.code} " if failure.code else ""
        super().__init__(f"{what}: {code}{failure.detail}", kind=failure.kind)
        self.failure, self.stage = failure, stage


def _rest_json(message: Any) -> dict[str, Any]:
    """A proto-plus message → its REST JSON (camelCase field names, enum names)."""
    return type(message).to_dict(message, preserving_proto_field_name=False, use_integers_for_enums=False)


def _call(fn: Any, what: str, stage: str = "request") -> Any:
    """``fn()``; a failure of the outside system (:func:`classify`) as :class:`GcpCallError`,
    missing credentials as :class:`GcpCredentialsError`; anything else propagates."""
    try:
        return fn()
    except Exception as exc:
        failure = classify(exc)
        if failure is None:
            raise
        if failure.kind == CREDENTIALS:
            raise GcpCredentialsError(f"Google credentials missing or refused while {what} "
                                      f"({failure.detail})", LOGIN_HINT) from None
        raise GcpCallError(failure, stage, what) from None


class ComputeApi(Protocol):
    """Compute Engine API v1 (and the Artifact Registry repositories ``verify`` reads beside
    it), objects as the REST API's JSON (camelCase, the field names of the API reference).

    The reads of ``verify`` and ``imports`` (:meth:`get`, :meth:`neg_endpoints`) answer None
    for an object that does not exist (404) and raise
    :class:`~clusterstack.adapters.lookups.CheckError` for any other failure
    (:class:`~clusterstack.adapters.lookups.Unreachable` when nothing answered or no
    credentials exist). The calls of a ``gce-vm`` service (``instances`` and
    ``zoneOperations``) raise :class:`GcpCredentialsError` (no or refused credentials) and
    :class:`GcpCallError` (``stage`` ``"request"`` or ``"operation"``); a write returns when
    its zone operation is ``DONE`` without error (``timeout`` seconds at most; still running
    then → a :class:`GcpCallError` of kind :data:`UNREACHABLE` at stage ``"operation"``)."""

    def get(self, obj: GcpObject) -> dict[str, Any] | None:
        """The object (``get`` of its collection), or None when it does not exist."""
        ...

    def neg_endpoints(self, member: NegMember) -> list[dict[str, Any]] | None:
        """``networkEndpoint`` items of the member's NEG (``listNetworkEndpoints``, at most
        :data:`MAX_ENDPOINTS`), or None when the NEG does not exist."""
        ...

    def get_instance(self, project: str, zone: str, instance: str) -> dict[str, Any]:
        """``instances.get``: ``status`` (RUNNING, STOPPING, TERMINATED …),
        ``metadata {fingerprint, items: [{key, value}]}``, ``lastStartTimestamp`` …"""
        ...

    def set_metadata(self, project: str, zone: str, instance: str, *, fingerprint: str,
                     items: dict[str, str]) -> None:
        """``instances.setMetadata``: replace the instance's metadata with ``items`` (the whole
        set: a key left out is removed), on the condition that its fingerprint is still
        ``fingerprint`` (else 412 ``conditionNotMet``: kind :data:`CONFLICT`, nothing
        written)."""
        ...

    def guest_attributes(self, project: str, zone: str, instance: str, namespace: str) -> dict[str, str] | None:
        """``instances.getGuestAttributes`` of ``queryPath=<namespace>/``: ``{key: value}``,
        or None when the VM has written none there (404)."""
        ...

    def stop(self, project: str, zone: str, instance: str) -> None:
        """``instances.stop``: a graceful shutdown (the guest gets ACPI power-off)."""
        ...

    def start(self, project: str, zone: str, instance: str) -> None:
        """``instances.start``: boot a stopped instance (its startup script runs again)."""
        ...


MAX_ENDPOINTS = 10_000   # bound on the NEG member listing (pages are followed up to this many)

# collection → (client class name in compute_v1, keyword of the name, location keyword)
_COMPUTE: dict[str, tuple[str, str, str | None]] = {
    "addresses@region": ("AddressesClient", "address", "region"),
    "addresses": ("GlobalAddressesClient", "address", None),
    "backendServices": ("BackendServicesClient", "backend_service", None),
    "healthChecks": ("HealthChecksClient", "health_check", None),
    "networkEndpointGroups": ("NetworkEndpointGroupsClient", "network_endpoint_group", "zone"),
    "firewalls": ("FirewallsClient", "firewall", None),
    "securityPolicies": ("SecurityPoliciesClient", "security_policy", None),
    "sslCertificates": ("SslCertificatesClient", "ssl_certificate", None),
    "sslPolicies": ("SslPoliciesClient", "ssl_policy", None),
    "urlMaps": ("UrlMapsClient", "url_map", None),
    "targetHttpsProxies": ("TargetHttpsProxiesClient", "target_https_proxy", None),
    "forwardingRules": ("GlobalForwardingRulesClient", "forwarding_rule", None),
}


class GoogleCompute:
    """:class:`ComputeApi` over ``google-cloud-compute``'s clients (``InstancesClient``,
    ``ZoneOperationsClient``, one client per collection read) and ``google-cloud-artifact-
    registry``'s ``ArtifactRegistryClient``, REST transport, of ``clients`` (default: Google's
    endpoints with Application Default Credentials). ``timeout``: seconds per request and for
    an operation to finish; the reads are asked once (no retry)."""

    def __init__(self, clients: GcpClients | None = None, *, timeout: float = 60.0) -> None:
        self._clients = clients if clients is not None else GcpClients()
        self._timeout = timeout

    # -- the reads of verify / imports ----------------------------------------------------
    def _reader(self, name: str) -> Any:
        try:
            if name == "ArtifactRegistryClient":
                return self._clients.artifact_registry()
            return self._clients.compute(name)
        except GcpCredentialsError as exc:
            raise Unreachable(exc.problems[0].message) from None

    def _read(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, or ``None`` when the object does not exist; every other failure as
        :func:`classify` sorts it: no answer → Unreachable (asked once), credentials or a
        refusal → CheckError (this object unverified)."""
        try:
            return fn()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.kind == NOT_FOUND:
                return None
            if failure.kind == UNREACHABLE:
                raise Unreachable(f"GCP API unreachable: {type(exc).__name__}: {failure.detail}") from None
            if failure.kind == CREDENTIALS:
                raise CheckError(f"GCP credentials: {failure.detail}") from None
            raise CheckError(f"{type(exc).__name__}: {failure.detail}") from None

    def get(self, obj: GcpObject) -> dict[str, Any] | None:
        if obj.collection == "repositories":
            client = self._reader("ArtifactRegistryClient")
            found = self._read(lambda: client.get_repository(
                name=obj.ref, retry=None, timeout=self._timeout))
            return None if found is None else _rest_json(found)
        key = "addresses@region" if obj.collection == "addresses" and obj.region else obj.collection
        if key not in _COMPUTE:
            raise CheckError(f"no reader for GCP collection {obj.collection}")
        client_name, name_kw, where_kw = _COMPUTE[key]
        client = self._reader(client_name)
        kwargs: dict[str, Any] = {"project": obj.project, name_kw: obj.name}
        if where_kw:
            kwargs[where_kw] = getattr(obj, where_kw)
        found = self._read(lambda: client.get(**kwargs, retry=None, timeout=self._timeout))
        return None if found is None else _rest_json(found)

    def neg_endpoints(self, member: NegMember) -> list[dict[str, Any]] | None:
        from google.cloud import compute_v1

        client = self._reader("NetworkEndpointGroupsClient")

        def listing() -> list[dict[str, Any]]:
            pager = client.list_network_endpoints(
                project=member.project, zone=member.zone, network_endpoint_group=member.neg,
                network_endpoint_groups_list_endpoints_request_resource=
                    compute_v1.NetworkEndpointGroupsListEndpointsRequest(health_status="SKIP"),
                retry=None, timeout=self._timeout)
            out = []
            for item in pager:
                out.append(_rest_json(item.network_endpoint))
                if len(out) >= MAX_ENDPOINTS:
                    break
            return out

        return self._read(listing)

    # -- the instance calls of a gce-vm service -------------------------------------------

    def _instances(self) -> Any:
        return self._clients.compute("InstancesClient")

    def _write(self, start: Any, what: str, project: str, zone: str) -> None:
        """``start()`` — a ``*_unary`` call answering the zone ``Operation`` — then
        ``zoneOperations.wait`` until it is ``DONE`` (each wait returns by ~2 minutes: Compute
        Engine API reference, ``zoneOperations.wait``), at most ``timeout`` seconds in all. The
        operations client is built by :class:`GcpClients` (its endpoint; the client library's
        own poller would ignore a local endpoint). An operation that ended with ``error`` →
        :class:`GcpCallError` at stage ``"operation"`` with its ``httpErrorStatusCode``."""
        import time

        from google.cloud import compute_v1

        op = _call(start, what)
        ops = self._clients.compute("ZoneOperationsClient")
        deadline = time.monotonic() + self._timeout
        while op.status != compute_v1.Operation.Status.DONE:
            if time.monotonic() >= deadline:
                raise GcpCallError(GcpFailure(UNREACHABLE, None, f"operation {op.name} not done after "
                                              f"{self._timeout:g} s"), "operation", what)
            name = op.name
            op = _call(lambda: ops.wait(project=project, zone=zone, operation=name, timeout=self._timeout),
                       what, stage="operation")
        if op.error and op.error.errors:
            detail = "; ".join(e.message for e in op.error.errors)[:200]
            kind = CONFLICT if op.http_error_status_code in (409, 412) else REFUSED
            raise GcpCallError(GcpFailure(kind, op.http_error_status_code or None, detail), "operation", what)

    def get_instance(self, project: str, zone: str, instance: str) -> dict[str, Any]:
        found = _call(lambda: self._instances().get(project=project, zone=zone, instance=instance,
                                                    timeout=self._timeout),
                      f"reading instance {project}/{zone}/{instance}")
        return _rest_json(found)

    def set_metadata(self, project: str, zone: str, instance: str, *, fingerprint: str,
                     items: dict[str, str]) -> None:
        from google.cloud import compute_v1

        body = compute_v1.Metadata(fingerprint=fingerprint,
                                   items=[compute_v1.Items(key=k, value=v) for k, v in sorted(items.items())])
        self._write(lambda: self._instances().set_metadata_unary(project=project, zone=zone, instance=instance,
                                                                 metadata_resource=body, timeout=self._timeout),
                    f"setting the metadata of instance {project}/{zone}/{instance}", project, zone)

    def guest_attributes(self, project: str, zone: str, instance: str, namespace: str) -> dict[str, str] | None:
        from google.cloud import compute_v1

        what = f"reading the guest attributes of instance {project}/{zone}/{instance}"
        request = compute_v1.GetGuestAttributesInstanceRequest(project=project, zone=zone, instance=instance,
                                                               query_path=f"{namespace}/")
        try:
            found = _call(lambda: self._instances().get_guest_attributes(request=request, timeout=self._timeout),
                          what)
        except GcpCallError as exc:
            if exc.kind == NOT_FOUND:
                return None
            raise
        items = (_rest_json(found).get("queryValue") or {}).get("items") or []
        return {i["key"]: i.get("value", "") for i in items if i.get("namespace") == namespace}

    def stop(self, project: str, zone: str, instance: str) -> None:
        self._write(lambda: self._instances().stop_unary(project=project, zone=zone, instance=instance,
                                                         timeout=self._timeout),
                    f"stopping instance {project}/{zone}/{instance}", project, zone)

    def start(self, project: str, zone: str, instance: str) -> None:
        self._write(lambda: self._instances().start_unary(project=project, zone=zone, instance=instance,
                                                          timeout=self._timeout),
                    f"starting instance {project}/{zone}/{instance}", project, zone)


class RunEnum(Protocol):
    """A proto-plus enum value of Cloud Run's messages (``name``: e.g. ``CONDITION_SUCCEEDED``)."""

    name: str


class RunCondition(Protocol):
    """``run_v2.Condition``: ``type_`` (``Ready``, …), ``state``, ``message``."""

    type_: str
    state: RunEnum
    message: str


class RunContainer(Protocol):
    image: str


class RunRevision(Protocol):
    """``run_v2.Revision`` (Cloud Run Admin API v2): ``name`` (``projects/…/revisions/R``),
    ``create_time`` (a datetime), ``conditions``, ``annotations``, ``containers``."""

    name: str
    create_time: datetime | None
    conditions: Sequence[RunCondition]
    annotations: Mapping[str, str]
    containers: Sequence[RunContainer]


class RunTrafficStatus(Protocol):
    """``run_v2.TrafficTargetStatus`` / ``TrafficTarget``: ``type_`` (an enum of
    ``TrafficTargetAllocationType``), ``revision`` (short name, empty for LATEST), ``percent``."""

    type_: Any   # the enum (its ``name``) or, as proto-plus accepts it on write, its name
    revision: str
    percent: int


class RunService(Protocol):
    """``run_v2.Service``: ``traffic`` (what is asked; writable), ``traffic_statuses`` (what
    serves), ``latest_ready_revision``, ``etag`` (the update's precondition), ``reconciling``,
    ``terminal_condition``; ``"terminal_condition" in svc`` says whether it is set
    (proto-plus)."""

    traffic: Sequence[RunTrafficStatus]
    traffic_statuses: Sequence[RunTrafficStatus]
    latest_ready_revision: str
    etag: str
    reconciling: bool
    terminal_condition: RunCondition

    def __contains__(self, key: str) -> bool:
        ...


class RunOperation(Protocol):
    """The long-running operation of ``services.patch`` (``google.api_core.operation.Operation``)."""

    def result(self, timeout: float | None = None) -> Any:
        """Wait for it (``concurrent.futures.TimeoutError`` when still running after
        ``timeout`` s); raises google-api-core's error of an operation that failed."""
        ...


class CloudRunApi(Protocol):
    """Cloud Run Admin API v2: the services of ``cloud-run`` services (``services``,
    ``revisions``) and the jobs of ``cloud-run-job`` services (``jobs``, ``executions``).

    The service calls answer the client's own messages (:class:`RunService`,
    :class:`RunRevision`, built and read back with :func:`run_service`, :func:`run_traffic`)
    and raise google-api-core's errors, which the caller sorts with :func:`classify` /
    :func:`call_errors` (an etag precondition and a lost response mean different things to a
    rollback); ``timeout``: seconds for the request. The job calls answer the REST API's JSON
    (``Job``, ``Execution``) and raise :class:`GcpCredentialsError` (no or refused
    credentials) and :class:`GcpCallError` (``stage`` ``"request"`` or ``"operation"``)."""

    def get_service(self, name: str, *, retry_s: float, timeout: float) -> RunService:
        """``services.get`` of ``projects/P/locations/R/services/S``, retried on 503 for
        ``retry_s`` seconds (:func:`run_get_retry`)."""
        ...

    def list_revisions(self, parent: str, *, timeout: float) -> list[RunRevision]:
        """``services.revisions.list``: every revision of the service (pages followed)."""
        ...

    def get_revision(self, name: str, *, timeout: float) -> RunRevision:
        """``services.revisions.get``."""
        ...

    def update_service(self, service: RunService, *, timeout: float) -> RunOperation:
        """``services.patch`` of ``service`` (its ``etag`` the precondition: a stale one is
        409 ``ABORTED`` / 412); the operation is returned, not waited for."""
        ...

    def get_job(self, name: str) -> dict[str, Any]:
        """``jobs.get`` of ``projects/P/locations/R/jobs/J``."""
        ...

    def list_executions(self, job: str) -> list[dict[str, Any]]:
        """``jobs.executions.list``: every retained execution of ``job`` (pages followed), each
        with the ``template`` (TaskTemplate) it ran and its ``conditions``."""
        ...

    def update_job(self, job: dict[str, Any]) -> None:
        """``jobs.patch`` of ``job`` (its ``etag`` the precondition: a stale one is 409
        ``ABORTED``, kind :data:`CONFLICT`), then its long-running operation."""
        ...

    def run_job(self, name: str, etag: str) -> str:
        """``jobs.run``: start an execution of the job as it is at ``etag``; returns the
        execution's name (from the operation's metadata) without waiting for it."""
        ...

    def get_execution(self, name: str) -> dict[str, Any]:
        """``jobs.executions.get``."""
        ...


class GoogleCloudRun:
    """:class:`CloudRunApi` over ``google-cloud-run``'s clients (REST) of ``clients``: the
    ``ServicesClient`` and ``RevisionsClient`` of ``services`` (default:
    ``clients.cloud_run()``, built on first use), the ``JobsClient`` and ``ExecutionsClient``
    of ``clients.run_jobs()``. ``timeout``: seconds per job request and for a job update's
    operation (the service calls take theirs)."""

    def __init__(self, clients: GcpClients, *, timeout: float = 60.0,
                 services: CloudRunClients | None = None) -> None:
        self._clients, self._timeout, self._services = clients, timeout, services

    # -- services (cloud-run) -------------------------------------------------------------
    def _run(self) -> CloudRunClients:
        if self._services is None:
            self._services = self._clients.cloud_run()
        return self._services

    def get_service(self, name: str, *, retry_s: float, timeout: float) -> RunService:
        return self._run().services.get_service(name=name, retry=run_get_retry(retry_s), timeout=timeout)

    def list_revisions(self, parent: str, *, timeout: float) -> list[RunRevision]:
        return list(self._run().revisions.list_revisions(parent=parent, timeout=timeout))

    def get_revision(self, name: str, *, timeout: float) -> RunRevision:
        return self._run().revisions.get_revision(name=name, timeout=timeout)

    def update_service(self, service: RunService, *, timeout: float) -> RunOperation:
        return self._run().services.update_service(service=service, timeout=timeout)

    # -- jobs (cloud-run-job) -------------------------------------------------------------

    def get_job(self, name: str) -> dict[str, Any]:
        jobs, _ = self._clients.run_jobs()
        return _rest_json(_call(lambda: jobs.get_job(name=name, timeout=self._timeout), f"reading job {name}"))

    def list_executions(self, job: str) -> list[dict[str, Any]]:
        _, executions = self._clients.run_jobs()
        return _call(lambda: [_rest_json(e) for e in executions.list_executions(parent=job, timeout=self._timeout)],
                     f"listing the executions of job {job}")

    def update_job(self, job: dict[str, Any]) -> None:
        import concurrent.futures
        import json

        from google.cloud import run_v2

        jobs, _ = self._clients.run_jobs()
        what = f"updating job {job.get('name')}"
        message = run_v2.Job.from_json(json.dumps(job), ignore_unknown_fields=True)
        op = _call(lambda: jobs.update_job(job=message, timeout=self._timeout), what)

        def wait() -> Any:
            try:
                return op.result(timeout=self._timeout)
            except concurrent.futures.TimeoutError:
                return None  # still running: the caller watches the job itself

        _call(wait, what, stage="operation")

    def run_job(self, name: str, etag: str) -> str:
        from google.cloud import run_v2

        jobs, _ = self._clients.run_jobs()
        request = run_v2.RunJobRequest(name=name, etag=etag)
        op = _call(lambda: jobs.run_job(request=request, timeout=self._timeout), f"running job {name}")
        return op.metadata.name

    def get_execution(self, name: str) -> dict[str, Any]:
        _, executions = self._clients.run_jobs()
        return _rest_json(_call(lambda: executions.get_execution(name=name, timeout=self._timeout),
                                f"reading execution {name}"))


# -- the SDK's own message types, built here so no feature module imports google.* ----------

def run_get_retry(timeout: float) -> Any:  # google.api_core.retry.Retry
    """google-cloud-run's default retry of ``GetService`` (``google.api_core.retry.Retry``:
    1 s initial, 10 s maximum, ×1.3, on ``ServiceUnavailable``), its budget ``timeout`` s
    (google-cloud-run 0.16.2 ``run_v2/services/services/transports/base.py`` ``get_service``)."""
    from google.api_core import exceptions as gexc
    from google.api_core import retry as gretry

    return gretry.Retry(initial=1.0, maximum=10.0, multiplier=1.3, timeout=timeout,
                        predicate=gretry.if_exception_type(gexc.ServiceUnavailable))


def run_service_json(svc: RunService) -> bytes:
    """``run_v2.Service`` → ``Service.serialize(svc)``: the proto's wire bytes (proto-plus);
    :func:`run_service` reads them back."""
    from google.cloud import run_v2

    return run_v2.Service.serialize(svc)


def run_service(data: bytes) -> RunService:
    """:func:`run_service_json`'s value → ``run_v2.Service``."""
    from google.cloud import run_v2

    # proto-plus types MessageMeta.deserialize as returning the base Message, not the class's own
    return run_v2.Service.deserialize(data)  # pyright: ignore[reportReturnType]


def run_traffic_json(target: RunTrafficStatus) -> bytes:
    """``run_v2.TrafficTarget`` → ``TrafficTarget.serialize(target)``: its wire bytes."""
    from google.cloud import run_v2

    return run_v2.TrafficTarget.serialize(target)


def run_traffic(data: bytes | None = None, **fields: Any) -> RunTrafficStatus:
    """``run_v2.TrafficTarget``: from :func:`run_traffic_json`'s value, or built from
    ``fields`` (``type_``, ``revision``, ``percent``)."""
    from google.cloud import run_v2

    if data is None:
        return run_v2.TrafficTarget(**fields)
    # proto-plus types MessageMeta.deserialize as returning the base Message, not the class's own
    return run_v2.TrafficTarget.deserialize(data)  # pyright: ignore[reportReturnType]


def iam_user_managed_key_type() -> Any:
    """``iam_admin_v1.ListServiceAccountKeysRequest.KeyType.USER_MANAGED``."""
    from google.cloud import iam_admin_v1

    return iam_admin_v1.ListServiceAccountKeysRequest.KeyType.USER_MANAGED
