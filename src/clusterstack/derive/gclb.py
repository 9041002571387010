"""The shared HTTPS load balancer of a GCP stack: backend specs and resource names.

Pure functions. Input: the GCP stack's config (``provisioning.gcp.gclb``) and the configs of
the clusters it lists (each listed cluster's own reviewed file supplies its controller's
zone, instance and port, its IAP origin and signed-header audience, or its log relay VM).
Output: frozen specs the ``GcpGclbIap`` component declares, and the GCE names of every
resource, computed here once for the component, the checks below and ``clusterstack verify``.

Errors are :class:`~clusterstack.errors.FieldError` rows. A row about the GCP stack's own
file has a plain ``path``; a row about a referenced cluster's file carries
``extra={"cluster": <name>, "via": <path in the GCP stack's file>}`` and ``path`` inside the
referenced file, so the loader can print both locations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from clusterstack.config.cluster import ClusterConfig, Gclb
from clusterstack.config.types import DNS_HOSTNAME_RE, RFC1035_LABEL_RE
from clusterstack.errors import FieldError
from clusterstack.iam.targets import EMAIL_RE
from clusterstack.redact import redact_text
from clusterstack.pulumi import importids
from clusterstack.workspace.model import Conventions

DEFAULT_CONVENTIONS = Conventions()

Path_ = tuple[str | int, ...]

GCE_NAME = RFC1035_LABEL_RE   # GCE names: RFC 1035, ≤ 63
_HOSTNAME = DNS_HOSTNAME_RE
# IAP "Securing your app with signed headers": the JWT ``aud`` of a backend service is
# ``/projects/PROJECT_NUMBER/global/backendServices/SERVICE_ID`` (both numeric).
IAP_AUDIENCE = re.compile(r"\A/projects/(?P<number>\d+)/global/backendServices/(?P<id>\d+)\Z")
#: The backend service id of a controller without an audience (a backend this stack creates):
#: an import-ID template part (clusterstack.pulumi.importids.is_template), filled by
#: ``import generate --id`` only when adopting.
NEW_BACKEND_ID = "<backend_service_id>"
#: Compute Engine resource ids are ``uint64`` (Compute API ``BackendService.id``: "string
#: (uint64 format)", server-assigned) and project numbers ``int64`` (Resource Manager
#: ``Project.projectNumber``); both rendered as decimal text.
UINT64_MAX = 2**64 - 1


def audience_problem(m: re.Match[str]) -> str | None:
    """What a well-formed audience provably gets wrong, or None. The rule can know the form
    of the two numbers: an id of 0 (proto3's default for an unset ``uint64``: the API never
    reports a resource with id 0), an id beyond ``uint64`` or a project number beyond
    ``int64``, a leading zero (the API writes neither); and, against the stack's
    ``provisioning.gcp.project_number`` or another controller's audience, a different project
    or a shared id (:func:`gclb_problems`). It cannot know, offline, whether the backend service
    exists or is this controller's — ``validate`` says so (a note), and the first ``preview``
    of the adoption shows it."""
    number, bid = m["number"], m["id"]
    if number.startswith("0") or int(number) > 2**63 - 1:
        return (f"project number {number} is not a GCP project number (an int64 without a leading "
                "zero)")
    if int(bid) == 0:
        return "backend service id 0 is not a Compute Engine id: 0 is the value of an unset uint64"
    if bid.startswith("0") or int(bid) > UINT64_MAX:
        return f"backend service id {bid} is not a Compute Engine id (a uint64 without a leading zero)"
    return None
GCLB_PATH: Path_ = ("provisioning", "gcp", "gclb")


# --- names ------------------------------------------------------------------------------

@dataclass(frozen=True)
class BackendNames:
    """GCE names of one backend's resources (``prefix`` = controller cluster, or
    ``<cluster>-relay`` for a log relay). Also used as the Pulumi logical names."""

    prefix: str

    @property
    def neg(self) -> str:
        return f"{self.prefix}-neg"

    @property
    def endpoint(self) -> str:          # logical name only (a NEG member has no GCE name)
        return f"{self.prefix}-endpoint"

    @property
    def health_check(self) -> str:
        return f"{self.prefix}-hc"

    @property
    def backend(self) -> str:
        return f"{self.prefix}-be"

    @property
    def proxy_backend(self) -> str:     # the IAP-free token-proxy backend of a controller
        return f"{self.prefix}-proxy-be"

    @property
    def iap_settings(self) -> str:      # logical name only
        return f"{self.prefix}-iap-settings"

    @property
    def armor(self) -> str:             # Cloud Armor policy of a log relay
        return f"{self.prefix}-armor"

    @property
    def proxy_armor(self) -> str:       # Cloud Armor policy of a controller's token-proxy backend
        return f"{self.prefix}-proxy-armor"

    @property
    def allow_lb(self) -> str:
        return f"{self.prefix}-allow-lb"

    @property
    def allow_internal(self) -> str:    # a controller's VPC-internal allow (next to its deny)
        return f"{self.prefix}-allow-internal"

    def deny_public(self, port: int) -> str:
        return f"{self.prefix}-deny-public-{port}"

    @property
    def path_matcher(self) -> str:      # URL map path matcher of this backend's host
        return self.prefix

    def gce_names(self, port: int) -> tuple[str, ...]:
        """Every GCE resource name this backend may use (for length/format checks)."""
        return (self.neg, self.health_check, self.backend, self.proxy_backend, self.armor,
                self.proxy_armor, self.allow_lb, self.allow_internal, self.deny_public(port))


@dataclass(frozen=True)
class FrontendNames:
    """GCE names of the frontend, all named after ``gclb.frontend_name``."""

    frontend_name: str

    @property
    def address(self) -> str:
        return f"{self.frontend_name}-lb-ip"

    @property
    def url_map(self) -> str:
        return f"{self.frontend_name}-urlmap"

    @property
    def https_proxy(self) -> str:
        return f"{self.frontend_name}-https-proxy"

    @property
    def forwarding_rule(self) -> str:
        return f"{self.frontend_name}-https-fr"

    @property
    def ssl_policy(self) -> str:        # with [conventions] gclb_ssl_policy
        return f"{self.frontend_name}-ssl-policy"

    def gce_names(self) -> tuple[str, ...]:
        return (self.address, self.url_map, self.https_proxy, self.forwarding_rule, self.ssl_policy)


def certificate_name(domain: str) -> str:
    """Managed certificate name of a domain: dots → dashes, ``-cert`` appended
    (``ctl-a.example.org`` → ``ctl-a-example-org-cert``)."""
    return f"{domain.replace('.', '-')}-cert"


def controller_network_tag(cfg: ClusterConfig) -> str | None:
    """The tag the firewall rules target on a controller VM: ``controller.gcp.network_tag``,
    else ``<platform.label_prefix>-controller``. None without ``controller.gcp``."""
    c = cfg.controller.gcp
    if c is None:
        return None
    return c.network_tag or f"{cfg.platform.label_prefix}-controller"


def log_relay_network_tag(cfg: ClusterConfig) -> str | None:
    """``log_relay.gcp.network_tag``, else ``<platform.label_prefix>-log-relay``."""
    r = cfg.log_relay.gcp
    if r is None:
        return None
    return r.network_tag or f"{cfg.platform.label_prefix}-log-relay"


# --- specs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ControllerBackendSpec:
    """One controller behind IAP. Values come from the controller cluster's own config."""

    cluster: str                 # gclb.controllers[].cluster
    domain: str                  # host of <cluster>: auth.iap.url
    zone: str                    # <cluster>: controller.gcp.zone
    instance: str                # <cluster>: controller.gcp.instance, else [conventions] controller_instance
    port: int                    # <cluster>: controller.gcp.port
    network_tag: str             # <cluster>: controller.gcp.network_tag or <label_prefix>-controller
    backend_service_id: str      # <id> of <cluster>: auth.iap.signed_header_audience (import ID only)
    programmatic_clients: tuple[str, ...]  # <cluster>: auth.iap desktop client + programmatic_audiences
    token_proxy: bool            # gclb.controllers[].token_proxy

    @property
    def names(self) -> BackendNames:
        return BackendNames(self.cluster)


