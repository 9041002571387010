"""``clusterstack ci …``: what the GitHub workflows run (docs/ci.md).

    ci stacks   --changed-since REF | --all [--json]      affected stacks → matrix JSON
    ci preview  STACK… | --all [--parallel N] --out DIR [--refresh]
    ci comment  DIR [--max-bytes 60000] [--matrix JSON] [--post --repo O/R --pr N]
    ci rollouts --changed-since REF [--json]              affected services → matrix JSON
    ci drift    --out DIR [--issue --repo O/R]
    ci deployment-check --pr N --repo O/R [--dry-run]

The flows are :mod:`clusterstack.ci.flows`, over the run's :class:`~clusterstack.clients.Clients`
(the engines, GitHub); this module shows progress and renders. Nothing here calls ``up``.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import typer

from clusterstack.ci import flows
from clusterstack.ci.comment import ICONS, counts_text
from clusterstack.ci.discover import (Affected, StackChanges, affected_services, affected_stacks,
                                      all_stacks, compact_json, services_matrix)
from clusterstack.ci.flows import deployment_check as check, select_targets
from clusterstack.ci.preview import exit_code
from clusterstack.cli import clients, emit_json, err, out, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.flows.reservations import workspace_reservations

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()

ci_app = typer.Typer(no_args_is_help=True, help="CI: affected stacks, multi-stack preview, the PR "
                                                 "comment, rollouts, drift, deployment checks.")
app.add_typer(ci_app, name="ci")


@contextmanager
def _progress(n: int, parallel: int, refresh: bool) -> Iterator[Callable[[Any], None]]:
    """A progress bar over ``n`` stack previews; yields the ``on_done`` of the flow (one line
    per finished stack, then the bar advances)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    verb = "refresh-previewing" if refresh else "previewing"
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as progress:
        task = progress.add_task(f"{verb} {n} stack(s), {min(parallel, max(n, 1))} at a time", total=n)

        def done(o) -> None:
            progress.console.print(f"{ICONS[o.severity]} {o.target.id}: {o.severity}", markup=False)
            progress.advance(task)

        yield done


def _summary(outcomes) -> None:
    for o in outcomes:
        if o.error is not None:
            text = o.error.message.splitlines()[0] if o.error.message else o.error.kind
            out.print(f"{ICONS['error']} {o.target.id}: {text}", markup=False)
        else:
            out.print(f"{ICONS[o.severity]} {o.target.id}: {counts_text(o.result.counts)} "
                      f"({o.severity})", markup=False)


@ci_app.command("stacks")
def stacks(changed_since: str = typer.Option(None, "--changed-since", metavar="REF",
                                             help="Stacks affected by the change since REF (its merge base)."),
           all_: bool = typer.Option(False, "--all", help="Every stack."),
           as_json: bool = typer.Option(False, "--json", help="One line of GitHub Actions matrix JSON.")) -> None:
    """Which stacks a change affects (cluster configs, the package, infra/, the IAM file,
    [projects] directories), as a CI matrix."""
    ws = workspace()
    if (changed_since is None) == (not all_):
        raise ClusterstackError("give exactly one of --changed-since REF or --all",
                                "e.g. `clusterstack ci stacks --changed-since origin/main --json`")
    if all_:
        result = StackChanges(tuple((t, Affected(t.id, ("--all",))) for t in all_stacks(ws)))
    else:
        result = affected_stacks(ws, clients().git(ws.root).changed_files(changed_since,
                                                                           field="--changed-since"))
    if as_json:
        out.file.write(compact_json(result.matrix()) + "\n")
        return
    if not result.stacks:
        out.print("no stack affected", markup=False)
    for t, a in result.stacks:
        out.print(f"{t.id}", markup=False)
        for why in a.reasons:
            out.print(f"    {why}", markup=False)
    for g in result.gone:
        err.print(f"note: {g}", markup=False)


