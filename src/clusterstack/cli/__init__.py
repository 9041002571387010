"""The ``clusterstack`` command line (typer + rich).

Thin by rule: a command parses its arguments, takes the :class:`~clusterstack.clients.Clients`
of this run (:func:`clients`), calls a library flow, renders the result and sets the exit code.
:func:`main` builds the production Clients unless it is given some (tests).

Exit codes: one table for every command, :mod:`clusterstack.cli.help` (0 ok, 1 failed or a
bug, 2 refused with nothing changed, 3 blocked by the guard, 4 the live system differs); every
``--help`` shows a command's own. Tracebacks only with ``--debug``.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import signal
import sys
from collections.abc import Mapping
from gettext import gettext
from pathlib import Path
from typing import Any, Callable, NamedTuple

import typer
from rich.console import Console
# typer's own click (typer vendors it: typer/_click, "Code taken and adapted from Click" 8.3.1)
from typer._click import Command, Context, HelpFormatter
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer._click.shell_completion import CompletionItem
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup
from typer.models import TyperInfo

from clusterstack.clients import Clients
from clusterstack.errors import ClusterstackError, one_line, os_error
from clusterstack import signals
from clusterstack.cli.help import decorate
from clusterstack.fsutil import arm_import_testpoint
from clusterstack.redact import redact_text


class Lazy(NamedTuple):
    """Where a command of :data:`SUBCOMMANDS` is defined, and what the root ``--help`` says of it."""

    #: The module whose ``app`` (a ``typer.Typer``) registers the command under its name.
    module: str
    #: The first sentence of its help as the listing shows it (``clean``-ed; click shortens it to
    #: the width, ``make_default_short_help``); tests/cli/test_help.py holds it to the command's own.
    help: str


#: Every command of ``clusterstack``, in the order the root ``--help`` lists them. A command's
#: module (and with it the flows, models and views it imports at its top) is imported only when
#: that command runs, shows its help or completes a name — click's "Lazily Loading Subcommands"
#: (click documentation, "Complex Applications"): ``--help`` and the commands that plan nothing
#: load no flow they do not run.
SUBCOMMANDS: Mapping[str, Lazy] = {
    "plan": Lazy("clusterstack.cli.plan", "Show what each stack declares, offline: the real "
                 "program under Pulumi's mock runtime."),
    "validate": Lazy("clusterstack.cli.commands", "Check offline everything `plan --all` and "
                     "`deploy` would reject: cluster configs (and, for named clusters, the configs "
                     "that reference them), the clusters directory, stack files and program entry "
                     "points, [guard], [projects] configs, services.yaml and the IAM file."),
    "stacks": Lazy("clusterstack.cli.commands", "List the stacks of every project: the cluster "
                   "stacks (one per cluster, with the cluster each stack file points at), then "
                   "each [projects] project's stacks (what `plan --all` covers)."),
    "preview": Lazy("clusterstack.cli.engine", "Engine preview per stack: grouped diff, then the "
                    "guard verdict."),
    "up": Lazy("clusterstack.cli.engine", "Preview → guard → summary → confirmation → update, "
               "with every step checked again."),
    "guard": Lazy("clusterstack.cli.guard", "Check saved previews or event logs against the guard "
                  "policy of clusterstack.toml; exit 3 when any is blocked."),
    "diff": Lazy("clusterstack.cli.diff", "Static plan diff: what changes between REF (or a state "
                 "file) and the working tree, and which changes would be destructive on apply "
                 "(exit 3)."),
    "verify": Lazy("clusterstack.cli.verify", "Check, read-only, that every resource the stack "
                   "owns exists and is the declared one."),
    "init": Lazy("clusterstack.cli.scaffold", "Create a workspace in DIRECTORY (empty, or an "
                 "existing repository): a commented clusterstack.toml (lab-wide values given — "
                 "--acme-email, --allow-source, --dns-zone-id, --dns-token — go to its [defaults], "
                 "so `cluster new` needs them no more), the Pulumi project (infra/Pulumi.yaml, "
                 "infra/__main__.py), editor schemas, .gitignore entries and the GitHub workflows "
                 "— and with --cluster, a first cluster and its stack file."),
    "schema": Lazy("clusterstack.cli.scaffold", "Print the JSON Schema of a reviewed file (for "
                   "editors: a yaml-language-server `# yaml-language-server: $schema=<file>` "
                   "modeline, or the editor's schema settings)."),
    "inventory": Lazy("clusterstack.cli.inventory", "Capacity per cluster and pool (nodes "
                      "min–max, racks, GPUs per node, GPUs, monthly cost), the GPU quota and "
                      "monthly cost per ClusterQueue and team, and each pool's reservation (id, "
                      "end date, committed nodes; a warning within [cost] reservation_warn_days "
                      "of the end)."),
    "version": Lazy("clusterstack.cli.version", "Print the version of clusterstack, Python, the "
                    "Pulumi SDK and the Pulumi CLI (`not found` when it is not on PATH)."),
    "ci": Lazy("clusterstack.cli.ci", "CI: affected stacks, multi-stack preview, the PR comment, "
               "rollouts, drift, deployment checks."),
    "deploy": Lazy("clusterstack.cli.deploy", "Roll services out and back: `deploy <service> "
                   "rollout|history|rollback`, `deploy list`."),
    "import": Lazy("clusterstack.cli.imports", "Adopt what already runs: from live objects "
                   "(generate, report, apply) or from an existing Pulumi stack (migrate, state)."),
    "iam": Lazy("clusterstack.cli.iam", "IAM as reviewed code: encrypted principals, grants, "
                "reviews, key rotation and audits."),
    # rename.py adds `stack rename` to engine.py's `stack` group: importing it completes the group
    "stack": Lazy("clusterstack.cli.rename", "Create and list stacks in the state backend."),
    "github": Lazy("clusterstack.cli.github", "The GitHub repository policy (the github/ Pulumi "
                   "project)."),
    "cluster": Lazy("clusterstack.cli.scaffold", "Add a cluster to the workspace from a template."),
    "service": Lazy("clusterstack.cli.scaffold", "Add a service (services.yaml) from a template."),
}


def load(name: str) -> Command:
    """The click command ``name`` of :data:`SUBCOMMANDS`: its module imported, the command built
    from that module's ``app`` as typer builds the whole tree (with :data:`app`'s settings:
    plain help, no pretty exceptions) and decorated (:func:`~clusterstack.cli.help.decorate`).
    Raises KeyError for a name not in :data:`SUBCOMMANDS`."""
    holder = importlib.import_module(SUBCOMMANDS[name].module).app
    group = typer.main.get_group_from_info(
        TyperInfo(holder), pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode, suggest_commands=True)
    return decorate(group.commands[name], name)


def _short_help(text: str, limit: int) -> str:
    """What click's ``Command.get_short_help_str(limit)`` gives for a command whose help is
    ``text`` (no ``short_help``, not deprecated)."""
    return make_default_short_help(text, limit).strip()


class LazyGroup(TyperGroup):
    """The root command group: :data:`SUBCOMMANDS`, each built by :func:`load` the first time
    click asks for it by name (to run it, show its help, complete its arguments), and the
    commands registered on :data:`app` itself. Listing the commands (the root ``--help``,
    completing a command name, suggesting one for a typo) loads none of them."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*SUBCOMMANDS, *(n for n in self.commands if n not in SUBCOMMANDS)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.commands[cmd_name] = load(cmd_name)
        return self.commands.get(cmd_name)

    def _listing(self, ctx: Context, prefix: str = "") -> list[tuple[str, Callable[[int], str]]]:
        """The visible commands whose names start with ``prefix``, each with its short help at
        a width (click's ``get_short_help_str``): the command's own when it is built, else the
        shortening of the :data:`SUBCOMMANDS` sentence, by the same rule."""
        rows: list[tuple[str, Callable[[int], str]]] = []
        for name in self.list_commands(ctx):
            if not name.startswith(prefix):
                continue
            if name in self.commands:
                cmd = self.commands[name]
                if not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str))
            elif name in SUBCOMMANDS:
                rows.append((name, functools.partial(_short_help, SUBCOMMANDS[name].help)))
        return rows

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        # TyperGroup.format_commands (typer/core.py), over the listing
        rows = self._listing(ctx)
        if rows:
            limit = formatter.width - 6 - max(len(n) for n, _ in rows)
            with formatter.section(gettext("Commands")):
                formatter.write_dl([(n, short(limit)) for n, short in rows])

    def shell_complete(self, ctx: Context, incomplete: str) -> list[CompletionItem]:
        # TyperGroup.shell_complete: the command names, then the group's own options
        return [*(CompletionItem(n, help=short(45)) for n, short in self._listing(ctx, incomplete)),
                *Command.shell_complete(self, ctx, incomplete)]

    def resolve_command(self, ctx: Context,
                        args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        # typer suggests among the commands built (`self.commands`); this group (built with
        # suggest_commands=False) suggests among every command, in typer's words
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            matches = difflib.get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches:
                suggestions = ", ".join(f"{m!r}" for m in matches)
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {suggestions}?"
            raise


# rich_markup_mode=None: help text is plain (docstrings mention TOML tables like [guard],
# which Rich markup would silently drop).
# -h as well as --help (kubectl, gcloud and git habits); subcommands inherit it (click Context
# takes help_option_names from its parent).
# cls=LazyGroup: the commands of SUBCOMMANDS, each loaded when used; it suggests a command for a
# typo among all of them itself (suggest_commands=False: typer's own looks at the loaded ones).
app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, cls=LazyGroup, suggest_commands=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="ML training cluster infrastructure as code on Pulumi.")
# Not a terminal (CI logs, pipes, `make demo` under a runner): no width limit at all, so trees
# and tables are never cropped — rich crops a tree's labels at the console width (soft_wrap:
# no wrapping), and any fixed width (it was 200) cut long resource names mid-word. Nothing
# printed fills the width (no rules, no expanding tables), so a vast width costs nothing.
# (No stdout at all — started with `>&-` — is not a terminal either; :func:`entrypoint` refuses it.)
UNLIMITED_WIDTH = 1_000_000
_WIDTH = None if sys.stdout is not None and sys.stdout.isatty() else UNLIMITED_WIDTH
# NO_COLOR (no-color.org: set and non-empty): no ANSI styling at all — rich drops only the
# colours by itself and keeps bold/italic; color_system=None drops every style. NO_COLOR wins
# over FORCE_COLOR (which rich reads as "pretend to be a terminal": spinners and cursor
# moves in a log): with NO_COLOR set, a console is a terminal only when its stream is one.
_NO_COLOR = bool(os.environ.get("NO_COLOR"))


