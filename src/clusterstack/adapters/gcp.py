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
- Compute Engine (``google-cloud-compute``) and Artifact Registry
  (``google-cloud-artifact-registry``) clients of ``verify`` (:mod:`clusterstack.verify.gcp`);
- IAM Admin (``google-cloud-iam``): ``IAMClient`` of ``iam audit-keys``
  (:mod:`clusterstack.iam.audit`);
- Resource Manager API v3: :class:`ResourceManagerClient`, the one read ``iam scan`` makes
  (``projects.getIamPolicy``), over ``google.auth``'s ``AuthorizedSession`` (REST; no
  dedicated client library is a dependency for one call).

Missing credentials (``google.auth.exceptions.DefaultCredentialsError`` while a client is built)
raise :class:`GcpCredentialsError` (exit 2) naming the API and saying how to log in; callers
that report per resource (``verify``) turn it into their own finding. Cloud KMS is reached
through Tink's ``GcpKmsClient`` (:func:`clusterstack.iam.crypto.gcp_kms_aead`), which builds its
own KMS client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

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
    - 409 ``Conflict`` (gRPC ``Aborted``), ``FailedPrecondition`` (an etag precondition) →
      :data:`CONFLICT`; any other ``GoogleAPICallError`` → :data:`REFUSED`."""
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
        detail = str(exc.args[0] if exc.args else exc).split(".")[0][:200] or type(exc).__name__
        return GcpFailure(CREDENTIALS, 401 if isinstance(exc, gexc.Unauthorized) else None, detail)
    if isinstance(exc, gexc.GoogleAPICallError):
        code = getattr(exc.code, "value", exc.code)
        kind = (UNREACHABLE if isinstance(exc, (gexc.ServiceUnavailable, gexc.GatewayTimeout,
                                                gexc.InternalServerError))
                else NOT_FOUND if isinstance(exc, gexc.NotFound)
                else PERMISSION_DENIED if isinstance(exc, gexc.Forbidden)
                else CONFLICT if isinstance(exc, (gexc.Conflict, gexc.FailedPrecondition))
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


class SecretManagerClient(Protocol):
    """The slice of ``google.cloud.secretmanager.SecretManagerServiceClient`` clusterstack uses."""

    def access_secret_version(self, *, name: str) -> Any:  # -> AccessSecretVersionResponse
        """``.payload.data`` (bytes) of ``projects/P/secrets/S/versions/V``."""
        ...

    def add_secret_version(self, request: dict) -> Any:  # -> SecretVersion
        """A new version of ``request["parent"]`` with ``request["payload"]``."""
        ...


@dataclass(frozen=True)
class CloudRunClients:
    """The Cloud Run Admin API v2 clients ``deploy`` uses."""

    services: Any   # run_v2.ServicesClient
    revisions: Any  # run_v2.RevisionsClient


def _no_credentials(api: str, exc: Exception) -> GcpCredentialsError:
    detail = str(exc.args[0] if exc.args else exc).split(".")[0]
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

    def iam_admin(self) -> Any:
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

    def __init__(self, factory: Any) -> None:
        self._factory = factory
        self._client: Any = None

    def _get(self) -> SecretManagerClient:
        if self._client is None:
            self._client = self._factory()
        return self._client

    def access_secret_version(self, *, name: str) -> Any:
        return self._get().access_secret_version(name=name)

    def add_secret_version(self, request: dict) -> Any:
        return self._get().add_secret_version(request)
