"""The rules of a GCP stack's load balancer, each refused at its line with the rule (exit 2):
a static address's region against its VM, a pinned IP that no project can hold, a controller's
admins against the organization of IAP's Google-managed OAuth client and against the IAP
binding of its backend, and the DNS zone the certificates' records need."""

from __future__ import annotations

import pytest

from helpers import edit, line_of
from clusterstack.cli import main

GCP, TPUA, TPUB, IAM = "clusters/gcp-demo.yaml", "clusters/gcp-tpu-a.yaml", "clusters/gcp-tpu-b.yaml", "iam/iam.yaml"


def validate(root, capsys) -> tuple[int, list[str]]:
    rc = main(["--root", str(root), "validate"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    # `note:` lines say what validate accepts but cannot check (validation.clusters.cluster_notes)
    return rc, [ln for ln in cap.err.splitlines() if not ln.startswith("note: ")]


def test_the_shipped_workspace_passes(repo_root, capsys):
    assert validate(repo_root, capsys) == (0, [])


# --- a static address and its VM ---------------------------------------------------------------

def test_an_address_in_another_region_than_its_vm_is_refused_at_region(workspace_copy, capsys):
    text = edit(workspace_copy / GCP, "region: us-central1           # a regional",
                "region: us-east5           # a regional")
    rc, err = validate(workspace_copy, capsys)
    assert (rc, err) == (2, [
        f"error: {GCP}:{line_of(text, 'region: us-east5')}: provisioning.gcp.addresses[1].region: us-east5 "
        "is not the region of the log relay VM of cluster gcp-tpu-a (zone us-central1-a): a regional "
        "external address can be assigned only to a VM in its own region (Compute Engine \"IP "
        "addresses\") — set region: us-central1 — a new region is a new address: reserve it there, "
        "or move the VM"])
    # the VM moved instead: the rule reads the other cluster's file
    edit(workspace_copy / TPUA, "  gcp:\n    zone: us-central1-a\n    instance: tpua-log-relay",
         "  gcp:\n    zone: us-east5-b\n    instance: tpua-log-relay")
    assert validate(workspace_copy, capsys) == (0, [])


def test_an_address_attached_to_a_vm_the_cluster_does_not_have_is_refused(workspace_copy, capsys):
    text = edit(workspace_copy / GCP, "{cluster: gcp-tpu-a, vm: log_relay}", "{cluster: gcp-tpu-b, vm: log_relay}")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and err == [
        f"error: {GCP}:{line_of(text, 'attached_to:')}: provisioning.gcp.addresses[1].attached_to.vm: "
        "cluster gcp-tpu-b has no log_relay.gcp (no log relay VM to attach address 'log-relay' to) — "
        "name a cluster with log_relay.gcp, or fix vm:"]
    edit(workspace_copy / GCP, "{cluster: gcp-tpu-b, vm: log_relay}", "{cluster: nope, vm: log_relay}")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and "provisioning.gcp.addresses[1].attached_to.cluster: unknown cluster 'nope'" in err[0]


@pytest.mark.parametrize("ip", ["10.1.2.3", "192.0.2.7", "100.64.0.1", "224.0.0.9", "127.0.0.1"])
def test_a_pinned_ip_no_project_can_hold_as_an_external_address_is_refused(workspace_copy, capsys, ip):
    text = edit(workspace_copy / GCP, "address: 34.16.10.21", f"address: {ip}")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"error: {GCP}:{line_of(text, f'address: {ip}')}: provisioning.gcp.addresses[1]"
                             f".address: address {ip} is not a public unicast IPv4 address")


def test_promote_needs_the_ip_to_promote(workspace_copy, capsys):
    edit(workspace_copy / GCP, "        address: 34.16.10.21\n", "        promote: true\n")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and "provisioning.gcp.addresses[1]: promote: true needs address: the ephemeral IP to promote" \
        in err[0]


def test_an_address_without_an_ip_is_a_new_reservation(workspace_copy, capsys):
    edit(workspace_copy / GCP, "        address: 34.16.10.21\n", "")
    assert validate(workspace_copy, capsys) == (0, [])


# --- admins, the Google-managed OAuth client and the IAP binding ----------------------------------

def test_an_admin_outside_the_organization_is_refused_at_its_line(workspace_copy, capsys):
    text = edit(workspace_copy / TPUA, "admin_users: [alice@example.org]",
                "admin_users: [alice@example.org, bob@gmail.example]")
    rc, err = validate(workspace_copy, capsys)
    gcp = (workspace_copy / GCP).read_text()
    assert (rc, err) == (2, [
        f"error: {TPUA}:{line_of(text, 'admin_users:')}: auth.admin_users[1]: cluster gcp-tpu-a: "
        "b***@gmail.example is outside the organization (example.org): IAP's Google-managed OAuth client "
        "admits only users of the project's organization (IAP \"Custom OAuth configuration\") (listed at "
        f"{GCP}:{line_of(gcp, '- cluster: gcp-tpu-a  ')} (provisioning.gcp.gclb.controllers[0].cluster)) — "
        "use the admin's address in the organization, or add its domain to "
        "provisioning.gcp.gclb.organization_domains if the organization owns it, or set "
        "iap_oauth_client: custom after giving the backends an OAuth client of your own"])
    # a custom OAuth client admits outside users: the organization rule no longer applies
    edit(workspace_copy / GCP, "organization_domains: [example.org]",
         "organization_domains: [example.org]\n      iap_oauth_client: custom")
    assert validate(workspace_copy, capsys) == (0, [])


def test_admins_need_the_organizations_domains(workspace_copy, capsys):
    text = edit(workspace_copy / GCP, "      organization_domains: [example.org]\n", "")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and err == [
        f"error: {GCP}:{line_of(text, '    gclb:')}: provisioning.gcp.gclb.organization_domains: missing: "
        "controller gcp-tpu-a lists auth.admin_users, and IAP's Google-managed OAuth client admits only "
        "users of the project's organization (IAP \"Custom OAuth configuration\") — list the "
        "organization's domains (organization_domains: [example.org]) so each admin is checked, or set "
        "iap_oauth_client: custom if the backends use an OAuth client of your own"]


def test_an_admin_the_iap_binding_cannot_admit_is_refused(workspace_copy, capsys):
    # gcp-tpu-b's binding admits human-001 and a group: take both away, leave a service account
    edit(workspace_copy / IAM, "  - name: gcp-tpu-b-be\n    grants:\n      - role: roles/iap.httpsResourceAccessor\n"
         "        authoritative: true\n        members:\n          - human-001\n          - group:ml-platform@example.org\n",
         "  - name: gcp-tpu-b-be\n    grants:\n      - role: roles/iap.httpsResourceAccessor\n"
         "        authoritative: true\n        members:\n"
         "          - serviceAccount:ci-deployer@demo-project.iam.gserviceaccount.com\n")
    text = edit(workspace_copy / TPUB, "    desktop_oauth_client_id: 123456789012-desktop.apps.googleusercontent.com\n",
                "    desktop_oauth_client_id: 123456789012-desktop.apps.googleusercontent.com\n"
                "  admin_users: [carol@example.org]\n")
    iam = (workspace_copy / IAM).read_text()
    rc, err = validate(workspace_copy, capsys)
    assert (rc, err) == (2, [
        f"error: {TPUB}:{line_of(text, 'admin_users:')}: auth.admin_users[0]: admin c***@example.org of "
        f"controller gcp-tpu-b cannot pass IAP: the IAP binding of gcp-tpu-b-be ({IAM}:"
        f"{line_of(iam, '- name: gcp-tpu-b-be')}) does not admit it, and IAP answers 403 to anyone without "
        "roles/iap.httpsResourceAccessor on the backend or the project (IAP \"Managing access to "
        "IAP-secured resources\") — grant it: `clusterstack iam grant <this address> --role "
        "roles/iap.httpsResourceAccessor --on iap:gcp-tpu-b-be`, or remove the admin"])
    # a domain: member admits every address of the domain
    assert iam.endswith("          - serviceAccount:ci-deployer@demo-project.iam.gserviceaccount.com\n")
    (workspace_copy / IAM).write_text(iam + "          - domain:example.org\n")   # gcp-tpu-b-be is last
    assert validate(workspace_copy, capsys) == (0, [])


def test_with_the_keyset_a_person_in_the_binding_is_compared_by_ciphertext(workspace_copy, capsys):
    from clusterstack.iam.crypto import PrincipalCipher, store_cipher
    from clusterstack.iam.loader import load_iam

    iam = workspace_copy / IAM
    cipher = PrincipalCipher.generate()
    store_cipher(cipher, load_iam(iam).model.encryption, workspace_copy)
    text = iam.read_text()
    for pid, email in (("human-001", "dana@example.org"), ("human-002", "erin@example.org")):
        old = text.split(f"  {pid}: ", 1)[1].split("\n", 1)[0]
        text = text.replace(f"  {pid}: {old}", f"  {pid}: {cipher.encrypt(email)}")
    # gcp-tpu-b-be admits human-001 (dana) only: no group either
    text = text.replace("          - human-001\n          - group:ml-platform@example.org\n", "          - human-001\n")
    iam.write_text(text)
    edit(workspace_copy / TPUB, "    desktop_oauth_client_id: 123456789012-desktop.apps.googleusercontent.com\n",
         "    desktop_oauth_client_id: 123456789012-desktop.apps.googleusercontent.com\n"
         "  admin_users: [Dana@example.org, erin@example.org]\n")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2 and len(err) == 1    # dana is human-001 (any letter case); erin is human-002, not granted
    assert ": auth.admin_users[1]: admin e***@example.org of controller gcp-tpu-b cannot pass IAP" in err[0]


# --- the certificates' DNS records ------------------------------------------------------------------

def test_without_a_dns_zone_the_records_cannot_be_declared(workspace_copy, capsys):
    edit(workspace_copy / "clusterstack.toml", 'dns_zone_id = "0123456789abcdef0123456789abcdef"\n', "")
    text = (workspace_copy / GCP).read_text()
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2
    assert [e for e in err if "gcp-demo" in e] == [
        f"error: {GCP}:{line_of(text, '    gclb:')}: provisioning.gcp.gclb.dns_zone_id: missing here and in "
        "[defaults] dns_zone_id: the stack declares the DNS records of ctl-a.example.org, ctl-b.example.org, "
        "logs.example.org, and a Google-managed certificate becomes ACTIVE only once each of its domains "
        "resolves to the load balancer's IP (Google Cloud \"Use Google-managed SSL certificates\") — set "
        "provisioning.gcp.gclb.dns_zone_id (or dns_zone_id under [defaults] in clusterstack.toml), or set "
        "[conventions] gclb_dns_records = false if the lab points these names at the lb_ip output another way"]
    # a lab that points its names elsewhere turns the records off
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + "\n[conventions]\ngclb_dns_records = false\n")
    rc, err = validate(workspace_copy, capsys)
    assert [e for e in err if "gcp-demo" in e] == []


def test_a_certificate_domain_a_coreweave_cluster_also_names_is_refused(workspace_copy, capsys):
    text = edit(workspace_copy / "clusters/cw-demo-h100.yaml", "hostname: ctl-cw-demo-h100.example.org",
                "hostname: logs.example.org")
    rc, err = validate(workspace_copy, capsys)
    assert rc == 2
    assert any("DNS name 'logs.example.org' in zone 0123456789abcdef0123456789abcdef is also claimed by"
               in e for e in err), err
