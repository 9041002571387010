"""Secret resolution: the value of a :class:`~clusterstack.config.secretspec.SecretSpec`.

Resolved only when a real deployment needs the value: ``env:`` from the process environment,
``file:`` from the file, ``gcp-secret://`` through the Secret Manager adapter
(:func:`clusterstack.adapters.gcp.access_secret`). The offline plan never resolves a spec:
:func:`offline` switches resolution to a secret placeholder so no credential is needed and no
value can reach a plan.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from clusterstack.adapters.gcp import GcpApiError, GcpCredentialsError, SecretManagerClient, access_secret
from clusterstack.config.secretspec import SecretSpec
from clusterstack.errors import ClusterstackError

if TYPE_CHECKING:  # pulumi is imported where an Output is made: validate and the config
    import pulumi  # models never need the SDK (0.3 s of a cold `validate`)


class SecretResolutionError(ClusterstackError):
    """A secret spec could not be turned into a value (missing variable, file, or access)."""


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
    """The value of a ``gcp-secret://`` spec (:func:`clusterstack.adapters.gcp.access_secret`).
    Every failure of the Secret Manager client, as
    :func:`clusterstack.adapters.gcp.call_errors` sorts it (no or refused credentials — also
    while the client is built —, not found, permission denied, unreachable), becomes a
    SecretResolutionError "secret <spec>: Secret Manager: <what the adapter says>", never an
    internal error."""
    try:
        return access_secret(spec.ref, secret_manager)
    except (GcpCredentialsError, GcpApiError) as exc:
        # "secret <spec>" first: deploy.rollout.resolve_secrets puts the variable's name there
        raise SecretResolutionError(
            f"secret {spec}: Secret Manager: {exc.problems[0].message}",
            "run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS) "
            "as an identity with roles/secretmanager.secretAccessor on the secret") from None


def resolve_output(spec: SecretSpec, *, secret_manager: SecretManagerClient | None = None,
                   base_dir: Path | None = None) -> pulumi.Output[str]:
    """The secret as a Pulumi secret Output, or a placeholder secret under :func:`offline`.

    The placeholder names only the spec's scheme; plans render every secret as ``[secret]``.
    """
    import pulumi

    if is_offline():
        return pulumi.Output.secret(f"<unresolved {spec.scheme} secret>")
    return pulumi.Output.secret(resolve(spec, secret_manager=secret_manager, base_dir=base_dir))