@dataclass(frozen=True)
class LogRelayBackendSpec:
    """One log relay behind Cloud Armor (no IAP)."""

    cluster: str                 # gclb.log_relays[].cluster
    domain: str                  # gclb.log_relays[].domain
    zone: str                    # <cluster>: log_relay.gcp.zone
    instance: str                # <cluster>: log_relay.gcp.instance
    port: int                    # <cluster>: log_relay.gcp.port
    network_tag: str             # <cluster>: log_relay.gcp.network_tag or <label_prefix>-log-relay
    sender_source_ranges: tuple[str, ...]  # gclb.log_relays[].sender_source_ranges (normalised CIDRs)

    @property
    def names(self) -> BackendNames:
        return BackendNames(f"{self.cluster}-relay")


@dataclass(frozen=True)
class GclbBackends:
    """Everything derived from the referenced clusters."""

    project_number: str                          # the shared <number> of every controller's audience
    controllers: tuple[ControllerBackendSpec, ...]  # in gclb.controllers order
    log_relays: tuple[LogRelayBackendSpec, ...]  # in gclb.log_relays order


def referenced_clusters(cfg: ClusterConfig) -> tuple[tuple[str, Path_], ...]:
    """``(cluster, path of its name in this config)`` for every cluster a GCP stack refers
    to: each cluster the gclb lists, and each cluster whose VM a static address is attached to
    (``provisioning.gcp.addresses[].attached_to``)."""
    gcp = cfg.provisioning.gcp
    if gcp is None:
        return ()
    out: list[tuple[str, Path_]] = []
    if gcp.gclb is not None:
        out += [(c.cluster, (*GCLB_PATH, "controllers", i, "cluster"))
                for i, c in enumerate(gcp.gclb.controllers)]
        out += [(r.cluster, (*GCLB_PATH, "log_relays", i, "cluster"))
                for i, r in enumerate(gcp.gclb.log_relays)]
    out += [(a.attached_to.cluster, ("provisioning", "gcp", "addresses", i, "attached_to", "cluster"))
            for i, a in enumerate(gcp.addresses) if a.attached_to is not None]
    return tuple(out)


