"""``python -m clusterstack.cli.readme [README.md]``: rewrite README's exit-code table from the
one table of :mod:`clusterstack.cli.help` (:func:`~clusterstack.cli.help.write_readme`).

Its own module, not ``python -m clusterstack.cli.help``: the ``clusterstack.cli`` package
imports ``help`` itself, and running a module the package already imported makes runpy warn
(``RuntimeWarning: … found in sys.modules …``) and execute a second copy of it.

Exit codes: 0 rewritten; 2 the file cannot be read or written, or has no table block (one
``error:`` line, the file left as it was).
"""

from __future__ import annotations

import sys
from pathlib import Path

from clusterstack.cli.help import README_BEGIN, README_END, write_readme


def main(argv: list[str]) -> int:
    """Rewrite the table of ``argv[0]`` (default ``README.md``); returns the exit code."""
    path = Path(argv[0] if argv else "README.md")
    try:
        write_readme(path)
    except OSError as exc:
        print(f"error: {path}: {exc.strerror or exc} — give the path of README.md", file=sys.stderr)
        return 2
    except ValueError:
        print(f"error: {path}: no exit-code table — add the lines {README_BEGIN!r} and "
              f"{README_END!r} where it goes", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
