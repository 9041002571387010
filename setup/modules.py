"""Which installed modules the commands load, and their bytecode compiled ahead.

``make install`` compiles only these (``python setup/modules.py compile``): compiling every
installed module (``uv sync --compile-bytecode``, ~11,000 files) cost ~41 s on a fresh clone,
while the commands load ~830 of them. A module missing from the list is still compiled by
Python on its first import (and written, unless PYTHONDONTWRITEBYTECODE is set; ``make test``
unsets it, so the test run compiles what only the tests load), so the list makes the first
run faster, never wrong.

The list (``setup/loaded-modules.txt``: paths relative to site-packages, sorted) is recorded,
not written by hand: every module in ``sys.modules`` with a file under site-packages at the
end of each command of :data:`COMMANDS`, run on the shipped workspace —

    python setup/modules.py record
"""

from __future__ import annotations

import compileall
import importlib.util
import os
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIST = HERE / "loaded-modules.txt"
#: What the set-up commands and the README's offline tour run (the engine commands need a
#: Pulumi CLI and credentials: their modules are compiled on first use).
COMMANDS = (["plan", "--all"], ["inventory"], ["validate"], ["stacks"], ["iam", "check"],
            ["schema", "cluster"], ["version"], ["--help"])


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


def record() -> int:
    """Run each of :data:`COMMANDS` in a child of this interpreter, each adding what it loaded
    to a scratch file, and write the sorted union as the list."""
    scratch = HERE / ".loaded-by-commands.txt"
    scratch.unlink(missing_ok=True)
    code = ("import atexit, sys; sys.path.insert(0, %r); import modules; "
            "atexit.register(modules._dump, modules.Path(%r)); "
            "from clusterstack.cli import entrypoint; sys.argv = ['clusterstack', *sys.argv[1:]]; "
            "entrypoint()") % (str(HERE), str(scratch))
    for argv in COMMANDS:
        subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    names = set(scratch.read_text(encoding="utf-8").split())
    scratch.unlink()
    LIST.write_text("".join(f"{n}\n" for n in sorted(names)), encoding="utf-8")
    print(f"{LIST.relative_to(ROOT)}: {len(names)} modules")
    return 0


def _compile(path: str) -> bool:
    return bool(compileall.compile_file(path, quiet=2))


def _current(path: str) -> bool:
    """True when ``path``'s ``__pycache__`` bytecode is current by the check
    :func:`compileall.compile_file` makes before it compiles (Python 3.11
    Lib/compileall.py ``compile_file``: the first 12 bytes of the .pyc are the magic number,
    flags 0 and the source's mtime), so such a file is one it would leave alone."""
    try:
        mtime = int(os.stat(path).st_mtime)
        with open(importlib.util.cache_from_source(path), "rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return head == importlib.util.MAGIC_NUMBER + struct.pack("<LL", 0, mtime & 0xFFFF_FFFF)


def compile_loaded() -> int:
    """Compile the listed modules that exist here, and ``src/`` (ours), as Python would on
    first import (``__pycache__``, the default invalidation mode; a file whose bytecode is
    current is left alone), on one process per CPU. The files already current
    (:func:`_current`: every one, when nothing changed since the last run) are checked here,
    so the no-op run (``make install`` before each ``make test``) starts no pool."""
    from concurrent.futures import ProcessPoolExecutor

    names = LIST.read_text(encoding="utf-8").split() if LIST.exists() else []
    roots = site_packages()   # once: it expands sysconfig's paths and resolves them
    files = [str(r / n) for n in names for r in roots if (r / n).is_file()]
    files += [str(f) for f in sorted((ROOT / "src").rglob("*.py"))]
    stale = [f for f in files if not _current(f)]
    ok = True
    if stale:
        with ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, len(stale))) as pool:
            ok = all(pool.map(_compile, stale, chunksize=64))
    print(f"install: bytecode of the {len(names)} installed modules the commands load, and of src/",
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
