"""Reviewed intents of a cluster file, resolved for the guard (:mod:`clusterstack.guard.intent`),
and the refusal of a stale one. Used by ``preview``, ``up``, ``ci preview`` and ``diff``."""

from __future__ import annotations

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.guard import Verdict
from clusterstack.guard.intent import IntentRule
from clusterstack.workspace import Workspace
from clusterstack.derive import nodepool_name
from clusterstack.validation import load_cluster


def intent_rules(ws: Workspace, stack: str) -> tuple[IntentRule, ...]:
    """The intents of cluster ``stack``'s file (``intents:``), each with its pool's NodePool
    name (:func:`clusterstack.derive.nodepool_name`, the one naming rule); () for a stack that
    is not a cluster of this workspace or declares none. Raises the loader's ConfigError."""
    if stack not in ws.cluster_names():
        return ()
    loaded = load_cluster(ws, stack, references=False)
    cfg = loaded.config
    prefix = cfg.platform.label_prefix
    out = []
    for i, it in enumerate(cfg.intents):
        out.append(IntentRule(
            verb=it.verb, pool=it.pool, nodepool=nodepool_name(prefix, it.pool, ws.conventions),
            source=f"{loaded.path.name} intents[{i}]",
            new_nodepool=nodepool_name(prefix, it.to, ws.conventions) if it.to else None,
            from_nodes=it.from_nodes, to_nodes=it.to_nodes))
    return tuple(out)


def refuse_stale(ws: Workspace, stack: str, verdict: Verdict) -> None:
    """Raise ClusterstackError (exit 2) naming each stale intent of ``verdict`` at its line in
    the cluster file: no step makes the change any more — it is done — so the approval cannot
    be used again."""
    if not verdict.stale_intents:
        return

    loaded = load_cluster(ws, stack, references=False)
    problems = []
    for r in verdict.stale_intents:
        i = int(r.source.rsplit("[", 1)[1].rstrip("]"))
        p = loaded.source.problem(("intents", i), f"intent {r.words()}: no step of the preview makes "
                                  "this change — it is done (or was never made)",
                                  "remove the stanza in a reviewed change: an approved intent is used once")
        problems.append(Problem(message=p.message, hint=p.hint, file=p.file, line=p.line, field=p.field))
    raise ClusterstackError(problems=problems)


__all__ = ["intent_rules", "refuse_stale"]
