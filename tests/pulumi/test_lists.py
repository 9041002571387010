"""The list keys of the receiving systems (clusterstack.pulumi.lists): the table agrees with the
schemas it cites, covers every keyed list a shipped stack declares, and the keyed comparison
names items by key — a deleted CPU pool never reads as "GPU quota 0 → 256"."""

from __future__ import annotations

import pytest
import yaml

from helpers import REPO
from k8s_schemas import KUBERNETES_VERSIONS, KUEUE_REF, reference_dir
from clusterstack.plan import loads, plan_stack
from clusterstack.pulumi import tokens
from clusterstack.config.types import size_note
from clusterstack.pulumi.lists import LIST_KEYS, is_size, keyed_leaves, list_key, rekey
from clusterstack.pulumi.paths import WILDCARD, Key, contains, format_path, parse_path

MISSING = object()
CQ = tokens.KUEUE_CLUSTER_QUEUE


# --- the schemas: Kueue's CRDs, Kubernetes' OpenAPI ------------------------------------------

_KUEUE_PLURALS = {tokens.KUEUE_CLUSTER_QUEUE: "clusterqueues", tokens.KUEUE_TOPOLOGY: "topologies",
                  tokens.KUEUE_TOPOLOGY_V1ALPHA1: "topologies",
                  tokens.KUEUE_RESOURCE_FLAVOR: "resourceflavors",
                  tokens.KUEUE_LOCAL_QUEUE: "localqueues"}
_CORE_DEFS = {tokens.DEPLOYMENT: "io.k8s.api.apps.v1.Deployment",
              tokens.K8S_SERVICE: "io.k8s.api.core.v1.Service",
              tokens.CLUSTER_ROLE: "io.k8s.api.rbac.v1.ClusterRole",
              tokens.ROLE: "io.k8s.api.rbac.v1.Role",
              tokens.CLUSTER_ROLE_BINDING: "io.k8s.api.rbac.v1.ClusterRoleBinding",
              tokens.ROLE_BINDING: "io.k8s.api.rbac.v1.RoleBinding",
              tokens.INGRESS: "io.k8s.api.networking.v1.Ingress",
              tokens.NAMESPACE: "io.k8s.api.core.v1.Namespace",
              tokens.K8S_SERVICE_ACCOUNT: "io.k8s.api.core.v1.ServiceAccount",
              tokens.PRIORITY_CLASS: "io.k8s.api.scheduling.v1.PriorityClass",
              tokens.PERSISTENT_VOLUME_CLAIM: "io.k8s.api.core.v1.PersistentVolumeClaim"}


def _core_definitions(version: str) -> dict:
    """kubernetes-validate's copy of Kubernetes' OpenAPI definitions (``$defs``)."""
    from kubernetes_validate import utils

    return utils.schema_contents(
        f"kubernetes-json-schema/v{version}-local/_definitions.json", version)["$defs"]


