"""Rewrite the golden plans of the shipped example stacks: tests/golden/<stack>.json.

Run from the repository root after an intended change to what a stack declares, then review
the diff (`git diff tests/golden`) like any other change:

    .venv/bin/python tests/regen_golden.py

Each file is ``clusterstack.plan.dumps([plan])`` of one stack, written atomically;
tests/test_plan.py compares them byte for byte. The import files of the same stacks
(``tests/golden/import-<stack>.json``, ``import generate`` without options) are rewritten too;
tests/test_import_generate.py compares them.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLE_STACKS = ("cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo", "gcp-tpu-a", "gcp-tpu-b")  # every shipped cluster stack
# The shipped stacks of the other projects: (project directory, stack).
PROJECT_STACKS = (("buckets", "lab"), ("github", "repo"))


def golden_path(stack: str) -> Path:
    return GOLDEN / f"{stack}.json"


def project_golden_path(directory: str, stack: str) -> Path:
    """tests/golden/<project dir>-<stack>.json, e.g. buckets-lab.json."""
    return GOLDEN / f"{directory}-{stack}.json"


def main() -> int:
    import warnings

    # The provider SDKs warn about their own deprecated resources at import; not ours.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from clusterstack.fsutil import write_atomic
    from clusterstack.imports.generate import generate
    from clusterstack.plan import dumps, plan_stack

    GOLDEN.mkdir(exist_ok=True)
    for stack in EXAMPLE_STACKS:
        plan = plan_stack(REPO / "infra", stack)
        for path, text in ((golden_path(stack), dumps([plan])),
                           (GOLDEN / f"import-{stack}.json", generate(plan).file.dumps())):
            old = path.read_text(encoding="utf-8") if path.is_file() else None
            write_atomic(path, text)
            print(f"{'unchanged' if old == text else 'rewrote'} {path.relative_to(REPO)}")
    for directory, stack in PROJECT_STACKS:
        path, text = project_golden_path(directory, stack), dumps([plan_stack(REPO / directory, stack)])
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        write_atomic(path, text)
        print(f"{'unchanged' if old == text else 'rewrote'} {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
