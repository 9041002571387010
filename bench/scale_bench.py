"""Benchmark of one cluster with many scale groups: plan time against the number of groups.

Usage: ``uv run python bench/scale_bench.py [--groups 1,10,100,2000] [--gc on|frozen]``.
Writes a temporary workspace per size with one CoreWeave cluster (the shipped H100 example)
whose ``scale_groups`` are N copies of its ``cpu-general`` group (unique names), then plans
each in THIS process, first the smallest (which pays the SDK imports, reported apart), then
each size once; prints one JSON document (seconds, resources, peak RSS).

``--gc on`` leaves the garbage collector as Python starts it, to show the bend the plan's own
GC handling removes (:mod:`clusterstack.plan.runtime`); the default measures the shipped code.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # helpers.copy_workspace: the one workspace copy
GROUP = """  sg-{i:04d}:
    num_vms: 1
    resources: {{cpu: 64, ram: 512GB, disk: 6.98TiB, device_type: cpu}}
    buffer_slices: 0
    max_slices: 2
    slice_template: {{num_vms: 1, coreweave: {{region: US-EAST-04A, instance_type: cd-gp-i64-erapids}}}}
"""


def make_workspace(root: Path, groups: int) -> str:
    """``root`` as a workspace of one cluster ``scale`` with ``groups`` scale groups (beside
    the shipped workspace, copied by the tests' one helper, ``helpers.copy_workspace``)."""
    from helpers import copy_workspace

    copy_workspace(root)
    infra = root / "infra"
    text = (REPO / "clusters" / "cw-demo-h100.yaml").read_text().replace(
        "name: cw-demo-h100", "name: scale")
    start, end = text.index("scale_groups:\n") + len("scale_groups:\n"), text.index("provisioning:")
    text = text[:start] + "".join(GROUP.format(i=i) for i in range(groups)) + text[end:]
    (root / "clusters" / "scale.yaml").write_text(text)
    (infra / "Pulumi.scale.yaml").write_text("config:\n  clusterstack:cluster: scale\n")
    return "scale"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", default="1,10,100,2000")
    ap.add_argument("--gc", choices=("frozen", "on"), default="frozen")
    args = ap.parse_args()
    sizes = sorted(int(g) for g in args.groups.split(","))
    if args.gc == "on":
        import clusterstack.plan.runtime as runtime

        runtime._GC_FROZEN = True           # never freeze, never switch the collector off
        runtime._plan_gc = lambda: __import__("contextlib").nullcontext()
    from clusterstack.plan import plan_stack

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        first = Path(tmp) / "warm"
        first.mkdir()
        plan_stack(first / "infra", make_workspace(first, 1))
        warm_up = time.perf_counter() - t0
        for n in sizes:
            root = Path(tmp) / f"g{n}"
            root.mkdir()
            stack = make_workspace(root, n)
            t0 = time.perf_counter()
            plan = plan_stack(root / "infra", stack)
            rows.append({"groups": n, "resources": len(plan.resources),
                         "plan_s": round(time.perf_counter() - t0, 3)})
    print(json.dumps({"gc": args.gc, "first_plan_with_imports_s": round(warm_up, 2),
                      "rows": rows, "gc_enabled_after": gc.isenabled(),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "python": sys.version.split()[0]}, indent=2))


if __name__ == "__main__":
    main()