def _crd_schema(type_: str) -> dict:
    ref = reference_dir()
    if ref is None:
        pytest.skip("shared/reference/ (the pinned Kueue CRDs) is absent beside the repository")
    crd = yaml.safe_load((ref / KUEUE_REF / "config/components/crd/bases" /
                          f"kueue.x-k8s.io_{_KUEUE_PLURALS[type_]}.yaml").read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    return version["schema"]["openAPIV3Schema"]


def _node(schema: dict, path: tuple, defs: dict | None = None) -> dict | None:
    """The schema node at ``path`` (``*``: a list's items), following ``$ref``s."""
    def deref(n):
        while isinstance(n, dict) and "$ref" in n and defs is not None:
            n = defs[n["$ref"].rsplit("/", 1)[1]]
        return n

    node = deref(schema)
    for seg in path:
        node = deref(node.get("items") if seg == WILDCARD else (node.get("properties") or {}).get(seg))
        if node is None:
            return None
    return node


def _schema_of(type_: str, version: str = KUBERNETES_VERSIONS[-1]) -> tuple[dict, dict | None]:
    if type_ in _KUEUE_PLURALS:
        return _crd_schema(type_), None
    defs = _core_definitions(version)
    return defs[_CORE_DEFS[type_]], defs


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("type_", sorted(LIST_KEYS))
def test_every_key_is_the_one_its_schema_declares(type_, version):
    schema, defs = _schema_of(type_, version)
    for path, key in LIST_KEYS[type_].items():
        node = _node(schema, path, defs)
        where = f"{type_} {format_path(path)}"
        assert node is not None and "array" in (node.get("type") if isinstance(node.get("type"), list)
                                                else [node.get("type")]), where
        if key.source == "schema":
            assert node.get("x-kubernetes-list-type") == "map", where
            assert tuple(node["x-kubernetes-list-map-keys"]) == key.fields, where
            items = _node(schema, (*path, WILDCARD), defs)
            for field, value in key.defaults:   # the API server's default, as its schema says
                text = items["properties"][field]["description"]
                assert "efault" in text and value in text, (where, field, text)
        else:
            # a display key only where the schema keys nothing (the list is stored whole)
            assert node.get("x-kubernetes-list-type") == "atomic", where
            assert key.source == "display"
            if key.ordered:   # Topology levels: unique by the CRD's own CEL rule
                rules = [r["rule"] for r in node.get("x-kubernetes-validations", ())]
                assert "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0" in rules


def _plans():
    for f in sorted((REPO / "tests" / "golden").glob("*.json")):
        text = f.read_text(encoding="utf-8")
        if '"clusterstack.plan/' in text[:200]:
            yield from loads(text)
    yield plan_stack(REPO / "services" / "logrelay", "cw-demo-h100")


def _lists(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _lists(v, (*path, k))
    elif isinstance(value, list):
        yield path
        for v in value:
            yield from _lists(v, (*path, WILDCARD))


def test_every_keyed_list_a_shipped_stack_declares_is_in_the_table():
    """Every list in a shipped stack's inputs that its schema keys (list-type map) is keyed by
    the table; a list the table does not key is one the schema stores whole."""
    checked = 0
    defs_by_type: dict = {}
    for plan in _plans():
        for r in plan.resources:
            if r.type not in _KUEUE_PLURALS and r.type not in _CORE_DEFS:
                continue
            schema, defs = defs_by_type.setdefault(r.type, _schema_of(r.type))
            for path in set(_lists(r.inputs)):
                node = _node(schema, path, defs)
                if node is None:
                    continue
                checked += 1
                declared = node.get("x-kubernetes-list-type") == "map"
                assert (list_key(r.type, path) is not None) >= declared, (r.type, path)
    assert checked > 10


# --- the keyed comparison ------------------------------------------------------------------

def _flavor(name: str, cpu: int, memory: str, disk: str, gpus: int) -> dict:
    return {"name": name, "resources": [
        {"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory},
        {"name": "ephemeral-storage", "nominalQuota": disk},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus}, {"name": "rdma/ib", "nominalQuota": gpus}]}


CPU = _flavor("cwdemo-cpu-general-flavor", 256, "2048G", "30698364647504", 0)
H100 = _flavor("cwdemo-h100-flavor", 4096, "65536G", "32T", 256)


def _cq(*flavors: dict) -> dict:
    return {"spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory", "ephemeral-storage",
                                                               "nvidia.com/gpu", "rdma/ib"],
                                         "flavors": list(flavors)}]}}


def _leaves(old, new, type_=CQ):
    return [(format_path(leaf.segments), leaf.old, leaf.new, leaf.note)
            for leaf in keyed_leaves(old, new, type_=type_, absent=MISSING)]


def test_deleting_the_cpu_pool_reads_as_its_flavor_removed_never_as_a_gpu_quota_change():
    leaves = _leaves(_cq(CPU, H100), _cq(H100))
    base = 'spec.resourceGroups[0].flavors[name="cwdemo-cpu-general-flavor"]'
    assert leaves == [
        (f'{base}.resources[name="cpu"].nominalQuota', 256, MISSING, ""),
        (f'{base}.resources[name="memory"].nominalQuota', "2048G", MISSING, ""),
        (f'{base}.resources[name="ephemeral-storage"].nominalQuota', "30698364647504", MISSING, ""),
        (f'{base}.resources[name="nvidia.com/gpu"].nominalQuota', 0, MISSING, ""),
        (f'{base}.resources[name="rdma/ib"].nominalQuota', 0, MISSING, "")]
    # the H100 flavor, now first in the list, is unchanged: nothing of it is reported
    assert not any("h100" in p for p, *_ in leaves)


