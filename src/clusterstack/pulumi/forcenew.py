"""Which input changes a provider answers with a replacement: the providers' own ``Diff`` rules.

A preview plans ``replace`` when the provider's ``Diff`` lists a changed property in its
``replaces`` (``DiffResponse.replaces``, pulumi/pulumi ``sdk/proto/provider.proto``). The static
diff (``clusterstack diff``) and the adoption report have no provider to ask, so the rules of the
providers clusterstack declares are written down here, each with its source:

- **pulumi-kubernetes** v4.32.0 ``provider/pkg/provider/provider.go`` ``Diff`` (line 1560:
  ``forceNewFields := []string{".metadata.name", ".metadata.namespace"}``; Patch resources keep
  only these) and ``provider/pkg/provider/diff.go`` ``forceNewProperties`` (lines 23-37) over the
  ``forceNew`` table (lines 45-205): a ``RoleBinding``/``ClusterRoleBinding``'s ``roleRef``, a
  ``Service``'s ``spec.clusterIP``, a ``Secret``'s ``type``, a workload's ``spec.selector``, a
  ``PersistentVolumeClaim``'s access modes, selector, class and volume. Custom resources have no
  entry: only their name and namespace force a replacement.
- **terraform-provider-google** (bridged by pulumi-gcp): every argument of
  ``google_compute_address`` except ``labels`` is ``ForceNew``
  (``google/services/compute/resource_compute_address.go`` @020769f4); of
  ``google_artifact_registry_repository`` ``format``, ``repository_id``, ``location``, ``mode``,
  ``kms_key_name``, ``project``, the whole ``remote_repository_config`` block and
  ``maven_config`` are ``ForceNew`` while ``description``, ``labels``, ``cleanup_policies``,
  ``cleanup_policy_dry_run`` and ``docker_config`` update in place
  (``google/services/artifactregistry/resource_artifact_registry_repository.go`` @07fc8657).

Paths are Pulumi property paths of the resource's inputs (camelCase for bridged providers); a
change at or below a path forces the replacement.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterstack.pulumi import tokens

_K8S_SOURCE = ("pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go:1560 (Diff) and "
               "diff.go:23-205 (forceNewProperties, forceNew)")
_ADDRESS_SOURCE = ("terraform-provider-google google/services/compute/"
                   "resource_compute_address.go@020769f4: ForceNew on every argument but labels")
_AR_SOURCE = ("terraform-provider-google google/services/artifactregistry/"
              "resource_artifact_registry_repository.go@07fc8657: ForceNew")


@dataclass(frozen=True)
class ForceNew:
    """The paths whose change a provider answers with a replacement, and where that rule is."""

    paths: tuple[str, ...]
    source: str


_K8S_IDENTITY = ("metadata.name", "metadata.namespace")

# (group, kind) → extra forceNew paths (diff.go's table, group "" = core).
_K8S_KIND: dict[tuple[str, str], tuple[str, ...]] = {
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("roleRef",),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("roleRef",),
    ("", "Service"): ("spec.clusterIP",),
    ("", "Secret"): ("type",),
    ("", "PersistentVolumeClaim"): ("spec.accessModes", "spec.selector", "spec.storageClassName",
                                    "spec.volumeName"),
    ("apps", "Deployment"): ("spec.selector",),
    ("apps", "DaemonSet"): ("spec.selector",),
    ("apps", "StatefulSet"): ("spec.podManagementPolicy", "spec.revisionHistoryLimit",
                              "spec.selector", "spec.serviceName", "spec.volumeClaimTemplates"),
    ("batch", "Job"): ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
}

_GCP: dict[str, ForceNew] = {
    tokens.ADDRESS: ForceNew(("address", "addressType", "description", "ipVersion",
                              "ipv6EndpointType", "name", "network", "networkTier", "prefixLength",
                              "project", "purpose", "region", "subnetwork"), _ADDRESS_SOURCE),
    tokens.GLOBAL_ADDRESS: ForceNew(("address", "addressType", "description", "ipVersion", "name",
                                     "network", "prefixLength", "project", "purpose"),
                                    _ADDRESS_SOURCE.replace("compute_address", "compute_global_address")),
    tokens.ARTIFACT_REPOSITORY: ForceNew(("format", "repositoryId", "location", "mode", "kmsKeyName",
                                          "project", "remoteRepositoryConfig", "mavenConfig"),
                                         _AR_SOURCE),
}


def _kubernetes_group_kind(type_token: str) -> tuple[str, str] | None:
    try:
        pkg, module, kind = tokens.split(type_token)
    except ValueError:
        return None
    if pkg != "kubernetes" or "/" not in module:
        return None
    group = module.rsplit("/", 1)[0]
    return ("" if group == "core" else group), kind


def force_new(type_token: str) -> ForceNew | None:
    """The forceNew rule of ``type_token`` (None: the provider replaces on no input change this
    module knows of — e.g. a Helm release or a Cloudflare record, updated in place)."""
    if type_token in _GCP:
        return _GCP[type_token]
    gk = _kubernetes_group_kind(type_token)
    if gk is None or type_token == tokens.HELM_RELEASE:
        return None
    if gk[1].endswith("Patch"):   # kinds.IsPatchResource: only the identity forces a new one
        return ForceNew(_K8S_IDENTITY, _K8S_SOURCE)
    return ForceNew(_K8S_IDENTITY + _K8S_KIND.get(gk, ()), _K8S_SOURCE)


def force_new_paths(type_token: str) -> tuple[str, ...]:
    """The paths of :func:`force_new` (empty when none)."""
    rule = force_new(type_token)
    return rule.paths if rule is not None else ()
