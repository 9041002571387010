"""`clusterstack validate` over N synthetic CoreWeave clusters: is it linear?

Usage: ``uv run python bench/validate_bench.py --clusters 50 100 200``. Builds a temporary
workspace per N with copies of the shipped ``cw-demo-h100`` (each with its own CKS cluster,
queue and DNS name, so the one-owner check passes), runs ``validate`` in-process, prints the
wall time per N and per cluster. Results: docs/performance.md ("validate").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def build(root: Path, n: int) -> None:
    from helpers import copy_workspace

    copy_workspace(root)
    src = (root / "clusters" / "cw-demo-h100.yaml").read_text()
    stack = (root / "infra" / "Pulumi.cw-demo-h100.yaml").read_text()
    for i in range(n):
        name = f"cw-bench-{i:03d}"
        text = (src.replace("name: cw-demo-h100\n", f"name: {name}\n", 1)
                .replace("demo-h100", f"bench{i:03d}").replace("ctl-cw-demo-h100", f"ctl-{name}"))
        (root / "clusters" / f"{name}.yaml").write_text(text)
        (root / "infra" / f"Pulumi.{name}.yaml").write_text(stack.replace("cw-demo-h100", name))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", type=int, nargs="+", default=[50, 100, 200])
    args = ap.parse_args()
    from clusterstack.cli import main as cli

    for n in args.clusters:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d) / "ws"
            build(root, n)
            out, err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli(["--root", str(root), "validate"])
            dt = time.perf_counter() - t0
            total = n + 5
            print(f"{total:4d} clusters: rc={rc} {dt:6.2f} s  {1000 * dt / total:5.1f} ms/cluster"
                  + (f"  {err.getvalue().splitlines()[:1]}" if rc else ""))


if __name__ == "__main__":
    main()