def test_a_quota_change_is_named_by_its_flavor_and_resource():
    grown = _flavor("cwdemo-h100-flavor", 5120, "81920G", "40T", 320)
    leaves = _leaves(_cq(CPU, H100), _cq(CPU, grown))
    gpu = 'spec.resourceGroups[0].flavors[name="cwdemo-h100-flavor"].resources[name="nvidia.com/gpu"].nominalQuota'
    assert (gpu, 256, 320, "") in leaves
    assert not any("[3]" in p or "[1]" in p for p, *_ in leaves)


def test_a_new_flavor_reports_each_quota_and_a_reordered_map_list_reports_nothing():
    leaves = _leaves(_cq(H100), _cq(CPU, H100))
    assert len(leaves) == 5 and all(o is MISSING for _, o, _, _ in leaves)
    assert _leaves(_cq(CPU, H100), _cq(H100, CPU)) == []   # flavors: a map, order is no change


def test_topology_levels_are_keyed_by_node_label_and_a_reorder_is_reported():
    levels = lambda *ls: {"spec": {"levels": [{"nodeLabel": x} for x in ls]}}
    t = tokens.KUEUE_TOPOLOGY
    assert _leaves(levels("a", "b", "c"), levels("b", "a", "c"), t) == [
        ("spec.levels", ["a", "b", "c"], ["b", "a", "c"], "order")]
    assert _leaves(levels("a", "c"), levels("a", "b", "c"), t) == [
        ('spec.levels[nodeLabel="b"]', MISSING, {"nodeLabel": "b"}, ""),
        ("spec.levels", ["a", "c"], ["a", "b", "c"], "order")]


def test_rbac_rules_are_keyed_by_what_they_grant():
    rule = lambda group, res, verbs: {"apiGroups": [group], "resources": [res], "verbs": verbs}
    old = {"rules": [rule("", "nodes", ["get"]), rule("compute.coreweave.com", "nodepools", ["get"])]}
    new = {"rules": [rule("compute.coreweave.com", "nodepools", ["get", "list"])]}
    assert _leaves(old, new, tokens.CLUSTER_ROLE) == [
        ('rules[apiGroups=["compute.coreweave.com"],resources=["nodepools"]].verbs[1]', MISSING,
         "list", ""),
        ('rules[apiGroups=[""],resources=["nodes"]].verbs', ["get"], MISSING, "")]


