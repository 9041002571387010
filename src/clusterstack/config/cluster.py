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

from pydantic import (AliasChoices, AfterValidator, BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, ValidationInfo,
                      field_validator, model_validator)

from clusterstack.config.document import Lenient, Strict
from clusterstack.config.teams import Reservation, Teams
from clusterstack.config.types import (CksClusterName, NonEmptyTuple, CoreweaveZone, DnsHostname, Email, GcpProjectId, GcpRegion, GcpResourceName,
                                       GcpZone, Count, InstanceType, IpOrCidr, MemoryQuantity, NonEmptyStr, Port,
                                       PositiveCount, SchedulerSize,
                                       Rfc1123Label, quantity_bytes, unique_items)
from clusterstack.config.secretspec import SecretSpecField


def _memory_at_least_2gi(value: str) -> str:
    # Rule: the Kueue manager needs ≥ 2Gi on clusters of this size (below it, it is OOM-killed
    # while caching every Workload); enforced here so the limit cannot be lowered by accident.
    if quantity_bytes(value) < 2 * 2**30:
        raise ValueError(f"{value} is below the 2Gi minimum for the Kueue manager")
    return value


KueueMemory = Annotated[MemoryQuantity, AfterValidator(_memory_at_least_2gi)]


# --- sections shared with the scheduler -------------------------------------------------

class CoreweavePlatform(Lenient):
    region: str
    kube_context: NonEmptyStr


class GcpPlatform(Lenient):
    project_id: str


class Platform(Lenient):
    label_prefix: Annotated[Rfc1123Label, Field(max_length=40)]
    coreweave: CoreweavePlatform | None = None
    gcp: GcpPlatform | None = None


class KueueRef(Lenient):
    cluster_queue: Rfc1123Label


class KubernetesProvider(Lenient):
    namespace: Rfc1123Label = "iris"
    kueue: KueueRef | None = None


class ControllerCoreweave(Lenient):
    service_name: Rfc1123Label
    port: Port
    # The scale group whose CPU NodePool runs the controller (the scheduler's field:
    # marin-community/marin lib/iris/config/cw-us-west-04a.yaml@0379ee52
    # controller.coreweave.scale_group). The Helm charts' pods are pinned to it too
    # ([conventions] chart_node_selector) and every release waits for it (derive.system_pool).
    scale_group: NonEmptyStr | None = None


class ControllerGcp(Lenient):
    """Where a GCP-hosted controller runs (read by the GCP stack's shared load balancer)."""

    zone: GcpZone                                     # the controller VM's zone
    # The controller VM's instance name; default from ``[conventions] controller_instance``
    # (``iris-controller-<label_prefix>``, the name the scheduler gives the VM it creates:
    # marin-community/marin infra/pulumi/src/iac/program.py@ef45e6c0 ``controller_vm_name``).
    instance: GcpResourceName | None = None
    port: Port                                        # the port the controller serves HTTP on
    # Network tag the VM carries, targeted by the load balancer's firewall rules;
    # default ``<platform.label_prefix>-controller`` (derive.gclb.controller_network_tag).
    network_tag: GcpResourceName | None = None


class Controller(Lenient):
    coreweave: ControllerCoreweave | None = None
    gcp: ControllerGcp | None = None


class LogRelayGcp(Lenient):
    """Where a cluster's log relay VM runs (a backend of the shared load balancer)."""

    zone: GcpZone
    instance: GcpResourceName
    port: Port
    # Default ``<platform.label_prefix>-log-relay`` (derive.gclb.log_relay_network_tag).
    network_tag: GcpResourceName | None = None


class LogRelay(Lenient):
    gcp: LogRelayGcp | None = None


#: ``auth.iap.signed_header_audience``'s form (IAP "Securing your app with signed headers"):
#: checked against the load balancer's rules in derive.gclb, where the error can say why.
IapAudience = Annotated[str, Field(pattern=r"\A/projects/\d+/global/backendServices/\d+\Z")]


