"""Behaviour oracles: the decision rules of the systems that receive what clusterstack
declares, read from their source at the pinned versions, each cited rule by rule, run over the
shipped stacks' plans (docs/architecture.md; GUIDE.md "Behaviour oracles").

One small module per receiving system: :mod:`coreweave` (the nodes a NodePool delivers),
:mod:`kueue` (Kueue 0.14.4 flavor assignment and topology-aware placement), :mod:`helm`
(pulumi-kubernetes' Helm release wait against the plan's dependency graph: day one),
:mod:`kubernetes` (fields the API server refuses to change, and how Pulumi's engine replaces
them), :mod:`google_certificates` (Google-managed certificate provisioning). Each takes a plan
(:class:`clusterstack.plan.StackPlan`) and answers a question a reviewer would ask of the real
system; none simulates more than the rule it cites.
"""
