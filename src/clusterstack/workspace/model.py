"""The typed sections of ``clusterstack.toml``; adding a section is one class and one field of
:class:`WorkspaceFile`. Every table and key is strict: an unknown one (a ``[Workspace]`` typo
holding the production backend) is a located error, never silently dropped."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from clusterstack.config.document import Strict
from clusterstack.config.types import NonEmptyStr

CLUSTER_PROJECT = "clusters"  # the handle of the cluster project (<project_dir>); reserved in [projects]
_PROJECT_KEY = re.compile(r"\A[a-z][a-z0-9-]{0,62}\Z")

#: The kinds of Pulumi project clusterstack runs; each has one build function in
#: :mod:`clusterstack.programs` and one document loader in :mod:`clusterstack.validation`.
ProjectKind = Literal["cluster", "buckets", "github"]


class WorkspaceSection(Strict):
    """``[workspace]``: where things are and how Pulumi stores state."""

    clusters_dir: NonEmptyStr = "clusters"          # reviewed cluster configs, one <cluster>.yaml each
    project_dir: NonEmptyStr = "infra"              # the cluster project (Pulumi.yaml, __main__.py, stack files)
    project_name: NonEmptyStr = "clusterstack"      # must equal `name:` in <project_dir>/Pulumi.yaml
    backend_url: NonEmptyStr = "file://.pulumi-state"   # relative file:// paths are relative to the root
    secrets_provider: NonEmptyStr = "passphrase"
    release_branch: NonEmptyStr = "main"            # `up` elsewhere needs a typed confirmation


class Defaults(Strict):
    """``[defaults]``: values a lab shares across clusters, filled in where a cluster file omits
    them. Checked here for their TOML type; their meaning is checked where they are used, so a
    bad value is reported at its line here, naming the cluster that uses it."""

    dns_zone_id: str | None = None
    dns_api_token: str | None = None
    federation_allow_sources: list[str] | None = None
    acme_email: str | None = None


class IamSection(Strict):
    """``[iam]``: the reviewed IAM file and the ONE stack that applies it (resolved by
    :class:`clusterstack.iam.settings.IamSettings`)."""

    file: NonEmptyStr = "iam/iam.yaml"          # relative to the repository root
    stack: NonEmptyStr | None = None            # the stack (cluster) that applies the IAM file
    allow_email_domains: list[NonEmptyStr] = Field(default_factory=list)   # more accepted domains
    allow_emails: list[NonEmptyStr] = Field(default_factory=list)          # accepted addresses


def _project_key(key: str) -> str:
    # Rule: a handle used on the command line (`plan --project KEY`) and in messages.
    if not _PROJECT_KEY.match(key) or key == CLUSTER_PROJECT:
        raise ValueError(f"bad project name {key!r}: a lowercase handle such as buckets (letters, "
                         f"digits, '-'; {CLUSTER_PROJECT!r} is the cluster project's)")
    return key


ProjectKey = Annotated[str, AfterValidator(_project_key)]


class ProjectSection(Strict):
    """``[projects.<key>]``: an independent Pulumi project beside the cluster project."""

    dir: NonEmptyStr                               # the directory holding its Pulumi.yaml
    kind: Literal["buckets", "github"]             # which program and loader it has (declared)


class WorkspaceFile(Strict):
    """The whole ``clusterstack.toml``."""

    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)
    defaults: Defaults = Field(default_factory=Defaults)
    # The guard policy; parsed (and its keys checked) by clusterstack.guard.GuardPolicy.from_toml.
    guard: dict[str, Any] = Field(default_factory=dict)
    iam: IamSection = Field(default_factory=IamSection)
    projects: dict[ProjectKey, ProjectSection] = Field(default_factory=dict)
