"""Artifact Registry Docker remote repositories (pull-through mirrors), one per
(registry, location).

Sources: Artifact Registry "Remote repositories overview" (``mode: REMOTE_REPOSITORY``) and
"Cleanup policies" (DELETE with ``condition.olderThan``/``tagState``, KEEP with
``mostRecentVersions.keepCount``).

Upstream form — ``remoteRepositoryConfig.commonRepository.uri``, for Docker Hub too: the API's
``RemoteRepositoryConfig.CommonRemoteRepository`` ("a common public repository base") is the
form the service reads back for a URI upstream, so declaring the format-specific
``dockerRepository.customRepository`` instead leaves a perpetual diff (or, the remote config
being immutable, a replace that empties the cache). pulumi-gcp documents ``commonRepository.uri``
as "URI to the registry, e.g. https://registry-1.docker.io" ("Artifact Registry Repository Remote
Common Repository With Custom Upstream" example, pulumi-gcp 10.2.0). Marin maps its
``DOCKER_HUB`` sentinel to that same URI (marin-community/marin
``infra/pulumi/src/iac/gcp/registries.py`` @ 7caf86cc6f46, ``remote_repository_config``, and its
test ``test_remote_repository_config_uses_canonical_common_repository``), which we follow.

Optional strings are omitted, never declared empty: ``description`` only when the config gives
one, ``remoteRepositoryConfig.description`` only when ``[conventions]
registry_upstream_description`` gives one (Marin declares neither empty:
``description=spec.description or None`` and no upstream description, registries.py
@7caf86cc6f46). The upstream description is ForceNew in terraform-provider-google
(GoogleCloudPlatform/magic-modules mmv1/products/artifactregistry/Repository.yaml@002e725a:
``remoteRepositoryConfig`` and its ``description`` are ``immutable: true``), so a difference
from the live mirror plans a replace that empties the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.config.cluster import DeletePolicy, KeepPolicy
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import REGISTRY_MIRRORS_COMPONENT


@dataclass(frozen=True)
class RegistrySpec:
    name: str                                   # provisioning.gcp.registries[].name (repository id)
    location: str                               # one of provisioning.gcp.registries[].locations
    docker_upstream: str                        # provisioning.gcp.registries[].docker_upstream
    description: str                            # provisioning.gcp.registries[].description
    cleanup_policies: tuple[DeletePolicy | KeepPolicy, ...]  # .cleanup_policies, or [conventions] registry_cleanup_policies
    upstream_description: str = ""   # [conventions] registry_upstream_description, filled; "" = none

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
        return {"id": p.id, "action": "KEEP", "mostRecentVersions": {"keepCount": p.keep_count}}
    return {"id": p.id, "action": "DELETE",
            "condition": {"olderThan": p.older_than, "tagState": p.tag_state}}


DOCKER_HUB = "DOCKER_HUB"                       # the config's sentinel for Docker Hub
DOCKER_HUB_URI = "https://registry-1.docker.io"  # Docker Hub's registry endpoint (pulumi-gcp docs, Marin)


def upstream_uri(upstream: str) -> str:
    """The ``commonRepository.uri`` of a config upstream: ``DOCKER_HUB`` → Docker Hub's
    registry URI, an https URL unchanged."""
    return DOCKER_HUB_URI if upstream == DOCKER_HUB else upstream


def remote_repository_config(upstream: str, description: str = "") -> dict:
    """The ``remoteRepositoryConfig`` input: the canonical ``commonRepository`` form (module
    docstring), never the format-specific ``dockerRepository``; ``description`` only when
    non-empty."""
    return {**({"description": description} if description else {}),
            "commonRepository": {"uri": upstream_uri(upstream)}}


class RegistryMirrors(pulumi.ComponentResource):
    repositories: dict[str, Declared]

    def __init__(self, name: str, args: RegistryMirrorsArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(REGISTRY_MIRRORS_COMPONENT, name, None, opts)
        self.repositories = {}
        for r in args.registries:
            self.repositories[r.logical_name] = kinds.ARTIFACT_REPOSITORY(
                r.logical_name,
                {"project": args.project, "location": r.location, "repositoryId": r.name,
                 "format": "DOCKER", "mode": "REMOTE_REPOSITORY", "description": r.description or None,
                 "remoteRepositoryConfig": remote_repository_config(r.docker_upstream,
                                                                    r.upstream_description),
                 "cleanupPolicies": [cleanup_policy(p) for p in r.cleanup_policies],
                 "cleanupPolicyDryRun": False},
                pulumi.ResourceOptions(parent=self, provider=provider))
            ids.importable(self.repositories[r.logical_name],
                           ids.gcp_repository(args.project, r.location, r.name))
        self.register_outputs({"repositories": sorted(self.repositories)})
