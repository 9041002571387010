"""SIGINT and SIGTERM during a command: one clean stop, the shell's exit code.

:func:`handling` is entered once per CLI run (:func:`clusterstack.cli.main`): SIGINT raises
``KeyboardInterrupt`` (Python's own), SIGTERM raises :class:`Terminated` — so ``finally``
blocks run (a temp file is removed, a lock released) instead of the process vanishing, which
is SIGTERM's default — and both are remembered (:func:`received`), so a failure they cause
later (an import cut in half that surfaces as ``AttributeError``) is reported as the
interruption it is, not as a bug. The exit code is the shell's for a process ended by the
signal: 128 + its number (130 for SIGINT, 143 for SIGTERM; POSIX.1-2017 Shell Command
Language §2.8.2 "Exit Status for Commands").

While the Pulumi CLI runs, the engine adapter takes the signals over and forwards them
(:func:`clusterstack.engine.automation.TrackedPulumiCommand.run`).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

#: The signals a run handles.
HANDLED = (signal.SIGINT, signal.SIGTERM)

_received: list[int] = []


class Terminated(BaseException):
    """SIGTERM arrived (a CI cancel, ``kill``): raised like ``KeyboardInterrupt`` for SIGINT.
    A BaseException, so ``except Exception`` does not swallow it."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def note(signum: int) -> None:
    """Remember that ``signum`` arrived during this run."""
    _received.append(signum)


def received() -> int | None:
    """The first SIGINT/SIGTERM of this run, or None."""
    return _received[0] if _received else None


def exit_code(signum: int) -> int:
    """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def name(signum: int) -> str:
    return signal.Signals(signum).name


def _raise(signum: int, _frame: object) -> None:
    note(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextmanager
def handling() -> Iterator[None]:
    """For one run: SIGINT/SIGTERM raise (see the module docstring), remembered by
    :func:`received`; the previous handlers are restored afterwards. Outside the main thread
    (signals are delivered to it only) nothing is installed."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in HANDLED}
    for s in HANDLED:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
