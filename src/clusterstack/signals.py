"""SIGINT and SIGTERM during a command: one clean stop, the shell's exit code, and an engine
that is cancelled once and waited for — never orphaned.

:func:`handling` is entered once per CLI run (:func:`clusterstack.cli.main`) and installs one
handler for both signals, in the main thread (where Python delivers them):

- **no engine running**: SIGINT raises ``KeyboardInterrupt`` (Python's own), SIGTERM raises
  :class:`Terminated` — so ``finally`` blocks run (a temp file removed, a lock released)
  instead of the process vanishing, which is SIGTERM's default. Both are remembered
  (:func:`received`), so a failure they cause later (an import cut in half that surfaces as
  ``AttributeError``) is reported as the interruption it is, not as a bug.
- **a Pulumi CLI running** (registered by the engine adapter with :func:`engine_child`, from
  whichever thread started it): the first signal is forwarded to each engine's process group
  as ONE SIGINT and the handler returns — the command keeps waiting for the engine. The Pulumi
  CLI treats its first SIGINT (and, since 2023, SIGTERM) as "cancel": no new step starts, the
  steps in flight finish, the state is saved and the lock released; a *second* one as
  "terminate immediately", which "may lead to orphaned resources and other inconsistencies"
  (pulumi/pulumi ``pkg/backend/cancellation.go``, ``cancellationScopeSource.NewScope``). So a
  second signal is never forwarded: it prints what is still running and for how long. No
  engine starts after a signal (:func:`check_not_interrupted`).

The exit code is the shell's for a process ended by the signal: 128 + its number (130 for
SIGINT, 143 for SIGTERM; POSIX.1-2017 Shell Command Language §2.8.2).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

#: The signals a run handles.
HANDLED = (signal.SIGINT, signal.SIGTERM)

_received: list[int] = []
_lock = threading.Lock()


@dataclass
class _Child:
    pid: int                 # the engine's pid = its process group (started with process_group=0)
    what: str                # `pulumi up --stack cw-demo-h100`
    forwarded: float | None = None   # time.monotonic() of the one forwarded SIGINT
    extra: dict[str, Any] = field(default_factory=dict)


_children: dict[int, _Child] = {}
_installed: list[bool] = []


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


def interruption(signum: int) -> BaseException:
    """The exception a signal raises where no engine runs."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def check_not_interrupted() -> None:
    """Raise the pending interruption (KeyboardInterrupt / :class:`Terminated`) when a signal
    arrived during this run: nothing new (an engine run) starts after one."""
    if (signum := received()) is not None:
        raise interruption(signum)


def _say(line: str) -> None:
    try:   # os.write: safe inside a signal handler, whatever the main thread was printing
        os.write(2, (line + "\n").encode("utf-8", errors="replace"))
    except OSError:
        pass


def _forward(child: _Child, signum: int) -> None:
    child.forwarded = time.monotonic()
    try:
        os.killpg(child.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        return
    _say(f"clusterstack: {name(signum)} received: asked `{child.what}` (pid {child.pid}) to cancel — "
         "Pulumi's own Ctrl-C: no new step starts, the steps in flight finish, the state is saved "
         "and the stack unlocked. Waiting for it; another signal shows what is still running.")


def _handler(signum: int, _frame: object) -> None:
    note(signum)
    with _lock:
        children = list(_children.values())
    if not children:
        raise interruption(signum)
    for child in children:
        if child.forwarded is None:
            _forward(child, signum)
        else:
            _say(f"clusterstack: still running: `{child.what}` (pid {child.pid}), cancelling for "
                 f"{time.monotonic() - child.forwarded:.0f} s — waiting for its steps in flight to "
                 "finish so the state is saved and the lock released. Not forwarded: a second cancel "
                 "makes Pulumi terminate at once and leave resources it cannot account for (to do "
                 f"that anyway: `kill -INT -{child.pid}`, then `pulumi refresh`).")


@contextmanager
def handling(*, reset: bool = True) -> Iterator[None]:
    """Install the handler (see the module docstring) for the block, the previous handlers
    restored afterwards; ``reset``: forget the signals of an earlier run (a new CLI run).
    Re-entrant: inside another ``handling`` it adds nothing. Outside the main thread nothing
    is installed (signals are delivered to the main thread only)."""
    if reset:
        _received.clear()
    if _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in HANDLED}
    for s in HANDLED:
        signal.signal(s, _handler)
    _installed.append(True)
    try:
        yield
    finally:
        _installed.clear()
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


@contextmanager
def engine_child(pid: int, what: str) -> Iterator[_Child]:
    """Register a running engine (``pid``, which leads its own process group) for the block:
    a signal is forwarded to it once (:func:`_handler`). A signal that arrived between the
    check before the start and the registration is forwarded at once. On the way out, an
    engine that was cancelled gets SIGTERM to what is left of its process group (a plugin the
    exited CLI did not stop): no orphan. The yielded record's ``forwarded`` says whether it
    was cancelled."""
    child = _Child(pid, what)
    with _lock:
        _children[pid] = child
    try:
        if (signum := received()) is not None and child.forwarded is None:
            _forward(child, signum)
        yield child
    finally:
        with _lock:
            _children.pop(pid, None)
        if child.forwarded is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
