"""Benchmark of ``clusterstack ci``: parallel preview fan-out and the PR comment.

Usage: ``uv run python bench/ci_bench.py [--stacks 8] [--max-sleep 1.2]``.

1. **Fan-out.** Every stack's preview is a FakeEngine preview that first sleeps (stands in
   for the Pulumi CLI subprocess: a sleeping thread, like one waiting on a child process,
   releases the GIL). The stacks sleep 0.3 s … ``--max-sleep`` (spread evenly; the sum is
   what a sequential run costs, the maximum what a fully parallel one should cost). Each
   outcome is checked by the guard and written (meta.json + redacted diff), exactly as
   ``ci preview`` does; measured for ``--parallel`` 1, 2, 4 and N (= the number of stacks),
   plus the CLI itself (``clusterstack ci preview --all``, progress bar included) over the
   example workspace's 7 stacks.
2. **Comment.** ``ci comment`` over 60 stacks with 100 changed resources each (≈ 10 KB of
   diff per stack, 0.6 MB in all), rendered into 60,000 bytes with fair truncation: wall time
   of load + render.

Prints one JSON document; docs/performance.md records the results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))  # the fakes (tests/fakes/)

from clusterstack.ci.comment import load_reports, render_comment  # noqa: E402
from clusterstack.ci.discover import StackTarget  # noqa: E402
from clusterstack.ci.preview import preview_target, run_previews, write_outcome  # noqa: E402
from clusterstack.ci.redaction import Redactor  # noqa: E402
from clusterstack.guard import GuardPolicy  # noqa: E402
from fakes.pulumi import FakeEngine, FakeStack, np_step, res_step  # noqa: E402


class SleepingEngine(FakeEngine):
    """A FakeEngine whose preview of a stack takes ``delays[stack]`` seconds."""

    def __init__(self, stacks, delays: dict[str, float]) -> None:
        super().__init__(stacks)
        self.delays = delays

    def preview(self, stack, *, refresh=False, targets=()):
        time.sleep(self.delays[stack])
        return super().preview(stack, refresh=refresh, targets=targets)


def steps(stack: str, n: int = 20) -> tuple:
    return tuple(np_step("update", stack, f"pool-{i}", changed={"maxNodes": (16, 16 + i)}) for i in range(n))


def fan_out(n: int, max_sleep: float) -> dict:
    names = [f"stack-{i:02d}" for i in range(n)]
    delays = {s: round(0.3 + (max_sleep - 0.3) * i / max(n - 1, 1), 3) for i, s in enumerate(names)}
    eng = SleepingEngine({s: FakeStack(steps=steps(s)) for s in names}, delays)
    targets = [StackTarget("clusters", s) for s in names]
    policy, red = GuardPolicy(), Redactor()
    rows = []
    for parallel in sorted({1, 2, 4, n}):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            outcomes = run_previews(targets, lambda t: preview_target(t, engine=lambda _: eng, policy=policy),
                                    parallel=parallel, on_done=lambda o: write_outcome(Path(d), o, red))
            wall = time.perf_counter() - t0
            assert [o.severity for o in outcomes] == ["change"] * n
            assert len(list(Path(d).rglob("meta.json"))) == n
        rows.append({"parallel": parallel, "wall_s": round(wall, 3)})
    return {"stacks": n, "sum_of_sleeps_s": round(sum(delays.values()), 3),
            "slowest_stack_s": max(delays.values()), "runs": rows}


def cli_fan_out() -> dict:
    """`clusterstack ci preview --all --parallel 7` over the example workspace, engines sleeping."""
    from clusterstack.cli import main
    from clusterstack.workspace import Workspace

    ws = Workspace.load(ROOT)
    from clusterstack.ci.discover import all_stacks

    ids = all_stacks(ws)
    delays = {t.stack: 0.4 + 0.1 * i for i, t in enumerate(ids)}
    engines = {}

    keys = {ref.directory: ref.key for ref in ws.projects}

    def engine(ws_, *, project_dir=None, **_kw):
        key = "clusters" if project_dir is None else keys[project_dir]
        if key not in engines:
            engines[key] = SleepingEngine(
                {t.stack: FakeStack(steps=steps(t.stack, 5)) for t in ids if t.project == key}, delays)
        return engines[key]

    from clusterstack import cli
    from clusterstack.clients import Clients

    cli.out.file = sys.stderr  # the command's summary lines; stdout carries the JSON only
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        code = main(["--root", str(ROOT), "ci", "preview", "--all", "--parallel", str(len(ids)), "--out", d],
                    clients=Clients.production().replace(engine=engine))
        wall = time.perf_counter() - t0
    assert code == 0, code
    return {"stacks": len(ids), "sum_of_sleeps_s": round(sum(delays.values()), 3),
            "slowest_stack_s": round(max(delays.values()), 3), "wall_s": round(wall, 3)}


def comment_bench() -> dict:
    fw = "gcp:compute/firewall:Firewall"
    n = 60
    names = [f"stack-{i:02d}" for i in range(n)]
    eng = FakeEngine({s: FakeStack(steps=tuple(
        res_step("update", s, fw, f"rule-{j:03d}", old={"sourceRanges": ["10.0.0.0/8"]},
                 new={"sourceRanges": [f"10.{j}.0.0/16"]}, detailed_diff={"sourceRanges[0]": {"kind": "update"}})
        for j in range(100))) for s in names})
    with tempfile.TemporaryDirectory() as d:
        for s in names:
            write_outcome(Path(d), preview_target(StackTarget("clusters", s), engine=lambda _: eng,
                                                  policy=GuardPolicy()), Redactor())
        diff_bytes = sum(p.stat().st_size for p in Path(d).rglob("diff.txt"))
        t0 = time.perf_counter()
        c = render_comment(load_reports(Path(d)), max_bytes=60_000)
        wall = time.perf_counter() - t0
    return {"stacks": n, "diff_bytes": diff_bytes, "comment_bytes": len(c.body.encode()),
            "cut": len(c.cut), "omitted": len(c.omitted), "wall_s": round(wall, 3)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=8)
    ap.add_argument("--max-sleep", type=float, default=1.2)
    args = ap.parse_args()
    doc = {"python": platform.python_version(), "cpus": os.cpu_count(),
           "load_avg_1m": round(os.getloadavg()[0], 2),
           "fan_out": fan_out(args.stacks, args.max_sleep), "cli_fan_out": cli_fan_out(),
           "comment": comment_bench()}
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
