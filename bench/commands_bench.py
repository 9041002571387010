"""Where the time of a command goes: each command against its floor, cold and warm.

Usage: ``uv run python bench/commands_bench.py [--stacks 1,10,50,200] [--groups 1,10,100,2000]
[--runs 3]``. Every figure is a whole process (the ``clusterstack`` console script started from
here, waited for with ``os.wait4`` for its own peak RSS), the median of ``--runs``:

- **floor**: a process that only imports the modules the command had loaded when it finished
  (read from the command's own ``sys.modules`` in a probe run), in the order it loaded them —
  what the command cannot go below without loading less;
- **cold**: no bytecode cache (``PYTHONPYCACHEPREFIX`` pointed at an empty directory and
  ``PYTHONDONTWRITEBYTECODE=1``: every imported source is compiled, as in a one-shot job whose
  environment has no ``.pyc``); **warm**: the environment's compiled bytecode (``make install``
  compiles it);
- commands: ``validate``; ``plan cw-demo-h100`` and the same stack without its DNS record;
  ``plan --all`` at each ``--stacks`` size (copies of cw-demo-h100) and a second run of it;
  ``diff --all --base HEAD`` of the same workspace as a git repository; ``plan`` of one cluster
  with each ``--groups`` number of scale groups (bench/scale_bench.py's cluster).

Prints one JSON document with the rows and the done-when ratios; docs/performance.md
records a run with its machine and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from scale_bench import make_workspace as scale_workspace  # noqa: E402

PROBE = ("import sys, json, atexit\n"
         "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(list(sys.modules))))\n"
         "from clusterstack.cli import main\n"
         "sys.exit(main(sys.argv[2:]))\n")


# import each module the command had loaded, in its order (a few, such as ``__main__`` or
# modules a package deletes from sys.modules again, cannot be imported by name: skipped)
FLOOR = ("import importlib, json, sys\n"
         "for m in json.loads(sys.argv[1]):\n"
         "    try:\n"
         "        importlib.import_module(m)\n"
         "    except Exception:\n"
         "        pass\n")


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """``(wall s, peak RSS MiB, exit code)`` of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


def measure(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> dict:
    results = [run_once(argv, cwd, env) for _ in range(runs)]
    return {"s": round(statistics.median(r[0] for r in results), 2),
            "rss": round(statistics.median(r[1] for r in results)),
            "exit": sorted({r[2] for r in results})}


def envs(tmp: Path) -> dict[str, dict[str, str]]:
    warm = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX",)}
    warm.pop("PYTHONDONTWRITEBYTECODE", None)
    cold = dict(warm, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(tmp / "no-pyc"))
    return {"cold": cold, "warm": dict(warm, PYTHONDONTWRITEBYTECODE="1")}


def floor_of(args: list[str], cwd: Path, tmp: Path, env: dict[str, str]) -> list[str]:
    out = tmp / "modules.json"
    subprocess.run([sys.executable, "-c", PROBE, str(out), *args], cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mods = [m for m in json.loads(out.read_text()) if not m.startswith("__")
            and m not in sys.builtin_module_names]
    return mods


def stacks_workspace(root: Path, n: int, *, dns: bool = True) -> Path:
    """``root`` with ``n`` copies of cw-demo-h100 (``dns=False``: without federation DNS)."""
    root.mkdir(parents=True)
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "clusters").mkdir()
    infra = root / "infra"
    infra.mkdir()
    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / "infra" / f, infra / f)
    template = (REPO / "clusters" / "cw-demo-h100.yaml").read_text()
    if not dns:
        lines = template.splitlines(keepends=True)
        start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("federation_dns:"))
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = next((i for i in range(start + 1, len(lines))
                    if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent),
                   len(lines))
        template = "".join(lines[:start] + lines[end:])
    for i in range(n):
        name = "cw-demo-h100" if n == 1 else f"bench-{i:03d}"
        (root / "clusters" / f"{name}.yaml").write_text(template.replace(
            "name: cw-demo-h100", f"name: {name}").replace("label_prefix: cwdemo",
                                                            f"label_prefix: b{i:03d}"))
        (infra / f"Pulumi.{name}.yaml").write_text(f"config:\n  clusterstack:cluster: {name}\n")
    # the [projects] dirs stay out: the table lists only the cluster project
    toml = (root / "clusterstack.toml").read_text()
    if "[projects" in toml:
        (root / "clusterstack.toml").write_text(toml[:toml.index("[projects")])
    return root


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=b@example.org", *args],
                   cwd=root, check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", default="1,10,50,200")
    ap.add_argument("--groups", default="1,10,100,2000")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    cli = [str(Path(sys.executable).parent / "clusterstack")]  # the console script
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        env = envs(tmp)

        def row(name: str, args: list[str], cwd: Path, *, floor: bool = True) -> dict:
            r: dict = {"command": name}
            mods = floor_of(args, cwd, tmp, env["warm"]) if floor else []
            for kind in ("cold", "warm"):
                r[kind] = measure(cli + ["--root", str(cwd), *args], cwd, env[kind], a.runs)
                if floor:
                    r[f"floor_{kind}"] = measure([sys.executable, "-c", FLOOR, json.dumps(mods)],
                                                 cwd, env[kind], a.runs)
            r["modules"] = len(mods) if floor else None
            rows.append(r)
            print(json.dumps(r), file=sys.stderr)
            return r

        one = stacks_workspace(tmp / "one", 1)
        nodns = stacks_workspace(tmp / "nodns", 1, dns=False)
        row("validate", ["validate"], one)
        dns_row = row("plan cw-demo-h100", ["plan", "cw-demo-h100"], one)
        nodns_row = row("plan cw-demo-h100 without DNS", ["plan", "cw-demo-h100"], nodns)
        ratios = {"cold plan with DNS / without": round(dns_row["cold"]["s"] / nodns_row["cold"]["s"], 2)}
        for n in (int(x) for x in a.stacks.split(",")):
            ws = stacks_workspace(tmp / f"s{n}", n)
            first = row(f"plan --all, {n} stacks", ["plan", "--all", "--json"], ws)
            again = measure(cli + ["--root", str(ws), "plan", "--all", "--json"], ws,
                            env["warm"], a.runs)
            rows.append({"command": f"plan --all, {n} stacks, second run", "warm": again})
            ratios[f"first / second warm plan --all, {n} stacks"] = round(first["warm"]["s"] / again["s"], 2)
            git(ws, "init", "-q", "-b", "main")
            git(ws, "add", "-A")
            git(ws, "commit", "-q", "-m", "bench")
            d = row(f"diff --all --base HEAD, {n} stacks", ["diff", "--all", "--base", "HEAD"], ws,
                    floor=False)
            ratios[f"diff / plan --all, {n} stacks, warm"] = round(d["warm"]["s"] / first["warm"]["s"], 2)
            ratios[f"diff / plan --all, {n} stacks, cold"] = round(d["cold"]["s"] / first["cold"]["s"], 2)
        for g in (int(x) for x in a.groups.split(",")):
            root = tmp / f"g{g}"
            root.mkdir()
            scale_workspace(root, g)
            row(f"plan, one cluster with {g} scale groups", ["plan", "scale"], root, floor=False)
    print(json.dumps({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
                      "machine": f"{os.cpu_count()} CPU, {platform.machine()}, Python {platform.python_version()}",
                      "load_before": os.getloadavg(), "rows": rows, "ratios": ratios}, indent=1))


if __name__ == "__main__":
    main()
