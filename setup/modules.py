"""Which installed modules the commands and the tests load, and their bytecode compiled ahead.

``make install`` compiles only these (``python setup/modules.py compile``): compiling every
installed module (``uv sync --compile-bytecode``, ~11,000 files) cost ~41 s on a fresh clone
while a command loads ~2,600 of them; a module missing from the list is still compiled by
Python on its first import, so the list only makes the first run faster, never wrong.

The list (``setup/loaded-modules.txt``: paths relative to site-packages, sorted) is recorded,
not written by hand — every module in ``sys.modules`` with a file under site-packages at the
end of a run:

    python setup/modules.py record            # runs `clusterstack plan --all` and `inventory`
    PYTHONPATH=setup python -m pytest -p modules …   # adds what the tests load (before record)

``record`` rewrites the list from the demo's commands and the lines a pytest run left in
``setup/.loaded-by-tests.txt`` (the plugin below, one line per module of each worker).
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIST = HERE / "loaded-modules.txt"
BY_TESTS = HERE / ".loaded-by-tests.txt"


def site_packages() -> list[Path]:
    """The directories installed packages live in (purelib and platlib of this interpreter)."""
    paths = sysconfig.get_paths()
    return sorted({Path(paths["purelib"]).resolve(), Path(paths["platlib"]).resolve()})


def loaded() -> set[str]:
    """The ``.py`` files of the modules loaded now, relative to site-packages."""
    roots = site_packages()
    out = set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f or not f.endswith(".py"):
            continue
        p = Path(f).resolve()
        for r in roots:
            if p.is_relative_to(r):
                out.add(str(p.relative_to(r)))
    return out


def _dump(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{m}\n" for m in sorted(loaded())))


# --- the pytest plugin (`-p modules` with setup/ on the path) -----------------------------------

def pytest_sessionfinish(session, exitstatus):  # noqa: D103 — each process its own lines
    _dump(BY_TESTS)


def record() -> int:
    """Run the demo's commands in this interpreter's children, each dumping what it loaded,
    merge the tests' lines, write the sorted list."""
    demo = HERE / ".loaded-by-demo.txt"
    demo.unlink(missing_ok=True)
    code = ("import atexit, sys; sys.path.insert(0, %r); import modules; "
            "atexit.register(modules._dump, modules.Path(%r)); "
            "from clusterstack.cli import entrypoint; sys.argv = ['clusterstack', *sys.argv[1:]]; "
            "entrypoint()") % (str(HERE), str(demo))
    for argv in (["plan", "--all"], ["inventory"], ["validate"]):
        subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    names = set(demo.read_text(encoding="utf-8").split())
    if BY_TESTS.exists():
        names |= set(BY_TESTS.read_text(encoding="utf-8").split())
    demo.unlink()
    LIST.write_text("".join(f"{n}\n" for n in sorted(names)), encoding="utf-8")
    print(f"{LIST.relative_to(ROOT)}: {len(names)} modules")
    return 0


def compile_loaded() -> int:
    """Compile the listed modules that exist here, then ``src/`` and ``tests/`` (ours), as
    Python would on first import (``__pycache__``, the default invalidation mode)."""
    names = LIST.read_text(encoding="utf-8").split() if LIST.exists() else []
    files = [r / n for n in names for r in site_packages() if (r / n).is_file()]
    ok = all([compileall.compile_file(f, quiet=2) for f in files])
    ok = all([ok] + [compileall.compile_dir(ROOT / d, quiet=2) for d in ("src", "tests")])
    print(f"install: bytecode of {len(files)} installed modules the commands load, and of src/, tests/",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "record":
        sys.exit(record())
    if what == "compile":
        sys.exit(compile_loaded())
    sys.exit("usage: python setup/modules.py record | compile")
