"""The guard's rules and its [guard] policy table (clusterstack.guard core)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterstack.errors import ClusterstackError
from clusterstack.guard import GuardPolicy, check
from clusterstack.pulumi import tokens
from clusterstack.pulumi.steps import Step, forcing_properties, logical_ops
from clusterstack.pulumi.tokens import ADDRESS, DNS_RECORD, GLOBAL_ADDRESS, NAMESPACE as NS, NODEPOOL
from clusterstack.pulumi.urn import new_urn


def urn(typ: str, name: str) -> str:
    return new_urn("dev", "clusterstack", "", typ, name)


URN = urn(NODEPOOL, "cwdemo-h100")


def blocked(steps, policy=None) -> list[tuple[str, str]]:
    return [(v.op, v.urn.rsplit("::", 1)[-1]) for v in check(steps, policy).violations]


# --- rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["replace", "create-replacement", "delete-replaced",
                                "import-replacement"])
def test_every_replacement_op_of_a_nodepool_is_a_blocked_replace(op):
    assert blocked([Step(op=op, urn=urn(NODEPOOL, "a"), type=NODEPOOL)]) == [("replace", "a")]


@pytest.mark.parametrize("op", ["read-replacement", "discard-replaced"])
def test_replacing_a_read_resource_destroys_nothing(op):
    # step.go OpReadReplacement / OpDiscardReplaced: a *read* resource (not managed by Pulumi)
    # is re-read or its old state discarded; nothing live is deleted
    v = check([Step(op=op, urn=urn(NODEPOOL, "a"), type=NODEPOOL, old_protect=True)])
    assert v.ok and v.destructive == ()


@pytest.mark.parametrize("op", ["same", "create", "update", "read", "refresh", "discard",
                                "remove-pending-replace", "import"])
def test_non_destructive_ops_are_never_blocked_even_when_protected(op):
    s = Step(op=op, urn=urn(NODEPOOL, "a"), type=NODEPOOL, old_protect=True)
    v = check([s])
    assert v.ok and v.destructive == ()


def test_replacement_pair_counts_once_and_merges_conservatively():
    u = urn(NS, "training")
    steps = [Step(op="create-replacement", urn=u, type=NS, replace_reasons=("metadata",)),
             Step(op="replace", urn=u, type=NS, old_protect=True, replace_reasons=("metadata",)),
             Step(op="delete-replaced", urn=u, type=NS)]
    folded = logical_ops(steps)
    assert list(folded) == [u] and folded[u][0] == "replace"
    assert folded[u][1].old_protect is True  # any step protected → protected
    assert blocked(steps) == [("replace", "training")]


def test_address_rules():
    a = urn(ADDRESS, "relay")
    g = urn(GLOBAL_ADDRESS, "anycast")
    assert blocked([Step(op="replace", urn=a, type=ADDRESS)]) == [("replace", "relay")]
    assert blocked([Step(op="replace", urn=g, type=GLOBAL_ADDRESS)]) == [("replace", "anycast")]
    # delete allowed only because it retains on delete
    assert blocked([Step(op="delete", urn=a, type=ADDRESS, old_retain_on_delete=True)]) == []
    assert blocked([Step(op="delete", urn=a, type=ADDRESS)]) == [("delete", "relay")]
    # two delete steps of one URN: retained only if both are
    assert blocked([Step(op="delete", urn=a, type=ADDRESS, old_retain_on_delete=True),
                    Step(op="delete", urn=a, type=ADDRESS)]) == [("delete", "relay")]


def test_dns_record_delete_blocked_only_when_protected():
    d = urn(DNS_RECORD, "ctl")
    assert blocked([Step(op="delete", urn=d, type=DNS_RECORD)]) == []
    assert blocked([Step(op="delete", urn=d, type=DNS_RECORD, old_protect=True)]) == [("delete", "ctl")]
    # replacing a DNS record is not guarded by type
    assert blocked([Step(op="replace", urn=d, type=DNS_RECORD)]) == []


def test_forcing_properties_prefer_detailed_paths_and_keep_uncovered_keys():
    s = Step(op="replace", urn=urn(NODEPOOL, "a"), type=NODEPOOL, replace_reasons=("spec", "zone"),
             diffs=("spec", "zone"),
             detailed_diff={"spec.instanceType": {"kind": "update-replace", "inputDiff": False},
                            "spec.maxNodes": {"kind": "update", "inputDiff": False},
                            "spec.taints[0]": {"kind": "add-replace", "inputDiff": True}})
    assert forcing_properties(s) == ("spec.instanceType", "spec.taints[0]", "zone")
    assert check([s]).violations[0].reasons == ("spec.instanceType", "spec.taints[0]", "zone")
    # no replace reasons at all: the changed keys are shown instead
    plain = Step(op="replace", urn=urn(NODEPOOL, "b"), type=NODEPOOL, diffs=("spec",))
    assert check([plain]).violations[0].reasons == ("spec",)


def test_violations_are_sorted_by_urn_and_render_one_line_per_entry():
    steps = [Step(op="delete", urn=urn(NODEPOOL, n), type=NODEPOOL) for n in ("z", "a", "m")]
    v = check(steps)
    assert [x.urn for x in v.violations] == sorted(x.urn for x in v.violations)
    entry, todo = v.violations[0].render().splitlines()
    assert entry == f"BLOCKED delete NodePool a: {NODEPOOL} may never be deleted by an update"
    assert todo.startswith("  to do: ") and todo.count(urn(NODEPOOL, "a")) == 1
    assert "a deliberate delete of" in todo and "--target" not in todo
    steps = [Step(op="replace", urn=urn(NODEPOOL, "b"), type=NODEPOOL, replace_reasons=("spec.instanceType",))]
    (entry, _) = check(steps).violations[0].lines(indent="  ")
    assert entry.startswith("  BLOCKED replace NodePool b — forced by spec.instanceType: ")


# --- [guard] policy ----------------------------------------------------------------------------

def test_the_default_policy_guards_every_reserved_type():
    p = GuardPolicy.from_toml({})
    assert p == GuardPolicy()
    # buckets (GCS, CoreWeave, R2) may be neither replaced nor deleted by default
    buckets = {tokens.GCS_BUCKET, tokens.COREWEAVE_BUCKET, tokens.R2_BUCKET}
    assert p.forbid_replace == {NODEPOOL, ADDRESS, GLOBAL_ADDRESS} | buckets
    assert p.forbid_delete == {NODEPOOL} | buckets
    assert DNS_RECORD in p.forbid_delete_protected and p.protected_state is True


def test_overrides_replace_the_default_sets():
    steps = [Step(op="replace", urn=urn(NODEPOOL, "np"), type=NODEPOOL),
             Step(op="delete", urn=urn(NS, "ns"), type=NS, old_protect=True),
             Step(op="delete", urn=urn(ADDRESS, "ip"), type=ADDRESS),
             Step(op="delete", urn=urn(tokens.GCS_BUCKET, "b"), type=tokens.GCS_BUCKET)]
    assert sorted(blocked(steps)) == [("delete", "b"), ("delete", "ip"), ("delete", "ns"),
                                      ("replace", "np")]
    p = GuardPolicy.from_toml({"forbid_replace": [], "protected_state": False,
                               "forbid_delete_unretained": [],
                               "forbid_delete": [tokens.GCS_BUCKET]})
    assert blocked(steps, p) == [("delete", "b")]


def test_protected_dns_rule_holds_without_protected_state():
    p = GuardPolicy.from_toml({"protected_state": False})
    d = Step(op="delete", urn=urn(DNS_RECORD, "ctl"), type=DNS_RECORD, old_protect=True)
    n = Step(op="delete", urn=urn(NS, "ns"), type=NS, old_protect=True)
    assert blocked([d, n], p) == [("delete", "ctl")]


def test_replace_properties_merge_with_defaults():
    p = GuardPolicy.from_toml({"replace_properties": {ADDRESS: ["name"], tokens.FIREWALL: ["spec.a"]}})
    assert p.replace_properties[ADDRESS] == ("name",)
    assert p.replace_properties[tokens.FIREWALL] == ("spec.a",)
    assert p.replace_properties[NODEPOOL] == ("spec.instanceType", "metadata.name")


@pytest.mark.parametrize("section, field, needle", [
    ({"forbid_everything": True}, "guard.forbid_everything", "unknown [guard] key"),
    ({"forbid_replace": tokens.ADDRESS}, "guard.forbid_replace", "list of resource type"),
    ({"forbid_delete": [1, 2]}, "guard.forbid_delete", "list of resource type"),
    ({"forbid_delete_unretained": None}, "guard.forbid_delete_unretained", "list of resource type"),
    ({"protected_state": "yes"}, "guard.protected_state", "true or false"),
    ({"replace_properties": ["name"]}, "guard.replace_properties", "must be a table"),
    ({"replace_properties": {ADDRESS: "name"}}, f"guard.replace_properties.{ADDRESS}", "list of property"),
])
def test_bad_policy_is_a_user_error(tmp_path, section, field, needle):
    f = tmp_path / "clusterstack.toml"
    with pytest.raises(ClusterstackError) as ei:
        GuardPolicy.from_toml(section, file=f)
    p = ei.value.problems[0]
    assert ei.value.exit_code == 2 and p.field == field and needle in p.message and p.file == f


@pytest.mark.parametrize("op, protect", [("replace", False), ("replace", True),
                                         ("delete", False), ("delete", True)])
def test_a_nodepool_hint_routes_to_reviewed_intent_never_to_raw_pulumi(op, protect):
    # a forbid_* type is refused whatever protect says: no confirmation helps; the deliberate
    # route is an intent in the cluster file, never `pulumi state unprotect`
    (v,) = check([Step(op=op, urn=URN, type=NODEPOOL, old_protect=protect)]).violations
    assert "typed confirmation" not in v.hint and "clusterstack never performs" in v.hint
    assert "intents:" in v.hint and "docs/retiring-a-pool.md" in v.hint and v.hint.count(URN) == 1
    assert "pulumi " not in v.hint.replace("clusterstack", "")


def test_a_protected_resource_of_another_kind_has_no_raw_pulumi_route():
    role = tokens.CLUSTER_ROLE
    (v,) = check([Step(op="delete", urn=urn(role, "r"), type=role, old_protect=True)]).violations
    assert "protect" in v.rule and "typed confirmation" not in v.hint
    assert "protected resource" in v.hint and "no reviewed route" in v.hint
    assert "pulumi " not in v.hint.replace("clusterstack", "")


def _validate_with_guard(workspace, capsys, table: str) -> tuple[int, str]:
    """Append ``[guard]`` + ``table`` to the workspace's clusterstack.toml and validate: the
    line of ``forbid_replace = `` in the new text and validate's stderr (its exit code is 2)."""
    from clusterstack.cli import main
    from helpers import line_of

    toml = workspace / "clusterstack.toml"
    text = toml.read_text(encoding="utf-8") + "\n[guard]\n" + table
    toml.write_text(text, encoding="utf-8")
    assert main(["--root", str(workspace), "validate"]) == 2
    return line_of(text, "forbid_replace = "), capsys.readouterr().err


