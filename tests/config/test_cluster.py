"""Loading reviewed cluster configs: every bad input and the [defaults] rules.

Each bad input is made by editing a copy of the shipped workspace. The expected line is
computed from the edited text (the line holding ``needle``), and the whole rendered error —
``<file>:<line>: <field path>: <problem> — <hint>`` — is compared, through the library
(``load_cluster``) and through the CLI (``validate`` and ``plan``: exit code 2, the same
lines on stderr, no traceback).
"""

from __future__ import annotations

import shutil

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from helpers import edit, line_of, shown
from clusterstack.cli import main
from clusterstack.validation import load_all, load_cluster
from clusterstack.config.cluster import Ingress
from clusterstack.config.types import quantity_bytes
from clusterstack.errors import ConfigError
from clusterstack.config.secretspec import SecretSpec
from clusterstack.workspace import Workspace

H100, GB200, GCP = "cw-demo-h100", "cw-demo-gb200", "gcp-demo"


@dataclass(frozen=True)
class Expect:
    """One expected problem: the line holding ``needle`` in the edited file."""

    needle: str
    field: str
    message: str
    hint: str


@dataclass(frozen=True)
class Bad:
    id: str
    cluster: str
    edits: tuple[tuple[str, str], ...] | Callable[[str], str]
    expect: tuple[Expect, ...]
    absent: tuple[str, ...] = field(default=())  # text that must not appear in the error output


def cut_from(marker: str) -> Callable[[str], str]:
    """An edit that drops the file from ``marker`` (inclusive) to the end."""
    def apply(text: str) -> str:
        assert text.count(marker) == 1
        return text[:text.index(marker)]
    return apply


REQUIRED, ADD = "Field required", "add this field"
# a missing section is shown with its shape: its required fields, from the model
ADD_GCP = "add provisioning.gcp, shaped like:\n  provisioning:\n    gcp:\n      project: <text>"
ADD_COREWEAVE = ("add provisioning.coreweave, shaped like:\n  provisioning:\n    coreweave:\n"
                 "      cluster:\n        name: <text>\n        zone: <text>\n"
                 "      kueue:\n        flavor_topology: <infiniband | multinode-nvlink-ib | hostname>\n"
                 "      ingress:\n        acme_email: <text>\n        cluster_issuers: [<text>, …]\n"
                 "        active_cluster_issuer: <text>\n        federation_allow_sources: [<text>, …]\n"
                 "      rbac:\n        service_account: <text>")
FIX = "fix the value"
STRICT = "remove it or fix its spelling; fields under provisioning are strict"
NOT_CIDR = "is not an IP address or CIDR"
ZONE_HINT = ("set it to US-EAST-04A (provisioning.coreweave.cluster.zone), or move the stack by "
             "changing the cluster's zone")

