"""The lab's shared global HTTPS load balancer: controllers behind IAP, log relays behind
Cloud Armor, one frontend.

Per controller: a zonal ``GCE_VM_IP_PORT`` NEG holding the controller VM (its internal IP is
looked up at deploy time), an HTTP health check on ``/health``, an ``EXTERNAL_MANAGED``
backend service with IAP enabled, IAP settings owning only the programmatic OAuth client list,
an allow rule for Google's load-balancer ranges, an allow rule for the VPC's internal ranges
(``gclb.internal_source_ranges``), a deny-public rule, and an optional IAP-free token-proxy
backend that the URL map routes ``/proxy/t`` and ``/proxy/t/*`` to (capability URLs carry their
own token; IAP would demand a Google identity) — behind a Cloud Armor policy that throttles each
client IP (``token_proxy_rate_limit`` requests a minute, then 429), the path's only guard.

Deny-public is not optional: IAP guards only the load balancer's path, so a controller VM with
an external IP and any rule admitting 0.0.0.0/0 on its port (``default-allow-*``, a hand-made
rule) is reachable around IAP. Every controller behind the load balancer therefore gets the
deny of 0.0.0.0/0 on its port (priority 1000) below the allows of Google's load-balancer and
health-check ranges 130.211.0.0/22 and 35.191.0.0/16 (Cloud Load Balancing "Firewall rules",
global external Application Load Balancer row; IAP on a load balancer secures only the traffic
through the load balancer — IAP "Enabling IAP for Cloud Run", known limitations) and of the VPC ranges
(:func:`~clusterstack.components.gcp.firewall.allow_internal`). Marin makes it an opt-in
``deny_public`` flag (marin-community/marin ``infra/pulumi/src/iac/gcp/gclb.py`` @ 3df94eb4de74);
here it follows from "a controller is behind the load balancer".

IAP settings are named after the backend service's *generated* numeric id, read from the
backend's ``generated_id`` output (``projects/<number>/iap_web/compute/services/<id>``, IAP
``IapSettings`` API resource name; the same choice as Marin's ``settings_name`` above): a
replaced backend gets a new id and its settings follow it, where a hand-copied id would leave
them on the old, deleted backend. The id copied into the cluster's
``auth.iap.signed_header_audience`` is used only for the import ID (adopting an existing
backend, whose id it then is); after a replace the ``iap_audiences`` stack output shows the
audience to copy back into the cluster's file.
Per log relay: a Cloud Armor policy admitting only the senders' ranges (everyone else gets a
403), a backend without IAP, and firewall rules (allow the load balancer, deny the public).
Frontend: a global address (``protect`` + ``retain_on_delete``: removing it from the program
never releases the IP DNS points at), a URL map with one host rule per backend, a Google-managed
certificate per domain, an SSL policy (profile and minimum TLS version; without one Google's
default policy accepts TLS 1.0 with the COMPATIBLE ciphers — "SSL policies overview"), a target
HTTPS proxy and a global forwarding rule on 443 — all but the SSL policy protected, because
deleting any of them takes every backend offline. The certificates' DNS records are declared
beside this component, in the same stack (:class:`clusterstack.components.dns.LoadBalancerDns`):
a Google-managed certificate provisions only once its domain resolves to ``ip_address``.

Sources: GCP "External Application Load Balancer overview" (EXTERNAL_MANAGED, NEG backends,
URL maps), "Zonal NEGs" (GCE_VM_IP_PORT endpoints are instance + IP + port), "IAP for Compute
Engine" and the IAP ``IapSettings`` API (``accessSettings.oauthSettings.programmaticClients``),
"Cloud Armor security policies" (rule priorities; the default rule has priority 2147483647),
and the import forms in each pulumi-gcp resource's docs.

Import IDs: every resource declared here gets its import ID right after its declaration, by
the provider's documented ``projects/…`` form (functions below), both in
:attr:`GcpGclbIap.import_ids` and through :func:`clusterstack.pulumi.importids.importable` (the shared
collector). Never as ``import_`` (that would turn every ``up`` into an import). The NEG
endpoint's ID embeds the VM's internal IP, known only at deploy time: it is the template
``…/<instance>/<ip_address>/<port>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pulumi
from pulumi.output import UNKNOWN

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.components.gcp.firewall import (FirewallRuleSpec, allow_internal,
                                                  allow_load_balancer, deny_public, firewall_rule)
from clusterstack.derive.gclb import (BackendNames, ControllerBackendSpec, FrontendNames,
                                      LogRelayBackendSpec, certificate_name)
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi import tokens

LOAD_BALANCING_SCHEME = "EXTERNAL_MANAGED"
HEALTH_CHECK_PATH = "/health"
TOKEN_PROXY_PATHS = ("/proxy/t", "/proxy/t/*")
# Backend timeouts (seconds): the load balancer's 30 s default would cut the controller's
# proxied streams; a log push is short.
CONTROLLER_TIMEOUT_SEC = 300
LOG_RELAY_TIMEOUT_SEC = 120
ARMOR_ALLOW_PRIORITY = 1000
ARMOR_DEFAULT_PRIORITY = 2147483647   # Cloud Armor's default rule: the last one, cannot be removed
# A throttle rule's threshold interval (seconds); Cloud Armor accepts 10, 30, 60, 120, 180, 240,
# 300, 600, 900, 1200, 1800, 2700, 3600 (SecurityPolicyRuleRateLimitOptionsThreshold.intervalSec).
TOKEN_PROXY_RATE_INTERVAL_SEC = 60
# The backend's OAuth client (id/secret) is set up outside the program so the secret never
# enters state; Pulumi must neither write nor revert these fields.
BACKEND_IAP_IGNORED = ("iap.oauth2ClientId", "iap.oauth2ClientSecret", "iap.oauth2ClientSecretSha256")
IAP_SETTINGS_IGNORED = ("accessSettings.oauthSettings.clientId",
                        "accessSettings.oauthSettings.clientSecret",
                        "accessSettings.oauthSettings.clientSecretSha256")


# --- import IDs (the provider's documented `pulumi import` forms) ------------------------

def global_import_id(project: str, collection: str, name: str) -> str:
    """``projects/<project>/global/<collection>/<name>`` — backendServices, healthChecks,
    securityPolicies, sslCertificates, urlMaps, targetHttpsProxies, forwardingRules, addresses,
    firewalls (the shared rule :func:`clusterstack.pulumi.importids.gcp_global`)."""
    return ids.gcp_global(project, collection, name)


def neg_import_id(project: str, zone: str, name: str) -> str:
    """``projects/<project>/zones/<zone>/networkEndpointGroups/<name>``."""
    return f"projects/{project}/zones/{zone}/networkEndpointGroups/{name}"


def endpoint_import_id(project: str, zone: str, neg: str, instance: str, port: int,
                       ip_address: str = "<ip_address>") -> str:
    """``projects/<p>/zones/<z>/networkEndpointGroups/<neg>/<instance>/<ip>/<port>``; without
    ``ip_address`` a template (the IP is looked up at deploy time, not in the config)."""
    return f"{neg_import_id(project, zone, neg)}/{instance}/{ip_address}/{port}"


def iap_settings_name(project_number: str, backend_service_id: str) -> str:
    """IAP resource name of a backend service: ``projects/<number>/iap_web/compute/services/<id>``."""
    return f"projects/{project_number}/iap_web/compute/services/{backend_service_id}"


def _id_text(generated_id: float | int | None) -> str:
    # The server-assigned id (an int in the provider's schema). It arrives as a protobuf
    # number, a float; the SDK's typed output turns it into an int (pulumi/runtime/rpc.py
    # ``translate_output_properties``: a float where the type is int becomes ``int(output)``),
    # and so does this. A created backend always has one, so None only comes from a runtime
    # that computes no outputs (the offline plan's mocks): unknown in a preview, an error in
    # an update.
    if generated_id is not None:
        return str(int(generated_id))
    if pulumi.runtime.is_dry_run():
        return cast(str, UNKNOWN)   # the SDK's sentinel for a str known only after deployment
    raise ValueError("the backend service has no generated id")


def backend_generated_id(backend: Declared) -> pulumi.Output[str]:
    """``backend``'s server-assigned numeric id (output ``generatedId``) as text (known once
    the backend exists)."""
    return backend.output("generatedId").apply(_id_text)


def iap_settings_name_of(project_number: str, backend: Declared) -> pulumi.Output[str]:
    """:func:`iap_settings_name` of ``backend``'s generated id, so a replaced backend carries
    its settings (module docstring)."""
    return backend_generated_id(backend).apply(lambda i: iap_settings_name(project_number, i))


def iap_settings_import_id(project_number: str, backend_service_id: str) -> str:
    """``<iap_settings_name>/iapSettings`` (pulumi-gcp ``iap.Settings`` import form)."""
    return f"{iap_settings_name(project_number, backend_service_id)}/iapSettings"


@dataclass(frozen=True)
class ImportId:
    """The import ID of one declared resource (``import_id`` may be a template)."""

    logical_name: str
    type_token: str
    resource: pulumi.CustomResource
    import_id: str


@dataclass(frozen=True)
class SslPolicySpec:
    """The target HTTPS proxy's SSL policy (Google Cloud "SSL policies overview": a profile
    of TLS features and the minimum TLS version clients may negotiate; without a policy the
    load balancer applies Google's default, COMPATIBLE with TLS 1.0)."""

    profile: str                 # [conventions] gclb_ssl_policy: COMPATIBLE | MODERN | RESTRICTED
    min_tls_version: str         # [conventions] gclb_min_tls_version: TLS_1_0 | TLS_1_1 | TLS_1_2