def test_a_bad_guard_value_in_clusterstack_toml_is_located(workspace_copy, capsys):
    line, err = _validate_with_guard(workspace_copy, capsys, 'protected_state = "no"\nforbid_replace = "x"\n')
    assert f"clusterstack.toml:{line}: guard.forbid_replace: must be a list" in err


@pytest.mark.parametrize("section, field, message, hint", [
    ({"forbid_replace": ["gcp:compute/adress:Address"]}, "guard.forbid_replace",
     "unknown resource type 'gcp:compute/adress:Address'", f"did you mean {ADDRESS!r}?"),
    ({"forbid_delete": ["kubernetes:compute.coreweave.com/v1alpha1:Nodepool"]}, "guard.forbid_delete",
     "unknown resource type", f"did you mean {NODEPOOL!r}?"),
    ({"forbid_delete_protected": ["NodePool"]}, "guard.forbid_delete_protected",
     "not a type token <package>:<module>:<member>: 'NodePool'", "clusterstack plan --json"),
    ({"replace_properties": {"gcp:storage/bucket:Bukket": ["name"]}},
     "guard.replace_properties.gcp:storage/bucket:Bukket", "unknown resource type",
     f"did you mean {tokens.GCS_BUCKET!r}?"),
])
def test_a_type_token_typo_is_a_located_error_with_did_you_mean(section, field, message, hint):
    # before, the typo silently dropped that type's rule: the guard no longer guarded it
    with pytest.raises(ClusterstackError) as ei:
        GuardPolicy.from_toml(section, file=Path("clusterstack.toml"), line_of=lambda *k: 7)
    p = ei.value.problems[0]
    assert (p.field, p.line, ei.value.exit_code) == (field, 7, 2)
    assert message in p.message and hint in p.hint


