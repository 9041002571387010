"""Benchmark of the destructive-change guard over a synthetic 20,000-step preview.

Usage: ``uv run python bench/guard_bench.py [--steps 20000] [--repeat 5]``.

Generates (seeded, so every run sees the same bytes) a ``pulumi preview --json`` document in
Pulumi's own shape — ``display.PreviewDigest`` with ``oldState`` / ``newState`` ResourceV3
objects of realistic size (NodePools, addresses, DNS records, Kueue and core Kubernetes
objects; creates, updates, sames, deletes, imports, logical replaces and
``--show-replacement-steps`` triples, some protected, some retained) — and the same steps as
an engine event stream (a ``resourcePreEvent`` + ``resOutputsEvent`` per step). Then measures,
in this one process:

- wall time of ``parse_file`` (read + JSON decode + Step normalisation) and of ``check``
  (best and median of ``--repeat`` runs, no tracer attached);
- the Python heap peak of one parse+check (tracemalloc, separate run) and the process's peak
  RSS (``resource.getrusage``);
- for the ``up`` path: the per-event cost of ``step_from_event`` + ``check`` on one step;
- end to end: ``clusterstack guard FILE`` in a fresh child process (interpreter start and
  imports included) — wall time, exit code and the child's peak RSS (its ``VmHWM``).

The verdict is checked against an independent count kept by the generator, so the benchmark
cannot time a broken path. Prints one JSON document; docs/performance.md records the results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from clusterstack.pulumi.tokens import ADDRESS as ADDR  # noqa: E402 (cheap: no SDK)
from clusterstack.pulumi.tokens import DNS_RECORD as DNS  # noqa: E402
from clusterstack.pulumi.tokens import GLOBAL_ADDRESS as GADDR  # noqa: E402
from clusterstack.pulumi.tokens import NODEPOOL as NP  # noqa: E402

CQ = "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue"
NS = "kubernetes:core/v1:Namespace"
CM = "kubernetes:core/v1:ConfigMap"
DEP = "kubernetes:apps/v1:Deployment"
# (type, weight, parent component)
TYPES = [(NP, 6, "clusterstack:coreweave:NodePools"), (ADDR, 3, "clusterstack:gcp:StaticAddresses"),
         (GADDR, 1, "clusterstack:gcp:StaticAddresses"), (DNS, 3, "clusterstack:cloudflare:FederationDns"),
         (CQ, 10, "clusterstack:coreweave:Kueue"), (NS, 10, "clusterstack:coreweave:Rbac"),
         (CM, 37, "clusterstack:services:Config"), (DEP, 30, "clusterstack:services:Deploy")]
# logical change → weight; "triple" is create-replacement + replace + delete-replaced
CHANGES = [("same", 15), ("create", 22), ("update", 33), ("delete", 10), ("import", 5),
           ("replace", 8), ("triple", 7)]
PROVIDER = "urn:pulumi:bench::clusterstack::pulumi:providers:kubernetes::k8s::5b7f3c1e-2a9d-4c3b-9e51-0f6a8d2c4b17"
REPLACE_TYPES = {NP, ADDR, GADDR}


def _inputs(typ: str, i: int, v: int) -> dict:
    if typ == NP:
        return {"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
                "metadata": {"name": f"pool-{i}"},
                "spec": {"autoscaling": True, "computeClass": "default",
                         "instanceType": f"gd-8xh{100 + v}ib-i128", "maxNodes": 32 + v, "minNodes": 4,
                         "nodeLabels": {"cks.coreweave.cloud/system-critical": "true",
                                        "lab/managed": "true", "lab/scale-group": f"g{i % 17}"},
                         "targetNodes": 4}}
    if typ in (ADDR, GADDR):
        d = {"address": f"34.16.{i % 250}.{(i // 250) % 250}", "addressType": "EXTERNAL",
             "description": f"pinned address {i} v{v}", "name": f"addr-{i}", "project": "demo-project"}
        if typ == ADDR:
            d["region"] = "us-central1"
        return d
    if typ == DNS:
        return {"content": f"ctl-{i}.coreweave.app", "name": f"ctl-{i}.example.org", "proxied": False,
                "ttl": 1 + v, "type": "CNAME", "zoneId": "0123456789abcdef0123456789abcdef"}
    if typ == CQ:
        return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": f"cq-{i}"},
                "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "resourceGroups": [
                    {"coveredResources": ["nvidia.com/gpu", "rdma/ib"], "flavors": [{"name": f"flavor-{i}", "resources": [
                        {"name": "nvidia.com/gpu", "nominalQuota": 256 + v}, {"name": "rdma/ib", "nominalQuota": 256}]}]}]}}
    if typ == DEP:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"svc-{i}", "namespace": "training"},
                "spec": {"replicas": 2 + v, "selector": {"matchLabels": {"app": f"svc-{i}"}},
                         "template": {"metadata": {"labels": {"app": f"svc-{i}"}},
                                      "spec": {"containers": [{"name": "app", "image": f"ghcr.io/lab/svc:{v}.{i % 97}",
                                                               "resources": {"limits": {"cpu": "2", "memory": "4Gi"}}}]}}}}
    return {"apiVersion": "v1", "kind": typ.rsplit(":", 1)[-1], "metadata": {"name": f"obj-{i}", "namespace": "training"},
            "data": {f"key{k}": f"value-{i}-{k}-{v}" for k in range(6)}}


def _state(urn: str, typ: str, parent: str, inputs: dict, *, protect: bool, retain: bool, old: bool) -> dict:
    st: dict = {"urn": urn, "custom": True}
    if old:
        st["id"] = inputs.get("metadata", {}).get("name") or inputs.get("name") or urn.rsplit("::", 1)[-1]
    st["type"] = typ
    st["inputs"] = inputs
    st["outputs"] = dict(inputs, **({"metadata": dict(inputs["metadata"], uid=f"uid-{hash(urn) & 0xffffffff:08x}",
                                                       resourceVersion="48213377")} if "metadata" in inputs else {}))
    st["parent"] = parent
    if protect:
        st["protect"] = True
    st["provider"] = PROVIDER
    if retain:
        st["retainOnDelete"] = True
    if old:
        st["created"] = "2024-11-20T14:02:11.482913Z"
        st["modified"] = "2024-11-27T09:41:05.118203Z"
    return st


def _blocked(change: str, typ: str, protect: bool, retain: bool) -> bool:
    """Independent oracle of the default policy for the generated mix."""
    if change in ("replace", "triple"):
        return typ in REPLACE_TYPES or protect
    if change == "delete":
        return typ == NP or (typ in (ADDR, GADDR) and not retain) or protect
    return False


def generate(n_steps: int, seed: int = 20000) -> tuple[dict, int, int]:
    """A preview document with exactly ``n_steps`` steps, the expected number of violations and
    of logical destructive changes."""
    rng = random.Random(seed)
    types = [t for t, w, _ in TYPES for _ in range(w)]
    parents = {t: p for t, _, p in TYPES}
    changes = [c for c, w in CHANGES for _ in range(w)]
    steps: list[dict] = []
    violations = destructive = 0
    i = 0
    while len(steps) < n_steps:
        i += 1
        typ = rng.choice(types)
        change = rng.choice(changes)
        if change == "triple" and n_steps - len(steps) < 3:
            change = "update"
        urn = f"urn:pulumi:bench::clusterstack::{parents[typ]}${typ}::r{i}"
        parent = f"urn:pulumi:bench::clusterstack::{parents[typ]}::{parents[typ].rsplit(':', 1)[-1].lower()}"
        protect = typ in (NP, ADDR, GADDR, DNS) and rng.random() < 0.7
        retain = typ in (ADDR, GADDR) and rng.random() < 0.8
        if change == "delete" and protect and rng.random() < 0.5:
            protect = False  # `pulumi state unprotect` done beforehand
        old = _state(urn, typ, parent, _inputs(typ, i, 0), protect=protect, retain=retain, old=True)
        new = _state(urn, typ, parent, _inputs(typ, i, 1), protect=protect, retain=retain, old=False)
        key = "spec" if "spec" in old["inputs"] else ("ttl" if typ == DNS else "description" if "description" in old["inputs"] else "data")
        dd_kind = "update-replace" if change in ("replace", "triple") else "update"
        dd = {f"{key}.x" if key == "spec" else key: {"kind": dd_kind, "inputDiff": False}}
        if change == "same":
            steps.append({"op": "same", "urn": urn, "provider": PROVIDER, "oldState": old, "newState": new, "detailedDiff": None})
        elif change == "create":
            steps.append({"op": "create", "urn": urn, "provider": PROVIDER, "newState": new, "detailedDiff": None})
        elif change == "import":
            steps.append({"op": "import", "urn": urn, "provider": PROVIDER, "newState": dict(new, importID=old["id"]), "detailedDiff": {}})
        elif change == "update":
            steps.append({"op": "update", "urn": urn, "provider": PROVIDER, "oldState": old, "newState": new,
                          "diffReasons": [key], "detailedDiff": dd})
        elif change == "delete":
            steps.append({"op": "delete", "urn": urn, "provider": PROVIDER, "oldState": old, "detailedDiff": None})
        else:
            r = {"urn": urn, "provider": PROVIDER, "oldState": old, "newState": new, "diffReasons": [key],
                 "replaceReasons": [key], "detailedDiff": dd}
            if change == "replace":
                steps.append(dict(r, op="replace"))
            else:
                steps += [dict(r, op="create-replacement"), dict(r, op="replace"),
                          {"op": "delete-replaced", "urn": urn, "provider": PROVIDER, "oldState": old, "detailedDiff": None}]
        if change in ("replace", "triple", "delete"):
            destructive += 1
            violations += _blocked(change, typ, protect, retain)
    summary: dict[str, int] = {}
    for s in steps:
        if s["op"] not in ("create-replacement", "delete-replaced"):
            summary[s["op"]] = summary.get(s["op"], 0) + 1
    doc = {"config": {"clusterstack:cluster": "bench"}, "steps": steps, "duration": 61_000_000_000,
           "changeSummary": summary}
    return doc, violations, destructive


def to_events(doc: dict) -> list[dict]:
    """The same steps as an ``up --json`` engine event stream (pre + outputs per step)."""
    def meta(s: dict) -> dict:
        def st(r):
            if r is None:
                return None
            return {k: r[k] for k in ("type", "urn", "custom", "id", "parent", "protect", "retainOnDelete",
                                      "inputs", "outputs", "provider") if k in r}
        dd = s.get("detailedDiff")
        return {"op": s["op"], "urn": s["urn"], "type": (s.get("newState") or s.get("oldState"))["type"],
                "old": st(s.get("oldState")), "new": st(s.get("newState")),
                "keys": s.get("replaceReasons"), "diffs": s.get("diffReasons"),
                "detailedDiff": None if dd is None else {k: {"diffKind": v["kind"], "inputDiff": v["inputDiff"]} for k, v in dd.items()},
                "logical": s["op"] not in ("create-replacement", "delete-replaced"), "provider": s.get("provider", "")}
    events = [{"preludeEvent": {"config": doc["config"]}}]
    for s in doc["steps"]:
        m = meta(s)
        events += [{"resourcePreEvent": {"metadata": m}}, {"resOutputsEvent": {"metadata": m}}]
    events += [{"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 61, "resourceChanges": doc["changeSummary"],
                                 "PolicyPacks": {}, "isPreview": False}}, {"cancelEvent": {}}]
    return [dict({"sequence": n, "timestamp": 1732700000 + n // 100}, **e) for n, e in enumerate(events)]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_cli(root: Path, file: Path) -> dict:
    """``clusterstack --root ROOT guard FILE`` in a child process: wall ms, exit code, peak RSS.

    The peak is the child's own ``VmHWM`` (``/proc/self/status``), read just before it exits:
    ``ru_maxrss`` from ``wait4`` would include the forking parent's high-water mark, which Linux
    carries across ``exec``."""
    code = ("import sys; from clusterstack.cli import main; rc = main(sys.argv[2:]); "
            "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]; "
            "open(sys.argv[1], 'w').write(hwm[0] if hwm else ''); sys.exit(rc)")
    hwm_file = root / "hwm.txt"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(hwm_file), "--root", str(root), "guard",
                           str(file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    hwm = hwm_file.read_text().strip() if hwm_file.exists() else ""
    return {"wall_ms": round(1000 * wall, 1), "exit_code": proc.returncode,
            "peak_rss_mib": round(int(hwm) / 1024, 1) if hwm else None}


def _timed(fn, repeat: int) -> tuple[list[tuple[float, float]], object]:
    """Run ``fn`` ``repeat`` times; returns [(wall s, CPU s of this process)] and the last
    result. CPU time is the figure to compare on a shared machine: wall time also counts the
    time other processes held the CPU."""
    times, result = [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    return times, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from clusterstack.guard import GuardPolicy, check
    from clusterstack.pulumi.documents import parse_file
    from clusterstack.pulumi.events import step_from_event

    load_at_start = round(os.getloadavg()[0], 2)  # other work on the machine skews wall times

    doc, want_violations, want_destructive = generate(args.steps)
    policy = GuardPolicy()
    with tempfile.TemporaryDirectory() as tmp:
        preview = Path(tmp) / "preview.json"
        preview.write_text(json.dumps(doc, indent=4))  # pulumi's own MarshalIndent layout
        events = to_events(doc)
        stream = Path(tmp) / "events.jsonl"
        stream.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
        del doc

        parse_t, parsed = _timed(lambda: parse_file(preview), args.repeat)
        check_t, verdict = _timed(lambda: check(parsed.steps, policy), args.repeat)
        assert len(parsed.steps) == args.steps
        assert len(verdict.violations) == want_violations, (len(verdict.violations), want_violations)
        assert len(verdict.destructive) == want_destructive

        ev_parse_t, ev_parsed = _timed(lambda: parse_file(stream), args.repeat)
        assert len(ev_parsed.steps) == args.steps
        assert len(check(ev_parsed.steps, policy).violations) == want_violations

        # the `up` path: every streamed event checked on arrival
        def per_event() -> int:
            n = 0
            for e in events:
                s = step_from_event(e)
                if s is not None and not check([s], policy).ok:
                    n += 1
            return n
        stream_t, _ = _timed(per_event, args.repeat)

        del parsed, verdict, ev_parsed
        tracemalloc.start()
        check(parse_file(preview).steps, policy)
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        sizes = (preview.stat().st_size, stream.stat().st_size)

        (Path(tmp) / "clusterstack.toml").write_text("[workspace]\n")
        cli_preview = run_cli(Path(tmp), preview)
        cli_events = run_cli(Path(tmp), stream)
        empty = Path(tmp) / "empty.json"
        empty.write_text('{"steps": []}')
        cli_baseline = run_cli(Path(tmp), empty)

    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    def ms(xs: list[tuple[float, float]]) -> dict:
        wall, cpu = [w for w, _ in xs], [c for _, c in xs]
        return {"wall_best_ms": round(1000 * min(wall), 1), "wall_median_ms": round(1000 * statistics.median(wall), 1),
                "cpu_best_ms": round(1000 * min(cpu), 1), "cpu_median_ms": round(1000 * statistics.median(cpu), 1)}
    print(json.dumps({
        "machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": sys.version.split()[0],
                    "platform": platform.platform(),
                    "loadavg_1m_at_start": load_at_start},
        "steps": args.steps, "repeat": args.repeat,
        "violations": want_violations, "destructive_changes": want_destructive,
        "preview_json_bytes": sizes[0], "event_stream_bytes": sizes[1], "events": len(events),
        "preview_parse": ms(parse_t),
        "check": ms(check_t),
        "preview_parse_plus_check_cpu_best_ms": round(1000 * (min(c for _, c in parse_t) + min(c for _, c in check_t)), 1),
        "event_stream_parse": ms(ev_parse_t),
        "streaming_per_event_cpu_us": round(1e6 * min(c for _, c in stream_t) / len(events), 2),
        "python_heap_peak_mib_parse_check": round(heap_peak / 2**20, 1),
        "peak_rss_mib_bench_process": round(rss_kib / 1024, 1),
        "cli_guard_preview": cli_preview,
        "cli_guard_event_stream": cli_events,
        "cli_guard_empty_preview": cli_baseline,
    }, indent=2))


if __name__ == "__main__":
    main()