def _iap_origin(url: str) -> str | None:
    """The host of an https origin (``https://host`` or ``https://host/``), else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if (parts.scheme != "https" or not parts.hostname or port is not None or parts.username
            or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment
            or not _HOSTNAME.match(parts.netloc)):
        return None
    return parts.hostname


class _Collector:
    """Collects FieldErrors; ``ref`` ones point into a referenced cluster's file."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def own(self, path: Path_, message: str, hint: str) -> None:
        self.errors.append(FieldError(path, message, hint))

    def ref(self, cluster: str, via: Path_, path: Path_, message: str, hint: str) -> None:
        self.errors.append(FieldError(path, f"cluster {cluster}: {message}", hint,
                                      extra={"cluster": cluster, "via": via}))


def _check_names(out: _Collector, names: tuple[str, ...], via: Path_, what: str) -> None:
    for n in names:
        if not GCE_NAME.match(n):
            out.own(via, f"derived GCE name {n!r} of {what} is not a valid name (a letter first, "
                    "then lowercase letters, digits or '-', 63 characters at most)",
                    "use a shorter cluster name or domain that starts with a letter")
            return


def controller_instance(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS) -> str | None:
    """The controller VM's name: ``controller.gcp.instance``, else ``[conventions]
    controller_instance`` (default ``iris-controller-<label_prefix>``, the scheduler's name for
    the VM: marin-community/marin infra/pulumi/src/iac/program.py@ef45e6c0). None without
    ``controller.gcp``."""
    c = cfg.controller.gcp
    if c is None:
        return None
    return c.instance or conventions.name("controller_instance", prefix=cfg.platform.label_prefix)


