"""Benchmark of the offline plan: 1 and 50 synthetic clusters in one process.

Usage: ``uv run python bench/plan_bench.py [--stacks 50]``. Creates a temporary workspace
with N synthetic CoreWeave clusters (copies of the shipped H100 example with unique names),
then measures, in this one process:

- import time of the program (pulumi + provider SDKs), paid once;
- wall time of planning 1 stack, then N stacks (``plan --all`` path: one process, runtime
  reset between stacks), and the marginal cost per extra stack;
- the median and 90th-percentile time of one stack within that run;
- peak RSS of the process (``resource.getrusage``). tracemalloc is not used: it slows the
  SDK's allocation-heavy registration path several-fold and would distort the timings.

Prints one JSON document; docs/performance.md records the results and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # helpers.copy_workspace: the one workspace copy


def make_workspace(root: Path, n: int) -> list[str]:
    """``root`` as the shipped workspace (``helpers.copy_workspace``, the tests' one copy) plus
    ``n`` synthetic clusters ``bench-NNN``; returns their stack names."""
    from helpers import copy_workspace

    copy_workspace(root)
    infra = root / "infra"
    template = (REPO / "clusters" / "cw-demo-h100.yaml").read_text()
    names = []
    for i in range(n):
        name = f"bench-{i:03d}"
        text = template.replace("name: cw-demo-h100", f"name: {name}").replace(
            "label_prefix: cwdemo", f"label_prefix: b{i:03d}")
        (root / "clusters" / f"{name}.yaml").write_text(text)
        (infra / f"Pulumi.{name}.yaml").write_text(f"config:\n  clusterstack:cluster: {name}\n")
        names.append(name)
    return names


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=50)
    n = ap.parse_args().stacks
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = make_workspace(root, n)
        t0 = time.perf_counter()
        import clusterstack.programs.cluster  # noqa: F401  (pulumi + provider SDKs)
        from clusterstack.plan import dumps, plan_stack
        t_import = time.perf_counter() - t0

        t0 = time.perf_counter()
        first = plan_stack(root / "infra", names[0])
        t_one = time.perf_counter() - t0

        plans, each = [], []
        t0 = time.perf_counter()
        for s in names:
            t1 = time.perf_counter()
            plans.append(plan_stack(root / "infra", s))
            each.append(time.perf_counter() - t1)
        t_all = time.perf_counter() - t0
        each.sort()
        size = len(dumps(plans))
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": sys.version.split()[0],
                    "platform": platform.platform()},
        "stacks": n,
        "resources_per_stack": len(first.resources),
        "import_s": round(t_import, 3),
        "plan_1_stack_s": round(t_one, 3),
        "plan_n_stacks_s": round(t_all, 3),
        "marginal_ms_per_stack": round(1000 * t_all / n, 1),
        "median_ms_per_stack": round(1000 * each[len(each) // 2], 1),
        "p90_ms_per_stack": round(1000 * each[int(len(each) * 0.9)], 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "peak_rss_mib": round(rss_kib / 1024, 1),
        "plan_json_bytes": size,
    }, indent=2))


if __name__ == "__main__":
    main()
