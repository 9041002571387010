"""Uniqueness inside one config and one owner per cloud identity across stacks
(clusterstack.validation.identities): located at the repeat, naming both files."""

from __future__ import annotations

import re
import shutil

import pytest

from helpers import edit, line_of, shown
from clusterstack.cli import main

H100, GCP = "clusters/cw-demo-h100.yaml", "clusters/gcp-demo.yaml"


def _validate(root, capsys):
    rc = main(["--root", str(root), "validate"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    # `note:` lines say what validate accepts but cannot check (validation.clusters.cluster_notes)
    return rc, "".join(ln for ln in cap.err.splitlines(keepends=True) if not ln.startswith("note: "))


@pytest.mark.parametrize("rel,old,new,needle,field,what", [
    (GCP, "name: log-relay", "name: controller-ingress", "name: controller-ingress\n        region: us-central1           #",
     "provisioning.gcp.addresses[1].name", "address 'controller-ingress'"),
    (GCP, "name: ghcr-mirror", "name: dockerhub-mirror", "name: dockerhub-mirror\n        docker_upstream: https",
     "provisioning.gcp.registries[1].name", "registry 'dockerhub-mirror'"),
    (H100, "[letsencrypt-http01-staging, letsencrypt-http01-prod]",
     "[letsencrypt-http01-prod, letsencrypt-http01-prod]", "cluster_issuers:",
     "provisioning.coreweave.ingress.cluster_issuers[1]", "issuer 'letsencrypt-http01-prod'"),
])
def test_a_name_repeated_inside_one_config_is_an_error_at_the_repeat(workspace_copy, capsys, rel, old,
                                                                      new, needle, field, what):
    text = edit(workspace_copy / rel, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"{rel}:{line_of(text, needle)}: {field}: {what} is declared twice" in err


def _copy_stack(root, src: str, dst: str) -> str:
    text = (root / "clusters" / f"{src}.yaml").read_text().replace(f"name: {src}\n", f"name: {dst}\n", 1)
    (root / "clusters" / f"{dst}.yaml").write_text(text)
    shutil.copy(root / "infra" / f"Pulumi.{src}.yaml", root / "infra" / f"Pulumi.{dst}.yaml")
    edit(root / "infra" / f"Pulumi.{dst}.yaml", f"cluster: {src}", f"cluster: {dst}")
    return text


def test_a_copied_coreweave_stack_claims_the_same_cluster_queue_and_dns_name(workspace_copy, capsys):
    text = _copy_stack(workspace_copy, "cw-demo-h100", "cw-demo-h100-copy")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    lines = err.splitlines()
    for field, what, needle in [
            ("provisioning.coreweave.cluster.name", "CKS cluster 'demo-h100'", "cluster: {name: demo-h100"),
            ("kubernetes_provider.kueue.cluster_queue", "ClusterQueue 'training-cq'", "cluster_queue"),
            ("provisioning.coreweave.federation_dns.hostname", "DNS name", "hostname:")]:
        line = line_of(text, needle)
        hit = [ln for ln in lines if f".yaml:{line}: {field}: {what}" in ln]
        assert len(hit) == 1 and "cw-demo-h100-copy" in hit[0] and "cw-demo-h100.yaml" in hit[0], err


def test_a_copied_gcp_stack_claims_the_same_addresses_and_load_balancer(workspace_copy, capsys):
    _copy_stack(workspace_copy, "gcp-demo", "gcp-demo2")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    for what in ("address 'controller-ingress' in demo-project/us-central1", "registry 'ghcr-mirror' in demo-project/us",
                 "load balancer 'gcp-tpu-a' in demo-project"):
        assert f"{what} is also claimed by clusters/gcp-demo.yaml:" in err, err


def test_distinct_identities_pass(workspace_copy, capsys):
    text = _copy_stack(workspace_copy, "cw-demo-gb200", "cw-demo-gb200-b")
    path = workspace_copy / "clusters" / "cw-demo-gb200-b.yaml"
    cks = next(ln.split("name:")[1].split(",")[0].strip() for ln in text.splitlines() if "cluster: {name:" in ln)
    path.write_text(text.replace(f"cluster: {{name: {cks},", "cluster: {name: other-cks,")
                    .replace(f"-{cks}.coreweave.app", "-other-cks.coreweave.app")
                    .replace("kube_context: demo-gb200_", "kube_context: other-cks_"))
    rc, err = _validate(workspace_copy, capsys)
    assert "CKS cluster" not in err and "ClusterQueue" not in err and "kube context" not in err


def test_two_stacks_in_one_kube_context_are_refused(workspace_copy, capsys):
    """A second stack whose provider targets the same Kubernetes cluster (kube context) — even
    under another CKS name, queue and DNS name — would declare the same objects there (its
    Helm releases and ClusterIssuers at least): refused at its kube_context line."""
    text = _copy_stack(workspace_copy, "cw-demo-h100", "cw-h100-team-b")
    path = workspace_copy / "clusters" / "cw-h100-team-b.yaml"
    text = text.replace("cluster: {name: demo-h100,", "cluster: {name: demo-h100-b,") \
        .replace("cluster_queue: training-cq", "cluster_queue: team-b-cq") \
        .replace("hostname: ctl-cw-demo-h100.example.org", "hostname: ctl-team-b.example.org") \
        .replace("label_prefix: cwdemo", "label_prefix: teamb") \
        .replace("-demo-h100.coreweave.app", "-demo-h100-b.coreweave.app")
    path.write_text(text)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    line = line_of(text, "kube_context:")
    (hit,) = [ln for ln in err.splitlines() if "kube context 'demo-h100_US-EAST-04A'" in ln]
    assert hit.startswith(f"error: clusters/cw-h100-team-b.yaml:{line}: platform.coreweave.kube_context: ")
    assert "is also claimed by clusters/cw-demo-h100.yaml:5" in hit
    assert "CKS cluster" not in err and "DNS name" not in err   # only the shared context


# --- buckets: one owner per bucket name across the buckets projects' stacks ---------------------

def _buckets_stack(root, stack: str, file: str) -> None:
    (root / "buckets" / f"Pulumi.{stack}.yaml").write_text(f"config:\n  clusterstack-buckets:file: {file}\n")


def _second_stack_sharing_the_log_bucket(root) -> tuple[str, str]:
    """A buckets stack ``more`` whose file renames every bucket but the access-log one:
    ``(buckets.yaml text, more.yaml text)``."""
    original = (root / "buckets" / "buckets.yaml").read_text()
    other = original.replace("name: demo-lab-training-data", "name: demo-lab-training-data-2") \
                    .replace("name: demo-lab-checkpoints", "name: demo-lab-checkpoints-2")
    (root / "buckets" / "more.yaml").write_text(other)   # the log bucket name is left as is
    _buckets_stack(root, "more", "more.yaml")
    return original, other


def test_two_buckets_files_declaring_one_gcs_bucket_name_name_both(workspace_copy, capsys):
    original, other = _second_stack_sharing_the_log_bucket(workspace_copy)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    log_line = line_of(original, "name: demo-lab-bucket-access-logs")
    assert (f"more.yaml:{line_of(other, 'name: demo-lab-bucket-access-logs')}: gcs.log_bucket.name: "
            f"GCS bucket 'demo-lab-bucket-access-logs' is also claimed by buckets/buckets.yaml:{log_line} "
            "(stack buckets/lab)") in err, err
    assert "demo-lab-training-data" not in err   # the renamed ones are distinct


def test_two_stacks_naming_one_buckets_file_is_one_problem(workspace_copy, capsys):
    _buckets_stack(workspace_copy, "lab2", "buckets.yaml")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert [ln for ln in err.splitlines() if ln.startswith("error:")] == [
        f"error: {shown(workspace_copy / 'buckets' / 'Pulumi.lab2.yaml')}: config: stack buckets/lab2 names "
        "buckets/buckets.yaml, which stack buckets/lab (buckets/Pulumi.lab.yaml) already names: every bucket in it would "
        "have two owners — give each stack its own buckets file, or remove the stack"], err


def test_distinct_bucket_names_pass(workspace_copy, capsys):
    original = (workspace_copy / "buckets" / "buckets.yaml").read_text()
    renamed = re.sub(r"name: (demo-lab-[\w-]+)", r"name: \1-eu", original)   # every bucket of every provider
    assert renamed.count("-eu\n") >= 5
    (workspace_copy / "buckets" / "eu.yaml").write_text(renamed)
    _buckets_stack(workspace_copy, "eu", "eu.yaml")
    rc, err = _validate(workspace_copy, capsys)
    assert "also claimed" not in err and "two owners" not in err, err


# --- a controller VM serves one cluster --------------------------------------------------------

@pytest.mark.parametrize("vm, claimed, hint", [
    ("tpua-controller", "(stack gcp-tpu-a)",
     "each cluster has its own controller VM: fix controller.gcp (zone, instance) in one file"),
    ("tpua-log-relay", "(stack gcp-tpu-a, its log relay VM)",
     "a VM serves one cluster in one role: fix controller.gcp (zone, instance) here, or "
     "log_relay.gcp in gcp-tpu-a.yaml"),
], ids=["another-controller", "another-log-relay"])
def test_a_controller_on_a_vm_another_cluster_claims_is_an_error_at_the_second(
        workspace_copy, capsys, vm, claimed, hint):
    a = (workspace_copy / "clusters" / "gcp-tpu-a.yaml").read_text()
    b = edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml",
             ("    zone: us-east5-b\n    instance: tpub-controller", f"    zone: us-central1-a\n    instance: {vm}"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert err.splitlines() == [
        f"error: clusters/gcp-tpu-b.yaml:{line_of(b, f'instance: {vm}')}: controller.gcp.instance: "
        f"controller VM {vm!r} in demo-project/us-central1-a is also claimed by "
        f"clusters/gcp-tpu-a.yaml:{line_of(a, f'instance: {vm}')} {claimed} — {hint}"], err


def test_a_defaulted_controller_vm_name_is_compared_too(workspace_copy, capsys):
    # gcp-tpu-b names its VM as gcp-tpu-a's default would be, in gcp-tpu-a's zone
    edit(workspace_copy / "clusters" / "gcp-tpu-a.yaml",
         ("    instance: tpua-controller      # the VM carries network tag tpua-controller (the default)\n", ""))
    b = edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml",
             ("    zone: us-east5-b\n    instance: tpub-controller", "    zone: us-central1-a\n    instance: iris-controller-tpua"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"clusters/gcp-tpu-b.yaml:{line_of(b, 'instance: iris-controller-tpua')}: controller.gcp.instance: "
            "controller VM 'iris-controller-tpua' in demo-project/us-central1-a is also claimed by clusters/gcp-tpu-a.yaml:") in err, err
    # the same VM name in another zone is another VM
    edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml", ("    zone: us-central1-a\n", "    zone: us-central1-b\n"))
    rc, err = _validate(workspace_copy, capsys)
    assert "controller VM" not in err, err


# --- a VM serves one cluster, whatever its role ------------------------------------------------

def test_a_log_relay_on_another_clusters_controller_vm_names_both_files(workspace_copy, capsys):
    a = (workspace_copy / "clusters" / "gcp-tpu-a.yaml").read_text()

    def refused(b: str, vm: str, claimed: str) -> list[str]:
        return [f"error: clusters/gcp-tpu-b.yaml:{line_of(b, f'instance: {vm}')}: log_relay.gcp.instance: "
                f"log relay VM {vm!r} in demo-project/us-central1-a is also claimed by "
                f"clusters/gcp-tpu-a.yaml:{line_of(a, f'instance: {vm}')} {claimed}"]
    b = edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml",
             ("auth:\n", "log_relay:\n  gcp: {zone: us-central1-a, instance: tpua-controller, port: 10001}\nauth:\n"))
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err.splitlines()) == (2, refused(
        b, "tpua-controller", "(stack gcp-tpu-a, its controller VM) — a VM serves one cluster in one "
        "role: fix log_relay.gcp (zone, instance) here, or controller.gcp in gcp-tpu-a.yaml")), err
    # two clusters' log relays on one VM: the same index, the same-role hint
    b = edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml", ("instance: tpua-controller", "instance: tpua-log-relay"))
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err.splitlines()) == (2, refused(
        b, "tpua-log-relay", "(stack gcp-tpu-a) — each cluster has its own log relay VM: fix "
        "log_relay.gcp (zone, instance) in one file")), err
    # the same name in another zone is another VM
    edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml", ("zone: us-central1-a, instance", "zone: us-central1-b, instance"))
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err) == (0, ""), err


