"""Namespace, the controller's ServiceAccount and ClusterRole(Binding), and an optional
read-only node observer role bound to named users (e.g. a Grafana token user)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import RBAC_COMPONENT

# Rule source: what the scheduler's controller does on a CKS cluster — manages NodePools,
# runs and inspects pods (exec, logs), reads nodes, keeps configmaps, reads/updates Kueue
# workloads, and reads priority classes.
CONTROLLER_RULES: tuple[dict, ...] = (
    {"apiGroups": ["compute.coreweave.com"], "resources": ["nodepools"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/exec", "pods/log"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "workloads/status"],
     "verbs": ["get", "list", "watch", "update", "patch"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
     "verbs": ["get", "list", "watch"]},
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


class Rbac(pulumi.ComponentResource):
    """Creates the namespace first; every namespaced object depends on it via parent order."""

    namespace: k8s.core.v1.Namespace

    def __init__(self, name: str, args: RbacArgs, *, provider: k8s.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(RBAC_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            args.namespace, metadata={"name": args.namespace}, opts=o)
        ids.importable(self.namespace, ids.k8s_cluster_scoped(args.namespace))
        after_ns = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.namespace]))
        sa = k8s.core.v1.ServiceAccount(
            f"{args.namespace}-{args.service_account}",
            metadata={"name": args.service_account, "namespace": args.namespace}, opts=after_ns)
        ids.importable(sa, ids.k8s_namespaced(args.namespace, args.service_account))
        role_name = f"{args.name_prefix}-controller"
        role = k8s.rbac.v1.ClusterRole(role_name, metadata={"name": role_name},
                                       rules=list(CONTROLLER_RULES), opts=o)
        ids.importable(role, ids.k8s_cluster_scoped(role_name))
        binding = k8s.rbac.v1.ClusterRoleBinding(
            role_name, metadata={"name": role_name},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            subjects=[{"kind": "ServiceAccount", "name": args.service_account,
                       "namespace": args.namespace}],
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[role, sa])))
        ids.importable(binding, ids.k8s_cluster_scoped(role_name))
        if args.observer_usernames:
            obs_name = f"{args.name_prefix}-node-observer"
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
