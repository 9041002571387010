"""Benchmark of one cluster with many scale groups: plan time against the number of groups.

Usage: ``uv run python bench/scale_bench.py [--groups 1,10,64,2000] [--gc on|frozen]``.
Two shapes, each a temporary copy of the shipped workspace with one shipped cluster's
``scale_groups`` replaced by N copies of one group (unique names):

- ``nodepools``: cw-demo-h100 with N copies of its ``cpu-general`` group — each a CoreWeave
  NodePool and its Kueue ResourceFlavor (two resources per group). A ClusterQueue resource group
  takes at most 64 flavors (Kueue 0.14.4, ``kueue.x-k8s.io_clusterqueues.yaml``: "it can contain
  up to 64 flavors"; "each resource and each flavor can only form part of one resource group"),
  so above 64 such groups the cluster is refused by ``validate`` and ``plan``: the row then
  records the refusal and how long it took.
- ``nodepools-shared``: the same cluster in a workspace whose ``[conventions]
  cpu_resource_flavor`` gives every CPU pool one ResourceFlavor (Marin's ``cw-cpu``): a NodePool
  per group, no flavor limit.
- ``tpu``: gcp-tpu-a with N copies of its ``v5e-16`` TPU group — slices the scheduler creates,
  so the stack declares no resource per group: the plan's cost is the file and the model.

Each size is planned once in THIS process through what ``clusterstack plan`` runs
(:func:`clusterstack.flows.plan.plan`: the checks before planning, then the program under the
mock runtime), after a first plan that pays the SDK imports (reported apart); prints one JSON
document (seconds, resources, peak RSS).

Beside each planned size of the ``nodepools`` shape it measures the part of the plan that is not
clusterstack's:
``floor_s`` — the same number of resources, each a bare NodePool ``CustomResource`` (the
pulumi-kubernetes class the NodePools component uses, a four-key spec, no parent, no options)
registered through the same runtime (:func:`clusterstack.plan.runtime.run_program`): the Pulumi
SDK's own cost of registering that many resources under its mock monitor; ``shaped_floor_s`` —
the same resources declared in the program's shape (parents, provider, a NodePool's options,
see :func:`sdk_floor`); and ``parse_s`` — parsing the cluster file alone (the one loader's safe
YAML parse). ``plan_s / shaped_floor_s`` is the figure clusterstack controls.

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
#: shape → (the shipped cluster whose scale groups are replaced, one group's YAML)
SHAPES = {
    "nodepools": ("cw-demo-h100", """  sg-{i:04d}:
    num_vms: 1
    resources: {{cpu: 64, ram: 512GB, disk: 6.98TiB, device_type: cpu}}
    buffer_slices: 2
    max_slices: 2
    slice_template: {{num_vms: 1, coreweave: {{region: US-EAST-04A, instance_type: cd-gp-i64-erapids}}}}
"""),
    "nodepools-shared": ("cw-demo-h100", None),   # the same groups, one shared CPU flavor
    "tpu": ("gcp-tpu-a", """  tpu-{i:04d}:
    resources: {{device_type: tpu, device_variant: v5litepod-16, device_count: 16}}
    max_slices: 8
"""),
}


def make_workspace(root: Path, groups: int, shape: str = "nodepools") -> str:
    """``root`` as a copy of the shipped workspace (the tests' one helper,
    ``helpers.copy_workspace``) whose ``shape`` cluster (:data:`SHAPES`) has ``groups`` scale
    groups; returns that cluster's stack name. The cluster is edited in place, so it claims
    the cloud identities it claimed before and no other cluster's."""
    from helpers import copy_workspace

    copy_workspace(root)
    cluster, group = SHAPES[shape]
    if shape == "nodepools-shared":   # Marin's way: one flavor for every CPU pool (cw-cpu)
        group = SHAPES["nodepools"][1]
        with (root / "clusterstack.toml").open("a") as toml:
            toml.write('\n[conventions]\ncpu_resource_flavor = "cw-cpu"\n')
    path = root / "clusters" / f"{cluster}.yaml"
    text = path.read_text()
    start = text.index("scale_groups:\n") + len("scale_groups:\n")
    end = text.index("provisioning:", start)
    text = text[:start] + "".join(group.format(i=i) for i in range(groups)) + text[end:]
    if shape.startswith("nodepools"):   # the controller's CPU pool: the first of the copies
        text = text.replace("scale_group: cpu-general", "scale_group: sg-0000")
    path.write_text(text)
    return cluster


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
    ap.add_argument("--groups", default="1,10,64,2000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--gc", choices=("frozen", "on"), default="frozen")
    args = ap.parse_args()
    sizes = sorted(int(g) for g in args.groups.split(","))
    if args.gc == "on":
        import clusterstack.plan.runtime as runtime

        runtime._GC_FROZEN = True           # never freeze, never switch the collector off
        runtime._plan_gc = lambda: __import__("contextlib").nullcontext()
    from clusterstack.errors import ConfigError
    from clusterstack.flows.plan import plan
    from clusterstack.workspace import Workspace

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for shape in args.shapes.split(","):   # each shape's SDKs
            first = Path(tmp) / f"warm-{shape}"
            first.mkdir()
            warm_stack = make_workspace(first, 1, shape)
            plan(Workspace.load(first), [warm_stack])
        warm_up = time.perf_counter() - t0
        for shape in args.shapes.split(","):
            for n in sizes:
                root = Path(tmp) / f"{shape}-{n}"
                root.mkdir()
                stack = make_workspace(root, n, shape)
                row: dict = {"shape": shape, "groups": n, "stack": stack}
                t0 = time.perf_counter()
                try:
                    [planned] = plan(Workspace.load(root), [stack])
                except ConfigError as exc:   # what validate refuses, plan refuses: timed too
                    row.update(refused=str(exc).splitlines()[0].replace(f"{root}/", "")[:300],
                               refused_s=round(time.perf_counter() - t0, 3))
                    rows.append(row)
                    continue
                plan_s = time.perf_counter() - t0
                row.update(resources=len(planned.resources), plan_s=round(plan_s, 3),
                           parse_s=round(parse_floor(root / "clusters" / f"{stack}.yaml"), 3))
                if shape != "tpu":   # the tpu shape declares no resource per group
                    count = len(planned.resources) - 1   # the Stack resource is the SDK's own
                    floor_s, shaped_s = sdk_floor(count), sdk_floor(count, shaped=True)
                    row.update(floor_s=round(floor_s, 3), shaped_floor_s=round(shaped_s, 3),
                               plan_over_floor=round(plan_s / floor_s, 2),
                               plan_over_shaped_floor=round(plan_s / shaped_s, 2))
                rows.append(row)
    print(json.dumps({"gc": args.gc, "first_plan_with_imports_s": round(warm_up, 2),
                      "rows": rows, "gc_enabled_after": gc.isenabled(),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "python": sys.version.split()[0]}, indent=2))


if __name__ == "__main__":
    main()