def test_one_clusters_controller_and_log_relay_may_share_a_vm(workspace_copy, capsys):
    edit(workspace_copy / "clusters" / "gcp-tpu-a.yaml", ("instance: tpua-log-relay", "instance: tpua-controller"))
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err) == (0, ""), err


# --- plan refuses what validate refuses ---------------------------------------------------------

def test_plan_refuses_a_shared_vm_as_validate_does(workspace_copy, capsys):
    edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml",
         ("    zone: us-east5-b\n    instance: tpub-controller", "    zone: us-central1-a\n    instance: tpua-controller"))
    rc, expected = _validate(workspace_copy, capsys)
    assert rc == 2 and expected.count("error:") == 1 and "controller VM 'tpua-controller'" in expected
    # either claimant, and the GCP stack whose load balancer routes to both, before any program runs
    for stack in ("gcp-tpu-b", "gcp-tpu-a", "gcp-demo"):
        assert main(["--root", str(workspace_copy), "plan", stack]) == 2, stack
        cap = capsys.readouterr()
        assert (cap.err, cap.out) == (expected, ""), stack
    from clusterstack.validation.clusters import plan_identity_problems
    from clusterstack.workspace import Workspace

    assert plan_identity_problems(Workspace.load(workspace_copy), ["cw-demo-h100"]) == []  # not involved


