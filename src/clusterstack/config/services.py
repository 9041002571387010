"""Typed model of ``services.yaml`` at the repository root: the services clusterstack deploys
(reviewed like any config; loaded and resolved by :mod:`clusterstack.deploy.registry`).

Shape::

    services:
      <name>:                         # an RFC 1123 label; not a deploy verb (list, rollout, …)
        project_dir: services/<name>  # the service's Pulumi project (Pulumi.yaml, __main__.py)
        stack: <stack>                # its production stack (Pulumi.<stack>.yaml must exist)
        kind: cloud-run | cloud-run-job | gce-vm | kubernetes | pulumi
        cloud_run:                    # kind cloud-run: the rollback target
          {project: <gcp project>, region: <region>, service: <service name>,
           stack_grants: [roles/run.invoker, roles/iap.httpsResourceAccessor]}
        cloud_run_job:                # kind cloud-run-job: the rollback target
          {project: …, region: …, job: <job name>, run_to_verify: false,
           stack_grants: [roles/run.invoker]}
        gce_vm:                       # kind gce-vm: the rollback target
          {project: …, zone: <zone>, instance: <VM name>, image_key: clusterstack-image,
           activation: watch | restart}
        kubernetes:                   # kind kubernetes: the rollback target
          {context: <kube context> | cluster: <reviewed cluster>, namespace: …, deployment: …}
        health:                       # optional
          timeout_seconds: 300        # bound on "wait until active" and the health check
          poll_seconds: 5
          http:                       # optional HTTP check after activation
            url: https://…            #   cloud-run / gce-vm / pulumi: GET this URL
            service: …, port: …, path: /healthz   # kubernetes: through the API server's service proxy
            expect_status: 200
            expect_json: {status: ready}          # optional: top-level fields the JSON body must have
        secrets:                      # environment of the Pulumi process at rollout time
          NAME: gcp-secret://projects/P/secrets/S/versions/V | env:NAME | file:PATH

A ``kubernetes.cluster`` names a reviewed cluster config (``clusters/<cluster>.yaml``) whose
``platform.coreweave.kube_context`` is used — one source of truth for the context.

Validation is pydantic (``extra="forbid"`` everywhere); errors are ``file:line`` (exit 2).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from clusterstack.config.document import Strict
from clusterstack.config.types import (EnvName, Int, RepoPath, StackName, GcpProjectId, GcpRegion, GcpRole, GcpZone,
                                       NonEmptyStr,
                                       Port, RFC1123_LABEL_RE, Rfc1035Label, Rfc1123Label)
from clusterstack.config.secretspec import SecretSpecField

REGISTRY_FILE = "services.yaml"
VERBS = frozenset({"list", "rollout", "rollback", "history"})
KINDS = ("cloud-run", "cloud-run-job", "gce-vm", "kubernetes", "pulumi")
#: kind → the block that names its rollback target (None: the stack itself)
TARGET_BLOCKS = {"cloud-run": "cloud_run", "cloud-run-job": "cloud_run_job", "gce-vm": "gce_vm",
                 "kubernetes": "kubernetes", "pulumi": None}


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a service (it is used on the command line and as a Kubernetes
    label value: an RFC 1123 label, as the Kubernetes service component requires), or None."""
    if not RFC1123_LABEL_RE.match(name):
        return (f"service name {name!r}: use lower-case letters, digits and - (an RFC 1123 "
                "label: alphanumeric at both ends, 63 characters at most)")
    if name in VERBS:
        return f"service name {name!r} is a deploy verb (deploy {name} would be ambiguous)"
    return None


def _service_name(name: str) -> str:
    problem = name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


#: A registry key: ``clusterstack deploy <name> …``.
ServiceName = Annotated[str, AfterValidator(_service_name)]


INVOKER_ROLE = "roles/run.invoker"
IAP_ACCESSOR_ROLE = "roles/iap.httpsResourceAccessor"


