"""Benchmark of ``clusterstack diff`` (the static plan diff).

Usage: ``uv run python bench/diff_bench.py [--repeat 3] [--resources 20000]``.

Two measurements:

- end to end: a throw-away git repository holding a copy of this repository's files (no
  ``.git``/``.venv``: the workspace, its projects and ``src/``), one commit, then a working-tree
  edit (one harmless change); ``clusterstack diff --all --base HEAD --json`` runs in a fresh
  child process (interpreter start, Pulumi SDK imports, the worktree, the base-side child
  planner and the in-process head plans included). Wall time of each run, and the same for one
  stack (``cw-demo-h100``), with the CPU time of the CLI and its base-side child (user + sys:
  on a shared machine the wall time grows with the load, the CPU time does not). The result
  is checked (exit 0, the edit listed) so a broken path is never timed. ``all_stacks_no_cache``
  plans the base every run; ``all_stacks`` plans it on its first run and reads it from the
  plan cache after that (through git's objects, no worktree: :mod:`clusterstack.plan.at_ref`),
  as CI does with the cache restored; ``one_stack`` reads its stack list and plan the same way;
- the pure comparison: :func:`clusterstack.plan.diff.diff_plans` over two synthetic plans of
  ``--resources`` resources (NodePools, addresses, Helm releases; 5 % changed, 1 % removed,
  1 % added), best and median of ``--repeat`` runs.

Prints one JSON document; docs/performance.md records the results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", *args],
                   cwd=root, check=True, capture_output=True)


def end_to_end(repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="diff-bench-") as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", ".pytest_cache", ".pulumi-state"))
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "base")
        cfg = root / "clusters" / "cw-demo-h100.yaml"
        cfg.write_text(cfg.read_text().replace("buffer_slices: 2 ", "buffer_slices: 3 ")
                       .replace("max_slices: 2 ", "max_slices: 3 "))   # a pinned pool grows
        exe = [str(Path(sys.executable).with_name("clusterstack"))]  # the venv's entry point
        out: dict = {}
        for label, args in (("all_stacks_no_cache", ["--all", "--no-cache"]),
                            ("all_stacks", ["--all"]), ("one_stack", ["cw-demo-h100"])):
            times, cpu = [], []
            for _ in range(repeat):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                proc = subprocess.run([*exe, "--root", str(root), "diff", *args, "--base", "HEAD",
                                       "--json"], capture_output=True, text=True)
                times.append(time.perf_counter() - t0)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
                if proc.returncode != 0:
                    raise SystemExit(f"diff failed ({proc.returncode}): {proc.stderr}")
                doc = json.loads(proc.stdout)
                paths = [p["path"] for s in doc["stacks"] for c in s["changed"]
                         for p in c["properties"]]
                if "spec.maxNodes" not in paths:
                    raise SystemExit(f"the edit is not in the diff: {paths}")
            out[label] = {"stacks": len(doc["stacks"]), "wall_s": [round(t, 2) for t in times],
                          "median_s": round(statistics.median(times), 2),
                          "cpu_s": [round(c, 2) for c in cpu],  # CLI + base child, all cores
                          "peak_rss_mb": round(resource.getrusage(
                              resource.RUSAGE_CHILDREN).ru_maxrss / 1024)}
        return out


def pure(resources: int, repeat: int) -> dict:
    import dataclasses

    from clusterstack.plan import PlannedResource, StackPlan
    from clusterstack.plan.diff import diff_plans

    from clusterstack.pulumi.tokens import NODEPOOL as np_type
    kinds = [(np_type, "clusterstack:coreweave:NodePools"),
             ("gcp:compute/address:Address", "clusterstack:gcp:StaticAddresses"),
             ("kubernetes:helm.sh/v3:Release", "clusterstack:coreweave:Ingress")]

    def res(i: int, variant: int = 0) -> PlannedResource:
        typ, parent = kinds[i % 3]
        name = f"r{i:06d}"
        inputs = {"metadata": {"name": name, "labels": {"a/b": "c", "i": str(i)}},
                  "spec": {"instanceType": "gd-8xh100ib-i128", "maxNodes": 32 + variant,
                           "nodeLabels": {f"k{j}": f"v{j}" for j in range(8)},
                           "list": list(range(10))}}
        return PlannedResource(urn=f"urn:pulumi:b::p::{parent}${typ}::{name}", type=typ, name=name,
                               custom=True, parent=f"urn:pulumi:b::p::{parent}::c", provider=None,
                               inputs=inputs, dependencies=(), protect=True)

    base = [res(i) for i in range(resources)]
    head = [res(i, 1) if i % 20 == 0 else r for i, r in enumerate(base) if i % 100 != 1]
    head += [dataclasses.replace(res(resources + i)) for i in range(resources // 100)]
    bp = StackPlan("p", "b", tuple(sorted(base, key=lambda r: r.urn)))
    hp = StackPlan("p", "b", tuple(sorted(head, key=lambda r: r.urn)))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        d = diff_plans(bp, hp)
        times.append(time.perf_counter() - t0)
    return {"resources": resources, "changed": len(d.changed), "removed": len(d.removed),
            "added": len(d.added), "findings": len(d.findings),
            "best_s": round(min(times), 3), "median_s": round(statistics.median(times), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--resources", type=int, default=20000)
    args = ap.parse_args()
    doc = {"python": platform.python_version(), "cpus": os.cpu_count(),
           "load_avg_1m": round(os.getloadavg()[0], 2),
           "end_to_end": end_to_end(args.repeat), "pure": pure(args.resources, args.repeat)}
    print(json.dumps(doc, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
