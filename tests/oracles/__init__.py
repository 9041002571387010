"""Behaviour oracles: the decision rules of the systems that receive what clusterstack
declares, each cited, run over the shipped stacks' plans (docs/architecture.md)."""
