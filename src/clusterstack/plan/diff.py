"""Static plan diff: compare two plans of one stack (base → head) offline, and say which changes
will be destructive on apply — without credentials, a provider, or the Pulumi CLI.

Inputs are :class:`~clusterstack.plan.StackPlan` objects: a plan rendered at a git ref
(:mod:`clusterstack.plan.at_ref`), the working tree's plan, or the last deployment recorded in a
state file (:func:`plan_from_state`: ``pulumi stack export`` output or the file backend's
checkpoint). :func:`diff_plans` is a pure function of its arguments.

What counts as a change
    Resources are matched by URN (Pulumi identifies a resource only by its URN: a changed name,
    type or parent type is a new resource and the old one is deleted — Pulumi docs, "Resource
    names", "URNs"). For a URN on both sides every input leaf is compared and reported as a
    Pulumi property path (``spec.nodeLabels["cwdemo/scale-group"]``) with old → new; ``null``
    and an absent key are the same value (Pulumi drops nulls). Lists the receiving system keys
    (a ClusterQueue's flavors and their resources by ``name``, a container's ``env`` by
    ``name``, RBAC rules by what they grant, Topology levels by ``nodeLabel``) are compared
    item by key and their items named by it — ``flavors[name="cwdemo-h100-flavor"]
    .resources[name="nvidia.com/gpu"].nominalQuota`` — never by position
    (:mod:`clusterstack.pulumi.lists`, which cites each key's schema). Resource options are compared
    too: ``protect``, ``retainOnDelete``, ``ignoreChanges``, ``deleteBeforeReplace``,
    ``importId``, ``provider``, ``parent``. A property covered by the head's ``ignoreChanges``
    is listed but marked *ignored* (the engine keeps the old value — Pulumi docs,
    "ignoreChanges").

Secrets
    Plans already carry ``"[secret]"``; state secrets (Pulumi ``apitype.SecretV1`` envelopes,
    :mod:`clusterstack.pulumi.wire`) are masked by the state reader
    (:mod:`clusterstack.pulumi.state`). When either side of a change is secret both sides are
    shown as ``[secret]`` (:func:`clusterstack.pulumi.values.mask_pair`). Property paths are
    Pulumi's (:mod:`clusterstack.pulumi.paths`).

What is destructive (exit 3 in ``clusterstack diff``)
    The findings come from the guard itself (:func:`clusterstack.guard.check`) applied to the
    steps this diff implies, so ``diff``, ``preview`` and ``up`` share one policy:

    * a removed URN is a ``delete`` step (old ``protect`` / ``retainOnDelete`` carried along):
      a removed or renamed NodePool, a removed protected address or DNS record;
    * a changed value of a ``policy.replace_properties`` path of that type (NodePool
      ``spec.instanceType``, ``metadata.name``; Address ``name``, ``region``, ``address``,
      ``description``), of a path the provider itself replaces on
      (:mod:`clusterstack.pulumi.forcenew`: a Kubernetes object's name and namespace, a
      binding's ``roleRef``, an Artifact Registry repository's ``remoteRepositoryConfig``), or
      of a path the head's ``replaceOnChanges`` covers (the engine's ``applyReplaceOnChanges``:
      a Topology's levels, a topology-bound flavor's spec, a PriorityClass's value) is a
      ``replace`` step, unless the head ignores that path;
    * a change of the provider configuration that the provider itself answers with a
      replacement of every resource it manages (:data:`PROVIDER_REPLACE_KEYS`) is a ``replace``
      step for each of those resources;

    * a changed value that lowers a NodePool's ``minNodes``/``maxNodes``/``targetNodes``/
      ``targetRacks`` or a ClusterQueue's GPU quota in any flavor is an ``update`` step the guard
      judges as the capacity cut it is (``shrink``, :mod:`clusterstack.guard.capacity`, under
      ``[guard.capacity]``); every delete and replace finding states the capacity it destroys;

    plus one static rule the guard cannot see in a preview: ``protect`` dropped on any resource
    (the engine would no longer refuse its delete or replace).

    A renamed resource is reported as such when a removed URN pairs with an added URN of the
    same type and parent whose inputs are mostly the same (a heuristic that only changes the
    wording: both are a delete of the old resource). Aliases are not recorded in plans, so a
    rename covered by ``aliases=[…]`` is still reported; preview is the authority there.

Limits against a state file
    State records the provider's *checked* inputs. Keys a bridged provider filled in itself are
    listed under ``__defaults`` and are not reported when the program does not set them; the
    engine-managed provider keys ``version`` and ``__internal`` are ignored. Other defaults a
    provider adds at check time can show as removed properties. ``deleteBeforeReplace`` and the
    import ID are not compared (state does not record them as options).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clusterstack.guard import (GuardPolicy, check, deliberate_hint, deliberate_route,
    deliberate_shrink, entry_lines)
from clusterstack.guard.capacity import CapacityLoss
from clusterstack.guard.intent import IntentRule
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.config.types import size_note
from clusterstack.pulumi.forcenew import force_new_paths
from clusterstack.pulumi.lists import is_size, keyed_leaves
from clusterstack.pulumi.paths import Key, Segment, contains, format_path, get_path, lenient_parse
from clusterstack.pulumi.state import Deployment, load_state, read_state
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import KUBERNETES_PROVIDER, NODEPOOL, STACK_TYPE, family
from clusterstack.pulumi.urn import name_of, parse_urn, renamed_urn
from clusterstack.pulumi.values import SECRET, UNKNOWN, mask_pair

DIFF_FORMAT = "clusterstack.diff/v1"


class _Missing:
    """Marker for "no value on this side" (an absent key or null)."""

    _instance: "_Missing | None" = None

    def __new__(cls) -> "_Missing":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()

#: Options compared between two plans, and the subset a state file records (apitype.ResourceV3
#: has ``protect``, ``retainOnDelete``, ``ignoreChanges``, ``provider``, ``parent``; no
#: ``deleteBeforeReplace``, and its ``importID`` is the ID once used, not the option).
ALL_OPTIONS = ("protect", "retainOnDelete", "ignoreChanges", "deleteBeforeReplace", "importId",
               "provider", "parent")
STATE_OPTIONS = ("protect", "retainOnDelete", "ignoreChanges", "provider", "parent")

#: Provider input keys whose change makes the provider replace every resource it manages.
#: Kubernetes: ``DiffConfig`` plans a replacement iff the active cluster (from ``kubeconfig``,
#: ``context``, ``cluster``) changes (pulumi-kubernetes ``provider.go`` DiffConfig); since
#: Pulumi 3.150 the engine asks ``DiffConfig`` for explicit providers too (pulumi/pulumi#18509),
#: so a changed provider *reference* only replaces when these keys differ as well.
PROVIDER_REPLACE_KEYS: Mapping[str, tuple[str, ...]] = {
    KUBERNETES_PROVIDER: ("cluster", "context", "kubeconfig"),
}

#: Top-level input keys never compared: engine/bridge bookkeeping recorded in state
#: (``__defaults``: keys a bridged provider defaulted; ``__internal``: engine data of providers).
_BOOKKEEPING = ("__defaults", "__internal")



def _norm(value: Any) -> Any:
    return MISSING if value is None else value


def _present(value: Any) -> Any:
    return None if value is MISSING else value


# ---------------------------------------------------------------------------------------------
# result types


@dataclass(frozen=True)
class PropertyChange:
    """One changed input leaf (or stack output). ``old``/``new`` are :data:`MISSING` for an
    added/removed key; both are ``"[secret]"`` when either side is secret.

    ``forces_replace``: the path is a replace property of the resource's type (policy) or a
    replace key of a provider; ``ignored``: covered by the head's ``ignoreChanges``;
    ``note``: ``order`` when the change is the order of an ordered keyed list (``old``/``new``
    list its item keys, :class:`clusterstack.pulumi.lists.Leaf`), else empty; ``size``: both
    sides of a byte quantity in one unit for the text view
    (:func:`clusterstack.config.types.size_note`, not in the JSON: it has the exact values).
    """

    path: str
    old: Any
    new: Any
    forces_replace: bool = False
    ignored: bool = False
    note: str = ""
    size: str = ""

    @property
    def kind(self) -> str:
        """``add``, ``delete`` or ``update`` (Pulumi ``DiffKind`` without the replace suffix)."""
        if self.old is MISSING:
            return "add"
        if self.new is MISSING:
            return "delete"
        return "update"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "kind": self.kind,
                             "forcesReplace": self.forces_replace, "ignored": self.ignored}
        if self.old is not MISSING:
            d["old"] = self.old
        if self.new is not MISSING:
            d["new"] = self.new
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class OptionChange:
    """A changed resource option (names as in the plan JSON: ``protect``, ``retainOnDelete``…)."""

    option: str
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"option": self.option, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class ResourceChange:
    """A URN present on both sides whose inputs or options differ.

    ``replace`` is True when a non-ignored forcing property changed (or the provider forces it);
    ``provider_reasons`` lists ``(provider URN, key, old, new)`` of a provider-forced replace.
    """

    urn: str
    type: str
    name: str
    properties: tuple[PropertyChange, ...]
    options: tuple[OptionChange, ...]
    replace: bool = False
    provider_reasons: tuple[tuple[str, str, Any, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"urn": self.urn, "type": self.type, "name": self.name, "replace": self.replace,
                "properties": [p.to_json() for p in self.properties],
                "options": [o.to_json() for o in self.options],
                "providerReasons": [{"provider": p, "key": k, **_side("old", o), **_side("new", n)}
                                    for p, k, o, n in self.provider_reasons]}


def _side(name: str, value: Any) -> dict[str, Any]:
    return {} if value is MISSING else {name: value}


@dataclass(frozen=True)
class Finding:
    """A change that will be destructive on apply.

    ``kind``: ``removed`` | ``renamed`` | ``replace`` | ``shrink`` | ``unprotect`` | ``cost``;
    ``op``: the step the engine would take (``delete``, ``replace``), ``shrink`` (a capacity
    cut by an in-place update, one finding per count that goes down), ``update``/``create`` for
    ``cost`` (a NodePool whose monthly cost rise is above ``[guard.cost]
    block_monthly_increase``) or ``unprotect``; ``path``: the
    property path (``""`` for a whole resource; ``protect`` for unprotect); ``old``/``new`` the
    values (for a rename ``new`` is the new URN); ``provider``: the provider URN when the
    provider forces it; ``rule``: which rule it breaks; ``hint``: what to do; ``capacity``: the
    capacity it destroys (:class:`clusterstack.guard.capacity.CapacityLoss`; None: none measured).
    """

    urn: str
    type: str
    kind: str
    op: str
    path: str
    old: Any
    new: Any
    rule: str
    hint: str
    provider: str | None = None
    capacity: CapacityLoss | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"urn": self.urn, "type": self.type, "kind": self.kind, "op": self.op,
                             "path": self.path, "rule": self.rule, "hint": self.hint,
                             "provider": self.provider,
                             "capacity": self.capacity.to_json() if self.capacity else None}
        d.update(_side("old", self.old))
        d.update(_side("new", self.new))
        return d

    def render(self) -> str:
        """The entry on one line, then what to do (:func:`clusterstack.guard.entry_lines`):
        ``DESTRUCTIVE <op> <Kind> <name>: <path> <old> → <new>: <rule>``."""
        change = ""
        if self.kind == "renamed":
            change = f"renamed to {name_of(self.new)}"
        elif self.path:
            via = f"provider {name_of(self.provider)} " if self.provider else ""
            change = f"{via}{self.path} {render_value(self.old)} → {render_value(self.new)}"
        todo = self.hint or None   # renamed / provider / unprotect: the URN at most once
        if self.kind == "removed":
            todo = f"restore it in the reviewed config so the URN stays; {deliberate_route('delete', self.urn)}"
        elif self.kind == "replace" and not self.provider:
            todo = (f"restore the old value of {self.path} in the reviewed config; "
                    f"{deliberate_route('replace', self.urn)}")
        elif self.kind == "shrink":
            todo = f"restore the old value of {self.path} in the reviewed config; {deliberate_shrink(self.urn)}"
        verb = "INTENDED" if self.kind == "intended" else "DESTRUCTIVE"
        return "\n".join(entry_lines(verb, self.op, self.type, self.urn, change=change,
                                      rule=self.rule, todo=todo, capacity=self.capacity))


@dataclass(frozen=True)
class StackDiff:
    """The diff of one stack. ``base_present``/``head_present``: whether the stack exists on that
    side (a stack on one side only is all-added or all-removed). Every tuple is sorted by URN
    (findings by URN, kind, path)."""

    project: str
    stack: str
    base_present: bool
    head_present: bool
    added: tuple[PlannedResource, ...] = ()
    removed: tuple[PlannedResource, ...] = ()
    changed: tuple[ResourceChange, ...] = ()
    renames: tuple[tuple[str, str], ...] = ()   # (old URN, new URN)
    outputs: tuple[PropertyChange, ...] = ()
    findings: tuple[Finding, ...] = ()
    #: the stack's name on the base side when the stack was renamed (:func:`pair_stack_renames`):
    #: the base was compared as ``pulumi stack rename`` leaves its state (:func:`renamed_plan`)
    renamed_from: str | None = None
    #: destructive changes a reviewed intent of the cluster file lets through (kind ``intended``)
    intended: tuple[Finding, ...] = ()

    @property
    def destructive(self) -> bool:
        return bool(self.findings)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.outputs)

    def to_json(self) -> dict[str, Any]:
        def brief(r: PlannedResource) -> dict[str, Any]:
            return {"urn": r.urn, "type": r.type, "name": r.name, "protect": r.protect}
        return {"project": self.project, "stack": self.stack, "basePresent": self.base_present,
                "headPresent": self.head_present,
                "added": [brief(r) for r in self.added], "removed": [brief(r) for r in self.removed],
                "changed": [c.to_json() for c in self.changed],
                "renames": [{"old": o, "new": n} for o, n in self.renames],
                "outputs": [p.to_json() for p in self.outputs],
                "findings": [f.to_json() for f in self.findings],
                **({"intended": [f.to_json() for f in self.intended]} if self.intended else {}),
                **({"renamedFrom": self.renamed_from} if self.renamed_from else {})}


def render_value(value: Any) -> str:
    """A value for humans: ``[secret]``/``[unknown]`` bare, ``(none)`` for no value, else JSON."""
    if value is MISSING:
        return "(none)"
    if value in (SECRET, UNKNOWN) and isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


# ---------------------------------------------------------------------------------------------
# comparison


def diff_values(old: Any, new: Any, path: tuple[Segment, ...] = (), *, type_: str | None = None
                ) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    """Leaf differences between two JSON values: ``[(segments, old, new)]``.

    Mappings are compared key by key (sorted); lists by the key the receiving system gives
    them for a ``type_`` resource (:func:`clusterstack.pulumi.lists.keyed_leaves`: an item is
    named by a :class:`~clusterstack.pulumi.paths.Key` segment), else index by index (extra
    items are added or removed leaves); secrets and unknowns are leaves. ``None`` equals an
    absent key (:data:`MISSING`). An ordered keyed list whose order changed adds a leaf of the
    list's keys in order.
    """
    return [(leaf.segments, leaf.old, leaf.new)
            for leaf in keyed_leaves(old, new, type_=type_, absent=MISSING, path=path)]


def _frozen_scalar_lists(value: Any) -> Any:
    """``value`` with every list of scalars made a tuple (a leaf for :func:`diff_values`)."""
    if isinstance(value, Mapping):
        return {k: _frozen_scalar_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        if all(not isinstance(x, (Mapping, list)) for x in value):
            return tuple(value)
        return [_frozen_scalar_lists(x) for x in value]
    return value


def _thawed(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def output_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[PropertyChange, ...]:
    """The changed stack outputs, masked. A list of scalars (``nodepools``: the pool names) is
    one value, shown whole on both sides: compared item by item by position, removing the first
    pool read as ``nodepools[0]: "cwdemo-cpu-b" → "cwdemo-cpu-general"``, ``nodepools[1]: …`` —
    renames that never happened. Lists of mappings are compared as :func:`diff_values` does."""
    return tuple(PropertyChange(format_path(s), *_mask(_thawed(o), _thawed(n)))
                 for s, o, n in diff_values(_frozen_scalar_lists(old), _frozen_scalar_lists(new)))


def _mask(old: Any, new: Any) -> tuple[Any, Any]:
    return mask_pair(old, new, absent=MISSING)


def _comparable_inputs(old: PlannedResource, new: PlannedResource) -> tuple[dict, dict]:
    """Inputs with state bookkeeping removed (see the module docstring, "Limits")."""
    o = dict(old.inputs)
    n = {k: v for k, v in new.inputs.items() if k not in _BOOKKEEPING}
    defaulted = o.get("__defaults")
    for key in _BOOKKEEPING:
        o.pop(key, None)
    if isinstance(defaulted, list):
        for key in defaulted:
            if isinstance(key, str) and key not in n:
                o.pop(key, None)
    if old.is_provider and "version" not in n:
        o.pop("version", None)
    return o, n


def _option_values(r: PlannedResource) -> dict[str, Any]:
    return {"protect": r.protect, "retainOnDelete": r.retain_on_delete,
            "ignoreChanges": sorted(r.ignore_changes),
            "deleteBeforeReplace": r.delete_before_replace, "importId": r.import_id,
            "provider": r.provider, "parent": r.parent}


def _provider_reasons(old: PlannedResource, new: PlannedResource,
                      base: Mapping[str, PlannedResource], head: Mapping[str, PlannedResource]
                      ) -> list[tuple[str, str, Any, Any]]:
    if not (old.provider and new.provider):
        return []
    old_p = base.get(old.provider)
    new_p = head.get(new.provider)
    if old_p is None or new_p is None or old_p.type != new_p.type:
        return []
    out = []
    for key in PROVIDER_REPLACE_KEYS.get(new_p.type, ()):
        a, b = _norm(old_p.inputs.get(key)), _norm(new_p.inputs.get(key))
        if a != b or UNKNOWN in (a, b):
            out.append((new.provider, key, *_mask(a, b)))
    return out


def _scalars(value: Any) -> bool:
    return isinstance(value, list) and all(not isinstance(x, (Mapping, list)) for x in value)


def _whole_scalar_lists(rows: list[tuple[tuple[Segment, ...], PropertyChange]], old_inputs: Any,
                        new_inputs: Any) -> list[PropertyChange]:
    """The changes of ``rows`` with each list of scalars that no key identifies shown as one
    change of the whole list: compared item by item by position, removing the first of two
    allowed sources read ``sourceRange[0]: "203.0.113.10/32" → "198.51.100.0/24"``,
    ``sourceRange[1]: "198.51.100.0/24" → (none)`` — a change of a source that was not changed.
    Only for items that neither force a replacement nor are ignored (the guard's view of those
    stays per item), and for lists reached by plain keys and positions on both sides (a list
    inside a keyed item keeps its items). The list's place is its first item's."""
    groups: dict[str, list[int]] = {}   # by the parent's path text (a Key may hold lists)
    for i, (segs, p) in enumerate(rows):
        if segs and isinstance(segs[-1], int) and not any(isinstance(s, Key) for s in segs):
            groups.setdefault(format_path(segs[:-1]), []).append(i)
    whole: dict[int, PropertyChange] = {}
    dropped: set[int] = set()
    for idx in groups.values():
        if any(rows[i][1].forces_replace or rows[i][1].ignored or rows[i][1].note for i in idx):
            continue
        parent = rows[idx[0]][0][:-1]
        o, n = get_path(old_inputs, parent), get_path(new_inputs, parent)
        if not (_scalars(o) and _scalars(n)):
            continue
        whole[idx[0]] = PropertyChange(format_path(parent), *_mask(o, n))
        dropped.update(idx[1:])
    return [whole.get(i, p) for i, (_, p) in enumerate(rows) if i not in dropped]


def _resource_change(old: PlannedResource, new: PlannedResource,
                     base: Mapping[str, PlannedResource], head: Mapping[str, PlannedResource],
                     policy: GuardPolicy, options: tuple[str, ...]) -> ResourceChange | None:
    o_in, n_in = _comparable_inputs(old, new)
    leaves = [] if o_in == n_in else keyed_leaves(o_in, n_in, type_=new.type, absent=MISSING)
    ignore = [lenient_parse(p) for p in new.ignore_changes] if leaves else []
    forcing = [lenient_parse(p) for p in (*policy.replace_paths(new.type), *force_new_paths(new.type),
                                          *new.replace_on_changes)] if leaves else []
    forcing += [(k,) for k in PROVIDER_REPLACE_KEYS.get(new.type, ())] if new.is_provider else []
    rows: list[tuple[tuple[Segment, ...], PropertyChange]] = []
    replace = False
    for leaf in leaves:
        segs = leaf.segments
        ignored = any(contains(p, segs) for p in ignore)
        forces = any(contains(p, segs) or contains(segs, p) for p in forcing)
        replace = replace or (forces and not ignored)
        a, b = _mask(leaf.old, leaf.new)
        size = size_note(_present(a), _present(b)) if is_size(segs) and not leaf.note else ""
        rows.append((segs, PropertyChange(format_path(segs), a, b, forces_replace=forces,
                                          ignored=ignored, note=leaf.note, size=size)))
    props = _whole_scalar_lists(rows, o_in, n_in)
    ov, nv = _option_values(old), _option_values(new)
    opts = tuple(OptionChange(k, ov[k], nv[k]) for k in options if ov[k] != nv[k])
    reasons = tuple(_provider_reasons(old, new, base, head))
    if not props and not opts and not reasons:
        return None
    return ResourceChange(urn=new.urn, type=new.type, name=new.name, properties=tuple(props),
                          options=opts, replace=replace or bool(reasons), provider_reasons=reasons)


def _leaves(value: Any, path: tuple[Segment, ...] = ()) -> set[tuple[tuple[Segment, ...], str]]:
    if isinstance(value, Mapping):
        return set().union(*(_leaves(v, (*path, k)) for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(_leaves(v, (*path, i)) for i, v in enumerate(value))) if value else set()
    return {(path, json.dumps(value, sort_keys=True))}


def pair_renames(removed: Iterable[PlannedResource], added: Iterable[PlannedResource],
                 threshold: float = 0.5) -> tuple[tuple[str, str], ...]:
    """Pair removed and added custom resources that look like one resource under a new name:
    same type and parent type, and a Jaccard similarity of input leaves ≥ ``threshold``.
    Greedy by best score (ties: URN order); each URN pairs once. Returns (old, new) URN pairs,
    sorted. A heuristic for wording only — see the module docstring."""
    def parent_type(r: PlannedResource) -> str:
        try:
            return parse_urn(r.parent).qualified_type if r.parent else ""
        except ValueError:
            return ""

    cands = []
    by_kind: dict[tuple[str, str], list[tuple[PlannedResource, set]]] = {}
    for a in added:
        if a.custom:
            by_kind.setdefault((a.type, parent_type(a)), []).append((a, _leaves(a.inputs)))
    for r in removed:
        if not r.custom:
            continue
        rl = _leaves(r.inputs)
        for a, al in by_kind.get((r.type, parent_type(r)), ()):
            union = rl | al
            score = len(rl & al) / len(union) if union else 0.0
            if score >= threshold:
                cands.append((-score, r.urn, a.urn))
    used_old: set[str] = set()
    used_new: set[str] = set()
    pairs = []
    for _, old_urn, new_urn in sorted(cands):
        if old_urn in used_old or new_urn in used_new:
            continue
        used_old.add(old_urn)
        used_new.add(new_urn)
        pairs.append((old_urn, new_urn))
    return tuple(sorted(pairs))


_HINT_REMOVED = ("restore it in the reviewed config (the scale group / address entry) so the URN "
                 "stays — clusterstack never performs this delete; {deliberate}")
_HINT_RENAMED = ("keep the old name (a new name is a new URN: the old resource is deleted and a new "
                 "one created); a deliberate move needs `aliases=[<old URN>]` on the resource, "
                 "reviewed, then a clean `clusterstack preview`")
_HINT_REPLACE = ("restore the old value of {path} ({old}) in the reviewed config: the provider "
                 "cannot change it in place and clusterstack never performs this replace; "
                 "{deliberate}")
_HINT_PROVIDER = ("restore the provider's {path} ({old}): the provider replaces every resource it "
                  "manages when its target cluster changes")
_HINT_UNPROTECT = ("keep protect=True on the resource (components set it): a pool to retire or "
                   "migrate is declared in the cluster file (`intents:`, docs/retiring-a-pool.md) "
                   "and `clusterstack up` unprotects exactly it; <URN> stays protected otherwise")


def diff_plans(base: StackPlan | None, head: StackPlan | None,
               policy: GuardPolicy | None = None, *,
               options: tuple[str, ...] = ALL_OPTIONS, intents: Iterable[IntentRule] = ()) -> StackDiff:
    """Compare ``base`` (before) with ``head`` (after) of one stack; either may be ``None`` (the
    stack exists on one side only). ``policy`` defaults to :class:`GuardPolicy` defaults;
    ``options`` are the resource options compared (:data:`STATE_OPTIONS` against a state file).

    Returns a :class:`StackDiff` whose ``findings`` are the destructive changes (rules in the
    module docstring); ``intents`` (:class:`clusterstack.guard.intent.IntentRule`, the head's
    reviewed intents) move the changes they match exactly to ``intended``. Raises ValueError
    when both are None or they name different stacks.
    """
    if base is None and head is None:
        raise ValueError("diff_plans needs at least one plan")
    if base is not None and head is not None and (base.project, base.stack) != (head.project, head.stack):
        raise ValueError(f"plans of different stacks: {base.project}/{base.stack} vs "
                         f"{head.project}/{head.stack}")
    policy = policy or GuardPolicy()
    ref = head if head is not None else base
    assert ref is not None
    b = base.by_urn() if base is not None else {}
    h = head.by_urn() if head is not None else {}
    added = tuple(h[u] for u in sorted(set(h) - set(b)))
    removed = tuple(b[u] for u in sorted(set(b) - set(h)))
    changed: list[ResourceChange] = []
    for urn in sorted(set(b) & set(h)):
        c = _resource_change(b[urn], h[urn], b, h, policy, options)
        if c is not None:
            changed.append(c)
    renames = pair_renames(removed, added)
    outputs: tuple[PropertyChange, ...] = ()
    if base is not None and head is not None:
        outputs = output_changes(base.outputs, head.outputs)

    # the steps this diff implies, judged by the guard itself
    steps = [Step(op="delete", urn=r.urn, type=r.type, old_protect=r.protect,
                  old_retain_on_delete=r.retain_on_delete, old_inputs=r.inputs) for r in removed]
    steps += [Step(op="create", urn=r.urn, type=r.type, new_inputs=r.inputs) for r in added]
    by_urn_change = {c.urn: c for c in changed}
    for c in changed:
        if c.replace:
            reasons = tuple(p.path for p in c.properties if p.forces_replace and not p.ignored)
            reasons += tuple(f"provider.{k}" for _, k, _, _ in c.provider_reasons)
            steps.append(Step(op="replace", urn=c.urn, type=c.type, old_protect=b[c.urn].protect,
                              old_retain_on_delete=b[c.urn].retain_on_delete,
                              replace_reasons=reasons, old_inputs=b[c.urn].inputs,
                              new_inputs=h[c.urn].inputs))
        elif c.properties:
            # an in-place update: the guard measures what it does to capacity (a cut of a
            # NodePool's nodes or racks or of a ClusterQueue's GPU quota); ignored paths keep
            # their old value (the engine's ignoreChanges)
            new_inputs = _applied_inputs(b[c.urn].inputs, h[c.urn].inputs,
                                         [p for p in c.properties if p.ignored])
            steps.append(Step(op="update", urn=c.urn, type=c.type, old_protect=b[c.urn].protect,
                              diffs=tuple(sorted({p.path.split(".")[0].split("[")[0] for p in c.properties
                                                  if not p.ignored})),
                              old_inputs=b[c.urn].inputs, new_inputs=new_inputs))
    # created NodePools: what they add to the monthly cost ([guard.cost])
    steps += [Step(op="create", urn=r.urn, type=r.type, new_inputs=r.inputs) for r in added
              if family(r.type) == family(NODEPOOL)]
    verdict = check(steps, policy, intents=intents)
    rename_of = dict(renames)
    findings: list[Finding] = []
    intended = tuple(Finding(urn=v.urn, type=v.type, kind="intended", op=v.op, path="", old=MISSING,
                             new=MISSING, rule="a reviewed intent of the cluster file lets exactly "
                             "this through", hint="", capacity=v.capacity) for v in verdict.intended)
    for v in verdict.violations:
        if v.op == "delete":
            new_urn = rename_of.get(v.urn)
            findings.append(Finding(
                urn=v.urn, type=v.type, kind="renamed" if new_urn else "removed", op="delete",
                path="", old=MISSING, new=new_urn if new_urn else MISSING, rule=v.rule,
                hint=(_HINT_RENAMED if new_urn
                      else _HINT_REMOVED.format(deliberate=deliberate_hint("delete", v.urn))),
                capacity=v.capacity))
            continue
        if v.op == "shrink":   # one finding per resource: its first cut; the capacity lists all
            assert v.capacity is not None
            cut = v.capacity.cuts[0]
            findings.append(Finding(
                urn=v.urn, type=v.type, kind="shrink", op="shrink", path=cut.path,
                old=cut.old, new=cut.new, rule=v.rule, hint=v.hint, capacity=v.capacity))
            continue
        if v.op in ("update", "create"):   # [guard.cost]: the monthly cost rises above the limit
            findings.append(Finding(urn=v.urn, type=v.type, kind="cost", op=v.op, path="", old=MISSING,
                                    new=MISSING, rule=v.rule, hint=v.hint))
            continue
        c = by_urn_change[v.urn]
        for p in c.properties:
            if p.forces_replace and not p.ignored:
                findings.append(Finding(
                    urn=v.urn, type=v.type, kind="replace", op="replace", path=p.path, old=p.old,
                    new=p.new, rule=v.rule,
                    hint=_HINT_REPLACE.format(path=p.path, old=render_value(p.old),
                                              deliberate=deliberate_hint("replace", v.urn)),
                    capacity=v.capacity))
        for prov, key, o, n in c.provider_reasons:
            findings.append(Finding(
                urn=v.urn, type=v.type, kind="replace", op="replace", path=key, old=o, new=n,
                rule=v.rule, hint=_HINT_PROVIDER.format(path=key, old=render_value(o)),
                provider=prov, capacity=v.capacity))
    for c in changed:
        for oc in c.options:
            if oc.option == "protect" and oc.old and not oc.new:
                findings.append(Finding(
                    urn=c.urn, type=c.type, kind="unprotect", op="unprotect", path="protect",
                    old=True, new=False,
                    rule="protect dropped: the engine would no longer refuse a delete or replace",
                    hint=_HINT_UNPROTECT.replace("<URN>", c.urn)))
    order = {"removed": 0, "renamed": 0, "replace": 1, "shrink": 1, "unprotect": 2, "cost": 3}
    findings.sort(key=lambda f: (f.urn, order[f.kind], f.provider or "", f.path))
    return StackDiff(project=ref.project, stack=ref.stack, base_present=base is not None,
                     head_present=head is not None, added=added, removed=removed,
                     changed=tuple(changed), renames=renames, outputs=outputs,
                     findings=tuple(findings), intended=intended)


def _applied_inputs(old: Mapping[str, Any], new: Mapping[str, Any],
                    ignored: Iterable[PropertyChange]) -> Mapping[str, Any]:
    """The inputs an in-place update applies: ``new`` with every ``ignored`` property (the
    head's ``ignoreChanges``) at its ``old`` value — the engine keeps it (Pulumi docs,
    "ignoreChanges"). A path through a list item stays at its new value (conservative: the
    guard then judges the change as written)."""
    import copy

    out = copy.deepcopy(dict(new))
    for p in ignored:
        segs = lenient_parse(p.path)
        if not segs or not all(isinstance(x, str) for x in segs):
            continue
        node: Any = out
        for key in segs[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            value = get_path(old, segs, MISSING)
            if value is MISSING:
                node.pop(segs[-1], None)
            else:
                node[segs[-1]] = copy.deepcopy(value)
    return out


def renamed_plan(plan: StackPlan, stack: str) -> StackPlan:
    """``plan`` as ``pulumi stack rename <stack>`` leaves its state: every URN — of a resource,
    its parent, provider and dependencies — under the new stack name, the root Stack resource
    named ``<project>-<stack>`` (:func:`clusterstack.pulumi.urn.renamed_urn`, Pulumi's
    ``RenameStack``). Inputs are the program's and stay as they are."""
    def urn(u: str | None) -> str | None:
        return renamed_urn(u, stack) if u else u

    resources = []
    for r in plan.resources:
        new_urn = renamed_urn(r.urn, stack)
        resources.append(replace(r, urn=new_urn, parent=urn(r.parent), provider=urn(r.provider),
                                 dependencies=tuple(renamed_urn(d, stack) for d in r.dependencies),
                                 name=r.name if r.type != STACK_TYPE else name_of(new_urn)))
    return StackPlan(project=plan.project, stack=stack, outputs=plan.outputs,
                     resources=tuple(sorted(resources, key=lambda r: r.urn)))


