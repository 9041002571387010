"""The engine flows of the cluster stacks: ``preview`` and the guarded ``up``.

Safety rules of ``up`` (docs/making-a-change.md), in order:

1. preview, then the guard over the preview: any violation blocks (exit 3, nothing applied);
   a preview that would create an adopt-only address (a pinned IP: it is imported, never
   created) is refused (exit 2, :func:`check_adoptions`);
2. the grouped diff and a summary line naming the git commit;
3. not a clean checkout of ``[workspace] release_branch``: the operator must type
   ``<stack>@<commit>`` — there is no flag or variable that skips this;
4. confirmation: type the stack name; ``yes`` skips it only when the guard is clean, i.e. no
   violation *and* no destructive change at all (an allowed replace/delete still asks);
5. the update, with every step the engine's event stream shows checked again by the same
   guard — planning or not, announced or only reported done; a guarded step cancels the update
   at once (exit 3);
6. after the update, every step of its stream is judged once more against the preview's
   verdict: a violation, or a destructive change the preview did not show (and the operator
   did not confirm), is exit 3 — ``up`` never exits 0 after a step it would have refused.

:func:`guarded_up` is these rules over any engine and stack (``deploy <service> rollout``
uses it over a service project); :func:`up` is ``clusterstack up`` (the cluster project, the
workspace's policy and git state). Callbacks, as :func:`clusterstack.imports.apply.run` has
them: ``prompt(text) -> answer | None`` (None: stdin closed, a refusal), ``report(line)``
(the diff and progress, stdout in the CLI), ``warn(line)`` (warnings, stderr) and
``progress(text)`` (a context manager around a slow engine call, e.g. a spinner).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Callable, ContextManager, Iterable, Iterator, Sequence

from clusterstack.adapters.git import GitState
from clusterstack.clients import Clients
from clusterstack.engine.model import Engine, PreviewResult, StepCallback, UpResult
from clusterstack.errors import ClusterstackError, ConfigError, Problem
from clusterstack.workspace import Workspace, check_stacks
from clusterstack.engine.errors import ProtectRefusedError, UpdateCancelledError
from clusterstack.flows.plan import check_before_planning, one_load_per_file
from clusterstack.guard import GuardBlocked, GuardPolicy, Verdict, Violation, check, check_result
from clusterstack.guard.intent import IntentRule
from clusterstack.validation import load_cluster
from clusterstack.validation.addresses import adoption_problems
from clusterstack.views.preview import render_changes
from clusterstack.views.verdict import verdict_json, verdict_lines
from clusterstack.guard.review import (ReviewRecord, ReviewRefused, binding_problems,
    build as build_record, load as load_record, step_problems)
from clusterstack.workspace.model import CLUSTER_PROJECT
from clusterstack.flows.intent import intent_rules, refuse_stale
from clusterstack.fsutil import write_atomic
from clusterstack.pulumi.tokens import NODEPOOL, family
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.urn import name_of

Prompt = Callable[[str], "str | None"]
Report = Callable[[str], None]
Progress = Callable[[str], ContextManager[object]]


def _quiet(_line: str) -> None:
    pass


def _no_progress(_text: str) -> ContextManager[object]:
    return contextlib.nullcontext()


def select_stacks(ws: Workspace, names: list[str], all_: bool) -> list[str]:
    """The requested cluster stacks, validated offline before any engine call: every stack
    with ``all_``, else ``names`` in order (each once); each must have a stack file and a
    cluster config that loads, and claim no cloud identity another cluster claims
    (:func:`clusterstack.flows.plan.check_before_planning`). Raises
    ClusterstackError for neither or both, ConfigError for an unknown cluster, a bad config or
    a shared identity (located ``file:line``)."""
    pointers = check_stacks(ws)
    known = [p.stack for p in pointers]
    if all_ and names:
        raise ClusterstackError("give cluster names or --all, not both", "drop one of them")
    selected = known if all_ else names
    if not selected:
        raise ClusterstackError("no cluster given", "name one or more clusters, or pass --all")
    for name in selected:
        if name not in known:
            raise ConfigError(f"unknown cluster {name!r}",
                              f"known: {', '.join(known) or 'none'}; add clusters/{name}.yaml and run "
                              f"`clusterstack stack init {name}`", field="cluster")
    selected = list(dict.fromkeys(selected))
    check_before_planning(ws, selected)  # config errors as file:line, before the program runs
    return selected


@dataclass(frozen=True)
class StackPreview:
    """One stack's engine preview and the guard's verdict on it."""

    result: PreviewResult
    verdict: Verdict
    #: the review record written for it (``preview --record DIR``), and where
    record: ReviewRecord | None = None
    record_file: Path | None = None


def review_record(engine: Engine, project: str, name: str, result: PreviewResult, verdict: Verdict, *,
                  git: GitState, version: int | None) -> ReviewRecord:
    """The review record (:mod:`clusterstack.guard.review`) of one preview: its steps and
    verdict document, the commit and tree of ``git`` and the stack's state ``version`` read
    *before* the preview (a change in between makes the record stale, never wrongly fresh)."""
    return build_record(project=project, stack=name, commit=git.commit, dirty=git.dirty, tree=git.tree,
                        state_version=version, steps=result.steps,
                        verdict=verdict_json(verdict, result.steps, source=name, input_format="engine",
                                             change_summary=dict(result.counts)))


def preview(ws: Workspace, names: list[str], *, clients: Clients, all_: bool = False,
            refresh: bool = False, progress: Progress = _no_progress,
            record_dir: Path | None = None) -> Iterator[StackPreview]:
    """``clusterstack preview``: yields, stack by stack in order, the engine preview and the
    guard's verdict under the workspace's ``[guard]`` policy (so a caller shows each stack as
    it is done). Nothing is raised for a violation (the caller shows every stack, then
    blocks); every stack is validated (:func:`select_stacks`) before the first preview. Raises
    the selection's errors, a bad ``[guard]`` (ConfigError) and the engine's typed errors.
    ``record_dir``: write each stack's review record there, ``<stack>.review.json``
    (:func:`review_record`), for ``up --reviewed``."""

    selected = select_stacks(ws, names, all_)
    policy = ws.guard
    engine = clients.engine(ws)
    git = clients.git(ws.root).state() if record_dir is not None else None
    for i, name in enumerate(selected, 1):
        version = state_version(engine, name) if git is not None else None
        with one_load_per_file():  # the stack's intents and checks: its cluster file loaded once
            with progress(f"previewing {name} ({i}/{len(selected)})…"):
                result, verdict = guarded_preview(engine, name, policy, refresh=refresh,
                                                  intents=intent_rules(ws, name))
            check_adoptions(ws, name, result)
            refuse_stale(ws, name, verdict)
        if git is None or record_dir is None:
            yield StackPreview(result, verdict)
            continue
        record = review_record(engine, CLUSTER_PROJECT, name, result, verdict, git=git, version=version)
        Path(record_dir).mkdir(parents=True, exist_ok=True)
        path = Path(record_dir) / f"{name}.review.json"
        write_atomic(path, record.text())
        yield StackPreview(result, verdict, record, path)


def check_adoptions(ws: Workspace, name: str, result: PreviewResult) -> None:
    """Refuse a preview of cluster stack ``name`` that would create an adopt-only address: a
    pinned IP is imported, never created (:func:`clusterstack.validation.addresses.adoption_problems`:
    GCP reserves a given external IP only for a project that holds it already). Raises
    ConfigError (exit 2) located at each such ``address:`` line, with the ``import`` commands
    to run; nothing has been applied — the preview changes nothing."""
    loaded = load_cluster(ws, name, references=False)
    problems = adoption_problems(loaded, result.steps, project=ws.project_name)
    if problems:
        raise ConfigError(problems=problems)


def guarded_preview(engine: Engine, name: str, policy: GuardPolicy, *, refresh: bool = False,
                    targets: Sequence[str] = (),
                    intents: Iterable[IntentRule] = ()) -> tuple[PreviewResult, Verdict]:
    """``engine.preview`` and the guard's verdict on it. A preview Pulumi failed because it
    refused to delete or replace a protected resource (``ProtectRefusedError``: "cannot be
    deleted because it is protected", "unable to replace resource … protected") is not an
    error here but the blocked verdict it is, built from the steps streamed before the failure
    and the refusals (:func:`clusterstack.guard.check_result`). Every other engine error is
    raised."""
    try:
        result = (engine.preview(name, refresh=refresh, targets=list(targets)) if targets
                  else engine.preview(name, refresh=refresh))
    except ProtectRefusedError as exc:
        result = exc.result
    return result, check_result(result, policy, intents=intents)


def state_version(engine: Engine, name: str) -> int | None:
    """The stack's last update version (``pulumi stack history``, newest first): what a review
    record binds (:mod:`clusterstack.guard.review`); None for a stack never updated."""
    history = engine.history(name, limit=1)
    return history[0].version if history else None


def _refuse_review(problems: list[str], *, applied: bool = False) -> ReviewRefused:
    hint = ("the steps already ran: run `clusterstack preview` now and reconcile the config with "
            "reality" if applied else "nothing was applied; preview again (`clusterstack preview "
            "--record DIR` or `ci preview`), have the new record reviewed, then `up --reviewed` it")
    return ReviewRefused(problems=[Problem(message=p, hint=hint, field="--reviewed") for p in problems])


def guarded_up(engine: Engine, name: str, *, policy: GuardPolicy, git: GitState, release_branch: str, yes: bool,
               message: str, prompt: Prompt, report: Report = _quiet, warn: Report = _quiet,
               progress: Progress = _no_progress, confirm: str | None = None,
               check_preview: Callable[[PreviewResult], None] | None = None,
               reviewed: ReviewRecord | None = None, intents: Sequence[IntentRule] = (),
               check_verdict: Callable[[Verdict], None] | None = None) -> UpResult | None:
    """The safety flow (module docstring, rules 1–6) over ``engine`` (a
    :class:`clusterstack.engine.Engine`) and stack ``name``: preview → guard → summary →
    release-branch check → typed confirmation → update with every step checked again.

    ``message``: the update message (the git provenance is appended); ``confirm``: the phrase
    the operator types (default: the stack name); ``check_preview``: a rule over the preview
    that raises (a ClusterstackError, exit 2) to refuse the update before anything is shown
    or applied (``up``: :func:`check_adoptions`). Returns the :class:`UpResult`, or None when
    the preview shows nothing to update. ``reviewed``: the review record the update must match
    (:mod:`clusterstack.guard.review`): same stack, commit — or git tree — (clean tree) and state version, and a
    preview — and an update stream — with no step or changed path the record lacks; without
    one, a warning says that nothing binds the update to a review. ``intents``: the stack's
    reviewed intents (:mod:`clusterstack.guard.intent`): the changes they let through are
    performed — a migration's new pool created first (a targeted update), each pool to delete
    unprotected in the state, then the update; a pool unprotected is protected again when the
    update does not finish; the update message names the intents (Pulumi's history records
    them). ``check_verdict``: refuses a verdict before anything is shown (a stale intent).
    Raises GuardBlocked (exit
    3), ReviewRefused (exit 3), ClusterstackError when not confirmed (exit 2), and the engine's
    typed errors (UpdateCancelledError exit 3, …).
    """
    phrase_name = confirm or name
    if reviewed is not None:   # the record binds this commit and this state, or nothing runs
        problems = binding_problems(reviewed, stack=name, commit=git.commit, dirty=git.dirty,
                                    state_version=state_version(engine, name), tree=git.tree)
        if problems:
            raise _refuse_review(problems)
    with progress(f"previewing {name}…"):
        result, verdict = guarded_preview(engine, name, policy, intents=intents)
    if check_preview is not None:
        check_preview(result)
    for line in render_changes(result) + verdict_lines(verdict, result.steps):
        report(line)
    if not verdict.ok:
        raise GuardBlocked(verdict)
    if check_verdict is not None:   # after the verdict: a blocked change is told first
        check_verdict(verdict)
    if reviewed is not None:
        problems = step_problems(reviewed, result.steps)
        if problems:
            for line in problems:
                warn(f"UNREVIEWED {line}")
            raise _refuse_review(problems)
        report(f"{name}: the preview is the reviewed one (record {reviewed.digest})")
    else:
        report(f"note: nothing binds this update of {name} to a review: without `--reviewed "
               "RECORD` it applies whatever this preview shows (docs/applying-what-was-reviewed.md)")
    if not result.has_changes:
        report(f"{name}: nothing to update")
        return None
    report(f"update {name} from {git.describe()}")

    if not git.is_release(release_branch):
        why = []
        if git.commit is None:
            why.append("no git commit to record")
        elif git.branch != release_branch:
            why.append(f"branch {git.branch or '(detached HEAD)'} is not the release branch {release_branch}")
        if git.dirty:
            why.append("the working tree has uncommitted changes")
        phrase = f"{phrase_name}@{git.short}"
        warn(f"WARNING: not a clean checkout of {release_branch}: {'; '.join(why)}.")
        warn("An update from here puts unreviewed code on the stack. --yes does not skip this.")
        if prompt(f"type '{phrase}' to update from this tree anyway: ") != phrase:
            raise ClusterstackError("update from an unreleased tree not confirmed; nothing was applied",
                                    f"merge to {release_branch} and update from a clean checkout, or "
                                    f"type '{phrase}' exactly", field=f"stack {name}")

    clean = verdict.ok and not verdict.destructive
    what = "stack name" if confirm is None else "name"
    if not (yes and clean):
        if yes:
            warn(f"--yes ignored: the update replaces or deletes {len(verdict.destructive)} "
                 f"resource(s); type the {what} to confirm.")
        if prompt(f"type the {what} ({phrase_name}) to update it: ") != phrase_name:
            raise ClusterstackError("update not confirmed; nothing was applied",
                                    f"type the {what} `{phrase_name}` exactly to confirm", field=f"stack {name}")

    intended = {v.urn for v in verdict.intended}
    done_intents = [r for r in intents if r not in verdict.stale_intents]
    update_message = f"{message} [clusterstack: {git.describe()}]"
    if verdict.intended:
        update_message += " [intent: " + "; ".join(f"{r.words()} ({r.source})" for r in done_intents) + "]"

    def on_step(step: Step) -> bool:
        if step.op != "same":
            report(f"  {step.op:<18} {step.urn}")
        v = check([step], policy)
        refused = [x for x in v.violations if x.urn not in intended]
        if refused:
            for viol in refused:
                warn(viol.render())
            return False
        if reviewed is not None and (problems := step_problems(reviewed, [step])):
            for line in problems:
                warn(f"UNREVIEWED {line}")
            return False
        return True

    unprotected: list[str] = []
    try:
        try:
            if verdict.intended:
                res = _perform_intents(engine, name, verdict, result, update_message, on_step,
                                       unprotected, report)
            else:
                res = engine.up(name, message=update_message, on_step=on_step)
        except BaseException:
            for urn in unprotected:   # the update did not finish: the pool keeps its protection
                with contextlib.suppress(Exception):
                    engine.set_protect(name, urn, True)
                    warn(f"{name}: {urn} protected again (the update did not finish)")
            raise
    except ProtectRefusedError as exc:  # the state changed since the preview; Pulumi bailed
        verdict = check_result(exc.result, policy)
        for line in verdict_lines(verdict, exc.result.steps):
            warn(line)
        raise GuardBlocked(verdict, hint="Pulumi refused the protected change before any step; "
                                         "nothing was applied — `clusterstack preview` again") from None
    except UpdateCancelledError:
        warn(f"{name}: update cancelled by the guard at a step the preview did not show "
             "(the state changed between preview and update)")
        raise
    if verdict.intended:
        report(f"{name}: performed " + "; ".join(f"{r.words()} ({r.source})" for r in done_intents)
               + " — recorded in the update message; remove the stanza in the next change")
    recheck_applied(res, verdict, policy, warn=warn, allowed=intended)
    if reviewed is not None and (problems := step_problems(reviewed, res.steps)):
        raise _refuse_review(problems, applied=True)
    changes = ", ".join(f"{n} {op}" for op, n in sorted(res.counts.items()) if op != "same") or "no changes"
    version = f" (version {res.version})" if res.version is not None else ""
    report(f"{name}: update {res.result}{version}: {changes}")
    return res


def _perform_intents(engine: Engine, name: str, verdict: Verdict, result: PreviewResult, message: str,
                     on_step: StepCallback, unprotected: list[str], report: Report) -> UpResult:
    """Perform the changes reviewed intents let through (:mod:`clusterstack.guard.intent`):
    first a targeted update creating each NodePool the preview creates (a migration's new pool:
    create before delete), then each intended delete's resource unprotected in the state
    (``unprotected`` collects them, so the caller re-protects on failure), then the update.
    Returns the last update's result (its steps: every step of that update)."""
    creates = sorted(s.urn for s in result.steps
                     if s.op == "create" and family(s.type) == family(NODEPOOL))
    if creates and any(v.op == "delete" for v in verdict.intended):
        report(f"{name}: creating {', '.join(name_of(c) for c in creates)} first "
               "(create before delete)")
        engine.up(name, message=message + " [create before delete]", on_step=on_step,
                  targets=creates)
    for v in verdict.intended:
        if v.op == "delete":
            report(f"{name}: unprotecting {name_of(v.urn)} for its reviewed delete")
            engine.set_protect(name, v.urn, False)
            unprotected.append(v.urn)
    return engine.up(name, message=message, on_step=on_step)


def recheck_applied(res: UpResult, reviewed: Verdict, policy: GuardPolicy, *, warn: Report = _quiet,
                    allowed: AbstractSet[str] = frozenset()) -> None:
    """Rule 6: judge every step of a finished update (``res.steps``, the engine's stream) again,
    against the verdict of the preview the operator confirmed (``reviewed``). Raises
    GuardBlocked (exit 3) on a violation — an engine or stream that let a guarded step through
    — or on a destructive change (replace, delete) the preview's verdict did not list: the
    update did what was not shown. The steps already ran: the hint says to look at the stack."""
    after = check(res.steps, policy)
    if allowed:   # changes a reviewed intent let through (the preview's verdict.intended)
        from dataclasses import replace as dc_replace

        after = dc_replace(after, violations=tuple(v for v in after.violations if v.urn not in allowed))
    unreviewed = sorted(set(after.destructive) - set(reviewed.destructive), key=lambda d: d[1])
    if after.ok and not unreviewed:
        return
    for viol in after.violations:
        warn(viol.render())
    for op, urn in unreviewed:
        warn(f"UNREVIEWED {op} of {urn}: the update performed a destructive change its preview "
             "did not show")
    if after.ok:  # destructive changes nobody confirmed: block as violations of the review

        by_urn = {s.urn: s for s in res.steps}
        after = Verdict(violations=tuple(Violation(
            urn=urn, type=by_urn[urn].type if urn in by_urn else "", op=op, reasons=(),
            rule="the update performed this destructive change; its reviewed preview did not show it",
            hint="run `clusterstack preview` now and reconcile the config with reality")
            for op, urn in unreviewed), destructive=after.destructive)
    raise GuardBlocked(after, hint="the update applied a step the guard refuses or the preview did "
                                   "not show; run `clusterstack preview` now and reconcile the "
                                   "config with reality")


def up(ws: Workspace, stack: str, *, clients: Clients, yes: bool = False, message: str | None = None,
       prompt: Prompt, report: Report = _quiet, warn: Report = _quiet,
       progress: Progress = _no_progress, reviewed: Path | None = None) -> UpResult | None:
    """``clusterstack up STACK``: :func:`guarded_up` on the cluster project's engine with the
    workspace's ``[guard]`` policy, its release branch and the git state of its checkout.
    ``message`` defaults to ``clusterstack up <stack>``; ``reviewed``: a review record file
    (:func:`clusterstack.guard.review.load`) the update must match. Raises as
    :func:`select_stacks` and :func:`guarded_up`."""

    with one_load_per_file():  # the checks, the intents and the adoption check: one load per file
        [name] = select_stacks(ws, [stack], False)
        record = load_record(reviewed) if reviewed is not None else None
        policy = ws.guard
        return guarded_up(clients.engine(ws), name, policy=policy, git=clients.git(ws.root).state(),
                          release_branch=ws.release_branch, yes=yes,
                          message=message or f"clusterstack up {name}", prompt=prompt, report=report,
                          warn=warn, progress=progress,
                          check_preview=lambda result: check_adoptions(ws, name, result),
                          reviewed=record, intents=intent_rules(ws, name),
                          check_verdict=lambda verdict: refuse_stale(ws, name, verdict))
