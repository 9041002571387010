"""The house counts of ``src/clusterstack`` (or the directory given): internal import
statements (``clusterstack.*`` or relative) and how many sit inside a function, and the
signature slots (parameters and returns) whose annotation names ``Any``. Read with ``ast``;
nothing is imported.

    uv run --frozen python bench/import_counts.py [SRC_DIR]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def counts(src: Path) -> dict[str, int]:
    """``{"imports": …, "in_functions": …, "any_slots": …}`` over every ``*.py`` under ``src``."""
    stmts = in_functions = any_slots = 0
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner: set[int] = set()
        for f in ast.walk(tree):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner |= {id(n) for n in ast.walk(f) if n is not f}
                a = f.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]:
                    any_slots += arg.annotation is not None and "Any" in ast.unparse(arg.annotation)
                any_slots += f.returns is not None and "Any" in ast.unparse(f.returns)
        for n in ast.walk(tree):
            internal = ((isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("clusterstack")))
                        or (isinstance(n, ast.Import) and any(a.name.startswith("clusterstack") for a in n.names)))
            if internal:
                stmts += 1
                in_functions += id(n) in inner
    return {"imports": stmts, "in_functions": in_functions, "any_slots": any_slots}


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "src" / "clusterstack"
    c = counts(src)
    print(f"{src}: {c['imports']} internal import statements, {c['in_functions']} inside functions; "
          f"{c['any_slots']} signature slots (parameters + returns) annotated with Any")
