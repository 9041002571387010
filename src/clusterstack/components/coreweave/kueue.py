"""Kueue: the Helm release, a Topology, one ResourceFlavor per NodePool, the ClusterQueue, the
workload namespace's LocalQueue and a system PriorityClass.

Sources: Kueue v0.14 "Installation" (Helm chart at oci://registry.k8s.io/kueue/charts/kueue;
its values.yaml: ``controllerManager.manager.priorityClassName``, ``featureGates``),
CHANGELOG-0.14 "Upgrading steps" (Topology served at ``v1beta1`` only), "Topology Aware
Scheduling" (levels broadest → narrowest, ``kubernetes.io/hostname`` last; a flavor with
``topologyName`` needs ``nodeLabels`` and is immutable), "Cluster Queue" (resourceGroups,
coveredResources, nominalQuota, ``preemption.withinClusterQueue``), "Local Queue", and the
Configuration's ``managedJobsNamespaceSelector`` (apis/config/v1beta1). CoreWeave "InfiniBand
and RoCE labels" (``backend.coreweave.cloud/fabric``, ``…/leafgroup``) and "Topology/Block
Scheduling" (``ds.coreweave.com/nvlink.domain``: the NVL72 rack = NVLink domain id of
GB200/GB300 nodes). Webhook scoping and the level order follow Marin's tested CoreWeave setup
(marin-community/marin ``lib/iris/.../k8s/kueue_manifests.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.derive import COVERED_RESOURCES, DEFAULT_CONVENTIONS, FlavorQuota, HelmChart, helm_chart
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import (
    KUEUE_CLUSTER_QUEUE_KIND,
    KUEUE_COMPONENT,
    KUEUE_LOCAL_QUEUE_KIND,
    KUEUE_RESOURCE_FLAVOR_KIND,
    KUEUE_TOPOLOGY_KIND,
    KUEUE_TOPOLOGY_V1ALPHA1,
)


KUEUE_CHART = helm_chart(DEFAULT_CONVENTIONS, "kueue")   # the [conventions] defaults
KUEUE_NAMESPACE = KUEUE_CHART.namespace
# Kueue 0.14 serves Topology only at v1beta1 (CHANGELOG-0.14 "Upgrading steps"); state written
# by earlier versions of this tool holds it under the v1alpha1 type, aliased below so the
# engine renames it instead of planning a delete and a create.
HOSTNAME_LABEL = "kubernetes.io/hostname"
FABRIC_LABEL = "backend.coreweave.cloud/fabric"
LEAFGROUP_LABEL = "backend.coreweave.cloud/leafgroup"
NVLINK_DOMAIN_LABEL = "ds.coreweave.com/nvlink.domain"

# Topology levels from the broadest to the narrowest, per flavor_topology.
TOPOLOGY_LEVELS: dict[str, tuple[str, ...]] = {
    "infiniband": (FABRIC_LABEL, LEAFGROUP_LABEL, HOSTNAME_LABEL),
    "multinode-nvlink-ib": (FABRIC_LABEL, LEAFGROUP_LABEL, NVLINK_DOMAIN_LABEL, HOSTNAME_LABEL),
}
SYSTEM_PRIORITY_VALUE = 1_000_000


@dataclass(frozen=True)
class KueueArgs:
    name_prefix: str                      # platform.label_prefix
    cluster_queue: str                    # kubernetes_provider.kueue.cluster_queue (also the LocalQueue's name)
    namespace: str                        # kubernetes_provider.namespace: the LocalQueue, webhook scope
    flavor_topology: str                  # provisioning.coreweave.kueue.flavor_topology
    manager_memory_limit: str             # provisioning.coreweave.kueue.manager_memory_limit
    qps: int                              # provisioning.coreweave.kueue.client_connection.qps
    burst: int                            # provisioning.coreweave.kueue.client_connection.burst
    flavors: tuple[FlavorQuota, ...]      # derive.derive_kueue_quota(config, conventions).flavors
    jobset: bool = False                  # provisioning.coreweave.kueue.jobset_installed
    # [conventions] system_priority_class, filled; None = "<name_prefix>-system"
    priority_class_name: str | None = None
    chart: HelmChart = KUEUE_CHART        # [conventions] kueue_release/namespace/chart/…
    values_key: str = ""                  # [conventions] kueue_values_key ("kueue" for cks-kueue)
    all_topologies: bool = False          # [conventions] kueue_all_topologies: declare every Topology

    @property
    def system_priority_class(self) -> str:
        return self.priority_class_name or f"{self.name_prefix}-system"


def manager_config(args: KueueArgs) -> dict:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta1) as a dict.

    ``managedJobsNamespaceSelector`` selects only the workload namespace: the chart renders
    it into the ``namespaceSelector`` of its pod-based webhooks (``mpod``/``vpod``,
    deployment, statefulset — kueue ``charts/kueue/templates/webhook/webhook.yaml``; without
    it: every namespace but kube-system and kueue-system), so the fail-closed pod webhook never
    intercepts pods of cert-manager, traefik or CoreWeave's system namespaces (Marin documents
    the node-delivery deadlock a broad selector causes). ``jobset`` only where JobSet
    is installed (the integration needs its CRDs).
    """
    frameworks = ["batch/job", *(["jobset.x-k8s.io/jobset"] if args.jobset else []), "pod"]
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "clientConnection": {"qps": args.qps, "burst": args.burst},
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [args.namespace]}]},
        "integrations": {"frameworks": frameworks},
    }


def manager_config_yaml(args: KueueArgs) -> str:
    """:func:`manager_config` as text (JSON is valid YAML; sorted keys keep it byte-stable)."""
    return json.dumps(manager_config(args), sort_keys=True, indent=2)


