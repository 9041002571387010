"""validate ≡ plan on mutated configs (property-based, hypothesis): each example edits one
shipped reviewed file (tests/mutations.py: a line deleted or repeated, a value retyped, a bad
byte, the file cut short) and runs validate and the plan that reads the file, in-process.

The contract: validate ok ⇒ plan ok (equivalently, plan refuses ⇒ validate refuses); neither
exits 1 (an internal error) nor prints a traceback. Bounded and derandomised so the suite stays
fast and deterministic; bench/fuzz_bench.py runs the same property on many more inputs."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from helpers import REPO
from mutations import Mutation, agreement, mutations


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_validate_and_plan_agree_on_mutated_configs(mutation):
    outcome = agreement(mutation)
    assert not outcome.problems, (outcome.problems, outcome.output[-2000:])


def test_the_property_can_fail():
    # The check is real: a clean copy validates and plans; a repeated key is refused by both.
    lines = (REPO / "clusters" / "gcp-tpu-a.yaml").read_text().split("\n")
    assert lines[0].startswith("# ")
    clean = agreement(Mutation("clusters/gcp-tpu-a.yaml", "retype", 0, "x"))  # a comment grows
    assert (clean.validate_rc, clean.plan_rc, clean.problems) == (0, 0, []), clean.output
    repeated = agreement(Mutation("clusters/gcp-tpu-a.yaml", "repeat", lines.index("name: gcp-tpu-a")))
    assert (repeated.validate_rc, repeated.plan_rc) == (2, 2), repeated.output
    assert "Traceback" not in repeated.output
