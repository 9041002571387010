"""``python -m clusterstack.plan --root DIR (--all | STACK…) [--skip-missing]``: plan stacks
offline and write the canonical plan JSON (``clusterstack.plan/v1``, :func:`dumps`) to stdout.

This is the process boundary of ``clusterstack diff --base REF``: the base side runs in a fresh
interpreter whose ``clusterstack`` is the one checked out at REF (the Pulumi SDK's mock runtime
holds process-global state and imported modules are cached, so two versions of the program
cannot share one process). It therefore uses only the oldest, stable surface of the package —
``Workspace.load``, ``plan_stack`` and ``dumps`` — and :mod:`clusterstack.plan.at_ref` runs
*this* file (of the current code) with ``runpy`` against the older package, so it works for
refs that predate it.

Stacks are those with an ``<project_dir>/Pulumi.<stack>.yaml``. ``--skip-missing`` leaves out
named stacks that have none (the caller reads presence from the output) instead of failing.
Anything the program prints goes to stderr so stdout stays JSON. Exit codes: 0; the
ClusterstackError's code (2 for bad input) with ``error: …`` lines on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the command line above; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m clusterstack.plan",
                                     description="Plan stacks offline; canonical JSON on stdout.")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="workspace root (holds clusterstack.toml)")
    parser.add_argument("--all", action="store_true", help="every stack with a stack file")
    parser.add_argument("--skip-missing", action="store_true",
                        help="leave out named stacks without a stack file")
    parser.add_argument("stacks", nargs="*", help="stack (= cluster) names")
    args = parser.parse_args(argv)

    from clusterstack.errors import ClusterstackError
    from clusterstack.plan import dumps, plan_stack
    from clusterstack.workspace import Workspace

    stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            ws = Workspace.load(args.root)
            present = sorted(f.name[len("Pulumi."):-len(".yaml")]
                             for f in ws.project_dir.glob("Pulumi.*.yaml"))
            names = present if args.all else list(dict.fromkeys(args.stacks))
            if args.skip_missing:
                names = [n for n in names if n in present]
            plans = [plan_stack(ws.project_dir, n) for n in names]
    except ClusterstackError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return exc.exit_code
    stdout.write(dumps(plans))
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
