"""Kueue 0.14.4 admission of one workload, by the scheduler's own rules.

Read at kubernetes-sigs/kueue tag v0.14.4 (every line number below is at that tag):

Q1 queue reachable — a LocalQueue in the workload's namespace ("LocalQueue %s doesn't exist":
   pkg/controller/core/workload_controller.go L442) names the ClusterQueue ("ClusterQueue %s
   doesn't exist": L456), whose ``namespaceSelector`` (a LabelSelector; ``{}`` matches every
   namespace) matches the namespace's labels ("Workload namespace doesn't match ClusterQueue
   selector": pkg/scheduler/scheduler.go L431-432); the API server sets
   ``kubernetes.io/metadata.name`` on every Namespace.
Q2 queue active — every flavor it lists exists, and every TAS flavor's Topology exists
   (pkg/cache/scheduler/clusterqueue.go ``inactiveReason`` L256-259, L279-289).
Q3 coverage — a requested resource no resource group covers: "resource %s unavailable in
   ClusterQueue" (pkg/scheduler/flavorassigner/flavorassigner.go ``findFlavorForPodSets`` L676-679).
Q4 flavors in order — the first flavor that fits wins (L701-760; no cohort, so no borrowing).
   A flavor is skipped when:
   a. TAS mismatch (tas_flavorassigner.go ``checkPodSetAndFlavorMatchForTAS`` L131-163): a PodSet
      requests TAS explicitly (a topology annotation: workload.go ``IsExplicitlyRequestingTAS``
      L368-374) or implicitly — no annotation and every flavor of the ClusterQueue is a TAS
      flavor (``isTASImplied`` L165-168, clusterqueue.go ``isTASOnly`` L627-636). Implied: any
      flavor matches. Explicit: the flavor must name a Topology holding the requested level.
      Neither: a TAS flavor "supports only TopologyAwareScheduling" — skipped.
   b. an untolerated ``nodeTaints`` entry (NoSchedule/NoExecute) — the PodSet's tolerations
      plus the flavor's own ``tolerations`` count (flavorassigner.go L817-822);
   c. the PodSet's nodeSelector, restricted to the resource group's label keys, does not match
      the flavor's ``nodeLabels`` (L826-832, ``flavorSelector`` L856-899);
   d. a requested resource's total (count × per-pod request) exceeds the flavor's
      ``nominalQuota`` (``fitsResourceQuota`` L908-935).
Q5 topology placement (TAS requested or implied; ``assignFlavors`` L612-640): only Ready,
   schedulable nodes carrying the flavor's ``nodeLabels`` and a label for every level of its
   Topology are listed (pkg/cache/scheduler/tas_flavor.go ``snapshot`` L103-125); a node with a
   NoSchedule/NoExecute taint the PodSet's and the flavor's tolerations do not tolerate, or
   whose labels do not match the PodSet's nodeSelector, is excluded
   (tas_flavor_snapshot.go L1297-1322); a node holds ``min(allocatable / request)`` pods. A
   required level needs all pods in one domain of that level; a preferred level, or an implied
   request (the lowest level, unconstrained: ``levelKeyWithImpliedFallback`` L873-881,
   ``isUnconstrained`` L908-910), needs room anywhere in the Topology. Nodes that do not exist
   yet do not count: TAS never asks for them.
Q6 where admitted pods land — :func:`landing_nodes`.

(``levelKeyWithImpliedFallback`` and ``isUnconstrained`` are in
pkg/cache/scheduler/tas_flavor_snapshot.go at v0.14.4.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import floor

from oracles.coreweave import Node, amount

from clusterstack.plan import StackPlan

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
_BLOCKING = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class PodSet:
    """One PodSet of a workload: ``count`` pods, each requesting ``requests``; its pod template's
    ``node_selector`` and ``tolerations``, and its topology annotations (``required`` /
    ``preferred``: a Topology level's node-label key)."""

    count: int
    requests: dict[str, str | int]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict, ...] = ()
    required: str | None = None
    preferred: str | None = None

    @property
    def explicit_tas(self) -> bool:
        return self.required is not None or self.preferred is not None


@dataclass(frozen=True)
class Verdict:
    """``flavor``: the flavor Kueue assigns (None: not admitted); ``reason``: Kueue's words."""

    flavor: str | None
    reason: str

    @property
    def admitted(self) -> bool:
        return self.flavor is not None


