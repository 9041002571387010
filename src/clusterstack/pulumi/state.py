"""Pulumi state documents: ``pulumi stack export`` output and the file backend's checkpoint.

Formats (pulumi/pulumi ``sdk/go/common/apitype/core.go``)::

    UntypedDeployment   = {"version": 3, "deployment": DeploymentV3}          # stack export
    VersionedCheckpoint = {"version": 3, "checkpoint": {"stack": "org/project/stack",
                                                        "latest": DeploymentV3}}  # .pulumi/stacks/…
    DeploymentV3 = {"manifest": {...}, "resources": [ResourceV3, ...], ...}
    ResourceV3   = {"urn", "custom", "delete", "id", "type", "inputs", "outputs", "parent",
                    "protect", "retainOnDelete", "external", "dependencies", "provider",
                    "ignoreChanges", "importID", ...}

Versions 3 (``DeploymentSchemaVersionCurrent``) and 4 (``…Latest``, with features). ``provider``
is a provider reference ``<URN>::<ID>`` (:func:`clusterstack.pulumi.urn.parse_reference`);
secrets are ``apitype.SecretV1`` envelopes (masked by
:func:`clusterstack.pulumi.values.plan_value`).

Writing a deployment for ``pulumi stack import`` (:func:`export_document`): the CLI
(``pkg/cmd/pulumi/stack/stack_import.go``, pulumi/pulumi @1b5949891b) deserializes the document,
refuses a resource whose URN names another stack (``SaveSnapshot`` in
``pkg/cmd/pulumi/stack/io.go``) and runs ``Snapshot.VerifyIntegrity``
(``pkg/resource/deploy/snapshot.go``): the manifest's ``magic`` is the SHA-256 hex of its
``version`` (``Manifest.NewMagic``, ``pkg/resource/deploy/manifest.go``); a custom resource has
an ID, a component none; a provider is referenceable (URN + ID) and precedes every resource
that uses it; a parent, a dependency and a property dependency precede the resource that names
them; no URN twice (unless pending deletion). :func:`integrity_problems` checks exactly these
rules, so a document clusterstack writes is one the CLI accepts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.tokens import STACK_TYPE, is_provider
from clusterstack.pulumi.urn import (URNError, parse_reference, parse_urn, provider_reference,
                                     provider_urn)
from clusterstack.pulumi.values import plan_value
from clusterstack.config.document import MAX_STATE_BYTES, parse_json, read_text

STATE_VERSIONS = (3, 4)  # apitype.DeploymentSchemaVersionCurrent (3) and …Latest (4, features)

_HINT = ("pass the output of `pulumi stack export` or the file backend's "
         ".pulumi/stacks/<project>/<stack>.json")


class StateFileError(ClusterstackError):
    """A state document is not a Pulumi deployment this tool can read (exit 2)."""


@dataclass(frozen=True)
class StateResource:
    """One managed resource of a deployment. ``provider`` is the provider's URN (the ID of the
    reference dropped); ``inputs``/``outputs`` are plan values (secrets ``[secret]``)."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    dependencies: tuple[str, ...]
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()
    import_id: str | None = None
    #: the provider-assigned ID (``apitype.ResourceV3.ID``; None for a component)
    id: str | None = None
    #: the resource exactly as the document holds it (secrets still encrypted), for writing a
    #: migrated deployment with its inputs and outputs carried over unchanged
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Deployment:
    """The last deployment of one stack: the resources it manages, sorted by URN, and the
    Stack resource's outputs. ``manifest`` and ``secrets_providers`` are the document's own
    (``apitype.ManifestV1``, ``SecretsProvidersV1``), ``order`` the resources' URNs in document
    order (Pulumi keeps dependencies before dependents), ``pending_operations`` how many
    operations an interrupted update left (``pending_operations``)."""

    project: str
    stack: str
    resources: tuple[StateResource, ...]
    outputs: dict[str, Any] = field(default_factory=dict)
    manifest: Mapping[str, Any] = field(default_factory=dict, compare=False)
    secrets_providers: Mapping[str, Any] | None = field(default=None, compare=False)
    order: tuple[str, ...] = field(default=(), compare=False)
    pending_operations: int = 0

    def by_urn(self) -> dict[str, StateResource]:
        return {r.urn: r for r in self.resources}


