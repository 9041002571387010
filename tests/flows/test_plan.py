"""``clusterstack plan`` as a library flow (clusterstack.flows.plan): a plan derives each
stack's specs once — its checks (``validate``'s rules) and its program share one load of each
cluster file (:func:`clusterstack.validation.clusters.one_load_per_file`)."""

from __future__ import annotations

import sys
from collections import Counter

import clusterstack.derive
from helpers import REPO
from clusterstack.flows.plan import plan
from clusterstack.workspace import Workspace


def count_nodepool_derivations(monkeypatch) -> Counter[str]:
    """Count :func:`clusterstack.derive.derive_nodepools` calls per cluster name, through every
    module of the package that holds the function (whichever path calls it)."""
    original = clusterstack.derive.derive_nodepools
    calls: Counter[str] = Counter()

    def counted(cfg, *args, **kwargs):
        calls[cfg.name] += 1
        return original(cfg, *args, **kwargs)

    holders = [m for name, m in list(sys.modules.items())
               if name.startswith("clusterstack") and getattr(m, "derive_nodepools", None) is original]
    assert holders, "derive_nodepools is held by no module: the counter would count nothing"
    for module in holders:
        monkeypatch.setattr(module, "derive_nodepools", counted)
    return calls


def test_a_plan_derives_each_stack_once(monkeypatch):
    """The CoreWeave stacks planned (one with teams, one without) derive their NodePools
    exactly once each — not once to validate and again to declare — and every other
    CoreWeave cluster (read for validate's one-owner-per-identity rule) at most once."""
    ws = Workspace.load(REPO)
    planned = ["cw-demo-teams", "cw-demo-h100"]
    calls = count_nodepool_derivations(monkeypatch)
    plans = plan(ws, planned)
    assert [p.stack for p in plans] == planned
    assert all(any(r.type.endswith(":NodePool") for r in p.resources) for p in plans)
    assert {n: calls[n] for n in planned} == {n: 1 for n in planned}
    assert max(calls.values()) == 1, calls
