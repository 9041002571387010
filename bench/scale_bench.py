"""Benchmark of one cluster with many scale groups: plan time against the number of groups.

Usage: ``uv run python bench/scale_bench.py [--groups 1,10,100,2000] [--gc on|frozen]``.
Writes a temporary workspace per size with one CoreWeave cluster (the shipped H100 example)
whose ``scale_groups`` are N copies of its ``cpu-general`` group (unique names), then plans
each in THIS process, first the smallest (which pays the SDK imports, reported apart), then
each size once; prints one JSON document (seconds, resources, peak RSS).

Beside each size it measures two floors, the part of the plan that is not clusterstack's:
``floor_s`` — the same number of resources, each a bare NodePool ``CustomResource`` (the
pulumi-kubernetes class the NodePools component uses, a four-key spec, no parent, no options)
registered through the same runtime (:func:`clusterstack.plan.runtime.run_program`): the Pulumi
SDK's own cost of registering that many resources under its mock monitor; and ``parse_s`` —
parsing the cluster file alone (the one loader's safe YAML parse); and ``shaped_floor_s`` — the
same resources declared in the program's shape (parents, provider, a NodePool's options, see
:func:`sdk_floor`). ``plan_s / shaped_floor_s`` is the figure clusterstack controls.

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


def sdk_floor(resources: int, *, shaped: bool = False) -> float:
    """Seconds to plan ``resources`` NodePool custom resources (four-key spec) through the plan
    runtime: the SDK's registration floor for a stack of that size. Bare (the default): no
    component, no parent, no options. ``shaped``: as the program declares a scale group's
    resources — under two ComponentResources (the NodePools and Kueue components' shape),
    through an explicit Kubernetes provider, with a NodePool's options (``protect``,
    ``ignore_changes``, ``replace_on_changes``) — so the difference to the plan is
    clusterstack's own work (the file, the model, the derivations, the components' Python).
    Raises whatever the runtime raises."""
    import pulumi
    import pulumi_kubernetes as k8s

    from clusterstack.plan.runtime import run_program
    from clusterstack.pulumi.tokens import NODEPOOL_KIND

    def program() -> None:
        opts: list[pulumi.ResourceOptions | None] = [None, None]
        if shaped:
            provider = k8s.Provider("k8s", kubeconfig="floor", enable_server_side_apply=True)
            opts = [pulumi.ResourceOptions(
                parent=pulumi.ComponentResource(f"floor:index:Group{half}", f"half-{half}"),
                provider=provider, protect=True, ignore_changes=["spec.targetNodes"],
                replace_on_changes=["spec.instanceType"]) for half in (0, 1)]
        for i in range(resources):
            k8s.apiextensions.CustomResource(
                f"np-{i:05d}", api_version=NODEPOOL_KIND.api_version, kind=NODEPOOL_KIND.kind,
                metadata={"name": f"np-{i:05d}"},
                spec={"instanceType": "cd-gp-i64-erapids", "minNodes": 1, "maxNodes": 2,
                      "targetNodes": 1}, opts=opts[i % 2])
    t0 = time.perf_counter()
    run_program("floor", "floor", {}, program)
    return time.perf_counter() - t0


def parse_floor(path: Path) -> float:
    """Seconds to read and parse ``path`` with the one loader (no validation)."""
    from clusterstack.config.document import Document

    t0 = time.perf_counter()
    Document.read(path)
    return time.perf_counter() - t0


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
            plan_s = time.perf_counter() - t0
            floor_s = sdk_floor(len(plan.resources) - 1)  # the Stack resource is the SDK's own
            shaped_s = sdk_floor(len(plan.resources) - 1, shaped=True)
            rows.append({"groups": n, "resources": len(plan.resources), "plan_s": round(plan_s, 3),
                         "floor_s": round(floor_s, 3), "shaped_floor_s": round(shaped_s, 3),
                         "parse_s": round(parse_floor(root / "clusters" / "scale.yaml"), 3),
                         "plan_over_floor": round(plan_s / floor_s, 2),
                         "plan_over_shaped_floor": round(plan_s / shaped_s, 2)})
    print(json.dumps({"gc": args.gc, "first_plan_with_imports_s": round(warm_up, 2),
                      "rows": rows, "gc_enabled_after": gc.isenabled(),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "python": sys.version.split()[0]}, indent=2))


if __name__ == "__main__":
    main()
