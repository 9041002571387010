"""Derivations (clusterstack.derive), table-driven: NodePools, names, labels, NVL72 racks, quotas.

Each table row is a scale group as a cluster file would write it and what the derivation rules say
must come out of it.
"""

from __future__ import annotations

import pytest

from clusterstack.config.cluster import ClusterConfig
from clusterstack.derive import (COVERED_RESOURCES, GPU_RESOURCE, RDMA_RESOURCE, bytes_quantity,
                                 derive_kueue_quota, derive_nodepools, is_rack_scale,
                                 managed_labels, nodepool_name, parse_bytes)
from clusterstack.errors import FieldError
from k8s_schemas import kueue_crd_spec
from clusterstack.validation import derive_all

PREFIX = "lab"


def config(scale_groups: dict, *, provider: str = "coreweave", label_prefix: str = PREFIX) -> ClusterConfig:
    """A minimal valid cluster config around ``scale_groups`` (the derivations read only
    the prefix and the groups)."""
    prov = {"provider": provider}
    if provider == "coreweave":
        prov["coreweave"] = {
            "cluster": {"name": "c", "zone": "US-EAST-04A"},
            "kueue": {"flavor_topology": "infiniband", "manager_memory_limit": "4Gi",
                      "client_connection": {"qps": 1, "burst": 1}},
            "ingress": {"acme_email": "ops@example.org", "cluster_issuers": ["le-prod"],
                        "active_cluster_issuer": "le-prod", "federation_allow_sources": ["10.0.0.1"]},
            "rbac": {"service_account": "controller"},
        }
    else:
        prov["gcp"] = {"project": "demo-project"}
    return ClusterConfig.model_validate({
        "name": "c", "platform": {"label_prefix": label_prefix,
                                  "coreweave": {"region": "R", "kube_context": "ctx"}},
        "kubernetes_provider": {"kueue": {"cluster_queue": "cq"}},
        "controller": {"coreweave": {"service_name": "svc", "port": 1}},
        "scale_groups": scale_groups, "provisioning": prov})


def group(instance_type: str | None = "cd-gp-i64-erapids", *, buffer: int = 0, max_: int = 1,
          slice_vms: int | None = 1, device_type: str = "cpu", device_count: int = 0,
          coreweave: bool = True, per_node: dict | None = None) -> dict:
    """A scale group in the cluster file's shape (per-node cpu/ram/disk: 8 cores, 64GiB, 1TiB)."""
    tmpl: dict = {}
    if slice_vms is not None:
        tmpl["num_vms"] = slice_vms
    if coreweave:
        tmpl["coreweave"] = {"region": "R"} | ({"instance_type": instance_type}
                                               if instance_type is not None else {})
    per_node = {"cpu": 8, "ram": "64GiB", "disk": "1TiB"} if per_node is None else per_node
    return {"resources": {"device_type": device_type, "device_count": device_count, **per_node},
            "buffer_slices": buffer, "max_slices": max_, "slice_template": tmpl}


# ---------------------------------------------------------------------------------------
# One NodePool per scale group with an instance type: counts and rack shape.
# (id, group name, group, expected (name, min_nodes, max_nodes, target_racks) or None = skipped)
POOL_ROWS = [
    ("autoscaled", "cpu", group(buffer=2, max_=4), ("lab-cpu", 2, 4, None)),
    ("slice of 2 vms", "h100", group("gd-8xh100ib-i128", buffer=3, max_=5, slice_vms=2),
     ("lab-h100", 6, 10, None)),
    ("num_vms 0 counts as 1", "a", group(buffer=3, max_=5, slice_vms=0), ("lab-a", 3, 5, None)),
    ("num_vms omitted counts as 1", "b", group(buffer=1, max_=7, slice_vms=None), ("lab-b", 1, 7, None)),
    ("no warm slices", "spot", group(buffer=0, max_=8), ("lab-spot", 0, 8, None)),
    ("zero envelope", "off", group(buffer=0, max_=0), ("lab-off", 0, 0, None)),
    ("gb200 12 racks", "gb200", group("gb200-4x", buffer=12, max_=12, slice_vms=18),
     ("lab-gb200", 216, 216, 12)),
    ("gb300 slices of 9", "gb300", group("gb300-4x", buffer=2, max_=4, slice_vms=9),
     ("lab-gb300", 18, 36, 2)),
    ("name lowercased, _ to -", "H100_Big", group(max_=2), ("lab-h100-big", 0, 2, None)),
    ("no coreweave block: skipped", "login", group(coreweave=False), None),
    ("no instance type: skipped", "sched", group(None), None),
]
# An empty or uppercase instance type no longer reaches derive: the model refuses every value
# that is no CoreWeave instance name (config.types.INSTANCE_TYPE; tests/config/test_hygiene.py).


