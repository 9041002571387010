"""Fields the receiving API server refuses to change, and how Pulumi's engine replaces them.

Immutable fields (an in-place patch of one is refused; the change must be a replacement):

I1 Kueue Topology ``spec.levels``: CRD CEL ``self == oldSelf`` ("field is immutable";
   kubernetes-sigs/kueue v0.14.4 config/components/crd/bases/kueue.x-k8s.io_topologies.yaml L66-68).
I2 Kueue ResourceFlavor ``spec`` once ``topologyName`` is set: CEL
   ``!has(oldSelf.topologyName) || self == oldSelf`` (kueue.x-k8s.io_resourceflavors.yaml L189-190).
I3 PriorityClass ``value`` and ``preemptionPolicy``: kubernetes/kubernetes
   pkg/apis/scheduling/validation/validation.go ``ValidatePriorityClassUpdate`` L57-67 (commit
   00447344aba0: "value is immutable", ``ValidateImmutableField(pc.PreemptionPolicy, …)``).
I4 CoreWeave NodePool ``spec.instanceType``: CoreWeave CKS "Node Pool reference"
   (docs.coreweave.com/docs/products/cks/reference/node-pool, the revision listing
   ``targetRacks``: ``instanceType`` is fixed at creation). No source line: CoreWeave publishes
   no NodePool CRD (../shared/reference/README.md).
I5 Kueue LocalQueue ``spec.clusterQueue``: CRD CEL ``self == oldSelf`` ("field is immutable";
   kueue.x-k8s.io_localqueues.yaml L65-67).

What the engine does (pulumi/pulumi pkg/resource/deploy/step_generator.go at 1b594989,
pulumi-kubernetes provider/pkg/provider at 94977969):

P1 pulumi-kubernetes forces a replacement only of ``.metadata.name`` and ``.metadata.namespace``
   for these kinds (diff.go ``forceNewProperties`` L23-38, ``metadataForceNewProperties``
   L207-212); anything else is an update unless ``replaceOnChanges`` covers the changed path
   (``applyReplaceOnChanges`` L3170-3261: a replaceOnChanges path *contains* the diff path).
P2 the provider asks for delete-before-replace only when it reports the replacement itself
   (provider.go L1647-1660); a replace coming from ``replaceOnChanges`` is create-before-delete
   unless the resource sets ``deleteBeforeReplace`` (step_generator.go L2043-2046) — and a second
   object with the same name cannot be created beside the first.
P3 deleting X before replacing it, the engine first deletes (in reverse dependency order) the
   dependents whose input keys depend on a replaced resource *and* whose diff with those keys
   unknown is a replace (``calculateDependentReplacements`` L3268-3415), then — deleted before
   them — every resource with X in ``replaceWith`` (``findDependentCascadeReplacements``
   L3419-3443, appended after, deleted in reverse: L2074-2090).
K1 Kueue keeps an object while it is in use (finalizer ``kueue.x-k8s.io/resource-in-use``): a
   Topology while a flavor names it (kubernetes-sigs/kueue v0.14.4
   pkg/controller/tas/topology_controller.go L101-117), a ResourceFlavor while a ClusterQueue
   lists it (v0.14.4 pkg/controller/core/resourceflavor_controller.go L98-110); pulumi-kubernetes'
   delete waits until the object is gone.
"""

from __future__ import annotations

from clusterstack.plan import StackPlan
from clusterstack.plan.model import PlannedResource
from clusterstack.pulumi.paths import contains, lenient_parse

TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta1:Topology"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"
NODEPOOL = "kubernetes:compute.coreweave.com/v1alpha1:NodePool"


def immutable_paths(r: PlannedResource) -> tuple[str, ...]:
    """I1–I5: the input paths of ``r`` the API server refuses to change in place."""
    if r.type == TOPOLOGY:
        return ("spec.levels",)
    if r.type == FLAVOR and "topologyName" in r.inputs.get("spec", {}):
        return ("spec",)
    if r.type == PRIORITY_CLASS:
        return ("value", "preemptionPolicy")
    if r.type == NODEPOOL:
        return ("spec.instanceType",)
    if r.type == LOCAL_QUEUE:
        return ("spec.clusterQueue",)
    return ()