def _plain(stream: Any) -> dict[str, Any]:
    if not _NO_COLOR:
        return {}
    try:
        tty = bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    return {"color_system": None, "force_terminal": tty}
# emoji=False: rich turns ":name:" into an emoji even with markup off — a key such as
# "a:warning:" in an error must print as written.


class _Console(Console):
    """rich's Console, but a closed pipe raises BrokenPipeError for :func:`main` to answer
    (rich's own ``on_broken_pipe`` exits 1 — this tool's code for an internal bug; rich
    documents overriding it, ``rich/console.py`` ``Console.on_broken_pipe``)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


out = _Console(highlight=False, emoji=False, soft_wrap=True, width=_WIDTH, **_plain(sys.stdout))
err = _Console(stderr=True, highlight=False, emoji=False, soft_wrap=True, width=_WIDTH, **_plain(sys.stderr))


class State:
    root: Path | None = None     # --root; None: discovered from the working directory
    debug: bool = False
    clients: Clients | None = None


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out.print(f"clusterstack {version('clusterstack')}", markup=False)
        raise typer.Exit(0)


@app.callback()
def _global(root: Path = typer.Option(None, "--root", help="Repository root (holds clusterstack.toml; "
                                      "default: the nearest one at or above the working directory)."),
            debug: bool = typer.Option(False, "--debug", help="Show tracebacks (accepted anywhere on the line)."),
            version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                         help="Print the version and exit.")) -> None:
    State.root = root
    State.debug = State.debug or debug


def workspace():
    """The workspace of this run: ``--root``'s, else the nearest ``clusterstack.toml`` at or
    above the working directory (:meth:`Workspace.discover`). Raises ConfigError."""
    from clusterstack.workspace import Workspace
    if State.root is not None:
        return Workspace.load(State.root)
    return Workspace.discover(Path.cwd())


def is_interactive(as_json: bool = False) -> bool:
    """True when a progress display may be drawn: stderr is a terminal and the output is not
    JSON (machine output and CI logs stay free of spinners)."""
    return not as_json and err.is_terminal


def status(as_json: bool = False):
    """The ``progress=`` of a flow (``with progress("planning …"):``) for work that can take
    more than a second: rich's status spinner on stderr, or a no-op when
    :func:`is_interactive` is False."""
    import contextlib

    if is_interactive(as_json):
        return err.status
    return lambda text: contextlib.nullcontext()


def clients() -> Clients:
    """The clients of this run (given to :func:`main`, else the production ones)."""
    if State.clients is None:
        State.clients = Clients.production()
    return State.clients


def ask(prompt: str) -> str | None:
    """Print ``prompt`` on stderr and read one line from stdin; None when stdin is closed
    (no terminal, CI): a confirmation that cannot be typed is a refusal. The ``prompt=`` of
    every flow that asks the operator."""
    err.print(prompt, end="", markup=False)
    try:
        return input().strip()
    except EOFError:
        err.print()
        return None


def dump_json(doc: Any) -> str:
    """THE JSON convention of every ``--json``: one document, keys sorted at every level,
    2-space indent, UTF-8 as is (``ensure_ascii=False``), one trailing newline; values that are
    not JSON types (datetimes, paths) as ``str``. Same input, byte-identical text."""
    import json

    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def emit_json(doc: Any) -> None:
    """Write ``doc`` (:func:`dump_json`) to stdout, the only thing a ``--json`` run prints
    there; messages go to stderr and a user error still exits 2 with ``error: …`` lines."""
    out.file.write(dump_json(doc))
    out.file.flush()


def say(line: str) -> None:
    """A flow's ``report=``: one plain line on stdout (no rich markup: URNs hold ``[``)."""
    out.print(line, markup=False)


