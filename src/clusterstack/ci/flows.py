"""The flows of ``clusterstack ci`` (docs/ci.md) as library functions over the run's
:class:`~clusterstack.clients.Clients`; the CLI (:mod:`clusterstack.cli.ci`) parses, shows
progress and renders.

- :func:`preview` — preview stacks in parallel, writing each redacted outcome as it finishes;
- :func:`comment` — render the one PR comment from the outcome files; with ``post``, upsert it;
- :func:`drift` — preview every stack with refresh, fingerprint the drift, keep the tracking
  issue in sync;
- :func:`deployment_check` — after a merge, did every stack the preview comment listed get
  applied? Otherwise post (or update) the reminder.

Engines: the cluster project's is ``clients.engine(ws)`` (the same as ``preview``/``up``);
another project's runs its own directory. GitHub: ``clients.github().repository(OWNER/NAME)``.
Nothing here calls ``up``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

from clusterstack.ci.discover import StackTarget, all_stacks, parse_target
from clusterstack.clients import Clients
from clusterstack.errors import ClusterstackError
from clusterstack.workspace import Project, Workspace
from clusterstack.ci import deployment
from clusterstack.ci.comment import (MARKER, Comment, StackReport, MARKER as PREVIEW_MARKER, load_reports, parse_data,
    render_comment)
from clusterstack.ci.drift import DriftSync, drift_entries, fingerprint, sync_issue, unchecked_entries
from clusterstack.ci.github import Upsert, upsert_comment
from clusterstack.ci.preview import StackOutcome, preview_target, run_previews, write_outcome
from clusterstack.engine.model import Engine
from clusterstack.ci.redaction import Redactor
from clusterstack.config.document import json_loads
from clusterstack.fsutil import write_atomic, write_output
from clusterstack.validation import load_cluster
from clusterstack.flows.intent import intent_rules, refuse_stale
from clusterstack.flows.up import review_record, state_version


def engine_for(ws: Workspace, project: Project, clients: Clients) -> Engine:
    """The engine of one project: the cluster project's is ``clients.engine(ws)``; another
    project's runs in its own directory."""
    if project.clusters:
        return clients.engine(ws)
    return clients.engine(ws, project_dir=project.directory)


def select_targets(ws: Workspace, names: list[str], all_: bool) -> list[StackTarget]:
    """Every stack with ``all_``, else the named ones (``cw-demo-h100``, ``buckets/lab``) in
    order, each once. Raises ClusterstackError for neither or both, ConfigError for an
    unknown stack."""
    if all_ and names:
        raise ClusterstackError("give stacks or --all, not both", "drop one of them")
    if not all_ and not names:
        raise ClusterstackError("no stack given", "name stacks (cw-demo-h100, buckets/lab) or pass --all")
    return all_stacks(ws) if all_ else list(dict.fromkeys(parse_target(ws, n) for n in names))


def preview(ws: Workspace, targets: Sequence[StackTarget], *, clients: Clients, out_dir: Path,
            parallel: int = 4, refresh: bool = False,
            on_done: Callable[[StackOutcome], None] | None = None) -> list[StackOutcome]:
    """Preview ``targets`` on at most ``parallel`` threads; each outcome is written to
    ``out_dir/<slug>/`` (``meta.json``, ``diff.txt``, redacted by
    :meth:`Redactor.from_env <clusterstack.ci.redaction.Redactor.from_env>`) as it finishes,
    then passed to ``on_done``. A cluster's config is validated first (its errors read
    ``file:line``). One stack's failure is its error outcome, never the others' loss. Returns
    the :class:`~clusterstack.ci.preview.StackOutcome` list in the order of ``targets``.
    Raises ConfigError for a bad ``[guard]``."""
    policy = ws.guard
    redactor = Redactor.from_env()
    out_dir.mkdir(parents=True, exist_ok=True)

    def validate(t: StackTarget) -> None:
        if t.is_cluster:
            load_cluster(ws, t.stack)

    git = clients.git(ws.root).state()

    def one(t: StackTarget):
        from dataclasses import replace


        engine = engine_for(ws, ws.project(t.project), clients)
        try:   # read before the preview: a change in between makes the record stale
            version = state_version(engine, t.stack)
        except ClusterstackError as exc:
            version = None   # no record without a state: meta.json and the comment say why
            recordable = False
            why = "; ".join(p.message for p in exc.problems)
            unrecorded = (f"no review record: `stack history` could not be read ({why}), so no "
                          "state version binds one; `up --reviewed` has nothing to apply")
        else:
            recordable, unrecorded = True, None
        outcome = preview_target(t, engine=lambda _t: engine, policy=policy, refresh=refresh,
                                 validate=validate,
                                 intents=lambda t_: intent_rules(ws, t_.stack) if t_.is_cluster else (),
                                 check_verdict=lambda t_, v: refuse_stale(ws, t_.stack, v))
        if recordable and outcome.error is None and not refresh:
            outcome = replace(outcome, record=review_record(engine, t.project, t.stack, *outcome.previewed(),
                                                            git=git, version=version))
        elif not recordable and outcome.error is None and not refresh:
            outcome = replace(outcome, record_warning=unrecorded)
        return outcome

    def done(o) -> None:
        write_outcome(out_dir, o, redactor, prices=ws.prices)
        if on_done is not None:
            on_done(o)

    return run_previews(list(targets), one, parallel=parallel, on_done=done)


