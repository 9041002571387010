"""The destructive-change guard: one policy, one check, used by ``guard``, ``preview``, ``up``,
``import apply`` and (statically) ``diff``.

Pulumi has no built-in "block replace" switch and policy packs cannot see a step's operation,
so the tool enforces it. The guard holds only the policy (:class:`GuardPolicy`, the typed
``[guard]`` section: :mod:`clusterstack.guard.policy`), the capacity measure
(:mod:`clusterstack.guard.capacity`), the check (:func:`check` → :class:`Verdict` of
:class:`Violation`) and the hints; the steps it checks, the
op sets and the type tokens are Pulumi vocabulary (:mod:`clusterstack.pulumi.steps`,
:mod:`clusterstack.pulumi.tokens`). A replacement is counted once per URN whether or not the
pair steps are shown (:func:`clusterstack.pulumi.steps.logical_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.paths import contains, get_path, lenient_parse
from clusterstack.pulumi.steps import ParsedSteps, Refusal, Step, forcing_properties, logical_ops
from clusterstack.guard.capacity import CapacityLoss, measure, pool_counts
from clusterstack.guard.intent import IntentRule, split_intended
from clusterstack.guard.policy import CapacityPolicy, GuardPolicy
from clusterstack.pulumi.urn import name_of, type_of
from clusterstack.pulumi.documents import check_usable
from clusterstack.pulumi.tokens import NODEPOOL, family, member
from clusterstack.config.prices import DEFAULT_PRICES, PriceTable, usd

GUARD_EXIT_CODE = 3


@dataclass(frozen=True)
class Violation:
    """A forbidden step: the URN, the logical op (``replace``, ``delete`` or ``shrink`` — a
    capacity cut by an in-place update), the properties that force it, which rule it breaks,
    what to do, and the capacity it would destroy (None: the resource has none the guard
    measures)."""

    urn: str
    type: str
    op: str
    reasons: tuple[str, ...]
    rule: str
    hint: str
    capacity: CapacityLoss | None = None

    def lines(self, indent: str = "", verb: str = "BLOCKED") -> list[str]:
        """The violation as :func:`entry_lines`: ``BLOCKED <op> <Kind> <name> — forced by …:
        <rule>``, the capacity it destroys, then what to do (restore, or the deliberate route,
        naming the URN once)."""
        todo = ("restore the old value in the reviewed config and preview again; "
                + (deliberate_shrink(self.urn) if self.op == "shrink" else
                   self.hint if self.op in ("update", "create")     # [guard.cost]: a spend, not a loss
                   else deliberate_route(self.op, self.urn)))
        return entry_lines(verb, self.op, self.type, self.urn, forced_by=self.reasons,
                           rule=self.rule, todo=todo, indent=indent, capacity=self.capacity)

    def render(self) -> str:
        """:meth:`lines` as one text (two lines)."""
        return "\n".join(self.lines())


def entry_lines(verb: str, op: str, typ: str, urn: str, *, rule: str, todo: str | None = None,
                forced_by: Iterable[str] = (), change: str = "", indent: str = "",
                capacity: CapacityLoss | None = None) -> list[str]:
    """THE rendering of a destructive entry — a guard violation (``BLOCKED``, in ``guard``,
    ``preview``, ``up``, ``import apply``) or a static diff finding (``DESTRUCTIVE``, in
    ``diff``) — as text lines:

        <indent><VERB> <op> <Kind> <name>[: <change>][ — forced by <p>, …]: <rule>
        <indent>  capacity: <what it destroys>        (when ``capacity`` is given)
        <indent>  to do: <todo>

    ``Kind`` is the type token's member (:func:`clusterstack.pulumi.tokens.member`: ``NodePool``,
    ``Address``), ``name`` the URN's name; the entry line never carries the URN (the rule may
    name the full type token); ``todo`` names it at most once. No ``to do`` line when ``todo``
    is None. Plain text (URNs hold ``[`` and ``$``): no markup."""
    kind = member(typ) if typ else "resource"
    what = f": {change}" if change else ""
    why = f" — forced by {', '.join(forced_by)}" if forced_by else ""
    lines = [f"{indent}{verb} {op} {kind} {name_of(urn)}{what}{why}: {rule}"]
    if capacity is not None:
        lines.append(f"{indent}  capacity: {capacity.words()}")
    if todo:
        lines.append(f"{indent}  to do: {todo}")
    return lines


def deliberate_route(op: str, urn: str) -> str:
    """The deliberate route of ``op`` (``replace`` | ``delete``) of ``urn`` in the words of a
    ``to do`` line — never raw Pulumi: a NodePool's retirement or its move to a new pool is a
    reviewed intent in the cluster file (:mod:`clusterstack.guard.intent`), which the guard lets
    through and ``up`` performs; any other kind has no reviewed destructive route."""
    if family(type_of(urn)) == family(NODEPOOL):
        how = ("declare it in the cluster file: `intents: [{retire: POOL}]`, or for a new instance "
               "type a new scale group and `{migrate: OLD, to: NEW}`" if op == "delete" or op == "replace"
               else "declare it in the cluster file (`intents:`)")
        return (f"a deliberate {op} of '{urn}' is reviewed intent: {how} "
                "(docs/retiring-a-pool.md); the guard then lets exactly that through")
    return (f"a deliberate {op} of '{urn}' has no reviewed route in clusterstack (reviewed "
            "intents cover NodePools, docs/retiring-a-pool.md): keep it, and raise it with the "
            "maintainers of this workspace")


def deliberate_shrink(urn: str) -> str:
    """What to do about a capacity cut the operator means: a reviewed intent for a NodePool
    (``shrink``/``retire``/``migrate`` in the cluster file), or a reviewed change of
    ``[guard.capacity]`` (a team's queue, any other cut)."""
    return (f"a deliberate cut of {name_of_urn(urn)} is declared in the cluster file "
            "(`intents: [{shrink: POOL, from_nodes: N, to_nodes: M}]`, docs/retiring-a-pool.md) "
            "or is a reviewed change of `[guard.capacity]` (docs/making-a-change.md \"Capacity\")")


def name_of_urn(urn: str) -> str:
    """The name part of ``urn`` (:func:`clusterstack.pulumi.urn.name_of`)."""
    return name_of(urn)


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
    #: capacity cuts the policy lets pass with a warning (``[guard.capacity] warn``)
    warnings: tuple[Violation, ...] = ()
    #: the capacity every destructive change (replace, delete, shrink) destroys, by URN
    capacity: tuple[CapacityLoss, ...] = ()
    #: changes a reviewed intent of the cluster file lets through (clusterstack.guard.intent)
    intended: tuple[Violation, ...] = ()
    #: intents no step matches: the change is done (or was never made) — refused by the flows
    stale_intents: tuple[IntentRule, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def capacity_of(self, urn: str) -> CapacityLoss | None:
        """The capacity the destructive change of ``urn`` destroys (None: none measured)."""
        return next((c for c in self.capacity if c.urn == urn), None)


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
    """How a *deliberate* ``op`` (``replace`` | ``delete``) of ``urn`` is done, as a hint
    suffix: no flag or confirmation of ``preview``/``up`` gets past the guard; the route is a
    reviewed intent in the cluster file for a NodePool (:func:`deliberate_route`)."""
    return deliberate_route(op, urn)


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
          refusals: Iterable[Refusal] = (), gone: Iterable[str] = (),
          intents: Iterable[IntentRule] = ()) -> Verdict:
    """Apply ``policy`` (default: :class:`GuardPolicy` defaults) to ``steps``.

    Rules (type rules match the resource family, :meth:`GuardPolicy.forbids`): replace of a
    ``forbid_replace`` type; delete of a ``forbid_delete`` type; delete of a
    ``forbid_delete_unretained`` type whose old state lacks ``retainOnDelete``; delete of a
    protected ``forbid_delete_protected`` type; with ``protected_state``, any delete or replace
    of a resource whose old state has ``protect: true``; an ``update`` of a ``forbid_replace``
    type that changes one of its ``replace_properties`` (:func:`immutable_changes`), counted as
    the replace it really is; a capacity cut (:mod:`clusterstack.guard.capacity`: an
    ``update`` lowering a NodePool's nodes or racks or any ClusterQueue's GPU quota in a
    flavor, or the delete or replace of either) of a kind ``[guard.capacity]`` blocks, beyond
    its tolerances (op ``shrink`` for an update; a kind it warns of: :attr:`Verdict.warnings`).
    Every violation and every destructive change states the capacity it destroys
    (:attr:`Violation.capacity`, :attr:`Verdict.capacity`). ``intents``: the reviewed intents
    of the stack's cluster file (:mod:`clusterstack.guard.intent`): a violation one matches
    exactly is :attr:`Verdict.intended`, not a violation; one matching nothing is
    :attr:`Verdict.stale_intents`. ``refusals`` — the protect refusals Pulumi reported in its error
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
    # capacity: what each destructive change destroys; a cut of a guarded kind is blocked or
    # warned (``[guard.capacity]``, clusterstack.guard.capacity)
    losses: dict[str, CapacityLoss] = {}
    warnings: dict[str, Violation] = {}
    cap = policy.capacity
    for urn in sorted(folded):
        op, s = folded[urn]
        if (loss := measure(op, urn, s.type, s.old_inputs, s.new_inputs)) is not None:
            losses[urn] = loss
    for s in steps:
        if s.op == "update" and s.urn not in folded:
            # an immutable change is the replace it really is: it destroys the whole pool
            op = "replace" if s.urn in violations and violations[s.urn].op == "replace" else "update"
            if (loss := measure(op, s.urn, s.type, s.old_inputs, s.new_inputs)) is not None:
                losses[s.urn] = loss
    for urn in sorted(losses):
        loss = losses[urn]
        action = cap.action(loss.type)
        if action is None or cap.tolerated(loss.nodes_lost, loss.gpus_lost):
            continue
        if urn in violations:   # already refused (replace/delete rule): state what it destroys
            violations[urn] = replace(violations[urn], capacity=loss)
            continue
        v = Violation(urn=urn, type=loss.type, op=loss.op, reasons=tuple(c.path for c in loss.cuts),
                      rule=_capacity_rule(loss, cap, action), hint=_capacity_hint(loss),
                      capacity=loss)
        if action == "block":
            violations[urn] = v
        else:
            warnings[urn] = v
        if loss.op == "shrink":
            immutable.append(("shrink", urn))
    _cost_rule(steps, policy, violations, warnings)
    for urn, v in violations.items():
        if v.capacity is None and urn in losses:
            violations[urn] = replace(v, capacity=losses[urn])
    by_step = {s.urn: s for s in steps}
    for r in refusals:
        if r.urn in violations:
            continue
        s = by_step.get(r.urn)
        typ = s.type if s is not None else type_of(r.urn)
        reasons = (forcing_properties(s) or s.diffs) if s is not None else ()
        loss = (measure(r.op, r.urn, typ, s.old_inputs, s.new_inputs) if s is not None else None)
        if loss is not None:
            losses[r.urn] = loss
        violations[r.urn] = Violation(
            urn=r.urn, type=typ, op=r.op, reasons=tuple(reasons),
            rule=f"Pulumi refused to {r.op} it: the resource is protected (the preview failed)",
            hint=_hint(r.op, r.urn, False), capacity=loss)
    destructive = {u: folded[u][0] for u in folded}
    destructive.update({u: op for op, u in immutable})
    destructive.update({r.urn: r.op for r in refusals if r.urn not in destructive})
    blocked, intended, stale = split_intended((violations[u] for u in sorted(violations)), steps, intents)
    violations = {v.urn: v for v in blocked}
    return Verdict(intended=tuple(sorted(intended, key=lambda v: v.urn)), stale_intents=tuple(stale),
                   violations=tuple(violations[u] for u in sorted(violations)),
                   destructive=tuple((destructive[u], u) for u in sorted(destructive)),
                   drift=tuple(sorted(gone_set)), recovery=tuple(recovery),
                   warnings=tuple(warnings[u] for u in sorted(warnings)),
                   capacity=tuple(losses[u] for u in sorted(losses) if u in destructive))


def _pool_monthly(inputs: Mapping[str, Any] | None, prices: PriceTable) -> float | None:
    """USD a month of a NodePool's nodes (its size, :func:`clusterstack.guard.capacity.pool_counts`:
    as ``inventory`` counts them — an autoscaled pool at its upper figure); 0 without inputs;
    None when its instance type has no rate."""
    if not inputs:
        return 0.0
    spec = s if isinstance(s := inputs.get("spec"), Mapping) else {}
    return prices.monthly(str(spec.get("instanceType", "")), pool_counts(spec).get("size", 0))


def _cost_rule(steps: list[Step], policy: GuardPolicy, violations: dict[str, Violation],
               warnings: dict[str, Violation]) -> None:
    """``[guard.cost]``: the monthly cost increase of ``steps`` — each NodePool step's old → new
    inputs priced by the policy's rates (:meth:`GuardPolicy.with_prices`, else CoreWeave's list
    prices, :mod:`clusterstack.config.prices`), nodes counted as ``diff``, the PR comment and
    ``inventory`` count them (an autoscaled pool at its upper figure). Above
    ``block_monthly_increase``: a violation (op ``update``/``create``) on each NodePool whose
    cost rises; else above ``warn_monthly_increase``: the same entries as warnings. Not judged
    when a pool's type has no rate (its share of the rise is unknown)."""
    cost = policy.cost
    if cost.warn_monthly_increase is None and cost.block_monthly_increase is None:
        return
    prices = policy.prices or DEFAULT_PRICES
    rises: dict[str, tuple[Step, float]] = {}
    total = 0.0
    for s in steps:
        if family(s.type) != family(NODEPOOL) or s.op == "same":
            continue
        before, after = _pool_monthly(s.old_inputs, prices), _pool_monthly(s.new_inputs, prices)
        if before is None or after is None:
            return
        total += after - before
        if after > before:
            rises[s.urn] = (s, after - before)
    total = round(total, 2)
    if total <= 0:
        return
    if cost.block_monthly_increase is not None and total > cost.block_monthly_increase:
        key, limit, into = "block_monthly_increase", cost.block_monthly_increase, violations
    elif cost.warn_monthly_increase is not None and total > cost.warn_monthly_increase:
        key, limit, into = "warn_monthly_increase", cost.warn_monthly_increase, warnings
    else:
        return
    rule = f"the fleet's monthly cost rises by {usd(total)}, above [guard.cost] {key} {usd(float(limit))}"
    for urn, (s, _rise) in sorted(rises.items()):
        if urn not in violations and urn not in into:
            into[urn] = Violation(
                urn=urn, type=s.type, op="create" if s.op == "create" else "update", reasons=("spec",),
                rule=rule, hint=("a spend above the limit is a reviewed budget decision: raise [guard.cost] "
                                 f"{key} in clusterstack.toml in the same reviewed change, where the reviewer approves "
                                 "the spend; the limit applies to the fleet, not to one step, so do not split "
                                 "the change to pass under it"))


