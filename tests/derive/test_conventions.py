"""Derivations under ``[conventions]``: names, node-label keys, metadata labels, the warm-pool
label, shared flavors and the identity label paths a NodePool replaces on. Marin's values are
those of examples/marin/clusterstack.toml (each cited there)."""

from __future__ import annotations

import pytest

from derive.test_derive import config, group
from clusterstack.components.coreweave.nodepools import nodepool_options
from clusterstack.derive import derive_kueue_quota, derive_nodepools, helm_chart
from clusterstack.errors import FieldError
from clusterstack.workspace.model import Conventions

MARIN = Conventions(managed_label="iris-{prefix}-managed", scale_group_label="iris-{prefix}-scale-group",
                    nodepool_metadata_labels=True, warm_pool_label="cks.coreweave.cloud/system-critical",
                    cpu_resource_flavor="cw-cpu", gpu_resource_flavor="cw-ib",
                    gpu_flavor_node_labels={"backend.coreweave.cloud/flavor": "infiniband"})


def gpu(**kw):
    return group("gd-8xh100ib-i128", device_type="gpu", device_count=8,
                 per_node={"cpu": 128, "ram": "2048GB", "disk": "1TB"}, **kw)


def cpu(**kw):
    return group("cd-gp-i64-erapids", per_node={"cpu": 64, "ram": "512GB", "disk": "1TB"}, **kw)


def test_default_conventions_are_the_tools_names():
    (pool,) = derive_nodepools(config({"h100": gpu(buffer=1, max_=2)}))
    assert pool.name == "lab-h100" and pool.metadata_labels == ()
    assert dict(pool.node_labels) == {"lab/managed": "true", "lab/scale-group": "h100"}
    assert pool.identity_label_paths == ('spec.nodeLabels["lab/managed"]', 'spec.nodeLabels["lab/scale-group"]')


@pytest.mark.parametrize("buffer, warm", [(0, False), (1, True)])
def test_marin_labels_metadata_and_warm_pool(buffer, warm):
    (pool,) = derive_nodepools(config({"h100": gpu(buffer=buffer, max_=2)}), MARIN)
    keys = {"iris-lab-managed": "true", "iris-lab-scale-group": "h100"}
    assert dict(pool.metadata_labels) == keys
    assert dict(pool.node_labels) == {**keys, **({"cks.coreweave.cloud/system-critical": "true"} if warm else {})}
    # the warm-pool key is not an identity key: adding it is an update, not a replace
    assert pool.identity_label_paths == ('spec.nodeLabels["iris-lab-managed"]',
                                         'spec.nodeLabels["iris-lab-scale-group"]')


def test_nodepool_replaces_on_its_identity_label_keys():
    import pulumi_kubernetes as k8s  # noqa: F401  (the options type needs the SDK loaded)
    (pool,) = derive_nodepools(config({"h100": gpu(max_=2)}), MARIN)
    opts = nodepool_options(pool, parent=None, provider=None)   # type: ignore[arg-type]
    from clusterstack.components.coreweave.nodepools import IMMUTABLE_FIELDS
    assert opts.replace_on_changes == [*IMMUTABLE_FIELDS, *pool.identity_label_paths]
    assert opts.protect and opts.ignore_changes == ["spec.targetNodes"]


def test_shared_flavors_add_up_the_pools():
    cfg = config({"cpu_a": cpu(max_=2), "cpu_b": cpu(max_=1), "h100": gpu(max_=4), "h200": gpu(max_=1)})
    quota = derive_kueue_quota(cfg, MARIN)
    # a shared CPU flavor is topology-aware (the hostname Topology) and so selects nodes — the
    # managed ones: the ResourceFlavor CRD needs a nodeLabel when topologyName is set
    assert [(f.name, f.gpu, f.node_labels, f.topology) for f in quota.flavors] == [
        ("cw-cpu", False, (("iris-lab-managed", "true"),), "hostname"),
        ("cw-ib", True, (("backend.coreweave.cloud/flavor", "infiniband"),), "infiniband")]
    cpu_q, gpu_q = (dict(f.quotas) for f in quota.flavors)
    assert cpu_q["cpu"] == 3 * 64 and cpu_q["nvidia.com/gpu"] == 0
    assert gpu_q["cpu"] == 5 * 128 and gpu_q["nvidia.com/gpu"] == gpu_q["rdma/ib"] == 40
    assert gpu_q["memory"] == "10240G"


