"""Offline plan → Pulumi bulk-import file (``clusterstack import generate``).

Every custom, non-provider resource of the plan becomes an import entry with the ID its
component declared (``adoptId``, :mod:`clusterstack.pulumi.importids`); every component on the way
from the Stack down to an entry becomes a ``component: true`` entry, so Pulumi computes the
same parent chain — and so the same URN — as the program; every provider of the stack goes
into ``nameTable``. No CLI, no credentials: the plan is the real program under mocks.

Entry names (the file-local identifiers ``parent`` refers to) are lowercase identifiers built
from the kind and the logical name (``nodepool_cwdemo_h100``), a component's from its logical
name (``nodepools``), a provider's from its logical name plus ``_provider`` (``k8s_provider``);
a name two resources would share is prefixed with the parent's logical name, then numbered in
URN order — deterministic for the same plan.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.imports.importfile import ImportRefused
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi.importfile import PLACEHOLDER, ImportEntry, ImportFile, entries_by_type
from clusterstack.pulumi.importids import is_template, template_pattern
from clusterstack.pulumi.tokens import STACK_TYPE, is_patch, member
from clusterstack.imports.live import ABSENT, FOUND, LiveView
from clusterstack.verify.model import HelmRelease, KubeObject

if TYPE_CHECKING:   # the adapters' Protocols, for the signatures
    from clusterstack.adapters.kubernetes import KubeApi


class MissingImportId(ClusterstackError):
    """A component declared a leaf resource without registering its import ID: a bug in the
    component (exit code 1), caught by the completeness test of the shipped examples."""

    exit_code = 1


@dataclass(frozen=True)
class Placeholder:
    """An entry whose ID the config cannot give: ``form`` is the template (``<zone>/<record_id>``)."""

    name: str
    logical_name: str
    type: str
    form: str


@dataclass(frozen=True)
class Generated:
    """The result of :func:`generate`.

    ``file``: the import file; ``urns``: entry name → the resource's URN in the plan (equal to
    what Pulumi computes for the entry); ``templates``: entry name → the declared ID or ID
    template of every non-component entry (before ``--id`` overrides); ``placeholders``: the
    entries still ``<PLACEHOLDER>``; ``overridden``: names whose ID came from ``--id``.
    """

    file: ImportFile
    urns: Mapping[str, str]
    templates: Mapping[str, str]
    placeholders: tuple[Placeholder, ...] = ()
    overridden: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()      # URNs left out because the live cluster lacks them (--live)
    #: URNs kept in the file although nobody checked that the object exists under its name
    #: (offline: every entry; with --live/--live-dump: what could not be read)
    unverified: tuple[str, ...] = ()
    #: URNs of Patch resources, never in the file: `up` applies their fields to the existing
    #: object (tokens.is_patch: Pulumi cannot import one); the adoption report compares them
    patches: tuple[str, ...] = ()

    @property
    def imports(self) -> tuple[ImportEntry, ...]:
        """The non-component entries (the resources adopted)."""
        return tuple(e for e in self.file.resources if not e.component)

    def imports_by_type(self) -> dict[str, int]:
        return entries_by_type(self.imports)

    def placeholders_by_type(self) -> dict[str, list[Placeholder]]:
        out: dict[str, list[Placeholder]] = defaultdict(list)
        for p in self.placeholders:
            out[p.type].append(p)
        return dict(sorted(out.items()))


def _ident(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_") or "r"


def _unique_names(bases: dict[str, str], parents: dict[str, str]) -> dict[str, str]:
    """``{urn: base name}`` → ``{urn: unique name}``: a base two URNs share gets the parent's
    logical name as a prefix, and whatever still collides is numbered in URN order."""
    groups: dict[str, list[str]] = defaultdict(list)
    for urn, base in bases.items():
        groups[base].append(urn)
    named: dict[str, str] = {}
    for base, urns in groups.items():
        for urn in urns:
            named[urn] = base if len(urns) == 1 else _ident(f"{parents.get(urn, '')}_{base}")
    final: dict[str, str] = {}
    taken: dict[str, list[str]] = defaultdict(list)
    for urn in sorted(named):
        taken[named[urn]].append(urn)
    for name, urns in taken.items():
        for i, urn in enumerate(urns):
            final[urn] = name if i == 0 else f"{name}_{i + 1}"
    return final


def selectors(plan: StackPlan) -> dict[str, str]:
    """What ``--only`` accepts for ``plan``: ``{selector: description}`` — every leaf type
    token, every component type token and every component's logical name."""
    out: dict[str, str] = {}
    for r in plan.resources:
        if r.type == STACK_TYPE or r.is_provider:
            continue
        if r.custom:
            out[r.type] = "resource type"
        else:
            out[r.type] = "component type"
            out[r.name] = f"component {r.type}"
    return dict(sorted(out.items()))


