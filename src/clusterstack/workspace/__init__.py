"""The workspace: ``clusterstack.toml`` at the repository root, parsed once, typed.

Shape (TOML; every table and key is checked — :mod:`clusterstack.workspace.model`)::

    [workspace]
    clusters_dir = "clusters"          # reviewed cluster configs, one <cluster>.yaml each
    project_dir = "infra"              # the Pulumi project (Pulumi.yaml, __main__.py, Pulumi.<stack>.yaml)
    project_name = "clusterstack"      # must equal `name:` in <project_dir>/Pulumi.yaml
    backend_url = "file://.pulumi-state"   # relative file:// paths are relative to the root
    secrets_provider = "passphrase"
    release_branch = "main"            # `up` from another branch or a dirty tree needs a typed confirmation

    [defaults]                          # values a lab shares across clusters
    dns_zone_id = "…"; dns_api_token = "gcp-secret://…"
    federation_allow_sources = ["…"]; acme_email = "…"

    [conventions]                       # names and label keys of live objects (adoption)
    [guard]                             # the guard policy (clusterstack.guard.GuardPolicy)
    [iam]                               # the IAM file and its stack (clusterstack.iam.settings)
    [cost]                              # the lab's rates, hours a month (clusterstack.config.prices)

    [projects.buckets]                  # independent Pulumi projects beside the cluster project,
    dir = "buckets"                     # planned by `plan --all`, compared by `diff` (file order)
    kind = "buckets"                    # declared: which program and loader (buckets, github)

The project list has one source: :meth:`Workspace.all_projects` (the cluster project first,
then ``[projects]``). Every command that iterates projects (plan, diff, CI) reads it there.

Only this file and the reviewed directories are read: no environment variable or per-user
directory ever changes what a plan contains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusterstack import reads
from clusterstack.config.document import Document
from clusterstack.errors import ConfigError
from clusterstack.guard.policy import GuardPolicy
from clusterstack.workspace.model import (CLUSTER_PROJECT, Conventions, Defaults, IamSection,
                                          ProjectKind, WorkspaceFile)
from clusterstack.workspace.paths import check_name, confined
from clusterstack.workspace.projects import PROJECT_FILE_KEY, Project, ProjectInfo
from clusterstack.workspace.stacks import (POINTER_KEY, PULUMI_STACK_KEYS, STACK_CONFIG_KEY,
                                           StackPointer, check_stacks, read_pointers, write_pointer)
from clusterstack.config.prices import PriceTable

if TYPE_CHECKING:
    from clusterstack.config.prices import PriceTable

WORKSPACE_FILE = "clusterstack.toml"

__all__ = ["CLUSTER_PROJECT", "POINTER_KEY", "PROJECT_FILE_KEY", "PULUMI_STACK_KEYS",
           "STACK_CONFIG_KEY", "WORKSPACE_FILE", "Project", "ProjectInfo", "ProjectKind",
           "StackPointer", "Workspace", "WorkspaceFile", "check_name", "check_stacks", "confined",
           "read_pointers", "write_pointer"]


@dataclass(frozen=True)
class Workspace:
    """Parsed ``clusterstack.toml``: the typed ``settings`` (one field per table) and the
    ``source`` document (for located errors; None when built in code). Paths are absolute."""

    root: Path
    settings: WorkspaceFile = field(default_factory=WorkspaceFile)
    source: Document | None = None

    @property
    def file(self) -> Path:
        return self.root / WORKSPACE_FILE

    @classmethod
    def load(cls, root: Path) -> "Workspace":
        """Read ``<root>/clusterstack.toml`` through the one loader.

        Raises ConfigError (exit 2) when the file is missing, is not UTF-8 TOML, or has an
        unknown table or key or a value of the wrong type — each located at its line.
        """
        root = root.resolve()
        path = root / WORKSPACE_FILE
        if not path.exists():   # a pipe or a device by that name is refused by the loader
            raise ConfigError(f"no {WORKSPACE_FILE} here", "run clusterstack from the repository "
                              "root, or pass --root DIR", file=path)
        doc = Document.read(path, format="toml")
        ws = cls(root=root, settings=doc.validate(WorkspaceFile), source=doc)
        ws._check_project_dirs()
        ws._check_confined()
        return ws

    def _check_confined(self) -> None:
        """Rule (workspace.paths): every path ``clusterstack.toml`` names resolves, symlinks
        followed, inside the root, and so does each project's ``Pulumi.yaml``. Raises
        ConfigError at the key's line (at the ``Pulumi.yaml`` for that file)."""
        keys: list[tuple[tuple[str, ...], Path]] = [
            (("workspace", "clusters_dir"), self.clusters_dir),
            (("workspace", "project_dir"), self.project_dir),
            (("iam", "file"), self.root / self.settings.iam.file)]
        keys += [(("projects", key, "dir"), self.root / p.dir)
                 for key, p in self.settings.projects.items()]
        for path_, path in keys:
            confined(path, self.root, what=".".join(path_), file=self.file,
                     line=self.line_of(*path_), field=".".join(path_))
        for project in self.all_projects():  # each project's Pulumi.yaml: a reviewed file
            confined(project.directory / "Pulumi.yaml", self.root, what="Pulumi.yaml")

    def _check_project_dirs(self) -> None:
        """Rule: one directory is one Pulumi project — two ``[projects]`` tables (or one and
        the cluster project's ``project_dir``) naming the same directory would plan it twice
        under two kinds and never plan the other. Raises ConfigError at the later table."""
        seen = {self.cluster_project.directory: "[workspace] project_dir"}
        for ref in self.projects:
            first = seen.setdefault(ref.directory, f"[projects.{ref.key}]")
            if first != f"[projects.{ref.key}]":
                raise ConfigError(f"dir {ref.directory.relative_to(self.root) if ref.directory.is_relative_to(self.root) else ref.directory} "
                                  f"is already the directory of {first}",
                                  "give each project its own directory", file=self.file,
                                  line=self.line_of("projects", ref.key, "dir") or ref.line,
                                  field=f"projects.{ref.key}.dir")

    @classmethod
    def from_mapping(cls, root: Path, data: dict[str, Any]) -> "Workspace":
        """A workspace from the tables of a ``clusterstack.toml`` given as a mapping (tests,
        tools). Raises pydantic's ValidationError for a bad mapping."""
        return cls(root=Path(root).resolve(), settings=WorkspaceFile.model_validate(data))

    @classmethod
    def discover(cls, start: Path) -> "Workspace":
        """Find the nearest ``clusterstack.toml`` at or above ``start`` and load it.

        Raises ConfigError when none exists up to the filesystem root.
        """
        start = start.resolve()
        for d in (start, *start.parents):
            if (d / WORKSPACE_FILE).is_file():  # a link out of the found root is refused
                confined(d / WORKSPACE_FILE, d, what=WORKSPACE_FILE, within=f"the directory it is found in ({d})")
                return cls.load(d)
        raise ConfigError(f"no {WORKSPACE_FILE} found at or above {start}",
                          "run from inside a clusterstack repository, or pass --root DIR")

    # --- [workspace] -------------------------------------------------------------------
    @property
    def clusters_dir(self) -> Path:
        return self.root / self.settings.workspace.clusters_dir

    @property
    def project_dir(self) -> Path:
        return self.root / self.settings.workspace.project_dir

    @property
    def project_name(self) -> str:
        return self.settings.workspace.project_name

    @property
    def backend_url(self) -> str:
        return self.settings.workspace.backend_url

    @property
    def secrets_provider(self) -> str:
        return self.settings.workspace.secrets_provider

    @property
    def release_branch(self) -> str:
        return self.settings.workspace.release_branch

    # --- the other tables ---------------------------------------------------------------
    @property
    def defaults(self) -> Defaults:
        return self.settings.defaults

    @property
    def conventions(self) -> Conventions:
        """``[conventions]``: the names and label keys of live objects (workspace.model)."""
        return self.settings.conventions

    @property
    def guard(self) -> GuardPolicy:
        """The ``[guard]`` policy (:class:`clusterstack.guard.policy.GuardPolicy`), validated
        with the rest of the file, pricing ``[guard.cost]`` with :attr:`prices`."""
        return self.settings.guard.with_prices(self.prices)

    @property
    def prices(self) -> "PriceTable":
        """``[cost]``: the rates in force (the lab's over CoreWeave's list prices)."""
        c = self.settings.cost
        return PriceTable(lab=dict(c.hourly), lab_as_of=c.rates_as_of or "", hours_per_month=c.hours_per_month)

    @property
    def iam(self) -> IamSection:
        return self.settings.iam

    def line_of(self, *path: str | int) -> int | None:
        """1-based line of a key path in ``clusterstack.toml`` (None when built in code)."""
        return self.source.line_of(path) if self.source is not None else None

    # --- projects -----------------------------------------------------------------------
    @cached_property
    def projects(self) -> tuple[Project, ...]:
        """``[projects]``, in file order (the cluster project excluded). The directories are
        not required to exist here (a command that plans a project says so)."""
        return tuple(Project(key, (self.root / p.dir).resolve(), p.kind,
                             line=self.line_of("projects", key), file=self.file)
                     for key, p in self.settings.projects.items())

    @property
    def cluster_project(self) -> Project:
        return Project(CLUSTER_PROJECT, self.project_dir.resolve(), "cluster", file=self.file,
                       line=self.line_of("workspace", "project_dir"))

    def all_projects(self) -> tuple[Project, ...]:
        """Every Pulumi project: the cluster project (``project_dir``) first, then ``[projects]``
        in file order. The one list plan, diff and CI iterate."""
        return (self.cluster_project, *self.projects)

    def project(self, key: str) -> Project:
        """The project with handle ``key``. Raises ConfigError naming the known handles."""
        for p in self.all_projects():
            if p.key == key:
                return p
        known = ", ".join(p.key for p in self.all_projects())
        raise ConfigError(f"unknown project {key!r}", f"known projects: {known} "
                          "([projects] in clusterstack.toml)", file=self.file)

    def project_at(self, directory: Path) -> Project:
        """The project whose directory is ``directory`` (a Pulumi program's own). Raises
        ConfigError when the workspace declares none there."""
        directory = Path(directory).resolve()
        for p in self.all_projects():
            if p.directory == directory:
                return p
        raise ConfigError(f"{directory} is not a project of this workspace",
                          f"declare it in {WORKSPACE_FILE}: [projects.<name>] with dir and kind "
                          "(buckets, github), or point [workspace] project_dir at it",
                          file=self.file)

    def cluster_file(self, name: str) -> Path:
        """``<clusters_dir>/<name>.yaml``. Raises ConfigError when ``name`` has path parts or
        is not a stack name (:func:`~clusterstack.workspace.paths.check_name`), before any
        file is read."""
        return self.clusters_dir / f"{check_name(name)}.yaml"

    def confined(self, path: Path, *, what: str = "file", **where) -> Path:
        """``path`` resolved, after checking it is inside the root (symlinks followed; a
        dangling link named as such). Raises ConfigError
        (:func:`clusterstack.workspace.paths.confined`)."""
        return confined(path, self.root, what=what, **where)

    def cluster_names(self) -> list[str]:
        """Names of every ``<cluster>.yaml`` in the reviewed directory, sorted. A directory
        named so is no cluster (``validate`` reports it as a directory, not a file); a link is
        one (checked when it is loaded)."""
        reads.note(reads.DIR, self.clusters_dir)
        if not self.clusters_dir.is_dir():
            return []
        return sorted(p.stem for p in self.clusters_dir.glob("*.yaml") if not p.is_dir())