def test_plan_refuses_a_bucket_two_stacks_own_as_validate_does(workspace_copy, capsys):
    original, other = _second_stack_sharing_the_log_bucket(workspace_copy)
    rc, expected = _validate(workspace_copy, capsys)
    assert rc == 2 and "GCS bucket 'demo-lab-bucket-access-logs' is also claimed" in expected
    for argv in (["--project", "buckets"], ["--all"]):
        assert main(["--root", str(workspace_copy), "plan", *argv]) == 2, argv
        cap = capsys.readouterr()
        assert (cap.err, cap.out) == (expected, ""), argv
    from clusterstack.validation.projects import plan_bucket_problems
    from clusterstack.workspace import Workspace

    ws = Workspace.load(workspace_copy)
    github = next(p for p in ws.projects if p.kind == "github")
    assert plan_bucket_problems(ws, [(github.directory, s) for s in github.info().stacks()]) == []


def test_a_log_relay_on_its_own_controllers_vm_and_port_is_refused(workspace_copy, capsys):
    # both NEGs would hold tpua-controller:10000, and the relay's backend has no IAP
    a = edit(workspace_copy / "clusters" / "gcp-tpu-a.yaml",
             ("instance: tpua-log-relay      # network tag tpua-log-relay (the default)\n    port: 10001",
              "instance: tpua-controller\n    port: 10000"))
    lines = a.splitlines()
    ctl_port = lines.index("    port: 10000") + 1
    relay_port = lines.index("    port: 10000", line_of(a, "log_relay:")) + 1
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err.splitlines()) == (2, [
        f"error: clusters/gcp-tpu-a.yaml:{relay_port}: log_relay.gcp.port: log relay endpoint "
        "tpua-controller:10000 in demo-project/us-central1-a is the controller's own endpoint "
        f"(controller.gcp.port, line {ctl_port}): the log relay's backend has no IAP, "
        "so its domain would reach the controller API without IAP — give the log relay its own port "
        "(log_relay.gcp.port) or VM: the controller and log relay of one cluster may share a VM, never "
        "a port"]), err
    for stack in ("gcp-demo", "gcp-tpu-a"):
        assert main(["--root", str(workspace_copy), "plan", stack]) == 2, stack
        cap = capsys.readouterr()
        assert (cap.err, cap.out) == (err, ""), stack
    # the same VM on another port is legitimate
    edit(workspace_copy / "clusters" / "gcp-tpu-a.yaml", ("tpua-controller\n    port: 10000\n", "tpua-controller\n    port: 10001\n"))
    assert _validate(workspace_copy, capsys) == (0, "")


