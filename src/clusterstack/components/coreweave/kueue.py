"""Kueue: the Helm release, its Topologies, the ResourceFlavors, the ClusterQueue, the
workload namespace's LocalQueue and a system PriorityClass.

Sources: Kueue v0.14 "Installation" (Helm chart at oci://registry.k8s.io/kueue/charts/kueue;
its values.yaml, ../shared/reference/kueue-v0.14.4/charts/kueue/values.yaml:
``controllerManager.manager.priorityClassName``, ``featureGates``, ``replicas``,
``nodeSelector``, ``podDisruptionBudget``), CHANGELOG-0.14 "Upgrading steps" (Topology served
at ``v1beta1`` only), "Topology Aware Scheduling", "Cluster Queue", "Local Queue", and the
Configuration's ``managedJobsNamespaceSelector`` (apis/config/v1beta1). Which flavors, quotas
and Topologies: :mod:`clusterstack.derive` and :mod:`clusterstack.derive.kueue`. Webhook
scoping follows Marin's tested CoreWeave setup (marin-community/marin
``lib/iris/.../k8s/kueue_manifests.py``).

Immutable fields and what replaces with them (docs/making-a-change.md): a Topology's
``spec.levels`` (CRD CEL ``self == oldSelf``), a topology-bound ResourceFlavor's whole ``spec``
(CRD CEL ``!has(oldSelf.topologyName) || self == oldSelf``), a LocalQueue's
``spec.clusterQueue`` (CRD CEL ``self == oldSelf``; ../shared/reference/kueue-v0.14.4/
config/components/crd/bases/) and a PriorityClass's ``value`` and ``preemptionPolicy``
(kubernetes/kubernetes pkg/apis/scheduling/validation/validation.go
``ValidatePriorityClassUpdate`` L57-67 @00447344) are refused by the
API server as in-place patches, and pulumi-kubernetes forces a replacement of none of them
(provider/pkg/provider/diff.go: ``.metadata.name``/``.namespace`` only for these kinds), so each
carries ``replace_on_changes`` and, being named, ``delete_before_replace`` (the provider asks
for delete-before-replace only when it reports the replace itself, provider.go L1647-1660).
Kueue keeps each of them while it is in use (finalizer ``kueue.x-k8s.io/resource-in-use``): a
Topology while a flavor names it (pkg/controller/tas/topology_controller.go L101-117), a
flavor while a ClusterQueue lists it (pkg/controller/core/resourceflavor_controller.go
L98-110). So a flavor's ``topologyName`` is its Topology's output (a replaced Topology makes
the engine replace its flavors first: pulumi/pulumi pkg/resource/deploy/step_generator.go
``calculateDependentReplacements`` L3268-3415), and the ClusterQueue ``replace_with`` its
topology-bound flavors and their Topologies (``findDependentCascadeReplacements`` L3419-3443,
deleted before them, L2074-2090): the queue is deleted first, then the flavors, then the
Topology. A ClusterQueue is deleted only when no workload holds quota in it
(pkg/controller/core/clusterqueue_controller.go L160-170): drain it first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.components.coreweave.helm import placed, release
from clusterstack.derive import (
    COVERED_RESOURCES,
    DEFAULT_CONVENTIONS,
    FABRIC_LABEL,
    HOSTNAME_LABEL,
    LEAFGROUP_LABEL,
    NVLINK_DOMAIN_LABEL,
    TOPOLOGY_LEVELS,
    ChartPlacement,
    HelmChart,
    helm_chart,
)
from clusterstack.derive.kueue import ClusterQueueSpec, TopologySpec
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import (
    KUEUE_CLUSTER_QUEUE_KIND,
    KUEUE_COMPONENT,
    KUEUE_LOCAL_QUEUE_KIND,
    KUEUE_RESOURCE_FLAVOR_KIND,
    KUEUE_TOPOLOGY_KIND,
    KUEUE_TOPOLOGY_V1ALPHA1,
)

__all__ = ["FABRIC_LABEL", "HOSTNAME_LABEL", "LEAFGROUP_LABEL", "NVLINK_DOMAIN_LABEL", "TOPOLOGY_LEVELS",
           "Kueue", "KueueArgs"]

KUEUE_CHART = helm_chart(DEFAULT_CONVENTIONS, "kueue")   # the [conventions] defaults
KUEUE_NAMESPACE = KUEUE_CHART.namespace
# Kueue 0.14 serves Topology only at v1beta1 (CHANGELOG-0.14 "Upgrading steps"); state written
# by earlier versions of this tool holds it under the v1alpha1 type, aliased below so the
# engine renames it instead of planning a delete and a create.
SYSTEM_PRIORITY_VALUE = DEFAULT_CONVENTIONS.system_priority_value
SYSTEM_PRIORITY_DESCRIPTION = DEFAULT_CONVENTIONS.system_priority_description
#: The Deployment the Kueue chart renders for its manager: ``<release>-controller-manager``
#: (kueue charts/kueue/templates/manager/manager.yaml ``{{ include "kueue.fullname" . }}-controller-manager``;
#: Marin's MANAGER_DEPLOYMENT = "kueue-controller-manager", infra/pulumi/src/iac/coreweave/kueue.py@28d310ae).
MANAGER_DEPLOYMENT_SUFFIX = "-controller-manager"

#: The paths whose change the API server refuses in place, per kind (see the module docstring).
TOPOLOGY_REPLACE_ON = ("spec",)
TAS_FLAVOR_REPLACE_ON = ("spec",)
PRIORITY_CLASS_REPLACE_ON = ("value", "preemptionPolicy")
#: A LocalQueue's ``spec.clusterQueue``: CRD CEL ``self == oldSelf`` (kueue v0.14.4
#: config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml L65-67, "field is immutable").
LOCAL_QUEUE_REPLACE_ON = ("spec.clusterQueue",)


@dataclass(frozen=True)
class KueueArgs:
    name_prefix: str                      # platform.label_prefix
    namespace: str                        # kubernetes_provider.namespace: the LocalQueue, webhook scope
    manager_memory_limit: str             # provisioning.coreweave.kueue.manager_memory_limit
    qps: int | float                      # provisioning.coreweave.kueue.client_connection.qps
    burst: int                            # provisioning.coreweave.kueue.client_connection.burst
    queue: ClusterQueueSpec               # derive.kueue.derive_cluster_queues(config, conventions)[0]
    topologies: tuple[TopologySpec, ...]  # derive.kueue.derive_topologies(config, conventions)
    jobset: bool = False                  # provisioning.coreweave.kueue.jobset_installed
    # [conventions] system_priority_class, filled; None = "<name_prefix>-system"
    priority_class_name: str | None = None
    chart: HelmChart = KUEUE_CHART        # [conventions] kueue_release/namespace/chart/…
    values_key: str = ""                  # [conventions] kueue_values_key ("kueue" for cks-kueue)
    # derive.chart_placement: the manager's nodeSelector, replicas and PodDisruptionBudget
    placement: ChartPlacement = field(default_factory=lambda: ChartPlacement((), 1))
    priority_value: int = SYSTEM_PRIORITY_VALUE              # [conventions] system_priority_value
    priority_description: str = SYSTEM_PRIORITY_DESCRIPTION  # [conventions] system_priority_description
    manager_priority: str = "values"      # [conventions] kueue_manager_priority: "values" | "patch"
    values_preset: str = "clusterstack"   # [conventions] kueue_values: a key of KUEUE_VALUES
    queue_defaults: bool = True           # [conventions] cluster_queue_explicit_defaults
    local_queue: bool = True              # [conventions] local_queue
    # derive.teams.derive_teams: the team namespaces the webhooks manage too, and whether
    # Kueue's fair sharing is on (Configuration fairSharing.enable); () / False without teams
    team_namespaces: tuple[str, ...] = ()
    fair_sharing: bool = False

    @property
    def cluster_queue(self) -> str:
        """The ClusterQueue's name, also the LocalQueue's."""
        return self.queue.name

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
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "clientConnection": {"qps": args.qps, "burst": args.burst},
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In",
             "values": [args.namespace, *args.team_namespaces]}]},
        "integrations": {"frameworks": frameworks},
    }
    if args.fair_sharing:
        # Kueue v0.14.4 apis/config/v1beta1/configuration_types.go L95-96, L522-543 (FairSharing:
        # enable; preemptionStrategies default ["LessThanOrEqualToFinalShare",
        # "LessThanInitialShare"], defaults.go L126-127), written out so the review shows them.
        config["fairSharing"] = {"enable": True, "preemptionStrategies": [
            "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    return config


def manager_config_yaml(args: KueueArgs) -> str:
    """:func:`manager_config` as text (JSON is valid YAML; sorted keys keep it byte-stable)."""
    return json.dumps(manager_config(args), sort_keys=True, indent=2)


def clusterstack_values(args: KueueArgs) -> dict:
    """The ``"clusterstack"`` preset: manager memory, Topology Aware Scheduling on, the
    Configuration (:func:`manager_config_yaml`), and the placement (values.yaml
    ``controllerManager.nodeSelector``, ``.replicas``, ``.podDisruptionBudget``)."""
    return placed({
        "controllerManager": {
            "featureGates": [{"name": "TopologyAwareScheduling", "enabled": True}],
            "manager": {
                "resources": {"limits": {"memory": args.manager_memory_limit},
                              "requests": {"memory": args.manager_memory_limit}}}},
        "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(args)},
    }, args.placement, selector_at=[("controllerManager",)],
        replicas_at=("controllerManager", "replicas"), pdb_at=("controllerManager", "podDisruptionBudget"),
        # the manager pods' labels: kubernetes-sigs/kueue v0.14.4 charts/kueue/templates/_helpers.tpl
        # "kueue.selectorLabels" L48-51 (name = the chart's, "kueue"); manager/manager.yaml L99-102
        # renders controllerManager.topologySpreadConstraints
        spread_at=(("controllerManager", "topologySpreadConstraints"), {
            "app.kubernetes.io/name": "kueue", "app.kubernetes.io/instance": args.chart.release,
            "control-plane": "controller-manager"}))


#: Marin's cks-kueue feature gates, the chart's own list with TASBalancedPlacement off ("panics
#: (integer divide by zero) when that count is zero, crashing the controller-manager"; the chart
#: takes the value as a list: "overriding it as a map breaks the chart's kueue.featureGates
#: template") — marin-community/marin lib/iris/src/iris/cluster/platforms/k8s/kueue_manifests.py
#: @a1e72a14 CKS_KUEUE_FEATURE_GATES, unchanged in the cw-tas revision.
MARIN_CKS_FEATURE_GATES: tuple[tuple[str, bool], ...] = (
    ("VisibilityOnDemand", True), ("LendingLimit", True), ("ObjectRetentionPolicies", True),
    ("TopologyAwareScheduling", True), ("TASBalancedPlacement", False), ("TASMultiLayerTopology", True))


def marin_manager_config(args: KueueArgs) -> dict:
    """Marin's Configuration, keys in Marin's order (kueue_manifests.py, the cw-tas revision,
    build_controller_manager_config): metrics ``:8080``, Kueue's own webhook certificates
    (internalCertManagement), the webhooks scoped to the workload namespace, the pod and
    batch/job frameworks, the API client's rate (qps a float: Marin's
    KueueClientConnectionSpec.qps, infra/pulumi/src/iac/config.py@208671df)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8080"},
        "webhook": {"port": 9443}, "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [args.namespace]}]},
        "internalCertManagement": {"enable": True, "webhookServiceName": "kueue-webhook-service",
                                   "webhookSecretName": "kueue-webhook-server-cert"},
        "integrations": {"frameworks": ["batch/job", "pod"]},
        "clientConnection": {"qps": float(args.qps), "burst": args.burst},
    }