def test_a_flavor_template_without_pool_collides():
    cfg = config({"a": cpu(), "b": cpu()})
    with pytest.raises(FieldError) as ei:
        derive_kueue_quota(cfg, Conventions(resource_flavor="{prefix}-flavor"))
    assert ei.value.path == ("scale_groups", "b") and "{pool}" in ei.value.hint


def test_helm_chart_from_conventions():
    c = Conventions(kueue_chart="cks-kueue", kueue_chart_repo="https://charts.example", kueue_chart_version="1.5.0")
    chart = helm_chart(c, "kueue")
    assert (chart.release, chart.namespace, chart.source) == (
        "kueue", "kueue-system", "https://charts.example/cks-kueue@1.5.0")
    assert helm_chart(Conventions(), "kueue").source == "oci://registry.k8s.io/kueue/charts/kueue@0.14.4"


# --- the queue layout, taints, the system pool ------------------------------------------

from clusterstack.derive import chart_placement, system_pool   # noqa: E402
from clusterstack.derive.kueue import (check_topology_pools, derive_cluster_queues,   # noqa: E402
                                       derive_topologies)


def with_controller(cfg, group_name):
    return cfg.model_copy(update={"controller": cfg.controller.model_copy(update={
        "coreweave": cfg.controller.coreweave.model_copy(update={"scale_group": group_name})})})


def test_every_flavor_is_topology_aware_and_gpu_flavors_tolerate_the_gpu_taint():
    """Kueue 0.14.4 gives a PodSet without annotation TAS only in a TAS-only queue
    (tas_flavorassigner.go L165-168): CPU flavors bind the hostname Topology."""
    cfg = config({"cpu": cpu(buffer=2, max_=2), "h100": gpu(buffer=4, max_=4)})
    cpu_f, gpu_f = derive_kueue_quota(cfg).flavors
    assert (cpu_f.topology, cpu_f.tolerations, cpu_f.node_taints) == ("hostname", (), ())
    assert gpu_f.topology == "infiniband" and gpu_f.tolerations == ("nvidia.com/gpu",)
    assert gpu_f.node_taints == (("nvidia.com/gpu", "present", "NoSchedule"),)
    pools = {p.scale_group: p for p in derive_nodepools(cfg)}
    assert pools["h100"].node_taints == gpu_f.node_taints and pools["cpu"].node_taints == ()
    assert [(t.name, t.levels, t.bound) for t in derive_topologies(cfg)] == [
        ("infiniband", ("backend.coreweave.cloud/fabric", "backend.coreweave.cloud/leafgroup",
                        "kubernetes.io/hostname"), True),
        ("hostname", ("kubernetes.io/hostname",), True)]
    (queue,) = derive_cluster_queues(cfg)
    assert queue.tas_only and queue.namespace_selector() == {
        "matchLabels": {"kubernetes.io/metadata.name": "iris"}}
    # untainted GPU pools only in Marin's one-flavor layout: with a flavor per pool, refused
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="untainted GPU pools"):
        Conventions(gpu_node_taint="")


def test_one_tas_flavor_over_every_pool_marins_cw_tas():
    conv = Conventions(kueue_queue_layout="single-tas-flavor", tas_resource_flavor="cw-tas",
                       managed_label="iris-{prefix}-managed",
                       kueue_fixed_quota={"cpu": "1G", "memory": "1Pi", "ephemeral-storage": "1Pi"},
                       cluster_queue_namespaces="all", gpu_node_taint="",
                       cpu_pool_topology_labels={"backend.coreweave.cloud/fabric": "cpu",
                                                 "backend.coreweave.cloud/leafgroup": "cpu"})
    cfg = config({"cpu": cpu(buffer=1, max_=1), "h100": gpu(buffer=2, max_=2), "h200": gpu(buffer=1, max_=1)})
    (flavor,) = derive_kueue_quota(cfg, conv).flavors
    assert (flavor.name, flavor.topology, flavor.node_labels, flavor.gpu) == (
        "cw-tas", "infiniband", (("iris-lab-managed", "true"),), True)
    # GPUs: the fleet (3 nodes × 8); cpu, memory, ephemeral-storage: the fixed non-binding quota
    assert dict(flavor.quotas) == {"cpu": "1G", "memory": "1Pi", "ephemeral-storage": "1Pi",
                                   "nvidia.com/gpu": 24, "rdma/ib": 24}
    (queue,) = derive_cluster_queues(cfg, conv)
    assert queue.namespace_selector() == {}
    cpu_pool = next(p for p in derive_nodepools(cfg, conv) if not p.gpu)
    assert dict(cpu_pool.node_labels)["backend.coreweave.cloud/fabric"] == "cpu"
    check_topology_pools(cfg, conv)
    # without the synthetic levels the CPU nodes are invisible to TAS (tas_flavor.go L107-113)
    bare = conv.model_copy(update={"cpu_pool_topology_labels": {}})
    with pytest.raises(FieldError) as ei:
        check_topology_pools(cfg, bare)
    assert ei.value.path == ("scale_groups", "cpu") and "invisible" in ei.value.message
    assert "backend.coreweave.cloud/fabric, backend.coreweave.cloud/leafgroup" in ei.value.message


