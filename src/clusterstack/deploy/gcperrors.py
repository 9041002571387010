"""What a failed Google API call means to a deploy backend — the one mapping the Compute Engine
VM (:mod:`clusterstack.deploy.gce`) and Cloud Run job (:mod:`clusterstack.deploy.cloudrunjob`)
backends share, over the adapter's typed errors (:class:`~clusterstack.adapters.gcp.GcpCallError`
with its ``kind`` and ``stage``, :class:`~clusterstack.adapters.gcp.GcpCredentialsError`).

- a read: missing or refused credentials, and a refused read (403), →
  :class:`~clusterstack.deploy.model.CredentialsUnavailable` (exit 2: nothing was read, nothing
  changed); anything else → :class:`~clusterstack.deploy.model.BackendError` (exit 1);
- a write (:func:`activation_error`): a precondition that failed at the request (412 / 409) →
  :class:`~clusterstack.deploy.model.WorldMoved`; no usable answer → ``LostResponse`` (it may
  have been applied: observe, never re-send); any other refusal of the request →
  ``ActivationRejected`` (nothing applied); an operation that ended in error →
  ``ActivationFailed`` (it started: restore the source).
"""

from __future__ import annotations

from typing import Any, Callable

from clusterstack.adapters.gcp import CONFLICT, PERMISSION_DENIED, UNREACHABLE, GcpCallError, GcpCredentialsError
from clusterstack.deploy.model import (
    ActivationFailed,
    ActivationRejected,
    BackendError,
    CredentialsUnavailable,
    LostResponse,
    WorldMoved,
)


def read(fn: Callable[[], Any], *, service: str, denied: str, hint: str) -> Any:
    """``fn()``, a read of ``service``'s platform; ``denied``: the hint for a refused read (the
    role the account lacks); ``hint``: for any other failure."""
    try:
        return fn()
    except GcpCredentialsError as exc:
        p = exc.problems[0]
        raise CredentialsUnavailable(p.message, p.hint, field=f"service {service}") from None
    except GcpCallError as exc:
        cls, why = (CredentialsUnavailable, denied) if exc.kind == PERMISSION_DENIED else (BackendError, hint)
        raise cls(exc.problems[0].message, why, field=f"service {service}") from None


def activation_error(exc: GcpCallError | GcpCredentialsError, *, service: str, call: str,
                     precondition: str = "its") -> Exception:
    """The exception a failed write ``call`` (e.g. ``instances.setMetadata``) means (module
    docstring), for the caller to raise; ``precondition`` names what the write was conditioned
    on (``metadata fingerprint``, ``etag``) for the message."""
    if isinstance(exc, GcpCredentialsError):
        return ActivationRejected(exc.problems[0].message)
    message = exc.problems[0].message
    if exc.stage == "request" and exc.kind == CONFLICT:
        return WorldMoved(service, f"the {precondition} precondition of {call} failed ({message})")
    if exc.kind == UNREACHABLE:
        return LostResponse(f"no usable response to {call} ({message})")
    if exc.stage == "request":
        return ActivationRejected(message)
    return ActivationFailed(f"the {call} operation failed: {message}")
