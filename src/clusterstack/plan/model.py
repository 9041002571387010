"""The plan: what one stack declares, as recorded from the program's RegisterResource calls.

The JSON shape (``format: clusterstack.plan/v1``)::

    {"format": "clusterstack.plan/v1",
     "stacks": [{"project": str, "stack": str, "outputs": {name: value},
                 "resources": [{"urn": str, "type": str, "name": str, "custom": bool,
                                "parent": urn | null, "provider": urn | null,
                                "inputs": {...}, "dependencies": [urn, ...],
                                "propertyDependencies": {input key: [urn, ...]},
                                "adoptId": str | null, "version": str | null,
                                "options": {"protect": bool, "retainOnDelete": bool,
                                            "ignoreChanges": [str], "deleteBeforeReplace": bool,
                                            "replaceOnChanges": [str], "replaceWith": [urn],
                                            "importId": str | null}}]}]}

Secret values are ``"[secret]"`` and values unknown until deployment ``"[unknown]"``
(:func:`clusterstack.pulumi.values.plan_value`).
``adoptId`` is the import ID the resource's component declared for adopting the live object
(:mod:`clusterstack.pulumi.importids`; may be a template with a ``<part>`` the config cannot give);
``options.importId`` is Pulumi's ``import_`` resource option, which clusterstack never sets.
``options.replaceOnChanges``: the input paths whose change the engine plans as a replace
(``replace_on_changes``; the immutable fields of the kind, docs/making-a-change.md);
``options.replaceWith``: the resources whose replacement replaces this one too (``replace_with``,
engine ≥ 3.207); ``propertyDependencies``: per input key, the resources its value came from —
with ``dependencies`` what the engine orders creates, deletes and delete-before-replace chains by.
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

from clusterstack.pulumi.tokens import STACK_TYPE, is_provider
from clusterstack.config.document import json_loads

FORMAT = "clusterstack.plan/v1"


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
    adopt_id: str | None = None  # import ID declared next to the resource (clusterstack.pulumi.importids)
    version: str | None = None  # provider plugin version requested (RegisterResourceRequest.version)
    replace_on_changes: tuple[str, ...] = ()
    replace_with: tuple[str, ...] = ()       # URNs, sorted
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)  # key → URNs, sorted

    @property
    def is_provider(self) -> bool:
        return is_provider(self.type)

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn, "type": self.type, "name": self.name, "custom": self.custom,
            "parent": self.parent, "provider": self.provider, "inputs": self.inputs,
            "dependencies": list(self.dependencies),
            "propertyDependencies": {k: list(v) for k, v in self.property_dependencies.items()},
            "adoptId": self.adopt_id, "version": self.version,
            "options": {"protect": self.protect, "retainOnDelete": self.retain_on_delete,
                        "ignoreChanges": list(self.ignore_changes),
                        "deleteBeforeReplace": self.delete_before_replace,
                        "replaceOnChanges": list(self.replace_on_changes),
                        "replaceWith": list(self.replace_with),
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
                   version=d.get("version"),
                   replace_on_changes=tuple(o.get("replaceOnChanges", ())),
                   replace_with=tuple(o.get("replaceWith", ())),
                   property_dependencies={k: tuple(v) for k, v in d.get("propertyDependencies", {}).items()})


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
    """Parse :func:`dumps` output, decoded with the one JSON reader's limits
    (:func:`clusterstack.config.document.json_loads`: integers of at most 19 digits, no
    ``NaN``/``Infinity``). Raises ValueError — never another exception — for text that is not
    JSON, JSON past those limits or nested past the parser's recursion limit, another format,
    or a plan missing a member (the callers name where the text came from)."""
    try:
        doc = json_loads(text)
    except RecursionError:
        raise ValueError("not a clusterstack plan: nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        shown = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"not a clusterstack plan (format {shown!r})")
    try:
        return [StackPlan.from_json(s) for s in doc["stacks"]]
    except (KeyError, TypeError, AttributeError) as exc:
        problem = f"no member {exc}" if isinstance(exc, KeyError) else "a member of another shape"
        raise ValueError(f"not a whole clusterstack plan: {problem}") from None
