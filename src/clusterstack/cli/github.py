"""``clusterstack github audit``: declared Actions secret/variable names vs. the repository.

    clusterstack github audit [--repo OWNER/NAME] [--file PATH | --stack STACK] [--json]
                              [--api-url URL]

The declared names come from the GitHub project's ``github.yaml`` (the file its stack config
names; ``--file`` overrides). The repository is ``repository:`` of that file unless ``--repo``
is given. Authenticates with ``GITHUB_TOKEN`` (or ``GH_TOKEN``); the API root is ``--api-url``,
else ``GITHUB_API_URL`` (set by GitHub Actions), else https://api.github.com — the run's
``Clients.github`` (:class:`clusterstack.adapters.github.GitHub`).

Output: one row per missing or undeclared name (scope, kind, name) — never a value. Exit codes:
0 every name matches; 4 names differ (:data:`clusterstack.github.audit.NAMES_DIFFER_EXIT_CODE`);
2 bad input (file, --repo, no token, token rejected, repository not found); 1 GitHub or the
network failed.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from clusterstack.cli import clients, err, out, workspace
from clusterstack.github.audit import NamesDiffer, audit_repository

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()

github_app = typer.Typer(no_args_is_help=True, add_completion=False,
                         help="The GitHub repository policy (the github/ Pulumi project).")
app.add_typer(github_app, name="github")



@github_app.command("audit")
def audit_cmd(repo: str = typer.Option(None, "--repo", metavar="OWNER/NAME",
                                       help="Repository to audit (default: `repository:` of the file)."),
              file: Path = typer.Option(None, "--file", help="The github.yaml to read "
                                        "(default: the one the GitHub project's stack names)."),
              stack: str = typer.Option(None, "--stack", help="Stack of the GitHub project "
                                        "whose file to read (default: its only stack)."),
              as_json: bool = typer.Option(False, "--json", help="Print the canonical JSON report."),
              api_url: str = typer.Option(None, "--api-url", metavar="URL",
                                          help="GitHub REST API root (GitHub Enterprise: "
                                               "https://HOST/api/v3).")) -> None:
    """Compare the declared Actions secret and variable names with the repository's (names only)."""
    report = audit_repository(workspace, clients=clients(), repo=repo, file=file, stack=stack, api_url=api_url)

    if as_json:
        out.file.write(report.to_json())
    else:
        _render(report)
    if not report.clean:
        raise NamesDiffer(report)


def _render(report) -> None:
    """One row per difference: scope, kind, name, status (missing / undeclared)."""
    rows = [(f"environment:{e}", "environment", e, "missing") for e in report.missing_environments]
    rows += [(f"environment:{e}", "environment", e, "undeclared")
             for e in report.undeclared_environments]
    for s in report.scopes:
        rows += [(s.scope, s.kind, n, "missing") for n in s.missing]
        rows += [(s.scope, s.kind, n, "undeclared") for n in s.undeclared]
    declared = sum(len(s.declared) for s in report.scopes)
    if not rows:
        out.print(f"ok: {report.repository} has every declared name ({declared}) and no other")
        return
    table = Table(title=f"{report.repository}: {report.differences} difference(s)",
                  title_justify="left", show_edge=False)
    for col in ("scope", "kind", "name", "status"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row, style="red" if row[3] == "missing" else "yellow")
    out.print(table)
    err.print("missing: declared in github.yaml, absent on GitHub; undeclared: on GitHub, "
              "not in github.yaml")