def _collect(cfg: ClusterConfig, refs: Mapping[str, ClusterConfig],
             conventions: Conventions = DEFAULT_CONVENTIONS) -> tuple[GclbBackends | None, list[FieldError]]:
    gcp = cfg.provisioning.gcp
    assert gcp is not None and gcp.gclb is not None
    gclb: Gclb = gcp.gclb
    out = _Collector()
    controllers: list[ControllerBackendSpec] = []
    relays: list[LogRelayBackendSpec] = []
    # the project number → who names it: provisioning.gcp.project_number, else the first
    # controller's audience
    numbers: dict[str, str] = ({gcp.project_number: "provisioning.gcp.project_number"}
                               if gcp.project_number else {})
    ids: dict[str, str] = {}               # backend service id → the controller whose audience names it
    domains: dict[str, str] = {}           # domain → who uses it (for the duplicate message)
    certs: dict[str, str] = {}

    def same_project(name: str, ref: ClusterConfig, via: Path_) -> bool:
        if ref.platform.gcp is None:
            out.ref(name, via, ("platform", "gcp", "project_id"),
                    "is not a GCP cluster (no platform.gcp)",
                    f"add platform.gcp.project_id: {gcp.project}")
            return False
        if ref.platform.gcp.project_id != gcp.project:
            out.ref(name, via, ("platform", "gcp", "project_id"),
                    f"runs in project {ref.platform.gcp.project_id!r}, but the load balancer is in "
                    f"{gcp.project!r}", "a backend VM must live in the load balancer's project")
            return False
        return True

    def claim_domain(domain: str, who: str, report) -> None:
        cert = certificate_name(domain)
        if domain in domains:
            report(f"domain {domain} is also used by {domains[domain]}",
                   "each backend needs its own domain (one host rule and certificate each)")
        elif cert in certs:
            report(f"domain {domain} gives the same certificate name {cert!r} as {certs[cert]}",
                   "use domains that differ in more than '.' versus '-'")
        else:
            domains[domain] = who
            certs[cert] = domain
            if not GCE_NAME.match(cert):
                report(f"certificate name {cert!r} derived from domain {domain} is not a valid GCE "
                       "name (a letter first, 63 characters at most)", "use a shorter domain")

    seen: set[str] = set()
    for i, c in enumerate(gclb.controllers):
        via = (*GCLB_PATH, "controllers", i, "cluster")
        if c.cluster in seen:
            out.own(via, f"controller {c.cluster} is listed twice", "list each controller once")
            continue
        seen.add(c.cluster)
        ref = refs.get(c.cluster)
        if ref is None:
            continue  # unknown or invalid: reported by the loader
        ctl = ref.controller.gcp
        _check_names(out, BackendNames(c.cluster).gce_names(ctl.port if ctl else 1), via,
                     f"controller {c.cluster}")
        ok = same_project(c.cluster, ref, via)
        if ctl is None:
            out.ref(c.cluster, via, ("controller", "gcp"),
                    "has no controller.gcp (zone, instance, port of the controller VM)",
                    "add controller.gcp: {zone: ..., instance: ..., port: ...}")
            ok = False
        iap = ref.auth.iap
        domain = backend_id = None
        if iap is None or not iap.url:
            out.ref(c.cluster, via, ("auth", "iap", "url"), "missing: the IAP origin of the controller",
                    "add auth.iap.url: https://<domain>")
        else:
            domain = _iap_origin(iap.url)
            if domain is None:
                out.ref(c.cluster, via, ("auth", "iap", "url"),
                        f"{iap.url!r} is not an https origin (https://<domain>, no port or path)",
                        "set it to https://<the controller's domain>")
        if iap is None or not iap.signed_header_audience:
            # a backend this stack creates: its id (and so the audience) is an output of the
            # first `up` (stack output iap_audiences); the IAP settings are named after the
            # backend's generated id, so only the import ID — adopting — needs it
            backend_id = NEW_BACKEND_ID
            if not gcp.project_number:
                out.own((*GCLB_PATH[:-1], "project"),
                        f"controller {c.cluster} has no auth.iap.signed_header_audience (a backend "
                        "this stack creates), so provisioning.gcp.project_number must name the "
                        "project's number: it names the IAP settings "
                        "(projects/<number>/iap_web/compute/services/<id>)",
                        "add project_number: \"<number>\" under provisioning.gcp (`gcloud projects "
                        f"describe {gcp.project} --format='value(projectNumber)'`)")
        else:
            m = IAP_AUDIENCE.match(iap.signed_header_audience)
            wrong = audience_problem(m) if m is not None else None
            if m is None:
                out.ref(c.cluster, via, ("auth", "iap", "signed_header_audience"),
                        f"{iap.signed_header_audience!r} is not "
                        "/projects/<number>/global/backendServices/<id>",
                        "copy the audience of the controller's backend service (both parts numeric), "
                        "or remove it for a backend this stack creates")
            elif wrong is not None:
                out.ref(c.cluster, via, ("auth", "iap", "signed_header_audience"), wrong,
                        "copy the audience of the existing backend service (`gcloud compute "
                        "backend-services describe <cluster>-be --global --format='value(id)'`), or "
                        "remove it: a backend this stack creates gets its id at the first `up`")
            elif not numbers:
                numbers[m["number"]] = f"controller {c.cluster}"
                backend_id = m["id"]
            elif m["number"] not in numbers:
                ((number, owner),) = numbers.items()
                out.ref(c.cluster, via, ("auth", "iap", "signed_header_audience"),
                        f"project number {m['number']} differs from {number} of {owner}",
                        "every controller's audience must name the load balancer's "
                        "project number")
            else:
                backend_id = m["id"]
            if backend_id is not None and backend_id != NEW_BACKEND_ID:
                other = ids.get(backend_id)
                if other is not None:
                    out.ref(c.cluster, via, ("auth", "iap", "signed_header_audience"),
                            f"backend service id {backend_id} is also controller {other}'s: two "
                            "backend services never share an id", "give each controller the "
                            "audience of its own backend service")
                    backend_id = None
                else:
                    ids[backend_id] = c.cluster
        if domain is not None:
            claim_domain(domain, f"controller {c.cluster}",
                         lambda msg, hint, c=c, via=via: out.ref(
                             c.cluster, via, ("auth", "iap", "url"), msg, hint))
        _admin_users_in_organization(out, gclb, c.cluster, via, ref)
        if ok and domain is not None and backend_id is not None:
            assert ctl is not None and iap is not None
            clients = tuple(dict.fromkeys(
                x for x in (iap.desktop_oauth_client_id, *iap.programmatic_audiences) if x))
            controllers.append(ControllerBackendSpec(
                cluster=c.cluster, domain=domain, zone=ctl.zone,
                instance=controller_instance(ref, conventions) or "",
                port=ctl.port, network_tag=controller_network_tag(ref) or "",
                backend_service_id=backend_id, programmatic_clients=clients,
                token_proxy=c.token_proxy))

    seen = set()
    for i, r in enumerate(gclb.log_relays):
        via = (*GCLB_PATH, "log_relays", i, "cluster")
        if r.cluster in seen:
            out.own(via, f"log relay {r.cluster} is listed twice", "list each log relay once")
            continue
        seen.add(r.cluster)
        claim_domain(r.domain, f"log relay {r.cluster}",
                     lambda msg, hint, i=i: out.own((*GCLB_PATH, "log_relays", i, "domain"), msg, hint))
        ref = refs.get(r.cluster)
        if ref is None:
            continue
        relay = ref.log_relay.gcp
        _check_names(out, BackendNames(f"{r.cluster}-relay").gce_names(relay.port if relay else 1),
                     via, f"log relay {r.cluster}")
        ok = same_project(r.cluster, ref, via)
        if relay is None:
            out.ref(r.cluster, via, ("log_relay", "gcp"),
                    "has no log_relay.gcp (zone, instance, port of the log relay VM)",
                    "add log_relay.gcp: {zone: ..., instance: ..., port: ...}")
        elif ok:
            relays.append(LogRelayBackendSpec(
                cluster=r.cluster, domain=r.domain, zone=relay.zone, instance=relay.instance,
                port=relay.port, network_tag=log_relay_network_tag(ref) or "",
                sender_source_ranges=tuple(r.sender_source_ranges)))

    _check_names(out, FrontendNames(gclb.frontend_name).gce_names(),
                 (*GCLB_PATH, "frontend_name"), "the frontend")
    if conventions.gclb_dns_records:
        _dns_zone_known(out, gclb, sorted(domains))
    if out.errors or not numbers:
        return None, out.errors
    (number, *_) = numbers
    return GclbBackends(project_number=number, controllers=tuple(controllers),
                        log_relays=tuple(relays)), []


