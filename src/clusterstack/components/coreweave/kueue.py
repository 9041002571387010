"""Kueue: the Helm release, a Topology, a ResourceFlavor, the ClusterQueue and a system
PriorityClass.

Sources: Kueue "Installation" (Helm chart at oci://registry.k8s.io/kueue/charts/kueue),
"Topology Aware Scheduling" (Topology levels, ResourceFlavor.spec.topologyName), "Cluster
Queue" (resourceGroups/coveredResources/nominalQuota); CoreWeave "InfiniBand and RoCE labels"
(``backend.coreweave.cloud/fabric``, ``…/leafgroup``) and the GPU operator's
``nvidia.com/gpu.clique`` label for NVLink domains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import (
    KUEUE_CLUSTER_QUEUE_KIND,
    KUEUE_COMPONENT,
    KUEUE_RESOURCE_FLAVOR_KIND,
    KUEUE_TOPOLOGY_KIND,
)

KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_CHART_VERSION = "0.14.4"
KUEUE_NAMESPACE = "kueue-system"

# Topology levels from the broadest to the narrowest, per flavor_topology.
TOPOLOGY_LEVELS: dict[str, tuple[str, ...]] = {
    "infiniband": ("backend.coreweave.cloud/fabric", "backend.coreweave.cloud/leafgroup",
                   "kubernetes.io/hostname"),
    "multinode-nvlink-ib": ("backend.coreweave.cloud/fabric", "backend.coreweave.cloud/leafgroup",
                            "nvidia.com/gpu.clique", "kubernetes.io/hostname"),
}
SYSTEM_PRIORITY_VALUE = 1_000_000


@dataclass(frozen=True)
class KueueArgs:
    name_prefix: str                      # platform.label_prefix
    cluster_queue: str                    # kubernetes_provider.kueue.cluster_queue
    flavor_topology: str                  # provisioning.coreweave.kueue.flavor_topology
    manager_memory_limit: str             # provisioning.coreweave.kueue.manager_memory_limit
    qps: int                              # provisioning.coreweave.kueue.client_connection.qps
    burst: int                            # provisioning.coreweave.kueue.client_connection.burst
    quotas: tuple[tuple[str, int], ...]   # derive.derive_kueue_quota(config).quotas
    flavor_node_labels: tuple[tuple[str, str], ...]  # derive.managed_labels(...)[:1]: nodes this flavor admits to


def manager_config_yaml(args: KueueArgs) -> str:
    """Kueue's Configuration document (JSON is valid YAML; sorted keys keep it byte-stable)."""
    doc = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "clientConnection": {"qps": args.qps, "burst": args.burst},
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "pod"]},
    }
    return json.dumps(doc, sort_keys=True, indent=2)


class Kueue(pulumi.ComponentResource):
    """The Kueue controller and the queueing objects this cluster's scheduler submits to."""

    def __init__(self, name: str, args: KueueArgs, *, provider: k8s.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KUEUE_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        release = k8s.helm.v3.Release(
            "kueue",
            name="kueue",
            chart=KUEUE_CHART,
            version=KUEUE_CHART_VERSION,
            namespace=KUEUE_NAMESPACE,
            create_namespace=True,
            atomic=True,
            values={
                "controllerManager": {"manager": {"resources": {
                    "limits": {"memory": args.manager_memory_limit},
                    "requests": {"memory": args.manager_memory_limit}}}},
                "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(args)},
            },
            opts=o)
        ids.importable(release, ids.helm_release(KUEUE_NAMESPACE, "kueue"))
        after = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[release]))
        topology = k8s.apiextensions.CustomResource(
            args.flavor_topology, api_version=KUEUE_TOPOLOGY_KIND.api_version,
            kind=KUEUE_TOPOLOGY_KIND.kind,
            metadata={"name": args.flavor_topology},
            spec={"levels": [{"nodeLabel": lvl} for lvl in TOPOLOGY_LEVELS[args.flavor_topology]]},
            opts=after)
        ids.importable(topology, ids.k8s_cluster_scoped(args.flavor_topology))
        flavor_name = f"{args.name_prefix}-gpu"
        flavor = k8s.apiextensions.CustomResource(
            flavor_name, api_version=KUEUE_RESOURCE_FLAVOR_KIND.api_version,
            kind=KUEUE_RESOURCE_FLAVOR_KIND.kind,
            metadata={"name": flavor_name},
            spec={"nodeLabels": dict(args.flavor_node_labels), "topologyName": args.flavor_topology},
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[topology])))
        ids.importable(flavor, ids.k8s_cluster_scoped(flavor_name))
        queue = k8s.apiextensions.CustomResource(
            args.cluster_queue, api_version=KUEUE_CLUSTER_QUEUE_KIND.api_version,
            kind=KUEUE_CLUSTER_QUEUE_KIND.kind,
            metadata={"name": args.cluster_queue},
            spec={
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [{
                    "coveredResources": [r for r, _ in args.quotas],
                    "flavors": [{"name": flavor_name, "resources": [
                        {"name": r, "nominalQuota": q} for r, q in args.quotas]}],
                }],
            },
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[flavor])))
        ids.importable(queue, ids.k8s_cluster_scoped(args.cluster_queue))
        pc_name = f"{args.name_prefix}-system"
        priority_class = k8s.scheduling.v1.PriorityClass(
            pc_name, metadata={"name": pc_name}, value=SYSTEM_PRIORITY_VALUE, global_default=False,
            description="System workloads of the training scheduler; preempt batch jobs.", opts=o)
        ids.importable(priority_class, ids.k8s_cluster_scoped(pc_name))
        self.register_outputs({"cluster_queue": args.cluster_queue, "resource_flavor": flavor_name})