def test_an_autoscaled_pool_under_tas_is_refused_unless_allowed():
    cfg = config({"cpu": cpu(buffer=1, max_=1), "h100": gpu(buffer=4, max_=32)})
    with pytest.raises(FieldError) as ei:
        check_topology_pools(cfg)
    assert ei.value.path == ("scale_groups", "h100", "buffer_slices")
    assert "4 → 32" in ei.value.message and "max_slices (32)" in ei.value.hint
    check_topology_pools(cfg, Conventions(tas_autoscaled_pools="allow"))
    # a rack-scale pool has no autoscaler (targetRacks only): never refused
    check_topology_pools(config({"gb": group("gb200-4x", device_type="gpu", device_count=4, buffer=1,
                                             max_=2, slice_vms=18)}))


def test_the_system_pool_is_the_controllers_warm_cpu_pool():
    cfg = config({"cpu": cpu(buffer=2, max_=2), "cold": cpu(max_=2), "h100": gpu(buffer=4, max_=4)})
    assert system_pool(with_controller(cfg, "cpu")).scale_group == "cpu"
    for group_name, needle in (("h100", "is a GPU pool"), ("cold", "keeps no warm nodes"),
                               ("nope", "is not a scale group")):
        with pytest.raises(FieldError) as ei:
            system_pool(with_controller(cfg, group_name))
        assert ei.value.path == ("controller", "coreweave", "scale_group") and needle in ei.value.message
    with pytest.raises(FieldError) as ei:
        system_pool(cfg)        # no scale_group, charts pinned to it by default
    assert ei.value.path == ("controller", "coreweave")
    # Marin: charts unpinned, the first warm CPU pool
    assert system_pool(cfg, Conventions(chart_node_selector="none")).scale_group == "cpu"
    placement = chart_placement(with_controller(cfg, "cpu"))
    assert placement.node_selector == (("lab/scale-group", "cpu"),) and placement.replicas == 2 and placement.pdb
    unpinned = chart_placement(cfg, Conventions(chart_node_selector="none", ha_replicas=1))
    assert unpinned.node_selector == () and not unpinned.pdb


@pytest.mark.parametrize("knobs, field, needle", [
    ({"helm_timeout_seconds": 300}, "helm_timeout_seconds", "rolls back"),
    ({"kueue_fixed_quota": {"gpu": "1"}}, "kueue_fixed_quota", "not a resource the ClusterQueue covers"),
    ({"kueue_fixed_quota": {"cpu": "lots"}}, "kueue_fixed_quota", "not a Kubernetes quantity"),
    ({"kueue_queue_layout": "split"}, "kueue_queue_layout", "tas-flavors"),
    ({"ha_replicas": 0}, "ha_replicas", "greater than or equal to 1"),
])
def test_bad_knobs_are_refused_naming_the_rule(knobs, field, needle):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as ei:
        Conventions(**knobs)
    (err,) = ei.value.errors()
    assert err["loc"][0] == field and needle in str(ei.value)
    # not atomic is no way around it: the timed-out release still fails the first `up`
    with pytest.raises(ValidationError, match="is left failed and the `up` fails"):
        Conventions(helm_timeout_seconds=300, helm_atomic=False)
    # Marin's: not atomic, the provider's 300 s, on nodes that exist
    Conventions(helm_timeout_seconds=300, helm_atomic=False, helm_short_wait="allow")
