"""``clusterstack ci …``: what the GitHub workflows run (docs/ci.md).

    ci stacks   --changed-since REF | --all [--json]      affected stacks → matrix JSON
    ci preview  STACK… | --all [--parallel N] --out DIR [--refresh]
    ci comment  DIR [--max-bytes 60000] [--matrix JSON] [--post --repo O/R --pr N]
    ci rollouts --changed-since REF [--json]              affected services → matrix JSON
    ci drift    --out DIR [--issue --repo O/R]
    ci deployment-check --pr N --repo O/R [--dry-run]

Engines come from :func:`engine_for` (tests replace it, or ``clusterstack.cli.engine.engine_factory``
for the cluster project); GitHub from :func:`github_factory`. Nothing here calls ``up``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import typer

from clusterstack.cli import app, err, out, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.workspace import Project, Workspace

ci_app = typer.Typer(no_args_is_help=True, help="CI: affected stacks, multi-stack preview, the PR "
                                                 "comment, rollouts, drift, deployment checks.")
app.add_typer(ci_app, name="ci")


def default_engine_for(ws: Workspace, project: Project):
    """The engine of one project: the cluster project's is ``clusterstack.cli.engine.engine_factory``
    (so ``preview``/``up`` and CI share one seam); another project's runs its own directory."""
    from clusterstack.cli import engine as cli_engine

    if project.clusters:
        return cli_engine.engine_factory(ws)
    from clusterstack.engine import open_engine

    return open_engine(ws, project_dir=project.directory)


engine_for: Callable[[Workspace, Project], Any] = default_engine_for
"""``(workspace, project) → Engine``; tests monkeypatch it."""


def default_github_factory(full_name: str):
    """The repository through PyGithub, token and API URL from the environment."""
    from clusterstack.ci.github import open_repo

    return open_repo(full_name)


github_factory: Callable[[str], Any] = default_github_factory
"""``"OWNER/NAME" → GitHubRepo``; tests monkeypatch it."""


def _targets(ws: Workspace, names: list[str], all_: bool):
    from clusterstack.ci.discover import all_stacks, parse_target

    if all_ and names:
        raise ClusterstackError("give stacks or --all, not both", "drop one of them")
    if not all_ and not names:
        raise ClusterstackError("no stack given", "name stacks (cw-demo-h100, buckets/lab) or pass --all")
    return all_stacks(ws) if all_ else list(dict.fromkeys(parse_target(ws, n) for n in names))