class IapAuth(Lenient):
    """IAP settings of a cluster's edge (names follow the scheduler's ``auth.iap`` block).

    Formats (an https origin, ``/projects/<number>/global/backendServices/<id>``) are checked
    when a load balancer references the cluster (derive.gclb), where the error can say why.
    """

    url: str | None = None                            # the IAP origin, https://<domain>
    signed_header_audience: str | None = None         # audience of IAP's signed header (JWT)
    desktop_oauth_client_id: str | None = None        # OAuth client of the desktop CLI flow
    programmatic_audiences: tuple[str, ...] = ()      # further OAuth clients allowed programmatically


class Auth(Lenient):
    iap: IapAuth | None = None
    # The controller's administrators (the scheduler's field: every address is made an admin
    # at start, marin-community/marin lib/iris/.../controller/auth_setup.py@136ec1bc). Behind
    # the load balancer each must get through IAP: validate checks them against the IAP
    # binding of the controller's backend and the OAuth client's organization
    # (clusterstack.validation.iap).
    admin_users: tuple[NonEmptyStr, ...] = ()   # emails; behind the load balancer checked against IAP (org, binding)


class Resources(Lenient):
    cpu: Count | None = None
    ram: SchedulerSize | None = None    # per-node memory (the scheduler's field), e.g. 512GB
    disk: SchedulerSize | None = None   # per-node local disk (the scheduler's field), e.g. 6.98TiB
    device_type: Literal["cpu", "gpu", "tpu"] = "cpu"
    device_variant: str | None = None
    device_count: Count = 0


class SliceTemplateCoreweave(Lenient):
    region: str | None = None
    instance_type: InstanceType | None = None   # the NodePool's spec.instanceType (config.types)


class SliceTemplate(Lenient):
    num_vms: Count = 1
    coreweave: SliceTemplateCoreweave | None = None


class ScaleGroup(Lenient):
    num_vms: Count = 1
    resources: Resources = Resources()
    buffer_slices: Count = 0
    max_slices: Count
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
    name: CksClusterName
    zone: CoreweaveZone


# Defaults of the Kueue manager's API client and memory: Marin's (marin-community/marin
# infra/pulumi/src/iac/config.py@208671df: KueueClientConnectionSpec qps 100 (a float),
# burst 200; KueueProvisioningSpec.manager_memory_limit = MIN_KUEUE_MANAGER_MEMORY 2Gi).
DEFAULT_KUEUE_QPS, DEFAULT_KUEUE_BURST, DEFAULT_KUEUE_MEMORY = 100, 200, "2Gi"


class ClientConnection(Strict):
    # client-go's rate limit is a float32 (QPS); an int stays an int (byte-stable plans).
    qps: Annotated[StrictInt | StrictFloat, Field(gt=0, le=2**31 - 1)] = DEFAULT_KUEUE_QPS
    burst: PositiveCount = DEFAULT_KUEUE_BURST


class KueueSettings(Strict):
    # The Topology the GPU flavors bind (derive.TOPOLOGY_LEVELS): "infiniband" (fabric → leafgroup
    # → hostname), "multinode-nvlink-ib" (NVL72 racks), or "hostname" (hostname only: for GPU nodes
    # without CoreWeave's fabric labels; TAS lists only nodes carrying every level label, kueue
    # v0.14.4 pkg/cache/scheduler/tas_flavor.go L107-113).
    flavor_topology: Literal["infiniband", "multinode-nvlink-ib", "hostname"]
    # True only where JobSet is installed: Kueue's jobset integration needs its CRDs.
    jobset_installed: StrictBool = False
    manager_memory_limit: KueueMemory = DEFAULT_KUEUE_MEMORY
    client_connection: ClientConnection = ClientConnection()


class Ingress(Strict):
    ingress_class: Rfc1123Label = "traefik"
    acme_email: Email
    cluster_issuers: NonEmptyTuple[Rfc1123Label]
    active_cluster_issuer: str
    federation_allow_sources: NonEmptyTuple[IpOrCidr]

    @field_validator("active_cluster_issuer")
    @classmethod
    def _active_issuer_listed(cls, value: str, info: ValidationInfo) -> str:
        # Rule: the federation Ingress may only name an issuer this stack declares. A field
        # validator (cluster_issuers is declared first) so the error names this field.
        issuers = info.data.get("cluster_issuers")
        if issuers is not None and value not in issuers:
            raise ValueError(f"active_cluster_issuer {value!r} is not one of "
                             f"cluster_issuers {list(issuers)}")
        return value


