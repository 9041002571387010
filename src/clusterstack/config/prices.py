"""What a node costs: a dated price table per instance type (keyed by the same names as
:mod:`clusterstack.config.instances`), and the monthly figure of a pool, a cluster and a team.

Default rates: CoreWeave's public on-demand list prices per instance-hour (USD), from
https://www.coreweave.com/pricing as transcribed on :data:`LIST_PRICES_AS_OF` (2026-09-20) by
api-evangelist/coreweave ``plans/coreweave-plans-pricing.yml``@27bcc25e ("every price_text was
found verbatim in the fetched page text"); each row below names the plan it was read from. A
type the page prices as "Contact sales" (B300, GB300) or does not list (cd-gp-i64-erapids,
turin-*, cd-gp-l-a192-genoa, cd-hc-a384-genoa) has no default: its pools are shown unpriced
until the lab states its rate.

The lab's own rates override them: ``clusterstack.toml`` ``[cost.hourly]`` (instance type →
USD per node-hour, e.g. a negotiated reserved rate; the page itself says "up to 60% discounts
over our On-Demand prices for committed usage"), dated by ``[cost] rates_as_of``. A pool under
a reservation with an ``hourly`` rate (``provisioning.coreweave.reservations``) uses that one.

Monthly figures: node-hours × rate with :data:`HOURS_PER_MONTH` = 730 hours a month (8760 / 12),
overridable as ``[cost] hours_per_month``. A pinned pool (warm = max) has one figure; an
autoscaled pool a range, warm nodes × rate (the floor it always pays) to max nodes × rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

#: The day the public list prices below were read (from the transcription's ``generated``).
LIST_PRICES_AS_OF = "2026-09-20"
LIST_PRICES_SOURCE = ("https://www.coreweave.com/pricing (on-demand list prices, as transcribed on "
                      "2026-09-20 in api-evangelist/coreweave plans/coreweave-plans-pricing.yml@27bcc25e)")
#: Hours in a month: 8760 hours a year / 12.
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class ListPrice:
    """USD per node-hour of one instance type, and the plan on the pricing page it is."""

    hourly: float
    plan: str


LIST_PRICES: dict[str, ListPrice] = {
    "gd-8xh100ib-i128": ListPrice(49.24, "NVIDIA HGX H100 (on-demand): $49.24 per hour, 8 GPUs"),
    "gd-8xh200ib-i128": ListPrice(50.44, "NVIDIA HGX H200 (on-demand): $50.44 per hour, 8 GPUs"),
    "b200-8x": ListPrice(68.80, "NVIDIA HGX B200 (on-demand): $68.80 per hour, 8 GPUs"),
    "gb200-4x": ListPrice(42.00, "NVIDIA GB200 NVL72 (on-demand, North America): $42.00 per hour, 4 GPUs"),
    "gd-8xa100-i128": ListPrice(21.60, "NVIDIA A100 (on-demand): $21.60 per hour, 8 GPUs"),
    "gd-8xl40s-i128": ListPrice(18.00, "NVIDIA L40S (on-demand): $18.00 per hour, 8 GPUs"),
    "gd-8xl40-i128": ListPrice(10.00, "NVIDIA L40 (on-demand): $10.00 per hour, 8 GPUs"),
    "rtxp6000-8x": ListPrice(20.00, "NVIDIA RTX PRO 6000 Blackwell Server Edition: $20.00 per hour, 8 GPUs"),
    "gd-1xgh200": ListPrice(6.50, "NVIDIA GH200: $6.50 per hour, 1 GPU"),
    "cd-hp-a96-genoa": ListPrice(6.42, "CPU: AMD Genoa (9274F) High Performance: $6.42 per hour, 96 vCPUs"),
    "cd-gp-a192-genoa": ListPrice(7.78, "CPU: AMD Genoa (9454) General Purpose: $7.78 per hour, 192 vCPUs"),
    "cd-gp-i96-icelake": ListPrice(3.36, "CPU: Intel Ice Lake (6342) General Purpose: $3.36 per hour, 96 vCPUs"),
}


@dataclass(frozen=True)
class Rate:
    """The rate a pool is priced at: USD per node-hour and where it comes from."""

    hourly: float
    source: str


@dataclass(frozen=True)
class PriceTable:
    """The rates in force: the lab's (``[cost.hourly]``) over the public list prices.

    ``lab_as_of``: ``[cost] rates_as_of`` (the date the lab's rates were agreed), "" when unset."""

    lab: Mapping[str, float] = field(default_factory=dict)
    lab_as_of: str = ""
    hours_per_month: int = HOURS_PER_MONTH

    def rate(self, instance_type: str) -> Rate | None:
        """The rate of ``instance_type``: the lab's, else the list price, else None (unpriced)."""
        if instance_type in self.lab:
            when = f" as of {self.lab_as_of}" if self.lab_as_of else ""
            return Rate(float(self.lab[instance_type]), f"clusterstack.toml [cost.hourly]{when}")
        listed = LIST_PRICES.get(instance_type)
        if listed is None:
            return None
        return Rate(listed.hourly, f"CoreWeave list price as of {LIST_PRICES_AS_OF}")

    def monthly(self, instance_type: str, nodes: int, hourly: float | None = None) -> float | None:
        """USD a month for ``nodes`` nodes of ``instance_type`` (``hourly`` overrides the
        table's rate, e.g. a reservation's); None when unpriced. Rounded to cents."""
        rate = hourly if hourly is not None else (r.hourly if (r := self.rate(instance_type)) else None)
        if rate is None:
            return None
        return round(nodes * rate * self.hours_per_month, 2)


DEFAULT_PRICES = PriceTable()


def usd(amount: float | None, *, signed: bool = False) -> str:
    """``$1,150,246.40`` (``+$…`` / ``−$…`` with ``signed``); "unpriced" for None."""
    if amount is None:
        return "unpriced"
    text = f"${abs(amount):,.2f}"
    if not signed:
        return text if amount >= 0 else f"−{text}"
    return f"+{text}" if amount > 0 else f"−{text}" if amount < 0 else "$0.00"
