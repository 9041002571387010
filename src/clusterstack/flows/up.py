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
from typing import Any, Callable, ContextManager, Iterator

from clusterstack.adapters.git import GitState
from clusterstack.clients import Clients
from clusterstack.engine.model import PreviewResult, UpResult
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.workspace import Workspace, check_stacks
from clusterstack.engine.errors import ProtectRefusedError, UpdateCancelledError
from clusterstack.flows.plan import check_before_planning
from clusterstack.guard import GuardBlocked, Verdict, Violation, check, check_result
from clusterstack.validation import load_cluster
from clusterstack.validation.addresses import adoption_problems
from clusterstack.views.preview import render_changes
from clusterstack.views.verdict import verdict_lines

Prompt = Callable[[str], "str | None"]
Report = Callable[[str], None]
Progress = Callable[[str], ContextManager[Any]]


def _quiet(_line: str) -> None:
    pass


def _no_progress(_text: str) -> ContextManager[Any]:
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
    verdict: Any  # clusterstack.guard.Verdict


def preview(ws: Workspace, names: list[str], *, clients: Clients, all_: bool = False,
            refresh: bool = False, progress: Progress = _no_progress) -> Iterator[StackPreview]:
    """``clusterstack preview``: yields, stack by stack in order, the engine preview and the
    guard's verdict under the workspace's ``[guard]`` policy (so a caller shows each stack as
    it is done). Nothing is raised for a violation (the caller shows every stack, then
    blocks); every stack is validated (:func:`select_stacks`) before the first preview. Raises
    the selection's errors, a bad ``[guard]`` (ConfigError) and the engine's typed errors."""

    selected = select_stacks(ws, names, all_)
    policy = ws.guard
    engine = clients.engine(ws)
    for i, name in enumerate(selected, 1):
        with progress(f"previewing {name} ({i}/{len(selected)})…"):
            result, verdict = guarded_preview(engine, name, policy, refresh=refresh)
        check_adoptions(ws, name, result)
        yield StackPreview(result, verdict)


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


def guarded_preview(engine: Any, name: str, policy: Any, *, refresh: bool = False,
                    targets: Any = ()) -> tuple[PreviewResult, Any]:
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
    return result, check_result(result, policy)


def guarded_up(engine: Any, name: str, *, policy: Any, git: GitState, release_branch: str, yes: bool,
               message: str, prompt: Prompt, report: Report = _quiet, warn: Report = _quiet,
               progress: Progress = _no_progress, confirm: str | None = None,
               check_preview: Callable[[PreviewResult], None] | None = None) -> UpResult | None:
    """The safety flow (module docstring, rules 1–6) over ``engine`` (a
    :class:`clusterstack.engine.Engine`) and stack ``name``: preview → guard → summary →
    release-branch check → typed confirmation → update with every step checked again.

    ``message``: the update message (the git provenance is appended); ``confirm``: the phrase
    the operator types (default: the stack name); ``check_preview``: a rule over the preview
    that raises (a ClusterstackError, exit 2) to refuse the update before anything is shown
    or applied (``up``: :func:`check_adoptions`). Returns the :class:`UpResult`, or None when
    the preview shows nothing to update. Raises GuardBlocked (exit 3), ClusterstackError when
    not confirmed (exit 2), and the engine's typed errors (UpdateCancelledError exit 3, …).
    """
    phrase_name = confirm or name
    with progress(f"previewing {name}…"):
        result, verdict = guarded_preview(engine, name, policy)
    if check_preview is not None:
        check_preview(result)
    for line in render_changes(result) + verdict_lines(verdict, result.steps):
        report(line)
    if not verdict.ok:
        raise GuardBlocked(verdict)
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

    update_message = f"{message} [clusterstack: {git.describe()}]"

    def on_step(step) -> bool:
        if step.op != "same":
            report(f"  {step.op:<18} {step.urn}")
        v = check([step], policy)
        if not v.ok:
            for viol in v.violations:
                warn(viol.render())
            return False
        return True

    try:
        res = engine.up(name, message=update_message, on_step=on_step)
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
    recheck_applied(res, verdict, policy, warn=warn)
    changes = ", ".join(f"{n} {op}" for op, n in sorted(res.counts.items()) if op != "same") or "no changes"
    version = f" (version {res.version})" if res.version is not None else ""
    report(f"{name}: update {res.result}{version}: {changes}")
    return res


def recheck_applied(res: UpResult, reviewed: Any, policy: Any, *, warn: Report = _quiet) -> None:
    """Rule 6: judge every step of a finished update (``res.steps``, the engine's stream) again,
    against the verdict of the preview the operator confirmed (``reviewed``). Raises
    GuardBlocked (exit 3) on a violation — an engine or stream that let a guarded step through
    — or on a destructive change (replace, delete) the preview's verdict did not list: the
    update did what was not shown. The steps already ran: the hint says to look at the stack."""
    after = check(res.steps, policy)
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
       progress: Progress = _no_progress) -> UpResult | None:
    """``clusterstack up STACK``: :func:`guarded_up` on the cluster project's engine with the
    workspace's ``[guard]`` policy, its release branch and the git state of its checkout.
    ``message`` defaults to ``clusterstack up <stack>``. Raises as :func:`select_stacks` and
    :func:`guarded_up`."""

    [name] = select_stacks(ws, [stack], False)
    policy = ws.guard
    return guarded_up(clients.engine(ws), name, policy=policy, git=clients.git(ws.root).state(),
                      release_branch=ws.release_branch, yes=yes,
                      message=message or f"clusterstack up {name}", prompt=prompt, report=report,
                      warn=warn, progress=progress,
                      check_preview=lambda result: check_adoptions(ws, name, result))
