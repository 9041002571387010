"""The Pulumi program of the cluster project (kind ``cluster``; ``infra/__main__.py`` calls
:func:`clusterstack.programs.main`, which calls :func:`build`).

Reads the stack config ``clusterstack:cluster`` (the stack file is only a pointer), loads that
reviewed cluster config, and dispatches on ``provisioning.provider``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from clusterstack import secrets
from clusterstack.components.coreweave.ingress import Ingress, IngressArgs
from clusterstack.components.coreweave.kueue import Kueue, KueueArgs
from clusterstack.components.coreweave.nodepools import NodePools, NodePoolsArgs
from clusterstack.components.coreweave.teams import Teams, TeamsArgs
from clusterstack.components.coreweave.rbac import (CONTROLLER_RBAC, LOOM_SESSION_RBAC, OBSERVER_RBAC, Rbac,
                                                    RbacArgs)
from clusterstack.config.cluster import ClusterConfig
from clusterstack.derive import helm_chart
from clusterstack.derive.cluster import ClusterSpecs
from clusterstack.derive.gclb import derive_gclb
from clusterstack.errors import ClusterstackError
from clusterstack.validation import load_cluster, load_references
from clusterstack.workspace import STACK_CONFIG_KEY, Project, Workspace
from clusterstack.workspace.model import Conventions
from clusterstack.components.gcp import kinds
from clusterstack.components.dns import (FederationDns, FederationDnsArgs, LoadBalancerDns,
    LoadBalancerDnsArgs)

if TYPE_CHECKING:
    from clusterstack.components.gcp.gclb import GcpGclbIapArgs


def build_coreweave(cfg: ClusterConfig, workspace: Workspace, specs: ClusterSpecs) -> None:
    """Declare a CoreWeave cluster stack: NodePools, RBAC, Kueue, Ingress and optional DNS.
    ``specs``: what :func:`clusterstack.validation.load_cluster` derived from ``cfg`` with the
    workspace's ``[conventions]`` (:func:`clusterstack.derive.cluster.derive_cluster`): the
    program declares what was validated, without deriving it again."""
    cw, platform = cfg.provisioning.coreweave, cfg.platform
    assert cw is not None and platform.coreweave is not None  # guaranteed by the loader
    assert cfg.kubernetes_provider.kueue is not None and cfg.controller.coreweave is not None
    prefix, ns = platform.label_prefix, cfg.kubernetes_provider.namespace
    conv = workspace.conventions       # [conventions]: every live object's name and label key
    named = {"prefix": prefix, "namespace": ns}
    # An explicit provider bound to the reviewed context; kubeconfig "" keeps any
    # machine-local kubeconfig path out of state (the ambient kubeconfig is used at run time).
    # enablePatchForce only where [conventions] opts in (taking over co-owned fields on adoption).
    provider = k8s.Provider("k8s", context=platform.coreweave.kube_context, kubeconfig="",
                            enable_patch_force=True if conv.enable_patch_force else None)

    pools = specs.nodepools
    nodepools = NodePools("nodepools", NodePoolsArgs(pools=pools), provider=provider)
    # Every Helm release waits for the CPU pool its pods run on (docs/cluster-objects.md "Day one").
    system = nodepools.pools[specs.system.name]
    placement = specs.placement
    teams = specs.teams   # None: the cluster's one queue, as without teams
    kueue = Kueue("kueue", KueueArgs(
        name_prefix=prefix, namespace=ns,
        manager_memory_limit=cw.kueue.manager_memory_limit,
        qps=cw.kueue.client_connection.qps, burst=cw.kueue.client_connection.burst,
        queue=specs.cluster_queue,
        topologies=specs.topologies,
        jobset=cw.kueue.jobset_installed,
        priority_class_name=conv.name("system_priority_class", prefix=prefix),
        chart=helm_chart(conv, "kueue"), values_key=conv.kueue_values_key, placement=placement,
        priority_value=conv.system_priority_value, priority_description=conv.system_priority_description,
        manager_priority=conv.kueue_manager_priority, values_preset=conv.kueue_values,
        queue_defaults=conv.cluster_queue_explicit_defaults, local_queue=conv.local_queue,
        **({"team_namespaces": teams.namespaces, "fair_sharing": teams.fair_sharing} if teams else {})),
        provider=provider, after=[system])
    if teams is not None:
        Teams("teams", TeamsArgs(teams=teams), provider=provider, after=[kueue.release],
              flavors=kueue.flavors)
    rbac = Rbac("rbac", RbacArgs(
        namespace=ns, service_account=cw.rbac.service_account, name_prefix=prefix,
        observer_usernames=cw.grafana_observer_rbac.usernames if cw.grafana_observer_rbac else (),
        role_name=conv.name("controller_role", **named),
        observer_role_name=conv.name("observer_role", **named),
        namespace_finalizer=conv.enable_patch_force,
        controller=CONTROLLER_RBAC[conv.controller_rbac], observer=OBSERVER_RBAC[conv.observer_rbac],
        loom_usernames=cw.loom_session_rbac.usernames if cw.loom_session_rbac else (),
        loom_role_name=conv.name("loom_session_role", **named), loom=LOOM_SESSION_RBAC[conv.loom_session_rbac]),
        provider=provider, namespace_after=[kueue.release])
    kueue.local_queue(rbac.namespace)
    dns = cw.federation_dns
    ingress = Ingress("ingress", IngressArgs(
        namespace=ns, name_prefix=prefix, ingress_class=cw.ingress.ingress_class,
        acme_email=cw.ingress.acme_email, cluster_issuers=cw.ingress.cluster_issuers,
        active_cluster_issuer=cw.ingress.active_cluster_issuer,
        allow_sources=cw.ingress.federation_allow_sources,
        service_name=cfg.controller.coreweave.service_name,
        service_port=cfg.controller.coreweave.port,
        hostname=dns.hostname if dns else None,
        external_hostname=dns.target if dns else None,
        allowlist_name=conv.name("allowlist_middleware", **named),
        ingress_name=conv.name("federation_ingress", **named),
        tls_secret=conv.name("federation_tls_secret", **named),
        cert_manager_chart=helm_chart(conv, "cert_manager"), traefik_chart=helm_chart(conv, "traefik"),
        placement=placement, chart_values=conv.ingress_chart_values),
        provider=provider, namespace=rbac.namespace, after=[system])
    if dns is not None:
        # Imported here: only stacks with federation DNS declare it (by type token, without
        # the pulumi_cloudflare SDK: components/dns.py).

        assert ingress.external_hostname is not None
        FederationDns("dns", FederationDnsArgs(
            zone_id=dns.zone_id, hostname=dns.hostname, target=ingress.external_hostname,
            api_token=secrets.resolve_output(dns.api_token, base_dir=workspace.root),
            ttl=conv.dns_ttl))
        pulumi.export("federation_hostname", dns.hostname)
    pulumi.export("cluster", cfg.name)
    pulumi.export("cks_cluster", cw.cluster.name)
    pulumi.export("nodepools", [p.name for p in pools])
    pulumi.export("cluster_queue", cfg.kubernetes_provider.kueue.cluster_queue)


def gclb_args(cfg: ClusterConfig, workspace: Workspace) -> GcpGclbIapArgs:
    """Args of the shared load balancer: ``provisioning.gcp.gclb`` plus the listed clusters'
    configs (derive.gclb). Raises ConfigError when a listed cluster is unknown or invalid."""
    from clusterstack.components.gcp.gclb import GcpGclbIapArgs

    g = cfg.provisioning.gcp
    assert g is not None and g.gclb is not None
    from clusterstack.components.gcp.gclb import SslPolicySpec

    conv = workspace.conventions
    backends = derive_gclb(cfg, load_references(workspace, cfg), conv)
    assert backends is not None
    return GcpGclbIapArgs(project=g.project, project_number=backends.project_number,
                          frontend_name=g.gclb.frontend_name, network=g.gclb.network,
                          subnetwork=g.gclb.subnetwork, controllers=backends.controllers,
                          log_relays=backends.log_relays,
                          internal_source_ranges=g.gclb.internal_source_ranges,
                          ssl_policy=SslPolicySpec(conv.gclb_ssl_policy, conv.gclb_min_tls_version)
                          if conv.gclb_ssl_policy else None,
                          token_proxy_rate_limit=g.gclb.token_proxy_rate_limit
                          if conv.gclb_token_proxy_armor else None)


def build_gcp(cfg: ClusterConfig, workspace: Workspace | None = None) -> None:
    """Declare the GCP project stack: static addresses, registry mirrors, with
    ``provisioning.gcp.gclb`` the shared HTTPS load balancer (whose backends come from the
    listed clusters' configs, read from ``workspace``) and — [conventions]
    ``gclb_dns_records`` — the A record of each of its certificate domains, then the IAM
    file's bindings — after the load balancer, because its IAP accessor bindings name the
    backends it declares."""
    # The GCP components only for GCP stacks (a CoreWeave stack declares none of them)
    from clusterstack.components.gcp.addresses import AddressSpec, StaticAddresses, StaticAddressesArgs
    from clusterstack.components.gcp.gclb import GcpGclbIap
    from clusterstack.components.gcp.registries import RegistryMirrors, RegistryMirrorsArgs, RegistrySpec
    from clusterstack.programs.iam import declare_iam

    g = cfg.provisioning.gcp
    assert g is not None
    provider = kinds.provider("gcp", project=g.project)
    addresses = StaticAddresses("addresses", StaticAddressesArgs(project=g.project, addresses=tuple(
        AddressSpec(a.name, a.region, a.address, a.description) for a in g.addresses)),
        provider=provider)
    conv = workspace.conventions if workspace is not None else Conventions()
    registries = RegistryMirrors("registries", RegistryMirrorsArgs(project=g.project, registries=tuple(
        RegistrySpec(r.name, loc, r.docker_upstream, r.description,
                     r.cleanup_policies if r.cleanup_policies is not None else conv.registry_cleanup_policies,
                     conv.name("registry_upstream_description", upstream=r.docker_upstream))
        for r in g.registries for loc in r.locations)), provider=provider)
    pulumi.export("cluster", cfg.name)
    pulumi.export("project", g.project)
    # the pinned IPs as written, a new address's IP once GCP has picked it
    pulumi.export("addresses", {a.name: a.address if a.address is not None
                                else addresses.addresses[a.name].output("address") for a in g.addresses})
    pulumi.export("registries", sorted(f"{loc}/{r.name}" for r in g.registries for loc in r.locations))
    iap_backends = None
    if g.gclb is not None:
        if workspace is None:
            raise ClusterstackError("the load balancer needs the workspace to read its clusters",
                                    "call build_gcp(cfg, workspace)")
        args = gclb_args(cfg, workspace)
        gclb = GcpGclbIap("gclb", args, provider=provider)
        iap_backends = gclb.iap_backends
        pulumi.export("lb_ip", gclb.ip_address)
        pulumi.export("iap_audiences", gclb.iap_audiences)
        if workspace.conventions.gclb_dns_records:
            # Each certificate domain's A record, in this stack (components/dns.py: a managed
            # certificate provisions only once its domain resolves to the load balancer).

            assert g.gclb.dns_zone_id is not None and g.gclb.dns_api_token is not None  # the loader's rule
            domains = tuple(sorted(b.domain for b in (*args.controllers, *args.log_relays)))
            LoadBalancerDns("gclb-dns", LoadBalancerDnsArgs(
                zone_id=g.gclb.dns_zone_id, domains=domains, ip_address=gclb.ip_address,
                api_token=secrets.resolve_output(g.gclb.dns_api_token, base_dir=workspace.root),
                ttl=workspace.conventions.dns_ttl))
            pulumi.export("dns_records", list(domains))
    if workspace is not None:  # the reviewed IAM file (iam/iam.yaml), when it governs this project
        declare_iam(workspace, cfg.name, g.project, provider, repositories=[registries],
                    iap_backends=iap_backends)


def build(workspace: Workspace, project: Project) -> None:
    """Declare every resource of the current stack of the cluster project.

    Raises ConfigError (missing stack config, unknown cluster, invalid config).
    """
    cluster = pulumi.Config("clusterstack").get(STACK_CONFIG_KEY)
    if not cluster:
        raise ClusterstackError(
            f"stack {pulumi.get_stack()!r} has no clusterstack:{STACK_CONFIG_KEY} config",
            f"its stack file must contain `clusterstack:{STACK_CONFIG_KEY}: <name>`; "
            "create it with `clusterstack stack init CLUSTER`")
    loaded = load_cluster(workspace, cluster)
    if loaded.specs is not None:   # a CoreWeave stack
        build_coreweave(loaded.config, workspace, loaded.specs)
    else:
        build_gcp(loaded.config, workspace)
