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
Q4 flavors in order — the first flavor that fits wins (L701-760).
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
   d. quota (``fitsResourceQuota`` L908-938): a requested resource's total ``val`` (count ×
      per-pod request) above ``PotentialAvailable`` — "insufficient
      quota for %s in flavor %s, … > maximum capacity" (L916-919, no fit at all) — or above
      ``Available`` — "insufficient unused quota for %s in flavor %s, %s more needed" (L929-930:
      only a preemption could make room; not admitted now). Without a cohort they are the
      ``nominalQuota`` minus the queue's usage, and the ``nominalQuota``. In a cohort (pkg/cache/scheduler/resource_node.go):
      a queue's ``localQuota`` = max(0, nominal − lendingLimit) with a lendingLimit, else 0
      (L66-71); the cohort's quota = Σ of its queues' (nominal − localQuota) and its usage =
      Σ max(0, usage − localQuota) (``accumulateFromChild`` L210-218); ``available`` = max(0,
      localQuota − usage) + the cohort's unused quota, capped with a borrowingLimit at
      (nominal − localQuota) − max(0, usage − localQuota) + borrowingLimit (L104-118,
      ``Available`` clamps at 0: clusterqueue_snapshot.go L153-155); ``potentialAvailable`` =
      localQuota + the cohort's quota, capped with a borrowingLimit at nominal + borrowingLimit
      (L122-134). A workload that fits above its nominal quota borrows (``borrow`` L922).
Q5 topology placement (TAS requested or implied; ``assignFlavors`` L612-640): only Ready,
   schedulable nodes carrying the flavor's ``nodeLabels`` and a label for every level of its
   Topology are listed (pkg/cache/scheduler/tas_flavor.go ``snapshot`` L103-125); a node with a
   NoSchedule/NoExecute taint the PodSet's and the flavor's tolerations do not tolerate, or
   whose labels do not match the PodSet's nodeSelector, is excluded
   (tas_flavor_snapshot.go L1297-1322); a node holds ``min(allocatable / request)`` pods. A
   required level needs all pods in one domain of that level; a preferred level, or an implied
   request (the lowest level, unconstrained: ``levelKeyWithImpliedFallback`` L873-881,
   ``isUnconstrained`` L908-910), needs room anywhere in the Topology. Nodes that do not exist
   yet do not count: TAS never asks for them. (Other workloads' pods are not placed: ``usage``
   counts only against quota.)
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
    borrows: bool = False     # admitted above its nominal quota in some resource (Q4d)

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


Usage = dict[str, dict[tuple[str, str], float]]   # ClusterQueue → (flavor, resource) → admitted amount


def _limits(cq: dict, flavor: str, resource: str) -> tuple[float, float | None, float | None]:
    """(nominalQuota, borrowingLimit, lendingLimit) of a ClusterQueue's [flavor, resource]."""
    for rg in cq["spec"]["resourceGroups"]:
        for f in rg["flavors"]:
            if f["name"] != flavor:
                continue
            for r in f["resources"]:
                if r["name"] == resource:
                    b, lend = r.get("borrowingLimit"), r.get("lendingLimit")
                    return (amount(r["nominalQuota"]), None if b is None else amount(b),
                            None if lend is None else amount(lend))
    return (0.0, None, None)


def _local_quota(nominal: float, lending: float | None) -> float:
    return max(0.0, nominal - lending) if lending is not None else 0.0     # L66-71


def quota_room(objects: Objects, cq_name: str, flavor: str, resource: str,
               usage: Usage | None = None) -> tuple[float, float, float]:
    """(nominal, available, potentialAvailable) of ``cq_name`` for [flavor, resource] (Q4d)."""
    usage = usage or {}
    cq = objects.cluster_queues[cq_name]
    nominal, borrowing, lending = _limits(cq, flavor, resource)
    used = usage.get(cq_name, {}).get((flavor, resource), 0.0)
    cohort = cq["spec"].get("cohort")
    if not cohort:
        return nominal, max(0.0, nominal - used), nominal
    local = _local_quota(nominal, lending)
    members = [n for n, o in objects.cluster_queues.items() if o["spec"].get("cohort") == cohort]
    subtree = cohort_used = 0.0
    for m in members:                                               # accumulateFromChild L210-218
        n, _b, lend = _limits(objects.cluster_queues[m], flavor, resource)
        m_local = _local_quota(n, lend)
        subtree += n - m_local
        cohort_used += max(0.0, usage.get(m, {}).get((flavor, resource), 0.0) - m_local)
    parent = subtree - cohort_used                                  # the root's available, L106-107
    if borrowing is not None:                                       # L111-116
        parent = min((nominal - local) - max(0.0, used - local) + borrowing, parent)
    available = max(0.0, max(0.0, local - used) + parent)           # L117, clamped L153-155
    potential = local + subtree                                     # L122-134
    if borrowing is not None:
        potential = min(nominal + borrowing, potential)
    return nominal, available, potential


def admit(objects: Objects, nodes: list[Node], namespace: str, queue: str, podset: PodSet,
          usage: Usage | None = None) -> Verdict:
    """Q1–Q5 for a one-PodSet workload submitted to LocalQueue ``namespace/queue``, the
    ClusterQueues already holding ``usage`` (default: an idle cluster)."""
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
    borrows = False
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
            cq_name = lq["spec"]["clusterQueue"]                                              # Q4d
            room = {r: quota_room(objects, cq_name, entry["name"], r, usage) for r in wanted}
            # val = this PodSet's request (one PodSet: no earlier PodSet's assumed usage, L913);
            # the queue's own usage is in Available, not in PotentialAvailable
            over = [r for r in wanted if wanted[r] > room[r][2]]
            if over:
                reasons.append(f"insufficient quota for {over[0]} in flavor {entry['name']}, "
                               f"{wanted[over[0]]:g} > maximum capacity ({room[over[0]][2]:g})")
                continue
            short = [r for r in wanted if wanted[r] > room[r][1]]
            if short:
                reasons.append(f"insufficient unused quota for {short[0]} in flavor {entry['name']}, "
                               f"{wanted[short[0]] - room[short[0]][1]:g} more needed")
                continue
            used = (usage or {}).get(cq_name, {})
            borrows = any(n + used.get((entry["name"], r), 0.0) > room[r][0] for r, n in wanted.items())
            chosen = entry["name"]
            break
        if chosen is None:
            return Verdict(None, "; ".join(reasons) or "no flavor")
    assert chosen is not None
    if podset.explicit_tas or implied:                                # Q5
        why = place(objects, nodes, objects.flavors[chosen], podset, implied)
        if why:
            return Verdict(None, why)
    return Verdict(chosen, "admitted", borrows)


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