def _run(ws: Workspace, targets, *, parallel: int, out_dir: Path, refresh: bool):
    """Preview ``targets`` with a progress bar, writing each result as it finishes."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from clusterstack.ci.comment import ICONS
    from clusterstack.ci.preview import preview_target, run_previews, write_outcome
    from clusterstack.ci.redaction import Redactor
    from clusterstack.validation import load_cluster
    from clusterstack.guard import GuardPolicy

    policy = GuardPolicy.from_toml(ws.guard, file=ws.file)
    redactor = Redactor.from_env()
    out_dir.mkdir(parents=True, exist_ok=True)

    def validate(t) -> None:
        if t.is_cluster:
            load_cluster(ws, t.stack)

    def one(t):
        return preview_target(t, engine=lambda t_: engine_for(ws, ws.project(t_.project)),
                              policy=policy, refresh=refresh, validate=validate)

    verb = "refresh-previewing" if refresh else "previewing"
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as progress:
        task = progress.add_task(f"{verb} {len(targets)} stack(s), {min(parallel, max(len(targets), 1))} at a time",
                                 total=len(targets))

        def done(o) -> None:
            write_outcome(out_dir, o, redactor)
            progress.console.print(f"{ICONS[o.severity]} {o.target.id}: {o.severity}", markup=False)
            progress.advance(task)

        outcomes = run_previews(targets, one, parallel=parallel, on_done=done)
    return outcomes


def _summary(outcomes) -> None:
    from clusterstack.ci.comment import ICONS, counts_text

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
    from clusterstack.ci.discover import (Affected, StackChanges, affected_stacks, all_stacks,
                                          changed_files, compact_json)

    ws = workspace()
    if (changed_since is None) == (not all_):
        raise ClusterstackError("give exactly one of --changed-since REF or --all",
                                "e.g. `clusterstack ci stacks --changed-since origin/main --json`")
    if all_:
        result = StackChanges(tuple((t, Affected(t.id, ("--all",))) for t in all_stacks(ws)))
    else:
        result = affected_stacks(ws, changed_files(ws.root, changed_since))
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
def preview(names: list[str] = typer.Argument(None, metavar="STACK…",
                                              help="Stacks: clusters, or <project>/<stack>."),
            all_: bool = typer.Option(False, "--all", help="Every stack of every project."),
            parallel: int = typer.Option(4, "--parallel", "-j", min=1, help="Stacks previewed at once."),
            out_dir: Path = typer.Option(..., "--out", "-o", help="Directory for <stack>/meta.json and diff.txt."),
            refresh: bool = typer.Option(False, "--refresh", help="Refresh state from the cloud first.")) -> None:
    """Preview stacks in parallel; write meta.json and a redacted diff per stack. Exit 3 if any
    stack is blocked by the guard, 2 if any preview failed, 1 on an internal error."""
    from clusterstack.ci.preview import exit_code

    ws = workspace()
    targets = _targets(ws, names or [], all_)
    outcomes = _run(ws, targets, parallel=parallel, out_dir=out_dir, refresh=refresh)
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
            output: Path = typer.Option(None, "--output", help="Also write the Markdown to this file.")) -> None:
    """Render the one PR comment (status line per stack, collapsible diffs, fair truncation);
    with --post, upsert it on the PR (never a second comment)."""
    from clusterstack.ci.comment import MARKER, load_reports, render_comment
    from clusterstack.ci.github import upsert_comment
    from clusterstack.ci.redaction import Redactor
    from clusterstack.fsutil import write_atomic

    expected: list[str] = []
    if matrix:
        try:
            expected = [e["stack"] for e in json.loads(matrix)["include"]]
        except (ValueError, KeyError, TypeError):
            raise ClusterstackError("--matrix is not the JSON of `ci stacks --json`",
                                    '{"include": [{"stack": "…"}, …]}', field="--matrix") from None
    if post and (not repo or not pr):
        raise ClusterstackError("--post needs --repo OWNER/NAME and --pr N", "pass both", field="--post")
    reports = load_reports(directory, expected)
    c = render_comment(reports, max_bytes=max_bytes, sha=sha, run_url=run_url, redactor=Redactor.from_env())
    if output is not None:
        write_atomic(output, c.body)
    if c.truncated:
        err.print(f"comment truncated to {max_bytes} bytes (cut: {', '.join(c.cut) or '-'}; "
                  f"left out: {', '.join(c.omitted) or '-'})", markup=False)
    if not post:
        if output is None:
            out.file.write(c.body)
        return
    res = upsert_comment(github_factory(repo), pr, c.body, marker=MARKER)
    extra = f", deleted {len(res.deleted)} duplicate(s)" if res.deleted else ""
    out.print(f"{repo}#{pr}: preview comment {res.action} (id {res.comment_id}{extra})", markup=False)


@ci_app.command("rollouts")
def rollouts(changed_since: str = typer.Option(..., "--changed-since", metavar="REF",
                                               help="Services affected by the change since REF."),
             as_json: bool = typer.Option(False, "--json", help="One line of matrix JSON.")) -> None:
    """Which registered services (services.yaml) a change affects, as a CI matrix."""
    from clusterstack.ci.discover import (affected_services, changed_files, compact_json, merge_base,
                                          services_matrix)

    ws = workspace()
    files = changed_files(ws.root, changed_since)
    changes = affected_services(ws, files, merge_base(ws.root, changed_since))
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
    close the tracking issue. Exit 1 only on an internal error."""
    from clusterstack.ci.comment import load_reports
    from clusterstack.ci.discover import all_stacks
    from clusterstack.ci.drift import drift_entries, fingerprint, sync_issue
    from clusterstack.fsutil import write_atomic

    if issue and not repo:
        raise ClusterstackError("--issue needs --repo OWNER/NAME", "pass --repo", field="--issue")
    ws = workspace()
    targets = all_stacks(ws)
    outcomes = _run(ws, targets, parallel=parallel, out_dir=out_dir, refresh=True)
    _summary(outcomes)
    wanted = {t.id for t in targets}
    reports = [r for r in load_reports(out_dir) if r.stack in wanted]
    fp = fingerprint(reports)
    write_atomic(out_dir / "drift.json", json.dumps({"fingerprint": fp, "stacks": drift_entries(reports)},
                                                    indent=2, sort_keys=True) + "\n")
    drifting = sum(1 for r in reports if r.severity != "none")
    out.print(f"drift: {drifting} of {len(reports)} stacks differ; fingerprint {fp[:12]}", markup=False)
    if issue:
        res = sync_issue(github_factory(repo), reports, run_url=run_url)
        where = f" #{res.issue}" if res.issue else ""
        out.print(f"{repo}: tracking issue{where} {res.action}", markup=False)
    if any(o.error is not None and o.error.internal for o in outcomes):
        raise typer.Exit(1)


