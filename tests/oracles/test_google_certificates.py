"""The Google-managed certificate oracle over every shipped GCP stack's plan — each domain
must become ACTIVE — and over plans that break each of its rules (so the oracle can fail)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from clusterstack.plan import plan_stack
from clusterstack.plan.model import StackPlan
from clusterstack.pulumi.tokens import (DNS_RECORD, GCP_PROVIDER, GLOBAL_ADDRESS, GLOBAL_FORWARDING_RULE,
                                        MANAGED_SSL_CERTIFICATE, TARGET_HTTPS_PROXY)
from k8s_schemas import reference_dir
from oracles.google_certificates import ACTIVE, NOT_VISIBLE, PROVISIONING, not_active, provisioning
from regen_golden import EXAMPLE_STACKS

REPO = Path(__file__).resolve().parents[2]
DOMAINS = ["ctl-a.example.org", "ctl-b.example.org", "logs.example.org"]


def gcp_stacks(plans) -> list[str]:
    return [s for s in EXAMPLE_STACKS if any(r.type == GCP_PROVIDER for r in plans[s].resources)]


@pytest.fixture(scope="module")
def demo(example_plans) -> StackPlan:
    return example_plans["gcp-demo"]


def edited(plan: StackPlan, **by_name) -> StackPlan:
    """``plan`` with the resources named in ``by_name`` changed: a callable (resource → resource,
    or None to drop it)."""
    out = []
    for r in plan.resources:
        fn = by_name.get(r.name)
        r = fn(r) if fn is not None else r
        if r is not None:
            out.append(r)
    return replace(plan, resources=tuple(out))


def with_inputs(**inputs):
    return lambda r: replace(r, inputs={**r.inputs, **inputs})


# --- the shipped stacks ----------------------------------------------------------------------

def test_every_certificate_domain_of_every_shipped_gcp_stack_becomes_active(example_plans):
    stacks = gcp_stacks(example_plans)
    assert stacks == ["gcp-demo", "gcp-tpu-a", "gcp-tpu-b"]
    for stack in stacks:
        assert not_active(example_plans[stack]) == [], stack
    statuses = provisioning(example_plans["gcp-demo"])
    assert [(d.domain, d.status) for d in statuses] == [(d, ACTIVE) for d in DOMAINS]


def test_each_managed_certificate_domain_has_a_dns_record_in_the_same_stack(example_plans):
    # the promise, read off the plan directly
    for stack in gcp_stacks(example_plans):
        plan = example_plans[stack]
        names = {r.inputs["name"] for r in plan.resources if r.type == DNS_RECORD}
        for cert in (r for r in plan.resources if r.type == MANAGED_SSL_CERTIFICATE):
            assert set(cert.inputs["managed"]["domains"]) <= names, (stack, cert.name)


def test_marins_gcp_stack_declares_no_certificate_and_no_new_object(tmp_path):
    """Marin's GCP stack (lib/iris/config/marin.yaml, unchanged) under Marin's [conventions]:
    no load balancer, so no certificate for the oracle to judge — and none of the objects
    this slice adds (a lab running Marin adopts with zero live changes)."""
    ref = reference_dir()
    configs = ref / "marin" / "lib" / "iris" / "config" if ref else None
    if configs is None or not (configs / "marin.yaml").is_file():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    root = tmp_path / "marin"
    shutil.copytree(REPO / "examples" / "marin", root, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(configs / "marin.yaml", root / "lib" / "iris" / "config" / "marin.yaml")
    plan = plan_stack(root / "infra" / "clusterstack", "marin")
    assert provisioning(plan) == []
    kinds = {r.type for r in plan.resources}
    assert not kinds & {DNS_RECORD, MANAGED_SSL_CERTIFICATE, "gcp:compute/sSLPolicy:SSLPolicy",
                        "gcp:compute/securityPolicy:SecurityPolicy"}


# --- each rule can fail ----------------------------------------------------------------------

def test_without_the_dns_records_every_domain_fails_not_visible(demo):
    plan = edited(demo, **{d: (lambda r: None) for d in DOMAINS})
    got = provisioning(plan)
    assert [(d.domain, d.status) for d in got] == [(d, NOT_VISIBLE) for d in DOMAINS]
    assert got[0].reason == "[DNS] no DNS record for ctl-a.example.org in this stack"


def test_a_proxied_record_is_not_visible_to_google(demo):
    (d,) = not_active(edited(demo, **{"ctl-b.example.org": with_inputs(proxied=True)}))
    assert (d.domain, d.status) == ("ctl-b.example.org", NOT_VISIBLE) and "proxied" in d.reason


def test_a_record_to_another_ip_or_another_address_is_not_visible(demo):
    (d,) = not_active(edited(demo, **{"logs.example.org": with_inputs(content="203.0.113.9")}))
    assert d.status == NOT_VISIBLE and "203.0.113.9, not the load balancer's IP" in d.reason
    # the record takes an IP from another global address than the forwarding rule's
    other = replace(next(r for r in demo.resources if r.type == GLOBAL_ADDRESS),
                    urn="urn:pulumi:gcp-demo::clusterstack::gcp:compute/globalAddress:GlobalAddress::other",
                    name="other")
    plan = edited(demo, **{"ctl-a.example.org": lambda r: replace(r, dependencies=(other.urn,))})
    plan = replace(plan, resources=(*plan.resources, other))
    (d,) = not_active(plan)
    assert (d.domain, d.status) == ("ctl-a.example.org", NOT_VISIBLE)


def test_known_ips_must_be_equal(demo):
    fr = next(r for r in demo.resources if r.type == GLOBAL_FORWARDING_RULE)
    plan = edited(demo, **{fr.name: with_inputs(ipAddress="198.51.100.7")},
                  **{d: with_inputs(content="198.51.100.7") for d in DOMAINS})
    assert not_active(plan) == []
    plan = edited(plan, **{"ctl-a.example.org": with_inputs(content="198.51.100.8")})
    assert [d.domain for d in not_active(plan)] == ["ctl-a.example.org"]


def test_a_cname_counts_only_when_it_ends_at_the_load_balancer_in_this_stack(demo):
    a = next(r for r in demo.resources if r.name == "ctl-a.example.org")
    alias = replace(a, urn=a.urn.replace("ctl-a.example.org", "lb.example.org"), name="lb.example.org",
                    inputs={**a.inputs, "name": "lb.example.org"})
    plan = edited(demo, **{"ctl-a.example.org": with_inputs(type="CNAME", content="lb.example.org")})
    assert [d.domain for d in not_active(plan)] == ["ctl-a.example.org"]   # lb.example.org is not here
    plan = replace(plan, resources=(*plan.resources, alias))
    assert not_active(plan) == []


def test_a_certificate_no_forwarding_rule_serves_stays_provisioning(demo):
    proxy = next(r for r in demo.resources if r.type == TARGET_HTTPS_PROXY)
    fr = next(r for r in demo.resources if r.type == GLOBAL_FORWARDING_RULE)
    cert = next(r for r in demo.resources if r.type == MANAGED_SSL_CERTIFICATE
                and r.inputs["managed"]["domains"] == ["logs.example.org"])
    plan = edited(demo, **{proxy.name: lambda r: replace(r, dependencies=tuple(
        d for d in r.dependencies if d != cert.urn))})
    (d,) = not_active(plan)
    assert (d.domain, d.status) == ("logs.example.org", PROVISIONING) and d.reason.startswith("[SERVE]")
    plan = edited(demo, **{fr.name: with_inputs(portRange="80")})
    assert {d.status for d in not_active(plan)} == {PROVISIONING} and len(not_active(plan)) == 3


def test_a_wildcard_domain_never_provisions(demo):
    cert = next(r for r in demo.resources if r.type == MANAGED_SSL_CERTIFICATE)
    plan = edited(demo, **{cert.name: with_inputs(managed={"domains": ["*.example.org"]})})
    (d,) = not_active(plan)
    assert (d.domain, d.status) == ("*.example.org", PROVISIONING) and d.reason.startswith("[WILDCARD]")


def test_a_lab_that_turns_the_records_off_gets_no_active_certificate_from_this_stack(workspace_copy):
    """[conventions] gclb_dns_records = false (Marin's choice): the stack declares no record,
    so by the oracle's rule nothing in it makes a certificate ACTIVE — the lab's DNS must."""
    toml = workspace_copy / "clusterstack.toml"
    toml.write_text(toml.read_text() + "\n[conventions]\ngclb_dns_records = false\n")
    plan = plan_stack(workspace_copy / "infra", "gcp-demo")
    assert not [r for r in plan.resources if r.type == DNS_RECORD]
    assert [(d.domain, d.status) for d in provisioning(plan)] == [(d, NOT_VISIBLE) for d in DOMAINS]
