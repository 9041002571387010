"""Import IDs, declared next to the resources they belong to — the only table of them.

A component calls :func:`importable` right after declaring each leaf resource, with the ID
built by one of the family rules below from the same values the declaration used::

    pool = k8s.apiextensions.CustomResource(pool.name, metadata={"name": pool.name}, ...)
    importable(pool, ids.k8s_cluster_scoped(pool.name))

During an offline plan (:func:`clusterstack.plan.runtime.run_program`) the call records
``(resource, id)`` into the registry the plan runner opened with :func:`collecting`; after the
program finished, the runner resolves each resource's URN with the public
``resource.urn.future()`` and attaches the ID to that resource of the plan (``adoptId``). In a
real ``pulumi up`` no registry is open and the call records nothing: the ID never becomes
Pulumi's ``import_`` option (that would turn every ``up`` into an import).

ID *templates*: when part of an ID cannot be derived from the reviewed config (a Cloudflare
record ID is assigned by Cloudflare), the rule returns a template in which the unknown part is
written ``<name>`` (e.g. ``0123…/<record_id>``). ``import generate`` writes Pulumi's
``<PLACEHOLDER>`` for it, lists it, and ``--id LOGICAL=ID`` supplies the real value.

Providers and components have no import ID (Pulumi imports neither); passing one is a
TypeError.

The registry lives in the vocabulary (below the plan runner, the components and ``imports/``)
so that none of them imports another for it. The Pulumi SDK is imported only when
:func:`importable` runs (inside a program, which has imported it already).
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from clusterstack.pulumi.importfile import PLACEHOLDER

if TYPE_CHECKING:
    import pulumi

_TEMPLATE_PART = re.compile(r"<[A-Za-z_][A-Za-z0-9_]*>")


@dataclass(frozen=True)
class Registration:
    """One ``importable`` call: the resource object and its ID (or ID template, or an Output
    of the ID when it embeds a deploy-time value)."""

    resource: "pulumi.CustomResource"
    import_id: Any  # str | pulumi.Output[str]


class Registry:
    """The registrations of one program run, in call order. Created by :func:`collecting`."""

    def __init__(self) -> None:
        self.registrations: list[Registration] = []
        self._seen: set[int] = set()

    def add(self, resource: "pulumi.CustomResource", import_id: "str | pulumi.Output[str]") -> None:
        """Record ``import_id`` for ``resource``. Raises ValueError on a second registration."""
        if id(resource) in self._seen:
            raise ValueError(f"import ID registered twice for {type(resource).__name__} "
                             f"(second ID {import_id!r})")
        self._seen.add(id(resource))
        self.registrations.append(Registration(resource, import_id))


_REGISTRY: ContextVar[Registry | None] = ContextVar("clusterstack_import_ids", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[Registry]:
    """Open a registry for the program run inside the ``with`` block (used by the plan runner).

    The registry is a ContextVar value, so asyncio tasks created inside the block (the Pulumi
    runtime runs the program in one) record into it.
    """
    registry = Registry()
    token = _REGISTRY.set(registry)
    try:
        yield registry
    finally:
        _REGISTRY.reset(token)


def is_template(import_id: str) -> bool:
    """True when ``import_id`` still has an underivable ``<part>`` (or is Pulumi's placeholder)."""
    return import_id == PLACEHOLDER or bool(_TEMPLATE_PART.search(import_id))


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex that accepts the IDs a template stands for: each ``<part>`` becomes one
    non-empty path segment without ``/`` (``0123/<record_id>`` accepts ``0123/9f8e…``);
    :data:`PLACEHOLDER` (form unknown) accepts any non-empty ID."""
    if template == PLACEHOLDER:
        return re.compile(r"^\S+$")
    pieces = _TEMPLATE_PART.split(template)
    return re.compile("^" + "[^/]+".join(re.escape(p) for p in pieces) + "$")


def importable(resource: "pulumi.CustomResource",
               import_id: "str | pulumi.Output[str]") -> "pulumi.CustomResource":
    """Declare the import ID of ``resource`` (call it right after the declaration).

    ``import_id``: the ID Pulumi's ``import`` needs for this type, built with one of the rules
    below (it may be a template, see the module docstring). An ``Output[str]`` is accepted for
    an ID that embeds a deploy-time value; when the offline plan cannot know it, the plan
    records :data:`PLACEHOLDER` (prefer a template naming the missing part). Returns
    ``resource`` unchanged. Records only while a plan's registry is open; otherwise does
    nothing. Raises TypeError for a provider, a component or a non-resource, ValueError for an
    empty ID.
    """
    import pulumi

    if isinstance(resource, pulumi.ProviderResource) or not isinstance(resource, pulumi.CustomResource):
        raise TypeError(f"only custom (non-provider) resources have import IDs, got "
                        f"{type(resource).__name__}")
    if not isinstance(import_id, pulumi.Output) and (not isinstance(import_id, str) or not import_id):
        raise ValueError(f"empty import ID for {type(resource).__name__}")
    registry = _REGISTRY.get()
    if registry is not None:
        registry.add(resource, import_id)
    return resource


# --- The rules, one per family. Each cites the provider's documented import ID. ---------------


def k8s_cluster_scoped(name: str) -> str:
    """A cluster-scoped Kubernetes object (Namespace, ClusterRole, NodePool, ClusterQueue …):
    ``<name>`` (pulumi-kubernetes: "import using the object's name; namespaced objects use
    ``<namespace>/<name>``")."""
    return _nonempty(name, "name")


def k8s_namespaced(namespace: str, name: str) -> str:
    """A namespaced Kubernetes object (ServiceAccount, Ingress, Middleware …):
    ``<namespace>/<name>`` (pulumi-kubernetes import ID)."""
    return f"{_nonempty(namespace, 'namespace')}/{_nonempty(name, 'name')}"


def helm_release(namespace: str, release: str) -> str:
    """A Helm release (``kubernetes:helm.sh/v3:Release``): ``<namespace>/<release name>``
    (pulumi-kubernetes ``helm.v3.Release`` "Import" section)."""
    return f"{_nonempty(namespace, 'namespace')}/{_nonempty(release, 'release')}"


def gcp_address(project: str, region: str, name: str) -> str:
    """A regional ``gcp:compute/address:Address``: ``projects/<p>/regions/<r>/addresses/<name>``
    (pulumi-gcp ``compute.Address`` "Import", first documented form)."""
    return f"projects/{_nonempty(project, 'project')}/regions/{_nonempty(region, 'region')}" \
           f"/addresses/{_nonempty(name, 'name')}"


def gcp_global(project: str, collection: str, name: str) -> str:
    """A global GCP compute object (``globalAddress``, ``firewall``, ``backendService``,
    ``urlMap``, ``targetHttpsProxy``, ``globalForwardingRule``, ``healthCheck`` …):
    ``projects/<p>/global/<collection>/<name>`` (pulumi-gcp "Import" sections; the collection is
    the REST resource name, e.g. ``addresses``, ``firewalls``, ``backendServices``)."""
    return f"projects/{_nonempty(project, 'project')}/global/{_nonempty(collection, 'collection')}" \
           f"/{_nonempty(name, 'name')}"


def gcp_located(project: str, location: str, collection: str, name: str) -> str:
    """A GCP object under a location: ``projects/<p>/locations/<l>/<collection>/<name>``."""
    return f"projects/{_nonempty(project, 'project')}/locations/{_nonempty(location, 'location')}" \
           f"/{_nonempty(collection, 'collection')}/{_nonempty(name, 'name')}"


def gcp_zonal(project: str, zone: str, collection: str, name: str) -> str:
    """A zonal Compute Engine object (an ``instances`` VM …): ``projects/<p>/zones/<z>/<collection>/<name>``
    (pulumi-gcp ``compute.Instance`` "Import", first documented form)."""
    return f"projects/{_nonempty(project, 'project')}/zones/{_nonempty(zone, 'zone')}" \
           f"/{_nonempty(collection, 'collection')}/{_nonempty(name, 'name')}"


def gcp_repository(project: str, location: str, repository_id: str) -> str:
    """An Artifact Registry repository: ``projects/<p>/locations/<l>/repositories/<id>``
    (pulumi-gcp ``artifactregistry.Repository`` "Import", first documented form)."""
    return gcp_located(project, location, "repositories", repository_id)


def gcp_custom_role(project: str, role_id: str) -> str:
    """A project custom role (``gcp:projects/iAMCustomRole:IAMCustomRole``):
    ``projects/<p>/roles/<role_id>`` (pulumi-gcp ``projects.IAMCustomRole`` "Import")."""
    return f"projects/{_nonempty(project, 'project')}/roles/{_nonempty(role_id, 'role_id')}"


def gcp_service_account(project: str, email: str) -> str:
    """A service account (``gcp:serviceaccount/account:Account``):
    ``projects/<p>/serviceAccounts/<email>`` (pulumi-gcp ``serviceaccount.Account`` "Import")."""
    return f"projects/{_nonempty(project, 'project')}/serviceAccounts/{_nonempty(email, 'email')}"


def cloudflare_record(zone_id: str, record_id: str | None = None) -> str:
    """A Cloudflare DNS record (``cloudflare:index/dnsRecord:DnsRecord``): ``<zone_id>/<record_id>``
    (pulumi-cloudflare v6 "Import"). The record ID is assigned by Cloudflare and cannot be
    derived, so without it this returns the template ``<zone_id>/<record_id>`` with the zone
    filled in; the operator supplies the full ID with ``import generate --id``."""
    zone = _nonempty(zone_id, "zone_id")
    return f"{zone}/{record_id}" if record_id else f"{zone}/<record_id>"


def _nonempty(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"import ID part {what!r} is empty")
    return value
