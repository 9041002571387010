"""VPC firewall rules (ingress, one protocol/port set per rule) and their import IDs.

Source: GCP "VPC firewall rules" — lower ``priority`` numbers win (0..65535, default 1000),
so an allow at 900 takes precedence over a deny at 1000 for the sources both match; rules
apply to instances carrying one of ``targetTags``. Google's external Application Load
Balancer and its health checks reach backends from 130.211.0.0/22 and 35.191.0.0/16
("Firewall rules" of the external Application Load Balancer docs). Source ranges match
internal addresses as well as external ones, so a deny of 0.0.0.0/0 at priority 1000 also
overrides the default network's ``default-allow-internal`` (priority 65534, 10.128.0.0/9;
"VPC firewall rules", pre-populated rules of the default network) — VMs that dial a backend's
internal address need their own allow (:func:`allow_internal`). Marin documents the same
trap for its controllers' ``deny_public`` ("Firewall boundaries" of its ingress doc) and
allows its VPC range next to the load balancer's for its log relay (marin-community/marin
``infra/pulumi/src/iac/gcp/gclb.py`` @ 3df94eb4de74, ``VPC_PRIVATE_RANGE``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pulumi

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.pulumi import importids as ids

GOOGLE_LB_RANGES: tuple[str, ...] = ("130.211.0.0/22", "35.191.0.0/16")
PUBLIC_IPV4: tuple[str, ...] = ("0.0.0.0/0",)
ALLOW_PRIORITY = 900    # beats the deny below for the load balancer's ranges
DENY_PRIORITY = 1000


@dataclass(frozen=True)
class FirewallRuleSpec:
    """One ingress rule. All values come from the caller (a component's Args)."""

    project: str                      # provisioning.gcp.project
    name: str                         # GCE name (derive.gclb.BackendNames), also the logical name
    network: str                      # provisioning.gcp.gclb.network
    action: Literal["allow", "deny"]  # allow or deny the ports below
    priority: int                     # ALLOW_PRIORITY / DENY_PRIORITY
    source_ranges: tuple[str, ...]    # CIDRs the rule matches
    target_tags: tuple[str, ...]      # network tags of the instances it applies to
    ports: tuple[int, ...]            # TCP ports
    description: str = ""

    @property
    def import_id(self) -> str:
        """Pulumi import ID (``gcp:compute/firewall:Firewall``): ``projects/<p>/global/firewalls/<name>``."""
        return firewall_import_id(self.project, self.name)


def firewall_import_id(project: str, name: str) -> str:
    """``projects/<project>/global/firewalls/<name>`` (the provider's documented import form)."""
    return ids.gcp_global(project, "firewalls", name)


def allow_load_balancer(*, project: str, name: str, network: str, target_tag: str, port: int,
                        description: str = "") -> FirewallRuleSpec:
    """Allow Google's load-balancer and health-check ranges to ``port`` on ``target_tag`` VMs."""
    return FirewallRuleSpec(project=project, name=name, network=network, action="allow",
                            priority=ALLOW_PRIORITY, source_ranges=GOOGLE_LB_RANGES,
                            target_tags=(target_tag,), ports=(port,), description=description)


def allow_internal(*, project: str, name: str, network: str, target_tag: str, port: int,
                   source_ranges: tuple[str, ...], description: str = "") -> FirewallRuleSpec:
    """Allow the VPC's own ``source_ranges`` to ``port`` on ``target_tag`` VMs, above the deny
    below (which would otherwise override ``default-allow-internal``)."""
    return FirewallRuleSpec(project=project, name=name, network=network, action="allow",
                            priority=ALLOW_PRIORITY, source_ranges=tuple(source_ranges),
                            target_tags=(target_tag,), ports=(port,), description=description)


def deny_public(*, project: str, name: str, network: str, target_tag: str, port: int,
                description: str = "") -> FirewallRuleSpec:
    """Deny 0.0.0.0/0 to ``port`` on ``target_tag`` VMs (below the load-balancer allow)."""
    return FirewallRuleSpec(project=project, name=name, network=network, action="deny",
                            priority=DENY_PRIORITY, source_ranges=PUBLIC_IPV4,
                            target_tags=(target_tag,), ports=(port,), description=description)


def firewall_rule(spec: FirewallRuleSpec, *, provider: pulumi.ProviderResource,
                  parent: pulumi.Resource) -> Declared:
    """Declare ``spec`` as a ``gcp:compute/firewall:Firewall`` (logical name = GCE name) under ``parent``."""
    ports = [{"protocol": "tcp", "ports": [str(p) for p in spec.ports]}]
    return kinds.FIREWALL(
        spec.name, {"project": spec.project, "name": spec.name, "network": spec.network,
                    "direction": "INGRESS", "priority": spec.priority,
                    "sourceRanges": list(spec.source_ranges), "targetTags": list(spec.target_tags),
                    "description": spec.description or None,
                    "allows": ports if spec.action == "allow" else None,
                    "denies": ports if spec.action == "deny" else None},
        pulumi.ResourceOptions(parent=parent, provider=provider))
