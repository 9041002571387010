"""The receiving systems' rules an adoption depends on: what a first ``up`` after an adoption
changes on a live object, what the API server refuses, what a provider replaces, and which of
Pulumi's ``~ update`` lines change nothing. Each rule names its source.

One comparison, :func:`compare`, serves both adoption paths:

- *from live objects* (``import report``/``apply``): ``before`` is the live object as the API
  returns it (:mod:`clusterstack.imports.live` puts it in the shape of Pulumi's inputs), and
  ``owned=False``: the applier owns nothing yet;
- *from an existing Pulumi stack* (``import migrate``): ``before`` is the inputs the old stack
  recorded, and ``owned=True``: the migrated state keeps the old stack's field manager, so a
  field the old program set and the new one does not declare is removed.

Rules encoded (the decision of each receiving system):

**Kubernetes server-side apply** (pulumi-kubernetes applies every object with SSA; Kubernetes
docs "Server-Side Apply", *Field management* and *Merge strategy*): an apply sets exactly the
fields it declares; a field another manager set, which the applier never owned, stays; a map
(labels, annotations, ``spec``) merges key by key; a list without ``x-kubernetes-list-type: map``
is *atomic* — the declared list replaces the live one whole, so it is compared item by item
(an item's extra live fields are taken as the server's defaults, e.g. a CRD's ``default``). With
``owned`` a field the manager applied before and no longer declares is removed.

**Quantities**: a Kubernetes quantity is compared by value, not spelling — Kueue's ClusterQueue
webhook and the API server return the canonical form (``1000000000`` comes back ``1G``; Marin's
``lib/iris/src/iris/cluster/platforms/k8s/kueue_manifests.py`` notes the perpetual cosmetic
diff; apimachinery ``resource.Quantity`` canonicalisation). Paths: a ClusterQueue's
``nominalQuota``/``borrowingLimit``/``lendingLimit`` and ``resources.limits``/``requests``.

**Refused by the API server** (an in-place update Pulumi plans and the server rejects, so every
preview succeeds and the ``up`` fails) — :data:`IMMUTABLE`:

- PriorityClass ``value`` and ``preemptionPolicy``: kubernetes ``pkg/apis/scheduling/validation/
  validation.go`` ``ValidatePriorityClassUpdate`` (@00447344: "may not be changed in an update",
  ``ValidateImmutableField``);
- Kueue Topology ``spec.levels``: CEL ``self == oldSelf`` "field is immutable"
  (kueue v0.14.4 ``config/components/crd/bases/kueue.x-k8s.io_topologies.yaml`` lines 66-68);
- Kueue ResourceFlavor ``spec`` once the live flavor has ``spec.topologyName``: CEL
  ``!has(oldSelf.topologyName) || self == oldSelf`` (``kueue.x-k8s.io_resourceflavors.yaml``
  lines 189-190);
- Kueue LocalQueue ``spec.clusterQueue``: CEL ``self == oldSelf``
  (``kueue.x-k8s.io_localqueues.yaml`` lines 65-67).

**Replaced by the provider**: :mod:`clusterstack.pulumi.forcenew` (pulumi-kubernetes ``diff.go``
forceNew, terraform-provider-google ``ForceNew``), plus the guard's ``replace_properties``.

**Import artefacts** (Pulumi shows ``~ update`` after an import; nothing changes live) —
:func:`import_read` is what Pulumi records as inputs when it imports, :func:`artefact_reason`
why each such line is a no-op:

- a *custom resource* keeps no spec: pulumi-kubernetes v4.32.0 ``provider/pkg/provider/
  provider.go`` ``Read`` sets only apiVersion, kind, name and namespace when it reads from the
  cluster (lines 1980-1999) and then copies the live fields of the type's *schema* input
  properties (lines 2090-2099) — a CRD kind is not in the kubernetes package schema, so ``spec``
  stays empty and every CR shows ``~ update`` even when identical;
- a built-in kind keeps what the live object has (minus ``creationTimestamp``, ``generation``,
  ``managedFields``, ``resourceVersion``, ``uid``, the last-applied and deployment-revision
  annotations, lines 2100-2112): fields another party set show as removals the apply never
  makes — the Namespace label ``kubernetes.io/metadata.name`` is set by the API server on every
  namespace (Kubernetes "Well-Known Labels, Annotations and Taints"), a Namespace's
  ``spec.finalizers`` cannot change through an update (``pkg/registry/core/namespace/
  strategy.go`` ``PrepareForUpdate`` keeps the old finalizers, @04a46264);
- a Helm release is read back with its chart, version and values but no ``repositoryOpts``
  (pulumi-kubernetes v4.32.0 ``provider/pkg/provider/helm_release.go`` ``importRelease``
  lines 1378-1410, ``serializeImportInputs`` lines 1124-1129): the resulting upgrade renders
  the same chart version with the same values — a new release revision, the same manifests.
  The same holds for a change of a release's operation settings (``atomic``, ``timeout``,
  ``createNamespace``…) in a migrated state.

**Google APIs as terraform-provider-google reads them** (the bridge pulumi-gcp runs): an
optional, non-computed argument the program leaves out but the live object has is planned away
(``description``, ``cleanup_policies``, ``remote_repository_config``); ``labels`` are
non-authoritative (only declared keys are managed); ``ip_version`` ``""`` equals ``IPV4``
(``EmptyOrDefaultStringSuppress``); ``region``/``network``/``subnetwork`` compare by name
(``CompareSelfLinkOrResourceName``); a repository's ``format`` compares case-insensitively
(``CaseDiffSuppress``) and cleanup-policy durations by seconds (``durationDiffSuppress``, which
reads ``s``/``m``/``h``/``d``) with ``tag_state`` defaulting to ``ANY``
(``resource_artifact_registry_repository.go`` @07fc8657).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from clusterstack.plan.diff import MISSING as PLAN_MISSING, diff_values
from clusterstack.pulumi import tokens
from clusterstack.pulumi.forcenew import force_new
from clusterstack.pulumi.paths import Segment, contains, format_path, lenient_parse
from clusterstack.pulumi.values import SECRET, UNKNOWN


MISSING: Any = PLAN_MISSING
"""No value on that side (an absent key or null): the static diff's own marker."""

