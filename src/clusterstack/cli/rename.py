"""``clusterstack stack rename OLD NEW [--files-only]``: rename a cluster — its stack in the
state backend, its stack file and its cluster file — the flow :func:`clusterstack.flows.rename.
rename_stack` (docs/making-a-change.md, "Renaming a cluster")."""

from __future__ import annotations

import typer

from clusterstack.cli import clients, say, workspace
# engine.py's commands, `stack rename` added to its `stack` group: the module the root group
# loads for `stack` (clusterstack.cli.SUBCOMMANDS)
from clusterstack.cli.engine import app, stack_app  # noqa: F401  (app: re-exported)
from clusterstack.flows.rename import rename_stack


@stack_app.command("rename")
def stack_rename(old: str = typer.Argument(..., help="The cluster's (and its stack's) name now."),
                 new: str = typer.Argument(..., help="Its new name."),
                 files_only: bool = typer.Option(False, "--files-only",
                                                 help="Rename only the reviewed files (for a pull "
                                                      "request); run again without it after the "
                                                      "merge to rename the stack in the backend.")
                 ) -> None:
    """Rename a cluster: its stack in the state backend (`pulumi stack rename`: every URN
    rewritten, no resource touched), then infra/Pulumi.OLD.yaml and clusters/OLD.yaml (only
    their names change). Refused, with nothing changed, when NEW is taken or another reviewed
    file names OLD. Safe to run again: each step is done once. Review the result with
    `clusterstack diff`, which shows the stack as renamed and any resource named after the
    cluster as replaced."""
    result = rename_stack(workspace(), old, new, clients=clients(), files_only=files_only,
                          report=say)
    if result.state != "skipped":
        say(f"next: `clusterstack diff {new}` (the review), then `clusterstack preview {new}`")