@ci_app.command("preview")
def preview(names: list[str] = typer.Argument(None, metavar="STACK",
                                              help="Stacks: clusters, or <project>/<stack>."),
            all_: bool = typer.Option(False, "--all", help="Every stack of every project."),
            parallel: int = typer.Option(4, "--parallel", "-j", min=1, help="Stacks previewed at once."),
            out_dir: Path = typer.Option(..., "--out", "-o", help="Directory for <stack>/meta.json and diff.txt."),
            refresh: bool = typer.Option(False, "--refresh", help="Refresh state from the cloud first.")) -> None:
    """Preview stacks in parallel; write meta.json and a redacted diff per stack. Exit 3 if any
    stack is blocked by the guard, 2 if any preview failed, 1 on an internal error."""
    ws = workspace()
    targets = select_targets(ws, names or [], all_)
    with _progress(len(targets), parallel, refresh) as done:
        outcomes = flows.preview(ws, targets, clients=clients(), out_dir=out_dir, parallel=parallel,
                                 refresh=refresh, on_done=done)
    _summary(outcomes)
    code = exit_code(outcomes)
    if code:
        raise typer.Exit(code)


@ci_app.command("comment")
def comment(directory: Path = typer.Argument(..., help="The --out DIR of `ci preview` (or the "
                                                       "downloaded artifacts of every matrix job)."),
            max_bytes: int = typer.Option(60_000, "--max-bytes", min=1000, help="Size limit (UTF-8 bytes)."),
            matrix: str = typer.Option(None, "--matrix", help="The `ci stacks --json` matrix: stacks "
                                       "in it without a result are shown as failed."),
            sha: str = typer.Option(None, "--sha", help="The commit previewed (shown in the comment)."),
            run_url: str = typer.Option(None, "--run-url", help="Link to the run (its artifacts hold full diffs)."),
            post: bool = typer.Option(False, "--post", help="Create or update the PR's one preview comment."),
            repo: str = typer.Option(None, "--repo", metavar="OWNER/NAME"),
            pr: int = typer.Option(None, "--pr", min=1, help="Pull request number."),
            output: Path = typer.Option(None, "--output", help="Also write the Markdown to this file."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON: the Markdown body, its size, "
                                         "what was cut or left out, and what --post did.")) -> None:
    """Render the one PR comment (status line per stack, collapsible diffs, fair truncation);
    with --post, upsert it on the PR (never a second comment)."""
    expected = flows.parse_matrix(matrix)
    if post and (not repo or not pr):
        raise ClusterstackError("--post needs --repo OWNER/NAME and --pr N", "pass both", field="--post")
    run = flows.comment(directory, clients=clients(), max_bytes=max_bytes, expected=expected, sha=sha,
                        run_url=run_url, output=output, repo=repo if post else None, pr=pr if post else None)
    c = run.comment
    if c.truncated:
        err.print(f"comment truncated to {max_bytes} bytes (cut: {', '.join(c.cut) or '-'}; "
                  f"left out: {', '.join(c.omitted) or '-'})", markup=False)
    if as_json:
        emit_json({"body": c.body, "bytes": len(c.body.encode("utf-8")), "max_bytes": max_bytes,
                   "truncated": c.truncated, "cut": list(c.cut), "omitted": list(c.omitted),
                   "posted": _upsert_json(run.upsert, repo, pr)})
        return
    if not post:
        if output is None:
            out.file.write(c.body)
        return
    res = run.upsert
    assert res is not None   # --post: the flow upserted the comment
    extra = f", deleted {len(res.deleted)} duplicate(s)" if res.deleted else ""
    out.print(f"{repo}#{pr}: preview comment {res.action} (id {res.comment_id}{extra})", markup=False)


def _upsert_json(res, repo: str | None, pr: int | None):
    """What an upsert did (:class:`clusterstack.ci.github.Upsert`) as JSON; None when nothing
    was posted."""
    if res is None:
        return None
    return {"repo": repo, "pr": pr, "action": res.action, "comment_id": res.comment_id,
            "deleted": list(res.deleted)}


@ci_app.command("rollouts")
def rollouts(changed_since: str = typer.Option(..., "--changed-since", metavar="REF",
                                               help="Services affected by the change since REF."),
             as_json: bool = typer.Option(False, "--json", help="One line of matrix JSON.")) -> None:
    """Which registered services (services.yaml) a change affects, as a CI matrix."""
    ws = workspace()
    git = clients().git(ws.root)
    files = git.changed_files(changed_since, field="--changed-since")
    changes = affected_services(ws, files, git.merge_base(changed_since, field="--changed-since"))
    if as_json:
        out.file.write(compact_json(services_matrix(changes)) + "\n")
        return
    if not changes:
        out.print("no service affected", markup=False)
    for c in changes:
        out.print(f"{c.service} (stack {c.stack}, {c.kind})", markup=False)
        for why in c.reasons:
            out.print(f"    {why}", markup=False)


