"""Teams: a Namespace per team namespace, one ClusterQueue per team in the cluster's cohort, and
one LocalQueue per team namespace naming it — exactly what :func:`clusterstack.derive.teams.derive_teams`
returns. Declared beside the :class:`~clusterstack.components.coreweave.kueue.Kueue` component
(whose flavors the team queues list, and whose release must run before any queue exists); a
cluster without teams declares none of this.

Sources: Kueue v0.14.4 "Cluster Queue" (cohort, borrowingLimit, lendingLimit, fairSharing,
preemption: the ClusterQueue CRD, ../shared/reference/kueue-v0.14.4/config/components/crd/
bases/kueue.x-k8s.io_clusterqueues.yaml) and "Local Queue" (``spec.clusterQueue``). The
ClusterQueue's ``spec`` is rendered by :func:`clusterstack.components.coreweave.kueue.cluster_queue_spec`,
the one renderer of a queue. Each team queue is deleted before its flavors
(``depends_on``), and — like the cluster's queue — only when no workload holds quota in it
(kueue pkg/controller/core/clusterqueue_controller.go L160-170): drain a team before removing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.components.coreweave.kueue import cluster_queue_spec
from clusterstack.derive.teams import TeamsSpec
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE_KIND, KUEUE_LOCAL_QUEUE_KIND, TEAMS_COMPONENT


@dataclass(frozen=True)
class TeamsArgs:
    teams: TeamsSpec      # derive.teams.derive_teams(config, conventions)


class Teams(pulumi.ComponentResource):
    """The team namespaces, team ClusterQueues and their LocalQueues."""

    def __init__(self, name: str, args: TeamsArgs, *, provider: k8s.Provider,
                 after: Sequence[pulumi.Resource] = (), flavors: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TEAMS_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        # Namespaces after the Kueue release (as the workload namespace: components/coreweave/
        # rbac.py), so Pulumi deletes them while Kueue still runs and can drop its finalizers.
        namespaces: dict[str, k8s.core.v1.Namespace] = {}
        for ns in args.teams.namespaces:
            declared = k8s.core.v1.Namespace(ns, metadata={"name": ns}, opts=pulumi.ResourceOptions.merge(
                o, pulumi.ResourceOptions(protect=True, depends_on=list(after))))
            ids.importable(declared, ids.k8s_cluster_scoped(ns))
            namespaces[ns] = declared
        queues: dict[str, k8s.apiextensions.CustomResource] = {}
        for q in args.teams.queues:
            queue = k8s.apiextensions.CustomResource(
                q.name, api_version=KUEUE_CLUSTER_QUEUE_KIND.api_version, kind=KUEUE_CLUSTER_QUEUE_KIND.kind,
                metadata={"name": q.name, "labels": dict(q.labels)}, spec=cluster_queue_spec(q),
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                    depends_on=[*after, *flavors], delete_before_replace=True)))
            ids.importable(queue, ids.k8s_cluster_scoped(q.name))
            queues[q.name] = queue
        for lq in args.teams.local_queues:
            local = k8s.apiextensions.CustomResource(
                f"{lq.namespace}-{lq.name}", api_version=KUEUE_LOCAL_QUEUE_KIND.api_version,
                kind=KUEUE_LOCAL_QUEUE_KIND.kind,
                metadata={"name": lq.name, "namespace": lq.namespace}, spec={"clusterQueue": lq.cluster_queue},
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                    depends_on=[queues[lq.cluster_queue], namespaces[lq.namespace]])))
            ids.importable(local, ids.k8s_namespaced(lq.namespace, lq.name))
        self.register_outputs({"cohort": args.teams.cohort,
                               "cluster_queues": [q.name for q in args.teams.queues]})
