"""``examples/marin/``: Marin's five published cluster configs, unchanged, validate and plan,
and every CoreWeave stack declares the objects Marin's own program declares — same kind,
namespace and name, same NodePool labels and counts, same DNS record.

Expectations are derived from Marin's source (github.com/marin-community/marin), each line
citing the file and commit it comes from; the configs are read from
``../shared/reference/marin/lib/iris/config`` (see its SOURCE.md), never copied into the repo.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import shutil
from pathlib import Path

import pytest
import yaml

from k8s_schemas import reference_dir
from clusterstack.cli import main
from clusterstack.plan import loads
from marin.checkout import add_service_projects

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "marin"
REF = reference_dir()
CONFIGS = REF / "marin" / "lib" / "iris" / "config" if REF else None
CW_STACKS = ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a")
STACKS = (*CW_STACKS, "marin")

pytestmark = pytest.mark.skipif(
    CONFIGS is None or not CONFIGS.is_dir(),
    reason="Marin's published configs are not in ../shared/reference/marin/lib/iris/config")

# --- Marin's names (each from the Marin source named) -------------------------------------
# lib/iris/src/iris/cluster/platforms/k8s/nodepool_manifests.py@47384f1a: nodepool_name,
# nodepool_node_labels (+ SYSTEM_CRITICAL_LABEL when min_nodes > 0), build_nodepool_manifest
# (metadata.labels = node labels without the system-critical key); the label keys are
# iris.cluster.platforms.types.Labels: iris-<prefix>-managed / iris-<prefix>-scale-group.
SYSTEM_CRITICAL = "cks.coreweave.cloud/system-critical"
RACK = 18            # lib/iris/.../k8s/coreweave_topology.py RACK_SIZE (nodepool_manifests.py@47384f1a)
# lib/iris/.../k8s/rbac_manifests.py@33283163 cluster_role_name: iris-controller-<namespace>.
# infra/pulumi/src/iac/coreweave/rbac.py@17c9466c GRAFANA_OBSERVER_ROLE.
GRAFANA_ROLE = "marin-grafana-node-reader"
# lib/iris/.../k8s/network_manifests.py@6019f395 MIDDLEWARE_NAME, INGRESS_NAME, DEFAULT_TLS_SECRET,
# CW_REPO_URL; infra/pulumi/src/iac/coreweave/traefik.py@6019f395 TRAEFIK_VERSION, CERT_MANAGER_VERSION.
MIDDLEWARE, INGRESS, TLS_SECRET = "iris-federation-ipallowlist", "iris-federation", "iris-controller-fed-tls"
CW_REPO = "https://charts.core-services.ingress.coreweave.com"
# infra/pulumi/src/iac/coreweave/kueue.py@28d310ae CKS_KUEUE_CHART/VERSION, RELEASE_DEFAULT in
# OPERATOR_NS (kueue_manifests.py@51326295), both TOPOLOGIES, the iris-system PriorityClass,
# and the one TAS flavor RESOURCE_FLAVOR_NAME = "cw-tas" (lib/iris/src/iris/cluster/platforms/k8s/
# kueue_manifests.py, the revision that replaced cw-cpu + cw-ib of @51326295 and @a1e72a14;
# kueue.py@28d310ae declares that one flavor).
# cert-manager and traefik by the `coreweave` repo alias, no repositoryOpts
# (infra/pulumi/src/iac/coreweave/traefik.py@9865fe73; network_manifests.py@6019f395 CW_REPO_NAME).
RELEASES = {("kueue-system", "kueue"): ("cks-kueue", CW_REPO, "1.5.0"),
            ("cert-manager", "cert-manager"): ("coreweave/cert-manager", None, "1.20.0"),
            ("traefik", "traefik"): ("coreweave/traefik", None, "1.35.0")}
# infra/pulumi/src/iac/config.py@208671df MARIN_FEDERATION_EGRESS_SOURCES, CLOUDFLARE_OA_DEV_ZONE_ID;
# infra/pulumi/src/iac/coreweave/dns.py@3d818800: CNAME, ttl 300, not proxied.
ALLOW = ["34.27.183.11", "35.254.13.19"]
ZONE = "169959d6aafcbfd77764b8efafa3a509"

NODEPOOL = "kubernetes:compute.coreweave.com/v1alpha1:NodePool"


def marin_objects(cfg: dict) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every live object Marin's program declares for one CoreWeave
    cluster config: infra/pulumi/src/iac/program.py@ef45e6c0 ``_build_coreweave`` (CoreweaveCluster,
    IrisRbac, GrafanaObserverRbac, KueueAddon, TraefikAddon, FederationDns)."""
    cw, prefix = cfg["provisioning"]["coreweave"], cfg["platform"]["label_prefix"]
    ns = cfg["kubernetes_provider"]["namespace"]
    role = f"iris-controller-{ns}"
    out = {("Namespace", "", ns), ("ServiceAccount", ns, cw["rbac"]["service_account"]),
           ("ClusterRole", "", role), ("ClusterRoleBinding", "", role),
           ("Release", "kueue-system", "kueue"), ("Release", "cert-manager", "cert-manager"),
           ("Release", "traefik", "traefik"),
           ("Topology", "", "infiniband"), ("Topology", "", "multinode-nvlink-ib"),
           ("ResourceFlavor", "", "cw-tas"),
           ("ClusterQueue", "", cfg["kubernetes_provider"]["kueue"]["cluster_queue"]),
           ("PriorityClass", "", "iris-system"),
           # the kueue-manager-priority DeploymentPatch (kueue.py@28d310ae MANAGER_DEPLOYMENT)
           ("Deployment", "kueue-system", "kueue-controller-manager"),
           ("Middleware", ns, MIDDLEWARE), ("Ingress", ns, INGRESS)}
    out |= {("ClusterIssuer", "", i) for i in cw["ingress"]["cluster_issuers"]}
    if cw.get("grafana_observer_rbac"):
        out |= {("ClusterRole", "", GRAFANA_ROLE), ("ClusterRoleBinding", "", GRAFANA_ROLE)}
    for group, sg in cfg["scale_groups"].items():
        if (sg.get("slice_template") or {}).get("coreweave", {}).get("instance_type"):
            out.add(("NodePool", "", f"{prefix}-{group}".replace("_", "-").lower()))
    return out