def test_container_lists_use_kubernetes_keys_with_the_defaulted_protocol():
    dep = lambda env, ports: {"spec": {"template": {"spec": {"containers": [
        {"name": "relay", "env": env, "ports": ports}]}}}}
    old = dep([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
              [{"containerPort": 8080, "name": "http"}])
    new = dep([{"name": "B", "value": "2"}, {"name": "A", "value": "3"}],
              [{"containerPort": 8080, "protocol": "TCP", "name": "web"}])
    base = 'spec.template.spec.containers[name="relay"]'
    assert _leaves(old, new, tokens.DEPLOYMENT) == [
        (f'{base}.env[name="A"].value', "1", "3", ""),
        (f'{base}.ports[containerPort=8080,protocol="TCP"].name', "http", "web", ""),
        (f'{base}.ports[containerPort=8080,protocol="TCP"].protocol', MISSING, "TCP", "")]


@pytest.mark.parametrize("old, new", [
    ([{"name": "a"}, {"name": "a", "x": 1}], [{"name": "a"}]),     # a repeated key
    ([{"nominalQuota": 1}], [{"name": "cpu", "nominalQuota": 1}]),  # a missing key field
    (["[secret]"], [{"name": "cpu"}]),                              # not a mapping
])
def test_a_list_that_cannot_be_keyed_is_compared_by_position(old, new):
    leaves = _leaves({"spec": {"resourceGroups": [{"flavors": old}]}},
                     {"spec": {"resourceGroups": [{"flavors": new}]}})
    assert leaves and all("[name=" not in p for p, *_ in leaves)
    assert all(p.startswith("spec.resourceGroups[0].flavors[") for p, *_ in leaves)


def test_untyped_values_and_unkeyed_lists_stay_positional():
    assert _leaves({"a": [1, 2]}, {"a": [2]}, None) == [("a[0]", 1, 2, ""), ("a[1]", 2, MISSING, "")]
    assert _leaves(_cq(CPU, H100), _cq(H100), "some:other:Type")[0][0] == \
        "spec.resourceGroups[0].flavors[0].name"


def test_key_segments_print_as_structured_merge_diff_does_and_match_pulumi_indices():
    k = Key((("containerPort", 8080), ("protocol", "TCP")), 2)
    assert str(k) == '[containerPort=8080,protocol="TCP"]'
    path = ("spec", "ports", k, "name")
    assert contains(parse_path("spec.ports[2]"), path) and contains(parse_path("spec.ports[*].name"), path)
    assert not contains(parse_path("spec.ports[1]"), path)


# --- the engine's own (positional) detailed diff, rekeyed ------------------------------------

def test_an_engine_preview_of_the_cpu_pool_delete_is_rekeyed():
    # pulumi-kubernetes builds its detailed diff from a JSON merge patch and compares arrays by
    # position (provider/pkg/provider/provider.go `addPatchArrayToDiff`): with the CPU flavor
    # gone, item 0 is "changed" into the H100 flavor and item 1 is deleted.
    flavors = "spec.resourceGroups[0].flavors"
    engine = [(f"{flavors}[0].name", "update"),
              *((f"{flavors}[0].resources[{i}].nominalQuota", "update") for i in range(5)),
              (f"{flavors}[1]", "delete"), ("metadata.labels.team", "add")]
    old, new = _cq(CPU, H100), _cq(H100)
    old["metadata"], new["metadata"] = {}, {"labels": {"team": "ml"}}
    rows = rekey(CQ, engine, old, new)
    paths = [p for p, *_ in rows]
    assert "metadata.labels.team" in paths
    assert not any("[0]." in p.removeprefix("spec.resourceGroups[0].") for p in paths)
    gpu = [r for r in rows if 'resources[name="nvidia.com/gpu"]' in r[0]]
    assert gpu == [('spec.resourceGroups[0].flavors[name="cwdemo-cpu-general-flavor"]'
                    '.resources[name="nvidia.com/gpu"].nominalQuota', "delete", 0, None, False)]
    (disk,) = [r for r in rows if "cpu-general" in r[0] and "ephemeral-storage" in r[0]]
    assert disk[4] is True


def test_rekey_keeps_a_forced_replacement_and_leaves_other_types_alone():
    rows = rekey(CQ, [("spec.resourceGroups[0].flavors[0].name", "update-replace")],
                 _cq(CPU, H100), _cq(H100))
    assert rows and all(k.endswith("-replace") for _, k, *_ in rows)
    assert rekey("some:other:Type", [("a[0]", "update")], {"a": [1]}, {"a": [2]}) == [
        ("a[0]", "update", 1, 2, False)]


# --- sizes in one unit ----------------------------------------------------------------------

def test_sizes_are_shown_in_one_unit_when_written_otherwise():
    assert size_note("32T", "30698364647504") == "32000 GB → 30698.36 GB"
    assert size_note("30698364647504", None) == "30698.36 GB"
    assert size_note("2048G", "2560G") == ""            # already one unit
    assert size_note("512Mi", "2048G") == "0.54 GB → 2048 GB"
    assert size_note("[secret]", "[secret]") == ""
    segs = ("spec", "resourceGroups", 0, "flavors", Key((("name", "f"),), 0), "resources",
            Key((("name", "ephemeral-storage"),), 2), "nominalQuota")
    assert is_size(segs)
    assert not is_size((*segs[:-2], Key((("name", "nvidia.com/gpu"),), 3), "nominalQuota"))
    assert is_size(("spec", "template", "spec", "containers", 0, "resources", "limits", "memory"))