@dataclass(frozen=True)
class CommentRun:
    """The rendered comment (:class:`clusterstack.ci.comment.Comment`) and, when posted, what
    the upsert did (:class:`clusterstack.ci.github.Upsert`)."""

    comment: Comment
    upsert: Upsert | None = None


def parse_matrix(matrix: str | None) -> list[str]:
    """The stacks of a ``ci stacks --json`` matrix. Raises ClusterstackError (exit 2) for
    anything else."""
    if not matrix:
        return []

    try:
        return [e["stack"] for e in json_loads(matrix)["include"]]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise ClusterstackError("--matrix is not the JSON of `ci stacks --json`",
                                '{"include": [{"stack": "…"}, …]}', field="--matrix") from None


def comment(directory: Path, *, clients: Clients, max_bytes: int = 60_000, expected: Sequence[str] = (),
            sha: str | None = None, run_url: str | None = None, output: Path | None = None,
            repo: str | None = None, pr: int | None = None) -> CommentRun:
    """Render the one PR comment from ``directory`` (the outcome files of :func:`preview`, or
    every matrix job's artifacts); ``expected`` stacks without a result show as failed.
    ``output``: also written there (:func:`clusterstack.fsutil.write_output`). With ``repo`` and ``pr`` the comment is upserted
    on the PR (never a second one). Raises CommentError for unreadable outcome files,
    GitHubError from GitHub."""
    reports = load_reports(directory, expected)
    c = render_comment(reports, max_bytes=max_bytes, sha=sha, run_url=run_url, redactor=Redactor.from_env())
    if output is not None:   # a pipe, a device, /dev/stdout: written through, never replaced
        write_output(output, c.body)
    if repo is None or pr is None:
        return CommentRun(c)
    return CommentRun(c, upsert_comment(clients.github().repository(repo), pr, c.body, marker=MARKER))


@dataclass(frozen=True)
class DriftRun:
    """``outcomes`` of every stack's refresh preview; ``reports`` read back from the files;
    ``fingerprint`` of the drift; ``drifting`` checked stacks that differ; ``unchecked``:
    ``[{"stack", "reason"}]`` of the stacks whose preview failed (not drift, and the run fails);
    ``sync``: what the tracking issue did (:class:`clusterstack.ci.drift.DriftSync`, None
    without ``repo``)."""

    outcomes: list[StackOutcome]
    reports: list[StackReport]
    fingerprint: str
    drifting: int
    sync: DriftSync | None = None
    unchecked: tuple[dict, ...] = ()

    @property
    def checked(self) -> int:
        return len(self.reports) - len(self.unchecked)

    @property
    def internal_error(self) -> bool:
        """A preview crashed (a bug): the run exits 1."""
        return any(o.error is not None and o.error.internal for o in self.outcomes)


