"""Typed model of ``services.yaml`` at the repository root: the services clusterstack deploys
(reviewed like any config; loaded and resolved by :mod:`clusterstack.deploy.registry`).

Shape::

    services:
      <name>:                         # an RFC 1123 label; not a deploy verb (list, rollout, …)
        project_dir: services/<name>  # the service's Pulumi project (Pulumi.yaml, __main__.py)
        stack: <stack>                # its production stack (Pulumi.<stack>.yaml must exist)
        kind: cloud-run | kubernetes | pulumi
        cloud_run:                    # kind cloud-run: the rollback target
          {project: <gcp project>, region: <region>, service: <service name>}
        kubernetes:                   # kind kubernetes: the rollback target
          {context: <kube context> | cluster: <reviewed cluster>, namespace: …, deployment: …}
        health:                       # optional
          timeout_seconds: 300        # bound on "wait until active" and the health check
          poll_seconds: 5
          http:                       # optional HTTP check after activation
            url: https://…            #   cloud-run / pulumi: GET this URL
            service: …, port: …, path: /healthz   # kubernetes: through the API server's service proxy
            expect_status: 200
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
from clusterstack.config.types import (EnvName, Int, RepoPath, StackName, GcpProjectId, GcpRegion, NonEmptyStr, Port,
                                       RFC1123_LABEL_RE, Rfc1035Label, Rfc1123Label)
from clusterstack.secrets import SecretSpecField

REGISTRY_FILE = "services.yaml"
VERBS = frozenset({"list", "rollout", "rollback", "history"})
KINDS = ("cloud-run", "kubernetes", "pulumi")


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


class CloudRunTarget(Strict):
    """A Cloud Run service (Cloud Run Admin API v2 resource name parts)."""

    project: GcpProjectId
    region: GcpRegion
    # Cloud Run service names: a letter first, ≤ 49 characters (Cloud Run "Service names").
    service: str = Field(pattern=r"\A[a-z]([-a-z0-9]{0,47}[a-z0-9])?\Z")

    @property
    def resource_name(self) -> str:
        """``projects/<p>/locations/<r>/services/<s>``."""
        return f"projects/{self.project}/locations/{self.region}/services/{self.service}"


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
    kind: Literal["cloud-run", "kubernetes", "pulumi"]
    cloud_run: CloudRunTarget | None = None
    kubernetes: KubernetesTarget | None = None
    health: Health = Health()
    secrets: dict[EnvName, SecretSpecField] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _kind_blocks(self) -> "Service":
        # rule: the rollback target block matches the kind, and only that block is present
        want = {"cloud-run": "cloud_run", "kubernetes": "kubernetes", "pulumi": None}[self.kind]
        for block in ("cloud_run", "kubernetes"):
            present = getattr(self, block) is not None
            if block == want and not present:
                raise ValueError(f"kind {self.kind} needs a {block} block (its rollback target)")
            if block != want and present:
                raise ValueError(f"kind {self.kind} takes no {block} block")
        http = self.health.http
        if http is not None:
            k8s_form = http.service is not None or http.port is not None or http.path is not None
            if self.kind == "kubernetes":
                if http.url is not None or None in (http.service, http.port, http.path):
                    raise ValueError("a kubernetes health check needs service, port and path (no url)")
            elif http.url is None or k8s_form:
                raise ValueError(f"a {self.kind} health check needs url (no service/port/path)")
        return self


class RegistryFile(Strict):
    """The whole ``services.yaml``."""

    services: dict[ServiceName, Service] = Field(default_factory=dict)
