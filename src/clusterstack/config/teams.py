"""Teams sharing one CoreWeave cluster, and the reservations behind its pools: the reviewed
models of ``provisioning.coreweave.teams`` and ``provisioning.coreweave.reservations`` (strict:
clusterstack owns them; the scheduler never reads them).

Shape (docs/teams-and-cost.md has the worked example)::

    teams:
      cohort: demo-h100                  # the Kueue cohort every team's ClusterQueue joins
      fair_sharing: true                 # Kueue's fair sharing among the cohort's queues
      overcommit: false                  # true: Σ of the teams' quota may exceed the fleet
      members:
        - name: team-a
          namespaces: [team-a]           # each gets a LocalQueue naming the team's ClusterQueue
          quota: {h100: {gpu: 192}}      # nominal quota per flavor (a scale group or a flavor name)
          borrowing_limit: {h100: {gpu: 64}}
          lending_limit: {h100: {gpu: 64}}
          fair_sharing_weight: 1
          preemption: {within_team: LowerPriority, reclaim_from_cohort: Any}
    reservations:
      h100: {id: res-0042, ends: 2027-06-30, committed_nodes: 32}

Kueue's meaning of each field (kubernetes-sigs/kueue v0.14.4, the ClusterQueue CRD at
``../shared/reference/kueue-v0.14.4/config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml``):
``spec.cohort`` (L117-133: "CQs that belong to the same cohort can borrow unused resources from
each other"), ``resourceGroups[].flavors[].resources[].borrowingLimit`` / ``lendingLimit``
(L392-420: "must be null if spec.cohort is empty"), ``spec.fairSharing.weight`` (L134-151), and
``spec.preemption.withinClusterQueue`` / ``reclaimWithinCohort`` (L280-322, their enums). No
``borrowWithinCohort``: the CRD says it "May only be configured with Classical Preemption, and
__not__ with Fair Sharing" (L249-254). ``lendingLimit`` needs Kueue's ``LendingLimit`` feature
gate, Beta and on by default since 0.9 (pkg/features/kube_features.go L258-261 at v0.14.4). The rules that need the cluster (a flavor it has, quota
within the fleet, namespaces) are in :mod:`clusterstack.derive.teams`.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, model_validator

from clusterstack.config.document import Strict
from clusterstack.config.types import (Count, MemoryQuantity, NonEmptyStr, NonEmptyTuple, PositiveCount,
                                       Rfc1123Label, Rfc1123Subdomain, unique_items)

#: The resources a team's quota names, and the Kubernetes resource each is
#: (clusterstack.derive.COVERED_RESOURCES).
TEAM_RESOURCES = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}


class ResourceQuota(Strict):
    """Per flavor: GPUs (devices), CPUs (cores) and memory (a Kubernetes quantity such as
    ``4096Gi``). A resource left out is derived (:mod:`clusterstack.derive.teams`)."""

    gpu: Count | None = None
    cpu: Count | None = None
    memory: MemoryQuantity | None = None


class Preemption(Strict):
    """The team ClusterQueue's ``spec.preemption`` (Kueue's enums, CRD L280-322).

    ``within_team`` → ``withinClusterQueue``; ``reclaim_from_cohort`` → ``reclaimWithinCohort``
    (preempt workloads that borrowed this team's quota: ``Any`` reclaims it whatever their
    priority)."""

    within_team: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"
    reclaim_from_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"


def _weight(value: int | float | str) -> str:
    # Rule: Kueue's fairSharing.weight is a resource.Quantity (CRD L140-150: "When not 0,
    # Weight must be greater than 10^-9"); written as the decimal text Kueue parses.
    d = Decimal(str(value))
    if d < 0 or (0 < d <= Decimal("1e-9")):
        raise ValueError(f"weight {value} must be 0 or greater than 10^-9 (Kueue ClusterQueue CRD, "
                         "spec.fairSharing.weight)")
    return format(d.normalize(), "f")


Weight = Annotated[int | float, AfterValidator(_weight)]


class Team(Strict):
    """One team: its name (also its ClusterQueue's, by ``[conventions] team_cluster_queue``),
    its namespaces, nominal quota per flavor, limits, fair-sharing weight and preemption."""

    name: Rfc1123Label
    namespaces: Annotated[NonEmptyTuple[Rfc1123Label], AfterValidator(unique_items)]
    quota: dict[NonEmptyStr, ResourceQuota] = Field(min_length=1)
    borrowing_limit: dict[NonEmptyStr, ResourceQuota] = Field(default_factory=dict)
    lending_limit: dict[NonEmptyStr, ResourceQuota] = Field(default_factory=dict)
    fair_sharing_weight: Weight = 1
    preemption: Preemption = Preemption()

    @model_validator(mode="after")
    def _limits_name_quota_flavors(self) -> "Team":
        # Rule: a limit applies to a [flavor, resource] the queue lists (Kueue validates limits
        # per resource of a listed flavor, pkg/webhooks/clusterqueue_webhook.go L215-249).
        for key in ("borrowing_limit", "lending_limit"):
            for flavor in getattr(self, key):
                if flavor not in self.quota:
                    raise ValueError(f"{key} names {flavor!r}, which has no quota in this team; "
                                     f"quota lists {sorted(self.quota)}")
        return self


class Teams(Strict):
    """``provisioning.coreweave.teams``: the teams sharing this cluster's fleet."""

    cohort: Rfc1123Subdomain
    fair_sharing: StrictBool = True
    # Declared over-commit: Σ of the teams' nominal quota may exceed the fleet (Kueue then
    # admits more than the nodes hold; pods wait in kube-scheduler instead of in Kueue).
    overcommit: StrictBool = False
    members: NonEmptyTuple[Team]


class Reservation(Strict):
    """``provisioning.coreweave.reservations.<scale group>``: the capacity reservation a pool's
    nodes are billed under. ``ends``: the last day of the term (ISO date); ``committed_nodes``:
    the nodes the reservation holds. Its rate is the instance type's in the one price table
    (``clusterstack.toml`` ``[cost.hourly]`` over list prices, :mod:`clusterstack.config.prices`),
    so ``inventory``, ``diff`` and the PR comment price a pool alike."""

    id: NonEmptyStr
    ends: datetime.date
    committed_nodes: PositiveCount
