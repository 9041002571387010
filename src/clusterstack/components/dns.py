"""Cloudflare DNS for the federation hostname: a protected, unproxied CNAME.

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
  provider package (``cloudflare`` → ``pulumi:providers:cloudflare``);
- the camelCase input names (``zoneId``; the SDK translates ``zone_id`` with its type metadata);
- ``version``: the installed SDK's version, which is what the SDK sends and what pins the
  provider plugin the engine runs (uv.lock pins the SDK; :func:`provider_version` reads its
  distribution metadata, as ``_utilities._get_semver_version`` does, without importing it);
- the record's alias of the v5 type (``cloudflare:index/record:Record``), so state written under
  the old name is adopted, not replaced;
- the provider's ``additional_secret_outputs`` (``apiKey``, ``apiToken``, ``apiUserServiceKey``)
  and the token as a secret input.

The alternative, importing only ``pulumi_cloudflare.dns_record``, still runs the package's
``__init__`` (1.9–2.1 s cold). The golden plan of ``cw-demo-h100`` (tests/golden) is unchanged
byte for byte, and a test pins :func:`provider_version` to the SDK's own ``get_version()``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from dataclasses import dataclass

import pulumi

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import DNS_RECORD, FEDERATION_DNS_COMPONENT, LEGACY_DNS_RECORD

PACKAGE = "cloudflare"
_SECRET_OUTPUTS = ["apiKey", "apiToken", "apiUserServiceKey"]  # provider.py's secret_opts


@functools.cache
def provider_version() -> str:
    """The version of the installed ``pulumi_cloudflare`` SDK (``6.23.1``), as the SDK itself
    sends it with every registration. Raises RuntimeError for a pre-release or local build,
    whose semver form the SDK derives with rules not repeated here."""
    version = importlib.metadata.version("pulumi_cloudflare")
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise RuntimeError(f"pulumi_cloudflare {version} is not a plain release: pin one in uv.lock")
    return version


@dataclass(frozen=True)
class FederationDnsArgs:
    zone_id: str                      # provisioning.coreweave.federation_dns.zone_id (or [defaults].dns_zone_id)
    hostname: str                     # provisioning.coreweave.federation_dns.hostname
    target: str                       # Ingress.external_hostname: the name CoreWeave gives Traefik's LB
    api_token: pulumi.Output[str]     # secret Output resolved from federation_dns.api_token by the program
    ttl: int = 1                      # [conventions] dns_ttl (1 = automatic; Marin's 300: iac/coreweave/dns.py@3d818800)


class FederationDns(pulumi.ComponentResource):
    """Owns its Cloudflare provider so the token is a secret input of that provider only."""

    record: pulumi.CustomResource

    def __init__(self, name: str, args: FederationDnsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FEDERATION_DNS_COMPONENT, name, None, opts)
        version = provider_version()
        provider = pulumi.ProviderResource(
            PACKAGE, "cloudflare", {"apiToken": pulumi.Output.secret(args.api_token)},
            pulumi.ResourceOptions(parent=self, version=version,
                                   additional_secret_outputs=_SECRET_OUTPUTS))
        self.record = pulumi.CustomResource(
            DNS_RECORD, args.hostname,
            {"zoneId": args.zone_id, "name": args.hostname, "type": "CNAME",
             "content": args.target, "proxied": False, "ttl": args.ttl},
            pulumi.ResourceOptions(parent=self, provider=provider, protect=True, version=version,
                                   aliases=[pulumi.Alias(type_=LEGACY_DNS_RECORD)]))
        # The record ID is Cloudflare's: a template until the operator supplies it (import --id).
        ids.importable(self.record, ids.cloudflare_record(args.zone_id))
        self.register_outputs({"hostname": args.hostname})