def replaces_on(r: PlannedResource, path: str) -> bool:
    """P1: a change at ``path`` is planned as a replacement."""
    target = lenient_parse(path)
    return path in ("metadata.name", "metadata.namespace") or any(
        contains(lenient_parse(p), target) for p in r.replace_on_changes)


def replace_problems(plan: StackPlan) -> list[str]:
    """I1–I5 with P1–P2: every immutable field replaces, delete-before-replace."""
    out = []
    for r in plan.resources:
        paths = immutable_paths(r)
        for p in paths:
            if not replaces_on(r, p):
                out.append(f"{r.type.rsplit(':', 1)[1]} {r.name}: a change of {p} would be an in-place "
                           "patch the API server refuses")
        if paths and not r.delete_before_replace:
            out.append(f"{r.type.rsplit(':', 1)[1]} {r.name}: replaced create-before-delete, but its "
                       "replacement has the same name")
    return out


def dependents(plan: StackPlan, urn: str) -> list[PlannedResource]:
    """Resources depending on ``urn`` transitively, in dependency order (dependencies first)."""
    order = {r.urn: i for i, r in enumerate(topological(plan))}
    out = {r.urn: r for r in plan.resources if r.urn != urn and urn in _closure(plan, r.urn)}
    return sorted(out.values(), key=lambda r: order[r.urn])


def topological(plan: StackPlan) -> list[PlannedResource]:
    by = plan.by_urn()
    seen: set[str] = set()
    out: list[PlannedResource] = []

    def visit(u: str) -> None:
        if u in seen or u not in by:
            return
        seen.add(u)
        for d in by[u].dependencies:
            visit(d)
        out.append(by[u])

    for r in plan.resources:
        visit(r.urn)
    return out


def _closure(plan: StackPlan, urn: str) -> set[str]:
    by = plan.by_urn()
    seen: set[str] = set()
    todo = list(by[urn].dependencies)
    while todo:
        u = todo.pop()
        if u not in seen and u in by:
            seen.add(u)
            todo += list(by[u].dependencies)
    return seen


def delete_order(plan: StackPlan, root: str) -> list[str]:
    """P3: the URNs the engine deletes when it deletes-before-replaces ``root``, in order."""
    replaced = {root}
    chain: list[str] = []
    for d in dependents(plan, root):
        keys = [k for k, urns in d.property_dependencies.items() if replaced & set(urns)]
        if keys and any(replaces_on(d, k) for k in keys):
            replaced.add(d.urn)
            chain.append(d.urn)
    chain += sorted(r.urn for r in plan.resources if root in r.replace_with)
    return [*reversed(chain), root]


def finalizer_waits(plan: StackPlan, order: list[str]) -> list[str]:
    """K1: deleting in ``order``, which delete waits forever on an object that still names it."""
    by = plan.by_urn()
    gone: set[str] = set()
    waits = []
    for u in order:
        r = by[u]
        name = r.inputs.get("metadata", {}).get("name")
        holders = []
        if r.type == TOPOLOGY:
            holders = [o for o in plan.resources if o.type == FLAVOR and o.urn not in gone
                       and o.inputs["spec"].get("topologyName") == name]
        elif r.type == FLAVOR:
            holders = [o for o in plan.resources if o.type == CLUSTER_QUEUE and o.urn not in gone
                       and any(f["name"] == name for g in o.inputs["spec"]["resourceGroups"] for f in g["flavors"])]
        if holders:
            waits.append(f"{r.type.rsplit(':', 1)[1]} {r.name} is deleted while "
                         + ", ".join(f"{h.type.rsplit(':', 1)[1]} {h.name}" for h in holders) + " still names it")
        gone.add(u)
    return waits
