"""CoreWeave NodePools (``compute.coreweave.com/v1alpha1``), one per derived scale group.

Source: CoreWeave CKS "Node Pool reference" (``instanceType`` is immutable; ``targetNodes``
required; ``minNodes``/``maxNodes`` bound the autoscaler) and "Autoscale Node Pools"
(no autoscaling for rack-based GB200/GB300 types).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.derive import NodePoolSpec
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import NODEPOOL_KIND, NODEPOOLS_COMPONENT


@dataclass(frozen=True)
class NodePoolsArgs:
    pools: tuple[NodePoolSpec, ...]  # derive.derive_nodepools(config): one per scale group with an instance type


def nodepool_spec(pool: NodePoolSpec) -> dict:
    """The NodePool ``spec`` for one derived pool (plain dict, deterministic key order)."""
    spec: dict = {"computeClass": "default", "instanceType": pool.instance_type,
                  "nodeLabels": dict(pool.node_labels)}
    if pool.node_taints:
        # CoreWeave "Node Pool reference": spec.nodeTaints, each {key, value, effect}; every node
        # of the pool carries them (tests/schemas/nodepools.compute.coreweave.com.crd.yaml).
        spec["nodeTaints"] = [{"key": k, "value": v, "effect": e} for k, v, e in pool.node_taints]
    if pool.rack_scale:
        spec["targetRacks"] = pool.target_racks
    else:
        spec.update(autoscaling=True, minNodes=pool.min_nodes, maxNodes=pool.max_nodes,
                    targetNodes=pool.min_nodes)
    return spec


#: NodePool fields CoreWeave cannot change on a live pool (CoreWeave "Node Pool reference":
#: the instance type is fixed at creation; ``metadata.name`` already forces a replacement in
#: pulumi-kubernetes ``provider/pkg/provider/diff.go``). pulumi-kubernetes forces a replacement
#: of a custom resource for nothing else, so without ``replace_on_changes`` an instance type
#: change reaches the engine as an in-place ``update``.
IMMUTABLE_FIELDS = ("spec.instanceType",)


def nodepool_options(pool: NodePoolSpec, *, parent: pulumi.Resource,
                     provider: k8s.Provider) -> pulumi.ResourceOptions:
    """Protected; ``spec.targetNodes`` ignored on autoscaled pools (the autoscaler owns it);
    a change of an immutable field (:data:`IMMUTABLE_FIELDS`) or of an identity label key
    (``pool.identity_label_paths``) replaces — relabelling a live pool's nodes strands the
    scheduler's nodeSelector, so the engine must call it a replace for the guard to block it."""
    return pulumi.ResourceOptions(
        parent=parent, provider=provider, protect=True,
        ignore_changes=[] if pool.rack_scale else ["spec.targetNodes"],
        replace_on_changes=[*IMMUTABLE_FIELDS, *pool.identity_label_paths],
        # a named object: its replacement cannot exist beside it (pulumi-kubernetes asks for
        # delete-before-replace only for replaces it reports itself, provider.go L1647-1660)
        delete_before_replace=True)


class NodePools(pulumi.ComponentResource):
    """Declares every NodePool with ``protect=True``, ``replace_on_changes`` of its
    :data:`IMMUTABLE_FIELDS` and ``delete_before_replace``; a GPU pool with its NoSchedule taint
    (``NodePoolSpec.node_taints``).

    Protection makes the Pulumi engine itself refuse a delete or replace (which would
    deprovision a reserved bare-metal fleet); ``replace_on_changes`` makes the engine plan an
    instance type change as the replace it is, so protect refuses it too (defence in depth:
    the guard blocks the change on an ``update`` step as well, ``[guard] replace_properties``). ``spec.targetNodes`` is seeded to ``minNodes``
    and ignored afterwards so the CoreWeave autoscaler owns the live count.
    """

    pools: dict[str, k8s.apiextensions.CustomResource]

    def __init__(self, name: str, args: NodePoolsArgs, *, provider: k8s.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NODEPOOLS_COMPONENT, name, None, opts)
        self.pools = {}
        for pool in args.pools:
            self.pools[pool.name] = k8s.apiextensions.CustomResource(
                pool.name,
                api_version=NODEPOOL_KIND.api_version,
                kind=NODEPOOL_KIND.kind,
                metadata={"name": pool.name,
                          **({"labels": dict(pool.metadata_labels)} if pool.metadata_labels else {})},
                spec=nodepool_spec(pool),
                opts=nodepool_options(pool, parent=self, provider=provider),
            )
            ids.importable(self.pools[pool.name], ids.k8s_cluster_scoped(pool.name))
        self.register_outputs({"names": sorted(self.pools)})
