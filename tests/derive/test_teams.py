"""derive.teams: the teams' quota and the cluster queue's remainder add up to the fleet, for any
split within it; beyond it only with over-commit declared. On the shipped example
(clusters/cw-demo-teams.yaml: 256 GPUs, 4096 CPUs in the h100 pool; 128 CPUs in cpu-general)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from clusterstack.config.types import quantity_bytes
from clusterstack.derive import derive_kueue_quota
from clusterstack.derive.teams import derive_teams, flavor_keys
from clusterstack.errors import FieldError
from clusterstack.validation import load_cluster
from clusterstack.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
WS = Workspace.load(REPO)
CFG = load_cluster(WS, "cw-demo-teams", references=False).config


def with_split(a_gpus: int, b_gpus: int, *, overcommit: bool = False):
    teams = CFG.provisioning.coreweave.teams
    a, b = teams.members
    members = (a.model_copy(update={"quota": {**a.quota, "h100": a.quota["h100"].model_copy(update={"gpu": a_gpus})},
                                    "borrowing_limit": {}}),
               b.model_copy(update={"quota": {**b.quota, "h100": b.quota["h100"].model_copy(update={"gpu": b_gpus})},
                                    "borrowing_limit": {}, "lending_limit": {}}))
    cw = CFG.provisioning.coreweave.model_copy(update={"teams": teams.model_copy(
        update={"members": members, "overcommit": overcommit})})
    return CFG.model_copy(update={"provisioning": CFG.provisioning.model_copy(update={"coreweave": cw})})


def amount(resource: str, value) -> int:
    return quantity_bytes(str(value)) if resource in ("memory", "ephemeral-storage") else int(value)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 256).flatmap(lambda a: st.tuples(st.just(a), st.integers(0, 256 - a))))
def test_teams_and_the_cluster_queue_add_up_to_the_fleet(split):
    cfg = with_split(*split)
    spec = derive_teams(cfg, WS.conventions)
    fleet = {f.name: dict(f.quotas) for f in derive_kueue_quota(cfg, WS.conventions).flavors}
    for flavor, quotas in fleet.items():
        for resource, whole in quotas.items():
            queues = [*spec.queues, spec.cluster_queue]
            total = sum(amount(resource, dict(f.quotas)[resource]) for q in queues for f in q.flavors
                        if f.name == flavor)
            assert total == amount(resource, whole), (flavor, resource, split)
    gpus = {q.name: sum(int(v) for f in q.flavors for r, v in f.quotas if r == "nvidia.com/gpu")
            for q in spec.queues}
    assert gpus == {"team-a": split[0], "team-b": split[1]}


def test_beyond_the_fleet_only_with_overcommit():
    with pytest.raises(FieldError) as exc:
        derive_teams(with_split(200, 57), WS.conventions)
    assert exc.value.path == ("provisioning", "coreweave", "teams", "members", 1, "quota", "h100", "gpu")
    spec = derive_teams(with_split(200, 57, overcommit=True), WS.conventions)
    rest = next(f for f in spec.cluster_queue.flavors if f.name == "cwteams-h100-flavor")
    assert dict(rest.quotas)["nvidia.com/gpu"] == 0      # nothing left, never negative


def test_a_quota_names_a_scale_group_or_a_flavor():
    assert flavor_keys(CFG, WS.conventions) == {
        "cpu-general": "cwteams-cpu-general-flavor", "cwteams-cpu-general-flavor": "cwteams-cpu-general-flavor",
        "cwteams-h100-flavor": "cwteams-h100-flavor", "h100": "cwteams-h100-flavor"}
