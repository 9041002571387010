"""Regional external static IPs: pinned (``address`` given: adopt-only, see
:mod:`clusterstack.validation.addresses`) or new (GCP picks the IP from its pool).

Source: GCP "Reserving a static external IP address" and the ``compute.Address`` resource:
``name``, ``region``, ``address`` and ``description`` are immutable, so changing any of them
replaces the address and releases the pinned IP. Hence ``protect`` (the engine refuses the
delete) and ``retain_on_delete`` (removing it from the program never releases the IP).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import STATIC_ADDRESSES_COMPONENT


@dataclass(frozen=True)
class AddressSpec:
    name: str                 # provisioning.gcp.addresses[].name
    region: str               # provisioning.gcp.addresses[].region
    address: str | None       # provisioning.gcp.addresses[].address (the pinned IPv4; None: GCP picks)
    description: str | None   # provisioning.gcp.addresses[].description (immutable on GCP)


@dataclass(frozen=True)
class StaticAddressesArgs:
    project: str                      # provisioning.gcp.project
    addresses: tuple[AddressSpec, ...]  # provisioning.gcp.addresses, in file order


class StaticAddresses(pulumi.ComponentResource):
    addresses: dict[str, Declared]

    def __init__(self, name: str, args: StaticAddressesArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(STATIC_ADDRESSES_COMPONENT, name, None, opts)
        self.addresses = {}
        for a in args.addresses:
            self.addresses[a.name] = kinds.ADDRESS(
                a.name, {"name": a.name, "project": args.project, "region": a.region,
                         "address": a.address, "addressType": "EXTERNAL", "description": a.description},
                pulumi.ResourceOptions(parent=self, provider=provider, protect=True,
                                            retain_on_delete=True))
            ids.importable(self.addresses[a.name], ids.gcp_address(args.project, a.region, a.name))
        self.register_outputs({"addresses": {n: r.output("address") for n, r in self.addresses.items()}})
