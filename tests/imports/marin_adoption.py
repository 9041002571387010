"""The adoption promise, measured by the adoption rules: for ``examples/marin`` planned with
Marin's published configs, compared with Marin's live objects (tests/fixtures/marin/live: kubectl,
helm and gcloud dumps rebuilt from Marin's source, placeholders filled from the configs by
tests/marin/live.py), the adoption report of every stack and the total line

    N of M adopted objects are same or a proven no-op; K live changes; R refused; P replaces;
    C created that Marin does not run; U unverified

— the verdicts of ``clusterstack import report`` (clusterstack.imports.report): what the first
``up`` after ``import apply`` would do, under Pulumi's import and diff rules and the API
servers' (an import artefact is a no-op, an immutable field is refused, a forceNew field a
replace). The GCP stack is judged on the kinds the dumps hold (addresses, registry mirrors);
its IAM and load-balancer objects have their own adoption and are listed apart.

Run after merging other branches::

    .venv/bin/python tests/imports/marin_adoption.py            # the report lines and the total
    .venv/bin/python tests/imports/marin_adoption.py --json     # every report, as JSON
    .venv/bin/python tests/imports/marin_adoption.py --verbose  # every object of every report
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:          # run as a script
    sys.path.insert(0, str(TESTS))

from marin.counts import CONFIGS, STACKS, config, plan_example  # noqa: E402
from marin.live import LIVE, load  # noqa: E402

from clusterstack.guard import GuardPolicy  # noqa: E402
from clusterstack.imports.live import GCP_TYPES, DumpView  # noqa: E402
from clusterstack.imports.report import (CHANGE, CREATE, NO_OP, ORDER, REFUSED, REPLACE, SAME,  # noqa: E402
                                         UNVERIFIED, AdoptionReport, live_report, render_text)
from clusterstack.pulumi import tokens  # noqa: E402


def dumps(stack: str, cfg: dict, directory: Path) -> list[Path]:
    """The stack's live fixtures with the config's values put back, written as JSON lists."""
    out = []
    for name in (f"{stack}.yaml", f"{stack}.helm.yaml", f"{stack}.cloudflare.json"):
        src = LIVE / name
        if not src.is_file():
            continue
        if name.endswith(".json"):       # Cloudflare's own answer, no placeholder: as it is
            out.append(src)
            continue
        objects = load(src, cfg)
        if name.endswith(".helm.yaml"):
            objects = [{"releases": objects}]
        path = directory / f"{name}.json"
        path.write_text(json.dumps(objects), encoding="utf-8")
        out.append(path)
    return out


def reports(plans: dict[str, Any] | None = None) -> tuple[list[AdoptionReport], dict[str, list[str]]]:
    """The adoption report of every Marin stack, and per GCP stack the URNs not compared (kinds
    the live fixtures do not hold)."""
    plans = plans or plan_example()
    policy = GuardPolicy()
    out, apart = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for stack in STACKS:
            cfg = config(stack, CONFIGS)
            plan = plans[stack]
            leaves = [r for r in plan.resources if r.custom and not r.is_provider and r.type != tokens.STACK_TYPE]
            urns = [r.urn for r in leaves]
            if cfg["provisioning"]["provider"] == "gcp":
                urns = [r.urn for r in leaves if r.type in GCP_TYPES]
                apart[stack] = sorted(r.urn for r in leaves if r.type not in GCP_TYPES)
            view = DumpView(dumps(stack, cfg, Path(tmp)))
            out.append(live_report(plan, view, urns=urns, replace_paths=policy.replace_paths,
                                   absent_label="Marin"))
    return out, apart


def total(reports_: list[AdoptionReport]) -> str:
    c = {v: sum(r.count(v) for r in reports_) for v in ORDER}
    adopted = sum(r.adopted for r in reports_)
    return (f"{c[SAME] + c[NO_OP]} of {adopted} adopted objects are same or a proven no-op; "
            f"{c[CHANGE]} live changes; {c[REFUSED]} refused; {c[REPLACE]} replaces; "
            f"{c[CREATE]} created that Marin does not run; {c[UNVERIFIED]} unverified")


def main(argv: list[str]) -> int:
    reps, apart = reports()
    if "--json" in argv:
        print(json.dumps({"stacks": [r.to_json() for r in reps], "total": total(reps),
                          "notCompared": apart}, sort_keys=True, indent=2))
        return 0
    for r in reps:
        if "--verbose" in argv:
            print("\n".join(render_text(r)))
        else:
            print(f"{r.stack}: {r.summary}")
    for stack, urns in apart.items():
        print(f"{stack}: {len(urns)} object(s) of kinds the live fixtures do not hold (IAM, load "
              "balancer: their own adoption), not compared")
    print(f"total: {total(reps)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