def marin_cks_values(args: KueueArgs) -> dict:
    """The ``"marin-cks"`` preset: Marin's ``build_cks_values`` (kueue_manifests.py, the cw-tas
    revision; called by infra/pulumi/src/iac/coreweave/kueue.py@28d310ae with the namespace,
    the config's manager_memory_limit — always set, default 2Gi: config.py@208671df
    KueueProvisioningSpec — and client_connection): ``enableKueueViz: false``, the feature
    gates, the memory override (requests = limits), the Configuration as
    ``yaml.safe_dump(..., default_flow_style=False, sort_keys=False)``. No placement: Marin's
    release sets none."""
    import yaml

    text = yaml.safe_dump(marin_manager_config(args), default_flow_style=False, sort_keys=False)
    return {
        "enableKueueViz": False,
        "controllerManager": {
            "featureGates": [{"name": n, "enabled": on} for n, on in MARIN_CKS_FEATURE_GATES],
            "manager": {"resources": {"limits": {"memory": args.manager_memory_limit},
                                      "requests": {"memory": args.manager_memory_limit}}}},
        "managerConfig": {"controllerManagerConfigYaml": text},
    }


#: ``[conventions] kueue_values``: preset name → the chart values (before ``values_key``).
KUEUE_VALUES = {"clusterstack": clusterstack_values, "marin-cks": marin_cks_values}