@pytest.mark.parametrize("gname,g,expected", [r[1:] for r in POOL_ROWS], ids=[r[0] for r in POOL_ROWS])
def test_nodepool_per_scale_group(gname, g, expected):
    pools = derive_nodepools(config({gname: g}))
    if expected is None:
        assert pools == ()
        return
    (pool,) = pools
    name, min_nodes, max_nodes, racks = expected
    assert (pool.name, pool.min_nodes, pool.max_nodes, pool.target_racks) == expected
    assert pool.scale_group == gname
    assert pool.instance_type == g["slice_template"]["coreweave"]["instance_type"]
    assert pool.rack_scale is (racks is not None)


@pytest.mark.parametrize("min_nodes_from_buffer", [0, 1, 5])
def test_labels_managed_and_scale_group_only(min_nodes_from_buffer):
    # No undocumented label (the former cks.coreweave.cloud/system-critical);
    # CoreWeave rejects custom labels under *.coreweave.cloud.
    (pool,) = derive_nodepools(config({"gpu_a": group(buffer=min_nodes_from_buffer, max_=8)}))
    labels = dict(pool.node_labels)
    assert labels[f"{PREFIX}/managed"] == "true"
    assert labels[f"{PREFIX}/scale-group"] == "gpu_a"  # the group's own name, not the pool's
    assert list(pool.node_labels) == sorted(pool.node_labels)
    assert set(labels) == set(dict(managed_labels(PREFIX, "gpu_a")))
    assert not any("coreweave.cloud" in k for k in labels)


def test_pools_sorted_by_group_and_only_instance_typed_groups():
    cfg = config({"zeta": group(max_=1), "alpha": group(max_=1), "login": group(None),
                  "mid": group("gb200-4x", max_=1, slice_vms=18)})
    assert [p.scale_group for p in derive_nodepools(cfg)] == ["alpha", "mid", "zeta"]


@pytest.mark.parametrize("prefix,grp,expected", [
    ("cwdemo", "h100", "cwdemo-h100"),
    ("cwdemo", "CPU_General", "cwdemo-cpu-general"),
    ("x", "a_b_c", "x-a-b-c"),
    ("x", "ALL-CAPS", "x-all-caps"),
])
def test_nodepool_name(prefix, grp, expected):
    assert nodepool_name(prefix, grp) == expected


@pytest.mark.parametrize("bad_group,shown", [
    ("gpu.a100", "lab-gpu.a100"),        # '.' is not allowed in an RFC 1123 label
    ("gpu-", "lab-gpu-"),                # must end alphanumeric
    ("gpu a", "lab-gpu a"),
    ("grüne", "lab-grüne"),
    ("g" * 60, "lab-" + "g" * 60),       # 64 characters: one too many
])
def test_invalid_nodepool_name_names_the_group(bad_group, shown):
    with pytest.raises(FieldError) as ei:
        derive_nodepools(config({bad_group: group()}))
    assert ei.value.path == ("scale_groups", bad_group)
    assert ei.value.message == f"NodePool name {shown!r} is not a valid RFC 1123 label"


def test_longest_valid_name_is_63_characters():
    (pool,) = derive_nodepools(config({"g" * 59: group()}))
    assert len(pool.name) == 63


@pytest.mark.parametrize("a,b", [("a_b", "a-b"), ("GPU", "gpu"), ("Big_Pool", "big-pool")])
def test_duplicate_nodepool_names(a, b):
    first, second = sorted([a, b])
    with pytest.raises(FieldError) as ei:
        derive_nodepools(config({a: group(), b: group()}))
    assert ei.value.path == ("scale_groups", second)
    assert ei.value.message == (f"NodePool name {nodepool_name(PREFIX, a)!r} is also derived from "
                                f"scale group {first!r}")


