"""The engine adapter: the only code in clusterstack that runs the Pulumi CLI.

It runs the project in ``<root>/<project_dir>`` (``infra/``) with the backend and secrets
provider of ``clusterstack.toml``, through Pulumi's Automation API where that API only runs a
command (``LocalWorkspace``: stack init/select/ls, history, outputs) and through its own
command runner (:class:`TrackedPulumiCommand`) for the engine runs — ``preview``, ``up``,
``refresh``, ``import`` — whose events it reads itself:

- backend: passed as ``PULUMI_BACKEND_URL`` to every CLI call, so ``Pulumi.yaml`` is never
  rewritten (Automation API ``ProjectSettings(backend=…)`` would save the project file). A
  relative ``file://`` URL is resolved against the repository root, and its directory created.
- secrets provider: given to ``pulumi stack init --secrets-provider``; with ``passphrase`` the
  passphrase comes from ``PULUMI_CONFIG_PASSPHRASE`` / ``PULUMI_CONFIG_PASSPHRASE_FILE`` and a
  missing one is reported before the CLI runs (:class:`PassphraseMissingError`).
- events: every engine run writes an ``--event-log`` that is read line by line, as the CLI writes
  it, by THE engine event stream reader (:class:`clusterstack.pulumi.events.StreamReader`, through
  :class:`clusterstack.engine.events.LiveStream`) — the reader ``guard FILE`` uses for a saved
  log. The Automation API's own event server and parser (``Stack.preview(on_event=…)``,
  ``pulumi/automation/_stack.py`` ``_EventsServicer``: ``EngineEvent.from_json``, which drops an
  op its ``OpType`` enum lacks, such as ``extend-parameterize``, with a ``UserWarning``) are not
  used.

Cancelling an update. What the Automation API offers was checked against its source
(``pulumi/automation/_stack.py``, SDK 3.272): ``Stack.cancel()`` runs ``pulumi cancel``, which
for Pulumi Cloud marks the update cancelled on the service and for file/bucket backends only
deletes the lock files — the running process goes on either way. So the adapter remembers its
child process (:class:`TrackedPulumiCommand`) and cancels by sending it SIGINT: Pulumi's own
Ctrl-C, a graceful cancel (no new step starts; steps already in flight finish; the lock is
released and the state saved). Steps are announced by ``resourcePreEvent`` *before* they run,
so the cancel lands before any later step — but a step already dispatched cannot be recalled,
which is why ``up`` refuses on the preview first, checks during the update second and judges
the applied steps again at the end (:func:`clusterstack.flows.up.guarded_up`).
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

from pulumi.automation import LocalWorkspace, Stack, errors as auto_errors
from pulumi.automation._cmd import CommandResult, PulumiCommand, _fixup_path

from clusterstack.engine.errors import (
    EngineCommandError,
    EngineOutputError,
    EngineError,
    EngineInterruptedError,
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
from clusterstack import signals
from clusterstack.engine.events import SOURCE, LiveStream
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
from clusterstack.config.document import MAX_STATE_BYTES, json_loads, parse_json, read_text
from clusterstack.pulumi.documents import check_usable, parse_document
from clusterstack.pulumi.importfile import ImportFileError
from clusterstack.pulumi.steps import GENERIC_FAILURES

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
        #: called with each line of the run's ``--event-log`` as the CLI writes it:
        #: ``on_raw_event(line, not_utf8=bool, cut=bool)`` (see :meth:`_tee_event_log`)
        self.on_raw_event: Any = None
        super().__init__(root=root)

    def _tee_event_log(self, args: list[str]):
        """Follow the event log this run asked Pulumi to write, line by line, as it is written.

        The value after ``--event-log`` is replaced by a file in a private temporary directory;
        a thread tails it and hands each complete line to :attr:`on_raw_event` — the adapter's
        :class:`~clusterstack.engine.events.LiveStream`, i.e. the one stream reader — with
        ``not_utf8`` when its bytes were not UTF-8 (read as U+FFFD), and a last line the CLI
        left unfinished with ``cut``. Nothing else reads the log: the Automation API's event
        server and its ``EngineEvent.from_json`` (``pulumi/automation/_stack.py``, which drops an
        op its enum lacks with a ``UserWarning``) are not involved. Returns the rewritten args
        and a ``finish()`` that drains the log after the process ended. No ``--event-log``:
        args unchanged, ``finish`` None."""
        import tempfile
        import time

        sep = args.index("--") if "--" in args else len(args)
        if "--event-log" not in args[:sep]:
            return args, None
        i = args.index("--event-log")
        tmp = tempfile.TemporaryDirectory(prefix="clusterstack-events-")
        ours = os.path.join(tmp.name, "events.jsonl")
        Path(ours).touch()
        args = [*args[:i + 1], ours, *args[i + 2:]]
        done = threading.Event()
        raw = self.on_raw_event

        def hand(line: str, bad: bool, cut: bool) -> None:
            if raw is not None:
                try:
                    raw(line, not_utf8=bad, cut=cut)
                except Exception:  # noqa: BLE001 — the handler records its own failures
                    pass

        def follow() -> None:
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
                    hand(line.rstrip("\n"), bad, False)
                    bad = False
            if partial:  # a cut-off last line: handed on, so the reader refuses the log
                hand(partial, bad, True)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()

        def finish() -> None:
            done.set()
            thread.join(30)
            tmp.cleanup()

        return args, finish

    @staticmethod
    def _describe(args: Sequence[str]) -> str:
        """``pulumi up --stack cw-demo-h100``: what the operator would call the run."""
        words = [a for a in args if not a.startswith("-")][:2]
        stack = args[args.index("--stack") + 1] if "--stack" in args[:-1] else None
        verb = " ".join(w for w in words[:2] if w in ("preview", "up", "refresh", "import", "destroy",
                                                       "stack", "history", "export", "ls", "init",
                                                       "select", "output", "cancel"))
        return f"pulumi {verb or (words[0] if words else '')}".strip() + (f" --stack {stack}" if stack else "")

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
        # kills its reader thread with a traceback and leaves the pipe undrained).
        # The CLI runs in its own process group: a terminal's Ctrl-C reaches clusterstack only,
        # which forwards it exactly once (clusterstack.signals) — in clusterstack's group the
        # CLI would get the terminal's SIGINT and then the forwarded one, and a second SIGINT
        # makes Pulumi terminate at once. No parent-death signal (prctl PR_SET_PDEATHSIG)
        # either: Linux sends it again at every reparenting, one per exiting thread of a
        # multi-threaded parent (kernel/exit.c forget_original_parent), which would be that
        # second SIGINT — and would cut short a cancel already forwarded when a CI runner kills
        # clusterstack after its grace period.
        what = self._describe(args)
        signals.check_not_interrupted()   # nothing starts after a SIGINT/SIGTERM
        with signals.handling(reset=False):   # the CLI's handler; installed here for a library caller
            try:
                proc = subprocess.Popen([self.command, *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=cwd, env=env, encoding="utf-8",
                                        errors=_REPLACE_AND_FLAG, process_group=0)
            except BaseException:
                if finish_log is not None:
                    finish_log()
                raise
            with proc, signals.engine_child(proc.pid, what) as child:
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
        if child.forwarded is not None:   # the engine was cancelled (a signal) and has exited
            raise EngineInterruptedError(signals.received() or signal.SIGINT, what, result)
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
    except ValueError as exc:   # the SDK decodes `pulumi version` as strict UTF-8 and parses it
        detail = "bytes that are not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)[:200]
        raise PulumiVersionError(f"`pulumi version` printed no version ({detail}); is `pulumi` on PATH "
                                 "the Pulumi CLI?") from None
    except OSError as exc:   # not executable, a directory, …
        raise PulumiMissingError(f"`pulumi` could not be run: {exc.strerror or exc}") from None


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
                      collector: LiveStream | None = None) -> EngineError:
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


def _unreadable(live: LiveStream) -> str:
    """Why an update stopped when its stream held an event the reader refused (``""`` when a
    step was refused by the guard instead)."""
    if live.error is None:
        return ""
    p = live.error.problems[0]
    return f"its event stream holds an event clusterstack cannot read ({p.render()})"


#: The time format of ``stack history --json`` / ``stack ls --json`` (Go ``time.Time`` in UTC,
#: the Automation API's ``_DATETIME_FORMAT``).
_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


class _Shape(ValueError):
    """A document of another shape than the command prints (the field named)."""


def _field(d: Any, key: str, kinds: Any, *, required: bool = True, where: str = "") -> Any:
    if not isinstance(d, dict):
        raise _Shape(f"{where or 'an entry'} is not an object")
    if key not in d or d[key] is None:
        if required:
            raise _Shape(f"{where + '.' if where else ''}{key} is missing")
        return None
    value = d[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in (
            kinds if isinstance(kinds, tuple) else (kinds,))):
        raise _Shape(f"{where + '.' if where else ''}{key} is not a {getattr(kinds, '__name__', kinds)}")
    return value


def _time(d: Any, key: str, where: str, *, required: bool) -> datetime | None:
    text = _field(d, key, str, required=required, where=where)
    if text is None:
        return None
    try:
        return datetime.strptime(text, _TIME).replace(tzinfo=timezone.utc)
    except ValueError:
        raise _Shape(f"{where}.{key} is not a time ({text[:40]!r})") from None


def _str_map(d: Any, key: str, where: str) -> dict[str, str]:
    m = _field(d, key, dict, required=False, where=where) or {}
    if not all(isinstance(v, str) for v in m.values()):
        raise _Shape(f"{where}.{key} is not an object of strings")
    return m


def history_entry(d: Any, where: str = "entry") -> HistoryEntry:
    """One record of ``pulumi stack history --json`` (decoded by the one JSON reader) →
    :class:`HistoryEntry`. The fields are the CLI's (``pkg/cmd/pulumi/stack/stack_history.go``,
    as the Automation API's ``Stack.history`` reads them): ``kind``, ``startTime``,
    ``message``, ``environment``, ``config`` (key → ``{"value", "secret"}``, a secret's value
    absent without ``--show-secrets``: ``[secret]``), ``result``, ``endTime``, ``version``,
    ``resourceChanges``. Raises :class:`_Shape` naming the field."""
    config: dict[str, str] = {}
    secrets: list[str] = []
    for key, cv in sorted((_field(d, "config", dict, required=False, where=where) or {}).items()):
        secret = _field(cv, "secret", bool, where=f"{where}.config.{key}")
        value = _field(cv, "value", (str, int, float, bool), required=secret is False,
                       where=f"{where}.config.{key}")
        config[key] = "[secret]" if value is None else str(value)
        if secret:
            secrets.append(key)
    rc = _field(d, "resourceChanges", dict, required=False, where=where) or {}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in rc.values()):
        raise _Shape(f"{where}.resourceChanges is not an object of op → count")
    return HistoryEntry(
        version=_field(d, "version", int, required=False, where=where),
        kind=_field(d, "kind", str, where=where), result=_field(d, "result", str, where=where),
        start_time=_time(d, "startTime", where, required=True),
        end_time=_time(d, "endTime", where, required=False),
        message=_field(d, "message", str, required=False, where=where) or "",
        environment=dict(sorted(_str_map(d, "environment", where).items())),
        resource_changes=dict(sorted(rc.items())), config=config, config_secrets=tuple(secrets))


# --- the adapter ----------------------------------------------------------------------------

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
    def _errors(self, stack: str | None, collector: LiveStream | None = None) -> Iterator[None]:
        try:
            yield
        except EngineInterruptedError as exc:
            if exc.stack is None:   # raised by the command runner, which knows no stack
                raise EngineInterruptedError(exc.signum, exc.what, exc.result, stack=stack) from None
            raise
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

    def _cli_json(self, stack: str | None, args: list[str], command: str) -> Any:
        """Run a read-only ``pulumi`` command and decode its stdout with the one JSON reader
        (:func:`stdout_json`: value limits, no key twice, exit 2 naming ``command``)."""
        ws = self._local_workspace()
        with self._errors(stack):
            res = self.command.run([*args, *(["--stack", stack] if stack else [])], ws.work_dir,
                                   {**ws.env_vars, **self.env_vars()})
        return stdout_json(res, command, stack), res.stdout

    def list_stacks(self) -> tuple[StackSummary, ...]:
        command = "pulumi stack ls --json"
        doc, stdout = self._cli_json(None, ["stack", "ls", "--json"], command)
        try:
            if not isinstance(doc, list):
                raise _Shape(f"a JSON {type(doc).__name__}, not a list of stacks")
            rows = []
            for i, d in enumerate(doc):
                where = f"[{i}]"
                rows.append((_field(d, "name", str, where=where),
                             bool(_field(d, "current", bool, required=False, where=where)),
                             _time(d, "lastUpdate", where, required=False),
                             _field(d, "updateInProgress", bool, required=False, where=where),
                             _field(d, "resourceCount", int, required=False, where=where),
                             _field(d, "url", str, required=False, where=where)))
        except _Shape as exc:
            raise EngineOutputError(None, command, f"a document of another shape: {exc}",
                                    output=stdout) from None
        out = []
        for name, current, last_update, in_progress, count, url in sorted(rows, key=lambda r: r[0]):
            last = self.history(name, limit=1) if last_update is not None else ()
            out.append(StackSummary(name=name, current=current, last_update=last_update,
                                    update_in_progress=in_progress, resource_count=count, url=url,
                                    last_result=last[0].result if last else None))
        return tuple(out)

    # -- the engine runs: one event stream each ----------------------------------------------
    def _run(self, stack: str, verb: list[str], live: LiveStream, *,
             targets: Sequence[str] = ()) -> CommandResult:
        """Run ``pulumi <verb…>`` on ``stack`` with an ``--event-log`` whose every line goes to
        ``live`` (the one stream reader) as the CLI writes it. The arguments are the Automation
        API's for the same operation (``pulumi/automation/_stack.py`` 3.272: ``--exec-kind
        auto.local``, ``--stack``, ``--color never``, ``--target`` per URN, ``--config-file``;
        ``PULUMI_DEBUG_COMMANDS``), its event server left out. Raises the SDK's
        ``CommandError`` (with ``.result``) on a non-zero exit."""
        ws = self._local_workspace()
        args = [*verb, "--color", "never"]
        for t in targets:
            args += ["--target", t]
        if self.config_file:
            args += ["--config-file", self.config_file]
        args += ["--exec-kind", "auto.local", "--event-log", "<clusterstack>", "--stack", stack]
        env = {"PULUMI_DEBUG_COMMANDS": "true", **ws.env_vars, **self.env_vars()}
        command = self.command
        command.on_raw_event = live.line
        try:
            return command.run(args, ws.work_dir, env)
        finally:
            command.on_raw_event = None

    def _stream(self, stack: str, live: LiveStream, command: str) -> Any:
        """The run's record (:class:`~clusterstack.pulumi.steps.ParsedSteps`) after the CLI
        ended: the first line the reader refused is raised (exit 2, naming the log's line)."""
        if live.error is not None:
            raise live.error
        if not live.lines:  # the CLI exited without writing a single event
            raise EngineOutputError(stack, command, "no engine event in its --event-log (the Pulumi "
                                    "CLI writes one for every run)")
        return live.result()

    def _raise_refused(self, stack: str, live: LiveStream, exc: EngineError) -> None:
        """Re-raise a failed run as :class:`ProtectRefusedError` when its only errors are
        protect refusals (and the root stack's generic "preview failed"); otherwise return and
        let ``exc`` stand. Steps and diagnostics are the stream's."""
        if live.error is not None:
            raise live.error  # the stream cannot be read: no verdict from it
        parsed = live.result()
        refusals = parsed.refusals
        if not refusals:
            return
        messages = {r.message for r in refusals}
        if parsed.mandatory_policy or any(
                d.severity == "error" and d.message not in messages
                and d.message.strip().lower() not in GENERIC_FAILURES for d in parsed.diagnostics):
            return  # another failure besides the refusals: not (only) the guard's business
        result = PreviewResult(stack=stack, steps=parsed.steps,
                               counts=dict(parsed.change_summary or {}) or count_ops(parsed.steps),
                               stdout=getattr(exc, "output", ""),
                               diagnostics=tuple(d for d in parsed.diagnostics
                                                 if d.severity in ("warning", "error")),
                               refusals=refusals)
        raise ProtectRefusedError(stack, result, output=getattr(exc, "output", "")) from None

    def _preview_run(self, stack: str, verb: list[str], command: str, *,
                     targets: Sequence[str] = ()) -> PreviewResult:
        """A run that changes nothing (``preview``, ``refresh --preview-only``) → its
        :class:`PreviewResult`, judged whole by :func:`~clusterstack.pulumi.documents.check_usable`
        (a killed, cancelled, failed or self-contradicting stream is exit 2, a protect refusal
        the guard's :class:`ProtectRefusedError`)."""
        self._require_secrets(stack)
        live = LiveStream()
        try:
            with self._errors(stack, live):
                res = self._run(stack, verb, live, targets=targets)
        except EngineError as exc:
            if not isinstance(exc, EngineInterruptedError):
                self._raise_refused(stack, live, exc)
            raise
        parsed = self._stream(stack, live, command)
        if parsed.refusals:  # failed on a protected resource although the CLI exited 0
            self._raise_refused(stack, live, EngineCommandError(stack, "preview failed", res.stdout))
        check_usable(parsed, source=SOURCE)
        return self._preview_result(stack, parsed, res.stdout)

    @staticmethod
    def _preview_result(stack: str, parsed: Any, stdout: str) -> PreviewResult:
        return PreviewResult(stack=stack, steps=parsed.steps,
                             counts=dict(parsed.change_summary or {}) or count_ops(parsed.steps),
                             stdout=stdout,
                             diagnostics=tuple(d for d in parsed.diagnostics
                                               if d.severity in ("warning", "error")),
                             gone=parsed.gone)

    def preview(self, stack: str, *, refresh: bool = False, targets: Sequence[str] = ()) -> PreviewResult:
        verb = ["preview", "--suppress-progress"] + (["--refresh"] if refresh else [])
        return self._preview_run(stack, verb, "pulumi preview", targets=targets)

    def up(self, stack: str, *, message: str, on_step: StepCallback | None = None,
           targets: Sequence[str] = ()) -> UpResult:
        """``pulumi up --yes --skip-preview``: every step the stream shows is handed to
        ``on_step`` the moment it first appears (planning or not); a refusal, a broken check or
        an event the reader cannot read interrupts the CLI (SIGINT, Pulumi's graceful cancel)
        and raises :class:`UpdateCancelledError` (exit 3). A finished update's stream must be
        whole (prelude, one update summary): otherwise :class:`EngineOutputError` — the update
        ran, but its record cannot be trusted. ``UpResult.steps`` are every step of the stream,
        for the caller to judge again."""
        self._require_secrets(stack)
        command = self.command
        live = LiveStream(on_step=on_step, on_stop=lambda _step: command.interrupt())
        verb = ["up", "--yes", "--skip-preview", "--suppress-progress", "--message", message]
        try:
            res = self._run(stack, verb, live, targets=targets)
        except EngineInterruptedError as exc:   # SIGINT/SIGTERM: forwarded once, waited for
            raise EngineInterruptedError(exc.signum, exc.what, exc.result, stack=stack,
                                         applied=tuple(live.applied)) from None
        except auto_errors.CommandError as exc:
            if live.stop_requested is not None:
                result = getattr(exc, "result", None)
                raise UpdateCancelledError(stack, live.stop_requested, tuple(live.applied),
                                           finished=False, reason=_unreadable(live),
                                           output=result.stderr if result else str(exc)) from None
            mapped = map_command_error(exc, stack, live)
            self._raise_refused(stack, live, mapped)
            raise mapped from None
        except FileNotFoundError as exc:
            raise PulumiMissingError(str(exc)) from None
        if live.stop_requested is not None:
            raise UpdateCancelledError(stack, live.stop_requested, tuple(live.applied),
                                       finished=True, output=res.stdout, reason=_unreadable(live))
        parsed = self._stream(stack, live, "pulumi up")
        try:
            check_usable(parsed, source=SOURCE)
        except ClusterstackError as exc:
            raise EngineOutputError(stack, "pulumi up", f"an event log that is no record of the "
                                    f"update ({exc.problems[0].message}); the update ran — inspect "
                                    "the stack (`clusterstack preview`)", output=res.stdout) from None
        return self._update_result(stack, parsed, res, outputs=True)

    def _update_result(self, stack: str, parsed: Any, res: CommandResult, *,
                       outputs: bool) -> UpResult:
        """An :class:`UpResult` from a finished update's stream and the stack's newest history
        record (version, result, message, counts) and, with ``outputs``, its outputs."""
        [entry] = self.history(stack, limit=1) or [None]
        out = self.outputs(stack) if outputs else {}
        return UpResult(stack=stack, steps=parsed.steps,
                        counts=(dict(entry.resource_changes) if entry else {})
                        or dict(parsed.change_summary or {}),
                        result=entry.result if entry else (parsed.result or "succeeded"),
                        version=entry.version if entry else None,
                        message=entry.message if entry else "", stdout=res.stdout, outputs=out)

    def refresh(self, stack: str, *, preview_only: bool = True) -> PreviewResult:
        if preview_only:
            return self._preview_run(stack, ["refresh", "--preview-only", "--suppress-progress"],
                                     "pulumi refresh --preview-only")
        return self._preview_run(stack, ["refresh", "--yes", "--skip-preview", "--suppress-progress"],
                                 "pulumi refresh")

    def import_file(self, stack: str, path: str, *, message: str, protect: bool = True) -> UpResult:
        """``pulumi import --file PATH --yes --skip-preview``: the import's event stream is read
        like an update's (its ``import`` steps are ``UpResult.steps``)."""
        self._require_secrets(stack)
        # the loader's hygiene (size, UTF-8, depth, bounded integers): ImportFileError, exit 2
        hint = "regenerate it with `clusterstack import generate`"
        text = read_text(Path(path), missing="import file not found", missing_hint=hint,
                         error=ImportFileError, limit=MAX_STATE_BYTES)
        doc = parse_json(text, Path(path), error=ImportFileError, hint=hint)
        if not isinstance(doc, dict):
            raise ImportFileError(f"a JSON {type(doc).__name__}, not an import file object", hint,
                                  file=Path(path))
        live = LiveStream()
        verb = ["import", "--yes", "--skip-preview", "--file", str(Path(path).resolve()),
                f"--protect={'true' if protect else 'false'}", "--generate-code=false",
                "--message", message]
        with self._errors(stack, live):
            res = self._run(stack, verb, live)
        parsed = self._stream(stack, live, "pulumi import")
        try:
            check_usable(parsed, source=SOURCE)
        except ClusterstackError as exc:
            raise EngineOutputError(stack, "pulumi import", f"an event log that is no record of the "
                                    f"import ({exc.problems[0].message}); inspect the stack",
                                    output=res.stdout) from None
        return self._update_result(stack, parsed, res, outputs=False)

    # -- used by `import apply` --------------------------------------------------------------
    def preview_import(self, stack: str, path: str) -> PreviewResult:
        """``pulumi import --file PATH --preview-only --json``: the Automation API has no
        import preview, so the CLI is run directly; its JSON output is a preview document
        (``steps``, ``changeSummary``), parsed by the guard's own parser."""
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

    def import_state(self, stack: str, path: str) -> None:
        """``pulumi stack import --file PATH --stack STACK`` (the Automation API's
        ``import_stack`` would copy the document through a temporary file of its own)."""
        self._require_secrets(stack)
        ws = self._local_workspace()
        with self._errors(stack):
            self.command.run(["stack", "import", "--file", path, "--stack", stack,
                              "--non-interactive"], ws.work_dir, {**ws.env_vars, **self.env_vars()})

    def set_protect(self, stack: str, urn: str, protect: bool) -> None:
        """``pulumi state protect|unprotect --yes URN`` (pkg/cmd/pulumi/state: sets the
        resource's ``protect`` in the stack's state; a state edit, no cloud call). Used only by
        ``up`` performing a reviewed intent (clusterstack.guard.intent): unprotect the pool it
        deletes, re-protect it when the update does not finish."""
        self._require_secrets(stack)
        ws = self._local_workspace()
        with self._errors(stack):
            self.command.run(["state", "protect" if protect else "unprotect", urn, "--yes",
                              "--stack", stack, "--non-interactive"], ws.work_dir,
                             {**ws.env_vars, **self.env_vars()})

    def history(self, stack: str, *, limit: int | None = None) -> tuple[HistoryEntry, ...]:
        """``pulumi stack history --json`` (without ``--show-secrets``: no passphrase needed),
        newest first, decoded by the one JSON reader (:func:`history_entry`)."""
        command = "pulumi stack history --json"
        args = ["stack", "history", "--json"]
        if limit is not None:
            args += ["--page-size", str(limit), "--page", "1"]
        doc, stdout = self._cli_json(stack, args, command)
        try:
            if not isinstance(doc, list):
                raise _Shape(f"a JSON {type(doc).__name__}, not a list of updates")
            return tuple(history_entry(d, f"[{i}]") for i, d in enumerate(doc))
        except _Shape as exc:
            raise EngineOutputError(stack, command, f"a document of another shape: {exc}",
                                    output=stdout) from None

    def outputs(self, stack: str) -> dict[str, Any]:
        """``pulumi stack output --json``: the stack's outputs, a secret one as ``"[secret]"``
        (the CLI masks it without ``--show-secrets``), keys sorted."""
        command = "pulumi stack output --json"
        doc, stdout = self._cli_json(stack, ["stack", "output", "--json"], command)
        if not isinstance(doc, dict):
            raise EngineOutputError(stack, command, f"a JSON {type(doc).__name__}, not an object of "
                                    "outputs", output=stdout)
        return dict(sorted(doc.items()))

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
