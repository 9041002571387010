"""What every command's ``--help`` says beyond its own text, from one table: its examples, the
exit codes it can return, and which names complete its arguments — and the one exit-code table
README shows (:func:`exit_codes_markdown`, checked by ``tests/cli/test_help.py``).

Exit codes follow the habit of pulumi/kubectl/gcloud users only where it is safe: any non-zero
code fails a CI step, and the codes tell a script *why* — 2 (fix the input or the environment,
nothing changed) is never 1 (something that ran failed, or a bug). A command that cannot reach
an API it must read (no connection, a timeout, Google's 503 after its retries) has changed
nothing and exits 2, whichever command it is (``verify``, ``deploy history``, ``github
audit``); exit 1 is kept for an operation that ran and failed, and for clusterstack's bugs.

:func:`decorate` is applied to the click command tree once it is built
(:func:`clusterstack.cli._command`): it adds the epilog (examples, exit codes), cleans the help
text of docstring markup (reStructuredText roles and literals, ``Raises …`` sentences: those
are for developers) and attaches the completion of cluster, stack, service and project names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer._click import Command, Context, Parameter
from typer.core import TyperGroup

from clusterstack.errors import (EXIT_BLOCKED, EXIT_DIFFERS, EXIT_FAILED, EXIT_OK,
                                 EXIT_REFUSED)
from clusterstack.fsutil import write_atomic

if TYPE_CHECKING:   # the workspace loader (pydantic) is imported when a shell completes a name
    from clusterstack.workspace import Workspace

#: code → (short meaning for ``--help``, full meaning for README).
EXIT_CODES: Mapping[int, tuple[str, str]] = {
    EXIT_OK: ("ok", "ok: done; nothing destructive found; everything checked matches"),
    EXIT_FAILED: ("failed, or a bug",
                  "failed: an operation that ran did not succeed (a resource operation Pulumi "
                  "reported failed, a rollout that applied but is not healthy, a rollback that "
                  "could not finish), or a bug in clusterstack (`--debug` shows the traceback)"),
    EXIT_REFUSED: ("refused, nothing changed",
                   "refused, nothing changed: bad input (`error: <file>:<line>: <field>: "
                   "<problem> — <hint>`), a refusal (a confirmation not given, a locked stack), "
                   "or an environment that cannot be used (no credentials, no kube context, an "
                   "API or the network unreachable, the Pulumi CLI or the passphrase missing) — "
                   "fix what the `error:` line says and run again"),
    EXIT_BLOCKED: ("blocked by the guard",
                   "blocked by the guard: a destructive change (replace, delete, immutable "
                   "change, protect dropped) nobody reviewed; "
                   "nothing was applied (docs/making-a-change.md \"When the guard blocks\")"),
    EXIT_DIFFERS: ("the live system differs",
                   "checked, and the live system differs from what is declared: resources "
                   "missing or different (`verify`), secret or variable names (`github audit`)"),
}

# every command: ok, a failure or bug, refused (any command refuses an option or argument it
# does not take, and a stdout it cannot write, with 2)
_R = (EXIT_OK, EXIT_FAILED, EXIT_REFUSED)
_G = (*_R, EXIT_BLOCKED)                             # … and the guard

#: command path → (exit codes, examples). Every command of the CLI is here (a test walks the
#: command tree); the examples run against the shipped workspace or a lab's own.
COMMANDS: Mapping[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "": (_R, ("clusterstack validate", "clusterstack plan --all",
              "clusterstack diff --all", "clusterstack preview cw-demo-h100")),
    "plan": (_R, ("clusterstack plan cw-demo-h100", "clusterstack plan --all",
                  "clusterstack plan --all --json -o plan.json")),
    "validate": (_R, ("clusterstack validate", "clusterstack validate cw-demo-h100 --json")),
    "stacks": (_R, ("clusterstack stacks", "clusterstack stacks --json")),
    "preview": (_G, ("clusterstack preview cw-demo-h100", "clusterstack preview --all --refresh")),
    "up": (_G, ("clusterstack up cw-demo-h100", "clusterstack up cw-demo-h100 -m \"grow h100 to 40 nodes\"")),
    "guard": (_G, ("pulumi preview --json > preview.json && clusterstack guard preview.json",
                   "clusterstack guard previews/*.json --json")),
    "diff": (_G, ("clusterstack diff --all                  # against [workspace] release_branch",
                  "clusterstack diff cw-demo-h100 --base origin/main",
                  "clusterstack diff --state cw-demo-h100.export.json")),
    "verify": ((*_R, EXIT_DIFFERS), ("clusterstack verify cw-demo-h100",
                                     "clusterstack verify gcp-demo --json --timeout 30")),
    "init": (_R, ("clusterstack init ~/lab",
                  "clusterstack init ~/lab --cluster cw-h200 --provider coreweave --region US-EAST-04A "
                  "--instance-type gd-8xh200ib-i128 --nodes 16 --node-cpu 128 --node-ram 2048GB "
                  "--node-disk 27.94TiB --gpus 8 --gpu-model H200")),
    "schema": (_R, ("clusterstack schema cluster > cluster.schema.json",)),
    "inventory": (_R, ("clusterstack inventory", "clusterstack inventory cw-demo-gb200 --markdown")),
    "version": (_R, ("clusterstack version", "clusterstack version --json")),
    "ci": (_G, ("clusterstack ci stacks --changed-since origin/main --json",
                "clusterstack ci preview --all --out previews/")),
    "ci stacks": (_R, ("clusterstack ci stacks --changed-since origin/main --json",)),
    "ci preview": (_G, ("clusterstack ci preview --all --out previews/ -j 4",)),
    "ci comment": (_R, ("clusterstack ci comment previews/ --output comment.md",
                        "clusterstack ci comment previews/ --post --repo example/lab --pr 42")),
    "ci rollouts": (_R, ("clusterstack ci rollouts --changed-since origin/main --json",)),
    "ci drift": (_R, ("clusterstack ci drift --out drift/ --issue --repo example/lab",)),
    "ci deployment-check": (_R, ("clusterstack ci deployment-check --pr 42 --repo example/lab --dry-run",)),
    "deploy": (_G, ("clusterstack deploy list", "clusterstack deploy echo rollout",
                    "clusterstack deploy echo history")),
    "deploy list": (_R, ("clusterstack deploy list --json",)),
    "deploy history": (_R, ("clusterstack deploy echo history", "clusterstack deploy logrelay history --json")),
    "deploy rollout": (_G, ("clusterstack deploy echo rollout -m \"echo: log level debug\"",
                            "clusterstack deploy echo rollout -c echo:maxInstances=5 --yes")),
    "deploy rollback": (_R, ("clusterstack deploy echo rollback",
                             "clusterstack deploy logrelay rollback --to-revision 7")),
    "import": (_G, ("clusterstack import generate cw-demo-h100 -o ~/adopt.json",
                    "clusterstack import apply cw-demo-h100 -f ~/adopt.json")),
    "import generate": (_R, ("clusterstack import generate cw-demo-h100 -o ~/adopt.json",
                             "clusterstack import generate gcp-demo --live -o ~/adopt.json")),
    "import apply": (_G, ("clusterstack import apply cw-demo-h100 -f ~/adopt.json",)),
    "import report": (_R, ("clusterstack import report cw-demo-h100 --live",
                           "clusterstack import report gcp-demo --live-dump live.json --json")),
    "import migrate": (_R, ("clusterstack import migrate cw-demo-h100 --export ~/old.export.json "
                            "-o ~/migrated.json",)),
    "import state": (_G, ("clusterstack import state cw-demo-h100 -f ~/migrated.json --export "
                          "~/old.export.json --retire-script ~/retire-old-stack.sh",)),
    "service": (_R, ("clusterstack service new api --image "
                     "us-central1-docker.pkg.dev/example-lab/apps/api@sha256:"
                     "3f1c9a6e2b7d4c8a9e0f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60 --region us-central1",)),
    "service new": (_R, ("clusterstack service new api --image "
                         "us-central1-docker.pkg.dev/example-lab/apps/api@sha256:"
                         "3f1c9a6e2b7d4c8a9e0f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60 --region us-central1",)),
    "iam": (_R, ("clusterstack iam grant alice@example.org --role roles/viewer",
                 "clusterstack iam review --base origin/main")),
    "iam init": (_R, ("clusterstack iam init --project example-lab",)),
    "iam grant": (_R, ("clusterstack iam grant alice@example.org --role roles/viewer",
                       "clusterstack iam grant human-004 --role roles/storage.objectViewer --on bucket:example-lab-data")),
    "iam revoke": (_R, ("clusterstack iam revoke human-004 --role roles/viewer",)),
    "iam review": (_R, ("clusterstack iam review --base origin/main", "clusterstack iam review --redact --json")),
    "iam whois": (_R, ("clusterstack iam whois human-004",)),
    "iam decrypt": (_R, ("clusterstack iam decrypt --out ~/people.txt",)),
    "iam rotate": (_R, ("clusterstack iam rotate",)),
    "iam adopt": (_R, ("clusterstack iam adopt ../marin/infra/iam_data.yaml",)),
    "iam fmt": (_R, ("clusterstack iam fmt",)),
    "iam check": (_R, ("clusterstack iam check", "clusterstack iam check --json")),
    "iam scan": (_R, ("clusterstack iam scan --json",)),
    "iam audit-keys": (_R, ("clusterstack iam audit-keys --max-age 90",
                            "clusterstack iam audit-keys --rotate --yes")),
    "stack": (_R, ("clusterstack stack ls", "clusterstack stack init cw-demo-h100",
                   "clusterstack stack rename cw-demo-gb200 cw-gb200-west")),
    "stack init": (_R, ("clusterstack stack init cw-demo-h100",)),
    "stack ls": (_R, ("clusterstack stack ls --json",)),
    "stack rename": (_R, ("clusterstack stack rename cw-demo-gb200 cw-gb200-west",
                          "clusterstack stack rename cw-demo-gb200 cw-gb200-west --files-only")),
    "github": ((*_R, EXIT_DIFFERS), ("clusterstack github audit --repo example/lab",)),
    "github audit": ((*_R, EXIT_DIFFERS), ("clusterstack github audit --repo example/lab --json",)),
    "cluster": (_R, ("clusterstack cluster new gcp-lab --provider gcp --project example-lab",)),
    "cluster new": (_R, ("clusterstack cluster new cw-h100 --provider coreweave --region US-WEST-04A "
                         "--instance-type gd-8xh100ib-i128 --nodes 8 --node-cpu 128 --node-ram 2048GB "
                         "--node-disk 27.94TiB --gpus 8 --gpu-model H100",
                         "clusterstack cluster new gcp-lab --provider gcp --project example-lab")),
}


def exit_codes_line(codes: tuple[int, ...]) -> str:
    """``0 ok · 1 failed, or a bug · 2 refused, nothing changed`` for ``codes`` (sorted)."""
    return " · ".join(f"{c} {EXIT_CODES[c][0]}" for c in sorted(codes))


def epilog(path: str) -> str:
    """The epilog of the command at ``path`` (``"deploy rollout"``; ``""`` the root, which
    lists every code with its meaning): its examples, then its exit codes, each paragraph kept
    as written (click's ``\\b`` marker). Raises KeyError for a command missing from
    :data:`COMMANDS`."""
    codes, examples = COMMANDS[path]
    ex = "\n".join(f"  {e}" for e in examples)
    if not path:
        table = "\n".join(f"  {c}  {short}" for c, (short, _) in EXIT_CODES.items())
        return (f"\b\nExamples:\n{ex}\n\n\b\nExit codes (each command's --help shows its "
                f"own; README explains them):\n{table}")
    return f"\b\nExamples:\n{ex}\n\n\b\nExit codes: {exit_codes_line(codes)}"


def exit_codes_markdown() -> str:
    """README's exit-code table: every code, its meaning, and the commands that can return it
    ("every command" when each command of :data:`COMMANDS` lists it: 0, 1 and 2)."""
    rows = ["| code | meaning | returned by |", "| ---: | --- | --- |"]
    for code, (_, meaning) in EXIT_CODES.items():
        if all(code in codes for codes, _ in COMMANDS.values()):
            who = "every command"
        else:
            who = ", ".join(f"`{p}`" for p, (codes, _) in COMMANDS.items()
                            if code in codes and _is_leaf(p))
        rows.append(f"| {code} | {meaning} | {who} |")
    return "\n".join(rows) + "\n"


def _is_leaf(path: str) -> bool:
    return bool(path) and not any(p.startswith(path + " ") for p in COMMANDS)


#: The lines around the generated table in README.md (:func:`write_readme`).
README_BEGIN = "<!-- exit codes: generated from src/clusterstack/cli/help.py by `python -m clusterstack.cli.readme README.md` -->"
README_END = "<!-- end of exit codes -->"


def readme_with_table(text: str) -> str:
    """``text`` (README.md) with the block between :data:`README_BEGIN` and
    :data:`README_END` replaced by :func:`exit_codes_markdown`. Raises ValueError when the
    markers are missing."""
    head, sep, rest = text.partition(README_BEGIN + "\n")
    _, sep2, tail = rest.partition(README_END)
    if not (sep and sep2):
        raise ValueError(f"README has no {README_BEGIN!r} … {README_END!r} block")
    return f"{head}{README_BEGIN}\n{exit_codes_markdown()}{README_END}{tail}"


def write_readme(path: Path) -> None:
    """Rewrite the exit-code table of the README at ``path`` (:func:`readme_with_table`), the
    file replaced whole (:func:`clusterstack.fsutil.write_atomic`). Raises OSError when it
    cannot be read or written, ValueError when it has no table block."""
    write_atomic(path, readme_with_table(path.read_text(encoding="utf-8")))


# --- help text ------------------------------------------------------------------------------

_ROLE_IN_PARENS = re.compile(r"\s*\(:[a-z]+:`[^`]*`\)")
_ROLE = re.compile(r":[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``", re.S)
_RAISES = re.compile(r"\s*Raises [^.]*(?:\.(?=\s|$)|$)")


def clean(text: str) -> str:
    """A docstring as plain help: what is after a form feed dropped (click's own rule), a
    reStructuredText role in parentheses dropped (``(:func:`x`)``), any other role shown as its
    last name (``:class:`~a.B``` → ```B```), double backquotes as single ones, and a sentence
    ``Raises …`` (the exceptions a developer catches) removed."""
    text = text.partition("\f")[0]
    text = _ROLE_IN_PARENS.sub("", text)
    text = _ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    text = _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)
    return _RAISES.sub("", text).rstrip()


# --- completion -----------------------------------------------------------------------------

def _workspace(ctx: Context) -> Workspace | None:
    """The workspace a completion is for: ``--root`` on the line, else discovered from the
    working directory; None when there is none (a completion never fails)."""
    from clusterstack.workspace import Workspace

    root = ctx.find_root().params.get("root")
    try:
        return Workspace.load(Path(root)) if root else Workspace.discover(Path.cwd())
    except Exception:   # no workspace here, or a broken one: nothing to offer
        return None


def cluster_names(ws: Workspace) -> list[str]:
    """The clusters of ``ws`` (one stack each)."""
    return list(ws.cluster_names())


def stack_names(ws: Workspace) -> list[str]:
    """Every stack of every project (what `plan --all` covers)."""
    from clusterstack.workspace import ProjectInfo

    names = list(ws.cluster_names())
    for ref in ws.projects:
        names += ProjectInfo.load(ref.directory).stacks()
    return names


def service_names(ws: Workspace) -> list[str]:
    """The services of ``services.yaml`` (through the one loader of it)."""
    from clusterstack.deploy.registry import load_registry

    return sorted(load_registry(ws).services)


def project_keys(ws: Workspace) -> list[str]:
    """The ``[projects]`` keys of ``clusterstack.toml``."""
    return [ref.key for ref in ws.projects]


def _schema_kinds(_ws: Workspace | None) -> list[str]:
    from clusterstack.schemas import KINDS

    return list(KINDS)


#: (command path or ``*`` any, parameter name) → the names it completes with.
COMPLETIONS = {
    ("*", "clusters"): cluster_names, ("*", "cluster"): cluster_names,
    ("stack rename", "old"): cluster_names, ("ci preview", "names"): stack_names,
    ("*", "service"): service_names, ("*", "projects"): project_keys,
    ("schema", "kind"): _schema_kinds,
}


def _completer(names):
    def complete(ctx: Context, _param: Parameter, incomplete: str) -> list[str]:
        ws = _workspace(ctx) if names is not _schema_kinds else None
        if ws is None and names is not _schema_kinds:
            return []
        try:
            found = names(ws)
        except Exception:   # a broken file: offer nothing rather than a traceback in the shell
            return []
        return [n for n in found if n.startswith(incomplete)]
    return complete


def commands(root: Command, path: str = "") -> Iterator[tuple[str, Command]]:
    """``(path, command)`` of ``root`` and every command below it, through click's own
    ``list_commands``/``get_command`` of each group — which loads a lazy group's commands
    (:class:`clusterstack.cli.LazyGroup`): the whole tree."""
    yield path, root
    if isinstance(root, TyperGroup):
        ctx = Context(root)
        for name in sorted(root.list_commands(ctx)):
            sub = root.get_command(ctx, name)
            if sub is not None:   # every listed name is one the group builds
                yield from commands(sub, f"{path} {name}".strip())


def _built(root: Command, path: str) -> Iterator[tuple[str, Command]]:
    """``(path, command)`` of ``root`` and of the commands below it already built (a group's
    ``commands``): what :func:`decorate` can reach without loading anything."""
    yield path, root
    for name, sub in sorted(getattr(root, "commands", {}).items()):
        yield from _built(sub, f"{path} {name}".strip())


def _metavar(param: Any) -> str:
    """What an option's value is called in help (``--timeout N``, ``--out PATH``, ``--role
    ROLE``), instead of typer's Python type (``<list[str]>``, ``<int range>``)."""
    from typing import get_args, get_origin

    kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if get_origin(kind) is list:
        (kind,) = get_args(kind)
    if kind in (int, float):
        return "N"
    if kind is Path:
        return "PATH"
    return max(param.opts, key=len).lstrip("-").upper().replace("-", "_")


def _usage_piece(param: Any, _ctx: Any = None) -> list[str]:
    """An argument as the usage line shows it, by click's rule (click ``Argument.make_metavar``)
    and pulumi's usage lines: ``CLUSTER`` required, ``[CLUSTER]`` optional, ``...`` after one
    that repeats — ``up [OPTIONS] CLUSTER``, ``ci preview [OPTIONS] [STACK]...`` (typer shows a
    required one in braces, ``{CLUSTER}``, which reads as a choice)."""
    name = param.metavar if param.required else f"[{param.metavar}]"
    return [name if param.nargs == 1 else f"{name}..."]


def decorate(root: Any, path: str = "") -> Any:
    """Add to every command built of the click tree ``root`` (the command at ``path``: ``""``
    the root, ``"iam"`` the loaded ``iam`` group) its epilog (:func:`epilog`), clean its help
    text (:func:`clean`) and parameter names (:func:`_metavar`; an argument shows its name
    only), and attach the completion of its name arguments (:data:`COMPLETIONS`, set as click's
    ``shell_complete`` of the parameter). A lazy group's commands are decorated as they load
    (:func:`clusterstack.cli.load`). Returns ``root``."""
    for path, cmd in _built(root, path):
        if cmd.help:
            cmd.help = clean(cmd.help)
        if path in COMMANDS:
            cmd.epilog = epilog(path)
        for param in getattr(cmd, "params", ()):
            names = COMPLETIONS.get((path, param.name)) or COMPLETIONS.get(("*", param.name))
            if names is not None:
                # click's Parameter(shell_complete=…) keeps it here (click core.py Parameter)
                param._custom_shell_complete = _completer(names)
            if param.param_type_name == "argument":
                # typer adds the "..." of a repeatable argument itself
                param.metavar = (param.metavar or param.name.upper()).removesuffix("...")
                param.display_type_rich = lambda ctx: None   # the name says it: no <list[Path]>
                param.get_usage_pieces = functools.partial(_usage_piece, param)
            elif param.metavar is None and not param.is_flag and not param.count \
                    and "--help" not in param.opts:
                param.metavar = _metavar(param)
    return root
