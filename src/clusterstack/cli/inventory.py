"""``clusterstack inventory``: the fleet's capacity per cluster and pool — nodes, racks, GPUs,
monthly cost — the GPU quota and cost per queue and team, and the pools' reservation terms,
from the offline plans and the reviewed files (:mod:`clusterstack.inventory`)."""

from __future__ import annotations

import datetime

import typer

from clusterstack.cli import emit_json, err, out, status, workspace
from clusterstack.config.prices import usd
from clusterstack.errors import ClusterstackError
from clusterstack.flows.plan import one_load_per_file, plan as plan_flow
from clusterstack.flows.reservations import workspace_reservations
from clusterstack.inventory import fleet

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


def _today(value: str | None) -> datetime.date:
    if value is None:
        return datetime.datetime.now(datetime.timezone.utc).date()
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise ClusterstackError(f"--today {value!r} is not an ISO date",
                                "write it as YYYY-MM-DD, e.g. --today 2027-01-15") from None


@app.command("inventory")
def inventory_cmd(clusters: list[str] = typer.Argument(None, help="Clusters (default: every cluster)."),
                  as_json: bool = typer.Option(False, "--json", help="Print JSON."),
                  markdown: bool = typer.Option(False, "--markdown", help="Print Markdown tables (for a PR or a wiki)."),
                  today: str = typer.Option(None, "--today", metavar="YYYY-MM-DD",
                                            help="The day reservation terms are counted from (default: today, UTC).")) -> None:
    """Capacity per cluster and pool (nodes min–max, racks, GPUs per node, GPUs, monthly cost),
    the GPU quota and monthly cost per ClusterQueue and team, and each pool's reservation (id,
    end date, committed nodes; a warning within [cost] reservation_warn_days of the end).
    Prices: [cost.hourly] in clusterstack.toml over CoreWeave's list prices. Offline, no
    credentials."""
    from rich.table import Table

    ws = workspace()
    day = _today(today)
    with one_load_per_file():  # the plans and the reservations read each cluster file once
        with status(as_json or markdown)("planning (the real programs under Pulumi's mock runtime)…"):
            plans = plan_flow(ws, clusters or [], all_=not clusters)
        reservations = workspace_reservations(ws, [p.stack for p in plans], day)
    inv = fleet(plans, ws.prices, reservations)
    for line in inv.warnings():
        err.print(f"warning: {line}", markup=False)
    if as_json:
        emit_json(inv.to_json())
        return
    if markdown:
        out.file.write(inv.markdown())
        return
    rng = lambda lo, hi: "unpriced" if lo is None or hi is None else usd(lo) if lo == hi else f"{usd(lo)}–{usd(hi)}"  # noqa: E731
    pools = Table(title="pools", title_justify="left", show_edge=False)
    for col in ("stack", "pool", "instance type", "nodes (min–max)", "racks", "GPUs/node", "GPUs", "monthly"):
        pools.add_column(col, justify="right" if col in ("racks", "GPUs/node", "GPUs", "monthly") else "left")
    for p in inv.pools:
        pools.add_row(p.stack, p.pool, p.instance_type, f"{p.min_nodes}–{p.max_nodes}",
                      "" if p.racks is None else str(p.racks), str(p.gpus_per_node), str(p.gpus),
                      rng(p.monthly_min, p.monthly_max))
    out.print(pools)
    queues = Table(title="queues", title_justify="left", show_edge=False)
    for col in ("stack", "queue", "team", "GPU quota", "monthly"):
        queues.add_column(col, justify="right" if col in ("GPU quota", "monthly") else "left")
    for q in inv.queues:
        queues.add_row(q.stack, q.queue, q.team or "", str(q.gpus), rng(q.monthly_min, q.monthly_max))
    out.print()
    out.print(queues)
    if inv.reservations:
        res = Table(title="reservations", title_justify="left", show_edge=False)
        for col in ("stack", "pool", "reservation", "ends", "committed nodes", "days left"):
            res.add_column(col, justify="right" if col in ("committed nodes", "days left") else "left")
        for r in inv.reservations:
            res.add_row(r.stack, r.pool, r.id, r.ends, str(r.committed_nodes), str(r.days_left))
        out.print()
        out.print(res)
    lo, hi = inv.monthly
    unpriced = [f"{p.stack}/{p.pool} ({p.instance_type})" for p in inv.pools if p.hourly is None]
    out.print(f"{sum(p.gpus for p in inv.pools)} GPUs in {len(inv.pools)} pool(s); "
              f"{rng(lo, hi)} a month ({ws.prices.hours_per_month} h)", markup=False)
    if unpriced:
        out.print(f"unpriced (no list price; set [cost.hourly] in clusterstack.toml): {', '.join(unpriced)}",
                  markup=False)