def read_state(doc: Any, *, file: Path | None = None) -> Deployment:
    """The last deployment of a state document (stack export or checkpoint, see the module
    docstring). Resources marked ``delete`` (old copies pending deletion) and ``external``
    (read, not managed) are skipped. The stack and project come from the resources' URNs (else
    from ``checkpoint.stack``, ``org/project/stack``).

    Raises StateFileError on another shape or version, a resource without urn/type, a
    malformed URN, or URNs of several stacks."""
    def bad(msg: str, hint: str = _HINT) -> StateFileError:
        return StateFileError(msg, hint, file=file)

    if not isinstance(doc, Mapping):
        raise bad("not a Pulumi state document (expected a JSON object)")
    version = doc.get("version")
    stack_name = project_name = ""
    if "checkpoint" in doc:
        cp = doc["checkpoint"]
        if not isinstance(cp, Mapping):
            raise bad("`checkpoint` must be an object")
        deployment = cp.get("latest") or {}
        bits = str(cp.get("stack") or "").split("/")
        stack_name = bits[-1]
        project_name = bits[-2] if len(bits) == 3 else ""
    elif "deployment" in doc:
        deployment = doc["deployment"] or {}
    else:
        raise bad("neither `deployment` (stack export) nor `checkpoint` (file backend) found")
    if version not in STATE_VERSIONS:
        raise bad(f"unsupported state version {version!r} (this tool reads versions "
                  f"{', '.join(map(str, STATE_VERSIONS))})",
                  "re-export it with a current Pulumi CLI: `pulumi stack export --file FILE`")
    if not isinstance(deployment, Mapping) or not isinstance(deployment.get("resources", []), list):
        raise bad("`resources` must be a list of resources")
    resources: dict[str, StateResource] = {}
    order: list[str] = []
    outputs: dict[str, Any] = {}
    stacks: set[tuple[str, str]] = set()
    for i, r in enumerate(deployment.get("resources") or []):
        if not isinstance(r, Mapping) or not isinstance(r.get("urn"), str) or "type" not in r:
            raise bad(f"resources[{i}] has no urn/type")
        if r.get("delete") or r.get("external"):
            continue
        urn = r["urn"]
        try:
            parsed = parse_urn(urn)
        except URNError:
            raise bad(f"resources[{i}]: malformed URN {urn!r}") from None
        stacks.add((parsed.project, parsed.stack))
        out = plan_value(r.get("outputs") or {})
        if r["type"] == STACK_TYPE:
            outputs = out
        resources[urn] = StateResource(
            urn=urn, type=r["type"], name=parsed.name, custom=bool(r.get("custom")),
            parent=r.get("parent") or None, provider=provider_urn(r.get("provider")),
            inputs=plan_value(r.get("inputs") or {}), outputs=out,
            dependencies=tuple(sorted(set(r.get("dependencies") or ()))),
            protect=bool(r.get("protect")), retain_on_delete=bool(r.get("retainOnDelete")),
            ignore_changes=tuple(r.get("ignoreChanges") or ()),
            import_id=r.get("importID") or None, id=r.get("id") or None, raw=r)
        order.append(urn)
    if len(stacks) > 1:
        raise bad(f"resources of {len(stacks)} stacks in one state file: "
                  f"{', '.join(sorted(f'{p}/{s}' for p, s in stacks))}")
    if stacks:
        project_name, stack_name = next(iter(stacks))
    pending = deployment.get("pending_operations") or []
    manifest = deployment.get("manifest")
    secrets = deployment.get("secrets_providers")
    return Deployment(project=project_name, stack=stack_name,
                      resources=tuple(resources[u] for u in sorted(resources)), outputs=outputs,
                      manifest=manifest if isinstance(manifest, Mapping) else {},
                      secrets_providers=secrets if isinstance(secrets, Mapping) else None,
                      order=tuple(dict.fromkeys(order)),
                      pending_operations=len(pending) if isinstance(pending, list) else 0)