def marin_nodepools(cfg: dict) -> dict[str, dict]:
    """NodePool name → the spec and metadata.labels Marin declares (infra/pulumi/src/iac/
    nodepools.py@47384f1a derive_nodepools; nodepool_manifests.py@47384f1a)."""
    prefix = cfg["platform"]["label_prefix"]
    out = {}
    for group, sg in cfg["scale_groups"].items():
        tmpl = sg.get("slice_template") or {}
        itype = (tmpl.get("coreweave") or {}).get("instance_type")
        if not itype:
            continue
        num_vms = max(1, tmpl.get("num_vms", 1))
        lo, hi = sg.get("buffer_slices", 0) * num_vms, sg["max_slices"] * num_vms
        labels = {f"iris-{prefix}-managed": "true", f"iris-{prefix}-scale-group": group}
        # + the cw-tas flavor's label on every pool (kueue_manifests.py, the cw-tas revision:
        # RESOURCE_FLAVOR_NODE_LABELS = {KUEUE_NODE_LABEL: "true"}, from nodepool_manifests.py)
        node_labels = {**labels, "iris.kueue": "true", **({SYSTEM_CRITICAL: "true"} if lo > 0 else {})}
        spec = {"computeClass": "default", "instanceType": itype, "nodeLabels": node_labels}
        if "gb200" in itype.lower() or "gb300" in itype.lower():
            spec["targetRacks"] = hi // RACK
        else:
            spec.update(autoscaling=True, minNodes=lo, maxNodes=hi, targetNodes=lo)
        out[f"{prefix}-{group}".replace("_", "-").lower()] = {"spec": spec, "labels": labels}
    return out


