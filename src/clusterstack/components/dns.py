"""Cloudflare DNS for the federation hostname: a protected, unproxied CNAME.

Source: Cloudflare API "DNS Records" (``ttl: 1`` means automatic; a proxied record would
terminate TLS at Cloudflare, which the ACME HTTP-01 flow on the cluster must not see). The
target is the ``service.beta.kubernetes.io/external-hostname`` of Traefik's Service (CoreWeave
"Create a public DNS name"), so the CNAME points at a name CoreWeave actually creates.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_cloudflare as cloudflare

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import FEDERATION_DNS_COMPONENT


@dataclass(frozen=True)
class FederationDnsArgs:
    zone_id: str                      # provisioning.coreweave.federation_dns.zone_id (or [defaults].dns_zone_id)
    hostname: str                     # provisioning.coreweave.federation_dns.hostname
    target: str                       # Ingress.external_hostname: the name CoreWeave gives Traefik's LB
    api_token: pulumi.Output[str]     # secret Output resolved from federation_dns.api_token by the program
    ttl: int = 1                      # [conventions] dns_ttl (1 = automatic; Marin's 300: iac/coreweave/dns.py@3d818800)


class FederationDns(pulumi.ComponentResource):
    """Owns its Cloudflare provider so the token is a secret input of that provider only."""

    record: cloudflare.DnsRecord

    def __init__(self, name: str, args: FederationDnsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FEDERATION_DNS_COMPONENT, name, None, opts)
        provider = cloudflare.Provider("cloudflare", api_token=args.api_token,
                                       opts=pulumi.ResourceOptions(parent=self))
        self.record = cloudflare.DnsRecord(
            args.hostname, zone_id=args.zone_id, name=args.hostname, type="CNAME",
            content=args.target, proxied=False, ttl=args.ttl,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, protect=True))
        # The record ID is Cloudflare's: a template until the operator supplies it (import --id).
        ids.importable(self.record, ids.cloudflare_record(args.zone_id))
        self.register_outputs({"hostname": args.hostname})