def drift(ws: Workspace, *, clients: Clients, out_dir: Path, parallel: int = 4, repo: str | None = None,
          run_url: str | None = None, on_done: Callable[[StackOutcome], None] | None = None) -> DriftRun:
    """Preview every stack with refresh (:func:`preview`), write ``out_dir/drift.json``
    (fingerprint, drifting and unchecked entries, sorted keys), and with ``repo`` create /
    update / close the tracking issue. With ``repo`` the GitHub connection (token, repository)
    is checked BEFORE any preview, so a missing token fails in a second, not after every
    preview. Raises GitHubError from GitHub."""
    gh = clients.github().repository(repo, check=True) if repo else None   # preconditions first
    targets = all_stacks(ws)
    outcomes = preview(ws, targets, clients=clients, out_dir=out_dir, parallel=parallel, refresh=True,
                       on_done=on_done)
    wanted = {t.id for t in targets}
    reports = [r for r in load_reports(out_dir) if r.stack in wanted]
    fp = fingerprint(reports)
    unchecked = unchecked_entries(reports)
    write_atomic(out_dir / "drift.json", json.dumps({"fingerprint": fp, "stacks": drift_entries(reports),
                                                     "not_checked": unchecked},
                                                    indent=2, sort_keys=True) + "\n")
    drifting = len(drift_entries(reports))
    sync = sync_issue(gh, reports, run_url=run_url) if gh is not None else None
    return DriftRun(outcomes, reports, fp, drifting, sync, tuple(unchecked))


@dataclass(frozen=True)
class DeploymentCheck:
    """``merged_at``: when the PR was merged; ``previewed``: the PR has a preview comment (no
    comment: CI previewed nothing, nothing to check); ``results``: per changed stack, whether
    an update started after the merge (:class:`clusterstack.ci.deployment.Deployment`);
    ``failed``: stacks whose preview failed; ``body``: the reminder (None: all applied and no
    reminder to update); ``upsert``: what posting it did (None: not posted)."""

    merged_at: datetime | None
    previewed: bool
    results: tuple[deployment.Deployment, ...] = ()
    failed: tuple[str, ...] = ()
    body: str | None = None
    upsert: Upsert | None = None

    @property
    def pending(self) -> list[deployment.Deployment]:
        return [d for d in self.results if not d.deployed]


def deployment_check(ws: Workspace, *, clients: Clients, repo: str, pr: int, post: bool = True) -> DeploymentCheck:
    """For each stack the PR's preview comment listed as changed, confirm a successful update
    started after the merge (the stack's engine history); when one is missing, a preview failed
    or a reminder is already there, render the reminder and with ``post`` upsert it. Raises
    ClusterstackError (exit 2) for a PR that is not merged, GitHubError from GitHub."""
    gh = clients.github().repository(repo)
    info = gh.pull(pr)
    if not info.merged or info.merged_at is None:
        raise ClusterstackError(f"pull request #{pr} is not merged", "run the check after the merge",
                                field="--pr")
    comments = gh.comments(pr)
    found = next((c for c in comments if c.body.lstrip().startswith(PREVIEW_MARKER)), None)
    data = parse_data(found.body) if found is not None else None
    if data is None:
        return DeploymentCheck(info.merged_at, previewed=False)
    changed = [s for s in data.get("changed", []) if isinstance(s, str)]
    failed = tuple(s for s in data.get("errors", []) if isinstance(s, str))
    commands: dict[str, str] = {}

    def history(stack: str):
        t = parse_target(ws, stack)
        p = ws.project(t.project)
        if not t.is_cluster:
            commands[stack] = deployment.apply_command(stack, p.directory.relative_to(ws.root).as_posix())
        return engine_for(ws, p, clients).history(t.stack)

    results = tuple(deployment.check(changed, history, info.merged_at))
    pending = [d for d in results if not d.deployed]
    has_reminder = any(c.body.lstrip().startswith(deployment.MARKER) for c in comments)
    if not pending and not failed and not has_reminder:
        return DeploymentCheck(info.merged_at, True, results, failed)
    body = deployment.reminder_body(pr, info.merged_at, list(results), failed_previews=failed, commands=commands)
    upsert = upsert_comment(gh, pr, body, marker=deployment.MARKER) if post else None
    return DeploymentCheck(info.merged_at, True, results, failed, body, upsert)
