"""The ``clusterstack`` executable (``[project.scripts]`` in pyproject.toml).

Importing the CLI takes a moment (typer, rich, pydantic, every command module); a Ctrl-C or a
SIGTERM in that moment must end like one at any other time — the one ``error: interrupted``
line and the shell's code (130/143, :mod:`clusterstack.signals`) — not an import traceback, nor
"During handling of the above exception, another exception occurred". So the handlers are
installed here, before that import, and :func:`clusterstack.cli.entrypoint` runs the command.
"""

from __future__ import annotations

import os
import signal
import sys


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)


def main() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _stop)
    try:
        from clusterstack.fsutil import arm_import_testpoint

        arm_import_testpoint()  # a test may stop the process inside the CLI's own import
        from clusterstack.cli import entrypoint
    except (KeyboardInterrupt, SystemExit) as exc:
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else int(exc.code or 0) - 128
        try:
            sys.stderr.write(f"error: interrupted by {signal.Signals(signum).name} while starting — "
                             "nothing was done; run the command again\n")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os._exit(128 + int(signum))
    entrypoint()
