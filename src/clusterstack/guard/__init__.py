"""The destructive-change guard: one policy, one check, used by ``guard``, ``preview``, ``up``,
``import apply`` and (statically) ``diff``.

Pulumi has no built-in "block replace" switch and policy packs cannot see a step's operation,
so the tool enforces it. The guard holds only the policy (:class:`GuardPolicy`), the check
(:func:`check` → :class:`Verdict` of :class:`Violation`) and the hints; the steps it checks, the
op sets and the type tokens are Pulumi vocabulary (:mod:`clusterstack.pulumi.steps`,
:mod:`clusterstack.pulumi.tokens`). A replacement is counted once per URN whether or not the
pair steps are shown (:func:`clusterstack.pulumi.steps.logical_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.paths import contains, get_path, lenient_parse
from clusterstack.pulumi.steps import Refusal, Step, forcing_properties, logical_ops
from clusterstack.pulumi.tokens import (
    ADDRESS,
    BUCKETS,
    COREWEAVE_BUCKET,
    DNS_RECORD,
    GCS_BUCKET,
    GLOBAL_ADDRESS,
    LEGACY_DNS_RECORD,
    NODEPOOL,
    R2_BUCKET,
    family,
)
from clusterstack.pulumi.urn import type_of

GUARD_EXIT_CODE = 3


@dataclass(frozen=True)
class GuardPolicy:
    """What the guard forbids. Loaded from ``clusterstack.toml`` ``[guard]``; every key optional.

    A list key given in ``[guard]`` replaces its default set (list every type you want).
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
    new bucket).
    """

    forbid_replace: frozenset[str] = frozenset({NODEPOOL, ADDRESS, GLOBAL_ADDRESS}) | BUCKETS
    forbid_delete: frozenset[str] = frozenset({NODEPOOL}) | BUCKETS
    forbid_delete_protected: frozenset[str] = frozenset({DNS_RECORD, LEGACY_DNS_RECORD})
    forbid_delete_unretained: frozenset[str] = frozenset({ADDRESS, GLOBAL_ADDRESS})
    protected_state: bool = True
    replace_properties: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        NODEPOOL: ("spec.instanceType", "metadata.name"),
        ADDRESS: ("name", "region", "address", "description"),
        GLOBAL_ADDRESS: ("name", "address", "description"),
        GCS_BUCKET: ("name", "location", "project"),
        COREWEAVE_BUCKET: ("name", "zone"),
        R2_BUCKET: ("name", "accountId", "jurisdiction", "location"),
    })

    # [guard.cost]: USD a month by which a change may raise the fleet's cost before the guard
    # warns / blocks (None: no limit); priced by ``prices`` ([cost] of clusterstack.toml,
    # clusterstack.config.prices), the figure diff and the PR comment show (inventory.capacity_change)
    warn_monthly_increase: float | None = None
    block_monthly_increase: float | None = None
    prices: Any = None

    _KEYS = ("forbid_replace", "forbid_delete", "forbid_delete_protected",
             "forbid_delete_unretained", "protected_state", "replace_properties", "cost")
    _COST_KEYS = ("warn_monthly_increase", "block_monthly_increase")

    @classmethod
    def from_toml(cls, section: Mapping[str, Any], *, file: Path | None = None,
                  line_of: Callable[..., int | None] | None = None,
                  check_tokens: bool = True, prices: Any = None) -> "GuardPolicy":
        """Build from the ``[guard]`` table (``file``: the ``clusterstack.toml`` it came from,
        named in errors; ``line_of(*key_path)``: the 1-based line of a key there, e.g.
        :meth:`clusterstack.workspace.Workspace.line_of`). Raises ClusterstackError (exit 2) on
        an unknown key, a wrongly typed value or — with ``check_tokens`` — a type token whose
        family is not in the token table (:data:`clusterstack.pulumi.tokens.ALL`; a typo would
        silently drop that type's rule), with "did you mean" the nearest known token; located
        at its line when ``line_of`` is given. ``check_tokens=False`` for a policy read at
        another git ref, whose types belong to that ref's table."""
        def at(*path: str) -> int | None:
            return (line_of("guard", *path) or line_of("guard")) if line_of else None

        def known(token: str, *path: str) -> str:
            if check_tokens:
                _check_token(token, file=file, line=at(*path), field=f"guard.{'.'.join(path)}")
            return token

        unknown = sorted(set(section) - set(cls._KEYS))
        if unknown:
            raise ClusterstackError(f"unknown [guard] key {unknown[0]!r}",
                                    f"allowed: {', '.join(cls._KEYS)}", file=file,
                                    line=at(unknown[0]), field=f"guard.{unknown[0]}")
        kw: dict[str, Any] = {"prices": prices}
        cost = section.get("cost", {})
        if not isinstance(cost, Mapping):
            raise ClusterstackError("must be a table", "[guard.cost] warn_monthly_increase = 50000",
                                    file=file, line=at("cost"), field="guard.cost")
        for key in sorted(set(cost) - set(cls._COST_KEYS)):
            raise ClusterstackError(f"unknown [guard.cost] key {key!r}", f"allowed: {', '.join(cls._COST_KEYS)}",
                                    file=file, line=at("cost", key), field=f"guard.cost.{key}")
        for key in cls._COST_KEYS:
            if key in cost:
                v = cost[key]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                    raise ClusterstackError("must be a number of US dollars a month, 0 or more",
                                            f"e.g. {key} = 50000", file=file, line=at("cost", key),
                                            field=f"guard.cost.{key}")
                kw[key] = float(v)
        for key in ("forbid_replace", "forbid_delete", "forbid_delete_protected",
                    "forbid_delete_unretained"):
            if key in section:
                v = section[key]
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    raise ClusterstackError("must be a list of resource type tokens",
                                            'e.g. ["gcp:compute/address:Address"]', file=file,
                                            line=at(key), field=f"guard.{key}")
                kw[key] = frozenset(known(t, key) for t in v)
        if "protected_state" in section:
            if not isinstance(section["protected_state"], bool):
                raise ClusterstackError("must be true or false", "write protected_state = true",
                                        file=file, line=at("protected_state"),
                                        field="guard.protected_state")
            kw["protected_state"] = section["protected_state"]
        if "replace_properties" in section:
            table = section["replace_properties"]
            if not isinstance(table, Mapping):
                raise ClusterstackError("must be a table of type token = [property paths]",
                                        '[guard.replace_properties] "gcp:compute/address:Address" = '
                                        '["name"]', file=file, line=at("replace_properties"),
                                        field="guard.replace_properties")
            rp = dict(cls().replace_properties)
            for typ, props in table.items():
                if not isinstance(props, list) or not all(isinstance(x, str) for x in props):
                    raise ClusterstackError("must be a list of property paths",
                                            'e.g. ["spec.instanceType"]', file=file,
                                            line=at("replace_properties", typ),
                                            field=f"guard.replace_properties.{typ}")
                rp[known(typ, "replace_properties", typ)] = tuple(props)
            kw["replace_properties"] = rp
        return cls(**kw)

    _SETS = ("forbid_replace", "forbid_delete", "forbid_delete_protected", "forbid_delete_unretained")

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
        either has it, ``replace_properties`` united per type (``self``'s paths first). Used by
        ``diff --base`` so a change cannot relax the guard that judges it."""
        rp = {t: tuple(dict.fromkeys((*self.replace_properties.get(t, ()),
                                      *other.replace_properties.get(t, ()))))
              for t in sorted(set(self.replace_properties) | set(other.replace_properties))}
        low = lambda a, b: b if a is None else a if b is None else min(a, b)  # noqa: E731
        return GuardPolicy(**{k: getattr(self, k) | getattr(other, k) for k in self._SETS},
                           protected_state=self.protected_state or other.protected_state,
                           replace_properties=rp,
                           **{k: low(getattr(self, k), getattr(other, k)) for k in self._COST_KEYS},
                           prices=self.prices or other.prices)

    def weakened_from(self, base: "GuardPolicy") -> tuple[str, ...]:
        """How this (head) policy is weaker than ``base``, one line per change (by key, then
        sorted by type): a type
        removed from a ``forbid_*`` set, ``protected_state`` turned off, a replace property
        removed. Empty when this policy is at least as strict."""
        lines = [f"{k}: {t} removed" for k in self._SETS
                 for t in sorted(getattr(base, k) - getattr(self, k))]
        if base.protected_state and not self.protected_state:
            lines.append("protected_state: turned off")
        for t in sorted(base.replace_properties):
            gone = [p for p in base.replace_properties[t] if p not in self.replace_properties.get(t, ())]
            lines += [f"replace_properties: {p} of {t} removed" for p in gone]
        for k in self._COST_KEYS:
            was, now = getattr(base, k), getattr(self, k)
            if was is not None and (now is None or now > was):
                lines.append(f"cost.{k}: {was:g} → {'none' if now is None else f'{now:g}'}")
        return tuple(lines)


def _check_token(token: str, *, file: Path | None, line: int | None, field: str) -> None:
    """Raise ClusterstackError unless ``token``'s family (:func:`family`: a Kubernetes kind at
    any API version) is the family of a token in :data:`clusterstack.pulumi.tokens.ALL` — the
    types clusterstack declares, names or guards; a rule for any other type can never match."""
    import difflib

    from clusterstack.pulumi.tokens import ALL, split

    families = {family(t) for t in ALL}
    if family(token) in families:
        return
    try:
        split(token)
        problem = f"unknown resource type {token!r}: no clusterstack program declares it"
    except ValueError:
        problem = f"not a type token <package>:<module>:<member>: {token!r}"
    near = difflib.get_close_matches(token, sorted(ALL), n=1, cutoff=0.6)
    hint = (f"did you mean {near[0]!r}?" if near else
            "use a type token of the plan (`clusterstack plan --json` lists each resource's type)")
    raise ClusterstackError(problem, hint + " — a [guard] rule for a type no stack has never matches",
                            file=file, line=line, field=field)


@dataclass(frozen=True)
class Violation:
    """A forbidden step: the URN, the logical op (``replace`` or ``delete``), the properties
    that force it, which rule it breaks and what to do."""

    urn: str
    type: str
    op: str
    reasons: tuple[str, ...]
    rule: str
    hint: str

    def lines(self, indent: str = "") -> list[str]:
        """The violation as :func:`entry_lines`: ``BLOCKED <op> <Kind> <name> — forced by …:
        <rule>``, then what to do (restore, or the deliberate route, naming the URN once)."""
        return entry_lines("BLOCKED", self.op, self.type, self.urn, forced_by=self.reasons,
                           rule=self.rule, todo="restore the old value in the reviewed config and "
                           f"preview again; {deliberate_route(self.op, self.urn)}", indent=indent)

    def render(self) -> str:
        """:meth:`lines` as one text (two lines)."""
        return "\n".join(self.lines())


def entry_lines(verb: str, op: str, typ: str, urn: str, *, rule: str, todo: str | None = None,
                forced_by: Iterable[str] = (), change: str = "", indent: str = "") -> list[str]:
    """THE rendering of a destructive entry — a guard violation (``BLOCKED``, in ``guard``,
    ``preview``, ``up``, ``import apply``) or a static diff finding (``DESTRUCTIVE``, in
    ``diff``) — as text lines:

        <indent><VERB> <op> <Kind> <name>[: <change>][ — forced by <p>, …]: <rule>
        <indent>  to do: <todo>

    ``Kind`` is the type token's member (:func:`clusterstack.pulumi.tokens.member`: ``NodePool``,
    ``Address``), ``name`` the URN's name; the entry line never carries the URN (the rule may
    name the full type token); ``todo`` names it at most once. No ``to do`` line when ``todo``
    is None. Plain text (URNs hold ``[`` and ``$``): no markup."""
    from clusterstack.pulumi.tokens import member
    from clusterstack.pulumi.urn import name_of

    kind = member(typ) if typ else "resource"
    what = f": {change}" if change else ""
    why = f" — forced by {', '.join(forced_by)}" if forced_by else ""
    lines = [f"{indent}{verb} {op} {kind} {name_of(urn)}{what}{why}: {rule}"]
    if todo:
        lines.append(f"{indent}  to do: {todo}")
    return lines


def deliberate_route(op: str, urn: str) -> str:
    """The deliberate route of :func:`deliberate_hint` in the words of a ``to do`` line,
    naming ``urn`` once: ``a deliberate replace is a separate reviewed operation from infra/:
    `pulumi state unprotect '<URN>'`, then `pulumi up --target` of it (…)``."""
    cmd = "pulumi up --target" if op == "replace" else "pulumi destroy --target"
    return (f"a deliberate {op} is a separate reviewed operation from infra/: `pulumi state "
            f"unprotect '{urn}'`, then `{cmd}` of it (docs/making-a-change.md \"When the guard "
            "blocks\")")


@dataclass(frozen=True)
class Verdict:
    """The guard's answer over a set of steps. ``ok`` when no violation."""

    violations: tuple[Violation, ...] = ()
    destructive: tuple[tuple[str, str], ...] = ()  # (logical op, urn) of every destructive change
    #: URNs a refresh found gone from the cloud: drift to reconcile, not a delete to block
    drift: tuple[str, ...] = ()
    #: URNs re-created after an interrupted delete-before-replace (old state
    #: ``pendingReplacement: true``: the live resource is already gone) — recovery, allowed
    recovery: tuple[str, ...] = ()
    #: what the guard says without blocking ([guard.cost] warn_monthly_increase)
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations


#: A verdict's severity over its steps, worst first (:func:`severity`).
SEVERITIES = ("blocked", "delete", "change", "none")


def severity(verdict: Verdict, steps: Iterable[Step]) -> str:
    """How bad ``verdict`` over ``steps`` is, one of :data:`SEVERITIES`: ``blocked`` (a
    violation), ``delete`` (a replace or delete the policy allows), ``change`` (any step other
    than ``same``), ``none``. Computed from the verdict and the steps alone — never taken from
    a stored document (``ci comment`` recomputes it from what ``meta.json`` lists)."""
    if not verdict.ok:
        return "blocked"
    if verdict.destructive:
        return "delete"
    return "change" if any(s.op != "same" for s in steps) else "none"


def deliberate_hint(op: str, urn: str) -> str:
    """How a *deliberate* ``op`` (``replace`` | ``delete``) of ``urn`` is done, as a hint suffix.

    clusterstack never performs a guarded step — no flag or confirmation of ``preview``/``up``
    gets past the guard — so the only route is Pulumi itself, from ``infra/`` after a separate
    review (docs/making-a-change.md "When the guard blocks"): ``pulumi state unprotect`` then a
    targeted ``pulumi up --target`` (replace) or ``pulumi destroy --target`` (delete).
    """
    target = f"pulumi up --target '{urn}'" if op == "replace" else f"pulumi destroy --target '{urn}'"
    return (f"a deliberate {op} is a separate, reviewed operation done with Pulumi directly from "
            f"infra/: `pulumi state unprotect '{urn}'`, then `{target}`; merge the config change "
            "afterwards so the next preview is clean")


def _hint(op: str, urn: str, by_type: bool) -> str:
    """The hint of a violation: ``by_type`` when a ``forbid_*`` rule refuses the type itself
    (``protect`` does not matter), else a ``protect: true`` violation."""
    why = (f"clusterstack never performs this {op} (the type is refused whatever `protect` says)"
           if by_type else f"clusterstack never performs a {op} of a protected resource")
    return (f"{why}: reconcile the program with reality (restore the old value in the reviewed "
            f"config) and preview again; {deliberate_hint(op, urn)}")


def immutable_changes(step: Step, paths: Iterable[str]) -> tuple[str, ...]:
    """The ``paths`` (``[guard] replace_properties`` of the step's type) that ``step`` changes,
    whatever op the engine gave it: a detailed-diff path at, under or above one of them, else
    (no detailed diff) a differing value between the old and new inputs. pulumi-kubernetes
    forces a replacement of a custom resource only for ``metadata.name`` / ``metadata.namespace``
    (``provider/pkg/provider/diff.go``), so a NodePool ``spec.instanceType`` change reaches the
    engine as a plain ``update`` — the live resource would be patched in a way CoreWeave can
    only honour by replacing its nodes."""
    want = [(p, lenient_parse(p)) for p in paths]
    if not want:
        return ()
    have_inputs = step.old_inputs is not None and step.new_inputs is not None

    def differs(segs: tuple) -> bool:
        return get_path(step.old_inputs, segs, _MISSING) != get_path(step.new_inputs, segs, _MISSING)

    hit: list[str] = []
    for p, segs in want:
        if step.detailed_diff:
            changed = [lenient_parse(k) for k in step.detailed_diff]
            if any(contains(segs, c) for c in changed):  # the property or inside it changed
                hit.append(p)
            elif any(contains(c, segs) for c in changed) and (not have_inputs or differs(segs)):
                hit.append(p)  # a change above it: the inputs tell, else assume it changed
        elif have_inputs and differs(segs):
            hit.append(p)
    return tuple(hit)


_MISSING = object()


def check(steps: Iterable[Step], policy: GuardPolicy | None = None, *,
          refusals: Iterable[Refusal] = (), gone: Iterable[str] = ()) -> Verdict:
    """Apply ``policy`` (default: :class:`GuardPolicy` defaults) to ``steps``.

    Rules (type rules match the resource family, :meth:`GuardPolicy.forbids`): replace of a
    ``forbid_replace`` type; delete of a ``forbid_delete`` type; delete of a
    ``forbid_delete_unretained`` type whose old state lacks ``retainOnDelete``; delete of a
    protected ``forbid_delete_protected`` type; with ``protected_state``, any delete or replace
    of a resource whose old state has ``protect: true``; an ``update`` of a ``forbid_replace``
    type that changes one of its ``replace_properties`` (:func:`immutable_changes`), counted as
    the replace it really is. ``refusals`` — the protect refusals Pulumi reported in its error
    diagnostics (:attr:`ParsedSteps.refusals`) — are violations too, whether or not a step
    shows them (a protected replace in an update bails before any step, ``step_generator.go``).
    Not violations: ``gone`` URNs that no step deletes or replaces (a refresh found them
    deleted: :attr:`Verdict.drift`) and a replacement whose old state is
    ``pendingReplacement`` (:attr:`Verdict.recovery`). A
    violation's ``reasons`` are :func:`forcing_properties` (else the changed keys).
    Deterministic order (by URN).
    """
    policy = policy or GuardPolicy()
    steps = list(steps)
    folded = logical_ops(steps)
    # a URN a refresh found gone is drift — unless a step deletes or replaces it all the same:
    # then it is judged as that step (a "gone" claim never hides a real delete)
    gone_set = set(gone) - set(folded)
    violations: dict[str, Violation] = {}
    recovery = sorted(u for u, (op, s) in folded.items()
                      if op == "replace" and s.old_pending_replacement and not s.old_protect)
    for u in recovery:
        del folded[u]
    for urn in sorted(folded):
        op, s = folded[urn]
        reasons = forcing_properties(s) or s.diffs
        rule = None
        by_type = True
        if op == "replace" and policy.forbids("forbid_replace", s.type):
            rule = f"{s.type} may never be replaced (a replace destroys the live resource)"
        elif op == "delete" and policy.forbids("forbid_delete", s.type):
            rule = f"{s.type} may never be deleted by an update"
        elif (op == "delete" and policy.forbids("forbid_delete_unretained", s.type)
              and not s.old_retain_on_delete):
            rule = (f"{s.type} may be deleted only when its state has retainOnDelete: true "
                    "(without it the delete destroys the live resource)")
        elif op == "delete" and s.old_protect and policy.forbids("forbid_delete_protected", s.type):
            rule = f"protected {s.type} may not be deleted"
        elif policy.protected_state and s.old_protect:
            rule = f"the resource is protected (protect: true) and the step would {op} it"
            by_type = False
        if rule:
            violations[urn] = Violation(urn=urn, type=s.type, op=op, reasons=tuple(reasons),
                                        rule=rule, hint=_hint(op, urn, by_type))
    immutable: list[tuple[str, str]] = []
    for s in steps:
        if s.op != "update" or s.urn in violations or s.urn in folded:
            continue
        if not policy.forbids("forbid_replace", s.type):
            continue
        hit = immutable_changes(s, policy.replace_paths(s.type))
        if hit:
            immutable.append(("replace", s.urn))
            violations[s.urn] = Violation(
                urn=s.urn, type=s.type, op="replace", reasons=hit,
                rule=(f"{', '.join(hit)} of {s.type} is immutable: the engine calls this an "
                      "in-place update, but it can only be done by replacing the live resource"),
                hint=_hint("replace", s.urn, True))
    by_step = {s.urn: s for s in steps}
    for r in refusals:
        if r.urn in violations:
            continue
        s = by_step.get(r.urn)
        typ = s.type if s is not None else type_of(r.urn)
        reasons = (forcing_properties(s) or s.diffs) if s is not None else ()
        violations[r.urn] = Violation(
            urn=r.urn, type=typ, op=r.op, reasons=tuple(reasons),
            rule=f"Pulumi refused to {r.op} it: the resource is protected (the preview failed)",
            hint=_hint(r.op, r.urn, False))
    warnings = _cost_rule(steps, policy, violations)
    destructive = {u: folded[u][0] for u in folded}
    destructive.update({u: op for op, u in immutable})
    destructive.update({r.urn: r.op for r in refusals if r.urn not in destructive})
    return Verdict(violations=tuple(violations[u] for u in sorted(violations)),
                   destructive=tuple((destructive[u], u) for u in sorted(destructive)),
                   drift=tuple(sorted(gone_set)), recovery=tuple(recovery), warnings=warnings)


def _cost_rule(steps: list[Step], policy: GuardPolicy, violations: dict[str, Violation]) -> tuple[str, ...]:
    """[guard.cost]: the monthly cost increase of ``steps`` (the NodePool steps' old → new
    inputs priced by ``policy.prices``: :func:`clusterstack.inventory.capacity_change`, the
    upper figure of an autoscaled pool's range). Above ``block_monthly_increase``: a violation
    on each NodePool whose cost rises (added to ``violations``); above
    ``warn_monthly_increase``: a warning line (returned)."""
    if policy.warn_monthly_increase is None and policy.block_monthly_increase is None:
        return ()
    from types import SimpleNamespace

    from clusterstack.config.prices import DEFAULT_PRICES, usd
    from clusterstack.inventory import capacity_change
    from clusterstack.pulumi.urn import name_of

    prices = policy.prices or DEFAULT_PRICES
    pools = [s for s in steps if family(s.type) == family(NODEPOOL)]
    side = lambda which: [SimpleNamespace(type=NODEPOOL, name=name_of(s.urn), inputs=dict(i))  # noqa: E731
                          for s in pools if (i := getattr(s, which))]
    old, new = side("old_inputs"), side("new_inputs")
    change = capacity_change(SimpleNamespace(stack="", resources=old) if old else None,
                             SimpleNamespace(stack="", resources=new) if new else None, prices) if (old or new) else None
    delta = change.monthly_delta if change is not None else None
    if delta is None or delta[1] <= 0:
        return ()
    rise = delta[1]
    if policy.block_monthly_increase is not None and rise > policy.block_monthly_increase:
        rule = (f"the fleet's monthly cost rises by {usd(rise)}, above [guard.cost] block_monthly_increase "
                f"{usd(policy.block_monthly_increase)}")
        for p in change.pools if change is not None else ():
            a = p.before.monthly_max if p.before and p.before.monthly_max is not None else 0.0
            b = p.after.monthly_max if p.after and p.after.monthly_max is not None else 0.0
            urn = next((s.urn for s in pools if name_of(s.urn) == (p.after or p.before).nodepool), None)
            if b > a and urn is not None and urn not in violations:
                violations[urn] = Violation(
                    urn=urn, type=NODEPOOL, op="update", reasons=("spec",), rule=rule,
                    hint=("a spend above the limit is a reviewed budget decision: raise "
                          "[guard.cost] block_monthly_increase in clusterstack.toml in its own "
                          "reviewed change, or grow the pool in smaller steps"))
        return ()
    if policy.warn_monthly_increase is not None and rise > policy.warn_monthly_increase:
        return (f"the fleet's monthly cost rises by {usd(rise)}, above [guard.cost] warn_monthly_increase "
                f"{usd(policy.warn_monthly_increase)}",)
    return ()


def check_document(parsed: Any, policy: GuardPolicy | None = None, *,
                   source: str | Path | None = None) -> Verdict:
    """The guard over a parsed Pulumi document (:class:`~clusterstack.pulumi.steps.ParsedSteps`):
    first :func:`clusterstack.pulumi.documents.check_usable` (a failed, truncated or
    self-contradictory document is ClusterstackError, exit 2 — never a clean verdict), then
    :func:`check` with the document's protect refusals and refresh-gone URNs."""
    from clusterstack.pulumi.documents import check_usable

    check_usable(parsed, source=source)
    return check(parsed.steps, policy, refusals=parsed.refusals, gone=parsed.gone)


def check_result(result: Any, policy: GuardPolicy | None = None) -> Verdict:
    """The guard over an engine :class:`~clusterstack.engine.model.PreviewResult`: its steps,
    the protect refusals of a failed preview (``ProtectRefusedError.result``) and the URNs a
    refresh found gone."""
    return check(result.steps, policy, refusals=getattr(result, "refusals", ()),
                 gone=getattr(result, "gone", ()))


class GuardBlocked(ClusterstackError):
    """Raised when the guard finds violations; exit code 3."""

    exit_code = GUARD_EXIT_CODE

    def __init__(self, verdict: Verdict,
                 hint: str = "see the BLOCKED lines above; nothing was applied") -> None:
        self.verdict = verdict
        super().__init__(f"{len(verdict.violations)} guarded change(s) blocked", hint)
