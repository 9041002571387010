"""Oracle: does each Google-managed certificate of a stack's plan become ACTIVE?

Google's decision, as far as a plan can decide it — every rule read 2026-12-02 from the pages
named, and each cited where it is applied below:

- [SERVE] A Google-managed (classic Compute Engine ``sslCertificates``) certificate is
  provisioned by *load balancer authorization*: Google validates each domain through the load
  balancer that serves the certificate, so provisioning happens "only after the load balancer
  has been fully set up and is serving network traffic" (Certificate Manager "Domain
  authorization", docs.cloud.google.com/certificate-manager/docs/domain-authorization) — the
  certificate must be on a target HTTPS proxy that a forwarding rule serves on port 443
  (pulumi-gcp ``compute.ManagedSslCertificate``: "The provisioning process can complete only
  when the domain name for which the certificate is created points to a target pool which,
  itself, points at the certificate"). Otherwise it stays ``PROVISIONING``.
- [DNS] Each domain's DNS A/AAAA record must resolve to the IP of that forwarding rule; while
  it does not, the domain's status is ``FAILED_NOT_VISIBLE`` and the certificate stays
  ``PROVISIONING`` (Google Cloud "Use Google-managed SSL certificates",
  docs.cloud.google.com/load-balancing/docs/ssl-certificates/google-managed-certs, and
  "Troubleshoot SSL certificates"; the domain statuses are the compute v1 API's
  ``SslCertificateManagedSslCertificate.domainStatus`` enum: PROVISIONING, FAILED_NOT_VISIBLE,
  FAILED_CAA_CHECKING, FAILED_CAA_FORBIDDEN, FAILED_RATE_LIMITED, ACTIVE).
- [PROXIED] A Cloudflare record with ``proxied: true`` answers with Cloudflare's own
  addresses, not the record's content (Cloudflare "Proxy status": proxied records return
  Cloudflare anycast IPs), so Google never sees the domain on its load balancer:
  ``FAILED_NOT_VISIBLE``. A CNAME counts only as far as it resolves to an A record of the same
  stack.
- [WILDCARD] Load balancer authorization "doesn't support wildcard certificates" (Domain
  authorization, as above): a ``*.`` domain never provisions.

What "resolves to the forwarding rule's IP" means in a plan: the record's ``content`` equals
the forwarding rule's ``ipAddress`` when both are known; when the IP is an output of a global
address (unknown offline, ``[unknown]`` in the plan), the record and the forwarding rule must
both take it from the same ``GlobalAddress`` — the one address resource each depends on
(``dependencies``: Pulumi records the resources an input's Outputs come from). The oracle
sees one stack: a record declared anywhere else is, for it, not there — the issue's rule
("every Google-managed certificate domain has a DNS record in the same stack").

Not decided here (they depend on the world, not the plan): CAA records that forbid Google's
CAs (FAILED_CAA_FORBIDDEN), the issuers' rate limits, DNS propagation time.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi.tokens import (DNS_RECORD, GLOBAL_ADDRESS, GLOBAL_FORWARDING_RULE,
                                        LEGACY_DNS_RECORD, MANAGED_SSL_CERTIFICATE, TARGET_HTTPS_PROXY)

UNKNOWN = "[unknown]"
ACTIVE, PROVISIONING, NOT_VISIBLE = "ACTIVE", "PROVISIONING", "FAILED_NOT_VISIBLE"


@dataclass(frozen=True)
class DomainStatus:
    """Where one domain of one certificate ends up, and why (the rule's tag)."""

    certificate: str   # the certificate's GCE name
    domain: str
    status: str        # ACTIVE | PROVISIONING | FAILED_NOT_VISIBLE
    reason: str


def _by_type(plan: StackPlan, *types: str) -> list[PlannedResource]:
    return [r for r in plan.resources if r.type in types]


def _addresses(plan: StackPlan, r: PlannedResource) -> set[str]:
    """URNs of the global addresses ``r`` takes an input from."""
    kinds = {x.urn for x in _by_type(plan, GLOBAL_ADDRESS)}
    return {d for d in r.dependencies if d in kinds}


def _served_ips(plan: StackPlan, cert: PlannedResource) -> list[tuple[object, set[str]]]:
    """[SERVE] ``(ipAddress, global address URNs)`` of each forwarding rule on 443 that targets
    a target HTTPS proxy listing ``cert``."""
    proxies = {p.urn for p in _by_type(plan, TARGET_HTTPS_PROXY)
               if cert.urn in p.dependencies and p.inputs.get("sslCertificates")}
    out = []
    for fr in _by_type(plan, GLOBAL_FORWARDING_RULE):
        port = str(fr.inputs.get("portRange", ""))
        if proxies & set(fr.dependencies) and port.split("-")[0] == "443":
            out.append((fr.inputs.get("ipAddress", UNKNOWN), _addresses(plan, fr)))
    return out


def _records(plan: StackPlan, name: str) -> list[PlannedResource]:
    key = name.rstrip(".").lower()
    return [r for r in _by_type(plan, DNS_RECORD, LEGACY_DNS_RECORD)
            if str(r.inputs.get("name", "")).rstrip(".").lower() == key]


def _resolves_to(plan: StackPlan, domain: str, ip: object, addresses: set[str], hops: int = 8) -> str | None:
    """None when ``domain`` resolves, in this stack, to the forwarding rule's IP ([DNS],
    [PROXIED]); else why not."""
    records = _records(plan, domain)
    if not records:
        return f"no DNS record for {domain} in this stack"
    why = []
    for rec in records:
        kind, content = rec.inputs.get("type"), rec.inputs.get("content")
        if rec.inputs.get("proxied") is True:
            why.append(f"{kind} {domain} is proxied: it answers with Cloudflare's addresses")
        elif kind in ("A", "AAAA"):
            if ip != UNKNOWN and content == ip:
                return None
            if content == UNKNOWN and ip == UNKNOWN and addresses and _addresses(plan, rec) == addresses:
                return None
            why.append(f"{kind} {domain} → {content}, not the load balancer's IP")
        elif kind == "CNAME" and isinstance(content, str) and content != UNKNOWN and hops > 0:
            inner = _resolves_to(plan, content, ip, addresses, hops - 1)
            if inner is None:
                return None
            why.append(f"CNAME {domain} → {content}: {inner}")
        else:
            why.append(f"{kind} {domain} does not resolve to an address")
    return "; ".join(why)


def provisioning(plan: StackPlan) -> list[DomainStatus]:
    """The predicted status of every domain of every Google-managed certificate ``plan``
    declares, sorted by certificate and domain (module docstring for the rules)."""
    out = []
    for cert in sorted(_by_type(plan, MANAGED_SSL_CERTIFICATE), key=lambda r: r.name):
        name = str(cert.inputs.get("name", cert.name))
        domains = list((cert.inputs.get("managed") or {}).get("domains") or [])
        served = _served_ips(plan, cert)
        for domain in sorted(domains):
            if domain.startswith("*."):
                out.append(DomainStatus(name, domain, PROVISIONING, "[WILDCARD] load balancer "
                                        "authorization does not issue wildcard certificates"))
            elif not served:
                out.append(DomainStatus(name, domain, PROVISIONING, "[SERVE] no forwarding rule on 443 "
                                        "serves a target HTTPS proxy with this certificate"))
            else:
                whys = [_resolves_to(plan, domain, ip, addrs) for ip, addrs in served]
                if any(w is None for w in whys):
                    out.append(DomainStatus(name, domain, ACTIVE, "[DNS] resolves to the load balancer"))
                else:
                    out.append(DomainStatus(name, domain, NOT_VISIBLE, f"[DNS] {whys[0]}"))
    return out


def not_active(plan: StackPlan) -> list[DomainStatus]:
    """The domains of ``plan`` that would not become ACTIVE."""
    return [d for d in provisioning(plan) if d.status != ACTIVE]