def test_duplicate_only_counts_pools_with_an_instance_type():
    # "a_b" has no instance type, so it declares no NodePool and cannot collide with "a-b".
    assert [p.name for p in derive_nodepools(config({"a_b": group(None), "a-b": group()}))] == ["lab-a-b"]


# ---------------------------------------------------------------------------------------
# NVL72: whole racks of 18 nodes.
@pytest.mark.parametrize("g,field,count", [
    (group("gb200-4x", buffer=0, max_=12, slice_vms=5), "max_slices", 60),
    (group("gb200-4x", buffer=0, max_=1, slice_vms=1), "max_slices", 1),
    (group("gb300-4x", buffer=1, max_=4, slice_vms=9), "buffer_slices", 9),
    (group("gb200-4x", buffer=1, max_=2, slice_vms=0), "max_slices", 2),  # num_vms 0 → 1
])
def test_partial_rack_is_an_error_naming_group_and_count(g, field, count):
    with pytest.raises(FieldError) as ei:
        derive_nodepools(config({"nvl": g}))
    it = g["slice_template"]["coreweave"]["instance_type"]
    assert ei.value.path == ("scale_groups", "nvl", field)
    assert ei.value.message == f"{count} nodes is not a whole number of 18-node NVL72 racks for {it}"
    assert field in ei.value.hint and "18" in ei.value.hint


@pytest.mark.parametrize("instance_type,rack", [
    ("gb200-4x", True), ("gb300-4x", True), ("GB200-4X", True),
    ("gd-8xh100ib-i128", False), ("cd-gp-i64-erapids", False), ("b200-8x", False),
])
def test_rack_scale_families(instance_type, rack):
    assert is_rack_scale(instance_type) is rack


def test_rack_pool_has_no_partial_check_for_non_rack_types():
    # 7 nodes is fine for an autoscaled H100 pool.
    (pool,) = derive_nodepools(config({"h": group("gd-8xh100ib-i128", buffer=7, max_=7)}))
    assert (pool.min_nodes, pool.max_nodes, pool.target_racks) == (7, 7, None)


# ---------------------------------------------------------------------------------------
# Kueue quota: one flavor per NodePool; quota = maxNodes × per-node capacity.
# (id, groups, {flavor: (cpu, memory, ephemeral-storage, gpus, rdma)}, flavor order)
GIB, TIB = 2**30, 2**40
QUOTA_ROWS = [
    ("none", {}, {}, []),
    ("one h100 group", {"h100": group("gd-8xh100ib-i128", max_=32, device_type="gpu", device_count=8,
                                      per_node={"cpu": 128, "ram": "2048GB", "disk": "1TB"})},
     {"lab-h100-flavor": (32 * 128, bytes_quantity(32 * 2048 * 10**9), bytes_quantity(32 * 10**12), 256, 256)},
     ["lab-h100-flavor"]),
    ("slice of 2 vms", {"h": group("gd", max_=4, slice_vms=2, device_type="gpu", device_count=8)},
     {"lab-h-flavor": (64, "512Gi", "8Ti", 64, 64)}, ["lab-h-flavor"]),
    ("num_vms 0 counts as 1", {"h": group("gd", max_=4, slice_vms=0, device_type="gpu", device_count=8)},
     {"lab-h-flavor": (32, "256Gi", "4Ti", 32, 32)}, ["lab-h-flavor"]),
    ("gb200 12 racks", {"gb200": group("gb200-4x", buffer=12, max_=12, slice_vms=18, device_type="gpu",
                                       device_count=4, per_node={"cpu": 144, "ram": "960GB",
                                                                 "disk": "13.97TiB"})},
     {"lab-gb200-flavor": (216 * 144, bytes_quantity(216 * 960 * 10**9), bytes_quantity(216 * int(13.97 * TIB)),
                    864, 864)}, ["lab-gb200-flavor"]),
    ("cpu pools get quota and no GPUs, listed before GPU pools; untyped groups excluded", {
        "a": group("gd-a", max_=2, device_type="gpu", device_count=8),
        "b": group("gd-b", max_=3, slice_vms=2, device_type="gpu", device_count=4),
        "cpu": group("cd", max_=100, device_type="cpu", device_count=8),   # CPU: no GPUs
        "sched": group(None, max_=100, device_type="gpu", device_count=8),  # no NodePool
        "nocw": group(max_=100, device_type="gpu", device_count=8, coreweave=False),
    }, {"lab-cpu-flavor": (800, "6400Gi", "100Ti", 0, 0), "lab-a-flavor": (16, "128Gi", "2Ti", 16, 16),
        "lab-b-flavor": (48, "384Gi", "6Ti", 24, 24)}, ["lab-cpu-flavor", "lab-a-flavor", "lab-b-flavor"]),
    ("max_slices, not buffer_slices", {"h": group("gd", buffer=1, max_=5, device_type="gpu",
                                                   device_count=2)},
     {"lab-h-flavor": (40, "320Gi", "5Ti", 10, 10)}, ["lab-h-flavor"]),
]


