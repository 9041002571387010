"""Ingress for the controller's federation endpoint: cert-manager and Traefik releases,
ACME HTTP-01 ClusterIssuers, a Traefik IP allowlist and the federation Ingress.

Sources: cert-manager "ACME — HTTP01" (ClusterIssuer spec.acme), Let's Encrypt "Staging
Environment" (server URLs), Traefik "IPAllowList" middleware (``spec.ipAllowList.sourceRange``)
and "Kubernetes Ingress" (``router.middlewares`` annotation ``<ns>-<name>@kubernetescrd``).
CoreWeave "Create a public DNS name" / "Expose a Service": a LoadBalancer Service gets a public
address only with ``service.beta.kubernetes.io/coreweave-load-balancer-type: public``, its
``*.coreweave.app`` name from ``service.beta.kubernetes.io/external-hostname``, and keeps the
client's source IP (needed by the IP allowlist) with ``externalTrafficPolicy: Local``; the
traefik chart takes both through ``service.annotations`` and ``service.spec``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.derive import DEFAULT_CONVENTIONS, HelmChart, helm_chart
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import CLUSTER_ISSUER_KIND, INGRESS_COMPONENT, TRAEFIK_MIDDLEWARE_KIND

CERT_MANAGER_CHART = helm_chart(DEFAULT_CONVENTIONS, "cert_manager")   # the [conventions] defaults
TRAEFIK_CHART = helm_chart(DEFAULT_CONVENTIONS, "traefik")
LE_PRODUCTION = "https://acme-v02.api.letsencrypt.org/directory"
LE_STAGING = "https://acme-staging-v02.api.letsencrypt.org/directory"
ALLOWLIST_NAME = "federation-allowlist"
LB_TYPE_ANNOTATION = "service.beta.kubernetes.io/coreweave-load-balancer-type"
EXTERNAL_HOSTNAME_ANNOTATION = "service.beta.kubernetes.io/external-hostname"


def acme_server(issuer: str) -> str:
    """Rule: an issuer whose name contains ``staging`` uses Let's Encrypt staging."""
    return LE_STAGING if "staging" in issuer else LE_PRODUCTION


@dataclass(frozen=True)
class IngressArgs:
    namespace: str                        # kubernetes_provider.namespace (where the controller Service lives)
    name_prefix: str                      # platform.label_prefix
    ingress_class: str                    # provisioning.coreweave.ingress.ingress_class
    acme_email: str                       # provisioning.coreweave.ingress.acme_email (or [defaults])
    cluster_issuers: tuple[str, ...]      # provisioning.coreweave.ingress.cluster_issuers
    active_cluster_issuer: str            # provisioning.coreweave.ingress.active_cluster_issuer
    allow_sources: tuple[str, ...]        # ingress.federation_allow_sources, normalised to CIDRs
    service_name: str                     # controller.coreweave.service_name
    service_port: int                     # controller.coreweave.port
    hostname: str | None                  # provisioning.coreweave.federation_dns.hostname, if any
    external_hostname: str | None = None  # provisioning.coreweave.federation_dns.target: CoreWeave's name of the LB
    allowlist_name: str = ALLOWLIST_NAME  # [conventions] allowlist_middleware, filled
    ingress_name: str | None = None       # [conventions] federation_ingress, filled; None = <prefix>-federation
    tls_secret: str | None = None         # [conventions] federation_tls_secret, filled; None = <ingress>-tls
    cert_manager_chart: HelmChart = CERT_MANAGER_CHART   # [conventions] cert_manager_*
    traefik_chart: HelmChart = TRAEFIK_CHART             # [conventions] traefik_*


