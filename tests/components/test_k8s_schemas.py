"""Every Kubernetes object and Helm value of every shipped example stack, checked strictly
against the authoritative schemas of the pinned versions (checker: k8s_schemas.py).

Reference schemas: ``../shared/reference/`` (Kueue v0.14.4, cert-manager v1.19.1,
traefik-helm-chart v37.2.0), never copied into the repository; the tests skip, saying so,
where the directory is absent. Core kinds: ``kubernetes-validate`` (strict) at Kubernetes
1.32 and 1.33. NodePool and Kueue Configuration: tests/schemas/ (cited there).
"""

from __future__ import annotations

import copy

import pytest

from k8s_schemas import (CERT_MANAGER_REF, KUEUE_REF, TRAEFIK_REF, Report, SchemaChecker, check_plan,
                         plan_objects, reference_dir)

REFERENCE = reference_dir()
pytestmark = pytest.mark.skipif(REFERENCE is None, reason="shared/reference/ (the authoritative "
                                "CRDs and values schemas) is absent beside the repository")
COREWEAVE_STACKS = ("cw-demo-gb200", "cw-demo-h100")


@pytest.fixture(scope="module")
def checker() -> SchemaChecker:
    assert REFERENCE is not None
    return SchemaChecker(REFERENCE)


@pytest.mark.parametrize("stack", ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams", "gcp-demo"])
def test_every_declared_object_and_value_passes_the_strict_schemas(checker, example_plans, stack):
    report = check_plan(checker, example_plans[stack], Report())
    assert report.violations == []
    if stack in COREWEAVE_STACKS:  # the check really ran, on every kind a CoreWeave stack declares
        kinds = {o["kind"] for o in plan_objects(example_plans[stack])}
        assert {"NodePool", "Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "ClusterIssuer",
                "Middleware", "Ingress", "Namespace", "Role", "ClusterRole", "PriorityClass"} <= kinds
        assert report.checked >= 19  # objects + three charts' values + the Kueue Configuration
    # Only transition rules (oldSelf: evaluated by the API server on update, never on create)
    # may go unevaluated; anything else cel-python cannot evaluate must show up here.
    assert all("transition rule" in s for s in report.skipped_rules), sorted(report.skipped_rules)


def test_pinned_chart_versions_are_the_reference_versions(checker):
    """A chart bump must come with its schemas: the pins equal the reference's versions."""
    from clusterstack.components.coreweave.ingress import CERT_MANAGER_CHART, TRAEFIK_CHART
    from clusterstack.components.coreweave.kueue import KUEUE_CHART

    assert checker.chart_files(CERT_MANAGER_CHART.chart)[2] == CERT_MANAGER_CHART.version == "v1.19.1"
    assert checker.chart_files(TRAEFIK_CHART.chart)[2] == TRAEFIK_CHART.version
    assert checker.chart_files(KUEUE_CHART.chart)[2] == KUEUE_CHART.version
    assert (CERT_MANAGER_REF, TRAEFIK_REF, KUEUE_REF) == (
        f"cert-manager-{CERT_MANAGER_CHART.version}", f"traefik-helm-chart-v{TRAEFIK_CHART.version}",
        f"kueue-v{KUEUE_CHART.version}")
    for ref in (CERT_MANAGER_REF, TRAEFIK_REF, KUEUE_REF):
        assert (REFERENCE / ref).is_dir(), f"{ref} is not in shared/reference/"


# --- the checker catches what an API server would reject or prune -------------------------

def _object(example_plans, kind: str, name: str | None = None) -> dict:
    (obj,) = [o for o in plan_objects(example_plans["cw-demo-h100"]) if o["kind"] == kind
              and name in (None, o["metadata"]["name"])][:1]
    return copy.deepcopy(obj)


def _violations(checker, obj) -> list[str]:
    report = Report()
    checker.check_object(obj, report)
    return report.violations


def test_catches_an_unknown_field_of_a_crd(checker, example_plans):
    cq = _object(example_plans, "ClusterQueue")
    assert _violations(checker, cq) == []
    cq["spec"]["resourceGroups"][0]["flavours"] = []
    (v,) = _violations(checker, cq)
    assert "spec.resourceGroups[0]" in v and "'flavours' was unexpected" in v


def test_catches_a_wrong_enum(checker, example_plans):
    cq = _object(example_plans, "ClusterQueue")
    cq["spec"]["queueingStrategy"] = "FIFO"
    (v,) = _violations(checker, cq)
    assert "spec.queueingStrategy" in v and "'FIFO' is not one of" in v


def test_catches_an_unserved_api_version(checker, example_plans):
    topology = _object(example_plans, "Topology")
    topology["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    (v,) = _violations(checker, topology)
    assert "apiVersion kueue.x-k8s.io/v1alpha1 is not served" in v and "['v1beta1']" in v


def test_catches_an_unknown_kind_of_a_known_group(checker):
    (v,) = _violations(checker, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Queue",
                                 "metadata": {"name": "q"}})
    assert "kind Queue is not served" in v


def test_catches_a_failed_cel_rule(checker, example_plans):
    topology = _object(example_plans, "Topology", "infiniband")
    topology["spec"]["levels"].reverse()  # Kueue: hostname, if present, must be the last level
    assert any("CEL rule failed" in v for v in _violations(checker, topology))


def test_catches_an_unknown_field_of_a_core_kind_in_both_kubernetes_versions(checker, example_plans):
    ns = _object(example_plans, "Namespace")
    assert _violations(checker, ns) == []
    ns["spec"] = {"finalizers": ["kubernetes"], "color": "blue"}
    violations = _violations(checker, ns)
    assert len(violations) == 2 and all("color" in v for v in violations)


def test_catches_an_unknown_metadata_field(checker, example_plans):
    cq = _object(example_plans, "ClusterQueue")
    cq["metadata"]["label"] = {"a": "b"}
    (v,) = _violations(checker, cq)
    assert "'label' was unexpected" in v


def test_nodepool_schema_requires_exactly_one_of_target_nodes_and_racks(checker, example_plans):
    pool = [o for o in plan_objects(example_plans["cw-demo-gb200"]) if o["kind"] == "NodePool"
            and "targetRacks" in o["spec"]][0]
    assert _violations(checker, pool) == []
    both = copy.deepcopy(pool)
    both["spec"]["targetNodes"] = 216
    assert any("Exactly one of targetNodes and targetRacks" in v for v in _violations(checker, both))
    typo = copy.deepcopy(pool)
    typo["spec"]["instancetype"] = typo["spec"].pop("instanceType")
    assert len(_violations(checker, typo)) == 2  # instanceType missing, instancetype unknown


@pytest.mark.parametrize("chart,values,needle", [
    ("traefik", {"ingressClass": {"enabled": True, "default": False}}, "'default' was unexpected"),
    ("traefik", {"servise": {"spec": {}}}, "values.servise: not a key"),
    ("cert-manager", {"crds": {"enabled": "yes"}}, "'yes' is not of type 'boolean'"),
    ("cert-manager", {"installCRDs": True, "crd": {}}, "'crd' was unexpected"),
    ("oci://registry.k8s.io/kueue/charts/kueue",
     {"controllerManager": {"manager": {"priorityClass": "x"}}}, "manager.priorityClass: not a key"),
])
def test_catches_bad_helm_values(checker, chart, values, needle):
    report = Report()
    checker.check_values(chart, values, report, "test")
    assert any(needle in v for v in report.violations), report.violations


def test_catches_an_unknown_kueue_configuration_field(checker):
    report = Report()
    checker.check_kueue_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta1",
                                       "kind": "Configuration",
                                       "integrations": {"frameworks": ["batch/job", "jobset"]},
                                       "manageJobsWithoutQueue": True}, report, "test")
    assert len(report.violations) == 2
