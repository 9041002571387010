"""Reservation terms of a workspace's clusters, as ``inventory`` and CI's drift run show them:
one reader of ``provisioning.coreweave.reservations`` (:func:`clusterstack.inventory.reservation_terms`
seen on a day, warned within ``[cost] reservation_warn_days``)."""

from __future__ import annotations

from datetime import date
from typing import Iterable

from clusterstack.inventory import ReservationTerm, reservation_terms
from clusterstack.validation import load_cluster
from clusterstack.workspace import Workspace


def workspace_reservations(ws: Workspace, stacks: Iterable[str], today: date) -> list[ReservationTerm]:
    """:func:`reservation_terms` of every cluster of ``stacks`` (its reviewed file,
    ``provisioning.coreweave.reservations``), seen on ``today``, warned within ``[cost]
    reservation_warn_days``; read by ``inventory`` and CI's drift run alike. Raises ConfigError
    for an invalid cluster file."""
    out: list[ReservationTerm] = []
    names = set(ws.cluster_names())
    for stack in stacks:
        if stack not in names:
            continue
        cw = load_cluster(ws, stack, references=False).config.provisioning.coreweave
        if cw is not None:
            out += reservation_terms(stack, cw.reservations, today, ws.settings.cost.reservation_warn_days)
    return out
