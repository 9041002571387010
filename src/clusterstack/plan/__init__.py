"""Offline plan: the real program under Pulumi's mock runtime → :class:`StackPlan`."""

from clusterstack.plan.model import PlannedResource, StackPlan, dumps, loads
from clusterstack.plan.runtime import plan_stack, run_program

__all__ = ["PlannedResource", "StackPlan", "dumps", "loads", "plan_stack", "run_program"]
