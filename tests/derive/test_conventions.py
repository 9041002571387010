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
    assert [(f.name, f.gpu, f.node_labels) for f in quota.flavors] == [
        ("cw-cpu", False, ()), ("cw-ib", True, (("backend.coreweave.cloud/flavor", "infiniband"),))]
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
