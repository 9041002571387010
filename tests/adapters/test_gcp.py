"""The one mapping of Google's errors (``clusterstack.adapters.gcp.classify`` / ``call_errors``):
the exception types are google-api-core's and google-auth's own, raised the way the gRPC
(``exceptions.from_grpc_error``) and REST (``exceptions.from_http_response``) transports raise
them; the REST answers come from the GCP fake."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth

from clusterstack.adapters import gcp
from clusterstack.adapters.gcp import GcpApiError, GcpCredentialsError, call_errors, classify
from fakes.gcp_api import FakeGcp, google_error


@pytest.mark.parametrize("exc, kind, code", [
    (gexc.PermissionDenied("denied"), gcp.PERMISSION_DENIED, 403),
    (gexc.Forbidden("denied"), gcp.PERMISSION_DENIED, 403),
    (gexc.NotFound("gone"), gcp.NOT_FOUND, 404),
    (gexc.ServiceUnavailable("down"), gcp.UNREACHABLE, 503),
    (gexc.DeadlineExceeded("slow"), gcp.UNREACHABLE, 504),
    (gexc.InternalServerError("oops"), gcp.UNREACHABLE, 500),
    (gexc.RetryError("Timeout of 60.0s exceeded", cause=gexc.ServiceUnavailable("down")), gcp.UNREACHABLE, None),
    (gauth.TransportError("Failed to resolve oauth2.googleapis.com"), gcp.UNREACHABLE, None),
    (requests.ConnectionError("Connection refused"), gcp.UNREACHABLE, None),
    (gauth.RefreshError("invalid_grant: Token has been expired or revoked."), gcp.CREDENTIALS, None),
    (gauth.DefaultCredentialsError("Your default credentials were not found."), gcp.CREDENTIALS, None),
    (gexc.Unauthenticated("no token"), gcp.CREDENTIALS, 401),
    (gexc.Aborted("etag mismatch"), gcp.CONFLICT, 409),
    (gexc.FailedPrecondition("precondition"), gcp.CONFLICT, 400),
    (gexc.InvalidArgument("bad field"), gcp.REFUSED, 400),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None)
def test_every_google_failure_has_one_meaning(exc, kind, code):
    failure = classify(exc)
    assert failure is not None and failure.kind == kind and failure.code == code and failure.detail


def test_a_credentials_failure_keeps_its_first_sentence_and_file_names_whole(tmp_path):
    # google-auth (google/auth/_default.py): "File {path} was not found." — a path's dots are no
    # sentence ends
    path = tmp_path / "key.v2.json"
    failure = classify(gauth.DefaultCredentialsError(f"File {path} was not found. Set it."))
    assert failure is not None and failure.detail == f"File {path} was not found"


def test_what_is_not_a_google_failure_is_not_hidden():
    assert classify(TypeError("unexpected keyword argument")) is None
    with pytest.raises(TypeError):
        with call_errors("IAM API", "listing keys"):
            raise TypeError("unexpected keyword argument")


def test_a_rest_answer_is_classified_by_its_status_and_keeps_only_googles_message():
    with FakeGcp() as srv:
        srv.failures["/compute/v1/projects/p/global/urlMaps/u"] = (403, google_error(
            403, "Required 'compute.urlMaps.get' permission", "forbidden"))
        response = requests.get(f"{srv.url}/compute/v1/projects/p/global/urlMaps/u", timeout=5)
    with pytest.raises(GcpApiError) as ei:
        with call_errors("Compute Engine API", "reading urlMaps/u", {gcp.PERMISSION_DENIED: "grant it"}):
            raise gexc.from_http_response(response)
    problem = ei.value.problems[0]
    assert problem.message == ("the Compute Engine API refused reading urlMaps/u: 403 "
                               "Required 'compute.urlMaps.get' permission")
    assert problem.hint == "grant it" and ei.value.kind == gcp.PERMISSION_DENIED and ei.value.exit_code == 2


def test_credentials_are_their_own_error_with_the_login_hint():
    with pytest.raises(GcpCredentialsError) as ei:
        with call_errors("IAM API", "listing keys"):
            raise gauth.RefreshError("invalid_grant: Token has been expired or revoked.")
    assert ei.value.problems[0].hint == gcp.LOGIN_HINT and ei.value.exit_code == 2
    assert "Google credentials missing or refused by the IAM API while listing keys" in ei.value.render()