class CloudRunTarget(Strict):
    """A Cloud Run service (Cloud Run Admin API v2 resource name parts). ``stack_grants``: the
    roles on this service whose members the service's own stack declares — by default the IAP
    service agent's ``roles/run.invoker`` and the IAP accessors
    (:class:`~clusterstack.components.services.cloudrun.CloudRunService`, and Marin's
    ``iac.gcp.cloud_run.CloudRunService``, declare both); the IAM file may hold no grant of
    these roles on it (:mod:`clusterstack.validation.ownership`: one side owns each grant)."""

    project: GcpProjectId
    region: GcpRegion
    # Cloud Run service names: a letter first, ≤ 49 characters (Cloud Run "Service names").
    service: str = Field(pattern=r"\A[a-z]([-a-z0-9]{0,47}[a-z0-9])?\Z")
    stack_grants: list[GcpRole] = Field(default_factory=lambda: [INVOKER_ROLE, IAP_ACCESSOR_ROLE])

    @property
    def resource_name(self) -> str:
        """``projects/<p>/locations/<r>/services/<s>``."""
        return f"projects/{self.project}/locations/{self.region}/services/{self.service}"


class CloudRunJobTarget(Strict):
    """A Cloud Run job (Cloud Run Admin API v2 ``projects/<p>/locations/<r>/jobs/<job>``).
    ``run_to_verify``: after a rollout or rollback, run the job once and require that
    execution to succeed (off by default: a job's run may be long or must not be repeated,
    e.g. a scheduled turn; then health is the job's Ready condition and, for a past revision,
    the outcome of its executions). ``stack_grants``: the roles on this job whose members the
    service's stack declares (default ``roles/run.invoker``: the trigger's service account, as
    :class:`~clusterstack.components.services.cloudrunjob.CloudRunJob` declares it); ``[]`` when
    the IAM file owns every grant on the job (Marin's ``ScheduledCloudRunJob`` declares no IAM:
    ``infra/pulumi/src/iac/gcp/cloud_run_job.py``@107c2918)."""

    project: GcpProjectId
    region: GcpRegion
    # Cloud Run job names: the rule of service names (a letter first, ≤ 49 characters).
    job: str = Field(pattern=r"\A[a-z]([-a-z0-9]{0,47}[a-z0-9])?\Z")
    run_to_verify: bool = False
    stack_grants: list[GcpRole] = Field(default_factory=lambda: [INVOKER_ROLE])

    @property
    def resource_name(self) -> str:
        """``projects/<p>/locations/<r>/jobs/<job>``."""
        return f"projects/{self.project}/locations/{self.region}/jobs/{self.job}"


class GceVmTarget(Strict):
    """A service on one Compute Engine VM whose container image is named by the instance
    metadata key ``image_key`` (``clusterstack-image`` for
    :class:`~clusterstack.components.services.gce.GceVmService`; e.g. ``loom-image`` for a VM
    another program declares). ``activation``: how the VM picks up a changed image —
    ``watch`` (the component's launcher watches the key and reports in guest attributes,
    no reboot) or ``restart`` (the VM's startup script reads the key at boot: stop, then
    start the instance; needs ``health.http``)."""

    project: GcpProjectId
    zone: GcpZone
    # Compute Engine instance names: RFC 1035 labels (Compute Engine "Resource naming").
    instance: Rfc1035Label
    image_key: str = Field(default="clusterstack-image", pattern=r"\A[a-zA-Z0-9_-]{1,128}\Z")
    activation: Literal["watch", "restart"] = "watch"


class KubernetesTarget(Strict):
    """A Deployment: exactly one of ``context`` (a kubeconfig context) or ``cluster`` (a
    reviewed cluster whose ``platform.coreweave.kube_context`` is the context)."""

    context: NonEmptyStr | None = None
    cluster: Rfc1123Label | None = None   # a cluster name (its file: clusters/<cluster>.yaml)
    namespace: Rfc1123Label        # Kubernetes namespaces are RFC 1123 labels
    deployment: Rfc1123Label       # the Deployment's name (components.services.kubernetes)

    @model_validator(mode="after")
    def _one_context(self) -> "KubernetesTarget":
        # rule: one source of truth for the context — name it directly or through the cluster
        if (self.context is None) == (self.cluster is None):
            raise ValueError("give exactly one of context (a kube context) or cluster (a reviewed cluster)")
        return self