@pytest.mark.parametrize("groups,expected,order", [r[1:] for r in QUOTA_ROWS], ids=[r[0] for r in QUOTA_ROWS])
def test_kueue_quota(groups, expected, order):
    quota = derive_kueue_quota(config(groups))
    assert [f.name for f in quota.flavors] == order
    for f in quota.flavors:
        assert [r for r, _ in f.quotas] == list(COVERED_RESOURCES)
        assert tuple(q for _, q in f.quotas) == expected[f.name]
        assert f.gpu is (expected[f.name][3] > 0)
        assert f.node_labels == ((f"{PREFIX}/scale-group", f.name.removeprefix(f"{PREFIX}-").removesuffix("-flavor")),)
    assert quota.total(GPU_RESOURCE) == quota.total(RDMA_RESOURCE) == sum(e[3] for e in expected.values())
    assert (GPU_RESOURCE, RDMA_RESOURCE) == ("nvidia.com/gpu", "rdma/ib")
    assert COVERED_RESOURCES == ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/ib")


@pytest.mark.parametrize("missing", ["cpu", "ram", "disk"])
def test_kueue_quota_needs_every_per_node_figure(missing):
    per_node = {"cpu": 8, "ram": "64GiB", "disk": "1TiB"}
    del per_node[missing]
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(config({"h": group("gd", device_type="gpu", device_count=8, per_node=per_node)}))
    assert ei.value.path == ("scale_groups", "h", "resources", missing)
    assert "gd" in ei.value.message and missing in ei.value.hint


@pytest.mark.parametrize("text,n", [("512GB", 512 * 10**9), ("6.98TiB", int(6.98 * 2**40)), ("4Gi", 4 * 2**30),
                                    ("1024", 1024), ("1 TB", 10**12), ("2K", 2000),
                                    ("9223372036854775807B", 2**63 - 1)])   # exact, no float rounding
def test_parse_bytes(text, n):
    assert parse_bytes(text) == n


@pytest.mark.parametrize("bad", ["", "12 parsecs", "GB", "-1GB", "1.2.3GB"])
def test_parse_bytes_rejects(bad):
    with pytest.raises(ValueError):
        parse_bytes(bad)


@pytest.mark.parametrize("n,q", [(2**40, "1Ti"), (3 * 2**30, "3Gi"), (1536 * 2**20, "1536Mi"), (1000, "1k"),
                                 (216 * 960 * 10**9, "207360G"), (1023, "1023"), (0, "0")])
def test_bytes_quantity(n, q):
    assert bytes_quantity(n) == q


def test_derive_all_runs_every_coreweave_rule_and_skips_gcp_stacks():
    bad = {"nvl": group("gb200-4x", max_=1, slice_vms=1)}
    with pytest.raises(FieldError):
        derive_all(config(bad))
    derive_all(config(bad, provider="gcp"))  # a GCP stack declares no NodePools


# ---------------------------------------------------------------------------------------
# The pinned Kueue's CRD limits, read from the CRD itself (../shared/reference, never copied).
def _resource_groups() -> dict:
    # kueue.x-k8s.io_clusterqueues.yaml: spec.resourceGroups (maxItems 16), each item's
    # coveredResources and flavors (maxItems 64 each)
    return kueue_crd_spec("clusterqueues")["properties"]["resourceGroups"]


