"""``python -m clusterstack.plan --root DIR (--all | STACK…) [--skip-missing]
[--with-projects | --project KEY…]``: plan stacks offline and write the canonical plan JSON
(``clusterstack.plan/v1``, :func:`dumps`) to stdout.

This is the process boundary of ``clusterstack diff --base REF``: the base side runs in a fresh
interpreter whose ``clusterstack`` is the one checked out at REF (the Pulumi SDK's mock runtime
holds process-global state and imported modules are cached, so two versions of the program
cannot share one process). It therefore uses only the oldest, stable surface of the package —
``Workspace.load``, ``plan_stack`` and ``dumps`` — and :mod:`clusterstack.plan.at_ref` runs
*this* file (of the current code) with ``runpy`` against the older package, so it works for
refs that predate it.

Stacks are those with an ``<project_dir>/Pulumi.<stack>.yaml``. ``--skip-missing`` leaves out
named stacks that have none (the caller reads presence from the output) instead of failing.
``--with-projects`` adds every stack of every project in ``[projects]`` of this root's
``clusterstack.toml`` (``--project KEY``: of that one); the table is read here with ``tomllib``,
not through ``Workspace``, so refs whose package predates ``[projects]`` work too. A project
whose entry or directory does not exist at this root has no stacks (it is new).
Anything the program prints goes to stderr so stdout stays JSON. Exit codes: 0; the
ClusterstackError's code (2 for bad input) with ``error: …`` lines on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Run the command line above; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m clusterstack.plan",
                                     description="Plan stacks offline; canonical JSON on stdout.")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="workspace root (holds clusterstack.toml)")
    parser.add_argument("--all", action="store_true", help="every stack with a stack file")
    parser.add_argument("--skip-missing", action="store_true",
                        help="leave out named stacks without a stack file")
    parser.add_argument("--with-projects", action="store_true",
                        help="also every stack of every [projects] project")
    parser.add_argument("--project", action="append", default=[], metavar="KEY",
                        help="also every stack of this [projects] project (repeatable)")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="per-stack plan cache directory (clusterstack.plan.cache)")
    parser.add_argument("--cache-program", default="", metavar="KEY",
                        help="the planning code's key (cache.program_key), given by the caller")
    parser.add_argument("stacks", nargs="*", help="stack (= cluster) names")
    args = parser.parse_args(argv)

    from clusterstack.errors import ClusterstackError
    from clusterstack.plan import dumps

    cache = None
    if args.cache is not None and args.cache_program:
        cache = _cache_module().PlanCache(args.cache, args.cache_program)
    stdout = sys.stdout
    try:
        plans = plan_root(args.root, None if args.all else args.stacks,
                          skip_missing=args.skip_missing,
                          projects="all" if args.with_projects else (args.project or None),
                          cache=cache)
    except ClusterstackError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return exc.exit_code
    if cache is not None:
        print(f"{CACHE_REPORT}{json.dumps({'hits': cache.hits, 'misses': cache.misses})}",
              file=sys.stderr)
    stdout.write(dumps(plans))
    stdout.flush()
    return 0


CACHE_REPORT = "plan-cache: "  # the stderr line prefix of the child's cache counts


def _cache_module() -> Any:
    """:mod:`clusterstack.plan.cache` of THIS file's package, loaded by path: in the child the
    importable ``clusterstack`` is REF's, which may predate it (or differ)."""
    here = Path(__file__).resolve().with_name("cache.py")
    mod = sys.modules.get("clusterstack.plan.cache")
    if mod is not None and Path(mod.__file__).resolve() == here:
        return mod
    name = "_clusterstack_driver_plan_cache"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, here)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def plan_root(root: Path, stacks: list[str] | None, *, skip_missing: bool = False,
              projects: str | list[str] | None = None, cache: Any = None) -> list:
    """The plans (:class:`~clusterstack.plan.model.StackPlan`, in output order) of the
    workspace at ``root``: ``stacks`` (``None``: every stack with a stack file; with
    ``skip_missing`` named stacks without one are left out), then with ``projects``
    (``"all"`` or a list of ``[projects]`` handles) those projects' stacks. Whatever the
    program prints goes to stderr. Raises ClusterstackError (the program's own). Also called
    in-process by :mod:`clusterstack.plan.at_ref` when REF's code is the running code.

    ``cache``: a :class:`clusterstack.plan.cache.PlanCache`; each stack's plan is read from it
    or planned and stored (the same canonical bytes either way: a plan is stored as ``dumps``
    writes it and read back with ``loads``). A package without ``loads`` plans uncached."""
    from clusterstack.plan import dumps, plan_stack
    from clusterstack.workspace import Workspace

    try:
        from clusterstack.plan.model import loads
    except ImportError:
        cache = None

    def one(directory: Path, stack: str) -> Any:
        if cache is None:
            return plan_stack(directory, stack)
        text = cache.plan(Path(ws.root), directory, stack,
                          lambda: dumps([plan_stack(directory, stack)]))
        return loads(text)[0]

    with contextlib.redirect_stdout(sys.stderr):
        ws = Workspace.load(root)  # once: the stack list is read from this load
        return [one(d, n) for d, n in _stacks_of(ws, stacks, skip_missing=skip_missing,
                                                 projects=projects)]