# Effects of one field, worst last.
CHANGE, REFUSED, REPLACE = "change", "refused", "replace"
EFFECT_ORDER = {CHANGE: 0, REFUSED: 1, REPLACE: 2}


@dataclass(frozen=True)
class FieldChange:
    """One field the first ``up`` changes live. ``declared``/``before`` are :data:`MISSING`
    when that side has no value; ``effect`` is :data:`CHANGE`, :data:`REFUSED` (the API server
    rejects the update) or :data:`REPLACE` (the provider replaces the object); ``rule`` cites
    the refusing or replacing rule."""

    path: str
    declared: Any
    before: Any
    effect: str = CHANGE
    rule: str = ""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "effect": self.effect}
        if self.declared is not MISSING:
            d["declared"] = self.declared
        if self.before is not MISSING:
            d["live"] = self.before
        if self.rule:
            d["rule"] = self.rule
        return d


@dataclass(frozen=True)
class Artefact:
    """A line Pulumi shows as ``~ update`` that changes nothing live, and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason}


# --- the refusal rules ----------------------------------------------------------------------

_PC = "kubernetes pkg/apis/scheduling/validation/validation.go@00447344 ValidatePriorityClassUpdate"
_KUEUE = "kueue v0.14.4 config/components/crd/bases/"


@dataclass(frozen=True)
class Immutable:
    """``path`` cannot change in an update of ``kind`` (while ``applies(before)``)."""

    path: str
    rule: str
    applies: Callable[[Mapping[str, Any]], bool] = lambda _before: True


#: (API group, kind) → the fields the API server refuses to change in place.
IMMUTABLE: Mapping[tuple[str, str], tuple[Immutable, ...]] = {
    ("scheduling.k8s.io", "PriorityClass"): (
        Immutable("value", f"{_PC}: value \"may not be changed in an update\""),
        Immutable("preemptionPolicy", f"{_PC}: preemptionPolicy is immutable"),
    ),
    ("kueue.x-k8s.io", "Topology"): (
        Immutable("spec.levels", f"{_KUEUE}kueue.x-k8s.io_topologies.yaml:66-68 CEL "
                                 "`self == oldSelf`: \"field is immutable\""),
    ),
    ("kueue.x-k8s.io", "ResourceFlavor"): (
        Immutable("spec", f"{_KUEUE}kueue.x-k8s.io_resourceflavors.yaml:189-190 CEL "
                          "`!has(oldSelf.topologyName) || self == oldSelf`: \"resourceFlavorSpec "
                          "are immutable when topologyName is set\"",
                  lambda before: bool((before.get("spec") or {}).get("topologyName"))),
    ),
    ("kueue.x-k8s.io", "LocalQueue"): (
        Immutable("spec.clusterQueue", f"{_KUEUE}kueue.x-k8s.io_localqueues.yaml:65-67 CEL "
                                       "`self == oldSelf`: \"field is immutable\""),
    ),
}


_CQ = f"{_KUEUE}kueue.x-k8s.io_clusterqueues.yaml"

#: (API group, kind) → (path, the value the API server fills in when the field is unset, rule).
#: A declared field equal to it, which the old state (or the object's creator) left unset, is
#: already live: not a change.
SERVER_DEFAULTS: Mapping[tuple[str, str], tuple[tuple[tuple[Segment, ...], Any, str], ...]] = {
    ("kueue.x-k8s.io", "ClusterQueue"): (
        (("spec", "queueingStrategy"), "BestEffortFIFO", f"{_CQ}:327 default"),
        (("spec", "stopPolicy"), "None", f"{_CQ}:478 default"),
        (("spec", "flavorFungibility", "whenCanBorrow"), "Borrow", f"{_CQ}:167 default"),
        (("spec", "flavorFungibility", "whenCanPreempt"), "TryNextFlavor", f"{_CQ}:181 default"),
        (("spec", "preemption", "borrowWithinCohort", "policy"), "Never", f"{_CQ}:266 default"),
        (("spec", "preemption", "reclaimWithinCohort"), "Never", f"{_CQ}:281 default"),
        (("spec", "preemption", "withinClusterQueue"), "Never", f"{_CQ}:304 default"),
        (("spec", "fairSharing", "weight"), 1, f"{_CQ}:144 default"),
    ),
    ("kueue.x-k8s.io", "LocalQueue"): (
        (("spec", "stopPolicy"), "None", f"{_KUEUE}kueue.x-k8s.io_localqueues.yaml:95 default"),
        (("spec", "fairSharing", "weight"), 1, f"{_KUEUE}kueue.x-k8s.io_localqueues.yaml default"),
    ),
    ("", "Namespace"): (
        (("spec", "finalizers"), ["kubernetes"],
         "kubernetes pkg/registry/core/namespace/strategy.go@04a46264 PrepareForCreate adds the "
         "`kubernetes` finalizer"),
    ),
}


def server_default(type_token: str, path: tuple[Segment, ...], value: Any) -> str | None:
    """The rule by which the API server already set ``value`` at ``path`` when it was left
    unset (:data:`SERVER_DEFAULTS`: every default under ``path`` must account for ``value``),
    or None."""
    gk = group_kind(type_token)
    entries = SERVER_DEFAULTS.get(gk, ()) if gk else ()
    if not entries:
        return None
    subtree: Any = MISSING
    rule = ""
    for dpath, dvalue, drule in entries:
        if dpath[:len(path)] != path:
            continue
        rest = dpath[len(path):]
        if not rest:
            subtree, rule = dvalue, drule
            break
        if subtree is MISSING:
            subtree = {}
        node = subtree
        for seg in rest[:-1]:
            node = node.setdefault(seg, {})
        node[rest[-1]] = dvalue
        rule = rule or drule
    if subtree is MISSING or not _covers(value, subtree, path):
        return None
    return rule


def group_kind(type_token: str) -> tuple[str, str] | None:
    """``(API group, kind)`` of a Kubernetes type token (group ``""`` for core), else None."""
    try:
        pkg, module, kind = tokens.split(type_token)
    except ValueError:
        return None
    if pkg != "kubernetes" or "/" not in module:
        return None
    group = module.rsplit("/", 1)[0]
    return ("" if group == "core" else group), kind


def is_kubernetes_object(type_token: str) -> bool:
    """A Kubernetes object applied with SSA (not a Helm release, not a provider)."""
    return group_kind(type_token) is not None and type_token != tokens.HELM_RELEASE


#: Built-in API groups: pulumi-kubernetes' schema has their kinds (``kinds.KnownGroupVersions``);
#: any other group is a custom resource, whose spec an import does not read.
BUILTIN_GROUPS = frozenset({"", "apps", "batch", "rbac.authorization.k8s.io", "networking.k8s.io",
                            "scheduling.k8s.io", "policy", "storage.k8s.io", "autoscaling",
                            "admissionregistration.k8s.io", "apiextensions.k8s.io",
                            "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io",
                            "certificates.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io"})


def is_custom_resource(type_token: str) -> bool:
    gk = group_kind(type_token)
    return gk is not None and type_token != tokens.HELM_RELEASE and gk[0] not in BUILTIN_GROUPS


# --- values ---------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10**3),
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
            "E": Decimal(10**18)}
_QUANTITY_KEYS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity's value (apimachinery ``resource.ParseQuantity`` grammar: a number
    with an optional binary ``Ki…Ei``, decimal ``n…E`` or ``e<exp>`` suffix); None when
    ``value`` is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    if m.group(2):
        return number * (Decimal(10) ** int(m.group(2)[1:]))
    suffix = m.group(3)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number


def _is_quantity_path(path: tuple[Segment, ...]) -> bool:
    if path and path[-1] in _QUANTITY_KEYS:
        return True
    return len(path) >= 2 and path[-2] in ("limits", "requests")


def _scalar_equal(a: Any, b: Any, path: tuple[Segment, ...]) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if _is_quantity_path(path):
        qa, qb = quantity(a), quantity(b)
        if qa is not None and qb is not None:
            return qa == qb
    return a == b and type(a) is type(b)


def _norm(value: Any) -> Any:
    return MISSING if value is None else value


def _covers(declared: Any, live: Any, path: tuple[Segment, ...]) -> bool:
    """True when applying ``declared`` over ``live`` leaves ``live`` as it is (maps merge key by
    key, lists atomic with each item covered)."""
    declared, live = _norm(declared), _norm(live)
    if declared is MISSING:
        return True
    if isinstance(declared, Mapping):
        if not isinstance(live, Mapping):
            return not declared and live is MISSING
        return all(_covers(v, live.get(k), (*path, k)) for k, v in declared.items())
    if isinstance(declared, list):
        return isinstance(live, list) and len(declared) == len(live) and \
            all(_covers(d, v, (*path, i)) for i, (d, v) in enumerate(zip(declared, live)))
    if live is MISSING:
        return False
    return _scalar_equal(declared, live, path)


def _known(value: Any) -> bool:
    if isinstance(value, str):
        return value not in (SECRET, UNKNOWN)
    if isinstance(value, Mapping):
        return all(_known(v) for v in value.values())
    if isinstance(value, list):
        return all(_known(v) for v in value)
    return True


def ssa_changes(declared: Mapping[str, Any], before: Mapping[str, Any], *, owned: bool,
                skip: Sequence[tuple[Segment, ...]] = (),
                default_rule: Callable[[tuple[Segment, ...], Any], bool] | None = None
                ) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    """``[(path, declared, before)]``: the fields a server-side apply of ``declared`` changes on
    ``before`` (rules in the module docstring). Values the plan cannot know (``[unknown]``,
    ``[secret]``) are not compared. ``skip``: paths not compared (identity);
    ``default_rule(path, value)``: True when the server already set ``value`` at ``path``
    (unset in ``before``)."""
    out: list[tuple[tuple[Segment, ...], Any, Any]] = []

    def walk(d: Any, b: Any, path: tuple[Segment, ...]) -> None:
        if path in skip:
            return
        d, b = _norm(d), _norm(b)
        if d is MISSING:
            if owned and b is not MISSING and _known(b):
                out.append((path, MISSING, b))
            return
        if not _known(d):
            return
        if isinstance(d, Mapping) and isinstance(b, Mapping):
            keys = set(d) | (set(b) if owned else set())
            for k in sorted(keys, key=str):
                walk(d.get(k), b.get(k), (*path, k))
            return
        if isinstance(d, Mapping) and b is MISSING:
            for k in sorted(d, key=str):     # each declared leaf on its own (defaults, paths)
                walk(d[k], MISSING, (*path, k))
            return
        if isinstance(d, list) and isinstance(b, list) and len(d) == len(b):
            if all(_covers(x, y, (*path, i)) for i, (x, y) in enumerate(zip(d, b))):
                if owned and any(_extra(x, y) for x, y in zip(d, b)):
                    out.append((path, d, b))
                return
            # the list is replaced whole; name the items (and fields) that differ
            for i, (x, y) in enumerate(zip(d, b)):
                if not _covers(x, y, (*path, i)):
                    walk(x, y, (*path, i))
            return
        if _covers(d, b, path):
            return
        if b is MISSING and default_rule is not None and default_rule(path, d):
            return
        out.append((path, d, b))

    walk(declared, before, ())
    return out


def _extra(declared: Any, before: Any) -> bool:
    """``before`` has a field ``declared`` lacks (inside list items, for an owned apply)."""
    if isinstance(declared, Mapping) and isinstance(before, Mapping):
        return any(k not in declared or _extra(declared[k], v) for k, v in before.items()
                   if v is not None)
    if isinstance(declared, list) and isinstance(before, list):
        return any(_extra(x, y) for x, y in zip(declared, before))
    return False


# --- per type: the comparison -----------------------------------------------------------------

_K8S_IDENTITY: tuple[tuple[Segment, ...], ...] = (("apiVersion",), ("kind",), ("metadata", "name"),
                                                  ("metadata", "namespace"))
#: A release's content: what Helm renders from. Anything else is an operation setting.
HELM_CONTENT = ("chart", "version", "values", "name", "namespace")


def chart_name(chart: Any) -> Any:
    """A chart reference without its repository alias (``coreweave/cks-kueue`` → ``cks-kueue``,
    as Helm records ``chart.metadata.name``)."""
    return chart.rsplit("/", 1)[-1] if isinstance(chart, str) else chart


def _helm_changes(declared: Mapping[str, Any], before: Mapping[str, Any]
                  ) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    out: list[tuple[tuple[Segment, ...], Any, Any]] = []
    for key in HELM_CONTENT:
        d, b = declared.get(key), before.get(key)
        if key == "values":
            out += [(p, new, old) for p, old, new in diff_values(b or {}, d or {}, ("values",))
                    if _known(new)]
            continue
        if key == "chart":
            d, b = chart_name(d), chart_name(b)
        d, b = _norm(d), _norm(b)
        if d is not MISSING and _known(d) and not _scalar_equal(d, b, (key,)):
            out.append(((key,), d, b))
    return out


def _seconds(value: Any) -> Any:
    if isinstance(value, str) and value[-1:] in "smhd" and value[:-1].isdigit():
        return int(value[:-1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[value[-1]]
    return value


def _last_segment(value: Any) -> Any:
    return value.rstrip("/").rsplit("/", 1)[-1] if isinstance(value, str) else value


def _cleanup_policies(value: Any) -> Any:
    """Cleanup policies as ``{id: policy}`` (a set keyed by id in the provider; a map in the
    API), durations in seconds, ``tagState`` defaulted to ``ANY``."""
    if value in (None, [], {}):
        return MISSING
    items = value.values() if isinstance(value, Mapping) else value
    out = {}
    for p in items:
        p = dict(p)
        cond = dict(p.get("condition") or {})
        if cond or p.get("action") == "DELETE":
            cond.setdefault("tagState", "ANY")
            for k in ("olderThan", "newerThan"):
                if k in cond:
                    cond[k] = _seconds(cond[k])
            p["condition"] = cond
        out[str(p.get("id"))] = p
    return dict(sorted(out.items()))


def _gcp_normal(type_token: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    v = {k: x for k, x in inputs.items() if not k.startswith("__") and x not in (None, "")}
    for k in ("region", "network", "subnetwork"):
        if k in v:
            v[k] = _last_segment(v[k])
    if type_token in (tokens.ADDRESS, tokens.GLOBAL_ADDRESS) and v.get("ipVersion") == "IPV4":
        v.pop("ipVersion")
    if type_token == tokens.ARTIFACT_REPOSITORY:
        if isinstance(v.get("format"), str):
            v["format"] = v["format"].upper()
        if "cleanupPolicies" in v:
            v["cleanupPolicies"] = _cleanup_policies(v["cleanupPolicies"])
            if v["cleanupPolicies"] is MISSING:
                v.pop("cleanupPolicies")
        if v.get("cleanupPolicyDryRun") is False:
            v.pop("cleanupPolicyDryRun")
        rrc = v.get("remoteRepositoryConfig")
        if isinstance(rrc, Mapping):
            v["remoteRepositoryConfig"] = {k: x for k, x in rrc.items() if x not in (None, "", {})}
    return v


def gcp_suppression(type_token: str, path: str, old: Any, new: Any) -> str | None:
    """Why terraform-provider-google plans nothing for this difference of a top-level argument
    (module docstring, "Google APIs"), or None when it plans a change."""
    key = path.split(".", 1)[0].split("[", 1)[0]
    o = _norm(old)
    n = _norm(new)
    def unset(x: Any, *zero: Any) -> bool:
        return x is MISSING or (isinstance(x, (str, bool)) and any(x is z or x == z for z in zero)
                                and type(x) is type(zero[0]))

    if (unset(o, "") and unset(n, "")) or (key == "cleanupPolicyDryRun" and unset(o, False)
                                           and unset(n, False)):
        return ("the unset value: the Terraform SDK reads an empty string (false) and an unset "
                "argument alike")
    if key in ("region", "network", "subnetwork") and _last_segment(o) == _last_segment(n):
        return "the same resource by name and by self link (CompareSelfLinkOrResourceName)"
    if key == "ipVersion" and all(x is MISSING or x in ("", "IPV4") for x in (o, n)):
        return "IPV4 is the default (EmptyOrDefaultStringSuppress(\"IPV4\"))"
    if key == "format" and isinstance(o, str) and isinstance(n, str) and o.upper() == n.upper():
        return "the same format in another case (CaseDiffSuppress)"
    if key == "cleanupPolicies" and _cleanup_policies(o if o is not MISSING else None) == \
            _cleanup_policies(n if n is not MISSING else None):
        return ("the same cleanup policies (a set keyed by id; durationDiffSuppress compares "
                "durations in seconds; tag_state defaults to ANY)")
    return None


#: Optional, non-computed arguments: a live value the program leaves out is planned away.
_GCP_AUTHORITATIVE: Mapping[str, tuple[str, ...]] = {
    tokens.ADDRESS: ("description",),
    tokens.GLOBAL_ADDRESS: ("description",),
    tokens.ARTIFACT_REPOSITORY: ("description", "cleanupPolicies", "remoteRepositoryConfig",
                                 "dockerConfig"),
}


def _gcp_changes(type_token: str, declared: Mapping[str, Any], before: Mapping[str, Any],
                 owned: bool) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    d, b = _gcp_normal(type_token, declared), _gcp_normal(type_token, before)
    out: list[tuple[tuple[Segment, ...], Any, Any]] = []
    keys = set(d) | {k for k in b if owned or k in _GCP_AUTHORITATIVE.get(type_token, ())}
    for key in sorted(keys):
        dv, bv = d.get(key, MISSING), b.get(key, MISSING)
        if key == "labels" and not owned:      # non-authoritative: only declared keys
            if dv is MISSING:
                continue
            if isinstance(bv, Mapping) and isinstance(dv, Mapping):
                bv = {k: x for k, x in bv.items() if k in dv}
        if not _known(dv):
            continue
        if key == "cleanupPolicies":     # a set keyed by id: one line, as written on each side
            if dv != bv:
                out.append(((key,), _norm(declared.get(key)), _norm(before.get(key))))
            continue
        if isinstance(dv, (Mapping, list)) or isinstance(bv, (Mapping, list)):
            out += [(p, new, old) for p, old, new in diff_values(
                None if bv is MISSING else bv, None if dv is MISSING else dv, (key,))]
        elif not _scalar_equal(dv, bv, (key,)):
            out.append(((key,), dv, bv))
    return out


def _effect(type_token: str, path: tuple[Segment, ...], before: Mapping[str, Any],
            replace_paths: Sequence[str]) -> tuple[str, str]:
    rule = force_new(type_token)
    for p in (*(rule.paths if rule else ()), *replace_paths):
        pp = lenient_parse(p)
        if contains(pp, path) or contains(path, pp):
            src = rule.source if rule and p in rule.paths else "guard replace_properties " \
                  "(clusterstack.toml [guard]; components declare replaceOnChanges)"
            return REPLACE, f"{src}: {p}"
    gk = group_kind(type_token)
    for imm in IMMUTABLE.get(gk, ()) if gk else ():
        ip = lenient_parse(imm.path)
        if (contains(ip, path) or contains(path, ip)) and imm.applies(before):
            return REFUSED, imm.rule
    return CHANGE, ""


def compare(type_token: str, declared: Mapping[str, Any], before: Mapping[str, Any], *,
            owned: bool, ignore_changes: Sequence[str] = (),
            replace_paths: Sequence[str] = ()) -> tuple[FieldChange, ...]:
    """What the first ``up`` does to an object whose current state is ``before`` (Pulumi's
    input shape) when the program declares ``declared``: the live field changes, each with its
    effect (change / refused / replace; module docstring). Paths under ``ignore_changes`` are
    left out (the engine keeps the old value — Pulumi docs "ignoreChanges");
    ``replace_paths``: the guard's replace properties of this type. Sorted by path."""
    declared = {k: v for k, v in declared.items() if not str(k).startswith("__")}
    before = {k: v for k, v in before.items() if not str(k).startswith("__")}
    if type_token == tokens.HELM_RELEASE:
        raw = _helm_changes(declared, before)
    elif is_kubernetes_object(type_token):
        raw = ssa_changes(declared, before, owned=owned, skip=_K8S_IDENTITY,
                          default_rule=lambda p, v: server_default(type_token, p, v) is not None)
    elif tokens.package(type_token) == "gcp":
        raw = _gcp_changes(type_token, declared, before, owned)
    else:
        raw = ssa_changes(declared, before, owned=owned)
    ignore = [lenient_parse(p) for p in ignore_changes]
    out = []
    for path, d, b in raw:
        if any(contains(p, path) for p in ignore):
            continue
        effect, rule = _effect(type_token, path, before, replace_paths)
        out.append(FieldChange(format_path(path), d, b, effect, rule))
    return tuple(sorted(out, key=lambda c: c.path))


