"""Benchmark of the bucket and GitHub projects.

Usage: ``uv run python bench/projects_bench.py [--buckets 100] [--secrets 1000]``. Measures,
in one process:

- import time of the two provider SDKs this issue adds (``pulumi_coreweave``, ``pulumi_github``);
- plan time of the shipped ``buckets/lab`` and ``github/repo`` stacks (first run, then the
  median of 5);
- plan time of a synthetic ``buckets.yaml`` with N buckets on each of the three providers
  (3·N buckets, each with TTL rules, protected prefixes and — on GCS — two writers), and the
  marginal cost per bucket;
- ``clusterstack github audit`` (real PyGithub) against the local fake GitHub API with M
  repository secrets, M variables and 5 environments of 50 names each: wall time and requests.

Prints one JSON document; docs/performance.md records the results and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))   # the fake GitHub API of the tests


def synthetic_buckets(n: int) -> str:
    lines = ["temp_prefix: tmp", "ttl_days: [1, 7, 30]", "protected_prefixes: [checkpoints/hero/]",
             "gcs:", "  project: bench-project", "  log_bucket: {name: bench-logs, location: US}",
             "  buckets:"]
    for i in range(n):
        lines += [f"    - name: bench-gcs-{i:04d}", "      location: US-CENTRAL1",
                  "      storage_class: STANDARD", "      object_writers:",
                  "        - serviceAccount:w@bench-project.iam.gserviceaccount.com",
                  "        - group:writers@example.org"]
    lines += ["coreweave:", "  buckets:"]
    lines += [f"    - {{name: bench-cw-{i:04d}, zone: US-EAST-04A}}" for i in range(n)]
    lines += ["r2:", "  account_id: 0123456789abcdef0123456789abcdef", "  buckets:"]
    lines += [f"    - {{name: bench-r2-{i:04d}}}" for i in range(n)]
    return "\n".join(lines) + "\n"


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--buckets", type=int, default=100, help="buckets per provider")
    parser.add_argument("--secrets", type=int, default=1000, help="repository secrets")
    args = parser.parse_args()
    out: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                             "platform": platform.platform(), "load": os.getloadavg()[0]}}

    t_base, _ = timed(lambda: __import__("clusterstack.plan"))
    out["import_pulumi_coreweave_s"], _ = timed(lambda: __import__("pulumi_coreweave"))
    out["import_pulumi_github_s"], _ = timed(lambda: __import__("pulumi_github"))

    from clusterstack.plan import plan_stack
    for directory, stack in (("buckets", "lab"), ("github", "repo")):
        first, plan = timed(lambda: plan_stack(REPO / directory, stack))
        runs = [timed(lambda: plan_stack(REPO / directory, stack))[0] for _ in range(5)]
        out[f"plan_{directory}"] = {"resources": len(plan.resources), "first_s": round(first, 3),
                                    "median_s": round(statistics.median(runs), 3)}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "clusterstack.toml").write_text('[workspace]\n[projects.buckets]\ndir = "buckets"\n'
                                                'kind = "buckets"\n')
        project = root / "buckets"
        project.mkdir()
        for f in ("Pulumi.yaml", "__main__.py"):
            (project / f).write_text((REPO / "buckets" / f).read_text())
        (project / "Pulumi.bench.yaml").write_text("config:\n  clusterstack-buckets:file: buckets.yaml\n")
        sizes = {}
        for n in (1, args.buckets):
            (project / "buckets.yaml").write_text(synthetic_buckets(n))
            runs = [timed(lambda: plan_stack(project, "bench")) for _ in range(3)]
            sizes[n] = (statistics.median(r[0] for r in runs), len(runs[0][1].resources))
        (t1, _), (tn, rn) = sizes[1], sizes[args.buckets]
        out["plan_synthetic"] = {"buckets": 3 * args.buckets, "resources": rn,
                                 "wall_s": round(tn, 3), "one_per_provider_s": round(t1, 3),
                                 "marginal_ms_per_bucket": round(1000 * (tn - t1) / (3 * (args.buckets - 1)), 2)}

    from fakes.github_api import FakeGitHub

    from clusterstack.cli import main as cli
    os.environ["GITHUB_TOKEN"] = "bench-token"
    with FakeGitHub(token="bench-token", deadline=600) as gh:
        gh.add_repo("example-lab/clusterstack",
                    secrets=[f"S_{i:05d}" for i in range(args.secrets)],
                    variables={f"V_{i:05d}": "x" for i in range(args.secrets)},
                    environments={f"env-{e}": {"secrets": [f"E{e}_{i:03d}" for i in range(50)],
                                               "variables": {f"EV{e}_{i:03d}": "x" for i in range(50)}}
                                  for e in range(5)})
        devnull = open(os.devnull, "w")
        saved = sys.stdout
        sys.stdout = devnull
        try:
            wall, code = timed(lambda: cli(["--root", str(REPO), "github", "audit", "--json",
                                            "--api-url", gh.base_url]))
        finally:
            sys.stdout = saved
        out["audit"] = {"names_on_github": 2 * args.secrets + 500, "exit_code": code,
                        "wall_s": round(wall, 3), "requests": len(gh.requests)}
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["import_clusterstack_plan_s"] = round(t_base, 3)
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
