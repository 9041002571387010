"""The service registry: ``services.yaml`` at the repository root (reviewed like any config).

Shape::

    services:
      <name>:                         # [a-z][a-z0-9-]*; not a deploy verb (list, rollout, …)
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

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from clusterstack.config.loader import format_path, locate
from clusterstack.errors import ConfigError, Problem
from clusterstack.secrets import SecretSpecField
from clusterstack.workspace import Workspace

REGISTRY_FILE = "services.yaml"
VERBS = frozenset({"list", "rollout", "rollback", "history"})
KINDS = ("cloud-run", "kubernetes", "pulumi")

_DNS_LABEL = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"  # RFC 1123 label (Kubernetes object names)

_HINTS = {
    "missing": "add this field",
    "extra_forbidden": "remove it or fix its spelling; every field of services.yaml is strict",
    "literal_error": "use one of the allowed values",
    "string_pattern_mismatch": "fix the value's format",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CloudRunTarget(_Strict):
    """A Cloud Run service (Cloud Run Admin API v2 resource name parts)."""

    project: str = Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
    region: str = Field(pattern=r"^[a-z]+-[a-z]+[0-9]$")
    service: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,47}[a-z0-9])?$")

    @property
    def resource_name(self) -> str:
        """``projects/<p>/locations/<r>/services/<s>``."""
        return f"projects/{self.project}/locations/{self.region}/services/{self.service}"


class KubernetesTarget(_Strict):
    """A Deployment: exactly one of ``context`` (a kubeconfig context) or ``cluster`` (a
    reviewed cluster whose ``platform.coreweave.kube_context`` is the context)."""

    context: str | None = Field(default=None, min_length=1)
    cluster: str | None = Field(default=None, min_length=1)
    namespace: str = Field(pattern=_DNS_LABEL)
    deployment: str = Field(pattern=_DNS_LABEL)

    @model_validator(mode="after")
    def _one_context(self) -> "KubernetesTarget":
        # rule: one source of truth for the context — name it directly or through the cluster
        if (self.context is None) == (self.cluster is None):
            raise ValueError("give exactly one of context (a kube context) or cluster (a reviewed cluster)")
        return self


class HttpCheck(_Strict):
    """An HTTP GET that must answer ``expect_status``. ``url`` for cloud-run and pulumi
    services; ``service`` + ``port`` + ``path`` for kubernetes (sent through the API server's
    service proxy, ``/api/v1/namespaces/<ns>/services/<service>:<port>/proxy/<path>``, so no
    network route to the cluster is needed beyond the API server)."""

    url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/\S*)?$")
    service: str | None = Field(default=None, pattern=_DNS_LABEL)
    port: int | None = Field(default=None, ge=1, le=65535)
    path: str | None = Field(default=None, pattern=r"^/\S*$")
    expect_status: int = Field(default=200, ge=100, le=599)


class Health(_Strict):
    """``timeout_seconds``: how long to wait for a revision to become active and healthy;
    ``poll_seconds``: how often to look."""

    timeout_seconds: int = Field(default=300, ge=1, le=3600)
    poll_seconds: float = Field(default=5.0, gt=0, le=60)
    http: HttpCheck | None = None


class Service(_Strict):
    """One registry entry (see the module docstring)."""

    project_dir: str = Field(min_length=1)
    stack: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["cloud-run", "kubernetes", "pulumi"]
    cloud_run: CloudRunTarget | None = None
    kubernetes: KubernetesTarget | None = None
    health: Health = Health()
    secrets: dict[str, SecretSpecField] = Field(default_factory=dict)

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
        for name in self.secrets:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
                raise ValueError(f"secrets: {name!r} is not an environment variable name")
        return self


class RegistryFile(_Strict):
    services: dict[str, Service] = Field(default_factory=dict)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a service (it is used on the command line and as a
    Kubernetes-style label), or None."""
    if not re.match(_DNS_LABEL, name):
        return f"service name {name!r}: use lower-case letters, digits and -"
    if name in VERBS:
        return f"service name {name!r} is a deploy verb (deploy {name} would be ambiguous)"
    return None


@dataclass(frozen=True)
class ServiceEntry:
    """A validated registry entry with its resolved paths. ``project_dir`` is absolute;
    ``line`` is the entry's line in ``services.yaml``; ``kube_context`` is resolved for
    kubernetes services (from ``context`` or the named cluster's config) and
    ``kube_context_source`` says where it was read, for error messages (e.g.
    ``clusters/cw-demo-h100.yaml: platform.coreweave.kube_context (services.yaml:
    services.logrelay.kubernetes.cluster)``)."""

    name: str
    spec: Service
    project_dir: Path
    file: Path
    line: int | None
    kube_context: str | None = None
    kube_context_source: str | None = None

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def stack(self) -> str:
        return self.spec.stack

    @property
    def stack_file(self) -> Path:
        return self.project_dir / f"Pulumi.{self.spec.stack}.yaml"

    def target_text(self) -> str:
        """One-line description of the rollback target (for ``deploy list``)."""
        if self.spec.cloud_run is not None:
            c = self.spec.cloud_run
            return f"{c.project}/{c.region}/{c.service}"
        if self.spec.kubernetes is not None:
            k = self.spec.kubernetes
            return f"{self.kube_context}/{k.namespace}/{k.deployment}"
        return f"stack {self.spec.stack}"


