"""The house rules of docs/architecture.md that a test can hold: no import cycle between the
packages of ``src/clusterstack`` (counting imports inside functions too, which is how cycles
hide), and the lower layers never import the CLI."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

from helpers import parsed


SRC = Path(__file__).resolve().parent.parent / "src" / "clusterstack"


def _package_of(module: str) -> str:
    """``clusterstack.config.loader`` → ``config``; ``clusterstack.errors`` → ``errors``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Every ``clusterstack.*`` module ``path`` imports, at any depth (functions included);
    parsed once per run (the source does not change under the tests)."""
    module = _module_name(path)
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("clusterstack.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("clusterstack."):
                out.add(name)
                out |= {f"{name}.{a.name}" for a in node.names}
    return frozenset(out)


def package_graph() -> dict[str, set[str]]:
    """Package → the other packages it imports (top-level modules are packages of their own)."""
    modules = {_module_name(p) for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(SRC.rglob("*.py")):
        src = _package_of(_module_name(path))
        graph[src]
        for name in _imports(path):
            while name not in modules and "." in name:  # `from pkg import name` of a non-module
                name = name.rsplit(".", 1)[0]
            dst = _package_of(name)
            if name in modules and dst != src and dst != "clusterstack":
                graph[src].add(dst)
    return dict(graph)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_packages():
    graph = package_graph()
    cycles = _cycles(graph)
    detail = [" → ".join(c) + "; edges: " + ", ".join(
        f"{a}->{b}" for a in c for b in sorted(graph[a]) if b in c) for c in cycles]
    assert not cycles, "import cycles between packages:\n" + "\n".join(detail)


def test_nothing_below_the_cli_imports_it():
    graph = package_graph()
    # `entry` is above it: the executable's own module (signal handlers before the CLI's import)
    importers = sorted(p for p, deps in graph.items() if "cli" in deps and p not in ("cli", "entry"))
    assert importers == [], f"packages importing clusterstack.cli: {importers}"


def module_graph() -> dict[str, set[str]]:
    """Module → the other modules it imports (a package's ``__init__`` counts as its module)."""
    modules = {_module_name(p) for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(SRC.rglob("*.py")):
        src = _module_name(path)
        graph[src]
        for name in _imports(path):
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in modules and name != src and not src.startswith(name + "."):
                graph[src].add(name)
    return dict(graph)


def test_no_import_cycle_between_modules():
    graph = module_graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles between modules:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_config_reaches_no_outside_system():
    """A reviewed file's models (``config/``) parse and validate; they never reach an outside
    system, not even through another package (a secret spec is parsed there, resolved by
    ``secrets.py`` through the adapter)."""
    graph = package_graph()
    seen, todo = set(), ["config"]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += sorted(graph.get(p, ()))
    assert not seen & {"adapters", "clients", "engine", "secrets"}, sorted(seen)