BAD = [
    Bad("invalid-yaml", H100, (("      target: ctl.abc123-demo-h100.coreweave.app", "      target: ctl: demo"),),
        (Expect("target: ctl: demo", "", "invalid YAML: mapping values are not allowed in this context",
                "fix the YAML syntax"),)),
    Bad("duplicate-key", H100, (("      ingress_class: traefik\n",
                                 "      ingress_class: traefik\n      ingress_class: nginx\n"),),
        (Expect("ingress_class: nginx", "",
                'invalid YAML: found duplicate key "ingress_class" with value "nginx" (original value: "traefik")',
                "remove or rename the repeated key"),)),
    Bad("missing-field-under-provisioning", H100,
        (("    cluster: {name: demo-h100, zone: US-EAST-04A}", "    cluster: {name: demo-h100}"),),
        (Expect("    cluster: {name: demo-h100}", "provisioning.coreweave.cluster.zone", REQUIRED, ADD),)),
    Bad("missing-section-under-provisioning", H100, (("    rbac: {service_account: controller}\n", ""),),
        (Expect("  coreweave:\n    cluster:", "provisioning.coreweave.rbac", REQUIRED,
                "add it, shaped like:\n  rbac:\n    service_account: <text>"),)),
    Bad("unknown-field-under-provisioning", H100,
        (("    rbac: {service_account: controller}\n", "    rbac: {service_account: controller}\n    rbca: {}\n"),),
        (Expect("    rbca: {}", "provisioning.coreweave.rbca", "Extra inputs are not permitted", STRICT),)),
    Bad("unknown-nested-field-under-provisioning", H100,
        (("client_connection: {qps: 100, burst: 200}", "client_connection: {qps: 100, burst: 200, timeout: 5}"),),
        (Expect("timeout: 5", "provisioning.coreweave.kueue.client_connection.timeout",
                "Extra inputs are not permitted", STRICT),)),
    Bad("missing-provider-block", H100, cut_from("  coreweave:\n    cluster:"),
        (Expect("provisioning:", "provisioning.coreweave",
                "provider is coreweave but the coreweave block is missing", ADD_COREWEAVE),)),
    Bad("missing-gcp-provider-block", GCP, cut_from("  gcp:\n"),
        (Expect("provisioning:", "provisioning.gcp", "provider is gcp but the gcp block is missing",
                ADD_GCP),)),
    Bad("block-of-the-other-provider", H100, (("  provider: coreweave", "  provider: gcp"),),
        (Expect("provisioning:", "provisioning.gcp", "provider is gcp but the gcp block is missing",
                ADD_GCP),
         Expect("  coreweave:\n    cluster:", "provisioning.coreweave",
                "provider is gcp; a coreweave block is not allowed",
                "remove provisioning.coreweave or change provider"))),
    Bad("missing-provider", H100, (("  provider: coreweave\n", ""),),
        (Expect("provisioning:", "provisioning.provider", REQUIRED, ADD),)),
    Bad("unknown-provider", H100, (("  provider: coreweave", "  provider: aws"),),
        (Expect("provider: aws", "provisioning.provider", "Input should be 'coreweave' or 'gcp'",
                "use one of the allowed values"),)),
    Bad("partial-nvl72-rack", GB200, (("slice_template: {num_vms: 18,", "slice_template: {num_vms: 5,"),),
        (Expect("    max_slices: 12", "scale_groups.gb200.max_slices",
                "60 nodes is not a whole number of 18-node NVL72 racks for gb200-4x",
                "make max_slices × num_vms a multiple of 18"),)),
    Bad("memory-limit-under-2gi", H100, (("manager_memory_limit: 4Gi", "manager_memory_limit: 1536Mi"),),
        (Expect("manager_memory_limit: 1536Mi", "provisioning.coreweave.kueue.manager_memory_limit",
                "1536Mi is below the 2Gi minimum for the Kueue manager", FIX),)),
    Bad("memory-limit-not-a-quantity", H100, (("manager_memory_limit: 4Gi", "manager_memory_limit: 4GB"),),
        (Expect("manager_memory_limit: 4GB", "provisioning.coreweave.kueue.manager_memory_limit",
                "'4GB' is not a Kubernetes memory quantity such as 4Gi or 4096Mi", FIX),)),
    Bad("unknown-active-issuer", H100,
        (("active_cluster_issuer: letsencrypt-http01-prod", "active_cluster_issuer: letsencrypt-dns01"),),
        (Expect("active_cluster_issuer: letsencrypt-dns01", "provisioning.coreweave.ingress.active_cluster_issuer",
                "active_cluster_issuer 'letsencrypt-dns01' is not one of cluster_issuers "
                "['letsencrypt-http01-staging', 'letsencrypt-http01-prod']", FIX),)),
    Bad("bad-cidr", H100, (("198.51.100.0/24]", "198.51.100.0/33]"),),
        (Expect("federation_allow_sources: [", "provisioning.coreweave.ingress.federation_allow_sources[1]",
                f"'198.51.100.0/33' {NOT_CIDR} ('198.51.100.0/33' does not appear to be an IPv4 or IPv6 network)",
                FIX),)),
    Bad("bad-ip", H100, (("[203.0.113.10,", "[203.0.113.256,"),),
        (Expect("federation_allow_sources: [", "provisioning.coreweave.ingress.federation_allow_sources[0]",
                f"'203.0.113.256' {NOT_CIDR} ('203.0.113.256' does not appear to be an IPv4 or IPv6 network)",
                FIX),)),
    Bad("cidr-with-host-bits", H100, (("198.51.100.0/24]", "198.51.100.7/24]"),),
        (Expect("federation_allow_sources: [", "provisioning.coreweave.ingress.federation_allow_sources[1]",
                f"'198.51.100.7/24' {NOT_CIDR} (198.51.100.7/24 has host bits set)", FIX),)),
    # the only entry bad: one problem, at the entry's line (no second "at least 1 item")
    Bad("the-only-allow-source-bad", H100,
        (("federation_allow_sources: [203.0.113.10, 198.51.100.0/24]",
          "federation_allow_sources:\n        - 203.0.113.1O"),),
        (Expect("- 203.0.113.1O", "provisioning.coreweave.ingress.federation_allow_sources[0]",
                f"'203.0.113.1O' {NOT_CIDR} ('203.0.113.1O' does not appear to be an IPv4 or IPv6 network)",
                FIX),)),
    Bad("no-allow-source", H100, (("federation_allow_sources: [203.0.113.10, 198.51.100.0/24]",
                                   "federation_allow_sources: []"),),
        (Expect("federation_allow_sources: []", "provisioning.coreweave.ingress.federation_allow_sources",
                "List should have at least 1 item after validation, not 0",
                "a list here needs at least one entry; remove the entry instead of emptying it"),)),
    # a NodePool's scale group declares a node that can run a pod (its figures are the quota)
    Bad("gpu-group-with-0-cpu", H100, (("{cpu: 128, ram: 2048GB", "{cpu: 0, ram: 2048GB"),),
        (Expect("resources: {cpu: 0", "scale_groups.h100.resources.cpu",
                "0 CPUs per gd-8xh100ib-i128 node: the ClusterQueue's cpu quota would be 0 and Kueue "
                "would admit no pod", "set it to the vCPUs one gd-8xh100ib-i128 node offers"),)),
    # ... and memory and local disk: 0 bytes in any spelling is a quota of 0
    *(Bad(f"cpu-group-with-{spelled}-{field}", H100, ((f"{field}: {was},", f"{field}: {spelled},"),),
          (Expect(f"{field}: {spelled},", f"scale_groups.cpu-general.resources.{field}",
                  f"0 bytes of {what} per cd-gp-i64-erapids node ({kept!r}): the ClusterQueue's "
                  f"{resource} quota would be 0 and Kueue would admit no pod requesting {resource}",
                  f"set it to the {what} one cd-gp-i64-erapids node offers, e.g. 512GB or 6.98TiB"),))
      for field, was, what, resource in (("ram", "512GB", "memory", "memory"),
                                         ("disk", "6.98TiB", "local disk", "ephemeral-storage"))
      for spelled, kept in (("0", "0"), ("0GB", "0GB"), ("0.0TiB", "0.0TiB"), ("0.1B", "0.1B"))),
    # a size is written with its unit; without one (or signed, or not a size) it is refused
    Bad("ram-without-a-unit", H100, (("ram: 512GB,", "ram: 512,"),),
        (Expect("ram: 512,", "scale_groups.cpu-general.resources.ram",
                "512 has no unit: write a size such as 512GB or 512GiB", FIX),)),
    Bad("ram-quoted-without-a-unit", H100, (("ram: 512GB,", 'ram: "512",'),),
        (Expect('ram: "512",', "scale_groups.cpu-general.resources.ram",
                "'512' has no unit: write a size such as 512GB or 512GiB", FIX),)),
    Bad("negative-disk", H100, (("disk: 6.98TiB,", "disk: -1TB,"),),
        (Expect("disk: -1TB,", "scale_groups.cpu-general.resources.disk",
                "'-1TB' is not a size such as 512GB or 7TiB", "write a size such as 512GB, 960GiB or 7.68TB"),)),
    Bad("ram-not-a-size", H100, (("ram: 512GB,", "ram: lots,"),),
        (Expect("ram: lots,", "scale_groups.cpu-general.resources.ram",
                "'lots' is not a size such as 512GB or 7TiB", "write a size such as 512GB, 960GiB or 7.68TB"),)),
    Bad("gpu-group-with-0-gpus", H100, (("device_variant: H100, device_count: 8", "device_variant: H100, device_count: 0"),),
        (Expect("device_count: 0", "scale_groups.h100.resources.device_count",
                "a GPU scale group with 0 GPUs per gd-8xh100ib-i128 node: its GPU quota would be 0",
                "set it to the GPUs one gd-8xh100ib-i128 node has, or device_type: cpu"),)),
    # one zone per CoreWeave stack: the CKS cluster's
    Bad("slice-in-another-zone", H100,
        (("{region: US-EAST-04A, instance_type: gd-8xh100ib-i128}", "{region: US-WEST-04A, instance_type: gd-8xh100ib-i128}"),),
        (Expect("region: US-WEST-04A", "scale_groups.h100.slice_template.coreweave.region",
                "region 'US-WEST-04A' is not the CKS cluster's zone 'US-EAST-04A': the NodePool's Nodes "
                "join that cluster, in its zone", ZONE_HINT),)),
    Bad("platform-in-another-zone", H100,
        (("coreweave: {region: US-EAST-04A, kube_context", "coreweave: {region: US-EAST-02A, kube_context"),),
        (Expect("region: US-EAST-02A", "platform.coreweave.region",
                "region 'US-EAST-02A' is not the CKS cluster's zone 'US-EAST-04A'", ZONE_HINT),)),
    # a static address is one address: GCP's compute.addresses takes it bare
    Bad("gcp-address-with-a-prefix", GCP, (("    address: 34.16.10.21", "    address: 34.16.10.21/32"),),
        (Expect("address: 34.16.10.21/32", "provisioning.gcp.addresses[1].address",
                "address '34.16.10.21/32' is not an IPv4 address", FIX),)),
    Bad("bad-gcp-address", GCP, (("    address: 34.16.10.21", "    address: 34.16.10.321"),),
        (Expect("address: 34.16.10.321", "provisioning.gcp.addresses[1].address",
                "address '34.16.10.321' is not an IPv4 address", FIX),)),
    Bad("invalid-pool-name", H100, (("  h100:\n", "  H100!:\n"),),
        (Expect("  H100!:", "scale_groups.H100!", "NodePool name 'cwdemo-h100!' is not a valid RFC 1123 label",
                "use lowercase letters, digits and '-' (63 characters at most) in the label_prefix "
                "and scale group name"),)),
    Bad("duplicate-nodepool-names", H100, (("  cpu-general:\n", "  H100:\n"),),
        (Expect("  h100:\n", "scale_groups.h100",
                "NodePool name 'cwdemo-h100' is also derived from scale group 'H100'",
                "rename one of the two scale groups"),)),
    Bad("missing-kube-context", H100,
        (("coreweave: {region: US-EAST-04A, kube_context: demo-h100_US-EAST-04A}",
          "coreweave: {region: US-EAST-04A}"),),
        (Expect("coreweave: {region: US-EAST-04A}", "platform.coreweave.kube_context", REQUIRED, ADD),)),
    Bad("empty-kube-context", H100,
        (("kube_context: demo-h100_US-EAST-04A}", "kube_context: ''}"),),
        (Expect("kube_context: ''", "platform.coreweave.kube_context",
                "String should have at least 1 character", FIX),)),
    Bad("missing-kueue-section", H100, (("  kueue: {cluster_queue: training-cq}\n", ""),),
        (Expect("kubernetes_provider:", "kubernetes_provider.kueue.cluster_queue",
                "required for a CoreWeave stack", "add kubernetes_provider.kueue.cluster_queue"),)),
    Bad("missing-kubernetes-provider-section", H100,
        (("kubernetes_provider:\n  namespace: training\n  kueue: {cluster_queue: training-cq}\n", ""),),
        (Expect("name: cw-demo-h100", "kubernetes_provider.kueue.cluster_queue",
                "required for a CoreWeave stack", "add kubernetes_provider.kueue.cluster_queue"),)),
    Bad("missing-cluster-queue", H100, (("kueue: {cluster_queue: training-cq}", "kueue: {}"),),
        (Expect("  kueue: {}", "kubernetes_provider.kueue.cluster_queue", REQUIRED, ADD),)),
    Bad("bad-secret-spec", H100,
        (("api_token: gcp-secret://projects/demo-project/secrets/cloudflare-dns-token/versions/latest",
          "api_token: hunter2-plaintext-token"),),
        (Expect("api_token: hunter2", "provisioning.coreweave.federation_dns.api_token",
                "not a secret spec; use gcp-secret://projects/P/secrets/NAME/versions/V, env:NAME or "
                "file:PATH (a literal secret value is never accepted)", FIX),),
        absent=("hunter2",)),
    Bad("bad-secret-version", H100,
        (("cloudflare-dns-token/versions/latest", "cloudflare-dns-token/versions/0"),),
        (Expect("api_token: gcp-secret://", "provisioning.coreweave.federation_dns.api_token",
                "gcp-secret:// spec: version '0' is not 'latest' or a positive version number", FIX),)),
    Bad("name-does-not-match-file", H100, (("name: cw-demo-h100", "name: cw-demo-h101"),),
        (Expect("name: cw-demo-h101", "name", "'cw-demo-h101' does not match the file name cw-demo-h100.yaml",
                "rename the file or fix name:"),)),
    Bad("buffer-above-max", H100, (("    buffer_slices: 32 ", "    buffer_slices: 40 "),),
        (Expect("  h100:", "scale_groups.h100", "buffer_slices (40) exceeds max_slices (32)", FIX),)),
    Bad("cleanup-policy-bad-value", GCP, (("keep_count: 32", "keep_count: 0"),),
        (Expect("keep_count: 0", "provisioning.gcp.registries[1].cleanup_policies[1].keep_count",
                "Input should be greater than 0", FIX),)),
    Bad("cleanup-policy-missing-field", GCP, (("older_than: 1209600s, ", ""),),
        (Expect("{action: DELETE", "provisioning.gcp.registries[1].cleanup_policies[0].older_than",
                REQUIRED, ADD),)),
    Bad("cleanup-policy-unknown-action", GCP, (("action: KEEP", "action: MAYBE"),),
        (Expect("action: MAYBE", "provisioning.gcp.registries[1].cleanup_policies[1]",
                "Input tag 'MAYBE' found using 'action' does not match any of the expected tags: "
                "'DELETE', 'KEEP'", "set action to DELETE or KEEP"),)),
    Bad("bad-docker-upstream", GCP, (("docker_upstream: https://ghcr.io", "docker_upstream: ftp://ghcr.io"),),
        (Expect("ftp://ghcr.io", "provisioning.gcp.registries[1].docker_upstream",
                "'ftp://ghcr.io' is not in the expected format",
                "fix the value's format"),)),    # a typo of a top-level key would silently drop the section (every NodePool)
    Bad("typo-scale-groups", H100, (("\nscale_groups:\n", "\nscale_group:\n"),),
        (Expect("scale_group:\n  cpu-general:", "scale_group",
                "unknown key 'scale_group'",
                "rename it to scale_groups: (clusterstack reads that key; this one it would ignore)"),)),
    Bad("typo-log-relay", GCP, (("\nprovisioning:\n", "\nlog_rely: {}\nprovisioning:\n"),),
        (Expect("log_rely:", "log_rely",
                "unknown key 'log_rely'",
                "rename it to log_relay: (clusterstack reads that key; this one it would ignore)"),)),
]