def helm_values(args: KueueArgs) -> dict:
    """The chart's values: manager memory, its system PriorityClass (so a batch pod cannot
    preempt the admission webhook), Topology Aware Scheduling on, the Configuration. Nested
    under ``values_key`` when set (CoreWeave's cks-kueue wraps upstream kueue as a subchart:
    marin-community/marin lib/iris/.../k8s/kueue_manifests.py@51326295 build_cks_values)."""
    values = {
        "controllerManager": {
            "featureGates": [{"name": "TopologyAwareScheduling", "enabled": True}],
            "manager": {
                "priorityClassName": args.system_priority_class,
                "resources": {"limits": {"memory": args.manager_memory_limit},
                              "requests": {"memory": args.manager_memory_limit}}}},
        "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(args)},
    }
    return {args.values_key: values} if args.values_key else values


def cluster_queue_spec(args: KueueArgs) -> dict:
    """One resource group covering :data:`COVERED_RESOURCES` with every pool's flavor.

    ``preemption.withinClusterQueue: LowerPriority`` makes the PriorityClasses' promise true
    (Kueue's default is ``Never``); the namespaceSelector admits only the workload
    namespace's LocalQueue.
    """
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never"},
        "resourceGroups": [{
            "coveredResources": list(COVERED_RESOURCES),
            "flavors": [{"name": f.name, "resources": [{"name": r, "nominalQuota": q} for r, q in f.quotas]}
                        for f in args.flavors],
        }],
    }


class Kueue(pulumi.ComponentResource):
    """The Kueue controller and the queueing objects this cluster's scheduler submits to."""

    def __init__(self, name: str, args: KueueArgs, *, provider: k8s.Provider,
                 namespace: k8s.core.v1.Namespace | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KUEUE_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        pc_name = args.system_priority_class
        priority_class = k8s.scheduling.v1.PriorityClass(
            pc_name, metadata={"name": pc_name}, value=SYSTEM_PRIORITY_VALUE, global_default=False,
            preemption_policy="PreemptLowerPriority",
            description="System workloads of the training scheduler and the Kueue manager; "
                        "kube-scheduler and Kueue (withinClusterQueue: LowerPriority) preempt "
                        "lower-priority workloads for them.", opts=o)
        ids.importable(priority_class, ids.k8s_cluster_scoped(pc_name))
        chart = args.chart
        release = k8s.helm.v3.Release(
            "kueue",
            name=chart.release,
            chart=chart.chart,
            version=chart.version,
            namespace=chart.namespace,
            create_namespace=True,
            atomic=True,
            **({"repository_opts": {"repo": chart.repo}} if chart.repo else {}),
            values=helm_values(args),
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[priority_class])))
        ids.importable(release, ids.helm_release(chart.namespace, chart.release))
        after = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[release]))
        # The bound topology first; with all_topologies every one of TOPOLOGY_LEVELS (Marin
        # declares both: infra/pulumi/src/iac/coreweave/kueue.py@28d310ae).
        names = [args.flavor_topology] + ([t for t in TOPOLOGY_LEVELS if t != args.flavor_topology]
                                          if args.all_topologies else [])
        for t in names:
            declared = k8s.apiextensions.CustomResource(
                t, api_version=KUEUE_TOPOLOGY_KIND.api_version,
                kind=KUEUE_TOPOLOGY_KIND.kind,
                metadata={"name": t},
                spec={"levels": [{"nodeLabel": lvl} for lvl in TOPOLOGY_LEVELS[t]]},
                opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(
                    aliases=[pulumi.Alias(type_=KUEUE_TOPOLOGY_V1ALPHA1)])))
            ids.importable(declared, ids.k8s_cluster_scoped(t))
            if t == args.flavor_topology:
                topology = declared
        flavors = []
        for f in args.flavors:
            # A flavor selecting no nodes has an empty spec (Marin's cw-cpu).
            spec: dict = {"nodeLabels": dict(f.node_labels)} if f.node_labels else {}
            if f.gpu:
                spec["topologyName"] = args.flavor_topology
            flavor = k8s.apiextensions.CustomResource(
                f.name, api_version=KUEUE_RESOURCE_FLAVOR_KIND.api_version,
                kind=KUEUE_RESOURCE_FLAVOR_KIND.kind,
                metadata={"name": f.name}, spec=spec,
                opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(
                    depends_on=[topology] if f.gpu else [])))
            ids.importable(flavor, ids.k8s_cluster_scoped(f.name))
            flavors.append(flavor)
        queue = k8s.apiextensions.CustomResource(
            args.cluster_queue, api_version=KUEUE_CLUSTER_QUEUE_KIND.api_version,
            kind=KUEUE_CLUSTER_QUEUE_KIND.kind,
            metadata={"name": args.cluster_queue}, spec=cluster_queue_spec(args),
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=flavors)))
        ids.importable(queue, ids.k8s_cluster_scoped(args.cluster_queue))
        local_queue = k8s.apiextensions.CustomResource(
            f"{args.namespace}-{args.cluster_queue}", api_version=KUEUE_LOCAL_QUEUE_KIND.api_version,
            kind=KUEUE_LOCAL_QUEUE_KIND.kind,
            metadata={"name": args.cluster_queue, "namespace": args.namespace},
            spec={"clusterQueue": args.cluster_queue},
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(
                depends_on=[queue, *([namespace] if namespace is not None else [])])))
        ids.importable(local_queue, ids.k8s_namespaced(args.namespace, args.cluster_queue))
        self.register_outputs({"cluster_queue": args.cluster_queue, "local_queue": args.cluster_queue,
                               "resource_flavors": [f.name for f in args.flavors]})