class HttpCheck(Strict):
    """An HTTP GET that must answer ``expect_status``. ``url`` for cloud-run and pulumi
    services; ``service`` + ``port`` + ``path`` for kubernetes (sent through the API server's
    service proxy, ``/api/v1/namespaces/<ns>/services/<service>:<port>/proxy/<path>``, so no
    network route to the cluster is needed beyond the API server)."""

    url: str | None = Field(default=None, pattern=r"\Ahttps?://[^\s/]+(/\S*)?\Z")
    service: Rfc1035Label | None = None   # Kubernetes Service names are RFC 1035 labels
    port: Port | None = None
    path: str | None = Field(default=None, pattern=r"\A/\S*\Z")
    expect_status: Int = Field(default=200, ge=100, le=599)
    # top-level fields the JSON body must hold, e.g. {status: ready} (Marin's Loom readiness,
    # infra/deploy/src/marin_deploy/loom.py@52e58bb8 _require_ready)
    expect_json: dict[NonEmptyStr, str | int | bool] | None = None


class Health(Strict):
    """``timeout_seconds``: how long to wait for a revision to become active and healthy;
    ``poll_seconds``: how often to look."""

    timeout_seconds: Int = Field(default=300, ge=1, le=3600)
    poll_seconds: float = Field(default=5.0, gt=0, le=60)
    http: HttpCheck | None = None


class Service(Strict):
    """One registry entry (see the module docstring)."""

    project_dir: RepoPath   # relative to the repository root, inside it
    stack: StackName
    kind: Literal["cloud-run", "cloud-run-job", "gce-vm", "kubernetes", "pulumi"]
    cloud_run: CloudRunTarget | None = None
    cloud_run_job: CloudRunJobTarget | None = None
    gce_vm: GceVmTarget | None = None
    kubernetes: KubernetesTarget | None = None
    health: Health = Health()
    secrets: dict[EnvName, SecretSpecField] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _kind_blocks(self) -> "Service":
        # rule: the rollback target block matches the kind, and only that block is present
        want = TARGET_BLOCKS[self.kind]
        if want is not None and getattr(self, want) is None:
            raise ValueError(f"kind {self.kind} needs a {want} block (its rollback target)")
        for block in ("cloud_run", "cloud_run_job", "gce_vm", "kubernetes"):
            if block != want and getattr(self, block) is not None:
                raise ValueError(f"kind {self.kind} takes no {block} block")
        http = self.health.http
        if http is not None:
            k8s_form = http.service is not None or http.port is not None or http.path is not None
            if self.kind == "kubernetes":
                if http.url is not None or None in (http.service, http.port, http.path):
                    raise ValueError("a kubernetes health check needs service, port and path (no url)")
                if http.expect_json is not None:
                    raise ValueError("expect_json is checked on a url health check only")
            elif self.kind == "cloud-run-job":
                raise ValueError("a cloud-run-job has no HTTP health check (it serves no requests); "
                                 "set cloud_run_job.run_to_verify to require a successful run")
            elif http.url is None or k8s_form:
                raise ValueError(f"a {self.kind} health check needs url (no service/port/path)")
        if self.gce_vm is not None and self.gce_vm.activation == "restart" and (http is None or http.url is None):
            # rule: a restarted VM reports nothing to the API; only its own endpoint says it serves
            raise ValueError("gce_vm.activation restart needs health.http.url (the VM's startup script "
                             "reports no health to the Compute API; its endpoint is the only check)")
        return self


class RegistryFile(Strict):
    """The whole ``services.yaml``."""

    services: dict[ServiceName, Service] = Field(default_factory=dict)
