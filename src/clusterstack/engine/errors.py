"""Typed failures of the engine adapter, one class per thing an operator does differently.

Every class is a :class:`~clusterstack.errors.ClusterstackError`, so the CLI renders it as
``error: stack <name>: <problem> — <what to do>``. The mapping from the Pulumi CLI's own
failures follows the Automation API (``pulumi.automation.errors.create_command_error``):
``ConcurrentUpdateError`` → :class:`StackLockedError`, ``StackNotFoundError`` →
:class:`StackNotFoundError`, ``StackAlreadyExistsError`` → :class:`StackExistsError`; program
failures are recognised from the engine's error diagnostics (see
:func:`clusterstack.engine.automation.map_command_error`).
"""

from __future__ import annotations

import signal

from clusterstack.errors import ClusterstackError
from clusterstack.pulumi.urn import name_of

PULUMI_INSTALL_URL = "https://www.pulumi.com/docs/install/"
PULUMI_INSTALL_CMD = "curl -fsSL https://get.pulumi.com | sh"


def _field(stack: str | None) -> str:
    return f"stack {stack}" if stack else ""


class EngineError(ClusterstackError):
    """Base of every engine failure. ``stack`` is the stack the operation ran on (or None);
    ``output`` keeps the CLI's stdout/stderr text for ``--debug`` and reports."""

    def __init__(self, message: str, hint: str = "", *, stack: str | None = None,
                 output: str = "") -> None:
        self.stack = stack
        self.output = output
        super().__init__(message, hint, field=_field(stack))


class PulumiMissingError(EngineError):
    """No ``pulumi`` executable on PATH (or it would not run ``pulumi version``)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            "the Pulumi CLI is not installed or not on PATH" + (f" ({detail})" if detail else ""),
            f"install it ({PULUMI_INSTALL_URL}): `{PULUMI_INSTALL_CMD}`, then open a new shell "
            "so ~/.pulumi/bin is on PATH")


class PulumiVersionError(EngineError):
    """The installed CLI is older (or of another major version) than the Automation API needs."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"unsupported Pulumi CLI version: {detail}",
                         f"install a current CLI: `{PULUMI_INSTALL_CMD}` ({PULUMI_INSTALL_URL})")


class PassphraseMissingError(EngineError):
    """The workspace uses the passphrase secrets provider and no passphrase is set."""

    def __init__(self, stack: str | None = None) -> None:
        super().__init__(
            "secrets provider is `passphrase` but PULUMI_CONFIG_PASSPHRASE (or "
            "PULUMI_CONFIG_PASSPHRASE_FILE) is not set",
            "export PULUMI_CONFIG_PASSPHRASE with the stack's passphrase (an empty value is "
            "allowed only if the stack was created with one); production workspaces use "
            "`secrets_provider = \"gcpkms://…\"` in clusterstack.toml", stack=stack)


class PreconditionsMissing(EngineError):
    """Several things a stack operation needs are missing (the Pulumi CLI AND the passphrase):
    every one named in one error, so one run tells the operator everything to provide."""

    def __init__(self, errors: list[EngineError]) -> None:
        super().__init__(errors[0].problems[0].message, errors[0].problems[0].hint)
        self.problems = [p for e in errors for p in e.problems]
        self.args = (self.render(),)


class StackLockedError(EngineError):
    """Another update holds the stack's lock (Pulumi Cloud: HTTP 409; file/bucket backend:
    a lock file under ``.pulumi/locks``)."""

    def __init__(self, stack: str | None, output: str = "") -> None:
        super().__init__(
            "another update is currently in progress (the stack is locked)",
            "wait for it to finish; if no update is running (a crashed run left the lock), "
            "check with the team, then `pulumi cancel --stack "
            f"{stack or '<stack>'}` from infra/ removes the lock", stack=stack, output=output)


class StackNotFoundError(EngineError):
    """The stack does not exist in the configured backend."""

    def __init__(self, stack: str | None, output: str = "") -> None:
        super().__init__("no such stack in the state backend",
                         f"create it with `clusterstack stack init {stack or 'CLUSTER'}`, or check "
                         "backend_url in clusterstack.toml", stack=stack, output=output)


class StackExistsError(EngineError):
    """``stack init`` of a stack that already exists."""

    def __init__(self, stack: str | None, output: str = "") -> None:
        super().__init__("stack already exists in the state backend", "nothing to create",
                         stack=stack, output=output)


class ProgramFailedError(EngineError):
    """The Pulumi program (``infra/__main__.py`` → :mod:`clusterstack.programs`) failed.

    ``program_error`` is the program's own error text (its error diagnostics, or the traceback
    from the CLI output); the message shows its first line, or for a Python traceback the
    exception line at its end.
    """

    def __init__(self, stack: str | None, program_error: str, output: str = "") -> None:
        self.program_error = program_error.strip()
        lines = [line.strip() for line in self.program_error.splitlines() if line.strip()]
        # a Python traceback ends with the exception; anything else leads with its message
        head = (lines[-1] if "Traceback (most recent call last):" in self.program_error else lines[0]) \
            if lines else "unknown error"
        head = head.removeprefix("error: ")
        super().__init__(f"the Pulumi program failed: {head}",
                         "fix the reported problem (`clusterstack validate` and `clusterstack plan` "
                         "reproduce program errors offline)", stack=stack, output=output)