def _capacity_rule(loss: CapacityLoss, cap: CapacityPolicy, action: str) -> str:
    """The rule a capacity cut breaks, in words (which kind, the tolerances)."""
    tol = ""
    if cap.tolerate_nodes or cap.tolerate_gpus:
        tol = f" beyond {cap.tolerate_nodes} node(s) / {cap.tolerate_gpus} GPU(s)"
    what = "GPU quota" if loss.nodes_lost == 0 and loss.kind == "ClusterQueue" else "capacity"
    verb = "blocks" if action == "block" else "warns of"
    return f"a {what} cut: [guard.capacity] {verb} any cut of a {loss.kind}{tol}"


def _capacity_hint(loss: CapacityLoss) -> str:
    """What to do about a capacity cut (the hint of its violation)."""
    return (f"clusterstack never cuts capacity unasked: restore the old value in the reviewed "
            f"config and preview again; {deliberate_shrink(loss.urn)}")


def check_document(parsed: ParsedSteps, policy: GuardPolicy | None = None, *,
                   source: str | Path | None = None) -> Verdict:
    """The guard over a parsed Pulumi document (:class:`~clusterstack.pulumi.steps.ParsedSteps`):
    first :func:`clusterstack.pulumi.documents.check_usable` (a failed, truncated or
    self-contradictory document is ClusterstackError, exit 2 — never a clean verdict), then
    :func:`check` with the document's protect refusals and refresh-gone URNs."""
    check_usable(parsed, source=source)
    return check(parsed.steps, policy, refusals=parsed.refusals, gone=parsed.gone)


def check_result(result: Any, policy: GuardPolicy | None = None, *,
                 intents: Iterable[IntentRule] = ()) -> Verdict:
    """The guard over an engine :class:`~clusterstack.engine.model.PreviewResult`: its steps,
    the protect refusals of a failed preview (``ProtectRefusedError.result``) and the URNs a
    refresh found gone; ``intents``: the stack's reviewed intents (:func:`check`)."""
    return check(result.steps, policy, refusals=getattr(result, "refusals", ()),
                 gone=getattr(result, "gone", ()), intents=intents)


class GuardBlocked(ClusterstackError):
    """Raised when the guard finds violations; exit code 3."""

    exit_code = GUARD_EXIT_CODE

    def __init__(self, verdict: Verdict,
                 hint: str = "see the BLOCKED lines above; nothing was applied") -> None:
        self.verdict = verdict
        super().__init__(f"{len(verdict.violations)} guarded change(s) blocked", hint)