class FederationDns(Strict):
    zone_id: str = Field(pattern=r"\A[0-9a-f]{32}\Z")   # a Cloudflare zone ID
    hostname: DnsHostname
    target: DnsHostname
    api_token: SecretSpecField


class Rbac(Strict):
    service_account: Rfc1123Label


class GrafanaObserverRbac(Strict):
    usernames: NonEmptyTuple[NonEmptyStr]


class LoomSessionRbac(Strict):
    """``loom_session_rbac``: CoreWeave Managed Auth usernames of Loom sessions, granted exec
    and port-forward into the namespace's pods by a Role and RoleBinding named by
    ``[conventions] loom_session_role`` (``""``: none declared, the list is read and ignored).

    Marin's model: ``LoomSessionRbacSpec`` (marin-community/marin
    infra/pulumi/src/iac/config.py@208671df) and ``loom_session_manifests`` (its
    infra/pulumi/tests/test_coreweave_rbac.py, the version that imports it).
    """

    usernames: NonEmptyTuple[NonEmptyStr]


class CoreweaveProvisioning(Strict):
    cluster: CksCluster
    kueue: KueueSettings
    ingress: Ingress
    federation_dns: FederationDns | None = None
    rbac: Rbac
    grafana_observer_rbac: GrafanaObserverRbac | None = None
    loom_session_rbac: LoomSessionRbac | None = None   # exec/port-forward Role (LoomSessionRbac)
    teams: Teams | None = None       # teams sharing the fleet (config/teams.py, derive/teams.py)
    # scale group → the reservation its nodes are billed under (config/teams.py Reservation)
    reservations: dict[NonEmptyStr, Reservation] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _dns_target_is_the_clusters_coreweave_name(self) -> "CoreweaveProvisioning":
        # Rule: the CNAME target is also the Traefik Service's
        # service.beta.kubernetes.io/external-hostname annotation, and CoreWeave accepts a
        # fully qualified value only as <host>.<org id>-<cluster name>.coreweave.app
        # (CoreWeave "Create a public DNS name", long format).
        dns = self.federation_dns
        if dns is not None and not re.fullmatch(
                rf"[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]+-{re.escape(self.cluster.name)}\.coreweave\.app",
                dns.target):
            raise ValueError(f"federation_dns.target {dns.target!r} is not "
                             f"<host>.<org id>-{self.cluster.name}.coreweave.app, the name CoreWeave "
                             "gives the ingress Service of this cluster")
        return self


class AddressAttachment(Strict):
    """The VM a static address is the external IP of: a cluster's controller or log relay."""

    cluster: Rfc1123Label                       # a cluster of the workspace
    vm: Literal["controller", "log_relay"]      # its controller.gcp or log_relay.gcp VM