def helm_values(args: KueueArgs) -> dict:
    """The chart's values of the preset ``args.values_preset`` (:data:`KUEUE_VALUES`), with the
    manager's system PriorityClass (so a batch pod cannot preempt the admission webhook) at
    ``controllerManager.manager.priorityClassName`` when ``manager_priority`` is "values".
    Nested under ``values_key`` when set (CoreWeave's cks-kueue wraps upstream kueue as a
    subchart: marin-community/marin lib/iris/.../k8s/kueue_manifests.py@51326295
    build_cks_values)."""
    values = KUEUE_VALUES[args.values_preset](args)
    if args.manager_priority == "values":
        manager = values.setdefault("controllerManager", {}).setdefault("manager", {})
        values["controllerManager"]["manager"] = {"priorityClassName": args.system_priority_class, **manager}
    return {args.values_key: values} if args.values_key else values


def cluster_queue_spec(queue: ClusterQueueSpec, flavor_names: Sequence[pulumi.Input[str]] | None = None,
                       *, defaults: bool = True) -> dict:
    """One resource group covering :data:`COVERED_RESOURCES` with the queue's flavors in order.

    ``preemption.withinClusterQueue: LowerPriority`` makes the PriorityClasses' promise true
    (Kueue's default is ``Never``); the namespaceSelector admits the workload namespace's
    LocalQueue (or every namespace's: ``[conventions] cluster_queue_namespaces = "all"``).
    ``flavor_names``: the flavors' names as declared (default: the specs' names).
    ``defaults``: also declare ``queueingStrategy: BestEffortFIFO`` and
    ``preemption.reclaimWithinCohort: Never``, the CRD's own defaults (kueue v0.14.4
    config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml ``default:``) — the live
    object is the same with or without them (``[conventions] cluster_queue_explicit_defaults``).
    """
    names = list(flavor_names) if flavor_names is not None else [f.name for f in queue.flavors]
    limits = {(f, r): (b, lend) for f, r, b, lend in queue.limits}

    def resource(flavor: str, r: str, q: int | str) -> dict:
        # a team's borrowingLimit / lendingLimit (derive/teams.py), only where it sets one
        b, lend = limits.get((flavor, r), (None, None))
        return {"name": r, "nominalQuota": q, **({"borrowingLimit": b} if b is not None else {}),
                **({"lendingLimit": lend} if lend is not None else {})}

    within, reclaim = queue.preemption or ("LowerPriority", "Never")
    spec: dict = {
        "namespaceSelector": queue.namespace_selector(),
        **({"queueingStrategy": "BestEffortFIFO"} if defaults else {}),
        "preemption": {"withinClusterQueue": within,
                       **({"reclaimWithinCohort": reclaim} if defaults or queue.preemption else {})},
        "resourceGroups": [{
            "coveredResources": list(COVERED_RESOURCES),
            "flavors": [{"name": n, "resources": [resource(f.name, r, q) for r, q in f.quotas]}
                        for n, f in zip(names, queue.flavors)],
        }],
    }
    if queue.cohort:
        spec["cohort"] = queue.cohort
    if queue.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": queue.fair_sharing_weight}
    return spec


