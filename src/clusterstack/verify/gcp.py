"""Read-only GCP lookups for ``clusterstack verify``: the Compute Engine and Artifact Registry
APIs through Google's client libraries (``google-cloud-compute``,
``google-cloud-artifact-registry``), REST transport.

:class:`GcpReader` is the seam; :class:`GcpApi` implements it. Objects come back as the REST
API's JSON (camelCase, the field names of the API reference), so the verify rules compare the
same paths the Pulumi inputs use. Every call has a timeout and no retry; 404 → None; any
other API error → :class:`CheckError`; a transport failure → :class:`Unreachable`.
The clients come from :class:`clusterstack.adapters.gcp.GcpClients` (Application Default
Credentials unless it is given others; tests give ``AnonymousCredentials`` and a local
``api_endpoint``).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from clusterstack.verify.model import CheckError, GcpObject, NegMember, Unreachable
from clusterstack.adapters.gcp import (CREDENTIALS, GcpClients, GcpCredentialsError, NOT_FOUND,
    UNREACHABLE, classify, compute_list_endpoints_request)

MAX_ENDPOINTS = 10_000   # bound on the NEG member listing (pages are followed up to this many)


class GcpReader(Protocol):
    def get(self, obj: GcpObject) -> dict[str, Any] | None:
        """The object as the REST API's JSON, or None when it does not exist."""
        ...

    def neg_endpoints(self, member: NegMember) -> list[dict[str, Any]] | None:
        """``networkEndpoint`` items of the member's NEG, or None when the NEG does not exist."""
        ...


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


def _to_json(message: Any) -> dict[str, Any]:
    """A proto-plus message → the REST JSON dict (json names, enum names)."""
    return type(message).to_dict(message, preserving_proto_field_name=False,
                                 use_integers_for_enums=False)


class GcpApi:
    """:class:`GcpReader` over the Google Cloud client libraries of ``clients`` (a
    :class:`~clusterstack.adapters.gcp.GcpClients`; default: Google's endpoints with
    Application Default Credentials); ``timeout`` is seconds per call. No credentials:
    every lookup is :class:`Unreachable`.
    """

    def __init__(self, clients: Any = None, *, timeout: float = 15.0) -> None:
        self._clients = clients if clients is not None else GcpClients()
        self._timeout = timeout

    def _client(self, name: str) -> Any:
        try:
            if name == "ArtifactRegistryClient":
                return self._clients.artifact_registry()
            return self._clients.compute(name)
        except GcpCredentialsError as exc:
            raise Unreachable(exc.problems[0].message) from None

    def _call(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, or ``None`` when the object does not exist; every other failure as
        :func:`clusterstack.adapters.gcp.classify` sorts it: no answer → Unreachable (asked
        once), credentials or a refusal → CheckError (this object unverified)."""
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
            client = self._client("ArtifactRegistryClient")
            found = self._call(lambda: client.get_repository(
                name=obj.ref, retry=None, timeout=self._timeout))
            return None if found is None else _to_json(found)
        key = "addresses@region" if obj.collection == "addresses" and obj.region else obj.collection
        if key not in _COMPUTE:
            raise CheckError(f"no reader for GCP collection {obj.collection}")
        client_name, name_kw, where_kw = _COMPUTE[key]
        client = self._client(client_name)
        kwargs: dict[str, Any] = {"project": obj.project, name_kw: obj.name}
        if where_kw:
            kwargs[where_kw] = getattr(obj, where_kw)
        found = self._call(lambda: client.get(**kwargs, retry=None, timeout=self._timeout))
        return None if found is None else _to_json(found)

    def neg_endpoints(self, member: NegMember) -> list[dict[str, Any]] | None:
        client = self._client("NetworkEndpointGroupsClient")

        def listing() -> list[dict[str, Any]]:
            pager = client.list_network_endpoints(
                project=member.project, zone=member.zone, network_endpoint_group=member.neg,
                network_endpoint_groups_list_endpoints_request_resource=
                    compute_list_endpoints_request(health_status="SKIP"),
                retry=None, timeout=self._timeout)
            out = []
            for item in pager:
                out.append(_to_json(item.network_endpoint))
                if len(out) >= MAX_ENDPOINTS:
                    break
            return out

        return self._call(listing)
