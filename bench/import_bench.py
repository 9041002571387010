"""Benchmark of adoption: import-file generation and the offline checks of ``import apply``.

Usage: ``uv run python bench/import_bench.py [--sizes 1000 10000]``. Measures, in one process:

- the shipped ``cw-demo-h100`` stack: planning it (the program under mocks; what both
  ``generate`` and ``apply`` pay first) and the import-specific work on top (generate, write,
  parse, reference check, staleness check, digest);
- synthetic stacks of N leaf resources spread over 10 components (built directly as a
  ``StackPlan``, no program run), for the same import-specific steps — the part that grows with
  the size of an adoption;
- peak RSS (``resource.getrusage``).

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
sys.path.insert(0, str(REPO / "src"))


def synthetic_plan(n: int):
    from clusterstack.plan.model import PlannedResource, StackPlan
    from clusterstack.pulumi.tokens import NODEPOOL as leaf

    stack, proj = "bench", "clusterstack"
    stack_urn = f"urn:pulumi:{stack}::{proj}::pulumi:pulumi:Stack::{proj}-{stack}"
    prov = f"urn:pulumi:{stack}::{proj}::pulumi:providers:kubernetes::k8s"
    res = [PlannedResource(urn=stack_urn, type="pulumi:pulumi:Stack", name=f"{proj}-{stack}",
                           custom=False, parent=None, provider=None, inputs={}, dependencies=()),
           PlannedResource(urn=prov, type="pulumi:providers:kubernetes", name="k8s", custom=True,
                           parent=stack_urn, provider=None, inputs={}, dependencies=(),
                           version="4.34.2")]
    for c in range(10):
        ctype = "clusterstack:bench:Group"
        curn = f"urn:pulumi:{stack}::{proj}::{ctype}::group-{c}"
        res.append(PlannedResource(urn=curn, type=ctype, name=f"group-{c}", custom=False,
                                   parent=stack_urn, provider=None, inputs={}, dependencies=()))
        for i in range(c, n, 10):
            name = f"pool-{i:06d}"
            res.append(PlannedResource(
                urn=f"urn:pulumi:{stack}::{proj}::{ctype}${leaf}::{name}", type=leaf, name=name,
                custom=True, parent=curn, provider=prov, inputs={"metadata": {"name": name}},
                dependencies=(), adopt_id=name, version="4.34.2"))
    return StackPlan(project=proj, stack=stack, resources=tuple(sorted(res, key=lambda r: r.urn)))


def import_steps(plan, tmp: Path) -> dict[str, float]:
    """Time the import-specific steps over ``plan`` (seconds)."""
    from clusterstack.fsutil import write_atomic
    from clusterstack.imports.apply import staleness
    from clusterstack.imports.generate import generate
    from clusterstack.pulumi.importfile import parse

    t = {}
    t0 = time.perf_counter()
    g = generate(plan)
    t["generate_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    path = tmp / f"{plan.stack}.json"
    write_atomic(path, g.file.dumps(), mode=0o600)
    t["write_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    f = parse(path.read_text())
    t["parse_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert f.reference_problems() == []
    f.urns(plan.project, plan.stack)
    t["references_and_urns_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert staleness(f, generate(plan)) == []
    t["staleness_s"] = time.perf_counter() - t0  # includes a second generate, as apply does
    t0 = time.perf_counter()
    f.digest()
    t["digest_s"] = time.perf_counter() - t0
    t["entries"] = len(f.resources)
    t["file_bytes"] = path.stat().st_size
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in t.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    args = ap.parse_args()
    os.chdir(REPO)
    from clusterstack.plan import plan_stack

    result: dict = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                                "cpus": os.cpu_count()}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.perf_counter()
        plan_stack(REPO / "infra", "cw-demo-h100")
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        plan = plan_stack(REPO / "infra", "cw-demo-h100")
        again = time.perf_counter() - t0
        result["cw-demo-h100"] = {"plan_first_s": round(first, 3), "plan_again_s": round(again, 3),
                                  **import_steps(plan, tmp)}
        for n in args.sizes:
            result[f"synthetic-{n}"] = import_steps(synthetic_plan(n), tmp)
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