def flavor_spec(flavor, topology_name: pulumi.Input[str] | None = None) -> dict:
    """A ResourceFlavor's ``spec``: ``nodeLabels`` (a flavor selecting no nodes has an empty
    spec), ``nodeTaints`` (what its nodes carry), ``tolerations`` (Kueue adds them to the pods
    it admits to this flavor: pkg/podset/podset.go L84-85; they also make its nodeTaints
    tolerated at admission: flavorassigner.go L817-822), ``topologyName``."""
    spec: dict = {"nodeLabels": dict(flavor.node_labels)} if flavor.node_labels else {}
    if flavor.node_taints:
        spec["nodeTaints"] = [{"key": k, "value": v, "effect": e} for k, v, e in flavor.node_taints]
    if flavor.tolerations:
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoSchedule"}
                               for k in flavor.tolerations]
    if flavor.topology is not None:
        spec["topologyName"] = topology_name if topology_name is not None else flavor.topology
    return spec


class Kueue(pulumi.ComponentResource):
    """The Kueue controller and the queueing objects this cluster's scheduler submits to.

    Declared in two steps: the constructor declares everything but the LocalQueue, whose
    namespace is created after this component's release (the Namespace depends on the Kueue
    release so Pulumi deletes it while Kueue still runs: components/coreweave/rbac.py); then
    :meth:`local_queue` declares the LocalQueue in it.
    """

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KueueArgs, *, provider: k8s.Provider,
                 after: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KUEUE_COMPONENT, name, None, opts)
        self._args = args
        self._provider = provider
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        pc_name = args.system_priority_class
        priority_class = k8s.scheduling.v1.PriorityClass(
            pc_name, metadata={"name": pc_name}, value=args.priority_value, global_default=False,
            preemption_policy="PreemptLowerPriority", description=args.priority_description,
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                replace_on_changes=list(PRIORITY_CLASS_REPLACE_ON), delete_before_replace=True)))
        ids.importable(priority_class, ids.k8s_cluster_scoped(pc_name))
        self.release = release("kueue", args.chart, helm_values(args), opts=o,
                               after=[priority_class, *after])
        after_release = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.release]))
        topologies: dict[str, k8s.apiextensions.CustomResource] = {}
        for t in args.topologies:
            declared = k8s.apiextensions.CustomResource(
                t.name, api_version=KUEUE_TOPOLOGY_KIND.api_version,
                kind=KUEUE_TOPOLOGY_KIND.kind,
                metadata={"name": t.name},
                spec={"levels": [{"nodeLabel": lvl} for lvl in t.levels]},
                opts=pulumi.ResourceOptions.merge(after_release, pulumi.ResourceOptions(
                    aliases=[pulumi.Alias(type_=KUEUE_TOPOLOGY_V1ALPHA1)],
                    replace_on_changes=list(TOPOLOGY_REPLACE_ON), delete_before_replace=True)))
            ids.importable(declared, ids.k8s_cluster_scoped(t.name))
            topologies[t.name] = declared
        flavors = []
        bound: list[pulumi.Resource] = []
        for f in args.queue.flavors:
            topology = topologies.get(f.topology) if f.topology is not None else None
            # topologyName is the Topology's output: a property dependency, so replacing the
            # Topology replaces this flavor before it (module docstring).
            # (the SDK makes each input an Output attribute, pulumi 3.272.0 runtime/rpc.py:1243,
            # which pulumi_kubernetes's apiextensions/CustomResource.py:85 does not declare)
            name_of = (topology.metadata.apply(  # pyright: ignore[reportAttributeAccessIssue]
                lambda m: m["name"] if isinstance(m, dict) else m.name)
                       if topology is not None else None)
            tas = f.topology is not None
            flavor = k8s.apiextensions.CustomResource(
                f.name, api_version=KUEUE_RESOURCE_FLAVOR_KIND.api_version,
                kind=KUEUE_RESOURCE_FLAVOR_KIND.kind,
                metadata={"name": f.name}, spec=flavor_spec(f, name_of),
                opts=pulumi.ResourceOptions.merge(after_release, pulumi.ResourceOptions(
                    depends_on=[topology] if topology is not None else [],
                    **({"replace_on_changes": list(TAS_FLAVOR_REPLACE_ON), "delete_before_replace": True}
                       if tas else {}))))
            ids.importable(flavor, ids.k8s_cluster_scoped(f.name))
            flavors.append(flavor)
            if tas:
                bound += [flavor, *([topology] if topology is not None else [])]
        queue = k8s.apiextensions.CustomResource(
            args.cluster_queue, api_version=KUEUE_CLUSTER_QUEUE_KIND.api_version,
            kind=KUEUE_CLUSTER_QUEUE_KIND.kind,
            metadata={"name": args.cluster_queue},
            spec=cluster_queue_spec(args.queue, defaults=args.queue_defaults),
            opts=pulumi.ResourceOptions.merge(after_release, pulumi.ResourceOptions(
                depends_on=flavors, replace_with=list(dict.fromkeys(bound)) or None,
                delete_before_replace=True)))
        ids.importable(queue, ids.k8s_cluster_scoped(args.cluster_queue))
        self.cluster_queue = queue
        self.flavors = flavors   # what a team's ClusterQueue depends on (components/coreweave/teams.py)
        if args.manager_priority == "patch":
            # The manager's PriorityClass as a server-side-apply Patch of the chart's Deployment
            # owning only spec.template.spec.priorityClassName (Marin's kueue-manager-priority:
            # infra/pulumi/src/iac/coreweave/kueue.py@28d310ae, "the chart exposes no
            # priorityClassName value"). Logical name, object and dependency as Marin's, so a
            # moved state record is this resource.
            manager = f"{args.chart.release}{MANAGER_DEPLOYMENT_SUFFIX}"
            patch = k8s.apps.v1.DeploymentPatch(
                "kueue-manager-priority",
                metadata={"name": manager, "namespace": args.chart.namespace},
                spec={"template": {"spec": {"priority_class_name": pc_name}}},
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.release])))
            ids.importable(patch, ids.k8s_namespaced(args.chart.namespace, manager))
        self.register_outputs({"cluster_queue": args.cluster_queue,
                               "local_queue": args.cluster_queue if args.local_queue else None,
                               "resource_flavors": [f.name for f in args.queue.flavors]})

    def local_queue(self, namespace: k8s.core.v1.Namespace | None) -> k8s.apiextensions.CustomResource | None:
        """Declare the workload namespace's LocalQueue naming the ClusterQueue (after both);
        None — nothing declared — with ``local_queue`` off (the scheduler reconciles its own)."""
        args = self._args
        if not args.local_queue:
            return None
        local_queue = k8s.apiextensions.CustomResource(
            f"{args.namespace}-{args.cluster_queue}", api_version=KUEUE_LOCAL_QUEUE_KIND.api_version,
            kind=KUEUE_LOCAL_QUEUE_KIND.kind,
            metadata={"name": args.cluster_queue, "namespace": args.namespace},
            spec={"clusterQueue": args.cluster_queue},
            opts=pulumi.ResourceOptions(parent=self, provider=self._provider, depends_on=[
                self.release, self.cluster_queue, *([namespace] if namespace is not None else [])],
                replace_on_changes=list(LOCAL_QUEUE_REPLACE_ON), delete_before_replace=True))
        ids.importable(local_queue, ids.k8s_namespaced(args.namespace, args.cluster_queue))
        return local_queue