class StaticAddress(Strict):
    """``provisioning.gcp.addresses[]``: a regional external static IP.

    Without ``address`` the stack reserves a new IP (GCP picks it; the ``addresses`` stack
    output shows it). With ``address`` the IP is *pinned*, and a pinned IP can only be
    reserved by a project that already holds it (Compute Engine "Reserve a static external IP
    address": a new external address gets an IP from Google's pool; an explicit one is an
    in-use ephemeral IP being promoted, or a bring-your-own-IP prefix): such an address is
    *adopt-only* — imported (``clusterstack import``), never created — unless ``promote:
    true`` says the IP is an ephemeral IP of this project in this region right now. ``preview``
    and ``up`` refuse a plan that would create an adopt-only address
    (:mod:`clusterstack.validation.addresses`).
    """

    name: GcpResourceName
    region: GcpRegion
    address: str | None = None   # pinned IPv4 (adopt-only: imported, never created); omit for a new IP
    # Immutable on a GCP address: changing it forces a replace that releases the pinned IP.
    description: str | None = None
    # The pinned IP is an ephemeral external IP in use in this project and region: creating
    # the address promotes it (Compute Engine "Promote an ephemeral external IP address").
    promote: StrictBool = False   # the pinned IP is an in-use ephemeral IP here: creating promotes it
    # The VM this address is the external IP of; a regional address serves only VMs of its
    # region, so the VM's zone must be in ``region`` (checked against that cluster's file).
    attached_to: AddressAttachment | None = None   # its VM: must be in this region

    @field_validator("address")
    @classmethod
    def _ipv4(cls, value: str | None) -> str | None:
        # Rule: a regional external static address is IPv4 (GCP "Reserve a static external
        # IP address"); a field validator so the error names addresses[i].address.
        if value is None:
            return value
        try:
            ip = ipaddress.IPv4Address(value)
        except ValueError:
            raise ValueError(f"address {value!r} is not an IPv4 address") from None
        # Rule: an EXTERNAL address holds a public unicast IP (Compute Engine "IP addresses":
        # external IPs are publicly routable; private RFC 1918, shared 100.64/10, loopback,
        # link-local, multicast and reserved ranges are never Google's to give): no project
        # can hold such an IP as an external address, so it could never be adopted either.
        if not ip.is_global or ip.is_multicast:
            raise ValueError(f"address {value} is not a public unicast IPv4 address; an EXTERNAL "
                             "static address holds a publicly routable IP")
        return value

    @model_validator(mode="after")
    def _promote_needs_a_pinned_ip(self) -> "StaticAddress":
        # Rule: promotion turns a given ephemeral IP into a static one; without an IP there
        # is nothing to promote (GCP reserves a new IP from its pool).
        if self.promote and self.address is None:
            raise ValueError("promote: true needs address: the ephemeral IP to promote")
        return self


class DeletePolicy(Strict):
    action: Literal["DELETE"]
    id: str = Field(pattern=r"\A[a-z0-9-]+\Z")
    older_than: str = Field(pattern=r"\A\d+s\Z")   # protobuf Duration in seconds, e.g. 2592000s
    tag_state: Literal["TAGGED", "UNTAGGED", "ANY"] = "ANY"


class KeepPolicy(Strict):
    action: Literal["KEEP"]
    id: str = Field(pattern=r"\A[a-z0-9-]+\Z")
    keep_count: PositiveCount


CleanupPolicy = Annotated[DeletePolicy | KeepPolicy, Field(discriminator="action")]

DEFAULT_CLEANUP: tuple[DeletePolicy | KeepPolicy, ...] = (
    DeletePolicy(action="DELETE", id="delete-older-than-30d", older_than="2592000s", tag_state="ANY"),
    KeepPolicy(action="KEEP", id="keep-newest-16", keep_count=16),
)


class Registry(Strict):
    name: GcpResourceName
    # DOCKER_HUB or an https URL; one pattern (not a union) so a bad value gives one error.
    docker_upstream: str = Field(pattern=r"\A(DOCKER_HUB|https://[^\s/]+(/\S*)?)\Z")
    locations: Annotated[NonEmptyTuple[Annotated[str, Field(pattern=r"\A[a-z]+(-[a-z]+\d+)?\Z")]],
                         AfterValidator(unique_items)]  # one repository per location
    description: str = ""
    # None: [conventions] registry_cleanup_policies (default DEFAULT_CLEANUP)
    cleanup_policies: tuple[CleanupPolicy, ...] | None = None


class GclbController(Strict):
    """A controller backend of the shared load balancer (IAP in front)."""

    cluster: Rfc1123Label
    token_proxy: StrictBool = True      # route /proxy/t and /proxy/t/* to an IAP-free backend
    # No deny_public flag: a controller behind the load balancer always gets the rule denying
    # 0.0.0.0/0 on its port, or IAP could be bypassed (components/gcp/gclb.py).


