"""Benchmark of ``clusterstack deploy``: the offline plan of the two example service projects,
and a full rollback (plan → re-check → activate → wait → health → record) through the real
client libraries against the local fake API servers of the tests (tests/fakes/kubernetes_api.py, tests/fakes/gcp_api.py).

Usage: ``uv run python bench/deploy_bench.py [--rounds 5]``. Measures, in one process:

- the offline plan of ``services/echo`` (prod) and ``services/logrelay`` (cw-demo-h100), warm;
- a Kubernetes rollback: a Deployment with 10 retained ReplicaSets (``revisionHistoryLimit``);
- a Cloud Run rollback: a service with 50 retained revisions;
- for each: wall time of planning and of executing (median of the rounds) and the number of
  HTTP requests.

Network latency to real API servers is not modelled (each request would add its round trip);
the numbers show the tool's own overhead and how many round trips a rollback costs. Prints one
JSON document; docs/performance.md records the results and the machine.
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
    from fakes.gcp_api import FakeGcp
    from fakes.kubernetes_api import FakeKubernetes
    from deploy_support import cloud_run_clients, kube_client, timing

    from clusterstack.deploy.cloudrun import CloudRunBackend
    from clusterstack.deploy.kubernetes import KubernetesBackend
    from clusterstack.deploy.model import RolledBack
    from clusterstack.config.services import CloudRunTarget, HttpCheck
    from clusterstack.deploy.rollback import execute, plan_rollback
    from clusterstack.plan import plan_stack

    result: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                "platform": platform.platform()}, "rounds": rounds}

    t0 = time.perf_counter()
    plan_stack(REPO / "services" / "echo", "prod")  # cold: imports the provider SDKs
    result["plan_cold_first_s"] = round(time.perf_counter() - t0, 2)
    for project, stack in (("echo", "prod"), ("logrelay", "cw-demo-h100")):
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            plan = plan_stack(REPO / "services" / project, stack)
            times.append(time.perf_counter() - t0)
        result[f"plan_{project}_ms"] = round(statistics.median(times) * 1000, 1)
        result[f"plan_{project}_resources"] = len(plan.resources)

    img = "ghcr.io/example-lab/logrelay@sha256:" + "%064x"
    k_plan, k_exec, k_requests = [], [], 0
    for _ in range(rounds):
        revs = [{"revision": n, "image": img % n, "commit": f"{n:x}" * 40, "health": "healthy"} for n in range(1, 11)]
        with FakeKubernetes().seed(revs, serving=10) as srv:
            b = KubernetesBackend("logrelay", kube_client(srv.url), namespace="logging", deployment="logrelay",
                                  http=HttpCheck(service="logrelay", port=8080, path="/healthz"))
            t0 = time.perf_counter()
            plan = plan_rollback(b)
            t1 = time.perf_counter()
            outcome = execute(b, plan, timing())
            t2 = time.perf_counter()
            assert isinstance(outcome, RolledBack)
            k_plan.append(t1 - t0)
            k_exec.append(t2 - t1)
            k_requests = len(srv.requests)
    result["kubernetes_10_replicasets"] = {"plan_ms": round(statistics.median(k_plan) * 1000, 1),
                                           "execute_ms": round(statistics.median(k_exec) * 1000, 1),
                                           "http_requests": k_requests}

    cimg = "us-central1-docker.pkg.dev/demo-project/apps/echo@sha256:" + "%064x"
    c_plan, c_exec, c_requests = [], [], 0
    for _ in range(rounds):
        revs = [{"n": n, "image": cimg % n, "commit": f"{n:x}" * 40} for n in range(1, 51)]
        with FakeGcp().seed(revs, [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}]) as srv:
            services, revisions = cloud_run_clients(srv.url)
            b = CloudRunBackend("echo", services, revisions, target=CloudRunTarget(
                project="demo-project", region="us-central1", service="echo"),
                http=HttpCheck(url=f"{srv.url}/healthz"))
            t0 = time.perf_counter()
            plan = plan_rollback(b)
            t1 = time.perf_counter()
            outcome = execute(b, plan, timing())
            t2 = time.perf_counter()
            assert isinstance(outcome, RolledBack)
            c_plan.append(t1 - t0)
            c_exec.append(t2 - t1)
            c_requests = len(srv.requests)
    result["cloud_run_50_revisions"] = {"plan_ms": round(statistics.median(c_plan) * 1000, 1),
                                        "execute_ms": round(statistics.median(c_exec) * 1000, 1),
                                        "http_requests": c_requests}
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
