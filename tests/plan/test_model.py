"""The plan's canonical JSON read back (:func:`clusterstack.plan.model.loads`): whatever text a
REF's planner, a cache entry or a file gives, the reader answers with plans or a ValueError
(which ``diff --base`` turns into an exit-2 error naming the ref), never another exception."""

from __future__ import annotations

import json

import pytest

from clusterstack.plan.model import FORMAT, StackPlan, dumps, loads


def test_a_plan_round_trips():
    plan = StackPlan(project="clusterstack", stack="s", outputs={"n": 1}, resources=())
    assert loads(dumps([plan])) == [plan]


@pytest.mark.parametrize("text, problem", [
    ('{"format": "%s", "stacks": [], "n": %s}' % (FORMAT, "9" * 5000), "out of range"),
    ('{"format": "%s", "stacks": [{"project": "p", "stack": "s", "outputs": {"x": NaN}, "resources": []}]}'
     % FORMAT, "NaN is not a JSON number"),
    ('{"format": "%s", "stacks": [' % FORMAT, "Expecting"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[]", "not a clusterstack plan (format 'list')"),
    (json.dumps({"format": "something/v9", "stacks": []}), "format 'something/v9'"),
    (json.dumps({"format": FORMAT}), "no member 'stacks'"),
    (json.dumps({"format": FORMAT, "stacks": [{"project": "p"}]}), "no member 'stack'"),
    (json.dumps({"format": FORMAT, "stacks": 5}), "a member of another shape"),
])
def test_anything_but_a_plan_is_a_value_error(text, problem):
    with pytest.raises(ValueError) as exc:
        loads(text)
    assert type(exc.value) in (ValueError, json.JSONDecodeError) and problem in str(exc.value)
