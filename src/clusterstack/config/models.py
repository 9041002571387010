"""Typed model of a reviewed cluster config: only the fields the IaC reads.

Rules:
- Unknown keys outside ``provisioning:`` are ignored (other tools, such as the scheduler,
  keep their own settings in the same file); everything under ``provisioning:`` is strict.
- Field names follow the scheduler's config shape (``scale_groups``, ``slice_template`` …).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from clusterstack.secrets import SecretSpecField

_RFC1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_QUANTITY = re.compile(r"^(?P<num>\d+(\.\d+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_SUFFIX = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity_bytes(text: str) -> int:
    """Bytes in a Kubernetes memory quantity (``4Gi`` → 4294967296).

    Source: Kubernetes "Resource units — memory" (binary Ki..Ei and decimal k..E suffixes).
    Raises ValueError for anything else.
    """
    m = _QUANTITY.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a Kubernetes memory quantity such as 4Gi or 4096Mi")
    return int(float(m["num"]) * _SUFFIX[m["suffix"]])


def _memory_at_least_2gi(value: str) -> str:
    # Rule: the Kueue manager needs ≥ 2Gi on clusters of this size (below it, it is OOM-killed
    # while caching every Workload); enforced here so the limit cannot be lowered by accident.
    if quantity_bytes(value) < 2 * 2**30:
        raise ValueError(f"{value} is below the 2Gi minimum for the Kueue manager")
    return value


def _ip_or_cidr(value: str) -> str:
    # Rule: Traefik's ipAllowList sourceRange takes IPs or CIDRs; we normalise bare IPs to
    # /32 (IPv4) or /128 (IPv6) so the rendered list is uniform.
    try:
        return str(ipaddress.ip_network(value, strict=True))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not an IP address or CIDR ({exc})") from None


MemoryQuantity = Annotated[str, AfterValidator(_memory_at_least_2gi)]
IpOrCidr = Annotated[str, AfterValidator(_ip_or_cidr)]
Email = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]


class Lenient(BaseModel):
    """Sections shared with other tools: unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class Strict(BaseModel):
    """Sections only the IaC reads (under ``provisioning:``): unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- sections shared with the scheduler -------------------------------------------------

class CoreweavePlatform(Lenient):
    region: str
    kube_context: str = Field(min_length=1)


class GcpPlatform(Lenient):
    project_id: str


class Platform(Lenient):
    label_prefix: str = Field(pattern=_RFC1123_LABEL, max_length=40)
    coreweave: CoreweavePlatform | None = None
    gcp: GcpPlatform | None = None


class KueueRef(Lenient):
    cluster_queue: str = Field(pattern=_RFC1123_LABEL)


class KubernetesProvider(Lenient):
    namespace: str = Field(default="iris", pattern=_RFC1123_LABEL)
    kueue: KueueRef | None = None


class ControllerCoreweave(Lenient):
    service_name: str = Field(pattern=_RFC1123_LABEL)
    port: int = Field(gt=0, lt=65536)


class Controller(Lenient):
    coreweave: ControllerCoreweave | None = None


class Resources(Lenient):
    cpu: int | None = Field(default=None, ge=0)
    ram: str | None = None
    device_type: Literal["cpu", "gpu", "tpu"] = "cpu"
    device_variant: str | None = None
    device_count: int = Field(default=0, ge=0)


class SliceTemplateCoreweave(Lenient):
    region: str | None = None
    instance_type: str | None = None


class SliceTemplate(Lenient):
    num_vms: int = Field(default=1, ge=0)
    coreweave: SliceTemplateCoreweave | None = None


class ScaleGroup(Lenient):
    num_vms: int = Field(default=1, ge=0)
    resources: Resources = Resources()
    buffer_slices: int = Field(default=0, ge=0)
    max_slices: int = Field(ge=0)
    slice_template: SliceTemplate = SliceTemplate()

    @model_validator(mode="after")
    def _buffer_within_max(self) -> "ScaleGroup":
        # Rule: warm slices (NodePool minNodes) cannot exceed the envelope (maxNodes).
        if self.buffer_slices > self.max_slices:
            raise ValueError(f"buffer_slices ({self.buffer_slices}) exceeds max_slices "
                             f"({self.max_slices})")
        return self


# --- provisioning (strict) --------------------------------------------------------------

class CksCluster(Strict):
    name: str = Field(min_length=1)
    zone: str = Field(min_length=1)


class ClientConnection(Strict):
    qps: int = Field(gt=0)
    burst: int = Field(gt=0)


class KueueSettings(Strict):
    flavor_topology: Literal["infiniband", "multinode-nvlink-ib"]
    manager_memory_limit: MemoryQuantity
    client_connection: ClientConnection


class Ingress(Strict):
    ingress_class: str = Field(default="traefik", pattern=_RFC1123_LABEL)
    acme_email: Email
    cluster_issuers: tuple[Annotated[str, Field(pattern=_RFC1123_LABEL)], ...] = Field(min_length=1)
    active_cluster_issuer: str
    federation_allow_sources: tuple[IpOrCidr, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _active_issuer_listed(self) -> "Ingress":
        # Rule: the federation Ingress may only name an issuer this stack declares.
        if self.active_cluster_issuer not in self.cluster_issuers:
            raise ValueError(f"active_cluster_issuer {self.active_cluster_issuer!r} is not one of "
                             f"cluster_issuers {list(self.cluster_issuers)}")
        return self


class FederationDns(Strict):
    zone_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    hostname: str = Field(pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$")
    target: str = Field(pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$")
    api_token: SecretSpecField


class Rbac(Strict):
    service_account: str = Field(pattern=_RFC1123_LABEL)


class GrafanaObserverRbac(Strict):
    usernames: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)


class CoreweaveProvisioning(Strict):
    cluster: CksCluster
    kueue: KueueSettings
    ingress: Ingress
    federation_dns: FederationDns | None = None
    rbac: Rbac
    grafana_observer_rbac: GrafanaObserverRbac | None = None


class StaticAddress(Strict):
    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
    region: str = Field(pattern=r"^[a-z]+-[a-z]+\d+$")
    address: str
    # Immutable on a GCP address: changing it forces a replace that releases the pinned IP.
    description: str | None = None

    @model_validator(mode="after")
    def _ipv4(self) -> "StaticAddress":
        try:
            ipaddress.IPv4Address(self.address)
        except ValueError:
            raise ValueError(f"address {self.address!r} is not an IPv4 address") from None
        return self


class DeletePolicy(Strict):
    action: Literal["DELETE"]
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    older_than: str = Field(pattern=r"^\d+s$")   # protobuf Duration in seconds, e.g. 2592000s
    tag_state: Literal["TAGGED", "UNTAGGED", "ANY"] = "ANY"


class KeepPolicy(Strict):
    action: Literal["KEEP"]
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    keep_count: int = Field(gt=0)


CleanupPolicy = Annotated[DeletePolicy | KeepPolicy, Field(discriminator="action")]

DEFAULT_CLEANUP: tuple[DeletePolicy | KeepPolicy, ...] = (
    DeletePolicy(action="DELETE", id="delete-older-than-30d", older_than="2592000s", tag_state="ANY"),
    KeepPolicy(action="KEEP", id="keep-newest-16", keep_count=16),
)


class Registry(Strict):
    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
    docker_upstream: Literal["DOCKER_HUB"] | Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$")]
    locations: tuple[Annotated[str, Field(pattern=r"^[a-z]+(-[a-z]+\d+)?$")], ...] = Field(min_length=1)
    description: str = ""
    cleanup_policies: tuple[CleanupPolicy, ...] = DEFAULT_CLEANUP


class GcpProvisioning(Strict):
    project: str = Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
    addresses: tuple[StaticAddress, ...] = ()
    registries: tuple[Registry, ...] = ()


class Provisioning(Strict):
    provider: Literal["coreweave", "gcp"]
    coreweave: CoreweaveProvisioning | None = None
    gcp: GcpProvisioning | None = None


class ClusterConfig(Lenient):
    """A whole reviewed cluster config (``clusters/<name>.yaml``)."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    platform: Platform
    kubernetes_provider: KubernetesProvider = KubernetesProvider()
    controller: Controller = Controller()
    scale_groups: dict[str, ScaleGroup] = Field(default_factory=dict)
    provisioning: Provisioning
