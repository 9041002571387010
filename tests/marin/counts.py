"""Count how far ``examples/marin`` is from Marin's own objects: per cluster, the objects the
plan declares exactly as Marin does (``same``), differently (``changed``), that Marin does not
run (``created``: the first ``up`` would create them), and that Marin runs but the plan does not
declare (``missing``), against the catalogue (tests/marin/catalogue.py).

``same`` means the plan's inputs equal Marin's declared inputs key for key — what Pulumi's diff
compares after an import; resource options (protect, ignoreChanges, retainOnDelete) are state
only and are listed apart (``options``).

Re-run after merging other branches::

    .venv/bin/python tests/marin/counts.py                 # plans examples/marin with Marin's configs
    .venv/bin/python tests/marin/counts.py PLAN.json        # a `clusterstack plan --all --json` document
    .venv/bin/python tests/marin/counts.py --json [PLAN.json]

Marin's configs are read from ``../shared/reference/marin/lib/iris/config`` (see its SOURCE.md).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:          # run as a script: the catalogue is a sibling module
    sys.path.insert(0, str(TESTS))

from marin.catalogue import Expected, catalogue, plan_key  # noqa: E402

REPO = TESTS.parent
EXAMPLE = REPO / "examples" / "marin"
CONFIGS = REPO.parent / "shared" / "reference" / "marin" / "lib" / "iris" / "config"
STACKS = ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a", "marin")
OUTCOMES = ("same", "changed", "created", "missing")
# The GCP kinds this catalogue covers (catalogue.gcp); a GCP stack's other objects (IAM members,
# custom roles, service accounts, the load balancer) are Marin's too but catalogued elsewhere.
GCP_TYPES = ("gcp:compute/address:Address", "gcp:artifactregistry/repository:Repository")


@dataclass
class StackCount:
    """The classified objects of one stack: outcome → sorted ``kind namespace/name`` lines."""

    stack: str
    objects: dict[str, list[str]] = field(default_factory=lambda: {o: [] for o in OUTCOMES})
    changed_fields: dict[str, list[str]] = field(default_factory=dict)   # object → top-level keys differing
    options: dict[str, dict[str, Any]] = field(default_factory=dict)    # object → {option: (plan, marin)}
    uncatalogued: list[str] = field(default_factory=list)   # GCP objects of kinds catalogued elsewhere (IAM, GCLB)

    def count(self, outcome: str) -> int:
        return len(self.objects[outcome])


def config(stack: str, configs: Path = CONFIGS) -> dict:
    return yaml.safe_load((configs / f"{stack}.yaml").read_text(encoding="utf-8"))


def _label(key: tuple[str, str, str]) -> str:
    kind, ns, name = key
    return f"{kind} {ns + '/' if ns else ''}{name}"


def _diff_keys(a: Any, b: Any, path: str = "") -> list[str]:
    """The paths (to depth 3) where ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict) and path.count(".") < 2:
        out = []
        for k in sorted(set(a) | set(b)):
            if a.get(k, KeyError) != b.get(k, KeyError):
                out += _diff_keys(a.get(k), b.get(k), f"{path}.{k}" if path else k) or [k]
        return out
    return [path] if a != b else []


def _options(r: Any, e: Expected) -> dict[str, Any]:
    plan = {"protect": r.protect, "retainOnDelete": r.retain_on_delete, "ignoreChanges": list(r.ignore_changes)}
    marin = {"protect": False, "retainOnDelete": False, "ignoreChanges": [], **e.options}
    return {k: (plan[k], marin[k]) for k in plan if plan[k] != marin[k]}


def classify(stack: str, plan: Any, cfg: dict) -> StackCount:
    """Classify every object of ``plan`` (a clusterstack.plan.StackPlan of ``stack``) against
    Marin's catalogue for ``cfg``."""
    out = StackCount(stack)
    expected = {e.key: e for e in catalogue(stack, cfg)}
    planned = {k: r for r in plan.resources if (k := plan_key(r)) is not None}
    for key, e in expected.items():
        r = planned.get(key) if e.name is not None else None
        if r is None:
            out.objects["missing"].append(_label(key))
            continue
        if r.inputs == e.inputs:
            out.objects["same"].append(_label(key))
        else:
            out.objects["changed"].append(_label(key))
            out.changed_fields[_label(key)] = _diff_keys(r.inputs, e.inputs)
        if opts := _options(r, e):
            out.options[_label(key)] = opts
    gcp = cfg["provisioning"]["provider"] == "gcp"
    for key, r in planned.items():
        if key in expected:
            continue
        if gcp and r.type not in GCP_TYPES:    # Marin's GcpIam / GCLB: catalogued by branches iammarin, gcp
            out.uncatalogued.append(f"{r.type} {r.name}")
        else:
            out.objects["created"].append(_label(key))
    out.uncatalogued.sort()
    for v in out.objects.values():
        v.sort()
    return out


def plan_example(configs: Path = CONFIGS) -> dict[str, Any]:
    """Plan every stack of ``examples/marin`` with Marin's configs (a temporary copy)."""
    from clusterstack.plan import plan_stack

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "marin"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
        for s in STACKS:
            shutil.copy(configs / f"{s}.yaml", root / "lib" / "iris" / "config" / f"{s}.yaml")
        return {s: plan_stack(root / "infra" / "clusterstack", s) for s in STACKS}


def count(plans: dict[str, Any], configs: Path = CONFIGS) -> list[StackCount]:
    return [classify(s, plans[s], config(s, configs)) for s in STACKS if s in plans]


def totals(counts: list[StackCount]) -> dict[str, int]:
    return {o: sum(c.count(o) for c in counts) for o in OUTCOMES}


def render(counts: list[StackCount]) -> str:
    lines = [f"{'stack':<16}" + "".join(f"{o:>9}" for o in OUTCOMES)]
    for c in counts:
        lines.append(f"{c.stack:<16}" + "".join(f"{c.count(o):>9}" for o in OUTCOMES))
    t = totals(counts)
    lines.append(f"{'total':<16}" + "".join(f"{t[o]:>9}" for o in OUTCOMES))
    for c in counts:
        if c.uncatalogued:
            lines.append(f"  {c.stack}: {len(c.uncatalogued)} object(s) of kinds catalogued elsewhere (IAM, GCLB)")
        for o in ("changed", "created", "missing"):
            for obj in c.objects[o]:
                extra = f"  ({', '.join(c.changed_fields[obj])})" if o == "changed" else ""
                lines.append(f"  {c.stack}: {o:<8} {obj}{extra}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    if args:
        from clusterstack.plan import loads

        plans = {p.stack: p for p in loads(Path(args[0]).read_text(encoding="utf-8"))}
    else:
        plans = plan_example()
    counts = count(plans)
    if as_json:
        doc = {"totals": totals(counts), "stacks": {c.stack: {"objects": c.objects, "changed": c.changed_fields}
                                                    for c in counts}}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