def _in_scope(plan: StackPlan, only: Sequence[str]) -> set[str]:
    """URNs of the leaves selected by ``only`` (all leaves when empty). A component selector
    takes every leaf below that component. Raises ImportRefused on an unknown selector."""
    by_urn = plan.by_urn()
    leaves = [r for r in plan.resources if r.custom and not r.is_provider]
    if not only:
        return {r.urn for r in leaves}
    known = selectors(plan)
    unknown = [s for s in only if s not in known]
    if unknown:
        raise ImportRefused(f"--only {unknown[0]!r} matches nothing in stack {plan.stack}",
                            "use a resource type, a component type or a component name: "
                            + ", ".join(known))

    def ancestors(r: PlannedResource) -> Iterable[PlannedResource]:
        p = by_urn.get(r.parent) if r.parent else None
        while p is not None:
            yield p
            p = by_urn.get(p.parent) if p.parent else None

    chosen = set(only)
    return {r.urn for r in leaves
            if r.type in chosen or any(a.type in chosen or a.name in chosen for a in ancestors(r))}


def live_object(r: PlannedResource) -> tuple[str, str, str, str | None] | None:
    """What to look up for a Kubernetes leaf: ``("object", apiVersion, kind|name…)``.

    Returns ``("release", namespace, name, None)`` for a Helm release, ``(apiVersion, kind,
    name, namespace)`` for an object with ``metadata.name``, None for anything else (a DNS
    record, a GCP resource: not looked up, always kept)."""
    if not r.type.startswith("kubernetes:") or not r.custom or r.is_provider:
        return None
    if r.type == "kubernetes:helm.sh/v3:Release":
        return ("release", str(r.inputs.get("namespace", "default")), str(r.inputs["name"]), None)
    meta = r.inputs.get("metadata")
    api_version = r.inputs.get("apiVersion") or _api_version(r.type)
    kind = r.inputs.get("kind") or r.type.rsplit(":", 1)[1]
    if not isinstance(meta, dict) or "name" not in meta or not api_version:
        return None
    return (str(api_version), str(kind), str(meta["name"]), meta.get("namespace"))


def _api_version(type_: str) -> str | None:
    # kubernetes:<group>/<version>:<Kind>; the core group is written core/v1 (pulumi-kubernetes).
    parts = type_.split(":")
    if len(parts) != 3:
        return None
    gv = parts[1]
    return gv[len("core/"):] if gv.startswith("core/") else gv


def existing(plan: StackPlan, reader: KubeApi) -> Callable[[PlannedResource], bool | None]:
    """``exists(resource)`` for :func:`generate`: asks ``reader`` (a
    :class:`clusterstack.adapters.kubernetes.KubeApi`: ``get(KubeObject)``, ``helm_release(HelmRelease)``)
    whether each Kubernetes object of ``plan`` exists under its declared name; for any other
    resource the answer is None (not known). One lookup per object, memoised."""
    seen: dict[str, bool | None] = {}

    def exists(r: PlannedResource) -> bool | None:
        if r.urn not in seen:
            what = live_object(r)
            if what is None:
                seen[r.urn] = None
            elif what[0] == "release":
                seen[r.urn] = reader.helm_release(HelmRelease(what[1], what[2])) is not None
            else:
                seen[r.urn] = reader.get(KubeObject(what[0], what[1], what[2], what[3])) is not None
        return seen[r.urn]

    return exists