def kind_ns_name(r) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of a declared live object (None for components, providers)."""
    if not r.custom or r.type.startswith("pulumi:"):
        return None
    # A <Kind>Patch changes the live <Kind> of that name (pulumi-kubernetes kinds.IsPatchResource)
    kind = r.type.rsplit(":", 1)[1].removesuffix("Patch")
    if r.type == "kubernetes:helm.sh/v3:Release":
        return ("Release", r.inputs["namespace"], r.inputs["name"])
    meta = r.inputs.get("metadata")
    if isinstance(meta, dict):
        return (kind, meta.get("namespace", ""), meta["name"])
    return None


@pytest.fixture(scope="module")
def marin_root(tmp_path_factory) -> Path:
    """The example workspace with Marin's five configs in lib/iris/config, in a tmp dir."""
    root = tmp_path_factory.mktemp("marin") / "marin"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
    for name in STACKS:
        shutil.copy(CONFIGS / f"{name}.yaml", root / "lib" / "iris" / "config" / f"{name}.yaml")
    add_service_projects(root)   # Marin's service projects, which examples/marin/services.yaml registers
    return root


@pytest.fixture(scope="module")
def plan_all(marin_root, tmp_path_factory) -> tuple[int, str, str]:
    """`clusterstack plan --all -o FILE` on the example, run once: exit code, the output (the
    tree, then the `wrote` line) and the JSON document it wrote."""
    target = tmp_path_factory.mktemp("marin-plans") / "plans.json"
    code, out = run("--root", str(marin_root), "plan", "--all", "-o", str(target))
    return code, out, target.read_text(encoding="utf-8") if target.is_file() else ""


@pytest.fixture(scope="module")
def plans(plan_all):
    code, out, doc = plan_all
    assert code == 0, out
    by_stack = {p.stack: p for p in loads(doc)}
    assert sorted(by_stack) == sorted(STACKS)
    return by_stack


def config(name: str) -> dict:
    return yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))


def run(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        code = main(list(args))
    return code, buf.getvalue()


def test_validate_and_plan_all_succeed(marin_root, plan_all):
    code, out = run("--root", str(marin_root), "validate")
    assert code == 0, out
    assert "5 cluster config(s)" in out
    code, out, _ = plan_all
    assert code == 0, out


def test_the_configs_were_not_changed(marin_root):
    for name in STACKS:
        assert (marin_root / "lib/iris/config" / f"{name}.yaml").read_bytes() == \
            (CONFIGS / f"{name}.yaml").read_bytes()


@pytest.mark.parametrize("stack", CW_STACKS)
def test_every_live_object_marin_declares_has_a_counterpart(plans, stack):
    declared = {k for r in plans[stack].resources if (k := kind_ns_name(r)) is not None}
    expected = marin_objects(config(stack))
    assert expected - declared == set(), f"{stack}: Marin declares these, the plan does not"


@pytest.mark.parametrize("stack", CW_STACKS)
def test_nodepools_keep_marins_labels_and_counts(plans, stack):
    got = {r.inputs["metadata"]["name"]: r for r in plans[stack].resources if r.type == NODEPOOL}
    expected = marin_nodepools(config(stack))
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert got[name].inputs["spec"] == want["spec"], name
        assert got[name].inputs["metadata"]["labels"] == want["labels"], name
        assert got[name].protect


@pytest.mark.parametrize("stack", CW_STACKS)
def test_releases_run_coreweaves_charts(plans, stack):
    for r in plans[stack].resources:
        if r.type == "kubernetes:helm.sh/v3:Release":
            key = (r.inputs["namespace"], r.inputs["name"])
            repo = (r.inputs.get("repositoryOpts") or {}).get("repo")
            assert (r.inputs["chart"], repo, r.inputs["version"]) == RELEASES[key]
            if key[1] == "kueue":  # cks-kueue nests upstream kueue's values (kueue_manifests.py@51326295)
                assert list(r.inputs["values"]) == ["kueue"]


@pytest.mark.parametrize("stack", CW_STACKS)
def test_cluster_queue_covers_marins_resources_with_one_tas_flavor(plans, stack):
    cfg = config(stack)
    (cq,) = [r for r in plans[stack].resources if r.type.endswith(":ClusterQueue")]
    # kueue_manifests.py (cw-tas revision) build_cluster_queue: namespaceSelector {}, one
    # resource group over COVERED_RESOURCES with the one flavor.
    assert cq.inputs["spec"]["namespaceSelector"] == {}
    (group,) = cq.inputs["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/ib"]
    (flavor,) = group["flavors"]
    assert flavor["name"] == "cw-tas"
    # NON_BINDING_QUOTA for cpu/memory/ephemeral-storage; GPUs and rdma/ib: the fleet
    # (infra/pulumi/src/iac/coreweave/kueue.py@28d310ae accelerator_nominal_quotas).
    fleet = sum(g["max_slices"] * max(1, g.get("slice_template", {}).get("num_vms", 1))
                * g["resources"].get("device_count", 0)
                for g in cfg["scale_groups"].values() if g["resources"].get("device_type") == "gpu")
    quota = {q["name"]: q["nominalQuota"] for q in flavor["resources"]}
    assert quota == {"cpu": "1G", "memory": "1Pi", "ephemeral-storage": "1Pi",
                     "nvidia.com/gpu": str(fleet), "rdma/ib": str(fleet)}   # Marin: str(accelerator_count)
    flavors = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plans[stack].resources
               if r.type.endswith(":ResourceFlavor")}
    topology = cfg["provisioning"]["coreweave"]["kueue"]["flavor_topology"]
    prefix = cfg["platform"]["label_prefix"]
    # the cw-tas revision of kueue_manifests.py: RESOURCE_FLAVOR_NODE_LABELS, build_resource_flavor
    assert flavors == {"cw-tas": {"nodeLabels": {"iris.kueue": "true"}, "topologyName": topology}}
    assert prefix