class GclbLogRelay(Strict):
    """A log relay backend: no IAP; Cloud Armor admits only the senders' ranges."""

    cluster: Rfc1123Label
    domain: DnsHostname
    # Rule: 1..10 ranges — Cloud Armor's basic (SRC_IPS_V1) match takes at most 10 IP ranges
    # per rule (Cloud Armor "Security policy overview", limits).
    sender_source_ranges: NonEmptyTuple[IpOrCidr] = Field(max_length=10)


class Gclb(Strict):
    """``provisioning.gcp.gclb``: the lab's single global HTTPS load balancer."""

    controllers: NonEmptyTuple[GclbController]
    frontend_name: str            # names the frontend resources; must be one of controllers[].cluster
    # ``finelogs`` is Marin's name for the same list (marin-community/marin
    # infra/pulumi/src/iac/config.py@208671df GcpGclbSpec.finelogs); both are accepted.
    log_relays: tuple[GclbLogRelay, ...] = Field(
        default=(), validation_alias=AliasChoices("log_relays", "finelogs"))
    network: GcpResourceName = "default"
    subnetwork: GcpResourceName = "default"
    # VPC sources still allowed to reach a controller's port past its deny-public rule (workers
    # that dial the controller's internal address). Default: the default network's
    # default-allow-internal range (GCP "VPC firewall rules"); () for no internal allow.
    internal_source_ranges: tuple[IpOrCidr, ...] = ("10.128.0.0/9",)
    # The Cloudflare zone of the certificate domains and the API token that may edit it
    # ([defaults] dns_zone_id / dns_api_token when omitted): one A record per domain → the
    # load balancer's IP, unless [conventions] gclb_dns_records = false.
    dns_zone_id: str | None = Field(default=None, pattern=r"\A[0-9a-f]{32}\Z")   # Cloudflare zone of the certificate domains
    dns_api_token: SecretSpecField | None = None   # token that may edit the zone (a secret spec)
    # Requests per minute one client IP may send to a controller's IAP-free token-proxy path
    # before Cloud Armor answers 429 ([conventions] gclb_token_proxy_armor). Cloud Armor
    # "Rate limiting overview": a throttle rule's threshold is a count per interval.
    token_proxy_rate_limit: PositiveCount = 600   # requests/minute per client IP on /proxy/t, then 429
    # The OAuth client IAP signs users in with on the controllers' backends. google-managed
    # (IAP's default) admits only users of the project's organization (IAP "Custom OAuth
    # configuration"); custom: a client the lab made, which may admit anyone it grants.
    iap_oauth_client: Literal["google-managed", "custom"] = "google-managed"   # IAP's OAuth client on the backends
    # The organization's domains (its Cloud Identity / Workspace domains): with the
    # Google-managed client, every controller's auth.admin_users must be in one of them.
    organization_domains: tuple[DnsHostname, ...] = ()   # with google-managed: admins must be in these

    @field_validator("frontend_name")
    @classmethod
    def _frontend_is_a_controller(cls, value: str, info: ValidationInfo) -> str:
        # Rule: the frontend (address, URL map, proxy, forwarding rule) is named after one of
        # its controllers, whose backend is also the URL map's default service.
        controllers = info.data.get("controllers")
        if controllers is not None and value not in [c.cluster for c in controllers]:
            raise ValueError(f"frontend_name {value!r} is not one of the controllers "
                             f"{[c.cluster for c in controllers]}")
        return value