def existence(view: LiveView) -> Callable[[PlannedResource], bool | None]:
    """``exists(resource)`` for :func:`generate` from a
    :class:`clusterstack.imports.live.LiveView` (dumps or adapters): True found, False absent,
    None unverified. One lookup per object, memoised."""
    seen: dict[str, bool | None] = {}

    def exists(r: PlannedResource) -> bool | None:
        if r.urn not in seen:
            state = view.lookup(r).state
            seen[r.urn] = True if state == FOUND else False if state == ABSENT else None
        return seen[r.urn]

    return exists


def generate(plan: StackPlan, *, only: Sequence[str] = (), ids: Mapping[str, str] | None = None,
             exists: Callable[[PlannedResource], bool | None] | None = None) -> Generated:
    """Build the import file of ``plan``.

    ``only``: ``--only`` selectors (see :func:`selectors`); empty = every leaf. ``ids``:
    ``--id`` overrides, keyed by entry name or logical name, each filling an ID template (an ID
    the config can derive cannot be overridden — adopting an object under another name would
    rename it on the next ``up``). Raises MissingImportId when a leaf has no declared ID, and
    ImportRefused on a bad selector or override. ``exists`` (see :func:`existing`,
    :func:`existence`): when given, leaves for which it returns False are left out (``absent``):
    importing an object that is not there fails the whole import, and the next ``up`` creates it
    instead; leaves for which it returns None stay in the file and are listed as ``unverified``.
    Without ``exists`` (offline) every leaf is ``unverified``: nobody looked. Patch resources
    (``patches``) are never in the file: Pulumi cannot import one (:func:`tokens.is_patch`); the
    next ``up`` applies their fields, which the adoption report compares with the live object.
    """
    ids = dict(ids or {})
    by_urn = plan.by_urn()
    stack_urn = next((r.urn for r in plan.resources if r.type == STACK_TYPE), None)
    missing = [r.urn for r in plan.resources if r.custom and not r.is_provider and not r.adopt_id]
    if missing:
        raise MissingImportId(problems=[Problem(
            f"{urn} has no import ID", "declare it next to the resource with "
            "clusterstack.pulumi.importids.importable(resource, <rule>)") for urn in missing])

    scope = _in_scope(plan, only)
    patches = tuple(sorted(u for u in scope if is_patch(by_urn[u].type)))
    scope -= set(patches)
    absent: tuple[str, ...] = ()
    unverified: tuple[str, ...] = tuple(sorted(scope))
    if exists is not None:
        answers = {u: exists(by_urn[u]) for u in sorted(scope)}
        absent = tuple(u for u, a in answers.items() if a is False)
        unverified = tuple(u for u, a in answers.items() if a is None)
        scope -= set(absent)
    chosen_components: set[str] = set()
    for urn in scope:
        p = by_urn[urn].parent
        while p and p != stack_urn and p in by_urn:
            chosen_components.add(p)
            p = by_urn[p].parent

    providers = [r for r in plan.resources if r.is_provider]
    entries_urns = sorted(scope | chosen_components)
    parent_names = {r.urn: by_urn[r.parent].name if r.parent in by_urn and r.parent != stack_urn else ""
                    for r in plan.resources}
    bases: dict[str, str] = {}
    for r in providers:
        bases[r.urn] = _ident(f"{r.name}_provider")
    for urn in entries_urns:
        r = by_urn[urn]
        bases[urn] = _ident(r.name) if not r.custom else _ident(f"{member(r.type)}_{r.name}")
    names = _unique_names(bases, parent_names)

    name_table = {names[r.urn]: r.urn for r in providers}
    templates: dict[str, str] = {}
    logical_index: dict[str, list[str]] = defaultdict(list)
    for urn in scope:
        templates[names[urn]] = by_urn[urn].adopt_id or PLACEHOLDER
        logical_index[by_urn[urn].name].append(names[urn])

    # --id overrides: resolve each key to exactly one entry in scope
    overrides: dict[str, str] = {}
    all_leaf_names = {by_urn[u].name for u in by_urn if by_urn[u].custom and not by_urn[u].is_provider}
    for key, value in sorted(ids.items()):
        if key in templates:
            target = key
        elif len(logical_index.get(key, [])) == 1:
            target = logical_index[key][0]
        elif len(logical_index.get(key, [])) > 1:
            raise ImportRefused(f"--id {key}=…: logical name {key!r} is shared by entries "
                                f"{', '.join(sorted(logical_index[key]))}",
                                "use the entry name instead (see the file's `name` fields)")
        elif key in all_leaf_names:
            raise ImportRefused(f"--id {key}=…: {key!r} is outside the --only scope",
                                "widen --only or drop this --id")
        else:
            raise ImportRefused(f"--id {key}=…: no entry or logical name {key!r} in stack "
                                f"{plan.stack}", "use an entry name or a logical name from "
                                "the generated file (`name` / `logicalName`)")
        template = templates[target]
        if not is_template(template):
            raise ImportRefused(
                f"--id {key}=…: the ID of {target!r} is derived from the config ({template})",
                "--id only fills IDs the config cannot give; adopting an object under another "
                "name would rename it on the next `up` — change the reviewed config instead")
        if not value or not template_pattern(template).match(value):
            raise ImportRefused(f"--id {key}={value}: does not have the form {template}",
                                "give the full import ID, e.g. the Cloudflare record ID after "
                                "the zone ID")
        overrides[target] = value

    entries: list[ImportEntry] = []
    placeholders: list[Placeholder] = []
    children: dict[str | None, list[PlannedResource]] = defaultdict(list)
    for r in plan.resources:
        children[r.parent].append(r)
    wanted = scope | chosen_components

    def walk(parent_urn: str | None) -> None:
        for r in sorted(children.get(parent_urn, ()), key=lambda x: x.urn):
            if r.urn not in wanted:
                continue
            parent = names[r.parent] if r.parent in chosen_components else None
            if not r.custom:
                entries.append(ImportEntry(type=r.type, name=names[r.urn], logical_name=r.name,
                                           parent=parent, component=True))
                walk(r.urn)
                continue
            name = names[r.urn]
            template = templates[name]
            if name in overrides:
                id_ = overrides[name]
            elif is_template(template):
                id_ = PLACEHOLDER
                placeholders.append(Placeholder(name=name, logical_name=r.name, type=r.type,
                                                form=template))
            else:
                id_ = template
            entries.append(ImportEntry(
                type=r.type, name=name, logical_name=r.name, id=id_, parent=parent,
                provider=names.get(r.provider) if r.provider else None, version=r.version))

    walk(stack_urn)
    if stack_urn is None:  # a plan without the Stack resource (only in hand-made tests)
        walk(None)
    file = ImportFile(name_table=name_table, resources=tuple(entries))
    return Generated(file=file, urns={names[u]: u for u in wanted}, templates=templates,
                     placeholders=tuple(placeholders), overridden=tuple(sorted(overrides)),
                     absent=absent, unverified=unverified, patches=patches)


def parse_id_overrides(values: Sequence[str]) -> dict[str, str]:
    """``["LOGICAL=ID", …]`` → ``{LOGICAL: ID}``. Raises ImportRefused on a malformed or
    repeated key."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key or not value:
            raise ImportRefused(f"--id {v!r}: expected LOGICAL=ID", "e.g. --id "
                                "ctl-cw-demo-h100.example.org=<zone id>/<record id>")
        if key in out:
            raise ImportRefused(f"--id {key}=… given twice", "give each --id once")
        out[key] = value
    return out
