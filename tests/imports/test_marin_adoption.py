"""The adoption promise, held: the adoption report of every stack of examples/marin (planned with
Marin's published configs) against Marin's live objects (tests/fixtures/marin/live: kubectl,
helm and Cloudflare dumps rebuilt from Marin's source by tests/marin/live.py, each object citing
its Marin file and commit) is all same or proven no-op — 0 live changes, 0 refused updates,
0 replaces, 0 objects created that Marin does not run, 0 unverified — under the rules of
``clusterstack import report`` (clusterstack.imports.report). Measured by
``.venv/bin/python tests/imports/marin_adoption.py``; the counts are in docs/adopting-a-cluster.md."""

from __future__ import annotations

import pytest

from imports.marin_adoption import reports, total
from marin.counts import CONFIGS

from clusterstack.imports.report import CHANGE, CREATE, NO_OP, REFUSED, REPLACE, SAME, UNVERIFIED

pytestmark = pytest.mark.skipif(not CONFIGS.is_dir(), reason="Marin's published configs are not in "
                                "../shared/reference/marin/lib/iris/config")


def test_every_marin_stack_adopts_with_no_live_change():
    reps, apart = reports()
    for r in reps:
        c = r.counts
        assert (c[CHANGE], c[REFUSED], c[REPLACE], c[CREATE], c[UNVERIFIED]) == (0, 0, 0, 0, 0), \
            (r.stack, [(row.ref, row.verdict) for row in r.rows if row.verdict not in (SAME, NO_OP)])
    assert {r.stack: r.adopted for r in reps} == {"cw-rno2a": 22, "cw-us-east-02a": 22, "cw-us-east-08a": 22,
                                                  "cw-us-west-04a": 20, "marin": 6}
    assert total(reps) == ("92 of 92 adopted objects are same or a proven no-op; 0 live changes; 0 refused; "
                           "0 replaces; 0 created that Marin does not run; 0 unverified")
    assert apart == {"marin": []}


def test_the_manager_priority_patch_is_adopted_as_a_no_op():
    """The kueue-manager-priority DeploymentPatch (infra/pulumi/src/iac/coreweave/kueue.py@28d310ae)
    is compared with the live Deployment's one patched field, not created."""
    reps, _ = reports()
    for r in reps:
        if r.stack == "marin":
            continue
        (row,) = [row for row in r.rows if row.type == "kubernetes:apps/v1:DeploymentPatch"]
        assert row.ref == "Deployment kueue-system/kueue-controller-manager"
        assert row.verdict in (SAME, NO_OP)