def pair_stack_renames(base_only: Mapping[str, StackPlan], head_only: Mapping[str, StackPlan],
                       threshold: float = 0.5) -> tuple[tuple[str, str], ...]:
    """Stacks that exist on one side each and are one stack under a new name: ``(old, new)``
    when, with ``old``'s plan renamed to ``new`` (:func:`renamed_plan`), at least
    ``threshold`` of its custom resources keep their URN in ``new``'s plan — the NodePools, the
    queue, the addresses of a cluster whose name changed and nothing else. Greedy by the share
    (ties: names in order); each stack pairs once; sorted. The pair's diff then shows only what
    the new name changes (a resource named after the stack is replaced, as ``pulumi stack
    rename`` warns); an unpaired stack stays a stack on one side only."""
    cands = []
    for old, bp in base_only.items():
        for new, hp in head_only.items():
            if bp.project != hp.project:
                continue
            moved = {r.urn for r in renamed_plan(bp, new).resources if r.custom}
            kept = moved & {r.urn for r in hp.resources if r.custom}
            share = len(kept) / len(moved) if moved else 0.0
            if moved and share >= threshold:
                cands.append((-share, old, new))
    used_old: set[str] = set()
    used_new: set[str] = set()
    pairs = []
    for _, old, new in sorted(cands):
        if old not in used_old and new not in used_new:
            used_old.add(old)
            used_new.add(new)
            pairs.append((old, new))
    return tuple(sorted(pairs))


