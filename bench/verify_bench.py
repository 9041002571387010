"""Benchmark of ``clusterstack verify``: the offline plan that says what should exist, then
the read-only lookups through the real client libraries against a local fake API server
(tests/fakes/kubernetes_api.py, tests/fakes/gcp_api.py, serving the complete example worlds of tests/test_verify_*.py).

Usage: ``uv run python bench/verify_bench.py [--rounds 5]``. Measures, in one process:

- the offline plan of gcp-demo (with the shared load balancer) and cw-demo-h100, warm;
- the lookups: wall time for all declared resources of each stack (median of the rounds),
  per lookup, and the number of HTTP requests made;
- the same with the API unreachable (connection refused): the circuit breaker asks once.

Network latency to the real APIs is not modelled (a lookup to Compute Engine typically costs
tens of milliseconds more); the numbers show the tool's own overhead. Prints one JSON document;
docs/performance.md records the results and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    rounds = ap.parse_args().rounds

    import warnings
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from google.auth.credentials import AnonymousCredentials
    from kubernetes import client

    from clusterstack.adapters.gcp import GcpClients
    from clusterstack.plan import plan_stack
    from clusterstack.verify import GcpApi, KubernetesApi, check_expectations
    from clusterstack.verify.expect import expectations
    from test_verify_gcp import gcp_demo_world
    from test_verify_kube import h100_world
    from fakes.gcp_api import FakeGcp
    from fakes.kubernetes_api import FakeKubernetes

    def no(*_a):
        raise AssertionError("unexpected API")

    def kube_api(url: str) -> KubernetesApi:
        cfg = client.Configuration(host=url)
        cfg.retries = 0
        return KubernetesApi(client.ApiClient(cfg), timeout=(2.0, 5.0))

    results: dict[str, object] = {}
    plan_stack(REPO / "infra", "gcp-demo")   # imports and caches paid here
    for stack, flavor, world, make in (
            ("gcp-demo", "gcp", gcp_demo_world,
             lambda url: GcpApi(GcpClients(api_endpoint=url, credentials=AnonymousCredentials()), timeout=5.0)),
            ("cw-demo-h100", "kubernetes", h100_world, kube_api)):
        t = time.perf_counter()
        plan = plan_stack(REPO / "infra", stack)
        plan_s = time.perf_counter() - t
        expected = expectations(plan)
        times, requests, report = [], 0, None
        with (FakeGcp if flavor == "gcp" else FakeKubernetes)(deadline=300) as srv:
            srv.objects.update(world())
            for _ in range(rounds):
                n0 = len(srv.requests)
                t = time.perf_counter()
                kw = {"kube": no, "gcp": lambda: make(srv.url)} if flavor == "gcp" else \
                     {"kube": lambda: make(srv.url), "gcp": no}
                report = check_expectations(stack, expected, **kw)
                times.append(time.perf_counter() - t)
                requests = len(srv.requests) - n0
            url = srv.url
        assert report is not None and report.exit_code == 0, report
        t = time.perf_counter()
        kw = {"kube": no, "gcp": lambda: make(url)} if flavor == "gcp" else {"kube": lambda: make(url), "gcp": no}
        down = check_expectations(stack, expected, **kw)
        down_s = time.perf_counter() - t
        checked = sum(1 for f in report.findings if f.state == "ok")
        results[stack] = {
            "resources_declared": len(expected), "resources_checked": checked,
            "http_requests": requests, "plan_warm_s": round(plan_s, 3),
            "lookups_median_s": round(statistics.median(times), 3),
            "per_lookup_ms": round(1000 * statistics.median(times) / max(1, requests), 2),
            "unreachable_s": round(down_s, 3), "unreachable_exit_code": down.exit_code,
        }
    results["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()}
    print(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