# IAP "Custom OAuth configuration" (docs.cloud.google.com/iap/docs/custom-oauth-configuration,
# read 2026-12-02): "By default, IAP uses Google-managed OAuth clients to authenticate users.
# Google-managed OAuth clients can only be used to manage access for internal users that are
# within an organization"; a custom OAuth client is needed for users outside it.
_OAUTH_RULE = ("IAP's Google-managed OAuth client admits only users of the project's organization "
               "(IAP \"Custom OAuth configuration\")")


def _admin_users_in_organization(out: _Collector, gclb: Gclb, cluster: str, via: Path_,
                                 ref: ClusterConfig) -> None:
    """Rule: behind the load balancer a controller's ``auth.admin_users`` sign in through IAP,
    so each is a Google account address, and with ``iap_oauth_client: google-managed`` one in
    the organization (:data:`_OAUTH_RULE`): an admin outside it could never reach the
    controller. Errors in the controller's file at ``auth.admin_users[i]``; a missing
    ``organization_domains`` once, at the load balancer."""
    admins = ref.auth.admin_users
    if not admins:
        return
    domains = {d.lower() for d in gclb.organization_domains}
    if gclb.iap_oauth_client == "google-managed" and not domains:
        out.own((*GCLB_PATH, "organization_domains"),
                f"missing: controller {cluster} lists auth.admin_users, and {_OAUTH_RULE}",
                "list the organization's domains (organization_domains: [example.org]) so each admin "
                "is checked, or set iap_oauth_client: custom if the backends use an OAuth client of "
                "your own")
        return
    for i, user in enumerate(admins):
        at = ("auth", "admin_users", i)
        if not EMAIL_RE.match(user):
            out.ref(cluster, via, at, f"{user!r} is not an email address: IAP identifies users by "
                    "their Google account address", "write the admin's Google account address")
        elif gclb.iap_oauth_client == "google-managed" and user.rsplit("@", 1)[1].lower() not in domains:
            out.ref(cluster, via, at, f"{redact_text(user)} is outside the organization "
                    f"({', '.join(sorted(domains))}): {_OAUTH_RULE}",
                    "use the admin's address in the organization, or add its domain to "
                    "provisioning.gcp.gclb.organization_domains if the organization owns it, or "
                    "set iap_oauth_client: custom after giving the backends an OAuth client of "
                    "your own")


