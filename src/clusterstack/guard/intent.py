"""Reviewed intent: the destructive change of a pool a reviewer approved in the cluster file
(``intents:``, :class:`clusterstack.config.cluster.Intent`), as the guard matches it.

Terraform makes destructive intent reviewable code (``removed`` / ``moved`` blocks); clusterstack
does the same for its most expensive changes. An intent lets *exactly* its change through:

* ``retire P``: the delete of P's NodePool (by name, any API version of the kind);
* ``shrink P from_nodes → to_nodes``: the capacity cut of P's NodePool whose size goes from
  exactly ``from_nodes`` to exactly ``to_nodes`` nodes;
* ``migrate P → Q``: the delete of P's NodePool while Q's NodePool is created or already there
  (create before delete: ``up`` creates Q first);

and, with any of them, the cut of a ClusterQueue's GPU quota that moves exactly the GPUs the
intended NodePool changes lose (the pool's flavor going with it). Anything else stays blocked —
a replace of P, a delete of another pool, a cut of another size, a quota cut of other GPUs.

An intent that matches no step is *stale*: the change is done (or was never made). Engine-facing
commands refuse it (exit 2) so an old approval cannot be replayed: the stanza is removed in the
next change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from clusterstack.pulumi.tokens import KUEUE_CLUSTER_QUEUE, NODEPOOL, family
from clusterstack.pulumi.urn import name_of


@dataclass(frozen=True)
class IntentRule:
    """One intent resolved to the names the guard sees: ``verb`` (``retire``, ``shrink``,
    ``migrate``), ``pool`` (the scale group), ``nodepool`` (its NodePool's name),
    ``new_nodepool`` (a migration's new NodePool), ``from_nodes``/``to_nodes`` (a shrink),
    ``source`` (``cw-demo-h100.yaml intents[0]``: where it is declared)."""

    verb: str
    pool: str
    nodepool: str
    source: str
    new_nodepool: str | None = None
    from_nodes: int | None = None
    to_nodes: int | None = None

    def words(self) -> str:
        if self.verb == "shrink":
            return f"shrink {self.pool} {self.from_nodes} → {self.to_nodes} nodes"
        if self.verb == "migrate":
            return f"migrate {self.pool} → {self.new_nodepool}"
        return f"retire {self.pool}"

    def matches(self, violation, present: set[str]) -> bool:
        """True when ``violation`` (:class:`clusterstack.guard.Violation`) is exactly this
        intent's NodePool change; ``present``: names of NodePools the steps create or keep."""
        if family(violation.type) != family(NODEPOOL) or name_of(violation.urn) != self.nodepool:
            return False
        if self.verb == "retire":
            return violation.op == "delete"
        if self.verb == "migrate":
            return violation.op == "delete" and self.new_nodepool in present
        cap = violation.capacity
        return (violation.op == "shrink" and cap is not None
                and cap.size == (self.from_nodes, self.to_nodes))


def split_intended(violations: Iterable, steps: Iterable, rules: Iterable[IntentRule]
                   ) -> tuple[list, list, list[IntentRule]]:
    """``violations`` split by ``rules``: (still blocked, intended, stale rules). A NodePool
    violation is intended when a rule matches it (:meth:`IntentRule.matches`); a ClusterQueue
    GPU-quota cut is intended when it loses exactly the GPUs the intended NodePool changes lose
    (and they lose some). A rule that matches nothing is stale."""
    rules = list(rules)
    violations = list(violations)
    if not rules:
        return violations, [], []
    present = {name_of(s.urn) for s in steps if s.op != "delete" and family(s.type) == family(NODEPOOL)}
    intended, used = [], set()
    rest = []
    for v in violations:
        rule = next((r for r in rules if r.matches(v, present)), None)
        if rule is not None:
            intended.append(v)
            used.add(rule)
        else:
            rest.append(v)
    budget = sum((v.capacity.gpus_lost or 0) for v in intended if v.capacity is not None)
    blocked = []
    for v in rest:
        cap = v.capacity
        if (budget and family(v.type) == family(KUEUE_CLUSTER_QUEUE) and cap is not None
                and cap.gpus_lost == budget):
            intended.append(v)
        else:
            blocked.append(v)
    return blocked, intended, [r for r in rules if r not in used]


__all__ = ["IntentRule", "split_intended"]
