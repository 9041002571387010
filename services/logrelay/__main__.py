"""logrelay: the single-writer log server on a GPU cluster (clusterstack example service).

The stack config names the cluster; its reviewed config (``clusters/<cluster>.yaml``) gives
the kube context, so the context is written in one place. ``clusterstack deploy logrelay
rollout`` adds ``logrelay:sourceRevision`` and ``logrelay:changeCause`` to a temporary copy of
the stack file; they land on the pod template and the Deployment (``deploy logrelay history``).
"""

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.components.services.kubernetes import KubernetesService, KubernetesServiceArgs, VolumeSpec
from clusterstack.components.services.marks import UNRELEASED
from clusterstack.validation import load_cluster
from clusterstack.pulumi import importids as ids
from clusterstack.workspace import Workspace

cfg = pulumi.Config()
workspace = Workspace.discover(Path(__file__).resolve().parent)
cluster = load_cluster(workspace, cfg.require("cluster"), references=False).config
if cluster.platform.coreweave is None:
    raise ValueError(f"logrelay:cluster {cluster.name} is not a CoreWeave cluster")
namespace = cfg.require("namespace")

# kubeconfig "" keeps any machine-local kubeconfig path out of state (as infra/ does).
provider = k8s.Provider("k8s", context=cluster.platform.coreweave.kube_context, kubeconfig="")
ns = k8s.core.v1.Namespace(namespace, metadata={"name": namespace},
                           opts=pulumi.ResourceOptions(provider=provider))
ids.importable(ns, ids.k8s_cluster_scoped(namespace))

volume = cfg.get_object("volume")
name = cfg.get("name") or pulumi.get_project()
relay = KubernetesService("logrelay", KubernetesServiceArgs(
    namespace=namespace,
    name=name,
    image=cfg.require("image"),
    port=cfg.require_int("port"),
    env_secret=cfg.get("envSecret"),
    args=tuple(cfg.get_object("args") or ()),
    volume=VolumeSpec(size=volume["size"], mount_path=volume["mountPath"],
                      storage_class=volume.get("storageClass")) if volume else None,
    source_revision=cfg.get("sourceRevision") or UNRELEASED,
    change_cause=cfg.get("changeCause") or "",
), provider=provider, opts=pulumi.ResourceOptions(depends_on=[ns]))

pulumi.export("service_host", f"{name}.{namespace}.svc.cluster.local")