def diff_json(diffs: Iterable[StackDiff], base: Mapping[str, Any],
              guard_weakened: Iterable[str] = (), capacity: Iterable[Mapping[str, Any]] = ()) -> str:
    """Canonical JSON of a diff run (``format: clusterstack.diff/v1``): ``base`` describes what
    was compared (``{"kind": "git", "ref", "commit"}`` or ``{"kind": "state", "file"}``),
    ``stacks`` the per-stack diffs sorted by stack, ``guard_weakened`` (only when non-empty)
    how the working tree's ``[guard]`` is weaker than the base's
    (:meth:`GuardPolicy.weakened_from`), ``destructive`` the number of findings, each
    weakening counted as one, ``capacity`` the capacity changes per stack
    (:meth:`clusterstack.inventory.CapacityChange.to_json`, ``[]`` when none). Sorted keys, 2-space indent, trailing newline, no timestamps."""
    diffs = sorted(diffs, key=lambda d: (d.project, d.stack))
    weakened = list(guard_weakened)
    doc = {"format": DIFF_FORMAT, "base": dict(base), "stacks": [d.to_json() for d in diffs],
           "destructive": sum(len(d.findings) for d in diffs) + len(weakened)}
    if weakened:
        doc["guard_weakened"] = weakened
    doc["capacity"] = list(capacity)   # per stack whose capacity changes (clusterstack.inventory)
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# state files