def load_state(path: Path) -> Deployment:
    """Read a state file (see :func:`read_state`). Raises StateFileError when it is missing,
    unreadable or not JSON."""
    # The loader's input hygiene: size, UTF-8, control characters, depth, bounded integers.
    text = read_text(Path(path), missing="state file not found", error=StateFileError,
                     limit=MAX_STATE_BYTES)
    doc = parse_json(text, Path(path), error=StateFileError, hint="pass `pulumi stack export` output")
    return read_state(doc, file=path)


def state_resources(export: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``{urn: raw ResourceV3}`` of a ``pulumi stack export`` document (``deployment.resources``),
    pending deletes skipped, read resources kept (the import transaction compares IDs)."""
    resources = (export.get("deployment") or {}).get("resources") or []
    return {r["urn"]: r for r in resources if r.get("urn") and not r.get("delete")}


# --- writing a deployment for `pulumi stack import` ------------------------------------------


def manifest_magic(version: str) -> str:
    """``Manifest.NewMagic``: the SHA-256 hex of the engine version (empty for no version)."""
    return hashlib.sha256(version.encode("utf-8")).hexdigest() if version else ""


def integrity_problems(manifest: Mapping[str, Any], resources: Iterable[Mapping[str, Any]]
                       ) -> list[str]:
    """``Snapshot.VerifyIntegrity``'s rules (see the module docstring) over a manifest and
    ``apitype.ResourceV3`` dicts in document order; one message per violation (empty: the
    CLI accepts the document)."""
    problems: list[str] = []
    version = str(manifest.get("version") or "")
    if manifest.get("magic") != manifest_magic(version):
        problems.append("manifest magic is not the SHA-256 of its version (Pulumi reads it as "
                        "tampering)")
    seen: dict[str, int] = {}
    providers: set[str] = set()
    for i, r in enumerate(resources):
        urn = str(r.get("urn") or "")
        if not urn:
            problems.append(f"resource at index {i} has no urn")
            continue
        if not r.get("type"):
            problems.append(f"{urn}: no type")
        if not r.get("custom") and r.get("id"):
            problems.append(f"{urn}: a component with an ID")
        if is_provider(str(r.get("type") or "")):
            if not r.get("id"):
                problems.append(f"{urn}: a provider without an ID cannot be referenced")
            providers.add(provider_reference(urn, str(r.get("id"))))
        ref = r.get("provider")
        if ref:
            try:
                parse_reference(ref)
            except URNError:
                problems.append(f"{urn}: provider reference {ref!r} is not <URN>::<ID>")
            else:
                if ref not in providers:
                    problems.append(f"{urn}: provider {ref} is not earlier in the document")
        deps = [("parent", r.get("parent"))] if r.get("parent") else []
        deps += [("dependency", d) for d in r.get("dependencies") or ()]
        deps += [(f"property dependency ({k})", d)
                 for k, ds in sorted((r.get("propertyDependencies") or {}).items()) for d in ds or ()]
        if r.get("deletedWith"):
            deps.append(("deletedWith", r["deletedWith"]))
        for what, dep in deps:
            if dep not in seen:
                problems.append(f"{urn}: its {what} {dep} is not earlier in the document")
        if urn in seen and not r.get("delete"):
            problems.append(f"{urn}: twice in the document")
        seen[urn] = i
    return problems


def export_document(manifest: Mapping[str, Any], secrets_providers: Mapping[str, Any] | None,
                    resources: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A ``pulumi stack export`` document (``apitype.UntypedDeployment`` version 3 holding a
    ``DeploymentV3``) of ``resources`` in the order given, for ``pulumi stack import --file``.
    ``secrets_providers`` is omitted when None (Go ``omitempty``)."""
    deployment: dict[str, Any] = {"manifest": dict(manifest)}
    if secrets_providers is not None:
        deployment["secrets_providers"] = dict(secrets_providers)
    deployment["resources"] = [dict(r) for r in resources]
    return {"version": 3, "deployment": deployment}