@pytest.mark.parametrize("stack", CW_STACKS)
def test_ingress_allowlist_and_dns_record(plans, stack):
    cfg = config(stack)
    dns, ns = cfg["provisioning"]["coreweave"]["federation_dns"], cfg["kubernetes_provider"]["namespace"]
    res = plans[stack].resources
    (mw,) = [r for r in res if r.type.endswith(":Middleware")]
    # network_manifests.py@6019f395 normalize_source: a bare IP becomes /32.
    assert mw.inputs["spec"]["ipAllowList"]["sourceRange"] == [
        str(ipaddress.ip_network(a)) for a in ALLOW]
    (ing,) = [r for r in res if r.type == "kubernetes:networking.k8s.io/v1:Ingress"]
    assert ing.inputs["spec"]["tls"] == [{"hosts": [dns["hostname"]], "secretName": TLS_SECRET}]
    assert ing.inputs["metadata"]["annotations"]["traefik.ingress.kubernetes.io/router.middlewares"] == \
        f"{ns}-{MIDDLEWARE}@kubernetescrd"
    (rec,) = [r for r in res if r.type == "cloudflare:index/dnsRecord:DnsRecord"]
    assert {k: rec.inputs[k] for k in ("zoneId", "name", "type", "content", "ttl", "proxied")} == {
        "zoneId": ZONE, "name": dns["hostname"], "type": "CNAME", "content": dns["target"],
        "ttl": 300, "proxied": False}


@pytest.mark.parametrize("stack", CW_STACKS)
def test_provider_takes_over_co_owned_fields(plans, stack):
    # Marin's provider: enable_patch_force=True (infra/pulumi/src/iac/program.py@ef45e6c0).
    (p,) = [r for r in plans[stack].resources if r.type == "pulumi:providers:kubernetes"]
    assert p.inputs["enablePatchForce"] == "true"
    # ... and so declares the Namespace's finalizer a forced apply would prune
    # (lib/iris/.../k8s/rbac_manifests.py@33283163 namespace_manifest).
    (ns,) = [r for r in plans[stack].resources if r.type == "kubernetes:core/v1:Namespace"]
    assert ns.inputs["spec"] == {"finalizers": ["kubernetes"]}


def test_gcp_stack_declares_marins_addresses_and_mirrors(plans):
    cfg = config("marin")["provisioning"]["gcp"]
    res = plans["marin"].resources
    addresses = {r.inputs["name"]: r.inputs["address"] for r in res
                 if r.type == "gcp:compute/address:Address"}
    assert addresses == {a["name"]: a["address"] for a in cfg["addresses"]}
    repos = {(r.inputs["location"], r.inputs["repositoryId"]) for r in res
             if r.type == "gcp:artifactregistry/repository:Repository"}
    assert repos == {(loc, reg["name"]) for reg in cfg["registries"] for loc in reg["locations"]}