def _plan_of(deployment: Deployment) -> StackPlan:
    return StackPlan(project=deployment.project, stack=deployment.stack, outputs=deployment.outputs,
                     resources=tuple(PlannedResource(
                         urn=r.urn, type=r.type, name=r.name, custom=r.custom, parent=r.parent,
                         provider=r.provider, inputs=r.inputs, dependencies=r.dependencies,
                         protect=r.protect, retain_on_delete=r.retain_on_delete,
                         ignore_changes=r.ignore_changes, import_id=r.import_id)
                         for r in deployment.resources))


def plan_from_state(doc: Any, *, file: Path | None = None) -> StackPlan:
    """The last deployment of a Pulumi state document (``pulumi stack export`` output or the
    file backend's checkpoint, read by :func:`clusterstack.pulumi.state.read_state`) as a
    :class:`StackPlan`, to diff against. Raises StateFileError."""
    return _plan_of(read_state(doc, file=file))


def load_state_file(path: Path) -> StackPlan:
    """:func:`plan_from_state` of a state file (:func:`clusterstack.pulumi.state.load_state`).
    Raises StateFileError when it is missing, not JSON or not a deployment."""
    return _plan_of(load_state(path))


__all__ = ["ALL_OPTIONS", "DIFF_FORMAT", "MISSING", "PROVIDER_REPLACE_KEYS", "STATE_OPTIONS",
           "Finding", "OptionChange", "PropertyChange", "ResourceChange", "StackDiff",
           "diff_json", "diff_plans", "diff_values", "load_state_file", "output_changes", "pair_renames",
           "pair_stack_renames", "plan_from_state", "render_value", "renamed_plan"]
