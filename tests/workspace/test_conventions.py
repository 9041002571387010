"""``[conventions]`` of clusterstack.toml: defaults, overrides reaching the plan, located
template errors; and the scheduler-shaped fields they meet (a derived controller instance,
Marin's ``finelogs`` name for ``log_relays``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import edit, line_of, shown
from clusterstack.cli import main
from clusterstack.derive.gclb import derive_gclb
from clusterstack.plan import plan_stack
from clusterstack.validation import load_cluster, load_references
from clusterstack.workspace import Workspace
from clusterstack.workspace.model import Conventions


def test_an_unknown_placeholder_is_located_in_clusterstack_toml(workspace_copy: Path, capsys):
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[conventions]\nmanaged_label = "{prefx}/managed"\n',
                    encoding="utf-8")
    line = line_of(toml.read_text(encoding="utf-8"), "managed_label")
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"{shown(toml)}:{line}: conventions.managed_label" in err and "{prefix}" in err


def test_overrides_reach_the_plan(workspace_copy: Path):
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[conventions]\n'
                    'managed_label = "iris-{prefix}-managed"\ncontroller_role = "iris-controller-{namespace}"\n'
                    'dns_ttl = 300\nenable_patch_force = true\n', encoding="utf-8")
    plan = plan_stack(workspace_copy / "infra", "cw-demo-h100")
    types = {}
    for r in plan.resources:
        types.setdefault(r.type, []).append(r)
    pools = types["kubernetes:compute.coreweave.com/v1alpha1:NodePool"]
    assert all("iris-cwdemo-managed" in p.inputs["spec"]["nodeLabels"] for p in pools)
    roles = {r.inputs["metadata"]["name"] for r in types["kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"]}
    assert "iris-controller-training" in roles
    (rec,) = types["cloudflare:index/dnsRecord:DnsRecord"]
    assert rec.inputs["ttl"] == 300
    (prov,) = types["pulumi:providers:kubernetes"]
    assert prov.inputs["enablePatchForce"] == "true"


def test_default_provider_has_no_patch_force(example_plans):
    (prov,) = [r for r in example_plans["cw-demo-h100"].resources if r.type == "pulumi:providers:kubernetes"]
    assert "enablePatchForce" not in prov.inputs


def test_controller_instance_is_derived_when_omitted(workspace_copy: Path):
    edit(workspace_copy / "clusters" / "gcp-tpu-a.yaml", "    instance: tpua-controller      # the VM carries "
         "network tag tpua-controller (the default)\n", "")
    ws = Workspace.load(workspace_copy)
    cfg = load_cluster(ws, "gcp-demo").config
    backends = derive_gclb(cfg, load_references(ws, cfg))
    assert {c.cluster: c.instance for c in backends.controllers}["gcp-tpu-a"] == "iris-controller-tpua"
    own = derive_gclb(cfg, load_references(ws, cfg), Conventions(controller_instance="{prefix}-ctl"))
    assert {c.cluster: c.instance for c in own.controllers}["gcp-tpu-a"] == "tpua-ctl"


def test_finelogs_is_accepted_for_log_relays(workspace_copy: Path):
    ws = Workspace.load(workspace_copy)
    before = load_cluster(ws, "gcp-demo").config.provisioning.gcp.gclb.log_relays
    assert before
    edit(workspace_copy / "clusters" / "gcp-demo.yaml", "      log_relays:", "      finelogs:")
    after = load_cluster(Workspace.load(workspace_copy), "gcp-demo").config.provisioning.gcp.gclb.log_relays
    assert after == before


def test_a_shared_gpu_flavor_selects_by_at_most_the_node_labels_a_resourceflavor_holds(
        workspace_copy: Path, capsys):
    from k8s_schemas import kueue_crd_spec
    from clusterstack.workspace.model import KUEUE_MAX_FLAVOR_NODE_LABELS

    # kueue.x-k8s.io_resourceflavors.yaml (Kueue 0.14.4): spec.nodeLabels maxProperties
    limit = kueue_crd_spec("resourceflavors")["properties"]["nodeLabels"]["maxProperties"]
    assert KUEUE_MAX_FLAVOR_NODE_LABELS == limit
    labels = lambda n: "{" + ", ".join(f'"lab.example.org/l{i}" = "v"' for i in range(n)) + "}"  # noqa: E731
    Conventions(gpu_resource_flavor="cw-ib", gpu_flavor_node_labels={f"l{i}": "v" for i in range(limit)})
    toml = workspace_copy / "clusterstack.toml"
    text = toml.read_text(encoding="utf-8") + (f'\n[conventions]\ngpu_resource_flavor = "cw-ib"\n'
                                               f'gpu_flavor_node_labels = {labels(limit + 1)}\n')
    toml.write_text(text, encoding="utf-8")
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    assert (f"{shown(toml)}:{line_of(text, 'gpu_flavor_node_labels')}: conventions.gpu_flavor_node_labels: "
            f"{limit + 1} labels; a Kueue ResourceFlavor's nodeLabels hold at most {limit}") in err
    assert "Traceback" not in err


@pytest.mark.parametrize("knobs, key, needle", [
    # an atomic release must outlast bare-metal node delivery (pulumi-kubernetes helm_release.go)
    ("helm_timeout_seconds = 300\n", "helm_timeout_seconds", "an atomic Helm release that times out"),
    # ... than the slowest one: Marin measured 20-30 minutes (coreweave-v2.md@82d3f250)
    ("helm_timeout_seconds = 1800\n", "helm_timeout_seconds", "not longer than a bare-metal NodePool may take"),
    # ... atomic or not: a timed-out release fails the first `up` either way
    ("helm_atomic = false\nhelm_timeout_seconds = 300\n", "helm_timeout_seconds", "is left failed and the `up` fails"),
    # a taint key is a qualified name (Kubernetes "Taints and Tolerations")
    ('gpu_node_taint = "gpu node"\n', "gpu_node_taint", "is not a Kubernetes label or taint key"),
    ('gpu_node_taint = "-gpu"\n', "gpu_node_taint", "is not a Kubernetes label or taint key"),
    # node-label keys and values that land on NodePools and flavors (Kubernetes "Labels and Selectors")
    ('warm_pool_label = "system critical"\n', "warm_pool_label", "is not a Kubernetes label or taint key"),
    ('cpu_pool_topology_labels = { "backend.coreweave.cloud/fabric" = "cpu fabric" }\n', "cpu_pool_topology_labels",
     "is not a Kubernetes label value"),
    ('tas_flavor_node_labels = { "lab/tas pool" = "true" }\n', "tas_flavor_node_labels",
     "is not a Kubernetes label or taint key"),
    # one flavor for every pool cannot keep CPU pods off tainted GPU nodes (kueue podset.go L84-85)
    ('kueue_queue_layout = "single-tas-flavor"\n', "kueue_queue_layout", "so CPU pods would land on GPU nodes"),
    # untainted GPU pools with a flavor per pool: any pod may be bound to a GPU node (tas_flavor.go L117-123)
    ('kueue_queue_layout = "tas-flavors"\ngpu_node_taint = ""\n', "kueue_queue_layout", "untainted GPU pools"),
    ('gpu_node_taint = "lab.example.org/gpu"\nkueue_queue_layout = "single-tas-flavor"\n', "kueue_queue_layout",
     "gpu_node_taint = 'lab.example.org/gpu'"),
    ('kueue_fixed_quota = { "example.com/fpga" = "1" }\n', "kueue_fixed_quota",
     "not a resource the ClusterQueue covers"),
    ('kueue_queue_layout = "mixed"\n', "kueue_queue_layout", "tas-flavors"),
    # only the Topologies the table declares, at least one level (Topology CRD: levels minItems 1)
    ('kueue_topology_levels = { fabric-only = ["backend.coreweave.cloud/fabric"] }\n', "kueue_topology_levels",
     "not a Topology clusterstack declares"),
    ("kueue_topology_levels = { infiniband = [] }\n", "kueue_topology_levels", "at least one level"),
    # a PriorityClass value above 1e9 is reserved for system classes (Kubernetes
    # pkg/apis/scheduling HighestUserDefinablePriority)
    ("system_priority_value = 2000000000\n", "system_priority_value", "less than or equal to 1000000000"),
    ('kueue_values = "marin"\n', "kueue_values", "marin-cks"),
])
def test_a_bad_knob_is_refused_at_its_line_in_clusterstack_toml(workspace_copy: Path, capsys, knobs, key, needle):
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "\n[conventions]\n" + knobs, encoding="utf-8")
    line = line_of(toml.read_text(encoding="utf-8"), key)
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"{shown(toml)}:{line}: conventions.{key}" in err and needle in err, err
    assert "Traceback" not in err


def test_a_layout_whose_cpu_nodes_tas_cannot_see_is_refused_at_the_pool(workspace_copy: Path, capsys):
    """One TAS flavor on the GPU Topology: CPU nodes without its fabric labels are invisible
    (kueue v0.14.4 tas_flavor.go L107-113) — refused at the CPU scale group, naming the knob."""
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[conventions]\nkueue_queue_layout = "single-tas-flavor"\n'
                    'gpu_node_taint = ""\n', encoding="utf-8")
    cfg = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    assert main(["--root", str(workspace_copy), "validate", "cw-demo-h100"]) == 2
    err = capsys.readouterr().err
    line = line_of(cfg.read_text(encoding="utf-8"), "  cpu-general:")
    assert f"{shown(cfg)}:{line}: scale_groups.cpu-general: CPU NodePool cwdemo-cpu-general would be " \
           "invisible" in err and "cpu_pool_topology_labels" in err, err
    toml.write_text(toml.read_text(encoding="utf-8") + 'cpu_pool_topology_labels = { "backend.coreweave.cloud/fabric" '
                    '= "cpu", "backend.coreweave.cloud/leafgroup" = "cpu" }\n', encoding="utf-8")
    assert main(["--root", str(workspace_copy), "validate", "cw-demo-h100"]) == 0
