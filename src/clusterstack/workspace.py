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

Only this file and the reviewed directories are read: no environment variable or per-user
directory ever changes what a plan contains.
"""

from __future__ import annotations

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

    def cluster_file(self, name: str) -> Path:
        return self.clusters_dir / f"{name}.yaml"

    def cluster_names(self) -> list[str]:
        """Names of every ``<cluster>.yaml`` in the reviewed directory, sorted."""
        if not self.clusters_dir.is_dir():
            return []
        return sorted(p.stem for p in self.clusters_dir.glob("*.yaml"))
