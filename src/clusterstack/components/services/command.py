"""A service job deployed by an external deploy CLI (e.g. a scheduler's own ``deploy`` command)
through ``pulumi-command``'s ``local.Command``.

How the CLI is driven (pulumi-command ``local.Command`` reference):
- ``create`` / ``update`` run the deploy CLI with the job's *canonical spec* on stdin. The
  provider re-runs the command (``update``) when an input changes, so the inputs are chosen to
  change exactly when a re-run is due: ``stdin`` — the canonical spec (sorted keys, no
  insignificant whitespace: reformatting the spec does not re-run it), and the environment
  variable ``CLUSTERSTACK_SOURCE_SHA256`` — the SHA-256 over the service's git-tracked source
  files (:func:`source_digest`), so a code change re-deploys even when the spec is unchanged.
- ``delete`` runs the CLI's delete command when the job is removed from the program.
- ``addPreviousOutputInEnv`` is off: a re-run sees only its inputs.
- The CLI prints one JSON object on stdout; :func:`parse_outputs` turns it into the
  component's ``outputs`` (anything else — nothing, two documents, a non-object — fails the
  update with the text it got).
- Secrets: the CLI inherits the Pulumi process's environment (the provider plugin runs as a
  child of the engine), where ``clusterstack deploy <service> rollout`` puts the secrets it
  resolved from the registry. They are never an input of the command, so never in state.

The program computes the spec and the digest (components never read files): see
:func:`canonical_spec`, :func:`tracked_files` and :func:`source_digest`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import pulumi
import pulumi_command as command

from clusterstack import reads
from clusterstack.config.document import json_loads
from clusterstack.pulumi.tokens import COMMAND_SERVICE_COMPONENT
from clusterstack.adapters.git import Git

SOURCE_DIGEST_ENV = "CLUSTERSTACK_SOURCE_SHA256"


def canonical_spec(spec: Mapping[str, Any]) -> str:
    """The canonical JSON text of a job spec: sorted keys, ``,``/``:`` separators, UTF-8 kept.
    Two specs that differ only in key order or formatting give the same text (RFC 8785's
    ordering idea, without its number canonicalisation: specs hold strings, ints and bools)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tracked_files(directory: Path) -> tuple[Path, ...]:
    """The files git tracks under ``directory``, sorted (``git ls-files -z``). Untracked and
    ignored files (build output, caches) never change the digest. Raises GitError (exit 2) when
    ``directory`` is not in a git work tree."""
    directory = Path(directory).resolve()
    return tuple(directory / name for name in Git(directory).tracked_files(under=directory))


def source_digest(files: Iterable[Path], base: Path) -> str:
    """SHA-256 (hex) over ``files``: one line ``<sha256 of the file> <path relative to base>``
    per file, sorted by path (the ``sha256sum`` line format), hashed as a whole. A renamed,
    added, removed or edited file changes it; the order files are given in does not. Each
    file read, and each directory from ``base`` down to it, is noted (:mod:`clusterstack.reads`:
    a plan's cache address then covers the source, and a file added under it)."""
    base = Path(base).resolve()
    files = list(files)
    dirs = {base}
    for f in files:
        reads.note(reads.FILE, f)
        dirs |= {d for d in Path(f).resolve().parents if d.is_relative_to(base)}
    for d in sorted(dirs):
        reads.note(reads.DIR, d)
    lines = sorted(f"{hashlib.sha256(Path(f).read_bytes()).hexdigest()}  {Path(f).resolve().relative_to(base).as_posix()}\n"
                   for f in files)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def parse_outputs(stdout: str | None) -> dict[str, Any]:
    """The deploy CLI's outputs: its stdout must be exactly one JSON object (surrounding
    whitespace allowed), decoded with the one JSON reader's limits
    (:func:`clusterstack.config.document.json_loads`: integers of at most 19 digits, no
    ``NaN``/``Infinity``). ``None`` (the offline mock runtime, which runs no command) gives
    ``{}``. Raises ValueError naming what was printed otherwise (it fails the update)."""
    if stdout is None:
        return {}
    text = stdout.strip()
    if not text:
        raise ValueError("the deploy command printed nothing on stdout; it must print one JSON object")
    try:
        value = json_loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the deploy command's stdout is not a single JSON document ({exc.msg} "
                         f"at line {exc.lineno} column {exc.colno}): {text[:200]!r}") from None
    except RecursionError:
        raise ValueError("the deploy command's stdout is JSON nested too deeply to read") from None
    except ValueError as exc:  # a value limit of json_loads
        raise ValueError(f"the deploy command's stdout is JSON clusterstack does not accept: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"the deploy command printed a JSON {type(value).__name__}, not an object")
    return value


@dataclass(frozen=True)
class CommandServiceArgs:
    deploy_command: tuple[str, ...]           # <service>:deployCommand — argv; reads the spec on stdin
    spec: str                                 # canonical_spec(<service>:spec)
    source_sha256: str                        # source_digest(tracked_files(<project dir>), …)
    delete_command: tuple[str, ...] = ()      # <service>:deleteCommand — argv run on removal
    working_dir: str | None = None            # <service>:workingDir — where the CLI runs
    environment: tuple[tuple[str, str], ...] = ()  # <service>:env — plain (non-secret) variables

    def __post_init__(self) -> None:
        if not self.deploy_command:
            raise ValueError("deployCommand is empty")
        try:
            parsed = json_loads(self.spec)
        except (ValueError, RecursionError):  # not JSON, or past the one reader's limits
            parsed = None
        if not isinstance(parsed, dict) or canonical_spec(parsed) != self.spec:
            raise ValueError("spec is not the canonical JSON of an object; build it with canonical_spec()")
        if len(self.source_sha256) != 64 or any(c not in "0123456789abcdef" for c in self.source_sha256):
            raise ValueError(f"source_sha256 {self.source_sha256!r} is not a hex SHA-256")
        if any(k == SOURCE_DIGEST_ENV for k, _ in self.environment):
            raise ValueError(f"{SOURCE_DIGEST_ENV} is set by the component")


def _shell(argv: tuple[str, ...]) -> str:
    import shlex

    return shlex.join(argv)


class CommandService(pulumi.ComponentResource):
    """One ``local.Command``; ``outputs`` is the CLI's JSON object (an Output of a dict)."""

    command: command.local.Command
    outputs: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: CommandServiceArgs, *,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(COMMAND_SERVICE_COMPONENT, name, None, opts)
        a = args
        self.command = command.local.Command(
            name,
            create=_shell(a.deploy_command),
            update=_shell(a.deploy_command),
            delete=_shell(a.delete_command) if a.delete_command else None,
            stdin=a.spec,
            dir=a.working_dir,
            environment={**dict(a.environment), SOURCE_DIGEST_ENV: a.source_sha256},
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(parent=self))
        self.outputs = self.command.stdout.apply(parse_outputs)
        self.register_outputs({"outputs": self.outputs})