@dataclass(frozen=True)
class Registry:
    """The loaded registry: entries by name, sorted."""

    file: Path
    services: dict[str, ServiceEntry]

    def get(self, name: str) -> ServiceEntry:
        """The entry for ``name``; raises ConfigError listing the known services."""
        if name not in self.services:
            known = ", ".join(self.services) or "none"
            raise ConfigError(f"unknown service {name!r}", f"known services: {known} "
                              f"(add it to {self.file.name})", file=self.file, field="services")
        return self.services[name]


def _yaml(text: str, path: Path, *, roundtrip: bool) -> Any:
    yaml = YAML(typ="rt" if roundtrip else "safe")
    yaml.allow_duplicate_keys = False
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = (exc.problem or "invalid YAML").strip()
        raise ConfigError(f"invalid YAML: {what}", "fix the YAML syntax", file=path,
                          line=mark.line + 1 if mark is not None else None) from None


def load_registry(ws: Workspace) -> Registry:
    """Load and validate ``<root>/services.yaml``.

    Checks beyond the model: the project directory exists with a ``Pulumi.yaml`` and the
    stack's ``Pulumi.<stack>.yaml``; a ``kubernetes.cluster`` is a reviewed cluster with a
    CoreWeave kube context. Raises ConfigError listing every problem (``file:line``).
    """
    path = ws.root / REGISTRY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no {REGISTRY_FILE}", "create it to register services (see "
                          "docs/deploying-services.md)", file=path) from None
    data = _yaml(text, path, roundtrip=False)
    if data is None:
        data = {}
    positioned: list[Any] = []

    def located(p: tuple, message: str, hint: str) -> Problem:
        if not positioned:
            positioned.append(_yaml(text, path, roundtrip=True))
        kept, line = locate(positioned[0], p)
        return Problem(message=message, hint=hint, file=path, line=line, field=format_path(kept))

    if not isinstance(data, dict):
        raise ConfigError("the file must be a mapping with a services: key",
                          "start from the shipped services.yaml", file=path, line=1)
    try:
        model = RegistryFile.model_validate(data)
    except ValidationError as exc:
        problems = [located(tuple(e["loc"]), e["msg"].removeprefix("Value error, "),
                            _HINTS.get(e["type"], "fix the value")) for e in exc.errors(include_url=False)]
        raise ConfigError(problems=problems) from None

    entries, problems = {}, []
    for name, svc in sorted(model.services.items()):
        bad_name = name_problem(name)
        if bad_name:
            problems.append(located(("services", name), bad_name, "pick another name"))
            continue
        project_dir = (ws.root / svc.project_dir).resolve()
        if not (project_dir / "Pulumi.yaml").is_file():
            problems.append(located(("services", name, "project_dir"),
                                    f"{svc.project_dir}/Pulumi.yaml does not exist",
                                    "point project_dir at the service's Pulumi project"))
            continue
        if not (project_dir / f"Pulumi.{svc.stack}.yaml").is_file():
            problems.append(located(("services", name, "stack"),
                                    f"{svc.project_dir}/Pulumi.{svc.stack}.yaml does not exist",
                                    "check the stack name or add the stack file"))
            continue
        context = source = None
        if svc.kubernetes is not None:
            context = svc.kubernetes.context
            source = f"{path.name}: services.{name}.kubernetes.context"
            if svc.kubernetes.cluster is not None:
                cluster_file = ws.cluster_file(svc.kubernetes.cluster)
                rel = cluster_file.relative_to(ws.root) if cluster_file.is_relative_to(ws.root) else cluster_file
                source = (f"{rel}: platform.coreweave.kube_context "
                          f"({path.name}: services.{name}.kubernetes.cluster)")
                context = _cluster_context(ws, svc.kubernetes.cluster)
                if context is None:
                    problems.append(located(("services", name, "kubernetes", "cluster"),
                                            f"cluster {svc.kubernetes.cluster!r} has no CoreWeave kube context",
                                            f"name a CoreWeave cluster in {ws.clusters_dir.name}/, "
                                            "or give context: directly"))
                    continue
        line = located(("services", name), "", "").line
        entries[name] = ServiceEntry(name=name, spec=svc, project_dir=project_dir, file=path,
                                     line=line, kube_context=context, kube_context_source=source)
    if problems:
        raise ConfigError(problems=problems)
    return Registry(file=path, services=entries)


def _cluster_context(ws: Workspace, cluster: str) -> str | None:
    """``platform.coreweave.kube_context`` of a reviewed cluster (ConfigError if the cluster
    config is missing or invalid; None when it is not a CoreWeave cluster)."""
    from clusterstack.config import load_cluster

    cfg = load_cluster(ws, cluster, references=False).config
    return cfg.platform.coreweave.kube_context if cfg.platform.coreweave is not None else None