def test_the_flavor_limit_is_the_pinned_crds():
    from clusterstack.derive import KUEUE_LIMITS_SOURCE, KUEUE_MAX_FLAVORS_PER_GROUP

    groups = _resource_groups()
    assert KUEUE_MAX_FLAVORS_PER_GROUP == groups["items"]["properties"]["flavors"]["maxItems"]
    assert "Each resource and each flavor can only form part of one resource group" in groups["description"]
    assert "0.14.4" in KUEUE_LIMITS_SOURCE and "kueue.x-k8s.io_clusterqueues.yaml" in KUEUE_LIMITS_SOURCE
    # what the component declares at a fixed size fits too: one group of every covered resource
    assert len(COVERED_RESOURCES) <= groups["items"]["properties"]["coveredResources"]["maxItems"]
    assert 1 <= groups["maxItems"]


def _many(n: int, **kw) -> dict:
    return {f"g{i:03d}": group(f"cd-{i}", **kw) for i in range(n)}


def test_at_most_one_resource_groups_worth_of_flavors_per_cluster():
    limit = _resource_groups()["items"]["properties"]["flavors"]["maxItems"]
    assert len(derive_kueue_quota(config(_many(limit))).flavors) == limit
    # scale groups that declare no NodePool make no flavor and do not count
    untyped = {f"sched{i}": group(None) for i in range(5)}
    assert len(derive_kueue_quota(config(_many(limit) | untyped)).flavors) == limit
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(config(_many(limit + 1)))
    assert ei.value.path == ("scale_groups",)
    assert f"{limit + 1} Kueue ResourceFlavors" in ei.value.message
    assert f"at most {limit} flavors per resource group" in ei.value.message
    assert "Kueue 0.14.4" in ei.value.message
    assert f"at most {limit} scale groups" in ei.value.hint and "cpu_resource_flavor" in ei.value.hint
    with pytest.raises(FieldError):
        derive_all(config(_many(limit + 1)))   # validate refuses it


def test_shared_flavors_lift_the_per_pool_flavor_limit():
    from clusterstack.workspace.model import Conventions

    limit = _resource_groups()["items"]["properties"]["flavors"]["maxItems"]
    conv = Conventions(cpu_resource_flavor="cw-cpu", gpu_resource_flavor="cw-ib",
                       gpu_flavor_node_labels={"backend.coreweave.cloud/flavor": "infiniband"},
                       tas_autoscaled_pools="allow", chart_node_selector="none")
    cfg = config(_many(limit + 1) | {"h": group("gd", device_type="gpu", device_count=8),
                                     "sys": group(buffer=1, max_=1)})
    assert [f.name for f in derive_kueue_quota(cfg, conv).flavors] == ["cw-cpu", "cw-ib"]
    derive_all(cfg, conv)   # validate derives with the workspace's conventions
    with pytest.raises(FieldError):
        derive_all(cfg)


def test_a_shared_flavor_named_like_another_flavor_is_refused():
    from clusterstack.workspace.model import Conventions

    gpu = {"h": group("gd", device_type="gpu", device_count=8)}
    labels = {"backend.coreweave.cloud/flavor": "infiniband"}
    gpu_flavor = derive_kueue_quota(config(gpu)).flavors[0].name   # the GPU pool's own flavor
    for conv in (Conventions(cpu_resource_flavor=gpu_flavor),
                 Conventions(cpu_resource_flavor="same", gpu_resource_flavor="same",
                             gpu_flavor_node_labels=labels)):
        with pytest.raises(FieldError) as ei:
            derive_kueue_quota(config(_many(2) | gpu), conv)
        assert ei.value.path == ("scale_groups",) and "two Kueue ResourceFlavors are named" in ei.value.message
    # shared CPU flavor, per-pool GPU flavors past the limit: the hint names what is left to share
    limit = _resource_groups()["items"]["properties"]["flavors"]["maxItems"]
    many_gpu = {f"h{i:03d}": group(f"gd-{i}", device_type="gpu", device_count=8) for i in range(limit)}
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(config(_many(1) | many_gpu), Conventions(cpu_resource_flavor="cw-cpu"))
    assert "not under a shared flavor" in ei.value.message
    assert "gpu_resource_flavor" in ei.value.hint and "cpu_resource_flavor" not in ei.value.hint


