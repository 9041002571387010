"""Where the time of a command goes: each command against its floor, cold and warm, and
every performance target of the tool in one run.

Usage: ``uv run python bench/commands_bench.py [--stacks 1,10,50,200] [--groups 1,10,100,2000]
[--validate 50,200] [--runs 3] [--markdown FILE]``. Every figure is a whole process (the
``clusterstack`` console script started from here, waited for with ``os.wait4`` for its own
peak RSS), the median of ``--runs``:

- **floor**: a process that only imports the modules the command had loaded when it finished
  (read from the command's own ``sys.modules`` in a probe run), in the order it loaded them —
  what the command cannot go below without loading less (``plan --all``: at the first size
  only; it loads the same modules at every size);
- **cold**: no bytecode cache (``PYTHONPYCACHEPREFIX`` pointed at an empty directory and
  ``PYTHONDONTWRITEBYTECODE=1``: every imported source is compiled, as in a one-shot job whose
  environment has no ``.pyc``); **warm**: the environment's compiled bytecode (``make install``
  compiles it);
- commands: ``validate`` (the shipped-size workspace, then ``--validate`` copies of
  cw-demo-h100); ``plan cw-demo-h100`` and the same stack without its DNS record; ``plan --all``
  at each ``--stacks`` size (copies of cw-demo-h100) and a second run of it; ``diff --all --base
  HEAD`` of the same workspace as a git repository, once with ``--no-cache`` and once with the
  base's plans in the per-stack cache (filled by one run before, as CI restores it);
  the target ratio of ``diff`` (base cached) to ``plan --all`` is taken pair by pair
  (:func:`paired`: A B A B …, at least 4 pairs);
  bench/scale_bench.py's in-process plans of one cluster with each ``--groups`` number of scale
  groups, in its three shapes (CoreWeave NodePools with a flavor each, refused above the 64
  flavors a ClusterQueue takes; NodePools under one shared CPU flavor; TPU groups, which declare
  nothing per group), beside the Pulumi SDK's own registration
  floor for as many resources and the parse of the cluster file; then ``plan`` of each planned
  one as a whole process.

Prints one JSON document (rows, target figures with their targets, other ratios, machine,
date, load before and after, the run's duration); ``--markdown FILE`` also writes the block that
docs/performance.md carries ("Where the time goes").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
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


def measure(argv: list[str], cwd: Path, env: dict[str, str], runs: int, before=None) -> dict:
    results = []
    for _ in range(runs):
        if before is not None:
            before()
        results.append(run_once(argv, cwd, env))
    codes = sorted({r[2] for r in results})
    if codes != [0]:
        raise SystemExit(f"{' '.join(argv)} (in {cwd}) exited {codes}: a failing command "
                         "measures nothing — fix the benchmark's workspace")
    return {"s": round(statistics.median(r[0] for r in results), 2),
            "rss": round(statistics.median(r[1] for r in results)),
            "exit": sorted({r[2] for r in results})}


def paired(argv_a: list[str], argv_b: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    """Median over ``runs`` pairs, run A B A B …, of wall(A) / wall(B): a ratio that holds
    when the machine's speed drifts between runs (two unpaired medians of a few runs each moved
    a 0.97 ratio to 1.47 on this shared machine)."""
    out = []
    for _ in range(runs):
        a, _, code_a = run_once(argv_a, cwd, env)
        b, _, code_b = run_once(argv_b, cwd, env)
        if (code_a, code_b) != (0, 0):
            raise SystemExit(f"{' '.join(argv_a)} / {' '.join(argv_b)} exited {code_a}/{code_b}")
        out.append(a / b)
    return round(statistics.median(out), 2)


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
        # each copy its own cloud identities (CKS cluster, DNS name): validate refuses two
        # stacks owning one (validation/identities.py)
        text = template.replace("cw-demo-h100", "\0").replace("demo-h100", f"{name}-cks")
        (root / "clusters" / f"{name}.yaml").write_text(text.replace("\0", name).replace(
            "label_prefix: cwdemo", f"label_prefix: b{i:03d}"))
        (infra / f"Pulumi.{name}.yaml").write_text(f"config:\n  clusterstack:cluster: {name}\n")
    # the [projects] dirs and the IAM file stay out: the tables list only the cluster project
    toml = (root / "clusterstack.toml").read_text()
    if "[projects" in toml:
        toml = toml[:toml.index("[projects")]
    toml = re.sub(r"(?ms)^\[iam\]\n.*?(?=^\[|\Z)", "", toml)
    (root / "clusterstack.toml").write_text(toml)
    return root


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=b@example.org", *args],
                   cwd=root, check=True, capture_output=True)


def fmt(m: dict | None) -> str:
    return "—" if not m else f"{m['s']:.2f} s / {m['rss']} MiB"


def ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("nan")


def markdown(doc: dict) -> str:
    """The block docs/performance.md carries: the command, machine, date, the table and the
    target ratios with their targets."""
    out = [f"`{doc['command']}` — {doc['date']}, {doc['machine']}, load average before "
           f"{doc['load_before'][0]:.1f}, after {doc['load_after'][0]:.1f}; the whole run took "
           f"{doc['duration_min']:.1f} min. Median of {doc['runs']} runs per cell, whole "
           "processes, wall / peak RSS.", "",
           "| command | modules | cold | floor cold | warm | floor warm |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in doc["rows"]:
        mods = r.get("modules")
        out.append(f"| `{r['command']}` | {mods if mods is not None else '—'} | "
                   f"{fmt(r.get('cold'))} | {fmt(r.get('floor_cold'))} | {fmt(r.get('warm'))} | "
                   f"{fmt(r.get('floor_warm'))} |")
    out += ["", "| target ratio or figure | value | target | met |", "| --- | ---: | ---: | --- |"]
    for name, (value, target, unit) in doc["done_when"].items():
        met = "yes" if value == value and value <= target else "**no**"
        out.append(f"| {name} | {value}{unit} | ≤ {target}{unit} | {met} |")
    out += ["", "| other ratio | value |", "| --- | ---: |"]
    out += [f"| {k} | {v} |" for k, v in doc["ratios"].items()]
    if doc.get("scale_in_process"):
        def cell(r: dict) -> str:
            if "refused" in r:
                return f"{r['groups']} → refused in {r['refused_s']:.2f} s (“{r['refused']}”)"
            floors = (f"; SDK registration floor {r['floor_s']:.2f} s, in the program's shape "
                      f"{r['shaped_floor_s']:.2f} s" if "floor_s" in r else "")
            return (f"{r['groups']} → {r['plan_s']:.2f} s ({r['resources']} resources{floors}, "
                    f"parse {r['parse_s']:.2f} s)")
        for shape in dict.fromkeys(r["shape"] for r in doc["scale_in_process"]["rows"]):
            out += ["", f"In-process plan time of one cluster by {shape} scale groups "
                    "(bench/scale_bench.py, imports paid by a first plan): " + ", ".join(
                        cell(r) for r in doc["scale_in_process"]["rows"] if r["shape"] == shape) + "."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", default="1,10,50,200")
    ap.add_argument("--groups", default="1,10,64,2000")
    ap.add_argument("--validate", default="50,200", help="cluster counts for validate")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path, default=None,
                    help="also write the Markdown block for docs/performance.md here")
    a = ap.parse_args()
    started = time.perf_counter()
    cli = [str(Path(sys.executable).parent / "clusterstack")]  # the console script
    rows: list[dict] = []
    done: dict[str, tuple[float, float, str]] = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        env = envs(tmp)

        def row(name: str, args: list[str], cwd: Path, *, floor: bool = True,
                kinds: tuple[str, ...] = ("cold", "warm"), before=None) -> dict:
            r: dict = {"command": name}
            mods = floor_of(args, cwd, tmp, env["warm"]) if floor else []
            for kind in kinds:
                r[kind] = measure(cli + ["--root", str(cwd), *args], cwd, env[kind], a.runs,
                                  before=before)
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
        for n in (int(x) for x in a.validate.split(",") if x):
            ws = stacks_workspace(tmp / f"v{n}", n)
            v = row(f"validate, {n} clusters", ["validate"], ws, floor=False, kinds=("warm",))
            done[f"warm `validate` of {n} clusters"] = (v["warm"]["s"], 2.0, " s")
        dns_row = row("plan cw-demo-h100", ["plan", "cw-demo-h100"], one)
        nodns_row = row("plan cw-demo-h100 without DNS", ["plan", "cw-demo-h100"], nodns)
        done["cold plan with DNS / without"] = (ratio(dns_row["cold"]["s"], nodns_row["cold"]["s"]), 1.3, "")
        ratios: dict[str, float] = {}
        for i, n in enumerate(int(x) for x in a.stacks.split(",")):
            ws = stacks_workspace(tmp / f"s{n}", n)
            # the floor of plan --all is the same module set at every size: measured once
            first = row(f"plan --all, {n} stacks", ["plan", "--all", "--json"], ws, floor=i == 0)
            again = measure(cli + ["--root", str(ws), "plan", "--all", "--json"], ws,
                            env["warm"], a.runs)
            rows.append({"command": f"plan --all, {n} stacks, second run", "warm": again})
            done[f"first / second warm plan --all, {n} stacks"] = (ratio(first["warm"]["s"], again["s"]), 1.2, "")
            git(ws, "init", "-q", "-b", "main")
            git(ws, "add", "-A")
            git(ws, "commit", "-q", "-m", "bench")
            d = row(f"diff --all --base HEAD --no-cache, {n} stacks",
                    ["diff", "--all", "--base", "HEAD", "--no-cache"], ws, floor=False)
            cache = ws / ".clusterstack-cache"
            subprocess.run(cli + ["--root", str(ws), "diff", "--all", "--base", "HEAD"], cwd=ws,
                           env=env["warm"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            dc = row(f"diff --all --base HEAD, {n} stacks, base plans in the cache",
                     ["diff", "--all", "--base", "HEAD"], ws, floor=False)
            for kind in ("warm", "cold"):
                ratios[f"diff --no-cache / plan --all, {n} stacks, {kind}"] = ratio(d[kind]["s"], first[kind]["s"])
                ratios[f"diff / plan --all, {n} stacks, {kind} (base cached), unpaired medians"] = ratio(
                    dc[kind]["s"], first[kind]["s"])
                done[f"diff / plan --all, {n} stacks, {kind} (base cached), paired"] = (paired(
                    cli + ["--root", str(ws), "diff", "--all", "--base", "HEAD"],
                    cli + ["--root", str(ws), "plan", "--all", "--json"], ws, env[kind],
                    max(a.runs, 4)), 1.3, "")
            shutil.rmtree(cache, ignore_errors=True)
        scale = subprocess.run([sys.executable, str(REPO / "bench" / "scale_bench.py"),
                                "--groups", a.groups], env=env["warm"], capture_output=True,
                               text=True)
        scale_doc = json.loads(scale.stdout) if scale.returncode == 0 else None
        if scale.returncode != 0:
            sys.exit(f"bench/scale_bench.py failed:\n{scale.stderr[-2000:]}")
        biggest = max(int(x) for x in a.groups.split(","))
        for r in scale_doc["rows"]:   # the same clusters as whole processes; a refusal exits 2
            if "refused" in r:
                continue
            root = tmp / f"{r['shape']}-{r['groups']}"
            root.mkdir()
            stack = scale_workspace(root, r["groups"], r["shape"])
            w = row(f"plan, one cluster with {r['groups']} {r['shape']} scale groups",
                    ["plan", stack], root, floor=False)
            if r["shape"] == "tpu" and r["groups"] == biggest:
                ratios[f"{biggest} tpu scale groups / 1 cluster plan, warm process"] = ratio(
                    w["warm"]["s"], dns_row["warm"]["s"])
        by = {(r["shape"], r["groups"]): r for r in scale_doc["rows"]}
        if ("tpu", biggest) in by:
            done[f"{biggest} scale groups (tpu: the groups are the scheduler's), in-process plan"] = (
                by["tpu", biggest]["plan_s"], 2.0, " s")
        if ("nodepools-shared", biggest) in by and "refused" not in by["nodepools-shared", biggest]:
            big = by["nodepools-shared", biggest]
            done[f"{biggest} scale groups (NodePools, one shared CPU flavor), in-process plan"] = (
                big["plan_s"], 2.0, " s")
            ratios[f"{biggest} NodePool scale groups (shared flavor): the SDK's registration floor of "
                   f"{big['resources'] - 1} bare resources, s"] = big["floor_s"]
            ratios[f"{biggest} NodePool scale groups (shared flavor), in-process plan / that floor"] = (
                big["plan_over_floor"])
            ratios[f"{biggest} NodePool scale groups (shared flavor), in-process plan / the same "
                   "resources in the program's shape"] = big["plan_over_shaped_floor"]
        planned = [r for r in scale_doc["rows"] if r["shape"] == "nodepools" and "refused" not in r]
        refused = [r for r in scale_doc["rows"] if r["shape"] == "nodepools" and "refused" in r]
        if planned:
            top = max(planned, key=lambda r: r["groups"])
            ratios[f"{top['groups']} NodePool scale groups, in-process plan, s"] = top["plan_s"]
            ratios[f"{top['groups']} NodePool scale groups, in-process plan / the SDK's registration "
                   f"floor of {top['resources'] - 1} bare resources"] = top["plan_over_floor"]
            ratios[f"{top['groups']} NodePool scale groups, in-process plan / the same resources in "
                   "the program's shape (parents, provider, a NodePool's options)"] = (
                top["plan_over_shaped_floor"])
        for r in refused:
            ratios[f"{r['groups']} NodePool scale groups: refused before planning, s"] = r["refused_s"]
    argv = " ".join(sys.argv[1:])
    doc = {"command": f"uv run python bench/commands_bench.py {argv}".strip(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
           "machine": f"{os.cpu_count()} CPU, {platform.machine()}, {platform.system()}, "
                      f"Python {platform.python_version()}",
           "runs": a.runs, "load_before": LOAD_BEFORE, "load_after": os.getloadavg(),
           "duration_min": round((time.perf_counter() - started) / 60, 1),
           "rows": rows, "done_when": done, "ratios": ratios, "scale_in_process": scale_doc}
    print(json.dumps(doc, indent=1))
    if a.markdown is not None:
        a.markdown.write_text(markdown(doc), encoding="utf-8")


LOAD_BEFORE = os.getloadavg()

if __name__ == "__main__":
    main()