@ci_app.command("deployment-check")
def deployment_check(pr: int = typer.Option(..., "--pr", min=1, help="The merged pull request."),
                     repo: str = typer.Option(..., "--repo", metavar="OWNER/NAME"),
                     dry_run: bool = typer.Option(False, "--dry-run", help="Print the reminder, post nothing.")) -> None:
    """For each stack the PR's preview comment listed as changed, confirm a successful update
    started after the merge; otherwise post (or update) a reminder to apply it from main."""
    from clusterstack.ci import deployment
    from clusterstack.ci.comment import MARKER as PREVIEW_MARKER, parse_data
    from clusterstack.ci.discover import parse_target
    from clusterstack.ci.github import upsert_comment

    ws = workspace()
    gh = github_factory(repo)
    info = gh.pull(pr)
    if not info.merged or info.merged_at is None:
        raise ClusterstackError(f"pull request #{pr} is not merged", "run the check after the merge",
                                field="--pr")
    comments = gh.comments(pr)
    preview = next((c for c in comments if c.body.lstrip().startswith(PREVIEW_MARKER)), None)
    data = parse_data(preview.body) if preview is not None else None
    if data is None:
        out.print(f"{repo}#{pr}: no preview comment — CI previewed no stack for it; nothing to check",
                  markup=False)
        return
    changed = [s for s in data.get("changed", []) if isinstance(s, str)]
    failed = [s for s in data.get("errors", []) if isinstance(s, str)]
    commands: dict[str, str] = {}

    def history(stack: str):
        t = parse_target(ws, stack)
        p = ws.project(t.project)
        if not t.is_cluster:
            commands[stack] = deployment.apply_command(stack, p.directory.relative_to(ws.root).as_posix())
        return engine_for(ws, p).history(t.stack)

    results = deployment.check(changed, history, info.merged_at)
    for d in results:
        mark = "applied" if d.deployed else f"NOT applied{' — ' + d.problem if d.problem else ''}"
        out.print(f"{d.stack}: {mark}", markup=False)
    pending = [d for d in results if not d.deployed]
    has_reminder = any(c.body.lstrip().startswith(deployment.MARKER) for c in comments)
    if not pending and not failed and not has_reminder:
        out.print(f"{repo}#{pr}: every changed stack was applied after the merge", markup=False)
        return
    body = deployment.reminder_body(pr, info.merged_at, results, failed_previews=failed, commands=commands)
    if dry_run:
        out.file.write(body)
        return
    res = upsert_comment(gh, pr, body, marker=deployment.MARKER)
    out.print(f"{repo}#{pr}: deployment reminder {res.action} (id {res.comment_id})", markup=False)
