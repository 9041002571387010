"""Day one: can one ``up`` on an empty CoreWeave cluster create everything a plan declares?

The engine creates a resource once every resource it depends on exists, and only those: its
own ``dependencies`` (explicit ``depends_on`` and property dependencies — the plan records
both, sorted). A parent's ``depends_on`` is not its children's (pulumi/pulumi@1b5949891b3c
sdk/python/lib/pulumi/runtime/resource.py ``prepare_resource`` L181-260: a resource's
dependencies are its own ``opts.depends_on`` (L191-193) and the resources its inputs came from
(L254-260)), so only the resource's own edges, followed transitively, order it.

Rules, read at pulumi/pulumi-kubernetes@94977969 (provider/pkg/provider/helm_release.go) and
in the charts at their pinned versions:

H1 a ``helm.sh/v3:Release`` waits for every resource of its chart to be ready unless
   ``skipAwait`` (``client.Wait = !SkipAwait`` L608), for ``timeout`` seconds (L612; 300 when
   unset, ``defaultTimeoutSeconds`` L64, ``getTimeoutOrDefault`` L1766-1770); with ``atomic`` a
   failed wait uninstalls the release (L618), and every custom resource of its CRDs then fails.
H2 a chart's pod is ready only on a node that matches its ``nodeSelector`` and whose
   NoSchedule taints it tolerates (Kubernetes "Assigning Pods to Nodes": nodeSelector; "Taints
   and Tolerations": NoSchedule); on an empty cluster the only nodes are those of NodePools created
   before the release — so the release must depend on such a pool with warm nodes, a *CPU*
   pool (a system pod on a GPU node is TAS usage there, kueue v0.14.4
   pkg/cache/scheduler/tas_flavor.go L117-123 lists the non-TAS pods bound to nodes as usage) — and
   they arrive after bare-metal delivery, which takes up to :data:`NODE_DELIVERY_SECONDS`: the
   wait must last longer.
H3 a custom resource is accepted only once its CRD exists: the release installing that API
   group must come first — kueue 0.14.4's chart renders its CRDs from templates/crd/
   (kubernetes-sigs/kueue v0.14.4 charts/kueue/templates/crd/), cert-manager v1.19.1's only
   with ``crds.enabled`` (../shared/reference/cert-manager-v1.19.1/deploy/charts/cert-manager/
   values.schema.json ``crds.enabled``), Traefik 37.2.0's from its crds/ directory
   (../shared/reference/traefik-helm-chart-v37.2.0/traefik/crds/); CoreWeave installs
   compute.coreweave.com itself (CKS "Node Pool reference").
H4 a namespaced object needs its Namespace first, when the stack declares it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oracles.coreweave import Node, delivered_nodes, NodeShape, NODEPOOL_TYPE
from oracles.kueue import untolerated

from clusterstack.plan import StackPlan
from clusterstack.plan.model import PlannedResource

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
DEFAULT_TIMEOUT = 300
#: Marin measured "20-30 minutes" for a bare-metal node (marin-community/marin
#: lib/iris/docs/coreweave-v2.md@82d3f250, "Context"): a first wait must last longer than the
#: upper end, or the slowest delivery fails the release.
NODE_DELIVERY_SECONDS = 30 * 60
#: API group → the chart that installs its CRDs (None: the platform's own).
CRD_SOURCE = {"kueue.x-k8s.io": "kueue", "cert-manager.io": "cert-manager", "acme.cert-manager.io": "cert-manager",
              "traefik.io": "traefik", "traefik.containo.us": "traefik", "compute.coreweave.com": None}
CORE_GROUPS = ("core", "apps", "batch", "policy", "rbac.authorization.k8s.io", "scheduling.k8s.io",
               "networking.k8s.io", "apiextensions.k8s.io", "storage.k8s.io")


@dataclass(frozen=True)
class Wait:
    """How a release waits (H1)."""

    wait: bool
    timeout: int
    atomic: bool


def release_wait(r: PlannedResource) -> Wait:
    i = r.inputs
    return Wait(wait=not i.get("skipAwait", False), timeout=int(i.get("timeout") or DEFAULT_TIMEOUT),
                atomic=bool(i.get("atomic", False)))


def chart_of(r: PlannedResource) -> str:
    """``kueue`` (the upstream OCI chart or CoreWeave's cks-kueue), ``cert-manager`` or ``traefik``."""
    name = r.inputs["chart"].rstrip("/").rsplit("/", 1)[-1]
    return "kueue" if name in ("kueue", "cks-kueue") else name


def pod_placements(r: PlannedResource) -> dict[str, tuple[dict[str, str], tuple[dict, ...]]]:
    """The chart's pod kinds → (nodeSelector, tolerations) as its values set them, with the
    chart's own defaults (kueue values.yaml ``controllerManager.nodeSelector: {}``; cert-manager
    values.schema.json: ``nodeSelector`` default ``{kubernetes.io/os: linux}`` for the
    controller, webhook, cainjector and startupapicheck; Traefik values.yaml ``nodeSelector: {}``).
    cks-kueue nests kueue's values under ``kueue``."""
    values: dict[str, Any] = r.inputs.get("values", {})
    chart = chart_of(r)
    if chart == "kueue":
        v = values.get("kueue", values) if r.inputs["chart"].endswith("cks-kueue") else values
        cm = v.get("controllerManager", {})
        return {"controller-manager": (cm.get("nodeSelector", {}), tuple(cm.get("tolerations", ())))}
    if chart == "cert-manager":
        linux = {"kubernetes.io/os": "linux"}
        out = {}
        for part, v in (("controller", values), ("webhook", values.get("webhook", {})),
                        ("cainjector", values.get("cainjector", {})),
                        ("startupapicheck", values.get("startupapicheck", {}))):
            out[part] = ({**linux, **v.get("nodeSelector", {})}, tuple(v.get("tolerations", ())))
        return out
    if chart == "traefik":
        return {"traefik": (values.get("nodeSelector", {}), tuple(values.get("tolerations", ())))}
    raise ValueError(f"no placement rule for chart {r.inputs['chart']!r}")


def landing(node: Node, selector: dict[str, str], tolerations) -> bool:
    """H2: may a pod with this ``nodeSelector`` and these tolerations run on ``node``?"""
    return (all(node.labels.get(k) == v for k, v in selector.items())
            and untolerated(node.taints, tolerations) is None)


def closure(plan: StackPlan, urn: str) -> set[str]:
    """Every URN ``urn`` depends on, transitively (its own dependency edges only)."""
    by = plan.by_urn()
    seen: set[str] = set()
    todo = list(by[urn].dependencies)
    while todo:
        u = todo.pop()
        if u not in seen:
            seen.add(u)
            todo += list(by[u].dependencies) if u in by else []
    return seen


def api_group(r: PlannedResource) -> str | None:
    """The API group of a Kubernetes resource's type token (``kubernetes:<group>/<v>:<Kind>``)."""
    if not r.type.startswith("kubernetes:") or r.type == RELEASE_TYPE:
        return None
    return r.type.split(":")[1].rsplit("/", 1)[0]


def day_one_problems(plan: StackPlan, shapes: dict[str, NodeShape]) -> list[str]:
    """H1–H4 over the plan: what would fail on the first ``up`` of an empty cluster, as text
    (empty when one ``up`` converges)."""
    problems: list[str] = []
    by = plan.by_urn()
    nodes_of: dict[str, list[Node]] = {}
    for n in delivered_nodes(plan, shapes):
        nodes_of.setdefault(n.pool, []).append(n)
    pool_urn = {r.inputs["metadata"]["name"]: r.urn for r in plan.resources if r.type == NODEPOOL_TYPE}
    releases = {chart_of(r): r for r in plan.resources if r.type == RELEASE_TYPE}
    for chart, r in sorted(releases.items()):
        deps = closure(plan, r.urn)
        w = release_wait(r)
        for part, (selector, tolerations) in sorted(pod_placements(r).items()):
            hosts = [pool for pool, urn in sorted(pool_urn.items()) if urn in deps and any(
                landing(n, selector, tolerations) and not n.allocatable.get("nvidia.com/gpu")
                for n in nodes_of.get(pool, ()))]
            if not hosts:
                problems.append(f"release {r.name}: its {part} pods depend on no CPU NodePool with "
                                f"warm nodes they can run on (nodeSelector {selector}), so on an empty "
                                "cluster they wait for nodes the engine may not have asked for yet")
        if w.wait and w.timeout <= NODE_DELIVERY_SECONDS:
            problems.append(f"release {r.name}: waits {w.timeout} s for pods whose first node may take "
                            f"{NODE_DELIVERY_SECONDS} s to deliver"
                            + (" — atomic: it uninstalls itself" if w.atomic else ""))
    for r in plan.resources:
        group = api_group(r)
        if group is None or group in CORE_GROUPS:
            continue
        if group not in CRD_SOURCE:
            problems.append(f"{r.type} {r.name}: no rule says which release installs API group {group}")
            continue
        chart = CRD_SOURCE[group]
        if chart is None:
            continue
        release = releases.get(chart)
        if release is None or release.urn not in closure(plan, r.urn):
            problems.append(f"{r.type.rsplit(':', 1)[1]} {r.name}: created with no dependency on the "
                            f"{chart} release that installs its CRD (API group {group})")
    namespaces = {r.inputs["metadata"]["name"]: r.urn for r in plan.resources if r.type == NAMESPACE_TYPE}
    for r in plan.resources:
        meta = r.inputs.get("metadata") if r.type.startswith("kubernetes:") else None
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if ns in namespaces and namespaces[ns] not in closure(plan, r.urn):
            problems.append(f"{r.type.rsplit(':', 1)[1]} {ns}/{meta['name']}: created with no "
                            f"dependency on its Namespace {ns}")
    return problems


def deleted_before(plan: StackPlan, first: str, then: str) -> bool:
    """On ``destroy`` (or removal of both), the engine deletes dependents before what they
    depend on (pulumi/pulumi pkg/resource/deploy: deletes run in reverse dependency order), so
    ``first`` is deleted before ``then`` exactly when ``first`` depends on ``then``."""
    return then in closure(plan, first)