@dataclass(frozen=True)
class GcpGclbIapArgs:
    project: str                                   # provisioning.gcp.project
    project_number: str                            # derive_gclb(...).project_number (the audiences' <number>)
    frontend_name: str                             # provisioning.gcp.gclb.frontend_name
    network: str                                   # provisioning.gcp.gclb.network
    subnetwork: str                                # provisioning.gcp.gclb.subnetwork
    controllers: tuple[ControllerBackendSpec, ...]  # derive_gclb(...).controllers (gclb.controllers order)
    log_relays: tuple[LogRelayBackendSpec, ...] = ()  # derive_gclb(...).log_relays
    internal_source_ranges: tuple[str, ...] = ()   # provisioning.gcp.gclb.internal_source_ranges
    ssl_policy: SslPolicySpec | None = None        # [conventions] gclb_ssl_policy ("" → None)
    # Requests per minute per client IP on each token-proxy backend, throttled by Cloud Armor:
    # provisioning.gcp.gclb.token_proxy_rate_limit with [conventions] gclb_token_proxy_armor,
    # else None (no policy on the token-proxy backends).
    token_proxy_rate_limit: int | None = None


def validate_args(args: GcpGclbIapArgs) -> None:
    """Rules the component relies on (the loader enforces them for configs; this guards
    direct callers). Raises ValueError: no controller, ``frontend_name`` not a controller,
    a domain or path matcher used twice, a log relay without sender ranges, a token-proxy rate
    limit below 1."""
    if not args.controllers:
        raise ValueError("the load balancer needs at least one controller backend")
    if args.frontend_name not in {c.cluster for c in args.controllers}:
        raise ValueError(f"frontend_name {args.frontend_name!r} is not one of the controllers")
    domains = [b.domain for b in (*args.controllers, *args.log_relays)]
    if len(domains) != len(set(domains)):
        raise ValueError(f"backend domains must be unique: {sorted(domains)}")
    matchers = [b.names.path_matcher for b in (*args.controllers, *args.log_relays)]
    if len(matchers) != len(set(matchers)):
        raise ValueError(f"backend names must be unique: {sorted(matchers)}")
    for r in args.log_relays:
        if not r.sender_source_ranges:
            raise ValueError(f"log relay {r.cluster!r} needs at least one sender source range")
    if args.token_proxy_rate_limit is not None and args.token_proxy_rate_limit < 1:
        raise ValueError("token_proxy_rate_limit must be at least 1 request per minute")