@ci_app.command("drift")
def drift(out_dir: Path = typer.Option(..., "--out", "-o", help="Directory for the per-stack results and drift.json."),
          parallel: int = typer.Option(4, "--parallel", "-j", min=1),
          issue: bool = typer.Option(False, "--issue", help="Keep the one tracking issue in sync."),
          repo: str = typer.Option(None, "--repo", metavar="OWNER/NAME"),
          run_url: str = typer.Option(None, "--run-url", help="Link to the run, put in the issue.")) -> None:
    """Preview every stack with refresh; fingerprint the drift; with --issue create / update /
    close the tracking issue. A stack whose preview failed is "not checked" (not drift): the
    issue lists it with the reason and the run exits 2. Exit 1 only on an internal error."""
    if issue and not repo:
        raise ClusterstackError("--issue needs --repo OWNER/NAME", "pass --repo", field="--issue")
    ws = workspace()
    with _progress(len(all_stacks(ws)), parallel, True) as done:
        run = flows.drift(ws, clients=clients(), out_dir=out_dir, parallel=parallel,
                          repo=repo if issue else None, run_url=run_url, on_done=done)
    _summary(run.outcomes)

    # reservations ending within [cost] reservation_warn_days (inventory says the same)
    for term in workspace_reservations(ws, ws.cluster_names(), clients().clock.now().date()):
        if term.warning:
            err.print(f"warning: {term.stack}/{term.pool}: {term.warning}", markup=False)
    not_checked = f"; {len(run.unchecked)} not checked" if run.unchecked else ""
    out.print(f"drift: {run.drifting} of {run.checked} checked stacks differ{not_checked}; "
              f"fingerprint {run.fingerprint[:12]}", markup=False)
    if run.sync is not None:
        where = f" #{run.sync.issue}" if run.sync.issue else ""
        out.print(f"{repo}: tracking issue{where} {run.sync.action}", markup=False)
    if run.internal_error:
        raise typer.Exit(1)
    if run.unchecked:
        for e in run.unchecked:
            err.print(f"error: stack {e['stack']}: not checked: {e['reason']}", markup=False)
        err.print(f"error: {len(run.unchecked)} of {len(run.reports)} stacks could not be checked for drift "
                  "— fix what each line names (credentials, network, a locked stack) and run again",
                  markup=False)
        raise typer.Exit(2)


@ci_app.command("deployment-check")
def deployment_check(pr: int = typer.Option(..., "--pr", min=1, help="The merged pull request."),
                     repo: str = typer.Option(..., "--repo", metavar="OWNER/NAME"),
                     dry_run: bool = typer.Option(False, "--dry-run", help="Print the reminder, post nothing."),
                     as_json: bool = typer.Option(False, "--json", help="Print JSON: per changed stack "
                                                  "whether it was applied, the reminder, what was posted.")) -> None:
    """For each stack the PR's preview comment listed as changed, confirm a successful update
    started after the merge; otherwise post (or update) a reminder to apply it from main."""
    res = check(workspace(), clients=clients(), repo=repo, pr=pr, post=not dry_run)
    if as_json:
        emit_json({"repo": repo, "pr": pr, "previewed": res.previewed,
                   "merged_at": res.merged_at.strftime("%Y-%m-%dT%H:%M:%SZ") if res.merged_at else None,
                   "stacks": [{"stack": d.stack, "applied": d.deployed, "problem": d.problem,
                               "update_version": d.update.version if d.update is not None else None}
                              for d in res.results],
                   "failed_on_pr": list(res.failed), "reminder": res.body,
                   "posted": _upsert_json(res.upsert, repo, pr)})
        return
    if not res.previewed:
        out.print(f"{repo}#{pr}: no preview comment — CI previewed no stack for it; nothing to check",
                  markup=False)
        return
    for d in res.results:
        mark = "applied" if d.deployed else f"NOT applied{' — ' + d.problem if d.problem else ''}"
        out.print(f"{d.stack}: {mark}", markup=False)
    if res.body is None:
        out.print(f"{repo}#{pr}: every changed stack was applied after the merge", markup=False)
        return
    if dry_run:
        out.file.write(res.body)
        return
    assert res.upsert is not None   # posted (not a dry run)
    out.print(f"{repo}#{pr}: deployment reminder {res.upsert.action} (id {res.upsert.comment_id})", markup=False)
