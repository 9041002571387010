"""Namespace, the controller's ServiceAccount and grants, an optional read-only observer role
bound to named users (e.g. a Grafana token user), and an optional Loom session Role bound to
named users.

The grants are named presets selected in ``[conventions]`` (``controller_rbac``,
``observer_rbac``, ``loom_session_rbac``; workspace/model.py): a new lab's least-privilege
defaults, and the presets that reproduce a running Marin fleet's objects rule for rule — the
scheduler re-applies its own ClusterRole at every start (marin-community/marin
lib/iris/.../k8s/controller.py ``ensure_rbac``; rbac_manifests.py@33283163), so a different
declared rule list would fight it on every restart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import RBAC_COMPONENT


class PolicyRule(TypedDict):
    """One rbac.authorization.k8s.io/v1 PolicyRule in the API's own keys, as Marin's manifests
    write it (the presets below compare with them rule for rule)."""

    apiGroups: list[str]
    resources: list[str]
    verbs: list[str]


def _rule_args(rule: PolicyRule) -> k8s.rbac.v1.PolicyRuleArgsDict:
    """``rule`` in the SDK's input keys (the SDK sends them as the API's: ``apiGroups``)."""
    return {"api_groups": rule["apiGroups"], "resources": rule["resources"], "verbs": rule["verbs"]}


# Least privilege (Kubernetes "Using RBAC Authorization"; "RBAC Good Practices": namespaced
# Roles over ClusterRoles, no wildcard verbs). Each rule names the controller action needing it.
# NodePools are read only: Pulumi owns their specs (protect=True) and CoreWeave's autoscaler owns
# targetNodes; a controller able to update or delete them could fight Pulumi or delete the fleet.
CONTROLLER_NAMESPACED_RULES: tuple[PolicyRule, ...] = (
    # launch task pods (create), follow them (get/list/watch), kill or clean them up (delete)
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create", "delete"]},
    # `exec` into a task (websocket exec opens with GET, SPDY with POST = create)
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    # stream a task's logs
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    # keep the controller's own state and task configuration in configmaps of its namespace
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    # keep a running gang from being drained by voluntary disruptions
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"],
     "verbs": ["get", "list", "watch", "create", "delete"]},
    # follow admission of submitted jobs; cancel a job's Workload (delete). No
    # workloads/status: writing it would bypass Kueue's quota.
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
     "verbs": ["get", "list", "watch", "delete"]},
    # report the queue a job waits in (pending/admitted counts of the LocalQueue)
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": ["get", "list", "watch"]},
)
CONTROLLER_CLUSTER_RULES: tuple[PolicyRule, ...] = (
    # see node capacity, readiness and topology labels when placing gangs (nodes are cluster-scoped)
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    # resolve a job's priority class name to its value (PriorityClasses are cluster-scoped)
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    # read the scale groups' NodePools (size, conditions) to report capacity — read only
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"], "verbs": ["get", "list", "watch"]},
)
OBSERVER_RULES: tuple[PolicyRule, ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
)

# Marin's Iris controller: its ClusterRole, bound cluster-wide, and no namespaced Role. Rule for
# rule marin-community/marin lib/iris/src/iris/cluster/platforms/k8s/rbac_manifests.py
# @3328316323db CLUSTER_ROLE_RULES (the scheduler applies this list at every start), in its
# order; the comments say what the scheduler does with each (from the same file).
IRIS_CLUSTER_RULES: tuple[PolicyRule, ...] = (
    # creates, resizes and deletes the scale groups' NodePools itself
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    # task pods, exec and logs in every namespace: it evicts blockers in preempt_namespaces
    {"apiGroups": [""], "resources": ["pods", "pods/exec", "pods/log"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    # node capacity and topology labels
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    # the kubelet's endpoints through the API server (node stats)
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
    # its own state and task configuration
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    # disruption budgets of running gangs
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"],
     "verbs": ["get", "list", "create", "update", "patch", "delete"]},
    # deletes a torn-down gang's Workload to release its reserved quota
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["get", "list", "watch", "delete"]},
    # creates its iris-{system,production,interactive,batch} PriorityClasses at startup
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
     "verbs": ["get", "create", "update", "patch", "delete"]},
)


@dataclass(frozen=True)
class ControllerRbac:
    """A controller grant preset: the ClusterRole's rules, and the namespaced Role's (empty:
    no Role/RoleBinding is declared)."""

    cluster_rules: tuple[PolicyRule, ...]
    namespaced_rules: tuple[PolicyRule, ...]


#: ``[conventions] controller_rbac`` → its preset.
CONTROLLER_RBAC: dict[str, ControllerRbac] = {
    "minimal": ControllerRbac(CONTROLLER_CLUSTER_RULES, CONTROLLER_NAMESPACED_RULES),
    "iris": ControllerRbac(IRIS_CLUSTER_RULES, ()),
}


@dataclass(frozen=True)
class BoundRole:
    """A role preset for named users: its rules and the labels of the role and its binding."""

    rules: tuple[PolicyRule, ...]
    labels: dict[str, str] = field(default_factory=dict)


#: ``[conventions] observer_rbac`` → its preset. "marin-grafana": nodes and NodePools read,
#: Marin's labels on the ClusterRole and its binding (marin-community/marin
#: infra/pulumi/src/iac/coreweave/rbac.py@17c9466c ``grafana_observer_manifests`` labels;
#: infra/pulumi/tests/test_coreweave_rbac.py@5206448e asserts the two rules).
OBSERVER_RBAC: dict[str, BoundRole] = {
    "nodes": BoundRole(OBSERVER_RULES),
    "marin-grafana": BoundRole(
        ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
         {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"], "verbs": ["get", "list", "watch"]}),
        {"app.kubernetes.io/name": "marin-grafana", "app.kubernetes.io/component": "k8s-observer"}),
}

# Loom sessions connect to task pods: exec and port-forward (both open with create), nothing
# else — no read or write of any object (marin-community/marin
# infra/pulumi/tests/test_coreweave_rbac.py, the version importing loom_session_manifests).
LOOM_SESSION_RULES: tuple[PolicyRule, ...] = (
    {"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"], "verbs": ["create"]},
)
#: ``[conventions] loom_session_rbac`` → its preset (the same rule; Marin's labels or none).
LOOM_SESSION_RBAC: dict[str, BoundRole] = {
    "plain": BoundRole(LOOM_SESSION_RULES),
    "marin-loom": BoundRole(LOOM_SESSION_RULES, {"app.kubernetes.io/name": "marin-loom",
                                                 "app.kubernetes.io/component": "session-connect"}),
}


@dataclass(frozen=True)
class RbacArgs:
    namespace: str               # kubernetes_provider.namespace
    service_account: str         # provisioning.coreweave.rbac.service_account
    name_prefix: str             # platform.label_prefix (cluster-scoped object names)
    observer_usernames: tuple[str, ...] = ()  # provisioning.coreweave.grafana_observer_rbac.usernames
    role_name: str | None = None              # [conventions] controller_role, filled; None = <prefix>-controller
    observer_role_name: str | None = None     # [conventions] observer_role, filled; None = <prefix>-node-observer
    # [conventions] enable_patch_force: declare the Namespace's default finalizer, which a
    # forced server-side apply would otherwise prune on adoption (marin-community/marin
    # lib/iris/.../k8s/rbac_manifests.py@33283163 namespace_manifest).
    namespace_finalizer: bool = False
    controller: ControllerRbac = CONTROLLER_RBAC["minimal"]   # [conventions] controller_rbac
    observer: BoundRole = OBSERVER_RBAC["nodes"]              # [conventions] observer_rbac
    loom_usernames: tuple[str, ...] = ()      # provisioning.coreweave.loom_session_rbac.usernames
    loom_role_name: str = ""                  # [conventions] loom_session_role, filled; "" = none
    loom: BoundRole = LOOM_SESSION_RBAC["plain"]              # [conventions] loom_session_rbac


def user_subjects(usernames: tuple[str, ...]) -> list[k8s.rbac.v1.SubjectArgsDict]:
    """RBAC ``subjects`` of kind User, in the reviewed config's order (Marin binds its
    usernames in config order too: rbac.py@17c9466c ``grafana_observer_manifests``)."""
    return [{"api_group": "rbac.authorization.k8s.io", "kind": "User", "name": u} for u in usernames]


def _metadata(name: str, labels: dict[str, str], namespace: str | None = None) -> k8s.meta.v1.ObjectMetaArgsDict:
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


class Rbac(pulumi.ComponentResource):
    """Creates the workload Namespace first; every namespaced object depends on it explicitly.

    The Namespace is protected: it holds the running jobs' pods and their Secrets, so a rename
    of ``kubernetes_provider.namespace`` (a delete of the old one) or a ``destroy`` is refused
    by the engine itself (Pulumi "protect"; the plan diff reports it). It depends on
    ``namespace_after`` — the Kueue release: Pulumi deletes a resource's dependents before the
    resource (the engine's delete order is the reverse of the dependency order), so the
    Namespace is deleted while Kueue still runs; pods Kueue admitted carry its finalizer, and
    Kueue's Workloads ``kueue.x-k8s.io/resource-in-use`` (kubernetes-sigs/kueue v0.14.4
    pkg/controller/jobframework/interface.go L229), which only a running Kueue removes — with
    Kueue gone first the Namespace would hang in Terminating. On the first ``up`` the Namespace
    is created after the Kueue release, so no pod is created in it before Kueue's fail-closed
    pod webhook that selects it has endpoints.
    """

    namespace: k8s.core.v1.Namespace

    def __init__(self, name: str, args: RbacArgs, *, provider: k8s.Provider,
                 namespace_after: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(RBAC_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            args.namespace, metadata={"name": args.namespace},
            spec={"finalizers": ["kubernetes"]} if args.namespace_finalizer else None,
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                protect=True, depends_on=list(namespace_after))))
        ids.importable(self.namespace, ids.k8s_cluster_scoped(args.namespace))
        after_ns = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.namespace]))
        sa = k8s.core.v1.ServiceAccount(
            f"{args.namespace}-{args.service_account}",
            metadata={"name": args.service_account, "namespace": args.namespace}, opts=after_ns)
        ids.importable(sa, ids.k8s_namespaced(args.namespace, args.service_account))
        role_name = args.role_name or f"{args.name_prefix}-controller"
        subjects: list[k8s.rbac.v1.SubjectArgsDict] = [
            {"kind": "ServiceAccount", "name": args.service_account, "namespace": args.namespace}]
        if args.controller.namespaced_rules:
            ns_role = k8s.rbac.v1.Role(
                f"{args.namespace}-{role_name}", metadata={"name": role_name, "namespace": args.namespace},
                rules=[_rule_args(r) for r in args.controller.namespaced_rules], opts=after_ns)
            ids.importable(ns_role, ids.k8s_namespaced(args.namespace, role_name))
            ns_binding = k8s.rbac.v1.RoleBinding(
                f"{args.namespace}-{role_name}", metadata={"name": role_name, "namespace": args.namespace},
                role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
                subjects=subjects,
                opts=pulumi.ResourceOptions.merge(after_ns, pulumi.ResourceOptions(depends_on=[ns_role, sa])))
            ids.importable(ns_binding, ids.k8s_namespaced(args.namespace, role_name))
        role = k8s.rbac.v1.ClusterRole(role_name, metadata={"name": role_name},
                                       rules=[_rule_args(r) for r in args.controller.cluster_rules], opts=o)
        ids.importable(role, ids.k8s_cluster_scoped(role_name))
        binding = k8s.rbac.v1.ClusterRoleBinding(
            role_name, metadata={"name": role_name},
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            subjects=subjects,
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[role, sa])))
        ids.importable(binding, ids.k8s_cluster_scoped(role_name))
        if args.observer_usernames:
            obs_name = args.observer_role_name or f"{args.name_prefix}-node-observer"
            obs = k8s.rbac.v1.ClusterRole(obs_name, metadata=_metadata(obs_name, args.observer.labels),
                                          rules=[_rule_args(r) for r in args.observer.rules], opts=o)
            ids.importable(obs, ids.k8s_cluster_scoped(obs_name))
            obs_binding = k8s.rbac.v1.ClusterRoleBinding(
                obs_name, metadata=_metadata(obs_name, args.observer.labels),
                role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": obs_name},
                subjects=user_subjects(args.observer_usernames),
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[obs])))
            ids.importable(obs_binding, ids.k8s_cluster_scoped(obs_name))
        if args.loom_usernames and args.loom_role_name:
            loom_name = args.loom_role_name
            loom = k8s.rbac.v1.Role(
                f"{args.namespace}-{loom_name}", metadata=_metadata(loom_name, args.loom.labels, args.namespace),
                rules=[_rule_args(r) for r in args.loom.rules], opts=after_ns)
            ids.importable(loom, ids.k8s_namespaced(args.namespace, loom_name))
            loom_binding = k8s.rbac.v1.RoleBinding(
                f"{args.namespace}-{loom_name}", metadata=_metadata(loom_name, args.loom.labels, args.namespace),
                role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "Role", "name": loom_name},
                subjects=user_subjects(args.loom_usernames),
                opts=pulumi.ResourceOptions.merge(after_ns, pulumi.ResourceOptions(depends_on=[loom])))
            ids.importable(loom_binding, ids.k8s_namespaced(args.namespace, loom_name))
        self.register_outputs({"namespace": args.namespace, "service_account": args.service_account})
