"""The guard's policy: the typed ``[guard]`` section of ``clusterstack.toml`` (a pydantic model,
read by the one workspace loader like every other section, and at another git ref by
``diff --base`` through the same model).

::

    [guard]
    forbid_replace = [...]            # type tokens never replaced
    forbid_delete = [...]             # type tokens never deleted
    forbid_delete_protected = [...]   # never deleted while protected
    forbid_delete_unretained = [...]  # deleted only when the state retains them on delete
    protected_state = true            # any replace/delete of a protected resource is refused
    [guard.replace_properties]        # type token = [paths whose change forces a replace]
    [guard.capacity]                  # capacity cuts (a reserved pool's nodes, a queue's GPU quota)
    block = [...]                     # kinds whose cut is refused (exit 3)
    warn = [...]                      # kinds whose cut is shown as a warning and passes
    tolerate_nodes = 0                # a cut of at most this many nodes (per resource) passes
    tolerate_gpus = 0                 # a cut of at most this many GPUs (per resource) passes
    [guard.cost]                      # the fleet's monthly cost (docs/teams-and-cost.md)
    warn_monthly_increase = 50000     # USD a month: a rise above it is a warning
    block_monthly_increase = 200000   # USD a month: a rise above it is refused (exit 3)

Every key is optional; the defaults are the strict policy. A list given replaces its default
set (list every type you want); ``replace_properties`` entries are added to the defaults.
Every type token must be of a family clusterstack declares (:data:`clusterstack.pulumi.tokens.ALL`;
a typo would silently drop the rule) — unless the model is validated with the context
``{"check_tokens": False}`` (a policy read at another git ref, whose types belong to that
ref's table). Errors carry their hint (``did you mean …``) to the located error of the loader.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Mapping

from pydantic import (AfterValidator, BeforeValidator, Field, PrivateAttr, ValidationError,
                      ValidationInfo, field_validator)
from pydantic_core import PydanticCustomError

from clusterstack.config.document import Strict, hint_for
from clusterstack.config.prices import PriceTable
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.pulumi.tokens import (
    ADDRESS,
    ALL,
    BUCKETS,
    COREWEAVE_BUCKET,
    DNS_RECORD,
    GCS_BUCKET,
    GLOBAL_ADDRESS,
    KUEUE_CLUSTER_QUEUE,
    LEGACY_DNS_RECORD,
    NODEPOOL,
    R2_BUCKET,
    family,
    split,
)

#: The kinds whose capacity the guard can measure (:mod:`clusterstack.guard.capacity`): a
#: CoreWeave NodePool's nodes/racks and a Kueue ClusterQueue's GPU quota per flavor — any
#: ClusterQueue (a cluster's, a team's), at any API version of the family.
CAPACITY_KINDS = (NODEPOOL, KUEUE_CLUSTER_QUEUE)


def _hinted(message: str, hint: str) -> PydanticCustomError:
    """A validation error whose hint the located error keeps (:func:`hint_for` reads ``ctx.hint``)."""
    return PydanticCustomError("guard_value", "{message}", {"message": message, "hint": hint})


def _check_token(token: str, info: ValidationInfo) -> str:
    """``token`` unless its family is not the family of a token in
    :data:`clusterstack.pulumi.tokens.ALL` (the types clusterstack declares, names or guards; a
    rule for any other type never matches). Skipped with the context ``check_tokens: False``."""
    if not (info.context or {}).get("check_tokens", True):
        return token
    if family(token) in {family(t) for t in ALL}:
        return token
    try:
        split(token)
        problem = f"unknown resource type {token!r}: no clusterstack program declares it"
    except ValueError:
        problem = f"not a type token <package>:<module>:<member>: {token!r}"
    near = difflib.get_close_matches(token, sorted(ALL), n=1, cutoff=0.6)
    hint = (f"did you mean {near[0]!r}?" if near else
            "use a type token of the plan (`clusterstack plan --json` lists each resource's type)")
    raise _hinted(problem, hint + " — a [guard] rule for a type no stack has never matches")


def _token_list(value: Any) -> Any:
    if not isinstance(value, (list, set, frozenset, tuple)) or not all(isinstance(x, str) for x in value):
        raise _hinted("must be a list of resource type tokens", 'e.g. ["gcp:compute/address:Address"]')
    return frozenset(value)


def _strict_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise _hinted("must be true or false", "write true or false (no quotes)")
    return value


def _count(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _hinted("must be a whole number ≥ 0", "e.g. 0 (the strict default)")
    return value


def _dollars(value: Any) -> Any:
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
            or value in (float("inf"), float("-inf")) or value < 0):
        raise _hinted("must be a number of dollars ≥ 0 (USD a month)",
                      "e.g. 50000 (no quotes, no currency sign); leave the key out for no limit")
    return value


def _path_table(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise _hinted("must be a table of type token = [property paths]",
                      '[guard.replace_properties] "gcp:compute/address:Address" = ["name"]')
    return value


def _path_list(value: Any) -> Any:
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise _hinted("must be a list of property paths", 'e.g. ["spec.instanceType"]')
    return tuple(value)


#: A list of Pulumi type tokens (checked against the token table by the model).
TypeTokens = Annotated[frozenset[str], BeforeValidator(_token_list)]
StrictFlag = Annotated[bool, BeforeValidator(_strict_bool)]
Count = Annotated[int, BeforeValidator(_count)]
#: USD a month (``[guard.cost]``): an integer or float ≥ 0, one error naming the field if not.
Dollars = Annotated[int | float, BeforeValidator(_dollars)]
PathTable = Annotated[dict[Annotated[str, AfterValidator(_check_token)],
                           Annotated[tuple[str, ...], BeforeValidator(_path_list)]],
                      BeforeValidator(_path_table)]


class CapacityPolicy(Strict):
    """``[guard.capacity]``: what a capacity cut is and what the guard does with it.

    A cut is a reduction, by an in-place ``update``, of a NodePool's ``minNodes``,
    ``maxNodes``, ``targetNodes`` or ``targetRacks`` or of a ClusterQueue's ``nvidia.com/gpu``
    nominal quota in any flavor — and the delete or replace of either, which destroys all of
    it (:mod:`clusterstack.guard.capacity`). ``block``: kinds whose cut is a violation (exit
    3); ``warn``: kinds whose cut is shown and passes; a kind in neither is only measured.
    ``tolerate_nodes`` / ``tolerate_gpus``: a cut of at most both (per resource) is no cut.
    Defaults are strict: every cut of a NodePool or a ClusterQueue is blocked."""

    block: TypeTokens = frozenset(CAPACITY_KINDS)   # kinds whose cut is refused (exit 3)
    warn: TypeTokens = frozenset()                  # kinds whose cut is shown as WARNING and passes
    tolerate_nodes: Count = 0                       # a cut of at most this many nodes (per resource) …
    tolerate_gpus: Count = 0                        # … and this many GPUs is no cut

    @field_validator("block", "warn")
    @classmethod
    def _measurable_kinds(cls, value: frozenset[str], info: ValidationInfo) -> frozenset[str]:
        # Rule: the guard measures the capacity of NodePools and ClusterQueues only
        # (clusterstack.guard.capacity); a rule for another kind would never match.
        for token in sorted(value):
            _check_token(token, info)
            if family(token) not in {family(k) for k in CAPACITY_KINDS}:
                raise _hinted(f"{token!r} has no capacity the guard measures",
                              f"list kinds of {', '.join(repr(k) for k in CAPACITY_KINDS)}")
        return value

    @field_validator("warn")
    @classmethod
    def _block_or_warn(cls, value: frozenset[str], info: ValidationInfo) -> frozenset[str]:
        both = sorted({family(t) for t in info.data.get("block", ())} & {family(t) for t in value})
        if both:
            raise _hinted(f"{both[0]} is in both block and warn",
                          "list it in one of them (block is the default for every kind)")
        return value

    def action(self, typ: str) -> str | None:
        """``block``, ``warn`` or None (only measured) for a resource of type ``typ`` (by family)."""
        fam = family(typ)
        if any(family(t) == fam for t in self.block):
            return "block"
        if any(family(t) == fam for t in self.warn):
            return "warn"
        return None

    def tolerated(self, nodes_lost: int, gpus_lost: int | None) -> bool:
        """True when a cut this small passes (``gpus_lost`` None: unknown, never tolerated
        unless ``tolerate_gpus`` is moot because no GPUs are at stake)."""
        if nodes_lost > self.tolerate_nodes:
            return False
        return gpus_lost is not None and gpus_lost <= self.tolerate_gpus


class CostPolicy(Strict):
    """``[guard.cost]``: USD a month by which a change may raise the fleet's cost before the guard
    warns (``warn_monthly_increase``: a warning, the change passes) or blocks
    (``block_monthly_increase``: a violation on each NodePool whose cost rises, exit 3); None:
    no limit. Priced like ``diff`` and the PR comment (:func:`clusterstack.inventory.capacity_change`,
    the upper figure of an autoscaled pool's range) with the rates ``[cost]`` gives
    (:mod:`clusterstack.config.prices`)."""

    warn_monthly_increase: Dollars | None = None
    block_monthly_increase: Dollars | None = None


class GuardPolicy(Strict):
    """What the guard forbids: the ``[guard]`` section of ``clusterstack.toml``; every key
    optional, defaults strict.

    ``forbid_delete_unretained``: types whose delete is allowed only because the resource
    retains on delete — a delete step whose old state lacks ``retainOnDelete: true`` would
    really destroy it (for a static address: release the pinned IP), so it is blocked.
    ``replace_properties`` maps a type to the input paths whose change forces a replacement
    (used by the static diff, which has no provider to ask): NodePool ``instanceType`` is
    immutable (CoreWeave Node Pool reference); an Address's name, region, address and
    description are immutable (GCP ``addresses`` REST reference). Buckets (GCS, CoreWeave AI
    Object Storage, R2) may be neither replaced nor deleted: either destroys the data; their
    name and location are immutable (Cloud Storage "Bucket locations" — a bucket cannot move;
    pulumi-coreweave ``zone`` and pulumi-cloudflare R2 ``location``/``jurisdiction`` force a
    new bucket). ``capacity``: :class:`CapacityPolicy`.
    """

    forbid_replace: TypeTokens = frozenset({NODEPOOL, ADDRESS, GLOBAL_ADDRESS}) | BUCKETS   # never replaced
    forbid_delete: TypeTokens = frozenset({NODEPOOL}) | BUCKETS              # never deleted by an update
    forbid_delete_protected: TypeTokens = frozenset({DNS_RECORD, LEGACY_DNS_RECORD})   # not deleted while protected
    forbid_delete_unretained: TypeTokens = frozenset({ADDRESS, GLOBAL_ADDRESS})  # deleted only with retainOnDelete
    protected_state: StrictFlag = True        # any replace/delete of a resource with protect: true is refused
    replace_properties: PathTable = Field(default_factory=lambda: dict(DEFAULT_REPLACE_PROPERTIES))  # type → paths forcing a replace (added to the defaults)
    capacity: CapacityPolicy = Field(default_factory=CapacityPolicy)   # capacity cuts ([guard.capacity])
    cost: CostPolicy = Field(default_factory=CostPolicy)
    # the rates the cost rule prices with ([cost] of clusterstack.toml; None: the list prices):
    # not a [guard] key, set by :meth:`with_prices` (Workspace.guard)
    _prices: PriceTable | None = PrivateAttr(default=None)

    def with_prices(self, prices: PriceTable | None) -> "GuardPolicy":
        """This policy pricing ``[guard.cost]`` with ``prices`` (None: the list prices)."""
        out = self.model_copy()
        out._prices = prices
        return out

    @property
    def prices(self) -> PriceTable | None:
        """The rates ``[guard.cost]`` is priced with (None: the list prices)."""
        return self._prices

    _SETS: ClassVar[tuple[str, ...]] = ("forbid_replace", "forbid_delete", "forbid_delete_protected",
                                        "forbid_delete_unretained")

    @field_validator("forbid_replace", "forbid_delete", "forbid_delete_protected",
                     "forbid_delete_unretained")
    @classmethod
    def _known_types(cls, value: frozenset[str], info: ValidationInfo) -> frozenset[str]:
        for token in sorted(value):
            _check_token(token, info)
        return value

    @field_validator("replace_properties")
    @classmethod
    def _merged_with_defaults(cls, value: Mapping[str, tuple[str, ...]]) -> Mapping[str, tuple[str, ...]]:
        return {**DEFAULT_REPLACE_PROPERTIES, **value}

    @classmethod
    def from_toml(cls, section: Mapping[str, Any], *, file: Path | None = None,
                  line_of: Callable[..., int | None] | None = None,
                  check_tokens: bool = True) -> "GuardPolicy":
        """The policy of a ``[guard]`` table given as a mapping (a table read at another git
        ref by ``diff --base``, tests); ``file`` names it in errors, ``line_of(*key_path)``
        gives the 1-based line of a key (:meth:`clusterstack.workspace.Workspace.line_of`).
        ``check_tokens=False``: a policy read at another ref (its types are that ref's).
        Raises ClusterstackError (exit 2), one located problem per error, field
        ``guard.<key>``."""
        try:
            return cls.model_validate(dict(section), context={"check_tokens": check_tokens})
        except ValidationError as exc:
            raise ClusterstackError(problems=policy_problems(exc, file=file, line_of=line_of)) from None

    def forbids(self, key: str, typ: str) -> bool:
        """True when ``typ``'s resource family (:func:`clusterstack.pulumi.tokens.family`: a
        Kubernetes kind at any API version) is in the ``forbid_*`` set ``key``: a NodePool moved
        to a new CRD version (with an alias) keeps every rule of the old one."""
        fam = family(typ)
        return any(family(t) == fam for t in getattr(self, key))

    def replace_paths(self, typ: str) -> tuple[str, ...]:
        """The ``replace_properties`` of ``typ``'s family (every version's entry, in order)."""
        fam = family(typ)
        return tuple(dict.fromkeys(p for t in sorted(self.replace_properties) if family(t) == fam
                                   for p in self.replace_properties[t]))

    def union(self, other: "GuardPolicy") -> "GuardPolicy":
        """The stricter of two policies: every ``forbid_*`` set united, ``protected_state`` if
        either has it, ``replace_properties`` united per type (``self``'s paths first), the
        capacity kinds blocked by either blocked (warned by either and blocked by neither:
        warned), the smaller tolerances. Used by ``diff --base`` so a change cannot relax the
        guard that judges it."""
        rp = {t: tuple(dict.fromkeys((*self.replace_properties.get(t, ()),
                                      *other.replace_properties.get(t, ()))))
              for t in sorted(set(self.replace_properties) | set(other.replace_properties))}
        a, b = self.capacity, other.capacity
        block = a.block | b.block
        blocked = {family(t) for t in block}
        cap = CapacityPolicy.model_construct(
            block=block, warn=frozenset(t for t in a.warn | b.warn if family(t) not in blocked),
            tolerate_nodes=min(a.tolerate_nodes, b.tolerate_nodes),
            tolerate_gpus=min(a.tolerate_gpus, b.tolerate_gpus))
        low = lambda x, y: y if x is None else x if y is None else min(x, y)  # noqa: E731
        cost = CostPolicy.model_construct(**{k: low(getattr(self.cost, k), getattr(other.cost, k))
                                             for k in CostPolicy.model_fields})
        out = GuardPolicy.model_construct(
            **{k: getattr(self, k) | getattr(other, k) for k in self._SETS},
            protected_state=self.protected_state or other.protected_state,
            replace_properties=rp, capacity=cap, cost=cost)
        return out.with_prices(self.prices or other.prices)

    def weakened_from(self, base: "GuardPolicy") -> tuple[str, ...]:
        """How this (head) policy is weaker than ``base``, one line per change (by key, then
        sorted by type): a type removed from a ``forbid_*`` set, ``protected_state`` turned
        off, a replace property removed, a capacity kind no longer blocked, a tolerance
        raised. Empty when this policy is at least as strict."""
        lines = [f"{k}: {t} removed" for k in self._SETS
                 for t in sorted(getattr(base, k) - getattr(self, k))]
        if base.protected_state and not self.protected_state:
            lines.append("protected_state: turned off")
        for t in sorted(base.replace_properties):
            gone = [p for p in base.replace_properties[t] if p not in self.replace_properties.get(t, ())]
            lines += [f"replace_properties: {p} of {t} removed" for p in gone]
        mine = {family(t) for t in self.capacity.block}
        lines += [f"capacity.block: {t} removed" for t in sorted(base.capacity.block)
                  if family(t) not in mine]
        for key in ("tolerate_nodes", "tolerate_gpus"):
            old, new = getattr(base.capacity, key), getattr(self.capacity, key)
            if new > old:
                lines.append(f"capacity.{key}: raised {old} → {new}")
        for key in CostPolicy.model_fields:
            old_limit, new_limit = getattr(base.cost, key), getattr(self.cost, key)
            if old_limit is not None and (new_limit is None or new_limit > old_limit):
                lines.append(f"cost.{key}: raised {old_limit:g} → "
                             f"{'none' if new_limit is None else f'{new_limit:g}'}")
        return tuple(lines)


DEFAULT_REPLACE_PROPERTIES: dict[str, tuple[str, ...]] = {
    NODEPOOL: ("spec.instanceType", "metadata.name"),
    ADDRESS: ("name", "region", "address", "description"),
    GLOBAL_ADDRESS: ("name", "address", "description"),
    GCS_BUCKET: ("name", "location", "project"),
    COREWEAVE_BUCKET: ("name", "zone"),
    R2_BUCKET: ("name", "accountId", "jurisdiction", "location"),
}


def policy_problems(exc: ValidationError, *, file: Path | None,
                    line_of: Callable[..., int | None] | None) -> list[Problem]:
    """One located problem per error of a ``[guard]`` table validated on its own (field
    ``guard.<key path>``, line of that key or of ``[guard]``)."""
    out = []
    for e in exc.errors(include_url=False):
        loc = tuple(str(x) for x in e["loc"] if not isinstance(x, int) and x != "[key]")
        # a replace_properties key is a type token holding ':' — keep it whole
        message = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            allowed = (GuardPolicy.model_fields if len(loc) == 1 else
                       CostPolicy.model_fields if loc[0] == "cost" else CapacityPolicy.model_fields)
            message, hint = f"unknown [guard] key {loc[-1]!r}", f"allowed: {', '.join(allowed)}"
        else:
            hint = hint_for(e, strict="every key of [guard] is strict")
        line = None
        if line_of is not None:
            line = line_of("guard", *loc) or line_of("guard")
        out.append(Problem(message=message, hint=hint, file=file, line=line,
                           field=".".join(("guard", *loc))))
    return out


__all__ = ["CAPACITY_KINDS", "CapacityPolicy", "CostPolicy", "DEFAULT_REPLACE_PROPERTIES", "GuardPolicy",
           "policy_problems"]
