"""One stack per Kubernetes object: a service stack never declares an object its cluster's stack
(or another service's stack) declares in the same Kubernetes cluster.

Kubernetes keeps one object per group, kind, namespace and name (an object's identity:
``metadata.name`` is unique per kind within a namespace — Kubernetes docs "Object Names and
IDs"; the kind's group, not its version, counts — one object served at several versions). Two
Pulumi stacks declaring the same object both own it: each ``up`` undoes the other's change, and
deleting either stack's resource deletes the object the other still declares. Between cluster
stacks, :mod:`clusterstack.validation.identities` refuses a shared kube context (the whole
cluster). A service stack (``services.yaml`` ``kind: kubernetes``) deploys *into* a cluster
its cluster stack also fills: it must declare only objects of its own — a ``namespace:`` the
cluster stack already declares (the controller's ``training``, a chart's namespace) made both
stacks declare that Namespace, and nothing said so. ``plan --all`` refuses it (exit 2): it has
the cluster plans in hand and plans each Kubernetes service's stack beside them; ``validate``
plans nothing (it imports no SDK: tests/test_import_hygiene.py), so it cannot see objects.

The objects are read from the plans (:func:`clusterstack.plan.plan_stack`: the real programs,
offline), per kube context: the cluster stack's (``platform.coreweave.kube_context``) and each
Kubernetes service's (``services.yaml``: its ``kubernetes.cluster``'s context, or its
``context``). A Helm release (``kubernetes:helm.sh/v3:Release``) is the release
(namespace, name) and, with ``createNamespace``, its Namespace (Helm creates it: the
``--create-namespace`` of ``helm install``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.plan.model import StackPlan
from clusterstack.pulumi import tokens
from clusterstack.validation import load_cluster
from clusterstack.plan import plan_stack

#: An object's identity in one Kubernetes cluster: (group, kind, namespace, name); "" for the
#: core group and for a cluster-scoped object's namespace.
ObjectId = tuple[str, str, str, str]


def _group_kind(type_token: str) -> tuple[str, str] | None:
    """``kubernetes:apps/v1:Deployment`` → ``("apps", "Deployment")``; ``core/v1`` → group "".
    None for what is no Kubernetes object (a provider, a component, another package)."""
    parts = type_token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    group = parts[1].rsplit("/", 1)[0] if "/" in parts[1] else ""
    return ("" if group == "core" else group), parts[2]


def declared_objects(plan: StackPlan) -> dict[ObjectId, str]:
    """Every Kubernetes object ``plan`` declares: its identity → how a message names it
    (``Namespace 'training'``, ``apps/Deployment logging/logrelay``, ``Helm release
    kueue-system/kueue``). Only custom resources of the ``kubernetes`` package count."""
    out: dict[ObjectId, str] = {}
    for r in plan.resources:
        gk = _group_kind(r.type) if r.custom and not r.is_provider else None
        if gk is None:
            continue
        inputs: Mapping[str, Any] = r.inputs or {}
        if r.type == tokens.HELM_RELEASE:
            ns, name = str(inputs.get("namespace") or "default"), str(inputs.get("name") or r.name)
            out[("helm.sh", "Release", ns, name)] = f"Helm release {ns}/{name}"
            if inputs.get("createNamespace"):
                out[("", "Namespace", "", ns)] = f"Namespace {ns!r} (created by Helm release {name})"
            continue
        meta = m if isinstance(m := inputs.get("metadata"), Mapping) else {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            continue   # a name the API server generates, or one only known at `up`
        ns = v if isinstance(v := meta.get("namespace"), str) else ""
        group, kind = gk
        shown = f"{group}/{kind}" if group else kind
        out[(group, kind, ns, name)] = f"{shown} {ns + '/' if ns else ''}{name}" if kind != "Namespace" \
            else f"Namespace {name!r}"
    return out


def shared_object_problems(stacks: Iterable[tuple[str, str, StackPlan, Problem]]) -> list[Problem]:
    """``stacks``: ``(kube context, who, plan, where)`` — ``who`` names the stack in messages
    (``stack cw-demo-h100``, ``service logrelay``), ``where`` is the Problem to report at (its
    file, line and field; its message and hint are replaced). One Problem per stack that
    declares an object an earlier stack of the same context declares, naming the objects
    (sorted) and the first stack; stacks in the order given."""
    first: dict[tuple[str, ObjectId], str] = {}
    problems = []
    for context, who, plan, where in stacks:
        clashes: dict[str, list[str]] = {}
        for oid, shown in sorted(declared_objects(plan).items()):
            owner = first.setdefault((context, oid), who)
            if owner != who:
                clashes.setdefault(owner, []).append(shown)
        for owner, objects in sorted(clashes.items()):
            problems.append(Problem(
                f"{who} declares {', '.join(objects)} in kube context {context!r}, which {owner} "
                "declares too: Kubernetes keeps one object per kind, namespace and name, and each "
                "`up` would undo the other's",
                f"give the service its own namespace (or names), or leave the object to {owner}",
                file=where.file, line=where.line, field=where.field))
    return problems


def service_object_problems(ws: Any, registry: Any,
                            planned: Mapping[str, StackPlan] | None = None) -> list[Problem]:
    """:func:`shared_object_problems` over the Kubernetes services of ``registry``
    (:class:`clusterstack.deploy.registry.Registry`) that name a reviewed cluster or a
    context, and the cluster stacks of those contexts: the cluster stacks first, then the
    services by name. ``planned``: cluster plans already made, by stack (``plan --all``'s),
    reused instead of planning again. A stack whose program does not plan offline is left out
    (``plan`` and ``deploy`` report its error). [] when no service deploys to Kubernetes
    (nothing planned)."""
    services = [e for e in registry.services.values() if e.spec.kubernetes is not None and e.kube_context]
    if not services:
        return []
    contexts = {e.kube_context for e in services}
    stacks: list[tuple[str, str, StackPlan, Problem]] = []

    def plan(project_dir: Any, stack: str) -> StackPlan | None:
        try:
            return plan_stack(project_dir, stack)
        except ClusterstackError:
            return None

    for name in ws.cluster_names():
        try:
            cfg = load_cluster(ws, name, references=False).config
        except ClusterstackError:
            continue
        ctx = cfg.platform.coreweave.kube_context if cfg.platform.coreweave is not None else None
        if ctx is not None and ctx in contexts and (p := (planned or {}).get(name) or plan(ws.project_dir, name)) is not None:
            stacks.append((ctx, f"stack {name}", p, Problem("", file=ws.cluster_file(name))))
    for e in sorted(services, key=lambda e: e.name):
        if (p := plan(e.project_dir, e.stack)) is not None:
            stacks.append((e.kube_context, f"service {e.name}", p,
                           Problem("", file=e.file, line=e.line, field=f"services.{e.name}")))
    return shared_object_problems(stacks)


__all__ = ["ObjectId", "declared_objects", "service_object_problems", "shared_object_problems"]
