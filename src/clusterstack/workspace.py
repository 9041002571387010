"""The workspace: ``clusterstack.toml`` at the repository root.

Shape (TOML)::

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

    [projects.buckets]                  # independent Pulumi projects beside the cluster project,
    dir = "buckets"                     # planned by `plan --all`, compared by `diff` (file order)

The project list has one source: :meth:`Workspace.all_projects` (the cluster project first,
then ``[projects]``). Every command that iterates projects (plan, diff, CI) reads it there.

Only this file and the reviewed directories are read: no environment variable or per-user
directory ever changes what a plan contains.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterstack.errors import ConfigError

WORKSPACE_FILE = "clusterstack.toml"

_WORKSPACE_KEYS = {"clusters_dir", "project_dir", "project_name", "backend_url", "secrets_provider",
                   "release_branch"}
_DEFAULT_KEYS = {"dns_zone_id", "dns_api_token", "federation_allow_sources", "acme_email"}
_IAM_KEYS = {"file", "stack", "allow_email_domains", "allow_emails"}  # see clusterstack.iam.settings
_PROJECT_KEYS = {"dir"}
_PROJECT_KEY = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
CLUSTER_PROJECT = "clusters"  # the handle of the cluster project (<project_dir>); reserved in [projects]


@dataclass(frozen=True)
class ProjectRef:
    """One Pulumi project of the workspace.

    ``key``: its handle — the ``[projects.<key>]`` table name, or :data:`CLUSTER_PROJECT` for
    the cluster project; ``directory``: absolute path of the directory holding ``Pulumi.yaml``;
    ``clusters``: True for the cluster project, whose stacks are the reviewed clusters
    (checked by :func:`clusterstack.stacks.check_stacks`); the stacks of any other project are
    its ``Pulumi.<stack>.yaml`` files. ``line``: the 1-based line of its table in
    ``clusterstack.toml`` (None for the cluster project's default).
    """

    key: str
    directory: Path
    clusters: bool = False
    line: int | None = None


@dataclass(frozen=True)
class Workspace:
    """Parsed ``clusterstack.toml``. Paths are absolute."""

    root: Path
    clusters_dir: Path
    project_dir: Path
    project_name: str
    backend_url: str
    secrets_provider: str
    defaults: dict[str, Any] = field(default_factory=dict)
    guard: dict[str, Any] = field(default_factory=dict)
    iam: dict[str, Any] = field(default_factory=dict)
    release_branch: str = "main"
    projects: tuple[ProjectRef, ...] = ()  # [projects], in file order (the cluster project excluded)

    @property
    def file(self) -> Path:
        return self.root / WORKSPACE_FILE

    @classmethod
    def load(cls, root: Path) -> "Workspace":
        """Read ``<root>/clusterstack.toml``.

        Raises ConfigError (exit 2) when the file is missing, is not TOML, or has an unknown key.
        """
        root = root.resolve()
        path = root / WORKSPACE_FILE
        if not path.is_file():
            raise ConfigError(f"no {WORKSPACE_FILE} here", "run clusterstack from the repository "
                              "root, or pass --root DIR", file=path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            line = getattr(exc, "lineno", None)
            raise ConfigError(f"invalid TOML: {exc.msg if hasattr(exc, 'msg') else exc}",
                              "fix the syntax", file=path, line=line) from None
        ws = data.get("workspace", {})
        for section, allowed in (("workspace", _WORKSPACE_KEYS), ("defaults", _DEFAULT_KEYS),
                                 ("iam", _IAM_KEYS)):
            unknown = sorted(set(data.get(section, {})) - allowed)
            if unknown:
                raise ConfigError(f"unknown key {unknown[0]!r}",
                                  f"allowed keys: {', '.join(sorted(allowed))}",
                                  file=path, field=f"{section}.{unknown[0]}")
        return cls(
            root=root,
            clusters_dir=root / ws.get("clusters_dir", "clusters"),
            project_dir=root / ws.get("project_dir", "infra"),
            project_name=ws.get("project_name", "clusterstack"),
            backend_url=ws.get("backend_url", "file://.pulumi-state"),
            secrets_provider=ws.get("secrets_provider", "passphrase"),
            defaults=dict(data.get("defaults", {})),
            guard=dict(data.get("guard", {})),
            iam=dict(data.get("iam", {})),
            release_branch=ws.get("release_branch", "main"),
            projects=_projects(data.get("projects", {}), root, path),
        )

    @classmethod
    def discover(cls, start: Path) -> "Workspace":
        """Find the nearest ``clusterstack.toml`` at or above ``start`` and load it.

        Raises ConfigError when none exists up to the filesystem root.
        """
        start = start.resolve()
        for d in (start, *start.parents):
            if (d / WORKSPACE_FILE).is_file():
                return cls.load(d)
        raise ConfigError(f"no {WORKSPACE_FILE} found at or above {start}",
                          "run from inside a clusterstack repository, or pass --root DIR")

    def all_projects(self) -> tuple[ProjectRef, ...]:
        """Every Pulumi project: the cluster project (``project_dir``) first, then ``[projects]``
        in file order. The one list plan, diff and CI iterate."""
        return (ProjectRef(CLUSTER_PROJECT, self.project_dir, clusters=True), *self.projects)

    def project(self, key: str) -> ProjectRef:
        """The project with handle ``key``. Raises ConfigError naming the known handles."""
        for p in self.all_projects():
            if p.key == key:
                return p
        known = ", ".join(p.key for p in self.all_projects())
        raise ConfigError(f"unknown project {key!r}", f"known projects: {known} "
                          "([projects] in clusterstack.toml)", file=self.file)

    def cluster_file(self, name: str) -> Path:
        return self.clusters_dir / f"{name}.yaml"

    def cluster_names(self) -> list[str]:
        """Names of every ``<cluster>.yaml`` in the reviewed directory, sorted."""
        if not self.clusters_dir.is_dir():
            return []
        return sorted(p.stem for p in self.clusters_dir.glob("*.yaml"))


def _projects(table: Any, root: Path, path: Path) -> tuple[ProjectRef, ...]:
    """Parse ``[projects]``: ``[projects.<key>]`` tables with ``dir = "<directory>"``.

    Raises ConfigError (with the table's line) on a non-table entry, an unknown key, a key that
    is not a lowercase handle or is the reserved :data:`CLUSTER_PROJECT`, or a missing ``dir``.
    The directory is not required to exist here (a command that plans the project says so).
    """
    if not isinstance(table, dict):
        raise ConfigError("[projects] must be a table of [projects.<name>] tables",
                          '[projects.buckets]\ndir = "buckets"', file=path)
    if not table:
        return ()
    lines = path.read_text(encoding="utf-8").splitlines()

    def line_of(key: str) -> int | None:
        heads = {f"[projects.{key}]", f'[projects."{key}"]'}
        return next((n for n, raw in enumerate(lines, 1) if raw.strip() in heads), None)

    out = []
    for key, entry in table.items():
        line = line_of(key)
        if not isinstance(entry, dict):
            raise ConfigError("must be a table with dir = \"<directory>\"",
                              f'[projects.{key}]\ndir = "{key}"', file=path, line=line,
                              field=f"projects.{key}")
        if not _PROJECT_KEY.match(key) or key == CLUSTER_PROJECT:
            raise ConfigError(f"bad project name {key!r}", "a lowercase handle such as buckets "
                              f"(letters, digits, '-'; {CLUSTER_PROJECT!r} is the cluster "
                              "project's)", file=path, line=line, field=f"projects.{key}")
        unknown = sorted(set(entry) - _PROJECT_KEYS)
        if unknown:
            raise ConfigError(f"unknown key {unknown[0]!r}", f"allowed keys: "
                              f"{', '.join(sorted(_PROJECT_KEYS))}", file=path, line=line,
                              field=f"projects.{key}.{unknown[0]}")
        d = entry.get("dir")
        if not isinstance(d, str) or not d.strip():
            raise ConfigError("missing dir", f'add dir = "{key}" (the directory holding its '
                              "Pulumi.yaml)", file=path, line=line, field=f"projects.{key}.dir")
        out.append(ProjectRef(key, (root / d).resolve(), clusters=False, line=line))
    return tuple(out)