def _apply(path: Path, edits) -> str:
    if callable(edits):
        text = edits(path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
        return text
    return edit(path, *edits)


@pytest.mark.parametrize("case", BAD, ids=[b.id for b in BAD])
def test_bad_input_is_located(case: Bad, workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    path = root / "clusters" / f"{case.cluster}.yaml"
    text = _apply(path, case.edits)
    expected = [f"{path}:{line_of(text, e.needle)}: " + (f"{e.field}: " if e.field else "")
                + f"{e.message} — {e.hint}" for e in case.expect]

    with pytest.raises(ConfigError) as ei:
        load_cluster(Workspace.load(root), case.cluster)
    assert [p.render() for p in ei.value.problems] == expected
    assert ei.value.exit_code == 2

    for argv in (["validate", case.cluster], ["plan", case.cluster]):
        assert main(["--root", str(root), *argv]) == 2, argv
        cap = capsys.readouterr()
        # the CLI shows paths relative to the workspace root, as the docs do
        assert cap.err == "".join(f"error: {e}\n" for e in expected).replace(f"{root}/", ""), argv
        assert "Traceback" not in cap.err + cap.out
        for secret in case.absent:
            assert secret not in cap.err + cap.out


def test_unknown_cluster_name(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    known = Workspace.load(root).cluster_names()
    assert {GB200, H100, GCP} <= set(known)
    expected = (f"error: clusters/cw-demo-a100.yaml: unknown cluster 'cw-demo-a100' — "
                f"known clusters: {', '.join(sorted(known))}\n")
    for argv in (["validate", "cw-demo-a100"], ["plan", "cw-demo-a100"]):
        assert main(["--root", str(root), *argv]) == 2
        cap = capsys.readouterr()
        assert cap.err == expected
        assert "Traceback" not in cap.err


def test_not_a_mapping(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    path = root / "clusters" / f"{H100}.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")
    assert main(["--root", str(root), "validate", H100]) == 2
    assert capsys.readouterr().err == (f"error: {shown(path)}:1: the file must be a YAML mapping — "
                                       "start from a shipped example\n")


def test_validate_reports_every_bad_file_at_once(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    h100 = edit(root / "clusters" / f"{H100}.yaml", ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    gcp = edit(root / "clusters" / f"{GCP}.yaml", ("    address: 34.16.10.21", "    address: nope"))
    assert main(["--root", str(root), "validate"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: clusters/{H100}.yaml:{line_of(h100, '1Gi')}: "
        "provisioning.coreweave.kueue.manager_memory_limit: 1Gi is below the 2Gi minimum for the "
        "Kueue manager — fix the value",
        f"error: clusters/{GCP}.yaml:{line_of(gcp, 'address: nope')}: "
        "provisioning.gcp.addresses[1].address: address 'nope' is not an IPv4 address — fix the value",
    ]
    with pytest.raises(ConfigError) as ei:
        load_all(Workspace.load(root))
    assert len(ei.value.problems) == 2


# ---------------------------------------------------------------------------------------
# Sections other tools own are ignored; everything under provisioning is strict.

def test_unknown_top_level_section_and_lenient_keys_are_ignored(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    edit(root / "clusters" / f"{H100}.yaml",
         ("scheduler:", "monitoring: {grafana: true, dashboards: [a, b]}\nscheduler:"),
         ("    buffer_slices: 32 ", "    preemptible: false\n    buffer_slices: 32 "),
         ("  coreweave: {service_name: controller-svc, port: 10000, scale_group: cpu-general}",
          "  coreweave: {service_name: controller-svc, port: 10000, scale_group: cpu-general, replicas: 3}"))
    loaded = load_cluster(Workspace.load(root), H100)
    assert loaded.config.scale_groups["h100"].max_slices == 32
    assert main(["--root", str(root), "validate", H100]) == 0
    assert capsys.readouterr().out == ("ok: 1 cluster config(s), their stack files, 2 project config(s), "
                                      "the IAM file and the [guard] policy are valid\n")


# ---------------------------------------------------------------------------------------
# clusterstack.toml [defaults]

def test_defaults_fill_omitted_lab_wide_values(repo_root: Path):
    ws = Workspace.load(repo_root)
    text = ws.cluster_file(GB200).read_text(encoding="utf-8")
    for key in ("acme_email", "federation_allow_sources", "zone_id", "api_token"):
        assert key not in text.split("provisioning:")[1], f"{GB200} is meant to omit {key}"
    cw = load_cluster(ws, GB200).config.provisioning.coreweave
    assert cw.ingress.acme_email == ws.defaults.acme_email == "ops@example.org"
    assert cw.ingress.federation_allow_sources == ("203.0.113.10/32", "198.51.100.0/24")
    assert cw.federation_dns.zone_id == ws.defaults.dns_zone_id
    assert cw.federation_dns.api_token == SecretSpec.parse(ws.defaults.dns_api_token)
    assert str(cw.federation_dns.api_token) == ws.defaults.dns_api_token


def test_values_in_the_file_win_over_defaults(workspace_copy: Path):
    root = workspace_copy.resolve()
    edit(root / "clusterstack.toml", ('acme_email = "ops@example.org"', 'acme_email = "lab@example.net"'),
         ('["203.0.113.10", "198.51.100.0/24"]', '["192.0.2.1"]'))
    ws = Workspace.load(root)
    assert load_cluster(ws, H100).config.provisioning.coreweave.ingress.acme_email == "ops@example.org"
    ingress = load_cluster(ws, GB200).config.provisioning.coreweave.ingress
    assert (ingress.acme_email, ingress.federation_allow_sources) == ("lab@example.net", ("192.0.2.1/32",))


def test_without_defaults_the_omitting_cluster_fails_at_the_sections(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    toml = (root / "clusterstack.toml").read_text(encoding="utf-8")
    (root / "clusterstack.toml").write_text(toml[:toml.index("[defaults]")], encoding="utf-8")
    shutil.rmtree(root / "iam")  # the cut also drops [iam]: a workspace without IAM
    path = root / "clusters" / f"{GB200}.yaml"
    text = path.read_text(encoding="utf-8")
    ingress, dns = line_of(text, "    ingress:"), line_of(text, "    federation_dns:")
    gclb = line_of((root / "clusters" / "gcp-demo.yaml").read_text(encoding="utf-8"), "    gclb:")
    assert main(["--root", str(root), "validate"]) == 2
    # A value neither the file nor [defaults] gives: one error naming both places.
    def missing(line: int, field: str, key: str) -> str:
        return (f"error: {shown(path)}:{line}: provisioning.coreweave.{field}: missing here and in [defaults] "
                f"{key} of clusterstack.toml — set provisioning.coreweave.{field} in {GB200}.yaml, "
                f"or {key} under [defaults] in clusterstack.toml for every cluster")
    assert capsys.readouterr().err.splitlines() == [
        missing(ingress, "ingress.acme_email", "acme_email"),
        missing(ingress, "ingress.federation_allow_sources", "federation_allow_sources"),
        missing(dns, "federation_dns.zone_id", "dns_zone_id"),
        missing(dns, "federation_dns.api_token", "dns_api_token"),
    ] + [  # the load balancer's DNS zone: the certificates need their A records (derive.gclb)
        f"error: clusters/gcp-demo.yaml:{gclb}: provisioning.gcp.gclb.{key}: missing here and in "
        f"[defaults] {key}: the stack declares the DNS records of ctl-a.example.org, ctl-b.example.org, "
        "logs.example.org, and a Google-managed certificate becomes ACTIVE only once each of its "
        "domains resolves to the load balancer's IP (Google Cloud \"Use Google-managed SSL "
        f"certificates\") — set provisioning.gcp.gclb.{key} (or {key} under [defaults] in "
        "clusterstack.toml), or set [conventions] gclb_dns_records = false if the lab points these "
        "names at the lb_ip output another way" for key in ("dns_zone_id", "dns_api_token")]
    load_cluster(Workspace.load(root), H100)  # a cluster that sets every value needs no defaults


def test_a_bad_default_is_reported_in_clusterstack_toml(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    toml = edit(root / "clusterstack.toml",
                ('federation_allow_sources = ["203.0.113.10"', 'federation_allow_sources = ["203.0.113.300"'),
                ('dns_api_token = "gcp-secret://', 'dns_api_token = "plaintext-'))
    toml_path = root / "clusterstack.toml"
    assert main(["--root", str(root), "validate", GB200]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: {shown(toml_path)}:{line_of(toml, 'federation_allow_sources =')}: "
        f"defaults.federation_allow_sources[0]: '203.0.113.300' {NOT_CIDR} ('203.0.113.300' does not "
        "appear to be an IPv4 or IPv6 network) (the lab-wide value cw-demo-gb200.yaml uses for "
        "provisioning.coreweave.ingress.federation_allow_sources) — fix the value",
        f"error: {shown(toml_path)}:{line_of(toml, 'dns_api_token =')}: defaults.dns_api_token: not a secret "
        "spec; use gcp-secret://projects/P/secrets/NAME/versions/V, env:NAME or file:PATH (a literal "
        "secret value is never accepted) (the lab-wide value cw-demo-gb200.yaml uses for "
        "provisioning.coreweave.federation_dns.api_token) — fix the value",
    ]
    assert "plaintext" not in err


def test_unknown_defaults_key_is_rejected(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    toml = edit(root / "clusterstack.toml", ("[defaults]\n", "[defaults]\ndns_zone = \"x\"\n"))
    assert main(["--root", str(root), "validate"]) == 2
    assert capsys.readouterr().err == (
        f"error: clusterstack.toml:{line_of(toml, 'dns_zone =')}: defaults.dns_zone: unknown key 'dns_zone' — allowed keys: "
        "acme_email, dns_api_token, dns_zone_id, federation_allow_sources\n")


# ---------------------------------------------------------------------------------------
# Normalised values

@pytest.mark.parametrize("given,normalised", [
    ("203.0.113.10", "203.0.113.10/32"),
    ("198.51.100.0/24", "198.51.100.0/24"),
    ("2001:db8::1", "2001:db8::1/128"),
    ("2001:DB8::/32", "2001:db8::/32"),
    ("0.0.0.0/0", "0.0.0.0/0"),
])
def test_allow_sources_normalised(given, normalised):
    ing = Ingress.model_validate({"acme_email": "ops@example.org", "cluster_issuers": ["le"],
                                  "active_cluster_issuer": "le", "federation_allow_sources": [given]})
    assert ing.federation_allow_sources == (normalised,)


def test_allow_sources_normalised_through_the_loader(workspace_copy: Path):
    root = workspace_copy.resolve()
    edit(root / "clusters" / f"{H100}.yaml",
         ("[203.0.113.10, 198.51.100.0/24]", "[203.0.113.10, '2001:db8::1', 198.51.100.0/24]"))
    ingress = load_cluster(Workspace.load(root), H100).config.provisioning.coreweave.ingress
    assert ingress.federation_allow_sources == ("203.0.113.10/32", "2001:db8::1/128", "198.51.100.0/24")


@pytest.mark.parametrize("text,value", [
    ("2Gi", 2 * 2**30), ("2048Mi", 2 * 2**30), ("4Gi", 4 * 2**30), ("1.5Gi", 3 * 2**29),
    ("3G", 3 * 10**9), ("1024", 1024), ("512Ki", 512 * 1024),
])
def test_quantity_bytes(text, value):
    assert quantity_bytes(text) == value


@pytest.mark.parametrize("limit,ok", [("2Gi", True), ("2048Mi", True), ("2047Mi", False),
                                       ("2G", False), ("3G", True)])
def test_memory_limit_boundary_and_kept_as_written(workspace_copy: Path, limit, ok):
    root = workspace_copy.resolve()
    edit(root / "clusters" / f"{H100}.yaml", ("manager_memory_limit: 4Gi", f"manager_memory_limit: {limit}"))
    ws = Workspace.load(root)
    if ok:
        # The quantity reaches the Helm values as written, not as a byte count.
        assert load_cluster(ws, H100).config.provisioning.coreweave.kueue.manager_memory_limit == limit
    else:
        with pytest.raises(ConfigError, match="below the 2Gi minimum"):
            load_cluster(ws, H100)


def test_shipped_examples_load(repo_root: Path):
    ws = Workspace.load(repo_root)
    names = [c.config.name for c in load_all(ws)]
    assert names == ws.cluster_names()
    assert {GB200, H100, GCP} <= set(names)


def test_plain_number_memory_limit_is_a_quantity():
    from clusterstack.config.cluster import KueueSettings

    ok = KueueSettings.model_validate({"flavor_topology": "infiniband",
                                       "manager_memory_limit": 4294967296,
                                       "client_connection": {"qps": 1, "burst": 1}})
    assert ok.manager_memory_limit == "4294967296"
    import pydantic
    import pytest
    with pytest.raises(pydantic.ValidationError, match="below the 2Gi minimum"):
        KueueSettings.model_validate({"flavor_topology": "infiniband",
                                      "manager_memory_limit": 1024,
                                      "client_connection": {"qps": 1, "burst": 1}})


# --- fields a real scheduler's config (Marin's) has: defaults, aliases, read-and-ignored ---

def test_kueue_settings_default_to_marins_values(workspace_copy: Path):
    path = workspace_copy / "clusters" / f"{H100}.yaml"
    edit(path, ("      manager_memory_limit: 4Gi\n", ""), ("      client_connection: {qps: 100, burst: 200}\n", ""))
    kueue = load_cluster(Workspace.load(workspace_copy), H100).config.provisioning.coreweave.kueue
    # marin infra/pulumi/src/iac/config.py@208671df: 2Gi, qps 100, burst 200
    assert (kueue.manager_memory_limit, kueue.client_connection.qps, kueue.client_connection.burst) == \
        ("2Gi", 100, 200)
    assert isinstance(kueue.client_connection.qps, int)   # an int stays an int: byte-stable plans


def test_qps_may_be_a_float_and_must_be_positive(workspace_copy: Path, capsys):
    path = workspace_copy / "clusters" / f"{H100}.yaml"
    edit(path, "{qps: 100, burst: 200}", "{qps: 12.5, burst: 200}")
    assert load_cluster(Workspace.load(workspace_copy), H100).config.provisioning.coreweave.kueue \
        .client_connection.qps == 12.5
    edit(path, "{qps: 12.5, burst: 200}", "{qps: 0, burst: 200}")
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    assert "client_connection.qps" in capsys.readouterr().err


def test_loom_session_rbac_is_read_and_ignored(workspace_copy: Path, capsys):
    path = workspace_copy / "clusters" / f"{H100}.yaml"
    text = path.read_text(encoding="utf-8")
    anchor = "    rbac:"
    assert anchor in text
    edit(path, anchor, "    loom_session_rbac: {usernames: [cwtoken-loom]}\n" + anchor)
    cfg = load_cluster(Workspace.load(workspace_copy), H100).config
    assert cfg.provisioning.coreweave.loom_session_rbac.usernames == ("cwtoken-loom",)
    edit(path, "{usernames: [cwtoken-loom]}", "{usernames: []}")   # still validated
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    assert "loom_session_rbac.usernames" in capsys.readouterr().err


def test_the_only_bad_default_allow_source_is_one_problem_at_its_line(workspace_copy: Path, capsys):
    root = workspace_copy.resolve()
    toml = edit(root / "clusterstack.toml", ('federation_allow_sources = ["203.0.113.10", "198.51.100.0/24"]',
                                             'federation_allow_sources = ["bad"]'))
    assert main(["--root", str(root), "validate", GB200]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: clusterstack.toml:{line_of(toml, 'federation_allow_sources =')}: "
        f"defaults.federation_allow_sources[0]: 'bad' {NOT_CIDR} ('bad' does not appear to be an IPv4 or "
        "IPv6 network) (the lab-wide value cw-demo-gb200.yaml uses for "
        "provisioning.coreweave.ingress.federation_allow_sources) — fix the value"]