def test_a_location_listed_twice_for_one_registry_is_refused_at_its_line(workspace_copy, capsys):
    text = edit(workspace_copy / GCP, ("locations: [us]", "locations: [us, us]"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and f"{GCP}:{line_of(text, 'locations: [us, us]')}:" in err, err
    assert "'us' is listed twice" in err and main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 2


def test_a_registry_name_in_another_location_is_another_repository(workspace_copy, capsys):
    # gcp-demo declares ghcr-mirror in [us]; repositories are named per project and location
    mirror = ("    project: demo-project\n", "    project: demo-project\n    registries:\n      - name: ghcr-mirror\n"
              "        docker_upstream: https://ghcr.io\n        locations: [asia]\n")
    b = edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml", mirror)
    assert _validate(workspace_copy, capsys) == (0, "")
    # a list claims each of its locations: [asia, us] clashes in us
    edit(workspace_copy / "clusters" / "gcp-tpu-b.yaml", ("locations: [asia]", "locations: [asia, us]"))
    gcp = (workspace_copy / GCP).read_text()
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err.splitlines()) == (2, [
        f"error: clusters/gcp-tpu-b.yaml:{line_of(b, 'name: ghcr-mirror')}: provisioning.gcp.registries[0].name: "
        "registry 'ghcr-mirror' in demo-project/us is also claimed by "
        f"clusters/gcp-demo.yaml:{line_of(gcp, 'name: ghcr-mirror')} (stack gcp-demo) — each cloud identity "
        "belongs to exactly one stack: remove or rename it in one file"]), err


# --- a cluster is routed by one load balancer --------------------------------------------------

def test_a_cluster_routed_by_two_load_balancers_in_one_project_is_refused(workspace_copy, capsys):
    # a second GCP stack with its own frontend name, routing the same controllers and log relay
    text = _copy_stack(workspace_copy, "gcp-demo", "gcp-demo2")
    text = text[:text.index("    addresses:")] + text[text.index("    gclb:"):]
    text = text.replace("frontend_name: gcp-tpu-a ", "frontend_name: gcp-tpu-b ")
    (workspace_copy / "clusters" / "gcp-demo2.yaml").write_text(text)
    gcp = (workspace_copy / GCP).read_text()
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    hint = ("route each cluster through one load balancer: remove the cluster from one stack's "
            "provisioning.gcp.gclb, or put the two load balancers in different projects")
    rows = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(rows) == 3, err   # one per listing: two controllers, one log relay
    for row, (field, needle, first) in zip(rows, [
            ("controllers[0]", "- cluster: gcp-tpu-a ", "NEG 'gcp-tpu-a-neg', health check 'gcp-tpu-a-hc', "
             "backend service 'gcp-tpu-a-be', backend service 'gcp-tpu-a-proxy-be', security policy "
             "'gcp-tpu-a-proxy-armor', firewall"),
            ("controllers[1]", "- cluster: gcp-tpu-b", "NEG 'gcp-tpu-b-neg', health check 'gcp-tpu-b-hc', "
             "backend service 'gcp-tpu-b-be', firewall"),
            ("log_relays[0]", "- cluster: gcp-tpu-a\n          domain", "security policy 'gcp-tpu-a-relay-armor', "
             "NEG 'gcp-tpu-a-relay-neg'")]):
        assert row.startswith(f"error: clusters/gcp-demo2.yaml:{line_of(text, needle)}: "
                              f"provisioning.gcp.gclb.{field}.cluster: {first}"), row
        assert row.endswith(f"are also declared by the load balancer of clusters/gcp-demo.yaml:"
                            f"{line_of(gcp, needle)} (stack gcp-demo): both stacks would own them — {hint}"), row
    assert "SSL certificate 'logs-example-org-cert'" in rows[2]
    # the certificate domains' DNS records join their listing's one problem (one zone, one owner)
    assert "DNS name 'logs.example.org' in zone 0123456789abcdef0123456789abcdef" in rows[2]
    assert "DNS name 'ctl-b.example.org' in zone" in rows[1]
    for argv in (["gcp-demo2"], ["--all"]):
        assert main(["--root", str(workspace_copy), "plan", *argv]) == 2, argv
        cap = capsys.readouterr()
        assert (cap.err, cap.out) == (err, ""), argv


def test_the_objects_claimed_for_a_load_balancer_are_the_ones_its_plan_declares(workspace_copy):
    # tied to the component: every named GCLB object of the golden plan of gcp-demo (by its
    # import ID) except the frontend's, named after frontend_name alone, and the members
    # (NEG endpoints, IAP settings) that live inside another object
    import json
    from pathlib import Path
    from clusterstack.derive.gclb import FrontendNames, backend_objects, derive_gclb
    from clusterstack.validation.clusters import load_cluster, load_references
    from clusterstack.workspace import Workspace

    ws = Workspace.load(workspace_copy)
    cfg = load_cluster(ws, "gcp-demo").config
    claimed = [name for name, _what, _path in backend_objects(cfg, derive_gclb(cfg, load_references(ws, cfg)))]
    golden = json.loads((Path(__file__).parents[1] / "golden" / "gcp-demo.json").read_text())
    frontend = FrontendNames(cfg.provisioning.gcp.gclb.frontend_name).gce_names()
    declared = {r["adoptId"] for s in golden["stacks"] for r in s["resources"]
                if "GcpGclbIap$" in r["urn"] and r.get("adoptId")
                and not any(t in r["urn"] for t in ("networkEndpoint:", "iap/settings:"))
                and r["adoptId"].rsplit("/", 1)[1] not in frontend}
    assert len(claimed) == len(set(claimed)) == 23
    assert set(claimed) == declared


def test_a_controller_named_like_a_listed_log_relay_is_refused(workspace_copy, capsys):
    # controller gcp-tpu-a-relay's objects are named like gcp-tpu-a's log relay's (<cluster>-relay-…)
    # (its NEG is in another zone, so another NEG)
    b = _copy_stack(workspace_copy, "gcp-tpu-b", "gcp-tpu-a-relay")
    (workspace_copy / "clusters" / "gcp-tpu-a-relay.yaml").write_text(
        b.replace("label_prefix: tpub", "label_prefix: tpuc").replace("tpub-controller", "tpuc-controller")
         .replace("ctl-b.example.org", "ctl-c.example.org")
         .replace("backendServices/5832461923456789012", "backendServices/5832461923456789013"))
    gcp = edit(workspace_copy / GCP, ("          token_proxy: false\n",
                                      "          token_proxy: false\n        - cluster: gcp-tpu-a-relay\n"))
    rc, err = _validate(workspace_copy, capsys)
    assert (rc, err.splitlines()) == (2, [
        f"error: clusters/gcp-demo.yaml:{line_of(gcp, '- cluster: gcp-tpu-a' + chr(10) + '          domain')}: "
        "provisioning.gcp.gclb.log_relays[0].cluster: health check 'gcp-tpu-a-relay-hc', "
        "backend service 'gcp-tpu-a-relay-be', firewall 'gcp-tpu-a-relay-allow-lb' are also declared for "
        f"provisioning.gcp.gclb.controllers[2].cluster, line {line_of(gcp, '- cluster: gcp-tpu-a-relay')}: one name, "
        "two objects — rename one of the two clusters: a controller may not be named like another listed cluster's "
        "log relay (<cluster>-relay)"]), err