def _first_internal_ip(result: dict | None):
    """The instance's first NIC's internal IP (``networkInterfaces[0].networkIp`` of the
    provider's ``getInstance`` response).

    GCE instances always have a NIC, so an empty lookup result only comes from a runtime that
    does not serve lookups (the offline plan's mocks): during a preview the value is then
    left unknown; during an update it is an error.
    """
    nics = (result or {}).get("networkInterfaces") or []
    if nics and nics[0].get("networkIp"):
        return nics[0]["networkIp"]
    if pulumi.runtime.is_dry_run():
        return UNKNOWN
    raise ValueError("the instance lookup returned no network interface")


@dataclass(frozen=True)
class _Route:
    matcher: str
    domain: str
    service: Declared
    certificate: Declared
    path_rules: tuple[dict, ...] = ()


class GcpGclbIap(pulumi.ComponentResource):
    """The shared HTTPS load balancer (see the module docstring). ``ip_address`` is the
    frontend's global IP; ``import_ids`` lists every child's import ID; ``iap_backends`` maps
    the GCE name of each IAP-protected backend service (``<cluster>-be``) to its resource, for
    the IAP accessor bindings of the IAM file (``iap_backend_services``); ``iap_audiences``
    maps each controller cluster to the signed-header audience of its backend as deployed."""

    ip_address: pulumi.Output[str]
    import_ids: list[ImportId]
    iap_backends: dict[str, Declared]
    iap_audiences: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: GcpGclbIapArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.GCLB_IAP_COMPONENT, name, None, opts)
        validate_args(args)
        # not ``_provider``: pulumi.Resource keeps its own provider under that name
        self._args, self._gcp = args, provider
        self.import_ids, self.iap_backends, self.iap_audiences = [], {}, {}
        routes = [self._controller(c) for c in args.controllers]
        routes += [self._log_relay(r) for r in args.log_relays]
        frontend = next(r for r in routes if r.matcher == BackendNames(args.frontend_name).path_matcher)
        self.ip_address = self._frontend(routes, frontend)
        self.register_outputs({"ip_address": self.ip_address})

    # -- helpers ---------------------------------------------------------------------------

    def _opts(self, *, depends_on=(), protect: bool = False, retain_on_delete: bool = False,
              ignore_changes=()) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self._gcp,
                                      depends_on=list(depends_on), protect=protect,
                                      retain_on_delete=retain_on_delete,
                                      ignore_changes=list(ignore_changes) or None)

    def _register(self, logical_name: str, type_token: str, resource: pulumi.CustomResource,
                  import_id: str) -> None:
        self.import_ids.append(ImportId(logical_name, type_token, resource, import_id))
        ids.importable(resource, import_id)

    def _global(self, resource: pulumi.CustomResource, type_token: str, collection: str,
                name: str) -> None:
        self._register(name, type_token, resource, global_import_id(self._args.project, collection, name))

    def _firewall(self, spec: FirewallRuleSpec) -> None:
        rule = firewall_rule(spec, provider=self._gcp, parent=self)
        self._register(spec.name, tokens.FIREWALL, rule, spec.import_id)

    def _certificate(self, domain: str) -> Declared:
        name = certificate_name(domain)
        cert = kinds.MANAGED_SSL_CERTIFICATE(
            name, {"project": self._args.project, "name": name, "managed": {"domains": [domain]}},
            self._opts(protect=True))
        self._global(cert, tokens.MANAGED_SSL_CERTIFICATE,
                     "sslCertificates", name)
        return cert

    def _neg_backend(self, names: BackendNames, *, zone: str, instance: str, port: int,
                     timeout: int, iap: bool, security_policy: pulumi.Input[str] | None = None
                     ) -> tuple[Declared, Declared, Declared]:
        a = self._args
        neg = kinds.NETWORK_ENDPOINT_GROUP(
            names.neg, {"project": a.project, "zone": zone, "name": names.neg, "network": a.network,
                        "subnetwork": a.subnetwork, "networkEndpointType": "GCE_VM_IP_PORT",
                        "defaultPort": port},
            self._opts())
        self._register(names.neg, tokens.NETWORK_ENDPOINT_GROUP, neg,
                       neg_import_id(a.project, zone, names.neg))
        ip = kinds.get_instance_output(
            name=instance, zone=zone, project=a.project,
            opts=pulumi.InvokeOutputOptions(provider=self._gcp, parent=self)
        ).apply(_first_internal_ip)
        endpoint = kinds.NETWORK_ENDPOINT(
            names.endpoint, {"project": a.project, "zone": zone, "networkEndpointGroup": neg.output("name"),
                             "instance": instance, "ipAddress": ip, "port": port},
            self._opts(depends_on=[neg]))
        self._register(names.endpoint, tokens.NETWORK_ENDPOINT, endpoint,
                       endpoint_import_id(a.project, zone, names.neg, instance, port))
        hc = kinds.HEALTH_CHECK(
            names.health_check, {"project": a.project, "name": names.health_check,
                                 "checkIntervalSec": 10, "timeoutSec": 5, "healthyThreshold": 2,
                                 "unhealthyThreshold": 3,
                                 "httpHealthCheck": {"port": port, "portSpecification": "USE_FIXED_PORT",
                                                     "requestPath": HEALTH_CHECK_PATH}},
            self._opts())
        self._global(hc, tokens.HEALTH_CHECK, "healthChecks", names.health_check)
        backend = self._backend_service(names.backend, neg=neg, hc=hc, timeout=timeout, iap=iap,
                                        security_policy=security_policy, depends_on=[endpoint])
        return neg, hc, backend

    def _backend_service(self, name: str, *, neg, hc, timeout: int, iap: bool,
                         security_policy: pulumi.Input[str] | None = None,
                         depends_on=()) -> Declared:
        a = self._args
        service = kinds.BACKEND_SERVICE(
            name, {"project": a.project, "name": name, "protocol": "HTTP", "portName": "http",
                   "timeoutSec": timeout, "connectionDrainingTimeoutSec": 0,
                   "loadBalancingScheme": LOAD_BALANCING_SCHEME, "healthChecks": hc.id,
                   "backends": [{"group": neg.id, "balancingMode": "RATE", "maxRatePerEndpoint": 1000}],
                   "iap": {"enabled": True} if iap else None,
                   "securityPolicy": security_policy},
            self._opts(depends_on=depends_on, ignore_changes=BACKEND_IAP_IGNORED if iap else ()))
        self._global(service, tokens.BACKEND_SERVICE, "backendServices", name)
        return service

    # -- backends --------------------------------------------------------------------------

    def _controller(self, c: ControllerBackendSpec) -> _Route:
        a, names = self._args, c.names
        neg, hc, backend = self._neg_backend(names, zone=c.zone, instance=c.instance, port=c.port,
                                             timeout=CONTROLLER_TIMEOUT_SEC, iap=True)
        self._firewall(allow_load_balancer(
            project=a.project, name=names.allow_lb, network=a.network, target_tag=c.network_tag,
            port=c.port, description=f"load balancer to controller {c.cluster}"))
        if a.internal_source_ranges:
            self._firewall(allow_internal(
                project=a.project, name=names.allow_internal, network=a.network,
                target_tag=c.network_tag, port=c.port, source_ranges=a.internal_source_ranges,
                description=f"VPC to controller {c.cluster} (above its deny-public rule)"))
        self._firewall(deny_public(
            project=a.project, name=names.deny_public(c.port), network=a.network,
            target_tag=c.network_tag, port=c.port,
            description=f"no direct public access to controller {c.cluster}"))
        self.iap_backends[names.backend] = backend
        self.iap_audiences[c.cluster] = backend_generated_id(backend).apply(
            lambda i, n=a.project_number: f"/projects/{n}/global/backendServices/{i}")
        settings = kinds.IAP_SETTINGS(
            names.iap_settings,
            {"name": iap_settings_name_of(a.project_number, backend),
             "accessSettings": {"oauthSettings": {"programmaticClients": list(c.programmatic_clients)}}},
            self._opts(depends_on=[backend], ignore_changes=IAP_SETTINGS_IGNORED))
        self._register(names.iap_settings, tokens.IAP_SETTINGS, settings,
                       iap_settings_import_id(a.project_number, c.backend_service_id))
        path_rules: tuple[dict, ...] = ()
        if c.token_proxy:
            armor = self._token_proxy_armor(c) if a.token_proxy_rate_limit is not None else None
            proxy = self._backend_service(names.proxy_backend, neg=neg, hc=hc,
                                          timeout=CONTROLLER_TIMEOUT_SEC, iap=False,
                                          security_policy=armor.id if armor is not None else None)
            path_rules = ({"paths": list(TOKEN_PROXY_PATHS), "service": proxy.id},)
        return _Route(names.path_matcher, c.domain, backend, self._certificate(c.domain), path_rules)

    def _token_proxy_armor(self, c: ControllerBackendSpec) -> Declared:
        """The Cloud Armor policy of ``c``'s token-proxy backend: every client IP may send
        ``token_proxy_rate_limit`` requests a minute, the excess gets 429 (a ``throttle``
        rule keyed on the client IP; Cloud Armor "Rate limiting overview" and the
        ``SecurityPolicyRuleRateLimitOptions`` API: ``conformAction`` "allow" only,
        ``exceedAction`` ``deny(<status>)``, ``enforceOnKey`` IP). The path has no IAP (its
        capability URLs carry their own token), so this policy is what stands between it and a
        flood or a token-guessing run."""
        a, names = self._args, c.names
        assert a.token_proxy_rate_limit is not None
        armor = kinds.SECURITY_POLICY(
            names.proxy_armor,
            {"project": a.project, "name": names.proxy_armor, "type": "CLOUD_ARMOR",
             "description": f"per-client rate limit on the token proxy of {c.cluster}",
             "rules": [
                 {"action": "throttle", "priority": ARMOR_ALLOW_PRIORITY, "preview": False,
                  "description": f"{a.token_proxy_rate_limit} requests per minute per client IP",
                  "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}},
                  "rateLimitOptions": {
                      "conformAction": "allow", "exceedAction": "deny(429)", "enforceOnKey": "IP",
                      "rateLimitThreshold": {"count": a.token_proxy_rate_limit,
                                             "intervalSec": TOKEN_PROXY_RATE_INTERVAL_SEC}}},
                 {"action": "allow", "priority": ARMOR_DEFAULT_PRIORITY, "preview": False,
                  "description": "default rule: allow (the throttle above has matched every source)",
                  "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}}},
             ]},
            self._opts())
        self._global(armor, tokens.SECURITY_POLICY, "securityPolicies", names.proxy_armor)
        return armor

    def _log_relay(self, r: LogRelayBackendSpec) -> _Route:
        a, names = self._args, r.names
        armor = kinds.SECURITY_POLICY(
            names.armor,
            {"project": a.project, "name": names.armor, "type": "CLOUD_ARMOR",
             "description": f"log senders admitted to {r.instance}",
             "rules": [
                 {"action": "allow", "priority": ARMOR_ALLOW_PRIORITY, "preview": False,
                  "description": f"log senders of {r.cluster}",
                  "match": {"versionedExpr": "SRC_IPS_V1",
                            "config": {"srcIpRanges": sorted(r.sender_source_ranges)}}},
                 {"action": "deny(403)", "priority": ARMOR_DEFAULT_PRIORITY, "preview": False,
                  "description": "default rule: deny every other source",
                  "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}}},
             ]},
            self._opts())
        self._global(armor, tokens.SECURITY_POLICY, "securityPolicies", names.armor)
        _neg, _hc, backend = self._neg_backend(names, zone=r.zone, instance=r.instance, port=r.port,
                                               timeout=LOG_RELAY_TIMEOUT_SEC, iap=False,
                                               security_policy=armor.id)
        self._firewall(allow_load_balancer(
            project=a.project, name=names.allow_lb, network=a.network, target_tag=r.network_tag,
            port=r.port, description=f"load balancer to the log relay of {r.cluster}"))
        self._firewall(deny_public(
            project=a.project, name=names.deny_public(r.port), network=a.network,
            target_tag=r.network_tag, port=r.port,
            description=f"no direct public access to the log relay of {r.cluster}"))
        return _Route(names.path_matcher, r.domain, backend, self._certificate(r.domain))

    # -- frontend --------------------------------------------------------------------------

    def _frontend(self, routes: list[_Route], default: _Route) -> pulumi.Output[str]:
        a, names = self._args, FrontendNames(self._args.frontend_name)
        routes = sorted(routes, key=lambda r: r.matcher)   # stable order in state and plans
        address = kinds.GLOBAL_ADDRESS(
            names.address, {"project": a.project, "name": names.address, "addressType": "EXTERNAL",
                            "ipVersion": "IPV4"},
            self._opts(protect=True, retain_on_delete=True))
        self._global(address, tokens.GLOBAL_ADDRESS, "addresses", names.address)
        url_map = kinds.URL_MAP(
            names.url_map,
            {"project": a.project, "name": names.url_map, "defaultService": default.service.id,
             "hostRules": [{"hosts": [r.domain], "pathMatcher": r.matcher} for r in routes],
             "pathMatchers": [{"name": r.matcher, "defaultService": r.service.id,
                               "pathRules": list(r.path_rules)} for r in routes]},
            self._opts(protect=True))
        self._global(url_map, tokens.URL_MAP, "urlMaps", names.url_map)
        ssl_policy = None
        if a.ssl_policy is not None:
            ssl_policy = kinds.SSL_POLICY(
                names.ssl_policy,
                {"project": a.project, "name": names.ssl_policy, "profile": a.ssl_policy.profile,
                 "minTlsVersion": a.ssl_policy.min_tls_version,
                 "description": f"TLS of the load balancer {a.frontend_name}"},
                self._opts())
            self._global(ssl_policy, tokens.SSL_POLICY, "sslPolicies", names.ssl_policy)
        proxy = kinds.TARGET_HTTPS_PROXY(
            names.https_proxy,
            {"project": a.project, "name": names.https_proxy, "urlMap": url_map.id,
             "sslCertificates": [r.certificate.id for r in sorted(routes, key=lambda r: r.domain)],
             "sslPolicy": ssl_policy.id if ssl_policy is not None else None},
            self._opts(protect=True))
        self._global(proxy, tokens.TARGET_HTTPS_PROXY, "targetHttpsProxies",
                     names.https_proxy)
        rule = kinds.GLOBAL_FORWARDING_RULE(
            names.forwarding_rule,
            {"project": a.project, "name": names.forwarding_rule, "ipAddress": address.output("address"),
             "ipProtocol": "TCP", "portRange": "443", "target": proxy.id,
             "loadBalancingScheme": LOAD_BALANCING_SCHEME},
            self._opts(protect=True))
        self._global(rule, tokens.GLOBAL_FORWARDING_RULE,
                     "forwardingRules", names.forwarding_rule)
        return address.output("address")