def test_a_shared_flavor_name_is_a_kubernetes_object_name():
    from pydantic import ValidationError

    from clusterstack.workspace.model import Conventions

    with pytest.raises(ValidationError):
        Conventions(cpu_resource_flavor="CW_CPU")
    assert Conventions(cpu_resource_flavor="cw-cpu").cpu_resource_flavor == "cw-cpu"


# ---------------------------------------------------------------------------------------
# The workload namespace: never Kubernetes' own, never a Helm release's.
def _with_namespace(ns: str) -> ClusterConfig:
    cfg = config({})
    return cfg.model_copy(update={"kubernetes_provider": cfg.kubernetes_provider.model_copy(
        update={"namespace": ns})})


@pytest.mark.parametrize("ns,needle", [
    ("default", "Kubernetes system namespace"), ("kube-system", "Kubernetes system namespace"),
    ("kube-public", "Kubernetes system namespace"), ("kube-node-lease", "Kubernetes system namespace"),
    ("kube-anything", "Kubernetes system namespace"),
    ("kueue-system", "the kueue Helm release ([conventions] kueue_namespace)"),
    ("cert-manager", "the cert-manager Helm release ([conventions] cert_manager_namespace)"),
    ("traefik", "the traefik Helm release ([conventions] traefik_namespace)"),
])
def test_the_workload_namespace_is_not_a_system_or_release_namespace(ns, needle):
    with pytest.raises(FieldError) as ei:
        derive_all(_with_namespace(ns))
    assert ei.value.path == ("kubernetes_provider", "namespace")
    assert needle in ei.value.message and "namespace of their own" in ei.value.hint


def test_the_release_namespaces_are_the_conventions():
    from clusterstack.derive import HELM_RELEASES, helm_chart, workload_namespace
    from clusterstack.workspace.model import Conventions

    assert HELM_RELEASES == ("kueue", "cert_manager", "traefik")
    conv = Conventions(kueue_namespace="lab-kueue")
    assert helm_chart(conv, "kueue").namespace == "lab-kueue"
    assert workload_namespace(_with_namespace("kueue-system"), conv) == "kueue-system"
    with pytest.raises(FieldError, match="'lab-kueue' is the namespace of the kueue Helm release"):
        workload_namespace(_with_namespace("lab-kueue"), conv)
    assert workload_namespace(_with_namespace("iris")) == "iris"


# ---------------------------------------------------------------------------------------
# A quota is a Kubernetes quantity (an int64): nodes × per node must fit, not one node only.
def test_a_quota_beyond_a_kubernetes_int64_is_refused_at_its_group():
    from clusterstack.config.types import MAX_QUANTITY_BYTES

    seven_eib = {"cpu": 8, "ram": "7EiB", "disk": "1TiB"}
    assert derive_kueue_quota(config({"big": group(max_=1, per_node=seven_eib)})).flavors  # one node fits
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(config({"big": group(max_=32, per_node=seven_eib)}))   # was "224Ei"
    assert ei.value.path == ("scale_groups", "big")
    assert (f"the ClusterQueue's memory quota of NodePool lab-big is {32 * 7 * 2**60} (32 nodes × "
            f"per-node capacity): out of range, at most {MAX_QUANTITY_BYTES} bytes (2^63 − 1, just "
            "under 8 EiB") in ei.value.message
    assert "max_slices" in ei.value.hint
    # the largest quota that fits is accepted, one byte more is not
    exact = {"cpu": 8, "ram": f"{MAX_QUANTITY_BYTES}B", "disk": "1TiB"}
    assert derive_kueue_quota(config({"big": group(max_=1, per_node=exact)})).flavors


def test_a_shared_flavors_summed_quota_beyond_an_int64_is_refused():
    from clusterstack.workspace.model import Conventions

    conv = Conventions(cpu_resource_flavor="cw-cpu")
    half = {"cpu": 8, "ram": "4EiB", "disk": "1TiB"}   # 2^62 each: two make 2^63
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(config({"a": group(per_node=half), "b": group(per_node=half)}), conv)
    assert ei.value.path == ("scale_groups", "b")
    assert "shared flavor 'cw-cpu' (every CPU pool's quota added up)" in ei.value.message