def test_a_token_at_another_api_version_is_the_same_family():
    v1 = NODEPOOL.replace("/v1alpha1:", "/v1:")
    p = GuardPolicy.from_toml({"forbid_replace": [v1]})
    assert p.forbids("forbid_replace", NODEPOOL)
    assert GuardPolicy.from_toml({"forbid_replace": ["x:y:Z"]}, check_tokens=False).forbid_replace == {"x:y:Z"}


def test_validate_names_the_typo_at_its_line(workspace_copy, capsys):
    line, err = _validate_with_guard(workspace_copy, capsys, 'forbid_replace = ["gcp:compute/adress:Address"]\n')
    assert (f"clusterstack.toml:{line}: guard.forbid_replace: unknown "
            "resource type 'gcp:compute/adress:Address'") in err and f"did you mean {ADDRESS!r}?" in err


@pytest.mark.parametrize("table, key, message", [
    ("[guard.capacity]\ntolerate_nodes = 1\n\ntolerate_gpus = -5\n", "tolerate_gpus = -5",
     "guard.capacity.tolerate_gpus: must be a whole number ≥ 0"),
    ('[guard.cost]\nwarn_monthly_increase = 10\nblock_monthly_increase = "lots"\n',
     'block_monthly_increase = "lots"', "guard.cost.block_monthly_increase: must be a number of dollars"),
    ("[guard.cost]\nblock_monthly_increase = -1.5\n", "block_monthly_increase = -1.5",
     "guard.cost.block_monthly_increase: must be a number of dollars"),
])
def test_a_bad_capacity_or_cost_value_is_one_error_at_its_key(workspace_copy, capsys, table, key, message):
    from clusterstack.cli import main
    from helpers import line_of

    toml = workspace_copy / "clusterstack.toml"
    text = toml.read_text(encoding="utf-8") + "\n" + table
    toml.write_text(text, encoding="utf-8")
    before = {p: p.stat().st_mtime_ns for p in workspace_copy.rglob("*") if p.is_file()}
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"clusterstack.toml:{line_of(text, key)}: {message}" in err, err
    assert err.count("error:") == 1 and ".int" not in err and ".float" not in err
    assert "Traceback" not in err
    assert {p: p.stat().st_mtime_ns for p in workspace_copy.rglob("*") if p.is_file()} == before
