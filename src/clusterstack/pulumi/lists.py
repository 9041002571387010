"""Which item of a list in a resource's inputs is which: the receiving systems' own list keys,
and the keyed comparison every review of a change uses.

A diff that compares lists position by position misleads: deleting the first of two Kueue
flavors reads as "flavor 0 renamed, GPU quota 0 → 256". Kubernetes does not identify these
items by position. Its schemas say how it does (``x-kubernetes-list-type: map`` with
``x-kubernetes-list-map-keys``, and the strategic-merge ``x-kubernetes-patch-merge-key``), and
server-side apply merges lists by those keys (sigs.k8s.io/structured-merge-diff
``typed/merge.go``). :data:`LIST_KEYS` holds those keys per declared type token. Every
``schema`` entry is checked against the schema it cites by ``tests/pulumi/test_lists.py``:
the Kueue v0.14.4 CRDs (``../shared/reference/kueue-v0.14.4/config/components/crd/bases/``)
and Kubernetes' OpenAPI as ``kubernetes-validate`` ships it (``v1.33.0``
``_definitions.json``).

Some lists Kubernetes stores whole (``x-kubernetes-list-type: atomic``) still have an identity
a reviewer needs, and then :data:`LIST_KEYS` gives a ``display`` key, used for the review only:

* RBAC ``rules``: the authorizer allows a request when *any* rule allows it
  (kubernetes ``pkg/registry/rbac/validation/rule.go`` ``RulesAllow`` iterates every rule;
  order plays no part), so a rule is the verbs granted on (apiGroups, resources,
  resourceNames, nonResourceURLs);
* RBAC ``subjects``: (kind, namespace, name) — the same subject twice grants nothing more;
* Kueue Topology ``spec.levels``: by ``nodeLabel``, unique by the CRD's own CEL rule
  (``size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0``); the order of the levels
  is their meaning (highest level first, kueue ``apis/kueue/v1beta1/topology_types.go``), so a
  reorder is reported as one.

Paths name a keyed item the way structured-merge-diff prints a path element
(``fieldpath/element.go`` ``PathElement.String``, commit 046e0a3): ``[name="nvidia.com/gpu"]``,
several key fields sorted by name and joined by ``,``. A list is compared by position when it
has no key here, or when an item on either side is not a mapping, lacks a key field, or
repeats a key (Kubernetes would refuse the duplicate; the review then stays exact).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterstack.pulumi import tokens
from clusterstack.pulumi.paths import Key, Segment, WILDCARD, format_path, get_path, lenient_parse

#: Where the Kubernetes core schemas come from (kubernetes-validate's copy of the API server's
#: OpenAPI; ``x-kubernetes-list-map-keys`` and ``x-kubernetes-patch-merge-key`` per field).
K8S_OPENAPI = "kubernetes v1.33.0 OpenAPI (kubernetes-validate kubernetes-json-schema/v1.33.0-local/_definitions.json)"
#: Where the Kueue schemas come from.
KUEUE_CRDS = "kueue v0.14.4 config/components/crd/bases"


@dataclass(frozen=True)
class ListKey:
    """How the items of one list are identified.

    ``fields``: the key fields, as the schema lists them; ``source``: ``schema`` (the list-map
    keys of :data:`K8S_OPENAPI` or :data:`KUEUE_CRDS`, checked by a test) or ``display`` (an
    atomic list whose items have an identity all the same, see the module docstring);
    ``ordered``: the order of the items is itself meaningful; ``defaults``: key fields the API
    server fills in when omitted (the schema's ``default``), as ``(field, value)``."""

    fields: tuple[str, ...]
    source: str = "schema"
    ordered: bool = False
    defaults: tuple[tuple[str, Any], ...] = ()


_NAME = ListKey(("name",))
_POD = ("spec", "template", "spec")
_CONTAINER_LISTS = {"env": _NAME, "ports": ListKey(("containerPort", "protocol"),
                                                   defaults=(("protocol", "TCP"),)),
                    "volumeMounts": ListKey(("mountPath",)), "volumeDevices": ListKey(("devicePath",))}
_RBAC_RULE = ListKey(("apiGroups", "resources", "resourceNames", "nonResourceURLs"), "display")
_SUBJECT = ListKey(("kind", "namespace", "name"), "display")
_LEVELS = {("spec", "levels"): ListKey(("nodeLabel",), "display", ordered=True)}


def _pod_lists(pod: tuple[str, ...]) -> dict[tuple[str, ...], ListKey]:
    """The keyed lists of a PodSpec at ``pod`` (core/v1 PodSpec and Container)."""
    out = {(*pod, lst): _NAME for lst in ("containers", "initContainers", "ephemeralContainers",
                                          "imagePullSecrets", "volumes", "resourceClaims",
                                          "schedulingGates")}
    out[(*pod, "hostAliases")] = ListKey(("ip",))
    out[(*pod, "topologySpreadConstraints")] = ListKey(("topologyKey", "whenUnsatisfiable"))
    for c in ("containers", "initContainers", "ephemeralContainers"):
        for lst, key in _CONTAINER_LISTS.items():
            out[(*pod, c, WILDCARD, lst)] = key
    return out


#: type token → {list path (segments from the inputs' root, ``*`` any list item) → ListKey}.
LIST_KEYS: Mapping[str, Mapping[tuple[str, ...], ListKey]] = {
    tokens.KUEUE_CLUSTER_QUEUE: {
        ("spec", "resourceGroups", WILDCARD, "flavors"): _NAME,
        ("spec", "resourceGroups", WILDCARD, "flavors", WILDCARD, "resources"): _NAME,
    },
    tokens.KUEUE_TOPOLOGY: _LEVELS,
    tokens.KUEUE_TOPOLOGY_V1ALPHA1: _LEVELS,
    tokens.DEPLOYMENT: _pod_lists(_POD),
    tokens.K8S_SERVICE: {("spec", "ports"): ListKey(("port", "protocol"),
                                                    defaults=(("protocol", "TCP"),))},
    tokens.CLUSTER_ROLE: {("rules",): _RBAC_RULE},
    tokens.ROLE: {("rules",): _RBAC_RULE},
    tokens.CLUSTER_ROLE_BINDING: {("subjects",): _SUBJECT},
    tokens.ROLE_BINDING: {("subjects",): _SUBJECT},
}


def list_key(type_: str | None, path: tuple[Segment, ...]) -> ListKey | None:
    """The key of the list at ``path`` inside an input of a ``type_`` resource, or None (compared
    by position). List items in ``path`` (ints or :class:`Key`) match ``*``."""
    table = LIST_KEYS.get(type_ or "")
    if not table:
        return None
    shape = tuple(WILDCARD if isinstance(s, (int, Key)) else s for s in path)
    return table.get(shape)


def item_keys(items: Any, key: ListKey) -> list[Key] | None:
    """The :class:`Key` of every item of ``items`` (positions filled in), or None when the list
    cannot be keyed: an item is not a mapping, lacks a key field (a ``schema`` key, after
    defaults) or repeats another item's key."""
    if not isinstance(items, list):
        return None
    defaults = dict(key.defaults)
    out: list[Key] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return None
        fields = []
        for f in key.fields:
            value = item.get(f, defaults.get(f))
            if value is None:
                if key.source == "schema":
                    return None
                continue   # a display key field the item leaves out (resourceNames …)
            fields.append((f, value))
        if not fields:
            return None
        k = Key(tuple(sorted(fields)), i)
        ident = k.identity
        if ident in seen:
            return None
        seen.add(ident)
        out.append(k)
    return out


@dataclass(frozen=True)
class Leaf:
    """One changed leaf: ``segments`` (:mod:`clusterstack.pulumi.paths`), ``old``/``new`` (the
    caller's ``absent`` marker for no value), ``note``: ``order`` when the leaf is the order of
    an ordered keyed list (``old``/``new`` then list the item keys in order)."""

    segments: tuple[Segment, ...]
    old: Any
    new: Any
    note: str = ""


def keyed_leaves(old: Any, new: Any, *, type_: str | None, absent: Any,
                 path: tuple[Segment, ...] = ()) -> list[Leaf]:
    """Leaf differences between two input values of a ``type_`` resource (``None`` and
    ``absent`` mean no value on that side): mappings key by key (sorted), lists by the key
    :func:`list_key` gives them (items in the new side's order, then the removed ones), else
    by position; everything else is a leaf when it differs (``1`` and ``True`` differ).

    An item that exists on one side of a keyed list only is reported by its own leaves, its
    key fields left out (they are in its path), so each quota or size inside is a line of its
    own; an item with no other field is one leaf. Ordered keyed lists also report a change of
    the order of their keys as one ``order`` leaf at the list's path."""
    old = absent if old is None else old
    new = absent if new is None else new
    out: list[Leaf] = []
    _walk(old, new, path, type_, absent, out, expand=False)
    return out


def _walk(old: Any, new: Any, path: tuple[Segment, ...], type_: str | None, absent: Any,
          out: list[Leaf], *, expand: bool, skip: frozenset[str] = frozenset()) -> None:
    old = absent if old is None else old
    new = absent if new is None else new
    if old is absent and new is absent:
        return
    if expand:   # inside an item present on one side only: the missing side is empty
        if old is absent and isinstance(new, (Mapping, list)):
            old = {} if isinstance(new, Mapping) else []
        elif new is absent and isinstance(old, (Mapping, list)):
            new = {} if isinstance(old, Mapping) else []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        before = len(out)
        for k in sorted(set(old) | set(new)):
            if k not in skip:
                _walk(old.get(k), new.get(k), (*path, k), type_, absent, out, expand=expand)
        if expand and len(out) == before and (old or new):   # nothing but its key: the item
            out.append(Leaf(path, old if old else absent, new if new else absent))
        return
    if isinstance(old, list) and isinstance(new, list):
        key = list_key(type_, path)
        ok = item_keys(old, key) if key else None
        nk = item_keys(new, key) if key else None
        if key is not None and ok is not None and nk is not None:
            _keyed(old, new, ok, nk, key, path, type_, absent, out)
            return
        if expand and not (old and new):   # a whole list on one side of a new/removed item
            out.append(Leaf(path, old if old else absent, new if new else absent))
            return
        for i in range(max(len(old), len(new))):
            _walk(old[i] if i < len(old) else absent, new[i] if i < len(new) else absent,
                  (*path, i), type_, absent, out, expand=False)
        return
    if old == new and type(old) is type(new):
        return
    out.append(Leaf(path, old, new))


def _keyed(old: list, new: list, ok: list[Key], nk: list[Key], key: ListKey,
           path: tuple[Segment, ...], type_: str | None, absent: Any, out: list[Leaf]) -> None:
    by_old = {k.identity: (k, item) for k, item in zip(ok, old)}
    by_new = {k.identity: (k, item) for k, item in zip(nk, new)}
    skip = frozenset(key.fields)
    for k, item in zip(nk, new):
        if k.identity in by_old:
            _walk(by_old[k.identity][1], item, (*path, k), type_, absent, out, expand=False)
        else:
            _walk(absent, item, (*path, k), type_, absent, out, expand=True, skip=skip)
    for k, item in zip(ok, old):
        if k.identity not in by_new:
            _walk(item, absent, (*path, k), type_, absent, out, expand=True, skip=skip)
    if key.ordered and [k.identity for k in ok] != [k.identity for k in nk]:
        out.append(Leaf(path, [k.label for k in ok], [k.label for k in nk], note="order"))


def rekey(type_: str | None, entries: list[tuple[str, str]], old_inputs: Any, new_inputs: Any
          ) -> list[tuple[str, str, Any, Any, str]]:
    """An engine's detailed diff with its positional entries under keyed lists replaced by the
    keyed leaves of the same lists.

    ``entries`` are ``(path, kind)`` as the engine reports them (pulumi-kubernetes computes its
    detailed diff from a JSON patch and compares arrays by position, provider/pkg/provider/
    provider.go ``addPatchArrayToDiff``: ``spec.resourceGroups[0].flavors[0].resources[3]
    .nominalQuota``); ``old_inputs``/``new_inputs`` the step's inputs. An entry whose path
    reaches a list :func:`list_key` keys is dropped, and that list's keyed leaves
    (:func:`keyed_leaves`) take its place, each with kind ``add``, ``delete`` or ``update`` —
    with ``-replace`` when any dropped entry of that list forced a replacement. Other entries
    are kept. Returns ``(path, kind, old, new, sized)`` sorted by path: ``None`` for no value,
    ``sized`` whether the leaf is a byte quantity (:func:`is_size`). Without both inputs (a
    create, a delete, an event without inputs) every entry is kept."""
    def row(segs: tuple[Segment, ...], path: str, kind: str, old: Any, new: Any):
        return (path, kind, old, new, is_size(segs))

    keyed = bool(LIST_KEYS.get(type_ or "")) and isinstance(old_inputs, Mapping) \
        and isinstance(new_inputs, Mapping)
    out = []
    lists: dict[tuple[Segment, ...], bool] = {}   # keyed list path → a dropped entry forced replace
    for path, kind in entries:
        segs = lenient_parse(path)
        prefix = next((segs[:i] for i in range(1, len(segs) + 1)
                       if list_key(type_, segs[:i]) is not None), None) if keyed else None
        if prefix is None:
            out.append(row(segs, path, kind, get_path(old_inputs, path), get_path(new_inputs, path)))
        else:
            lists[prefix] = lists.get(prefix, False) or kind.endswith("-replace")
    marker = object()
    for prefix, forced in lists.items():
        for leaf in keyed_leaves(get_path(old_inputs, prefix), get_path(new_inputs, prefix),
                                 type_=type_, absent=marker, path=prefix):
            kind = "add" if leaf.old is marker else "delete" if leaf.new is marker else "update"
            out.append(row(leaf.segments, format_path(leaf.segments),
                           kind + ("-replace" if forced else ""),
                           None if leaf.old is marker else leaf.old,
                           None if leaf.new is marker else leaf.new))
    return sorted({e[0]: e for e in out}.values(), key=lambda e: e[0])


# --- sizes ----------------------------------------------------------------------------------

#: Kubernetes resources measured in bytes (Kubernetes "Resource units in Kubernetes": memory,
#: and local ephemeral storage; ``storage`` of a PersistentVolumeClaim request).
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
def is_size(segments: tuple[Segment, ...]) -> bool:
    """True when the leaf at ``segments`` is a quantity of a byte resource: the nearest
    resource name on its path (a mapping key such as ``limits.memory``, or a keyed item's
    ``name`` such as ``resources[name="memory"]``) is one of :data:`BYTE_RESOURCES`."""
    for seg in reversed(segments):
        if isinstance(seg, Key):
            name = dict(seg.fields).get("name")
            if isinstance(name, str):
                return name in BYTE_RESOURCES
        elif isinstance(seg, str) and seg in BYTE_RESOURCES:
            return True
    return False


__all__ = ["BYTE_RESOURCES", "K8S_OPENAPI", "KUEUE_CRDS", "LIST_KEYS", "Leaf", "ListKey",
           "is_size", "item_keys", "keyed_leaves", "list_key", "rekey"]
