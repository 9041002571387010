"""Cloudflare DNS: the federation hostname of a CoreWeave cluster (a protected, unproxied CNAME,
:class:`FederationDns`) and the certificate domains of a GCP stack's load balancer (protected,
unproxied A records to its IP, :class:`LoadBalancerDns`).

Source: Cloudflare API "DNS Records" (``ttl: 1`` means automatic; a proxied record would
terminate TLS at Cloudflare, which the ACME HTTP-01 flow on the cluster must not see). The
target is the ``service.beta.kubernetes.io/external-hostname`` of Traefik's Service (CoreWeave
"Create a public DNS name"), so the CNAME points at a name CoreWeave actually creates.

Declared by type token, not through the ``pulumi_cloudflare`` SDK. The SDK's generated
``__init__`` imports all of its ~780 modules eagerly (``from .dns_record import *`` …), and any
submodule import runs that ``__init__`` first: one record cost a CoreWeave stack 3.3 s and
265 MiB of its plan (cold; docs/performance.md). What the
generated classes add over :class:`pulumi.CustomResource` is exactly what is repeated here,
read from ``pulumi_cloudflare`` 6.23.1 (``dns_record.py`` ``DnsRecord._internal_init``,
``provider.py`` ``Provider._internal_init``, ``_utilities.get_resource_opts_defaults``):

- the type token (``cloudflare:index/dnsRecord:DnsRecord``, :data:`tokens.DNS_RECORD`) and the
  provider package (``cloudflare`` → ``pulumi:providers:cloudflare``, :data:`CLOUDFLARE`);
- the camelCase input names (``zoneId``; the SDK translates ``zone_id`` with its type metadata);
- ``version``: the installed SDK's version, which is what the SDK sends and what pins the
  provider plugin the engine runs (uv.lock pins the SDK; :func:`provider_version` reads its
  distribution metadata, as ``_utilities._get_semver_version`` does, without importing it:
  :mod:`clusterstack.components.bytoken`, the mechanism shared with the GCP resources);
- the record's alias of the v5 type (``cloudflare:index/record:Record``), so state written under
  the old name is adopted, not replaced;
- the provider's ``additional_secret_outputs`` (``apiKey``, ``apiToken``, ``apiUserServiceKey``)
  and the token as a secret input.

The alternative, importing only ``pulumi_cloudflare.dns_record``, still runs the package's
``__init__`` (1.9–2.1 s cold). The golden plan of ``cw-demo-h100`` (tests/golden) is unchanged
byte for byte, and a test pins :func:`provider_version` to the SDK's own ``get_version()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from clusterstack.components.bytoken import Package
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import (DNS_RECORD, FEDERATION_DNS_COMPONENT, LEGACY_DNS_RECORD,
                                        LOAD_BALANCER_DNS_COMPONENT)

#: The Cloudflare package: provider.py's ``secret_opts`` (``apiKey``, ``apiToken``,
#: ``apiUserServiceKey``); ``_utilities.get_plugin_download_url()`` is None.
CLOUDFLARE = Package("cloudflare", "pulumi_cloudflare",
                     provider_secret_outputs=("apiKey", "apiToken", "apiUserServiceKey"))
PACKAGE = CLOUDFLARE.name


def provider_version() -> str:
    """The version of the installed ``pulumi_cloudflare`` SDK (``6.23.1``), as the SDK itself
    sends it with every registration (:func:`clusterstack.components.bytoken.sdk_version`: raises
    RuntimeError for a pre-release or local build)."""
    return CLOUDFLARE.version()


@dataclass(frozen=True)
class FederationDnsArgs:
    zone_id: str                      # provisioning.coreweave.federation_dns.zone_id (or [defaults].dns_zone_id)
    hostname: str                     # provisioning.coreweave.federation_dns.hostname
    target: str                       # Ingress.external_hostname: the name CoreWeave gives Traefik's LB
    api_token: pulumi.Output[str]     # secret Output resolved from federation_dns.api_token by the program
    ttl: int = 1                      # [conventions] dns_ttl (1 = automatic; Marin's 300: iac/coreweave/dns.py@3d818800)


def _provider(parent: pulumi.Resource, api_token: pulumi.Output[str]) -> pulumi.ProviderResource:
    """The component's own Cloudflare provider: the token a secret input of it only."""
    return CLOUDFLARE.provider("cloudflare", {"apiToken": pulumi.Output.secret(api_token)},
                               pulumi.ResourceOptions(parent=parent))


class FederationDns(pulumi.ComponentResource):
    """Owns its Cloudflare provider so the token is a secret input of that provider only."""

    record: pulumi.CustomResource

    def __init__(self, name: str, args: FederationDnsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FEDERATION_DNS_COMPONENT, name, None, opts)
        version = provider_version()
        provider = _provider(self, args.api_token)
        self.record = pulumi.CustomResource(
            DNS_RECORD, args.hostname,
            {"zoneId": args.zone_id, "name": args.hostname, "type": "CNAME",
             "content": args.target, "proxied": False, "ttl": args.ttl},
            pulumi.ResourceOptions(parent=self, provider=provider, protect=True, version=version,
                                   aliases=[pulumi.Alias(type_=LEGACY_DNS_RECORD)]))
        # The record ID is Cloudflare's: a template until the operator supplies it (import --id).
        ids.importable(self.record, ids.cloudflare_record(args.zone_id))
        self.register_outputs({"hostname": args.hostname})


@dataclass(frozen=True)
class LoadBalancerDnsArgs:
    zone_id: str                      # provisioning.gcp.gclb.dns_zone_id (or [defaults].dns_zone_id)
    domains: tuple[str, ...]          # derive.gclb.certificate_domains: one per managed certificate
    ip_address: pulumi.Input[str]     # GcpGclbIap.ip_address: the load balancer's global IP
    api_token: pulumi.Output[str]     # secret Output resolved from gclb.dns_api_token by the program
    ttl: int = 1                      # [conventions] dns_ttl (1 = automatic)


class LoadBalancerDns(pulumi.ComponentResource):
    """One A record per certificate domain of the GCP stack's load balancer, each pointing at
    its IP, unproxied and protected.

    Why in the same stack: a Google-managed certificate is provisioned only once its domain's
    A/AAAA record resolves to the IP of the load balancer that serves the certificate (Google
    Cloud "Use Google-managed SSL certificates"; the domain status stays FAILED_NOT_VISIBLE and
    the certificate PROVISIONING otherwise), so the record is part of what makes the
    certificate work — and ``ip_address`` is known only once the address exists. Unproxied:
    a proxied record resolves to Cloudflare's addresses, not the load balancer's, so Google
    never sees the domain on its load balancer. Protected: deleting one takes its domain
    offline and stops the certificate's renewal. Import ID: ``<zone_id>/<record_id>``, the
    record ID a template (:func:`clusterstack.pulumi.importids.cloudflare_record`).
    """

    records: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, args: LoadBalancerDnsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(LOAD_BALANCER_DNS_COMPONENT, name, None, opts)
        version = provider_version()
        provider = _provider(self, args.api_token)
        self.records = {}
        for domain in sorted(args.domains):
            record = pulumi.CustomResource(
                DNS_RECORD, domain,
                {"zoneId": args.zone_id, "name": domain, "type": "A", "content": args.ip_address,
                 "proxied": False, "ttl": args.ttl},
                pulumi.ResourceOptions(parent=self, provider=provider, protect=True, version=version))
            ids.importable(record, ids.cloudflare_record(args.zone_id))
            self.records[domain] = record
        self.register_outputs({"domains": sorted(args.domains)})
