"""The engine adapter: the only code in clusterstack that runs the Pulumi CLI.

It drives Pulumi's Automation API (``pulumi.automation``) over the project in
``<root>/<project_dir>`` (``infra/``) with the backend and secrets provider of
``clusterstack.toml``:

- backend: passed as ``PULUMI_BACKEND_URL`` to every CLI call, so ``Pulumi.yaml`` is never
  rewritten (Automation API ``ProjectSettings(backend=…)`` would save the project file). A
  relative ``file://`` URL is resolved against the repository root, and its directory created.
- secrets provider: given to ``pulumi stack init --secrets-provider``; with ``passphrase`` the
  passphrase comes from ``PULUMI_CONFIG_PASSPHRASE`` / ``PULUMI_CONFIG_PASSPHRASE_FILE`` and a
  missing one is reported before the CLI runs (:class:`PassphraseMissingError`).

Cancelling an update. What the Automation API offers was checked against its source
(``pulumi/automation/_stack.py``, SDK 3.272): an exception raised in ``on_event`` is swallowed
(the gRPC event servicer turns it into a warning; the file watcher thread just dies), and
``Stack.cancel()`` runs ``pulumi cancel``, which for Pulumi Cloud marks the update cancelled
on the service and for file/bucket backends only deletes the lock files — the running process
goes on either way. So the adapter runs the CLI through :class:`TrackedPulumiCommand`, a
``PulumiCommand`` that remembers its child process, and cancels by sending it SIGINT: Pulumi's
own Ctrl-C, a graceful cancel (no new step starts; steps already in flight finish; the lock is
released and the state saved). Steps are announced by ``resourcePreEvent`` *before* they run,
so the cancel lands before any later step — but a step already dispatched cannot be recalled,
which is why ``up`` refuses on the preview first and checks during the update second.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from pulumi.automation import LocalWorkspace, Stack
from pulumi.automation import errors as auto_errors
from pulumi.automation._cmd import CommandResult, PulumiCommand, _fixup_path

from clusterstack.engine.errors import (
    EngineCommandError,
    EngineOutputError,
    EngineError,
    PassphraseMissingError,
    PreconditionsMissing,
    ProgramFailedError,
    ProtectRefusedError,
    PulumiMissingError,
    PulumiVersionError,
    ResourceFailedError,
    StackExistsError,
    StackLockedError,
    StackNotFoundError,
    UpdateCancelledError,
)
from clusterstack.engine.events import EventCollector
from clusterstack.errors import ClusterstackError
from clusterstack.engine.model import (
    HistoryEntry,
    PreviewResult,
    StackSummary,
    StepCallback,
    UpResult,
    count_ops,
)
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.urn import name_of
from clusterstack.workspace import Workspace

PASSPHRASE_ENV = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


def resolve_backend_url(url: str, root: Path) -> str:
    """Absolute form of a backend URL: a relative ``file://`` path is taken relative to the
    repository ``root`` (so the state does not depend on the working directory); ``file://~``
    and every other scheme (``gs://``, ``s3://``, ``https://``) are returned unchanged.

    >>> resolve_backend_url("file://.pulumi-state", Path("/repo"))
    'file:///repo/.pulumi-state'
    """
    if not url.startswith("file://"):
        return url
    rest = url[len("file://"):]
    path, sep, query = rest.partition("?")
    if path.startswith("~") or Path(path).is_absolute():
        return url
    return "file://" + str((root / path).resolve()) + sep + query


def needs_passphrase(secrets_provider: str) -> bool:
    """True for Pulumi's passphrase secrets provider (``passphrase``, the default)."""
    return secrets_provider in ("", "passphrase") or secrets_provider.startswith("passphrase")


class TrackedPulumiCommand(PulumiCommand):
    """The Automation API's ``PulumiCommand`` with one addition: it keeps a handle on each
    running ``pulumi`` process so :meth:`interrupt` can send it SIGINT (Pulumi's graceful
    cancel). ``run`` follows the SDK's implementation (``pulumi/automation/_cmd.py``): forces
    ``--non-interactive``, sets ``PULUMI_AUTOMATION_API``, streams stdout/stderr to callbacks,
    raises ``create_command_error(result)`` on a non-zero exit — and attaches the
    :class:`CommandResult` to the raised error as ``.result`` so callers can read stdout/stderr.

    Construction runs ``pulumi version``; raises FileNotFoundError when there is no CLI.
    """

    def __init__(self, root: str | None = None) -> None:
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self.interrupted = False
        #: the raw lines of the last run's ``--event-log`` (see :meth:`_tee_event_log`), or None
        self.last_event_log: list[str] | None = None
        #: a line of that log held bytes that are not UTF-8 (read as U+FFFD; the log is refused)
        self.event_log_not_utf8 = False
        #: called with each raw event line as the CLI writes it (before the SDK parses it)
        self.on_raw_event: Any = None
        super().__init__(root=root)

    def _tee_event_log(self, args: list[str]):
        """Read the event log this run asked Pulumi to write, line by line, before the SDK does.

        The SDK parses every event with its own ``OpType`` enum and drops (with a warning) one it
        cannot parse — an op newer than the SDK, e.g. the CLI's ``extend-parameterize`` — so the
        adapter never relies on its callbacks alone: the CLI writes to a file of ours, a thread
        tails it, keeps each raw line (:attr:`last_event_log`), hands it to :attr:`on_raw_event`
        and forwards it to where the SDK listens (its log file for CLI <= 3.205, its gRPC
        ``tcp://`` event server above; ``pulumi/automation/_stack.py`` ``_setup_event_log``).
        Returns the rewritten args and a ``finish()`` that drains the log after the process
        ended. No ``--event-log``: args unchanged, ``finish`` None."""
        import tempfile
        import time

        sep = args.index("--") if "--" in args else len(args)
        if "--event-log" not in args[:sep]:
            return args, None
        i = args.index("--event-log")
        target = args[i + 1]
        tmp = tempfile.TemporaryDirectory(prefix="clusterstack-events-")
        ours = os.path.join(tmp.name, "events.jsonl")
        Path(ours).touch()
        args = [*args[:i + 1], ours, *args[i + 2:]]
        lines: list[str] = []
        self.last_event_log = lines
        self.event_log_not_utf8 = False
        done = threading.Event()
        raw = self.on_raw_event

        def produce():
            partial = ""
            bad = False  # the line being read held bytes that are not UTF-8 (U+FFFD now)
            with open(ours, encoding="utf-8", errors=_REPLACE_AND_FLAG) as fh:
                while True:
                    _UNDECODABLE.seen = False
                    chunk = fh.readline()
                    bad = bad or _UNDECODABLE.seen
                    if not chunk:
                        if done.is_set():
                            break
                        time.sleep(0.02)
                        continue
                    if not chunk.endswith("\n"):
                        partial += chunk
                        if done.is_set():
                            continue
                        time.sleep(0.02)
                        continue
                    line, partial = partial + chunk, ""
                    lines.append(line.rstrip("\n"))
                    if bad:
                        self.event_log_not_utf8 = True
                    if raw is not None:
                        try:
                            raw(line, not_utf8=bad)
                        except Exception:  # noqa: BLE001 — the handler records its own failures
                            pass
                    bad = False
                    yield line.rstrip("\n")
            if partial:  # a cut-off last line: kept, so the parser refuses the log
                lines.append(partial)

        def forward():
            if target.startswith("tcp://"):
                import grpc
                from pulumi.runtime.proto import events_pb2, events_pb2_grpc

                with grpc.insecure_channel(target[len("tcp://"):]) as channel:
                    events_pb2_grpc.EventsStub(channel).StreamEvents(
                        events_pb2.EventRequest(event=line) for line in produce())
            else:
                with open(target, "a", encoding="utf-8") as out:
                    for line in produce():
                        out.write(line + "\n")
                        out.flush()

        thread = threading.Thread(target=forward, daemon=True)
        thread.start()

        def finish() -> None:
            done.set()
            thread.join(30)
            tmp.cleanup()

        return args, finish

    def interrupt(self) -> None:
        """Send SIGINT to every running ``pulumi`` process of this command (idempotent)."""
        with self._lock:
            self.interrupted = True
            procs = list(self._procs)
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass

    def run(self, args: list[str], cwd: str, additional_env: Mapping[str, str],
            on_output=None, on_error=None) -> CommandResult:
        sep = args.index("--") if "--" in args else len(args)
        if "--non-interactive" not in args[:sep]:
            args.insert(0, "--non-interactive")
        args, finish_log = self._tee_event_log(args)
        env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
        if os.path.isabs(self.command):
            env = _fixup_path(env, os.path.dirname(self.command))
        out_chunks: list[str] = []
        err_chunks: list[str] = []

        not_utf8: list[str] = []

        def consume(stream, callback, chunks, name):
            _UNDECODABLE.seen = False
            for line in iter(stream.readline, ""):
                line = line.rstrip()
                if callback:
                    callback(line)
                chunks.append(line)
            stream.close()
            if _UNDECODABLE.seen:
                not_utf8.append(name)

        # bytes that are not UTF-8 become U+FFFD and are flagged (the SDK's strict decoding
        # kills its reader thread with a traceback and leaves the pipe undrained)
        with subprocess.Popen([self.command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=cwd, env=env, encoding="utf-8", errors=_REPLACE_AND_FLAG) as proc:
            with self._lock:
                self._procs.append(proc)
            try:
                threads = [threading.Thread(target=consume, args=(proc.stdout, on_output, out_chunks, "stdout")),
                           threading.Thread(target=consume, args=(proc.stderr, on_error, err_chunks, "stderr"))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                proc.wait()
            finally:
                with self._lock:
                    self._procs.remove(proc)
                if finish_log is not None:
                    finish_log()
        result = CommandResult(stdout="\n".join(out_chunks), stderr="\n".join(err_chunks),
                               code=proc.returncode)
        result.not_utf8 = tuple(sorted(not_utf8))  # type: ignore[attr-defined]
        if result.code != 0:
            error = auto_errors.create_command_error(result)
            error.result = result  # type: ignore[attr-defined]
            raise error
        return result


#: The decoding error handler of the CLI's pipes: U+FFFD for bytes that are not UTF-8, and
#: the reading thread flagged (:data:`_UNDECODABLE`), so a parsed document can be refused.
_REPLACE_AND_FLAG = "clusterstack-replace-and-flag"
_UNDECODABLE = threading.local()


def _replace_and_flag(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    _UNDECODABLE.seen = True
    return "\ufffd", exc.end


codecs.register_error(_REPLACE_AND_FLAG, _replace_and_flag)


def stdout_json(res: CommandResult, command: str, stack: str | None) -> Any:
    """The JSON document a Pulumi command printed on stdout (``res``, from
    :meth:`TrackedPulumiCommand.run`), decoded with the one JSON reader's limits
    (:func:`clusterstack.config.document.json_loads`: integers of at most 19 digits, no
    ``NaN``/``Infinity``; depth bounded by the parser's recursion limit, as the Pulumi document
    readers do); stdout must be UTF-8 (Go's encoding/json writes nothing else). ``command`` is
    what the operator would type (``pulumi stack export``). Raises :class:`EngineOutputError`
    (exit 2) naming it."""
    from clusterstack.config.document import json_loads

    stdout = res.stdout
    if "stdout" in getattr(res, "not_utf8", ()):
        raise EngineOutputError(stack, command, "bytes that are not UTF-8", output=stdout)
    try:
        return json_loads(stdout)
    except json.JSONDecodeError as exc:
        problem = (f"no JSON ({exc.msg})" if exc.pos == 0 or not stdout.strip()
                   else f"JSON that is not whole: {exc.msg} at line {exc.lineno} column {exc.colno}")
        raise EngineOutputError(stack, command, problem, output=stdout) from None
    except RecursionError:
        raise EngineOutputError(stack, command, "JSON nested too deeply to be a Pulumi document",
                                output=stdout) from None
    except ValueError as exc:  # a value limit of json_loads
        raise EngineOutputError(stack, command, f"JSON clusterstack does not accept: {exc}",
                                output=stdout) from None


@contextmanager
def sdk_json(stack: str | None, command: str) -> Iterator[None]:
    """Around an Automation API call that decodes a command's stdout itself (plain
    ``json.loads`` and the SDK's own classes: ``stack history --json``, ``stack ls --json``):
    output it cannot read — not JSON, a 5,000-digit integer, a document of another shape —
    becomes :class:`EngineOutputError` (exit 2) naming ``command``, not an internal error."""
    try:
        yield
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else (str(exc) or type(exc).__name__)
        raise EngineOutputError(stack, command, f"output the Automation API cannot read ({detail[:200]})") from None


def make_command() -> TrackedPulumiCommand:
    """The CLI from PATH, checked against the Automation API's minimum version.

    Raises PulumiMissingError (no ``pulumi`` on PATH or it does not run) or PulumiVersionError.
    """
    if shutil.which("pulumi") is None:
        raise PulumiMissingError()
    try:
        return TrackedPulumiCommand()
    except FileNotFoundError as exc:
        raise PulumiMissingError(str(exc)) from None
    except subprocess.CalledProcessError as exc:
        raise PulumiMissingError(f"`pulumi version` exited with {exc.returncode}") from None
    except auto_errors.InvalidVersionError as exc:
        raise PulumiVersionError(str(exc)) from None


# --- error mapping --------------------------------------------------------------------------

_DIAG_HEADER = re.compile(r"^  (\S+) \((.*)\):\s*$")


def diagnostics_from_output(stdout: str) -> dict[str, list[str]]:
    """The ``Diagnostics:`` section of the CLI's text output: ``{resource type: [lines]}``.

    Pulumi prints it as ``Diagnostics:`` then, per resource, a two-space-indented header
    ``<type> (<name>):`` and four-space-indented message lines (e.g. ``error: …`` or a Python
    traceback). Lines keep their relative indentation.
    """
    out: dict[str, list[str]] = {}
    lines = stdout.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Diagnostics:")
    except StopIteration:
        return out
    current: list[str] | None = None
    for line in lines[start + 1:]:
        m = _DIAG_HEADER.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif line.startswith("    ") and current is not None:
            current.append(line[4:])
        elif line.strip() and not line.startswith(" "):
            break  # next section (Resources:, Outputs:, Duration:)
    for key in out:
        while out[key] and not out[key][-1].strip():
            out[key].pop()
    return out


def _stderr_errors(stderr: str) -> list[str]:
    return [line.strip().removeprefix("error: ") for line in stderr.splitlines()
            if line.strip().startswith("error:")]


def map_command_error(exc: Exception, stack: str | None,
                      collector: EventCollector | None = None) -> EngineError:
    """Turn an Automation API ``CommandError`` into the typed clusterstack error.

    Order: the Automation API's own classes (``ConcurrentUpdateError`` → StackLockedError,
    ``StackNotFoundError``, ``StackAlreadyExistsError``); passphrase messages; the program's
    error (error diagnostics on the ``pulumi:pulumi:Stack`` resource from the event stream, or
    its block in the output's ``Diagnostics:`` section, or the SDK's ``RuntimeError`` /
    ``CompilationError`` classification) → ProgramFailedError; error diagnostics on a resource
    or failed resource operations → ResourceFailedError; anything else → EngineCommandError
    with the engine's resource-less error diagnostics or the CLI's ``error:`` lines.
    """
    result = getattr(exc, "result", None)
    stdout = result.stdout if result is not None else ""
    stderr = result.stderr if result is not None else str(exc)
    output = f"{stdout}\n{stderr}".strip()
    if isinstance(exc, auto_errors.ConcurrentUpdateError):
        return StackLockedError(stack, output)
    if isinstance(exc, auto_errors.StackNotFoundError):
        return StackNotFoundError(stack, output)
    if isinstance(exc, auto_errors.StackAlreadyExistsError):
        return StackExistsError(stack, output)
    low = stderr.lower()
    if "passphrase must be set" in low:
        return PassphraseMissingError(stack)
    if "incorrect passphrase" in low:
        return EngineCommandError(stack, "incorrect passphrase (PULUMI_CONFIG_PASSPHRASE does not "
                                  "decrypt this stack's secrets)", output)
    if collector is not None and collector.program_errors():
        return ProgramFailedError(stack, "\n".join(d.message for d in collector.program_errors()),
                                  output)
    diags = diagnostics_from_output(stdout)
    stack_lines = diags.get(STACK_TYPE, [])
    if any(line.lstrip().startswith("error:") for line in stack_lines) or isinstance(
            exc, (auto_errors.RuntimeError, auto_errors.CompilationError)):
        text = "\n".join(stack_lines) or "\n".join(_stderr_errors(stderr)) or stdout
        return ProgramFailedError(stack, text, output)
    if collector is not None and (any(d.urn for d in collector.errors()) or collector.failed):
        msgs = [f"{name_of(d.urn)}: {d.message}" for d in collector.errors() if d.urn]
        if not msgs:
            msgs = [f"{s.op} of {s.urn} failed" for s in collector.failed]
        return ResourceFailedError(stack, msgs, output)
    if collector is not None and collector.errors():  # engine-wide errors (no resource named)
        return EngineCommandError(stack, "; ".join(d.message for d in collector.errors()), output)
    resource_errors = [f"{typ}: {line.strip().removeprefix('error: ')}"
                       for typ, lines in sorted(diags.items()) for line in lines
                       if line.lstrip().startswith("error:")]
    if resource_errors:
        return ResourceFailedError(stack, resource_errors, output)
    errs = _stderr_errors(stderr)
    detail = "; ".join(errs[-3:]) if errs else (stderr.strip().splitlines() or [f"exit code {getattr(result, 'code', '?')}"])[-1]
    return EngineCommandError(stack, detail, output)


def _diag(d: Any) -> Any:
    """A vocabulary diagnostic as the engine model's :class:`Diagnostic`."""
    from clusterstack.engine.model import Diagnostic

    return Diagnostic(severity=d.severity, message=d.message, urn=d.urn)


def _utc(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def history_entry(summary: Any) -> HistoryEntry:
    """Convert an Automation API ``UpdateSummary`` (one ``stack history --json`` record)."""
    rc = summary.resource_changes or {}
    config = getattr(summary, "config", None) or {}  # key → ConfigValue(value, secret)
    return HistoryEntry(
        version=summary.version, kind=summary.kind, result=summary.result,
        start_time=_utc(summary.start_time), end_time=_utc(summary.end_time),
        message=summary.message or "", environment=dict(sorted((summary.environment or {}).items())),
        resource_changes={str(getattr(k, "value", k)): int(v) for k, v in sorted(rc.items())},
        config={k: str(v.value) for k, v in sorted(config.items())},
        config_secrets=tuple(sorted(k for k, v in config.items() if v.secret)))


# --- the adapter ----------------------------------------------------------------------------

def _quiet_sdk_event_parsing() -> None:
    """Drop the SDK's own ``Failed to parse engine event`` warning: the SDK parses each event
    with its ``OpType`` enum and warns, dumping the whole event (~2 KB), on an op newer than it
    (``pulumi/automation/_stack.py`` ``_EventsServicer.StreamEvents``, SDK 3.272: the CLI's
    ``extend-parameterize``). This adapter reads the raw event log itself
    (:meth:`TrackedPulumiCommand._tee_event_log`) and judges every op there
    (:data:`clusterstack.pulumi.steps.KNOWN_OPS`), so the SDK's failed parse loses nothing.
    Installed before each SDK call (idempotent): a filter added once at import would not
    outlive a ``warnings.catch_warnings`` block around the first call."""
    import warnings

    warnings.filterwarnings("ignore", message="Failed to parse engine event", category=UserWarning)


class AutomationEngine:
    """:class:`clusterstack.engine.Engine` over Pulumi's Automation API (local program in
    ``workspace.project_dir``). ``command`` overrides the CLI (default: ``pulumi`` from PATH,
    resolved on first use).

    Used by service deploys, all optional: ``project_dir`` — another Pulumi project
    (a ``services/<name>/`` directory, or one in a temporary git worktree); ``config_file`` —
    passed as ``--config-file`` to preview, up and refresh instead of ``Pulumi.<stack>.yaml``;
    ``env`` — extra environment for every CLI call (secrets resolved at rollout time: held in
    memory and handed to the child process, never written to disk).
    """

    def __init__(self, workspace: Workspace, *, command: TrackedPulumiCommand | None = None,
                 project_dir: Path | None = None, config_file: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.workspace = workspace
        self.backend_url = resolve_backend_url(workspace.backend_url, workspace.root)
        self._command = command
        self._ws: LocalWorkspace | None = None
        self.project_dir = Path(project_dir) if project_dir is not None else workspace.project_dir
        self.config_file = str(config_file) if config_file is not None else None
        self.extra_env = dict(env or {})

    # plumbing
    @property
    def command(self) -> TrackedPulumiCommand:
        if self._command is None:
            self._command = make_command()
        return self._command

    def env_vars(self) -> dict[str, str]:
        """Environment added to every CLI call: the backend and no update-check chatter."""
        return {**self.extra_env, "PULUMI_BACKEND_URL": self.backend_url,
                "PULUMI_SKIP_UPDATE_CHECK": "true"}

    def _local_workspace(self) -> LocalWorkspace:
        if self._ws is None:
            command = self.command  # first: no CLI → PulumiMissingError before anything is created
            if self.backend_url.startswith("file://") and not self.backend_url.startswith("file://~"):
                Path(self.backend_url[len("file://"):].partition("?")[0]).mkdir(parents=True, exist_ok=True)
            self._ws = LocalWorkspace(work_dir=str(self.project_dir),
                                      env_vars=self.env_vars(),
                                      secrets_provider=self.workspace.secrets_provider,
                                      pulumi_command=command)
        return self._ws

    def _require_secrets(self, stack: str | None) -> None:
        # Every precondition in one pass: the CLI and the passphrase, both named when both miss.
        # The CLI is looked up on PATH only (running it waits for the passphrase check).
        missing: list[EngineError] = []
        if self._command is None and shutil.which("pulumi") is None:
            missing.append(PulumiMissingError())
        if needs_passphrase(self.workspace.secrets_provider) and not any(
                k in os.environ or k in self.extra_env for k in PASSPHRASE_ENV):
            missing.append(PassphraseMissingError(stack))
        if len(missing) > 1:
            raise PreconditionsMissing(missing)
        if missing:
            raise missing[0]

    @contextmanager
    def _errors(self, stack: str | None, collector: EventCollector | None = None) -> Iterator[None]:
        _quiet_sdk_event_parsing()
        try:
            yield
        except EngineError:
            raise
        except auto_errors.CommandError as exc:
            raise map_command_error(exc, stack, collector) from None
        except FileNotFoundError as exc:
            if "pulumi" in str(exc):
                raise PulumiMissingError(str(exc)) from None
            raise
        except RuntimeError as exc:  # the SDK's "summary event never found"
            raise EngineCommandError(stack, str(exc)) from None

    def _stack(self, stack: str) -> Stack:
        return Stack.select(stack, self._local_workspace())

    # Engine protocol
    def init_stack(self, stack: str) -> bool:
        self._require_secrets(stack)
        with self._errors(stack):
            try:
                self._local_workspace().create_stack(stack)
            except auto_errors.StackAlreadyExistsError:
                return False
        return True

    def select_stack(self, stack: str) -> None:
        with self._errors(stack):
            self._stack(stack)

    def rename_stack(self, stack: str, new: str) -> None:
        with self._errors(stack):
            self._stack(stack).rename(new)   # `pulumi stack rename <new>` (Automation API Stack.rename)

    def list_stacks(self) -> tuple[StackSummary, ...]:
        with self._errors(None), sdk_json(None, "pulumi stack ls --json"):
            summaries = self._local_workspace().list_stacks()
        out = []
        for s in sorted(summaries, key=lambda s: s.name):
            last = self.history(s.name, limit=1) if s.last_update is not None else ()
            out.append(StackSummary(name=s.name, current=bool(s.current), last_update=_utc(s.last_update),
                                    update_in_progress=s.update_in_progress,
                                    resource_count=s.resource_count, url=s.url,
                                    last_result=last[0].result if last else None))
        return tuple(out)

    def preview(self, stack: str, *, refresh: bool = False, targets: Sequence[str] = ()) -> PreviewResult:
        self._require_secrets(stack)
        collector = EventCollector()
        command = self.command
        command.last_event_log = None
        try:
            with self._errors(stack, collector):
                res = self._stack(stack).preview(on_event=collector, refresh=refresh or None,
                                                 target=list(targets) or None,
                                                 color="never", suppress_progress=True,
                                                 config_file=self.config_file)
        except EngineError as exc:
            self._raise_refused(stack, collector, exc)
            raise
        return self._preview_result(stack, collector, res)

    def _raw_log(self) -> Any:
        """The raw event log of the last CLI run, parsed by the guard's own reader
        (:func:`clusterstack.pulumi.documents.parse_text`): ``ParsedSteps`` or None when the
        command kept none. Raises ClusterstackError (exit 2) on an unknown op or a malformed
        event — the SDK would have dropped it."""
        from clusterstack.pulumi.documents import parse_text

        lines = getattr(self.command, "last_event_log", None)
        if not lines:
            return None
        if getattr(self.command, "event_log_not_utf8", False):
            raise ClusterstackError("the event log holds bytes that are not UTF-8 (Go's "
                                    "encoding/json writes nothing else)",
                                    "check that `pulumi` on PATH is the Pulumi CLI (`pulumi version`)",
                                    field="pulumi --event-log")
        return parse_text("\n".join(lines) + "\n", source="pulumi --event-log")

    def _raise_refused(self, stack: str, collector: EventCollector, exc: EngineError) -> None:
        """Re-raise a failed run as :class:`ProtectRefusedError` when its only errors are
        protect refusals (and the root stack's generic "preview failed"); otherwise return and
        let ``exc`` stand. The steps and diagnostics come from the raw event log when there is
        one (else from the SDK's callbacks)."""
        from clusterstack.pulumi.steps import GENERIC_FAILURES, refusals_from

        raw = self._raw_log()
        diags = raw.diagnostics if raw is not None else tuple(collector.diagnostics)
        refusals = refusals_from(diags)
        if not refusals:
            return
        messages = {r.message for r in refusals}
        if any(d.severity == "error" and d.message not in messages
               and d.message.strip().lower() not in GENERIC_FAILURES for d in diags):
            return  # another failure besides the refusals: not (only) the guard's business
        steps = raw.steps if raw is not None else tuple(collector.steps)
        counts = dict((raw.change_summary if raw is not None else collector.summary) or {}) or count_ops(steps)
        result = PreviewResult(stack=stack, steps=tuple(steps), counts=counts,
                               stdout=getattr(exc, "output", ""),
                               diagnostics=tuple(_diag(d) for d in diags
                                                 if d.severity in ("warning", "error")),
                               refusals=refusals)
        raise ProtectRefusedError(stack, result, output=getattr(exc, "output", "")) from None

    def _preview_result(self, stack: str, collector: EventCollector, res: Any) -> PreviewResult:
        from clusterstack.pulumi.documents import check_usable

        raw = self._raw_log()
        if raw is not None:  # what the CLI wrote, not only what the SDK managed to parse
            check_usable(raw, source="pulumi --event-log")
            if raw.refusals:  # failed on a protected resource although the CLI exited 0
                self._raise_refused(stack, collector, EngineCommandError(stack, "preview failed", res.stdout))
            steps, counts = raw.steps, dict(raw.change_summary or {}) or count_ops(raw.steps)
            return PreviewResult(stack=stack, steps=steps, counts=counts, stdout=res.stdout,
                                 diagnostics=tuple(_diag(d) for d in raw.diagnostics
                                                   if d.severity in ("warning", "error")),
                                 gone=raw.gone)
        if collector.parse_errors:  # a step the guard cannot read must not pass as harmless
            raise collector.parse_errors[0]
        steps = tuple(collector.steps)
        counts = collector.summary
        if counts is None:
            rc = getattr(res, "change_summary", None) or {}
            counts = {str(getattr(k, "value", k)): int(v) for k, v in sorted(rc.items())} or count_ops(steps)
        return PreviewResult(stack=stack, steps=steps, counts=counts, stdout=res.stdout,
                             diagnostics=tuple(d for d in collector.diagnostics
                                               if d.severity in ("warning", "error")))

    def up(self, stack: str, *, message: str, on_step: StepCallback | None = None,
           targets: Sequence[str] = ()) -> UpResult:
        self._require_secrets(stack)
        with self._errors(stack):
            st = self._stack(stack)
        command = self.command
        collector = EventCollector(on_step=on_step, on_stop=lambda _step: command.interrupt())
        command.last_event_log = None
        command.on_raw_event = collector.raw_line
        try:
            res = st.up(message=message, on_event=collector, color="never",
                        target=list(targets) or None,
                        suppress_progress=True, show_secrets=False,
                        config_file=self.config_file)
        except auto_errors.CommandError as exc:
            if collector.stop_requested is not None:
                result = getattr(exc, "result", None)
                raise UpdateCancelledError(stack, collector.stop_requested, tuple(collector.applied),
                                           finished=False,
                                           output=result.stderr if result else str(exc)) from None
            mapped = map_command_error(exc, stack, collector)
            self._raise_refused(stack, collector, mapped)
            raise mapped from None
        except FileNotFoundError as exc:
            raise PulumiMissingError(str(exc)) from None
        finally:
            command.on_raw_event = None
        if collector.stop_requested is not None:
            raise UpdateCancelledError(stack, collector.stop_requested, tuple(collector.applied),
                                       finished=True, output=res.stdout)
        entry = history_entry(res.summary)
        return UpResult(stack=stack, steps=tuple(collector.steps),
                        counts=dict(entry.resource_changes) or collector.summary or {},
                        result=entry.result, version=entry.version, message=entry.message,
                        stdout=res.stdout,
                        outputs={k: ("[secret]" if v.secret else v.value)
                                 for k, v in sorted(res.outputs.items())})

    def refresh(self, stack: str, *, preview_only: bool = True) -> PreviewResult:
        self._require_secrets(stack)
        collector = EventCollector()
        with self._errors(stack, collector):
            st = self._stack(stack)
            if preview_only:
                res = st.preview_refresh(on_event=collector, color="never", suppress_progress=True,
                                         config_file=self.config_file)
            else:
                res = st.refresh(on_event=collector, color="never", suppress_progress=True,
                                 show_secrets=False, config_file=self.config_file)
        return self._preview_result(stack, collector, res)

    def import_file(self, stack: str, path: str, *, message: str, protect: bool = True) -> UpResult:
        from clusterstack.config.document import MAX_STATE_BYTES, parse_json, read_text
        from clusterstack.pulumi.importfile import ImportFileError

        self._require_secrets(stack)
        # the loader's hygiene (size, UTF-8, depth, bounded integers): ImportFileError, exit 2
        hint = "regenerate it with `clusterstack import generate`"
        text = read_text(Path(path), missing="import file not found", missing_hint=hint,
                         error=ImportFileError, limit=MAX_STATE_BYTES)
        doc = parse_json(text, Path(path), error=ImportFileError, hint=hint)
        if not isinstance(doc, dict):
            raise ImportFileError(f"a JSON {type(doc).__name__}, not an import file object", hint,
                                  file=Path(path))
        with self._errors(stack):
            res = self._stack(stack).import_resources(
                message=message, resources=doc.get("resources", []), name_table=doc.get("nameTable"),
                protect=protect, generate_code=False, show_secrets=False)
        entry = history_entry(res.summary)
        return UpResult(stack=stack, steps=(), counts=dict(entry.resource_changes),
                        result=entry.result, version=entry.version, message=entry.message,
                        stdout=res.stdout)

    # -- used by `import apply` --------------------------------------------------------------
    def preview_import(self, stack: str, path: str) -> PreviewResult:
        """``pulumi import --file PATH --preview-only --json``: the Automation API has no
        import preview, so the CLI is run directly; its JSON output is a preview document
        (``steps``, ``changeSummary``), parsed by the guard's own parser."""
        from clusterstack.pulumi.documents import parse_document

        self._require_secrets(stack)
        ws = self._local_workspace()
        args = ["import", "--file", path, "--preview-only", "--json", "--generate-code=false",
                "--stack", stack, "--non-interactive", "--color", "never"]
        with self._errors(stack):
            res = self.command.run(args, ws.work_dir, {**ws.env_vars, **self.env_vars()})
        parsed = parse_document(stdout_json(res, "pulumi import --preview-only --json", stack),
                                source="pulumi import --preview-only")
        counts = dict(parsed.change_summary or {}) or count_ops(parsed.steps)
        return PreviewResult(stack=stack, steps=parsed.steps, counts=counts, stdout=res.stdout)

    def history(self, stack: str, *, limit: int | None = None) -> tuple[HistoryEntry, ...]:
        with self._errors(stack), sdk_json(stack, "pulumi stack history --json"):
            summaries = self._stack(stack).history(page_size=limit, show_secrets=False)
        return tuple(history_entry(s) for s in summaries)

    def export(self, stack: str) -> dict[str, Any]:
        # Not LocalWorkspace.export_stack: that passes --show-secrets and would decrypt them.
        ws = self._local_workspace()
        with self._errors(stack):
            res = self.command.run(["stack", "export", "--stack", stack], ws.work_dir, ws.env_vars)
        doc = stdout_json(res, "pulumi stack export", stack)
        if not isinstance(doc, dict):
            raise EngineOutputError(stack, "pulumi stack export",
                                    f"a JSON {type(doc).__name__}, not a deployment object",
                                    output=res.stdout)
        return doc