def worst(changes: Sequence[FieldChange]) -> str | None:
    """The most severe effect of ``changes`` (replace > refused > change), None for none."""
    if not changes:
        return None
    return max((c.effect for c in changes), key=EFFECT_ORDER.__getitem__)


# --- what Pulumi shows after an import -----------------------------------------------------------

_READ_DROPPED_METADATA = ("creationTimestamp", "generation", "managedFields", "resourceVersion",
                          "uid", "selfLink", "deletionGracePeriodSeconds", "deletionTimestamp")
_READ_DROPPED_ANNOTATIONS = ("deployment.kubernetes.io/revision",
                             "kubectl.kubernetes.io/last-applied-configuration")


def import_read(type_token: str, live: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs Pulumi records when it imports ``live`` (in input shape): see "Import
    artefacts" in the module docstring."""
    if type_token == tokens.HELM_RELEASE:
        return {k: live[k] for k in HELM_CONTENT if k in live}
    if not is_kubernetes_object(type_token):
        return dict(live)
    meta = live.get("metadata") or {}
    if is_custom_resource(type_token):
        ident = {k: meta[k] for k in ("name", "namespace") if k in meta}
        return {"apiVersion": live.get("apiVersion"), "kind": live.get("kind"), "metadata": ident}
    out = {k: v for k, v in live.items() if k != "status"}
    m = {k: v for k, v in meta.items() if k not in _READ_DROPPED_METADATA}
    if isinstance(m.get("annotations"), Mapping):
        ann = {k: v for k, v in m["annotations"].items() if k not in _READ_DROPPED_ANNOTATIONS}
        if ann:
            m["annotations"] = ann
        else:
            m.pop("annotations")
    out["metadata"] = m
    return out


_NS_LABEL = "kubernetes.io/metadata.name"
QUANTITY_REASON = ("the same quantity in another spelling: the API returns the canonical form "
                   "(apimachinery resource.Quantity; Kueue's ClusterQueue webhook)")


def _at(value: Any, segs: Sequence[Segment]) -> Any:
    for seg in segs:
        if isinstance(value, Mapping) and seg in value:
            value = value[seg]
        elif isinstance(value, list) and isinstance(seg, int) and 0 <= seg < len(value):
            value = value[seg]
        else:
            return MISSING
    return value


def artefact_reason(type_token: str, path: str, live: Mapping[str, Any]) -> str:
    """Why Pulumi's ``~ update`` of ``path`` after an import changes nothing live (the rule
    names its source; module docstring)."""
    segs = lenient_parse(path)
    if type_token == tokens.HELM_RELEASE:
        if segs and segs[0] == "chart":
            return ("the same chart: Helm records a chart by its name, without the repository "
                    "alias or URL it was installed from (helm_release.go importRelease)")
        if segs and segs[0] in HELM_CONTENT:
            return "the release already runs this chart version with these values"
        return ("not recorded by Pulumi's release import (helm_release.go serializeImportInputs) "
                "or an operation setting: the upgrade renders the same chart version with the "
                "same values — a new release revision, the same manifests")
    if is_custom_resource(type_token):
        return ("pulumi-kubernetes reads only a custom resource's apiVersion, kind, name and "
                "namespace on import (provider.go Read: a CRD kind has no schema input "
                "properties); the live object already has the declared value")
    if segs[:3] == ("metadata", "labels", _NS_LABEL):
        return ("set by the API server on every namespace (Kubernetes well-known label "
                "kubernetes.io/metadata.name); the apply does not remove it")
    if type_token == tokens.NAMESPACE and segs[:2] == ("spec", "finalizers"):
        return ("a Namespace's spec.finalizers cannot change through an update "
                "(namespace strategy.go PrepareForUpdate keeps the old finalizers)")
    if _is_quantity_path(segs):
        return QUANTITY_REASON
    if (rule := server_default(type_token, segs, _at(live, segs))) is not None:
        return f"the API server's default, already live ({rule})"
    return ("set by another field manager; server-side apply leaves fields the applier does "
            "not own (Kubernetes Server-Side Apply, field management)")


def shown_paths(type_token: str, read: Mapping[str, Any], declared: Mapping[str, Any],
                ignore_changes: Sequence[str] = ()) -> tuple[str, ...]:
    """The property paths Pulumi's preview shows as changed between the ``read`` inputs and the
    ``declared`` ones (its detailed diff, leaf by leaf; ``ignoreChanges`` dropped)."""
    if type_token == tokens.HELM_RELEASE:
        read = {k: (chart_name(v) if k == "chart" else v) for k, v in read.items()}
        declared = {k: (chart_name(v) if k == "chart" else v) for k, v in declared.items()}
    r = {k: v for k, v in read.items() if not k.startswith("__")}
    d = {k: v for k, v in declared.items() if not k.startswith("__")}
    ignore = [lenient_parse(p) for p in ignore_changes]
    out = []
    for path, old, new in diff_values(r, d):
        if not _known(new) or any(contains(p, path) for p in ignore):
            continue
        if new is MISSING and isinstance(old, Mapping) and old:
            # a map only the live object has: one line per key (each has its own reason)
            out += [format_path((*path, k)) for k in sorted(old)]
            continue
        out.append(format_path(path))
    return tuple(out)


def render(value: Any) -> str:
    """A value for humans (one line): ``(none)`` for no value, else compact JSON."""
    if value is MISSING:
        return "(none)"
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
