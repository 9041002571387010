"""What an adapter looks up in a live system, and why a lookup could not be answered.

A lookup (frozen, hashable) names one live object by the API's own identity:
:class:`KubeObject` and :class:`HelmRelease` (Kubernetes,
:class:`clusterstack.adapters.kubernetes.KubeApi`), :class:`GcpObject` and :class:`NegMember`
(Compute Engine and Artifact Registry, :class:`clusterstack.adapters.gcp.ComputeApi`). The
readers answer the object as the API's JSON, or None when it does not exist, and raise
:class:`CheckError` (or :class:`Unreachable`) otherwise. ``verify`` and ``imports`` ask them.
"""

from __future__ import annotations

from dataclasses import dataclass


class CheckError(Exception):
    """A lookup could not be answered (credentials, permission, server error)."""


class Unreachable(CheckError):
    """The API could not be reached at all; further lookups to it would fail the same way."""


@dataclass(frozen=True)
class KubeObject:
    """A Kubernetes object: ``apiVersion`` (``v1`` or ``<group>/<version>``), kind, name,
    namespace (None for cluster-scoped kinds)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    @property
    def ref(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} ({self.api_version})"


@dataclass(frozen=True)
class HelmRelease:
    """A Helm release, as Helm 3 stores it: Secrets labelled ``owner=helm,name=<release>``."""

    namespace: str
    name: str

    @property
    def ref(self) -> str:
        return f"Helm release {self.namespace}/{self.name}"


@dataclass(frozen=True)
class GcpObject:
    """A GCP object by collection and name; exactly one of region/zone/location (or none,
    for a global object)."""

    collection: str          # REST collection: addresses, backendServices, repositories …
    project: str
    name: str
    region: str | None = None
    zone: str | None = None
    location: str | None = None   # Artifact Registry

    @property
    def ref(self) -> str:
        if self.location:
            return f"projects/{self.project}/locations/{self.location}/{self.collection}/{self.name}"
        if self.region:
            return f"projects/{self.project}/regions/{self.region}/{self.collection}/{self.name}"
        if self.zone:
            return f"projects/{self.project}/zones/{self.zone}/{self.collection}/{self.name}"
        return f"projects/{self.project}/global/{self.collection}/{self.name}"


@dataclass(frozen=True)
class NegMember:
    """An endpoint of a zonal NEG: the instance and port (the IP is looked up at deploy time)."""

    project: str
    zone: str
    neg: str
    instance: str
    port: int

    @property
    def ref(self) -> str:
        return (f"projects/{self.project}/zones/{self.zone}/networkEndpointGroups/{self.neg}"
                f" member {self.instance}:{self.port}")