def _digits_as_text(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: A GCP project number: the decimal digits Resource Manager assigns (``projectNumber``, an
#: int64 rendered as text), no leading zero.
ProjectNumber = Annotated[str, BeforeValidator(_digits_as_text), Field(pattern=r"\A[1-9][0-9]{0,18}\Z")]


class GcpProvisioning(Strict):
    project: GcpProjectId
    # The project's number (``gcloud projects describe <project> --format='value(projectNumber)'``):
    # names the IAP settings of the load balancer's backends (``projects/<number>/iap_web/…``)
    # and is the ``<number>`` of every controller's audience. Needed with a gclb whose
    # controllers give no ``auth.iap.signed_header_audience`` yet (a backend not created yet:
    # its audience is the stack output ``iap_audiences``). A string: YAML would read the
    # digits as an int, taken as written. Rule: derive.gclb (an audience naming another number
    # is refused).
    project_number: ProjectNumber | None = None
    addresses: tuple[StaticAddress, ...] = ()
    registries: tuple[Registry, ...] = ()
    gclb: Gclb | None = None      # the shared HTTPS load balancer + IAP (components/gcp/gclb.py)


class Provisioning(Strict):
    provider: Literal["coreweave", "gcp"]
    coreweave: CoreweaveProvisioning | None = None
    gcp: GcpProvisioning | None = None


class Intent(Strict):
    """One reviewed destructive change of a pool (``intents:`` of a cluster file,
    after Terraform's ``removed``/``moved`` blocks): the guard lets exactly this change
    through and nothing else, ``up`` performs it, and the stanza is refused once it is done
    (:mod:`clusterstack.guard.intent`). Exactly one of:

    * ``retire: POOL`` — the scale group is gone from ``scale_groups``: its NodePool is deleted;
    * ``shrink: POOL`` with ``from_nodes``/``to_nodes`` — its node count goes from one to the
      other (the config already says ``to_nodes``);
    * ``migrate: OLD`` with ``to: NEW`` — the pool OLD is gone, NEW is in ``scale_groups``:
      NEW is created first, then OLD deleted (create before delete).
    """

    retire: NonEmptyStr | None = None
    shrink: NonEmptyStr | None = None
    migrate: NonEmptyStr | None = None
    to: NonEmptyStr | None = None            # migrate: the new pool (scale group)
    from_nodes: Count | None = None          # shrink: the pool's nodes before (max_slices × num_vms)
    to_nodes: Count | None = None            # shrink: … and after

    @model_validator(mode="after")
    def _one_exact_change(self) -> "Intent":
        # Rule: an intent names one change exactly (which pool, from what to what), so a
        # reviewer approves that change and no other.
        verbs = [v for v in ("retire", "shrink", "migrate") if getattr(self, v) is not None]
        if len(verbs) != 1:
            raise ValueError("give exactly one of retire, shrink, migrate")
        verb = verbs[0]
        extra = {"retire": ("to", "from_nodes", "to_nodes"), "shrink": ("to",),
                 "migrate": ("from_nodes", "to_nodes")}[verb]
        given = [k for k in extra if getattr(self, k) is not None]
        if given:
            raise ValueError(f"{given[0]} does not belong to a {verb}")
        if verb == "shrink" and (self.from_nodes is None or self.to_nodes is None
                                 or self.to_nodes >= self.from_nodes):
            raise ValueError("a shrink gives from_nodes and a smaller to_nodes")
        if verb == "migrate" and self.to is None:
            raise ValueError("a migrate names the new pool: to: NEW")
        return self

    @property
    def verb(self) -> str:
        return next(v for v in ("retire", "shrink", "migrate") if getattr(self, v) is not None)

    @property
    def pool(self) -> str:
        return str(getattr(self, self.verb))

    def words(self) -> str:
        """``retire spare`` / ``shrink h100 32 → 16 nodes`` / ``migrate h100 → h200``."""
        if self.verb == "shrink":
            return f"shrink {self.pool} {self.from_nodes} → {self.to_nodes} nodes"
        if self.verb == "migrate":
            return f"migrate {self.pool} → {self.to}"
        return f"retire {self.pool}"


class ClusterConfig(Lenient):
    """A whole reviewed cluster config (``clusters/<name>.yaml``)."""

    name: Rfc1123Label
    platform: Platform
    kubernetes_provider: KubernetesProvider = KubernetesProvider()
    controller: Controller = Controller()
    auth: Auth = Auth()
    log_relay: LogRelay = LogRelay()
    scale_groups: dict[str, ScaleGroup] = Field(default_factory=dict)
    provisioning: Provisioning
    # Reviewed destructive changes of pools (retire, shrink, migrate): clusterstack.guard.intent
    intents: tuple[Intent, ...] = ()
