"""The service registry: ``services.yaml`` at the repository root, loaded and resolved.

The file's model is :mod:`clusterstack.config.services` (shape and rules); this module reads
it through the one loader (:mod:`clusterstack.config.document`) and resolves each entry: its
project directory, its stack file, and — for a ``kubernetes.cluster`` — the kube context of
that reviewed cluster (``platform.coreweave.kube_context``: one source of truth). Errors are
``file:line`` (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterstack.config.document import Document
from clusterstack.config.services import REGISTRY_FILE, RegistryFile, Service
from clusterstack.errors import ConfigError
from clusterstack.validation import load_cluster
from clusterstack.workspace import Workspace


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
        if self.spec.cloud_run_job is not None:
            j = self.spec.cloud_run_job
            return f"{j.project}/{j.region}/jobs/{j.job}"
        if self.spec.gce_vm is not None:
            g = self.spec.gce_vm
            return f"{g.project}/{g.zone}/{g.instance} ({g.image_key}, {g.activation})"
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


def load_registry(ws: Workspace) -> Registry:
    """Load and validate ``<root>/services.yaml``.

    Checks beyond the model: the project directory exists with a ``Pulumi.yaml`` and the
    stack's ``Pulumi.<stack>.yaml``; a ``kubernetes.cluster`` is a reviewed cluster with a
    CoreWeave kube context. Raises ConfigError listing every problem (``file:line``).
    """
    path = ws.root / REGISTRY_FILE
    ws.confined(path, what=REGISTRY_FILE)  # a link out of the repository is never read
    doc = Document.read(path, format="yaml", missing=f"no {REGISTRY_FILE}",
                        missing_hint="create it to register services (see "
                                     "docs/deploying-services.md)")
    if doc.data is None:
        doc.data = {}
    doc.require_mapping("the file must be a mapping with a services: key",
                        "start from the shipped services.yaml")
    model = doc.validate(RegistryFile)

    entries, problems = {}, []
    for name, svc in sorted(model.services.items()):
        try:  # confinement: a link out of the repository is refused (workspace.paths)
            project_dir = ws.confined(ws.root / svc.project_dir, what="project_dir", file=path,
                                      line=doc.line_of(("services", name, "project_dir")),
                                      field=f"services.{name}.project_dir")
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        try:
            ws.confined(project_dir / "Pulumi.yaml", what="Pulumi.yaml")
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        if not (project_dir / "Pulumi.yaml").is_file():
            problems.append(doc.problem(("services", name, "project_dir"),
                                        f"{svc.project_dir}/Pulumi.yaml does not exist",
                                        "point project_dir at the service's Pulumi project"))
            continue
        if not (project_dir / f"Pulumi.{svc.stack}.yaml").is_file():
            problems.append(doc.problem(("services", name, "stack"),
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
                    problems.append(doc.problem(("services", name, "kubernetes", "cluster"),
                                                f"cluster {svc.kubernetes.cluster!r} has no CoreWeave kube context",
                                                f"name a CoreWeave cluster in {ws.clusters_dir.name}/, "
                                                "or give context: directly"))
                    continue
        entries[name] = ServiceEntry(name=name, spec=svc, project_dir=project_dir, file=path,
                                     line=doc.line_of(("services", name)), kube_context=context,
                                     kube_context_source=source)
    if problems:
        raise ConfigError(problems=problems)
    return Registry(file=path, services=entries)


def _cluster_context(ws: Workspace, cluster: str) -> str | None:
    """``platform.coreweave.kube_context`` of a reviewed cluster (ConfigError if the cluster
    config is missing or invalid; None when it is not a CoreWeave cluster)."""
    cfg = load_cluster(ws, cluster, references=False).config
    return cfg.platform.coreweave.kube_context if cfg.platform.coreweave is not None else None