# Google Cloud "Use Google-managed SSL certificates" (docs.cloud.google.com/load-balancing/docs/
# ssl-certificates/google-managed-certs, read 2026-12-02): provisioning completes only after
# each domain's DNS A/AAAA record resolves to the load balancer's IP; until then the domain
# status is FAILED_NOT_VISIBLE and the certificate stays PROVISIONING (tests/oracles/
# google_certificates.py encodes the rule).
_CERT_RULE = ("a Google-managed certificate becomes ACTIVE only once each of its domains resolves "
              "to the load balancer's IP (Google Cloud \"Use Google-managed SSL certificates\")")


def _dns_zone_known(out: _Collector, gclb: Gclb, domains: list[str]) -> None:
    """Rule ([conventions] ``gclb_dns_records``): the stack declares an A record per
    certificate domain (:data:`_CERT_RULE`), so it needs the Cloudflare zone and a token."""
    for key, default in (("dns_zone_id", "dns_zone_id"), ("dns_api_token", "dns_api_token")):
        if getattr(gclb, key) is None:
            out.own((*GCLB_PATH, key),
                    f"missing here and in [defaults] {default}: the stack declares the DNS records of "
                    f"{', '.join(domains)}, and {_CERT_RULE}",
                    f"set provisioning.gcp.gclb.{key} (or {default} under [defaults] in "
                    "clusterstack.toml), or set [conventions] gclb_dns_records = false if the lab "
                    "points these names at the lb_ip output another way")


def certificate_domains(backends: GclbBackends) -> tuple[str, ...]:
    """Every domain with a Google-managed certificate on the load balancer (one per
    controller and log relay), sorted: the names its DNS records are for."""
    return tuple(sorted(b.domain for b in (*backends.controllers, *backends.log_relays)))


def gclb_problems(cfg: ClusterConfig, refs: Mapping[str, ClusterConfig],
                  conventions: Conventions = DEFAULT_CONVENTIONS) -> list[FieldError]:
    """Every rule of ``provisioning.gcp.gclb`` that needs the referenced clusters.

    ``refs`` maps a listed cluster's name to its validated config; clusters missing from it
    (unknown, or invalid on their own) are skipped — the loader reports those. Rules, each
    error naming the cluster and the field: a controller has ``controller.gcp`` and
    ``auth.iap.url`` (an https origin; its host is the backend's domain) and
    ``auth.iap.signed_header_audience`` (``/projects/<number>/global/backendServices/<id>``);
    all audiences share one project number; every backend VM is in the stack's project
    (``platform.gcp.project_id``); a log relay has ``log_relay.gcp``; domains (and the
    certificate names derived from them) are unique; a cluster is listed once per kind; every
    derived GCE name is valid (RFC 1035, ≤ 63 characters); a controller's ``auth.admin_users``
    are addresses in ``organization_domains`` under the Google-managed OAuth client
    (:func:`_admin_users_in_organization`); with [conventions] ``gclb_dns_records`` the DNS
    zone and token of the certificates' records are known (:func:`_dns_zone_known`). Returns
    [] when all hold.
    """
    if cfg.provisioning.gcp is None or cfg.provisioning.gcp.gclb is None:
        return []
    return _collect(cfg, refs, conventions)[1]