def traefik_values(args: IngressArgs) -> dict:
    """Traefik chart values: our IngressClass, and a public CoreWeave LoadBalancer Service
    named ``external_hostname`` that preserves client source IPs."""
    annotations = {LB_TYPE_ANNOTATION: "public"}
    if args.external_hostname:
        annotations[EXTERNAL_HOSTNAME_ANNOTATION] = args.external_hostname
    return {"ingressClass": {"enabled": True, "isDefaultClass": False, "name": args.ingress_class},
            "service": {"annotations": annotations, "spec": {"externalTrafficPolicy": "Local"}}}


def _release(name: str, chart: HelmChart, values: dict,
             opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
    """A Helm release under the logical ``name``; its release name, namespace and chart
    source come from ``chart`` (the conventions)."""
    release = k8s.helm.v3.Release(
        name, name=chart.release, chart=chart.chart, version=chart.version, namespace=chart.namespace,
        create_namespace=True, atomic=True,
        **({"repository_opts": {"repo": chart.repo}} if chart.repo else {}), values=values, opts=opts)
    ids.importable(release, ids.helm_release(chart.namespace, chart.release))
    return release


class Ingress(pulumi.ComponentResource):
    """Everything between the internet and the controller Service, IP-allowlisted."""

    external_hostname: str | None

    def __init__(self, name: str, args: IngressArgs, *, provider: k8s.Provider,
                 namespace: k8s.core.v1.Namespace,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(INGRESS_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        cert_manager = _release("cert-manager", args.cert_manager_chart, {"crds": {"enabled": True}}, o)
        traefik = _release("traefik", args.traefik_chart, traefik_values(args), o)
        # The name CoreWeave gives Traefik's LoadBalancer: the DNS record's one target.
        self.external_hostname = args.external_hostname
        for issuer in sorted(args.cluster_issuers):
            cluster_issuer = k8s.apiextensions.CustomResource(
                issuer, api_version=CLUSTER_ISSUER_KIND.api_version,
                kind=CLUSTER_ISSUER_KIND.kind,
                metadata={"name": issuer},
                spec={"acme": {
                    "email": args.acme_email,
                    "server": acme_server(issuer),
                    "privateKeySecretRef": {"name": f"{issuer}-account-key"},
                    "solvers": [{"http01": {"ingress": {"ingressClassName": args.ingress_class}}}],
                }},
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[cert_manager])))
            ids.importable(cluster_issuer, ids.k8s_cluster_scoped(issuer))
        in_ns = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[namespace, traefik]))
        allow_name = args.allowlist_name
        allowlist = k8s.apiextensions.CustomResource(
            f"{args.namespace}-{allow_name}",
            api_version=TRAEFIK_MIDDLEWARE_KIND.api_version, kind=TRAEFIK_MIDDLEWARE_KIND.kind,
            metadata={"name": allow_name, "namespace": args.namespace},
            spec={"ipAllowList": {"sourceRange": list(args.allow_sources)}},
            opts=in_ns)
        ids.importable(allowlist, ids.k8s_namespaced(args.namespace, allow_name))
        ingress_name = args.ingress_name or f"{args.name_prefix}-federation"
        rule: dict = {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": args.service_name, "port": {"number": args.service_port}}}}]}}
        spec: dict = {"ingressClassName": args.ingress_class, "rules": [rule]}
        if args.hostname:
            rule["host"] = args.hostname
            spec["tls"] = [{"hosts": [args.hostname], "secretName": args.tls_secret or f"{ingress_name}-tls"}]
        ingress = k8s.networking.v1.Ingress(
            f"{args.namespace}-{ingress_name}",
            metadata={"name": ingress_name, "namespace": args.namespace, "annotations": {
                "cert-manager.io/cluster-issuer": args.active_cluster_issuer,
                "traefik.ingress.kubernetes.io/router.middlewares":
                    f"{args.namespace}-{allow_name}@kubernetescrd",
            }},
            spec=spec, opts=in_ns)
        ids.importable(ingress, ids.k8s_namespaced(args.namespace, ingress_name))
        self.register_outputs({"active_cluster_issuer": args.active_cluster_issuer})
