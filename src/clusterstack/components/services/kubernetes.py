"""A single-writer server on Kubernetes (e.g. the log relay on each GPU cluster).

Sources (Kubernetes documentation, "Deployments", "Configure Liveness, Readiness and Startup
Probes", "Service", "Persistent Volumes"):

- ``strategy: Recreate`` — "All existing Pods are killed before new ones are created": a
  single writer must never run twice, and its ReadWriteOnce volume cannot be mounted by an
  old and a new pod on different nodes at once (a rolling update would deadlock on it).
- ``revisionHistoryLimit: 10`` — the number of old ReplicaSets kept for rollback; they are
  what ``clusterstack deploy <service> history`` lists and ``rollback`` activates (as
  ``kubectl rollout undo --to-revision`` does).
- startup, liveness and readiness probes on one HTTP health path: the startup probe holds the
  other two off while the server starts (up to ``period × failureThreshold``), readiness
  gates the Service endpoints, liveness restarts a hung server.
- ``envFrom`` an *existing* Secret by name: the values are created out of band (or by an
  operator) and never pass through Pulumi — no input, no state.
- the pod template carries the source commit (:data:`marks.SOURCE_REVISION`), so each
  ReplicaSet records the commit it was rolled out from; the Deployment carries the rollout
  message as ``kubernetes.io/change-cause``, which the deployment controller copies to the new
  ReplicaSet (``kubectl rollout history`` CHANGE-CAUSE).
- the optional PVC is ``protect=True``: the engine refuses to delete it (the relay's data),
  and the guard blocks any delete/replace of a protected resource.
- images by digest only: a rollback returns to the exact bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clusterstack.components.services import marks
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import KUBERNETES_SERVICE_COMPONENT

REVISION_HISTORY_LIMIT = 10
_DNS_LABEL = re.compile(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


@dataclass(frozen=True)
class VolumeSpec:
    size: str                        # <service>:volume.size — e.g. "50Gi"
    mount_path: str                  # <service>:volume.mountPath
    storage_class: str | None = None  # <service>:volume.storageClass (None: the cluster default)


@dataclass(frozen=True)
class KubernetesServiceArgs:
    namespace: str                   # <service>:namespace
    name: str                        # <service>:name — Deployment, Service and PVC name prefix
    image: str                       # <service>:image — by digest (…@sha256:…)
    port: int                        # <service>:port — container port, also the Service port
    env_secret: str | None = None    # <service>:envSecret — an existing Secret, mounted via envFrom
    env: tuple[tuple[str, str], ...] = ()  # <service>:env — plain (non-secret) variables
    args: tuple[str, ...] = ()       # <service>:args — container arguments
    health_path: str = "/healthz"    # <service>:healthPath — path of all three probes
    cpu: str = "500m"                # <service>:cpu — request
    memory: str = "1Gi"              # <service>:memory — request and limit
    volume: VolumeSpec | None = None  # <service>:volume — optional protected PVC
    source_revision: str = marks.UNRELEASED  # <service>:sourceRevision — set by `deploy rollout`
    change_cause: str = ""           # <service>:changeCause — the rollout message, set by `deploy rollout`

    def __post_init__(self) -> None:
        for what, value in (("namespace", self.namespace), ("name", self.name)):
            if not _DNS_LABEL.match(value):
                raise ValueError(f"{what} {value!r} is not a DNS label (RFC 1123)")
        if not marks.digest_pinned(self.image):
            raise ValueError(f"image {self.image!r} is not pinned by digest; use <repository>@sha256:<digest>")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port {self.port} is out of range 1–65535")
        if not self.health_path.startswith("/"):
            raise ValueError(f"healthPath {self.health_path!r} must start with /")

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": self.name, "app.kubernetes.io/managed-by": "clusterstack"}

    @property
    def selector(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": self.name}


class KubernetesService(pulumi.ComponentResource):
    """PVC (optional, protected) → Deployment → ClusterIP Service. Outputs: ``service_host``
    (the in-cluster DNS name), ``port``."""

    deployment: k8s.apps.v1.Deployment
    service: k8s.core.v1.Service
    volume: k8s.core.v1.PersistentVolumeClaim | None

    def __init__(self, name: str, args: KubernetesServiceArgs, *, provider: k8s.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KUBERNETES_SERVICE_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        a = args
        self.volume = None
        volumes: list[k8s.core.v1.VolumeArgsDict] = []
        mounts: list[k8s.core.v1.VolumeMountArgsDict] = []
        if a.volume is not None:
            claim = f"{a.name}-data"
            claim_spec: k8s.core.v1.PersistentVolumeClaimSpecArgsDict = {
                "access_modes": ["ReadWriteOnce"], "resources": {"requests": {"storage": a.volume.size}}}
            if a.volume.storage_class:
                claim_spec["storage_class_name"] = a.volume.storage_class
            self.volume = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-data",
                metadata={"name": claim, "namespace": a.namespace, "labels": a.labels},
                spec=claim_spec,
                opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(protect=True)))
            ids.importable(self.volume, ids.k8s_namespaced(a.namespace, claim))
            volumes.append({"name": "data", "persistent_volume_claim": {"claim_name": claim}})
            mounts.append({"name": "data", "mount_path": a.volume.mount_path})

        def probe(period: int, failures: int) -> k8s.core.v1.ProbeArgsDict:
            return {"http_get": {"path": a.health_path, "port": "http"},
                    "period_seconds": period, "failure_threshold": failures, "timeout_seconds": 2}

        container: k8s.core.v1.ContainerArgsDict = {
            "name": a.name, "image": a.image, "args": list(a.args),
            "ports": [{"name": "http", "container_port": a.port}],
            "env": [{"name": k, "value": v} for k, v in a.env],
            "env_from": [{"secret_ref": {"name": a.env_secret}}] if a.env_secret else [],
            "startup_probe": probe(5, 60),     # up to 5 minutes to start
            "readiness_probe": probe(5, 2),
            "liveness_probe": probe(10, 3),
            "resources": {"requests": {"cpu": a.cpu, "memory": a.memory},
                          "limits": {"memory": a.memory}},
            "volume_mounts": mounts,
        }
        deployment_annotations = {marks.CHANGE_CAUSE: a.change_cause} if a.change_cause else {}
        self.deployment = k8s.apps.v1.Deployment(
            name,
            metadata={"name": a.name, "namespace": a.namespace, "labels": a.labels,
                      "annotations": deployment_annotations},
            spec={
                "replicas": 1,
                "revision_history_limit": REVISION_HISTORY_LIMIT,
                "strategy": {"type": "Recreate"},
                "selector": {"match_labels": a.selector},
                "template": {
                    "metadata": {"labels": a.labels,
                                 "annotations": {marks.SOURCE_REVISION: a.source_revision}},
                    "spec": {"containers": [container], "volumes": volumes},
                },
            },
            opts=pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                depends_on=[self.volume] if self.volume is not None else [])))
        ids.importable(self.deployment, ids.k8s_namespaced(a.namespace, a.name))
        self.service = k8s.core.v1.Service(
            f"{name}-svc",
            metadata={"name": a.name, "namespace": a.namespace, "labels": a.labels},
            spec={"type": "ClusterIP", "selector": a.selector,
                  "ports": [{"name": "http", "port": a.port, "target_port": "http"}]},
            opts=o)
        ids.importable(self.service, ids.k8s_namespaced(a.namespace, a.name))
        self.register_outputs({"service_host": f"{a.name}.{a.namespace}.svc.cluster.local",
                               "port": a.port})