def warn(line: str) -> None:
    """A flow's ``warn=``: one plain line on stderr."""
    err.print(line, markup=False)


def error_lines(exc: ClusterstackError) -> list[str]:
    """The ``error: …`` lines of ``exc``, one per problem, emails redacted by the one rule of
    :func:`clusterstack.redact.redact_text` (CI logs are public; service accounts stay
    readable) — whichever loader or flow raised it."""
    root = message_root()
    return [f"error: {redact_text(p.render(root))}" for p in exc.problems]


def message_root() -> Path | None:
    """The directory paths in messages are shown relative to: ``--root``, else the nearest
    directory at or above the working directory holding ``clusterstack.toml`` (the workspace
    discovery rule, without loading it: the error may be in that file), else None."""
    from clusterstack.workspace import WORKSPACE_FILE

    if State.root is not None:   # a --root without clusterstack.toml: paths stay absolute
        return State.root if (State.root / WORKSPACE_FILE).is_file() else None

    here = Path.cwd()
    return next((d for d in (here, *here.parents) if (d / WORKSPACE_FILE).is_file()), None)


_built: list = []   # [(the registrations it was built from, the click command)]


def _command() -> Command:
    """``app`` as its click command (a :class:`LazyGroup`), built once per set of commands
    registered on it: ``app()`` rebuilds the tree on every call (typer ``Typer.__call__`` →
    ``get_command``), and in-process callers (the tests) run :func:`main` many times — the
    commands loaded stay loaded. With ``pretty_exceptions_enable=False`` typer's ``__call__``
    adds nothing else."""
    key = (tuple(map(id, app.registered_commands)), tuple(map(id, app.registered_groups)))
    if not _built or _built[0][0] != key:
        # examples, exit codes, clean help texts and name completion: one table (cli/help.py)
        _built[:] = [(key, decorate(typer.main.get_command(app)))]
    return _built[0][1]


