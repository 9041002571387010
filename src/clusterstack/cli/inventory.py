"""``clusterstack inventory``: the fleet's capacity per cluster and pool — nodes, racks, GPUs —
and the GPU quota per queue, from the offline plans (:mod:`clusterstack.inventory`)."""

from __future__ import annotations


import typer

from clusterstack.cli import app, emit_json, out, status, workspace


@app.command("inventory")
def inventory_cmd(clusters: list[str] = typer.Argument(None, help="Clusters (default: every cluster)."),
                  as_json: bool = typer.Option(False, "--json", help="Print JSON."),
                  markdown: bool = typer.Option(False, "--markdown", help="Print Markdown tables (for a PR or a wiki).")) -> None:
    """Capacity per cluster and pool (nodes min–max, racks, GPUs per node, GPUs) and the GPU
    quota per ClusterQueue, from what the plans declare. Offline, no credentials."""
    from rich.table import Table

    from clusterstack.flows.plan import plan as plan_flow
    from clusterstack.inventory import fleet

    ws = workspace()
    with status(as_json or markdown)("planning (the real programs under Pulumi's mock runtime)…"):
        plans = plan_flow(ws, clusters or [], all_=not clusters)
    inv = fleet(plans)
    if as_json:
        emit_json(inv.to_json())
        return
    if markdown:
        out.file.write(inv.markdown())
        return
    pools = Table(title="pools", title_justify="left", show_edge=False)
    for col in ("stack", "pool", "instance type", "nodes (min–max)", "racks", "GPUs/node", "GPUs"):
        pools.add_column(col, justify="right" if col in ("racks", "GPUs/node", "GPUs") else "left")
    for p in inv.pools:
        pools.add_row(p.stack, p.pool, p.instance_type, f"{p.min_nodes}–{p.max_nodes}",
                      "" if p.racks is None else str(p.racks), str(p.gpus_per_node), str(p.gpus))
    out.print(pools)
    queues = Table(title="queues", title_justify="left", show_edge=False)
    for col in ("stack", "queue", "GPU quota"):
        queues.add_column(col, justify="right" if col == "GPU quota" else "left")
    for q in inv.queues:
        queues.add_row(q.stack, q.queue, str(q.gpus))
    out.print()
    out.print(queues)
    out.print(f"{sum(p.gpus for p in inv.pools)} GPUs in {len(inv.pools)} pool(s)", markup=False)