@dataclass(frozen=True)
class Objects:
    """The Kueue objects of a plan, by name (LocalQueues by (namespace, name))."""

    cluster_queues: dict[str, dict]
    local_queues: dict[tuple[str, str], dict]
    flavors: dict[str, dict]
    topologies: dict[str, dict]

    @classmethod
    def from_plan(cls, plan: StackPlan) -> "Objects":
        def of(kind: str) -> list[dict]:
            return [r.inputs for r in plan.resources
                    if r.type.startswith("kubernetes:kueue.x-k8s.io/") and r.inputs.get("kind") == kind]
        return cls(cluster_queues={o["metadata"]["name"]: o for o in of("ClusterQueue")},
                   local_queues={(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in of("LocalQueue")},
                   flavors={o["metadata"]["name"]: o for o in of("ResourceFlavor")},
                   topologies={o["metadata"]["name"]: o for o in of("Topology")})


def selector_matches(selector: dict, labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector (``matchLabels``, ``matchExpressions`` In/NotIn/Exists/
    DoesNotExist; ``{}`` matches everything: apimachinery ``LabelSelectorAsSelector``)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", ()):
        key, op, values = e["key"], e["operator"], e.get("values", [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def tolerated(taint: tuple[str, str, str], tolerations) -> bool:
    """Kubernetes ``Toleration.ToleratesTaint``: effects equal (or the toleration's empty), keys
    equal (or the toleration's empty with Exists), value equal unless operator Exists."""
    key, value, effect = taint
    for t in tolerations:
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("key") and t["key"] != key:
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == value:
            return True
    return False


def untolerated(taints, tolerations) -> tuple[str, str, str] | None:
    return next((t for t in taints if t[2] in _BLOCKING and not tolerated(t, tolerations)), None)


def _taints(flavor: dict) -> tuple[tuple[str, str, str], ...]:
    return tuple((t["key"], t.get("value", ""), t["effect"]) for t in flavor["spec"].get("nodeTaints", ()))


def _levels(objects: Objects, flavor: dict) -> list[str] | None:
    topo = flavor["spec"].get("topologyName")
    if topo is None or topo not in objects.topologies:
        return None
    return [lvl["nodeLabel"] for lvl in objects.topologies[topo]["spec"]["levels"]]


def admit(objects: Objects, nodes: list[Node], namespace: str, queue: str, podset: PodSet) -> Verdict:
    """Q1–Q5 for a one-PodSet workload submitted to LocalQueue ``namespace/queue``."""
    lq = objects.local_queues.get((namespace, queue))
    if lq is None:
        return Verdict(None, f"LocalQueue {namespace}/{queue} doesn't exist")
    cq = objects.cluster_queues.get(lq["spec"]["clusterQueue"])
    if cq is None:
        return Verdict(None, f"ClusterQueue {lq['spec']['clusterQueue']} doesn't exist")
    spec = cq["spec"]
    if not selector_matches(spec.get("namespaceSelector", {}), {"kubernetes.io/metadata.name": namespace}):
        return Verdict(None, "Workload namespace doesn't match ClusterQueue selector")
    listed = [f["name"] for rg in spec["resourceGroups"] for f in rg["flavors"]]
    missing = [f for f in listed if f not in objects.flavors]
    if missing:   # Q2
        return Verdict(None, f"ClusterQueue is inactive: references missing ResourceFlavor(s): {missing}")
    for name in listed:
        topo = objects.flavors[name]["spec"].get("topologyName")
        if topo is not None and topo not in objects.topologies:
            return Verdict(None, f"ClusterQueue is inactive: there is no Topology {topo!r} for TAS flavor {name!r}")
    tas_only = all(objects.flavors[f]["spec"].get("topologyName") is not None for f in listed)
    implied = not podset.explicit_tas and tas_only
    requested = {r: podset.count * amount(q) for r, q in podset.requests.items()}
    chosen: str | None = None
    for resource in requested:                                        # Q3
        if not any(resource in rg["coveredResources"] for rg in spec["resourceGroups"]):
            return Verdict(None, f"resource {resource} unavailable in ClusterQueue")
    reasons: list[str] = []
    for rg in spec["resourceGroups"]:
        wanted = {r: n for r, n in requested.items() if r in rg["coveredResources"]}
        if not wanted:
            continue
        label_keys = {k for f in rg["flavors"] for k in objects.flavors[f["name"]]["spec"].get("nodeLabels", {})}
        chosen = None
        for entry in rg["flavors"]:                                   # Q4
            flavor = objects.flavors[entry["name"]]
            fspec = flavor["spec"]
            if not implied:                                           # Q4a
                if podset.explicit_tas:
                    levels = _levels(objects, flavor)
                    level = podset.required or podset.preferred
                    if levels is None:
                        reasons.append(f"Flavor {entry['name']!r} does not support TopologyAwareScheduling")
                        continue
                    if level not in levels:
                        reasons.append(f"Flavor {entry['name']!r} does not contain the requested level")
                        continue
                elif fspec.get("topologyName") is not None:
                    reasons.append(f"Flavor {entry['name']!r} supports only TopologyAwareScheduling")
                    continue
            if (t := untolerated(_taints(flavor), (*podset.tolerations, *fspec.get("tolerations", ())))):  # Q4b
                reasons.append(f"untolerated taint {t} in flavor {entry['name']}")
                continue
            selector = {k: v for k, v in podset.node_selector.items() if k in label_keys}   # Q4c
            if any(fspec.get("nodeLabels", {}).get(k) != v for k, v in selector.items()):
                reasons.append(f"flavor {entry['name']} doesn't match node affinity")
                continue
            quota = {q["name"]: amount(q["nominalQuota"]) for q in entry["resources"]}      # Q4d
            short = [r for r, n in wanted.items() if quota.get(r, 0) < n]
            if short:
                reasons.append(f"insufficient quota for {short[0]} in flavor {entry['name']}")
                continue
            chosen = entry["name"]
            break
        if chosen is None:
            return Verdict(None, "; ".join(reasons) or "no flavor")
    assert chosen is not None
    if podset.explicit_tas or implied:                                # Q5
        why = place(objects, nodes, objects.flavors[chosen], podset, implied)
        if why:
            return Verdict(None, why)
    return Verdict(chosen, "admitted")


def pods_on(node: Node, podset: PodSet) -> int:
    """How many of the PodSet's pods fit the node's allocatable (``Requests.CountIn``)."""
    fits = [floor(node.allocatable.get(r, 0) / amount(q)) for r, q in podset.requests.items() if amount(q) > 0]
    return min([*fits, int(node.allocatable.get("pods", 0))])


def landing_nodes(objects: Objects, nodes: list[Node], flavor: dict, podset: PodSet) -> list[Node]:
    """Q6: the nodes the pods of ``podset``, admitted to ``flavor``, can be bound to. Kueue
    adds the flavor's ``nodeLabels`` to their nodeSelector and its ``tolerations`` to theirs
    (kubernetes-sigs/kueue v0.14.4 pkg/podset/podset.go L84-85); with TAS it assigns them only
    to nodes of the flavor's TAS snapshot that tolerate nothing more (Q5: tas_flavor.go
    L103-125, tas_flavor_snapshot.go L1297-1322); kube-scheduler then binds them only where
    the selector matches and every NoSchedule/NoExecute taint is tolerated."""
    fspec = flavor["spec"]
    tolerations = (*podset.tolerations, *fspec.get("tolerations", ()))
    levels = _levels(objects, flavor) or []
    return [n for n in nodes if all(n.labels.get(k) == v for k, v in fspec.get("nodeLabels", {}).items())
            and all(level in n.labels for level in levels)
            and untolerated(n.taints, tolerations) is None
            and all(n.labels.get(k) == v for k, v in podset.node_selector.items())]


def place(objects: Objects, nodes: list[Node], flavor: dict, podset: PodSet, implied: bool) -> str | None:
    """Q5: None when TAS finds room for every pod on existing nodes, else why not."""
    levels = _levels(objects, flavor)
    if levels is None:
        return "workload requires Topology, but there is no TAS cache information for the assigned flavor"
    fspec = flavor["spec"]
    listed = [n for n in nodes if all(n.labels.get(k) == v for k, v in fspec.get("nodeLabels", {}).items())
              and all(level in n.labels for level in levels)]
    usable = landing_nodes(objects, nodes, flavor, podset)
    if not usable:
        return (f"TAS: no node of flavor {flavor['metadata']['name']!r} can take the pods "
                f"({len(listed)} listed with every level of {levels}, none usable)")
    if podset.required is not None:
        depth = levels.index(podset.required) + 1
        domains: dict[tuple[str, ...], int] = {}
        for n in usable:
            key = tuple(n.labels[lvl] for lvl in levels[:depth])
            domains[key] = domains.get(key, 0) + pods_on(n, podset)
        best = max(domains.values())
        if best < podset.count:
            return (f"TAS: no {podset.required} domain fits {podset.count} pods (at most {best})")
        return None
    room = sum(pods_on(n, podset) for n in usable)
    if room < podset.count:
        return f"TAS: existing nodes fit {room} of {podset.count} pods"
    return None
