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

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.components.coreweave.helm import placed, release
from clusterstack.derive import DEFAULT_CONVENTIONS, ChartPlacement, HelmChart, helm_chart
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
    # derive.chart_placement: the charts' nodeSelector, replicas and PodDisruptionBudgets
    placement: ChartPlacement = field(default_factory=lambda: ChartPlacement((), 1))
    # [conventions] ingress_chart_values: "clusterstack" (the values below) or "none" (no values:
    # the charts' defaults, Marin's — infra/pulumi/src/iac/coreweave/traefik.py@9865fe73)
    chart_values: str = "clusterstack"


def traefik_values(args: IngressArgs) -> dict:
    """Traefik chart values: our IngressClass, a public CoreWeave LoadBalancer Service named
    ``external_hostname`` that preserves client source IPs, and the placement (Traefik chart
    v37.2.0 values.schema.json: ``nodeSelector``, ``deployment.replicas``,
    ``podDisruptionBudget``; ../shared/reference/traefik-helm-chart-v37.2.0/traefik/)."""
    annotations = {LB_TYPE_ANNOTATION: "public"}
    if args.external_hostname:
        annotations[EXTERNAL_HOSTNAME_ANNOTATION] = args.external_hostname
    return placed({"ingressClass": {"enabled": True, "isDefaultClass": False, "name": args.ingress_class},
                   "service": {"annotations": annotations, "spec": {"externalTrafficPolicy": "Local"}}},
                  args.placement, selector_at=[()], replicas_at=("deployment", "replicas"),
                  pdb_at=("podDisruptionBudget",),
                  # the pods' labels: traefik/traefik-helm-chart v37.2.0 templates/_helpers.tpl
                  # "traefik.labelselector" L65-68 (name = the chart's, instance = <release>-<namespace>,
                  # "traefik.instance-name" L59-61); _podtemplate.tpl L945-947 renders the value
                  spread_at=(("topologySpreadConstraints",), {
                      "app.kubernetes.io/name": "traefik",
                      "app.kubernetes.io/instance": f"{args.traefik_chart.release}-{args.traefik_chart.namespace}"}))


def cert_manager_values(args: IngressArgs) -> dict:
    """cert-manager chart values: its CRDs, and the placement of its four pod kinds
    (cert-manager v1.19.1 values.schema.json: ``nodeSelector`` of the controller, ``webhook``,
    ``cainjector`` and the ``startupapicheck`` post-install Job; ``webhook.replicaCount`` and
    ``webhook.podDisruptionBudget`` — the webhook is the fail-closed one, the controller and
    cainjector elect a leader; ../shared/reference/cert-manager-v1.19.1/deploy/charts/cert-manager/)."""
    return placed({"crds": {"enabled": True}}, args.placement,
                  selector_at=[(), ("webhook",), ("cainjector",), ("startupapicheck",)],
                  replicas_at=("webhook", "replicaCount"), pdb_at=("webhook", "podDisruptionBudget"),
                  # the webhook pods' labels: cert-manager v1.19.1 deploy/charts/cert-manager/templates/
                  # webhook-deployment.yaml L33-37 ("webhook.name" is "webhook", _helpers.tpl L46-48);
                  # L200-203 render webhook.topologySpreadConstraints
                  spread_at=(("webhook", "topologySpreadConstraints"), {
                      "app.kubernetes.io/name": "webhook",
                      "app.kubernetes.io/instance": args.cert_manager_chart.release,
                      "app.kubernetes.io/component": "webhook"}))


class Ingress(pulumi.ComponentResource):
    """Everything between the internet and the controller Service, IP-allowlisted."""

    external_hostname: str | None

    def __init__(self, name: str, args: IngressArgs, *, provider: k8s.Provider,
                 namespace: k8s.core.v1.Namespace, after: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(INGRESS_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        none = args.chart_values == "none"
        cert_manager = release("cert-manager", args.cert_manager_chart, {} if none else cert_manager_values(args),
                               opts=o, after=after)
        traefik = release("traefik", args.traefik_chart, {} if none else traefik_values(args), opts=o,
                          after=after)
        # The name CoreWeave gives Traefik's LoadBalancer: the DNS record's one target.
        self.external_hostname = args.external_hostname
        issuers = []
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
            issuers.append(cluster_issuer)
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
        rule: k8s.networking.v1.IngressRuleArgsDict = {"http": {"paths": [{
            "path": "/", "path_type": "Prefix",
            "backend": {"service": {"name": args.service_name, "port": {"number": args.service_port}}}}]}}
        spec: k8s.networking.v1.IngressSpecArgsDict = {"ingress_class_name": args.ingress_class, "rules": [rule]}
        if args.hostname:
            rule["host"] = args.hostname
            spec["tls"] = [{"hosts": [args.hostname], "secret_name": args.tls_secret or f"{ingress_name}-tls"}]
        ingress = k8s.networking.v1.Ingress(
            f"{args.namespace}-{ingress_name}",
            metadata={"name": ingress_name, "namespace": args.namespace, "annotations": {
                "cert-manager.io/cluster-issuer": args.active_cluster_issuer,
                "traefik.ingress.kubernetes.io/router.middlewares":
                    f"{args.namespace}-{allow_name}@kubernetescrd",
            }},
            # after the issuer its cert-manager.io/cluster-issuer annotation names: cert-manager's
            # ingress-shim looks it up on its first reconcile (Marin orders it so too:
            # infra/pulumi/src/iac/coreweave/traefik.py@6019f395 federation-ingress depends_on)
            spec=spec, opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=issuers)))
        ids.importable(ingress, ids.k8s_namespaced(args.namespace, ingress_name))
        self.register_outputs({"active_cluster_issuer": args.active_cluster_issuer})
