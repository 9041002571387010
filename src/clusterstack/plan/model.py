"""The plan: what one stack declares, as recorded from the program's RegisterResource calls.

The JSON shape (``format: clusterstack.plan/v1``)::

    {"format": "clusterstack.plan/v1",
     "stacks": [{"project": str, "stack": str, "outputs": {name: value},
                 "resources": [{"urn": str, "type": str, "name": str, "custom": bool,
                                "parent": urn | null, "provider": urn | null,
                                "inputs": {...}, "dependencies": [urn, ...],
                                "adoptId": str | null, "version": str | null,
                                "options": {"protect": bool, "retainOnDelete": bool,
                                            "ignoreChanges": [str], "deleteBeforeReplace": bool,
                                            "importId": str | null}}]}]}

Secret values are ``"[secret]"`` and values unknown until deployment ``"[unknown]"``.
``adoptId`` is the import ID the resource's component declared for adopting the live object
(:mod:`clusterstack.imports.ids`; may be a template with a ``<part>`` the config cannot give);
``options.importId`` is Pulumi's ``import_`` resource option, which clusterstack never sets.
``version`` is the provider plugin version the resource's SDK asks the engine for
(``RegisterResourceRequest.version``; null for components and the Stack).
Resources are sorted by URN and every mapping by key, so the same input gives byte-identical
JSON (:func:`dumps`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FORMAT = "clusterstack.plan/v1"
SECRET = "[secret]"
UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"


# Pulumi's special-value signatures (pulumi.runtime.rpc / sdk/go/common/resource/sig).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def plan_value(value: Any) -> Any:
    """A Pulumi property value (protobuf JSON of a RegisterResource request, or a state file's
    inputs/outputs) → plan value: secrets ``[secret]``, unknowns ``[unknown]``, resource
    references ``{"urn": …}``, output values unwrapped, integral floats → int.

    Sentinels: Pulumi's special-value signature key and its secret/resource/output signatures
    and unknown marker (``pulumi.runtime.rpc``; the same in state files, apitype docs).
    """
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SECRET_SIG:
            return SECRET
        if sig == RESOURCE_SIG:
            return {"urn": value.get("urn")}
        if sig == OUTPUT_SIG:
            if value.get("secret"):
                return SECRET
            return plan_value(value["value"]) if "value" in value else UNKNOWN
        return {k: plan_value(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [plan_value(v) for v in value]
    if value == UNKNOWN_SENTINEL:
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class PlannedResource:
    """One registered resource. ``provider`` is the provider resource's URN (id dropped)."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    inputs: dict[str, Any]
    dependencies: tuple[str, ...]
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    import_id: str | None = None
    adopt_id: str | None = None  # import ID declared next to the resource (clusterstack.imports.ids)
    version: str | None = None  # provider plugin version requested (RegisterResourceRequest.version)

    @property
    def is_provider(self) -> bool:
        return self.type.startswith("pulumi:providers:")

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn, "type": self.type, "name": self.name, "custom": self.custom,
            "parent": self.parent, "provider": self.provider, "inputs": self.inputs,
            "dependencies": list(self.dependencies), "adoptId": self.adopt_id,
            "version": self.version,
            "options": {"protect": self.protect, "retainOnDelete": self.retain_on_delete,
                        "ignoreChanges": list(self.ignore_changes),
                        "deleteBeforeReplace": self.delete_before_replace,
                        "importId": self.import_id},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "PlannedResource":
        o = d.get("options", {})
        return cls(urn=d["urn"], type=d["type"], name=d["name"], custom=d["custom"],
                   parent=d.get("parent"), provider=d.get("provider"), inputs=d.get("inputs", {}),
                   dependencies=tuple(d.get("dependencies", ())), protect=o.get("protect", False),
                   retain_on_delete=o.get("retainOnDelete", False),
                   ignore_changes=tuple(o.get("ignoreChanges", ())),
                   delete_before_replace=o.get("deleteBeforeReplace", False),
                   import_id=o.get("importId"), adopt_id=d.get("adoptId"),
                   version=d.get("version"))


@dataclass(frozen=True)
class StackPlan:
    """Everything one stack declares. ``resources`` sorted by URN (the Stack resource included)."""

    project: str
    stack: str
    resources: tuple[PlannedResource, ...]
    outputs: dict[str, Any] = field(default_factory=dict)

    def by_urn(self) -> dict[str, PlannedResource]:
        return {r.urn: r for r in self.resources}

    def children(self) -> dict[str | None, list[PlannedResource]]:
        out: dict[str | None, list[PlannedResource]] = {}
        for r in self.resources:
            out.setdefault(r.parent, []).append(r)
        return out

    def counts_by_type(self) -> dict[str, int]:
        """Resources per type, the Stack resource excluded, sorted by type."""
        c = Counter(r.type for r in self.resources if r.type != STACK_TYPE)
        return dict(sorted(c.items()))

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project, "stack": self.stack, "outputs": self.outputs,
                "resources": [r.to_json() for r in self.resources]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "StackPlan":
        return cls(project=d["project"], stack=d["stack"], outputs=d.get("outputs", {}),
                   resources=tuple(PlannedResource.from_json(r) for r in d["resources"]))


def dumps(plans: list[StackPlan]) -> str:
    """Canonical JSON of a list of stack plans: sorted keys, 2-space indent, trailing newline."""
    doc = {"format": FORMAT, "stacks": [p.to_json() for p in sorted(
        plans, key=lambda p: (p.project, p.stack))]}
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def loads(text: str) -> list[StackPlan]:
    """Parse :func:`dumps` output. Raises ValueError on another format."""
    doc = json.loads(text)
    if doc.get("format") != FORMAT:
        raise ValueError(f"not a clusterstack plan (format {doc.get('format')!r})")
    return [StackPlan.from_json(s) for s in doc["stacks"]]
