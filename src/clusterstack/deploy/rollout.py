"""Pieces of ``clusterstack deploy <service> rollout`` that are not the CLI: ``--config``
overrides on a temporary copy of the stack file, and secrets resolved at rollout time.

The rollout itself is the guarded flow of ``clusterstack up``
(:func:`clusterstack.flows.up.guarded_up`) over the service's project, with the temporary
copy passed as ``--config-file`` and the resolved secrets as environment of the Pulumi CLI.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Mapping

from ruamel.yaml import YAML

from clusterstack.adapters.gcp import SecretManagerClient
from clusterstack.errors import ClusterstackError
from clusterstack.fsutil import write_atomic
from clusterstack.secrets import SecretResolutionError, resolve
from clusterstack.config.document import parse_yaml, read_text

SOURCE_REVISION_KEY = "sourceRevision"
CHANGE_CAUSE_KEY = "changeCause"


def parse_overrides(items: list[str], project: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs → ``{namespaced key: value}``. A key without a namespace gets the
    project's (as ``pulumi config set`` does); values are strings (a structured value is
    given as JSON, which ``Config.get_object`` parses). Raises ClusterstackError (exit 2) for
    a pair without ``=``, an empty key, or a key given twice."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ClusterstackError(f"bad --config {item!r}", "use --config KEY=VALUE", field="--config")
        full = key if ":" in key else f"{project}:{key}"
        if full in out:
            raise ClusterstackError(f"--config {full} given twice", "give each key once", field="--config")
        out[full] = value
    return out


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


@contextlib.contextmanager
def config_copy(stack_file: Path, overrides: Mapping[str, str]) -> Iterator[Path]:
    """A temporary copy of ``stack_file`` with ``overrides`` applied (round-trip YAML: the
    other keys, comments and order as in the original), for ``pulumi … --config-file``.

    The copy lives in a private temporary directory (mode 0700, file 0600) and is deleted on
    exit; ``stack_file`` itself is only read. Raises ClusterstackError (exit 2) when an
    override would replace a ``secure:`` value (use ``pulumi config set --secret`` in a
    reviewed change instead) or the stack file has no mapping.
    """
    yaml = _yaml()

    # the one loader's round-trip parse: a syntax error, a duplicate key or a merge key is a
    # located exit-2 error, not a ruamel traceback
    doc = parse_yaml(read_text(stack_file), stack_file, positions=True)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ClusterstackError("the stack file is not a mapping", "fix it", file=stack_file, line=1)
    if overrides:
        config = doc.setdefault("config", {})
        if config is None:
            doc["config"] = config = {}
        for key, value in overrides.items():
            current = config.get(key)
            if isinstance(current, dict) and "secure" in current:
                raise ClusterstackError(f"--config {key}: the stack file holds a secret (secure:) value",
                                        "a secret is changed with `pulumi config set --secret` in a "
                                        "reviewed change, never on the command line", field="--config")
            config[key] = value
    tmp = Path(tempfile.mkdtemp(prefix="clusterstack-rollout-"))
    try:
        path = tmp / stack_file.name
        buf = io.StringIO()
        yaml.dump(doc, buf)
        write_atomic(path, buf.getvalue(), mode=0o600)
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mask_lines(value: str) -> list[str]:
    """GitHub Actions workflow commands that mask ``value`` in the job log. One
    ``::add-mask::`` per non-empty line: GitHub masks a multi-line value line by line, and a
    single command with a newline would mask only its first line ("Masking a value in a log",
    GitHub Actions workflow commands)."""
    return [f"::add-mask::{line}" for line in value.splitlines() if line.strip()]


def resolve_secrets(secrets: Mapping[str, object], *, base_dir: Path,
                    secret_manager: SecretManagerClient | None = None,
                    emit: Callable[[str], None] | None = None,
                    github_actions: bool | None = None) -> dict[str, str]:
    """Resolve the registry's ``secrets:`` (env var name → :class:`~clusterstack.config.secretspec.SecretSpec`)
    into ``{name: value}``, in memory only.

    Under GitHub Actions (``GITHUB_ACTIONS=true``, or ``github_actions``) each value's mask
    commands are written with ``emit`` (stdout) *before* anything else can print it. Raises
    SecretResolutionError naming the variable when a spec cannot be resolved or its value is
    empty or whitespace (an empty secret is a misconfiguration, never a valid credential).
    """
    if github_actions is None:
        github_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    out: dict[str, str] = {}
    for name, spec in sorted(secrets.items()):
        try:
            value = resolve(spec, secret_manager=secret_manager, base_dir=base_dir)  # type: ignore[arg-type]
        except SecretResolutionError as exc:
            p = exc.problems[0]
            own = f"secret {spec}"  # resolve()'s own wording: "secret <spec> is empty", "secret <spec>: …"
            text = (f"secret {name} ({spec}){p.message[len(own):]}" if p.message.startswith(own + " ")
                    or p.message.startswith(own + ":") else f"secret {name} ({spec}): {p.message}")
            raise SecretResolutionError(text, p.hint, field=f"secrets.{name}") from None
        if not value.strip():
            raise SecretResolutionError(f"secret {name} ({spec}) is empty", "store a non-empty value",
                                        field=f"secrets.{name}")
        if github_actions and emit is not None:
            for line in mask_lines(value):
                emit(line)
        out[name] = value
    return out