def main(argv: list[str] | None = None, *, clients: Clients | None = None) -> int:
    """Run the CLI; returns the process exit code. ``clients``: the outside systems' clients
    (None: :meth:`Clients.production`, built lazily).

    Every way out is a code and at most a few ``error: …`` lines, never a traceback (unless
    ``--debug``): 2 for a user error, a bad argument (click's usage errors, in the house
    ``error: … — hint`` form) and any failure of the outside world (a full disk, a read-only
    tree, a closed pipe — :func:`clusterstack.errors.os_error`); 130/143 for SIGINT/SIGTERM
    (:mod:`clusterstack.signals`); 1 only for a bug."""
    State.clients = clients
    State.root, State.debug = None, False
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug anywhere on the line (the errors suggest it after the subcommand too); not
    # after `--`, where arguments are data.
    end = argv.index("--") if "--" in argv else len(argv)
    if "--debug" in argv[:end]:
        State.debug = True
        argv = [a for i, a in enumerate(argv) if not (i < end and a == "--debug")]
    arm_import_testpoint()
    with signals.handling():
        try:
            return _run(argv)
        except (KeyboardInterrupt, signals.Terminated) as exc:
            return _interrupted(exc)


def _run(argv: list[str]) -> int:
    try:
        # With standalone_mode=False click returns the code of a `typer.Exit(n)` instead of
        # raising it; a command that simply returns gives None.
        rv = _command().main(args=argv, standalone_mode=False, prog_name="clusterstack")
        if rv == 130 and signals.received() is not None:
            raise KeyboardInterrupt   # typer turns a Ctrl-C into a silent return of 130
        return rv if isinstance(rv, int) else 0
    except ClusterstackError as exc:
        if exc.exit_code == 1 and signals.received() is not None:
            raise KeyboardInterrupt from None  # a failure the interruption caused
        if State.debug:
            err.print_exception()
        return _report(error_lines(exc), exc.exit_code)
    except BrokenPipeError:  # `plan --all | head`: the reader has gone; no "internal error"
        _silence_closed_pipes()
        return 128 + 13  # as a shell reports a process ended by SIGPIPE
    except OSError as exc:  # the outside world: a full disk, a read-only tree, /dev/full …
        if State.debug:
            err.print_exception()
        return _report(error_lines(os_error(exc)), 2)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            # click's own answer to EPIPE on output (click/core.py `BaseCommand.main`: the
            # streams wrapped, exit 1) — 1 is this tool's code for an internal bug
            _silence_closed_pipes()
            return 128 + 13
        return int(exc.code or 0)
    except Exception as exc:  # click usage errors and the like
        if isinstance(exc, NoArgsIsHelpError):   # `clusterstack iam`: the help, as asked
            try:
                exc.show()
            except OSError:
                _silence_closed_pipes()
            return 2
        if isinstance(exc, UsageError):
            return _report([_usage_line(exc)], 2)
        if isinstance(exc, ClickException):
            return _report([f"error: {exc.format_message()}"], 2)
        if isinstance(exc, typer.Abort):  # click: a prompt answered with Ctrl-C or end of input
            raise KeyboardInterrupt from None
        if signals.received() is not None:
            raise KeyboardInterrupt from None  # a failure the interruption caused
        if State.debug:
            raise
        return _report([f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)"], 1)


def _usage_line(exc: Any) -> str:
    """click's usage error as the house line: ``error: <what> — run `<command> --help```
    (instead of click's ``Usage:``/``Error:`` block)."""
    ctx = getattr(exc, "ctx", None)
    # the command path without click's program name (`python -m …`, a test runner's argv[0])
    words = ctx.command_path.split(" ")[1:] if ctx is not None else []
    command = " ".join(["clusterstack", *words])
    message = one_line(exc.format_message().strip().rstrip("."))
    return f"error: {message} — run `{command} --help` for the usage"


def _report(lines: list[str], code: int) -> int:
    """Print ``lines`` on stderr and return ``code`` — which stands even when stderr cannot
    be written (a closed pipe, /dev/full)."""
    try:
        for line in lines:
            err.print(line, markup=False)
        err.file.flush()
    except (BrokenPipeError, OSError):  # `clusterstack validate 2>&1 | head -1`, 2>/dev/full
        _silence_closed_pipes()
    return code


def _interrupted(exc: BaseException) -> int:
    """The one line for a run stopped by SIGINT/SIGTERM, and its exit code (130/143)."""
    signum = getattr(exc, "signum", None) or signals.received() or int(signal.SIGINT)
    return _report([f"error: interrupted by {signals.name(signum)} — nothing was left half-written "
                    "(every file is replaced whole or not at all); run the command again"],
                   signals.exit_code(signum))


def _silence_closed_pipes() -> None:
    """Point stdout and stderr at /dev/null so that the interpreter's last flush at exit does
    not raise again on the closed pipe (the Python documentation's note on SIGPIPE,
    ``signal`` module: "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass  # not a real file (a test's capture): nothing to flush at exit
    os.close(devnull)


def entrypoint() -> None:
    """The ``clusterstack`` executable: :func:`main`, then stdout flushed here — a write error
    at the interpreter's own last flush (stdout on /dev/full, a closed pipe) would print
    "Exception ignored" and exit 120 instead of this tool's codes."""
    if sys.stdout is None:   # started with stdout closed (`>&-`)
        if sys.stderr is not None:
            sys.stderr.write("error: standard output is closed — give the command an open one "
                             "(e.g. `> /dev/null` to discard it)\n")
        os._exit(2)
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_closed_pipes()
        code = code or 128 + 13
    except OSError as exc:
        code = _report([f"error: cannot write the output: {exc.strerror or exc} — give the command "
                        "a standard output it can write to"], 2) if code == 0 else code
        _silence_closed_pipes()
    sys.exit(code)