class ResourceFailedError(EngineError):
    """One or more resource operations failed (a provider or cloud API error). Exit code 1:
    the state may be partially updated; read the messages and preview again."""

    exit_code = 1

    def __init__(self, stack: str | None, messages: list[str], output: str = "") -> None:
        self.messages = messages
        super().__init__("resource operation(s) failed: " + " | ".join(messages),
                         "the update stopped; fix the cause, then `clusterstack preview` again "
                         "(completed steps are recorded in the state)", stack=stack, output=output)


class EngineCommandError(EngineError):
    """The Pulumi CLI failed for a reason clusterstack does not classify. Exit code 1."""

    exit_code = 1

    def __init__(self, stack: str | None, detail: str, output: str = "") -> None:
        super().__init__(f"pulumi failed: {detail}",
                         "run again with --debug for the full CLI output", stack=stack, output=output)


class EngineOutputError(EngineError):
    """The Pulumi CLI answered a command whose stdout clusterstack parses (``pulumi stack
    export``, ``pulumi import --preview-only --json``) with something that is not an accepted
    JSON document: not JSON, cut off, an integer over 19 digits, ``NaN``, nested past the
    parser's recursion limit. The message names the command. Exit code 2: the ``pulumi`` on
    PATH is not the Pulumi CLI (a wrapper printing its own text) or its output was cut;
    nothing was changed by clusterstack."""

    def __init__(self, stack: str | None, command: str, problem: str, output: str = "") -> None:
        self.command = command
        super().__init__(f"`{command}` printed {problem}",
                         "check that `pulumi` on PATH is the Pulumi CLI (`pulumi version`) and "
                         "run the command by hand to see its output; --debug shows what was read",
                         stack=stack, output=output)


class UpdateCancelledError(EngineError):
    """The update was cancelled because a step was refused mid-update (the ``on_step``
    callback said stop), or because its event stream held an event the one reader refuses
    (``reason`` says which: an event the guard cannot read never passes as harmless). Exit
    code 3, like every guard block.

    ``step`` is the refused step; ``applied`` the steps whose outputs the engine reported
    before the cancel took effect; ``finished`` is True when the CLI completed the update
    before the interrupt arrived (the refused step may then have been applied).
    """

    exit_code = 3

    def __init__(self, stack: str | None, step, applied: tuple = (), finished: bool = False,
                 output: str = "", reason: str = "") -> None:
        self.step = step
        self.applied = applied
        self.finished = finished
        self.reason = reason
        tail = ("the update had already finished when the cancel arrived: inspect the stack "
                "(`clusterstack preview`, `pulumi stack history`) before anything else"
                if finished else
                "no further step was started; steps already in flight were allowed to finish "
                "(Pulumi's graceful cancel); `clusterstack preview` shows what is left")
        what = (f"update cancelled: {reason}" if reason
                else f"update cancelled at a guarded step: {step.op} of {step.urn}")
        super().__init__(what, tail, stack=stack, output=output)


class ProtectRefusedError(EngineError):
    """The preview (or the update's own planning) failed because Pulumi refused to delete or
    replace a protected resource — ``DeleteStep.Apply`` "cannot be deleted because it is
    protected", ``step_generator.go`` "unable to replace resource … marked for protection" —
    followed by the root stack's "preview failed". That is the guard's verdict, not a program
    failure: exit code 3. ``result`` is the :class:`~clusterstack.engine.model.PreviewResult`
    built from the steps streamed before the failure and its ``refusals``; callers that show a
    verdict (``preview``, ``up``, ``ci preview``, ``import apply``) check it with
    :func:`clusterstack.guard.check_result`."""

    exit_code = 3

    def __init__(self, stack: str | None, result, output: str = "") -> None:
        self.result = result
        what = "; ".join(f"{r.op} of {r.urn}" for r in result.refusals)
        super().__init__(f"Pulumi refused a protected change: {what}",
                         "see the BLOCKED lines; nothing was applied — reconcile the config with "
                         "the live resource (docs/making-a-change.md \"When the guard blocks\")",
                         stack=stack, output=output)


class EngineInterruptedError(EngineError):
    """clusterstack got SIGINT/SIGTERM while the Pulumi CLI ran; the signal was forwarded once
    (Pulumi's graceful cancel) and the CLI has exited. ``signum``: the signal (exit code
    128 + it: 130, 143); ``result``: the CLI's :class:`CommandResult` — what the engine reported
    (its ``error:`` lines, its exit code); ``applied``: the steps it reported done (``up``;
    None for a run that applies nothing)."""

    def __init__(self, signum: int, what: str, result, *, stack: str | None = None,
                 applied: tuple | None = None) -> None:
        self.signum = signum
        self.what = what
        self.result = result
        self.applied = applied
        self.exit_code = 128 + int(signum)
        said = [line.strip().removeprefix("error: ") for line in (result.stderr or "").splitlines()
                if line.strip().startswith("error:")]
        engine = (f"the engine reports: {'; '.join(said[-2:])}" if said else
                  "the engine finished before the cancel took effect" if result.code == 0 else
                  f"the engine exited with code {result.code}")
        done = [s for s in applied or () if getattr(s, "op", "same") != "same"]
        steps = ("" if applied is None else "; no change was applied before it stopped" if not done else
                 f"; {len(done)} change(s) applied before it stopped: "
                 + ", ".join(f"{s.op} {name_of(s.urn)}" for s in done[:10])
                 + (" …" if len(done) > 10 else ""))
        super().__init__(f"interrupted by {signal.Signals(signum).name}: `{what}` was cancelled and has "
                         f"exited ({engine}){steps}",
                         "see what is left with `clusterstack preview`; the engine released the "
                         "stack's lock", stack=stack, output=f"{result.stdout}\n{result.stderr}".strip())
