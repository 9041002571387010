"""Secret specs: where a secret value lives, never the value itself.

Forms (validated at load time, resolved only when a real deployment needs the value):

- ``gcp-secret://projects/<project>/secrets/<name>/versions/<version|latest>``
  — Secret Manager (resource name format from Secret Manager's REST reference);
- ``env:NAME`` — an environment variable of the process that runs the deployment;
- ``file:PATH`` — a file (trailing newline stripped).

The offline plan never resolves a spec: :func:`offline` switches resolution to a secret
placeholder so no credential is needed and no value can reach a plan.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from clusterstack.adapters.gcp import (GcpApiError, GcpClients, GcpCredentialsError,
    SecretManagerClient, call_errors)
from clusterstack.errors import ClusterstackError

if TYPE_CHECKING:  # pulumi is imported where an Output is made: validate and the config
    import pulumi  # models never need the SDK (0.3 s of a cold `validate`)

_GCP = re.compile(r"\Agcp-secret://projects/(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9]|\d+)/secrets/"
                  r"(?P<secret>[A-Za-z0-9_-]{1,255})/versions/(?P<version>latest|[1-9]\d*)\Z")
_ENV = re.compile(r"\Aenv:(?P<name>[A-Za-z_][A-Za-z0-9_]*)\Z")
_FILE = re.compile(r"\Afile:(?P<path>.+)\Z")


class SecretResolutionError(ClusterstackError):
    """A secret spec could not be turned into a value (missing variable, file, or access)."""


@dataclass(frozen=True)
class SecretSpec:
    """A parsed secret spec. ``scheme`` is ``gcp-secret``, ``env`` or ``file``; ``ref`` the rest."""

    scheme: str
    ref: str

    def __str__(self) -> str:
        return f"gcp-secret://{self.ref}" if self.scheme == "gcp-secret" else f"{self.scheme}:{self.ref}"

    @classmethod
    def parse(cls, text: str) -> "SecretSpec":
        """Parse a spec string. Raises ValueError naming the accepted forms."""
        if not isinstance(text, str):
            raise ValueError("a secret spec must be a string")
        if _GCP.match(text):
            return cls("gcp-secret", text.removeprefix("gcp-secret://"))
        if m := _ENV.match(text):
            return cls("env", m["name"])
        if m := _FILE.match(text):
            return cls("file", m["path"])
        if text.startswith("gcp-secret://"):
            raise ValueError(_gcp_problem(text))
        raise ValueError("not a secret spec; use gcp-secret://projects/P/secrets/NAME/versions/V, "
                         "env:NAME or file:PATH (a literal secret value is never accepted)")


_GCP_SHAPE = re.compile(r"\Agcp-secret://projects/(?P<project>[^/]*)/secrets/(?P<secret>[^/]*)"
                        r"/versions/(?P<version>[^/]*)\Z")


def _gcp_problem(text: str) -> str:
    """What is wrong with a ``gcp-secret://`` spec, part by part: a spec of the right shape
    whose project id is too short is told so, not called "not a secret spec". Rules: a
    project id (6–30 lowercase letters, digits and ``-``, a letter first, not ending in ``-``;
    Google Cloud "Creating and managing projects") or a project number; a secret id of 1–255
    letters, digits, ``-`` and ``_`` (Secret Manager ``secrets.create``, ``secretId``); a
    version ``latest`` or a positive number (Secret Manager "versions")."""
    m = _GCP_SHAPE.match(text)
    if m is None:
        return (f"{text[:80]!r} is not gcp-secret://projects/<project>/secrets/<name>/versions/<version> "
                "(four parts separated by '/')")
    project, secret, version = m["project"], m["secret"], m["version"]
    if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]|\d+", project):
        why = (f"is {len(project)} characters; a GCP project id has 6–30" if len(project) < 6 or len(project) > 30
               else "is not a GCP project id (lowercase letters, digits and '-', a letter first, not "
                    "ending in '-') nor a project number")
        return f"gcp-secret:// spec: project {project!r} {why} — use the project id or number"
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", secret):
        return (f"gcp-secret:// spec: secret name {secret!r} is not 1–255 letters, digits, '-' and '_' "
                "(Secret Manager secret ids)")
    return f"gcp-secret:// spec: version {version!r} is not 'latest' or a positive version number"


def _coerce(value: object) -> SecretSpec:
    return value if isinstance(value, SecretSpec) else SecretSpec.parse(value)  # type: ignore[arg-type]


# In a reviewed file a secret spec is a string (the JSON Schema editors see: clusterstack schema).
SecretSpecField = Annotated[SecretSpec, BeforeValidator(_coerce), PlainSerializer(str),
                            WithJsonSchema({"type": "string", "pattern": r"\A(gcp-secret://|env:|file:).+\Z",
                                            "description": "a secret spec: gcp-secret://projects/P/"
                                            "secrets/NAME/versions/V, env:NAME or file:PATH"})]
"""Pydantic field type for a secret spec (validated at load, serialised back to its text)."""


_OFFLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("clusterstack_offline", default=False)


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """Within this block, :func:`resolve_output` never reads a secret (the offline plan)."""
    token = _OFFLINE.set(True)
    try:
        yield
    finally:
        _OFFLINE.reset(token)


def is_offline() -> bool:
    return _OFFLINE.get()


def resolve(spec: SecretSpec, *, secret_manager: SecretManagerClient | None = None,
            base_dir: Path | None = None) -> str:
    """Return the secret value for ``spec``.

    ``file:`` paths are relative to ``base_dir`` (default: the current directory). A
    ``gcp-secret://`` spec uses ``secret_manager`` or, when None, the real client of
    :class:`clusterstack.adapters.gcp.GcpClients` (Application Default Credentials). Raises SecretResolutionError (exit 2) when the value is missing or empty,
    and for a ``gcp-secret://`` spec also when there are no or rejected Google credentials
    or Secret Manager refuses the access (see :func:`_access_gcp_secret`).
    """
    if spec.scheme == "env":
        value = os.environ.get(spec.ref)
        if value is None:
            raise SecretResolutionError(f"environment variable {spec.ref} is not set",
                                        f"export {spec.ref} before running, or use a gcp-secret:// spec")
    elif spec.scheme == "file":
        path = Path(spec.ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            value = path.read_text(encoding="utf-8").rstrip("\n")
        except OSError as exc:
            raise SecretResolutionError(f"cannot read secret file {path}: {exc.strerror}",
                                        "create the file or fix the spec") from None
    else:
        value = _access_gcp_secret(spec, secret_manager)
    if value == "":
        raise SecretResolutionError(f"secret {spec} is empty", "store a non-empty value")
    return value


def _access_gcp_secret(spec: SecretSpec, secret_manager: SecretManagerClient | None) -> str:
    """The value of a ``gcp-secret://`` spec. Every failure of the Secret Manager client, as
    :func:`clusterstack.adapters.gcp.call_errors` sorts it (no or refused credentials — also
    while the client is built —, not found, permission denied, unreachable), becomes a
    SecretResolutionError "secret <spec>: Secret Manager: <what the adapter says>", never an
    internal error."""
    try:
        with call_errors("Secret Manager API", f"reading {spec.ref}"):
            if secret_manager is None:
                secret_manager = GcpClients().secret_manager()
            response = secret_manager.access_secret_version(name=spec.ref)
    except (GcpCredentialsError, GcpApiError) as exc:
        # "secret <spec>" first: deploy.rollout.resolve_secrets puts the variable's name there
        raise SecretResolutionError(
            f"secret {spec}: Secret Manager: {exc.problems[0].message}",
            "run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS) "
            "as an identity with roles/secretmanager.secretAccessor on the secret") from None
    return response.payload.data.decode("utf-8")


def resolve_output(spec: SecretSpec, **kwargs) -> pulumi.Output[str]:
    """The secret as a Pulumi secret Output, or a placeholder secret under :func:`offline`.

    The placeholder names only the spec's scheme; plans render every secret as ``[secret]``.
    """
    import pulumi

    if is_offline():
        return pulumi.Output.secret(f"<unresolved {spec.scheme} secret>")
    return pulumi.Output.secret(resolve(spec, **kwargs))
