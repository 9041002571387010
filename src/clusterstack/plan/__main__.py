"""The planner of ``clusterstack diff --base REF`` (and a small command line): plan stacks
offline, canonical plan JSON (``clusterstack.plan/v1``) out.

This is the process boundary of ``diff --base``: the base side runs in a fresh interpreter
whose ``clusterstack`` is the one checked out at REF (the Pulumi SDK's mock runtime holds
process-global state and imported modules are cached, so two versions of the program cannot
share one process). :mod:`clusterstack.plan.at_ref` runs *this* file (of the current code)
with ``runpy`` against REF's package, and the two speak the declared protocol of
:mod:`clusterstack.plan.refproto`:

- ``--request -``: one :class:`~clusterstack.plan.refproto.Request` (JSON) on stdin, one
  :class:`~clusterstack.plan.refproto.Response` (JSON) on stdout. Of REF's package the driver
  uses only the names of :data:`~clusterstack.plan.refproto.SURFACE` (resolved once,
  :func:`~clusterstack.plan.refproto.resolve_surface`); the protocol and the cache modules are
  *this* file's siblings, loaded by path (:func:`_sibling`), since REF's may predate them.
- ``--root DIR (--all | STACK…) [--skip-missing] [--with-projects | --project KEY…]``: the
  plans as canonical JSON on stdout (for a human; no cache).

Stacks are those with an ``<project_dir>/Pulumi.<stack>.yaml``. ``--skip-missing`` leaves out
named stacks that have none (the caller reads presence from the output) instead of failing.
``--with-projects`` adds every stack of every project in ``[projects]`` of this root's
``clusterstack.toml`` (``--project KEY``: of that one). A project whose entry or directory does
not exist at this root has no stacks (it is new). Anything the program prints goes to stderr
so stdout stays JSON. Exit codes: 0; the ClusterstackError's code (2 for bad input) with
``error: …`` lines on stderr; 1 when REF's package lacks a required name of the surface.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Run the command line above; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m clusterstack.plan",
                                     description="Plan stacks offline; canonical JSON on stdout.")
    parser.add_argument("--request", metavar="FILE",
                        help="a refplan request (JSON; - for stdin): answer with a response "
                             "(clusterstack.plan.refproto)")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="workspace root (holds clusterstack.toml)")
    parser.add_argument("--all", action="store_true", help="every stack with a stack file")
    parser.add_argument("--skip-missing", action="store_true",
                        help="leave out named stacks without a stack file")
    parser.add_argument("--with-projects", action="store_true",
                        help="also every stack of every [projects] project")
    parser.add_argument("--project", action="append", default=[], metavar="KEY",
                        help="also every stack of this [projects] project (repeatable)")
    parser.add_argument("stacks", nargs="*", help="stack (= cluster) names")
    args = parser.parse_args(argv)
    if args.request is not None:
        text = (sys.stdin.read() if args.request == "-"
                else Path(args.request).read_text(encoding="utf-8"))
        return serve(text, sys.stdout)

    proto = _sibling("refproto")
    try:
        surface = proto.resolve_surface()
    except proto.ProtocolError as exc:
        _print_error([str(exc)])
        return 1
    error_type = surface["clusterstack.errors:ClusterstackError"]
    try:
        plans = plan_root(args.root, None if args.all else args.stacks,
                          skip_missing=args.skip_missing,
                          projects="all" if args.with_projects else (args.project or None))
    except error_type as exc:
        _print_error(str(exc).splitlines())
        return exc.exit_code
    sys.stdout.write(surface["clusterstack.plan:dumps"](plans))
    sys.stdout.flush()
    return 0


def serve(text: str, out: Any) -> int:
    """Answer one request ``text`` with one response written to ``out``; returns the exit
    code (the response's ``error.exit_code``, or 0)."""
    proto = _sibling("refproto")
    try:
        request = proto.Request.loads(text)
        surface = proto.resolve_surface()
    except proto.ProtocolError as exc:
        _print_error([str(exc)])
        out.write(proto.Response(error={"lines": [str(exc)], "exit_code": 1}).dumps())
        return 1
    missing = [n.name for n in proto.SURFACE if n.name not in surface]
    cache = None
    if request.cache_dir and request.cache_program and all(n in surface for n in proto.CACHE_NEEDS):
        cache = _sibling("cache").PlanCache(Path(request.cache_dir), request.cache_program)
    error_type = surface["clusterstack.errors:ClusterstackError"]
    try:
        plans = plan_root(Path(request.root), request.stacks, skip_missing=request.skip_missing,
                          projects=request.projects, cache=cache)
    except error_type as exc:
        lines = str(exc).splitlines()
        _print_error(lines)
        out.write(proto.Response(missing=missing,
                                 error={"lines": lines, "exit_code": exc.exit_code}).dumps())
        return exc.exit_code
    out.write(proto.Response(plans=surface["clusterstack.plan:dumps"](plans),
                             cached=cache is not None,
                             hits=list(cache.hits) if cache else [],
                             misses=list(cache.misses) if cache else [],
                             missing=missing).dumps())
    out.flush()
    return 0


def _print_error(lines: list[str]) -> None:
    for line in lines:
        print(f"error: {line}", file=sys.stderr)


def _sibling(name: str) -> ModuleType:
    """``clusterstack.plan.<name>`` of THIS file's package, loaded by path: in the child the
    importable ``clusterstack`` is REF's, which may predate it (or differ)."""
    here = Path(__file__).resolve().with_name(f"{name}.py")
    mod = sys.modules.get(f"clusterstack.plan.{name}")
    if mod is not None and Path(mod.__file__ or "").resolve() == here:
        return mod
    alias = f"_clusterstack_driver_plan_{name}"
    if alias not in sys.modules:
        spec = importlib.util.spec_from_file_location(alias, here)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[alias] = module
        spec.loader.exec_module(module)
    return sys.modules[alias]


def plan_root(root: Path, stacks: list[str] | None, *, skip_missing: bool = False,
              projects: str | list[str] | None = None, cache: Any = None) -> list[Any]:
    """The plans (:class:`~clusterstack.plan.model.StackPlan`, in output order) of the
    workspace at ``root``: ``stacks`` (``None``: every stack with a stack file; with
    ``skip_missing`` named stacks without one are left out), then with ``projects``
    (``"all"`` or a list of ``[projects]`` handles) those projects' stacks. Whatever the
    program prints goes to stderr. Raises ClusterstackError (the program's own). Also called
    in-process by :mod:`clusterstack.plan.at_ref` when REF's code is the running code.

    ``cache``: a :class:`clusterstack.plan.cache.PlanCache` (only when the package has the
    surface's optional names it needs, :func:`serve`); each stack's plan is read from it or
    planned and stored (the same canonical bytes either way: a plan is stored as ``dumps``
    writes it and read back with ``loads``)."""
    surface = _sibling("refproto").resolve_surface()
    dumps, plan_stack = surface["clusterstack.plan:dumps"], surface["clusterstack.plan:plan_stack"]

    def one(directory: Path, stack: str) -> Any:
        if cache is None:
            return plan_stack(directory, stack)
        text = cache.plan(Path(ws.root), directory, stack,
                          lambda: dumps([plan_stack(directory, stack)]))
        return surface["clusterstack.plan.model:loads"](text)[0]

    with contextlib.redirect_stdout(sys.stderr):
        ws = surface["clusterstack.workspace:Workspace.load"](root)  # once: the stack list too
        return [one(d, n) for d, n in _stacks_of(ws, stacks, skip_missing=skip_missing,
                                                 projects=projects, surface=surface)]


def stack_list(root: Path, stacks: list[str] | None, *, skip_missing: bool = False,
               projects: str | list[str] | None = None) -> list[tuple[Path, str]]:
    """``[(project directory, stack)]`` that :func:`plan_root` plans, in its order (the same
    arguments). Raises ClusterstackError for a workspace that does not load."""
    surface = _sibling("refproto").resolve_surface()
    ws = surface["clusterstack.workspace:Workspace.load"](root)
    return _stacks_of(ws, stacks, skip_missing=skip_missing, projects=projects, surface=surface)


def _listed(directory: Path, surface: dict[str, Any]) -> list[str]:
    """The stack names of the project in ``directory`` (its ``Pulumi.<stack>.yaml``), sorted;
    the listing noted where REF's package records reads (``clusterstack.reads``)."""
    note = surface.get("clusterstack.reads:note")
    if note is not None:
        note("dir", directory)
    return sorted(f.name[len("Pulumi."):-len(".yaml")] for f in Path(directory).glob("Pulumi.*.yaml"))


def _stacks_of(ws: Any, stacks: list[str] | None, *, skip_missing: bool,
               projects: str | list[str] | None, surface: dict[str, Any]) -> list[tuple[Path, str]]:
    """:func:`stack_list` of a loaded workspace ``ws``."""
    present = _listed(ws.project_dir, surface)
    names = present if stacks is None else list(dict.fromkeys(stacks))
    if skip_missing:
        names = [n for n in names if n in present]
    out = [(ws.project_dir, n) for n in names]
    if projects:
        keys = None if projects == "all" else list(projects)
        for directory in _project_dirs(ws, keys, settings="clusterstack.workspace:Workspace.settings" in surface):
            out += [(directory, n) for n in _listed(directory, surface)]
    return out


def _project_dirs(ws: Any, keys: list[str] | None, *, settings: bool) -> list[Path]:
    """Directories of the ``[projects]`` entries (``keys``: only these) that exist and hold a
    ``Pulumi.yaml``, in file order: from the loaded workspace's ``settings.projects``
    (``settings``: the package has it, :data:`~clusterstack.plan.refproto.SURFACE`); a package
    that predates it (a REF's) has its table read with ``tomllib``."""
    root = Path(ws.root)
    if settings:
        entries = [(key, p.dir) for key, p in ws.settings.projects.items()]
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