def stack_list(root: Path, stacks: list[str] | None, *, skip_missing: bool = False,
               projects: str | list[str] | None = None) -> list[tuple[Path, str]]:
    """``[(project directory, stack)]`` that :func:`plan_root` plans, in its order (the same
    arguments). Raises ClusterstackError for a workspace that does not load."""
    from clusterstack.workspace import Workspace

    return _stacks_of(Workspace.load(root), stacks, skip_missing=skip_missing, projects=projects)


def _stacks_of(ws: Any, stacks: list[str] | None, *, skip_missing: bool,
               projects: str | list[str] | None) -> list[tuple[Path, str]]:
    """:func:`stack_list` of a loaded workspace ``ws``."""
    present = sorted(f.name[len("Pulumi."):-len(".yaml")]
                     for f in ws.project_dir.glob("Pulumi.*.yaml"))
    names = present if stacks is None else list(dict.fromkeys(stacks))
    if skip_missing:
        names = [n for n in names if n in present]
    out = [(ws.project_dir, n) for n in names]
    if projects:
        for directory in _project_dirs(ws, None if projects == "all" else list(projects)):
            out += [(directory, f.name[len("Pulumi."):-len(".yaml")])
                    for f in sorted(directory.glob("Pulumi.*.yaml"))]
    return out


def _project_dirs(ws: Any, keys: list[str] | None) -> list[Path]:
    """Directories of the ``[projects]`` entries (``keys``: only these) that exist and hold a
    ``Pulumi.yaml``, in file order: from the loaded workspace's ``settings.projects``; a
    package that predates it (a REF's, see the module docstring) has its table read with
    ``tomllib``."""
    root = Path(ws.root)
    settings = getattr(getattr(ws, "settings", None), "projects", None)
    if settings is not None:
        entries = [(key, getattr(p, "dir", None)) for key, p in settings.items()]
    else:
        import tomllib

        try:
            table = tomllib.loads((root / "clusterstack.toml").read_text(encoding="utf-8")).get("projects", {})
        except (OSError, tomllib.TOMLDecodeError):
            table = {}
        entries = [(key, entry.get("dir") if isinstance(entry, dict) else None)
                   for key, entry in (table.items() if isinstance(table, dict) else ())]
    dirs = []
    for key, d in entries:
        if keys is not None and key not in keys:
            continue
        if isinstance(d, str) and (root / d / "Pulumi.yaml").is_file():
            dirs.append(root / d)
    return dirs


if __name__ == "__main__":
    sys.exit(main())
