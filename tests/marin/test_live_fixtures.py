"""tests/fixtures/marin/live/: the live objects of Marin's fleet as kubectl, helm and gcloud
print them, rebuilt from the catalogue (tests/marin/live.py). They are what the module writes
(regenerate with ``.venv/bin/python tests/marin/live.py --write``), they hold no email, they
read back to Marin's declared values, and the plan of examples/marin equals them wherever this
branch made an object exact."""

from __future__ import annotations

import re

import pytest

from marin.catalogue import MADE_HERE, catalogue, plan_key
from marin.counts import STACKS
from marin.live import LIVE, load, render

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")


@pytest.mark.parametrize("stack", STACKS)
def test_fixtures_are_what_the_catalogue_renders(marin_configs, stack):
    for name, text in render(stack, marin_configs[stack]).items():
        assert (LIVE / name).read_text(encoding="utf-8") == text, \
            f"{name} is stale: run .venv/bin/python tests/marin/live.py --write"


def test_no_fixture_holds_an_email():
    for path in sorted(LIVE.glob("*.yaml")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            body = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            assert not EMAIL.search(body), f"{path.name}:{lineno}: {line.strip()}"


@pytest.mark.parametrize("stack", STACKS)
def test_fixtures_read_back_to_marins_values(marin_configs, stack):
    cfg = marin_configs[stack]
    objects = [o for p in sorted(LIVE.glob(f"{stack}.*yaml")) for o in load(p, cfg)]
    k8s = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
           for o in objects if "metadata" in o}
    for e in catalogue(stack, cfg):
        if e.inputs is None or e.kind in ("Release", "DnsRecord", "Address", "Repository"):
            continue
        live = dict(k8s[e.key])
        if e.kind == "Namespace":     # the API server's default label (KEP-2161), not declared
            live["metadata"] = {k: v for k, v in live["metadata"].items() if k != "labels"}
        assert live == e.inputs, e.key
    if cfg["provisioning"]["provider"] == "coreweave":
        emails = [o["spec"]["acme"]["email"] for o in k8s.values() if o["kind"] == "ClusterIssuer"]
        assert emails and set(emails) == {cfg["provisioning"]["coreweave"]["ingress"]["acme_email"]}


@pytest.mark.parametrize("stack", [s for s in STACKS if s != "marin"])
def test_the_plan_equals_the_dump_where_made_exact(marin_plans, marin_configs, stack):
    """For every Kubernetes object this branch made exact, the plan declares exactly the
    dumped object's fields (the dump minus the API server's Namespace label)."""
    cfg = marin_configs[stack]
    (dump,) = [p for p in LIVE.glob(f"{stack}.yaml")]
    live = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in load(dump, cfg)}
    planned = {plan_key(r): r for r in marin_plans[stack].resources if plan_key(r) is not None}
    made_here = [e for e in catalogue(stack, cfg) if e.owner == MADE_HERE and e.key in live]
    assert {e.kind for e in made_here} >= {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    for e in made_here:
        obj = dict(live[e.key])
        if e.kind == "Namespace":
            obj["metadata"] = {"name": e.name}
        assert planned[e.key].inputs == obj, e.key
