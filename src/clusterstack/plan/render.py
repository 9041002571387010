"""Human rendering of a plan: a rich Tree (components → resources) and counts by type.

Nothing is cropped: labels fold on a terminal, and off one the CLI's console has no width
limit (:data:`clusterstack.cli.UNLIMITED_WIDTH`)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.urn import name_of


def _options(r: PlannedResource) -> str:
    opts = []
    if r.protect:
        opts.append("protect")
    if r.retain_on_delete:
        opts.append("retain_on_delete")
    if r.ignore_changes:
        opts.append("ignore_changes=" + ",".join(r.ignore_changes))
    if r.delete_before_replace:
        opts.append("delete_before_replace")
    if r.import_id:
        opts.append(f"import={r.import_id}")
    return f"  [{' '.join(opts)}]" if opts else ""


def _replacing(r: PlannedResource) -> list[str]:
    """What replaces the resource, one line each: the paths whose change does
    (``replace_on_changes``) and the resources whose replacement does (``replace_with``)."""
    lines = []
    if r.replace_on_changes:
        lines.append("replaces on: " + ", ".join(r.replace_on_changes))
    if r.replace_with:
        lines.append("replaced with: " + ", ".join(name_of(u) for u in r.replace_with))
    return lines


def _label(r: PlannedResource) -> Text:
    # fold, never crop: on a terminal a long name wraps inside the tree; off a terminal the
    # console has no width limit (clusterstack.cli)
    t = Text(no_wrap=False, overflow="fold")
    t.append(r.type, style="cyan" if r.custom else "bold magenta")
    t.append(f"  {r.name}")
    opts = _options(r)
    if opts:
        t.append(opts, style="yellow")
    for line in _replacing(r):   # below the resource: a long path list is never cropped away
        t.append("\n    " + line, style="yellow")
    return t


def render_tree(plan: StackPlan) -> Group:
    """The stack as a tree of components and resources, then a table of counts by type."""
    children = plan.children()
    root_res = next((r for r in plan.resources if r.type == STACK_TYPE), None)
    tree = Tree(Text(f"{plan.project}/{plan.stack}", style="bold"))

    def add(node: Tree, parent_urn: str | None) -> None:
        kids = sorted(children.get(parent_urn, []), key=lambda r: (r.custom, r.type, r.name))
        for r in kids:
            if r.type == STACK_TYPE:
                continue
            add(node.add(_label(r)), r.urn)

    add(tree, root_res.urn if root_res else None)
    table = Table(title=f"{plan.stack}: {sum(plan.counts_by_type().values())} resources",
                  show_edge=False, title_justify="left")
    table.add_column("type")
    table.add_column("count", justify="right")
    for typ, n in plan.counts_by_type().items():
        table.add_row(typ, str(n))
    return Group(tree, table)