def derive_gclb(cfg: ClusterConfig, refs: Mapping[str, ClusterConfig],
                conventions: Conventions = DEFAULT_CONVENTIONS) -> GclbBackends | None:
    """The load balancer's backends, or None when the stack declares no gclb.

    Raises the first :func:`gclb_problems` row as FieldError (the loader has already
    reported all of them for a config that got this far).
    """
    if cfg.provisioning.gcp is None or cfg.provisioning.gcp.gclb is None:
        return None
    backends, errors = _collect(cfg, refs, conventions)
    if errors:
        raise errors[0]
    missing = [name for name, _ in referenced_clusters(cfg) if name not in refs]
    if missing or backends is None:
        raise FieldError(GCLB_PATH, f"referenced clusters not loaded: {missing}",
                         "load them with clusterstack.validation.load_references")
    return backends


def backend_objects(cfg: ClusterConfig, backends: GclbBackends,
                    conventions: Conventions = DEFAULT_CONVENTIONS) -> list[tuple[str, str, Path_]]:
    """``(resource path, what, path in cfg)`` of every named GCP object the ``GcpGclbIap``
    component (components/gcp/gclb.py) declares per routed cluster of ``cfg``'s load balancer:
    per controller its NEG (zonal), health check, backend service, token-proxy backend (with
    ``token_proxy``) and its Cloud Armor policy (with ``token_proxy`` and [conventions]
    ``gclb_token_proxy_armor``), allow-lb, allow-internal (with ``internal_source_ranges``)
    and deny-public firewalls and its domain's certificate; per log relay its Cloud Armor policy,
    NEG, health check, backend service, allow-lb and deny-public firewalls and certificate.
    Names from :class:`BackendNames` and :func:`certificate_name`, the resource path in the
    provider's import form (``projects/<p>/global/<collection>/<name>``, a NEG
    ``projects/<p>/zones/<z>/networkEndpointGroups/<name>``): what the component passes as each
    object's import ID. The path in ``cfg`` is the listing's ``cluster`` line. The frontend's
    objects are named after ``frontend_name`` alone, so they are not listed here."""
    gcp = cfg.provisioning.gcp
    assert gcp is not None and gcp.gclb is not None
    project, out = gcp.project, []

    def add(collection: str, name: str, what: str, via: Path_) -> None:
        out.append((importids.gcp_global(project, collection, name), f"{what} {name!r}", via))

    def backend(names: BackendNames, zone: str, via: Path_) -> None:
        out.append((f"projects/{project}/zones/{zone}/networkEndpointGroups/{names.neg}",
                    f"NEG {names.neg!r}", via))
        add("healthChecks", names.health_check, "health check", via)
        add("backendServices", names.backend, "backend service", via)

    index = {c.cluster: i for i, c in enumerate(gcp.gclb.controllers)}
    for c in backends.controllers:
        via, names = (*GCLB_PATH, "controllers", index[c.cluster], "cluster"), c.names
        backend(names, c.zone, via)
        if c.token_proxy:
            add("backendServices", names.proxy_backend, "backend service", via)
            if conventions.gclb_token_proxy_armor:
                add("securityPolicies", names.proxy_armor, "security policy", via)
        add("firewalls", names.allow_lb, "firewall", via)
        if gcp.gclb.internal_source_ranges:
            add("firewalls", names.allow_internal, "firewall", via)
        add("firewalls", names.deny_public(c.port), "firewall", via)
        add("sslCertificates", certificate_name(c.domain), "SSL certificate", via)
    index = {r.cluster: i for i, r in enumerate(gcp.gclb.log_relays)}
    for r in backends.log_relays:
        via, names = (*GCLB_PATH, "log_relays", index[r.cluster], "cluster"), r.names
        add("securityPolicies", names.armor, "security policy", via)
        backend(names, r.zone, via)
        add("firewalls", names.allow_lb, "firewall", via)
        add("firewalls", names.deny_public(r.port), "firewall", via)
        add("sslCertificates", certificate_name(r.domain), "SSL certificate", via)
    return out
