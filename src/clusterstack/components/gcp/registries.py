"""Artifact Registry Docker remote repositories (pull-through mirrors), one per
(registry, location).

Source: Artifact Registry "Remote repositories overview" (``mode: REMOTE_REPOSITORY``,
``remoteRepositoryConfig.dockerRepository.publicRepository = DOCKER_HUB`` or a custom
upstream URI) and "Cleanup policies" (DELETE with ``condition.olderThan``/``tagState``,
KEEP with ``mostRecentVersions.keepCount``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from clusterstack.config.cluster import DeletePolicy, KeepPolicy
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import REGISTRY_MIRRORS_COMPONENT


@dataclass(frozen=True)
class RegistrySpec:
    name: str                                   # provisioning.gcp.registries[].name (repository id)
    location: str                               # one of provisioning.gcp.registries[].locations
    docker_upstream: str                        # provisioning.gcp.registries[].docker_upstream
    description: str                            # provisioning.gcp.registries[].description
    cleanup_policies: tuple[DeletePolicy | KeepPolicy, ...]  # .cleanup_policies (or the default pair)

    @property
    def logical_name(self) -> str:
        return f"{self.name}-{self.location}"


@dataclass(frozen=True)
class RegistryMirrorsArgs:
    project: str                          # provisioning.gcp.project
    registries: tuple[RegistrySpec, ...]  # one per (registry, location)


def cleanup_policy(p: DeletePolicy | KeepPolicy) -> dict:
    """Translate a config policy into the provider's ``cleanupPolicies`` item."""
    if isinstance(p, KeepPolicy):
        return {"id": p.id, "action": "KEEP", "most_recent_versions": {"keep_count": p.keep_count}}
    return {"id": p.id, "action": "DELETE",
            "condition": {"older_than": p.older_than, "tag_state": p.tag_state}}


def upstream_config(upstream: str) -> dict:
    if upstream == "DOCKER_HUB":
        return {"public_repository": "DOCKER_HUB"}
    return {"custom_repository": {"uri": upstream}}


class RegistryMirrors(pulumi.ComponentResource):
    repositories: dict[str, gcp.artifactregistry.Repository]

    def __init__(self, name: str, args: RegistryMirrorsArgs, *, provider: gcp.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(REGISTRY_MIRRORS_COMPONENT, name, None, opts)
        self.repositories = {}
        for r in args.registries:
            self.repositories[r.logical_name] = gcp.artifactregistry.Repository(
                r.logical_name, project=args.project, location=r.location, repository_id=r.name,
                format="DOCKER", mode="REMOTE_REPOSITORY", description=r.description,
                remote_repository_config={"description": f"{r.docker_upstream} mirror",
                                          "docker_repository": upstream_config(r.docker_upstream)},
                cleanup_policies=[cleanup_policy(p) for p in r.cleanup_policies],
                cleanup_policy_dry_run=False,
                opts=pulumi.ResourceOptions(parent=self, provider=provider))
            ids.importable(self.repositories[r.logical_name],
                           ids.gcp_repository(args.project, r.location, r.name))
        self.register_outputs({"repositories": sorted(self.repositories)})
