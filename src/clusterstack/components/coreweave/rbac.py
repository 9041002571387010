"""Namespace, the controller's ServiceAccount, its namespaced Role(Binding) and narrow
ClusterRole(Binding), and an optional read-only node observer role bound to named users (e.g. a
Grafana token user)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import RBAC_COMPONENT

# Least privilege (Kubernetes "Using RBAC Authorization"; "RBAC Good Practices": namespaced
# Roles over ClusterRoles, no wildcard verbs). Each rule names the controller action needing it.
# NodePools are read only: Pulumi owns their specs (protect=True) and CoreWeave's autoscaler owns
# targetNodes; a controller able to update or delete them could fight Pulumi or delete the fleet.
CONTROLLER_NAMESPACED_RULES: tuple[dict, ...] = (
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
CONTROLLER_CLUSTER_RULES: tuple[dict, ...] = (
    # see node capacity, readiness and topology labels when placing gangs (nodes are cluster-scoped)
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    # resolve a job's priority class name to its value (PriorityClasses are cluster-scoped)
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    # read the scale groups' NodePools (size, conditions) to report capacity — read only
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"], "verbs": ["get", "list", "watch"]},
)
OBSERVER_RULES: tuple[dict, ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
)


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
            **({"spec": {"finalizers": ["kubernetes"]}} if args.namespace_finalizer else {}),
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                protect=True, depends_on=list(namespace_after))))
        ids.importable(self.namespace, ids.k8s_cluster_scoped(args.namespace))
        after_ns = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.namespace]))
        sa = k8s.core.v1.ServiceAccount(
            f"{args.namespace}-{args.service_account}",
            metadata={"name": args.service_account, "namespace": args.namespace}, opts=after_ns)
        ids.importable(sa, ids.k8s_namespaced(args.namespace, args.service_account))
        role_name = args.role_name or f"{args.name_prefix}-controller"
        subjects = [{"kind": "ServiceAccount", "name": args.service_account, "namespace": args.namespace}]
        ns_role = k8s.rbac.v1.Role(
            f"{args.namespace}-{role_name}", metadata={"name": role_name, "namespace": args.namespace},
            rules=list(CONTROLLER_NAMESPACED_RULES), opts=after_ns)
        ids.importable(ns_role, ids.k8s_namespaced(args.namespace, role_name))
        ns_binding = k8s.rbac.v1.RoleBinding(
            f"{args.namespace}-{role_name}", metadata={"name": role_name, "namespace": args.namespace},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
            subjects=subjects,
            opts=pulumi.ResourceOptions.merge(after_ns, pulumi.ResourceOptions(depends_on=[ns_role, sa])))
        ids.importable(ns_binding, ids.k8s_namespaced(args.namespace, role_name))
        role = k8s.rbac.v1.ClusterRole(role_name, metadata={"name": role_name},
                                       rules=list(CONTROLLER_CLUSTER_RULES), opts=o)
        ids.importable(role, ids.k8s_cluster_scoped(role_name))
        binding = k8s.rbac.v1.ClusterRoleBinding(
            role_name, metadata={"name": role_name},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            subjects=subjects,
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[role, sa])))
        ids.importable(binding, ids.k8s_cluster_scoped(role_name))
        if args.observer_usernames:
            obs_name = args.observer_role_name or f"{args.name_prefix}-node-observer"
            obs = k8s.rbac.v1.ClusterRole(obs_name, metadata={"name": obs_name},
                                          rules=list(OBSERVER_RULES), opts=o)
            ids.importable(obs, ids.k8s_cluster_scoped(obs_name))
            obs_binding = k8s.rbac.v1.ClusterRoleBinding(
                obs_name, metadata={"name": obs_name},
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": obs_name},
                subjects=[{"kind": "User", "name": u, "apiGroup": "rbac.authorization.k8s.io"}
                          for u in sorted(args.observer_usernames)],
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[obs])))
            ids.importable(obs_binding, ids.k8s_cluster_scoped(obs_name))
        self.register_outputs({"namespace": args.namespace, "service_account": args.service_account})
