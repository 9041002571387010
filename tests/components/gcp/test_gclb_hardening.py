"""The objects of the shared load balancer under Pulumi's mock runtime: the SSL policy on
the target HTTPS proxy, the Cloud Armor throttle on each token-proxy backend, and the DNS
records of the certificate domains (components/dns.py ``LoadBalancerDns``). Expected values are
written out, not recomputed."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pulumi_gcp as gcp
import pytest

from clusterstack.components.dns import LoadBalancerDns, LoadBalancerDnsArgs, provider_version
from clusterstack.components.gcp.gclb import GcpGclbIap, SslPolicySpec, validate_args
from clusterstack.plan import run_program
from clusterstack.pulumi.tokens import DNS_RECORD, LOAD_BALANCER_DNS_COMPONENT, SECURITY_POLICY, SSL_POLICY
from clusterstack.pulumi.values import SECRET

from .test_gclb import ARGS

HARDENED = replace(ARGS, ssl_policy=SslPolicySpec("MODERN", "TLS_1_2"), token_proxy_rate_limit=120)
ZONE = "0123456789abcdef0123456789abcdef"


def _plan(args=HARDENED, dns: bool = True):
    def program() -> None:
        provider = gcp.Provider("gcp", project=args.project)
        lb = GcpGclbIap("gclb", args, provider=provider)
        if dns:
            LoadBalancerDns("gclb-dns", LoadBalancerDnsArgs(
                zone_id=ZONE, domains=("b.example.com", "a.example.com"), ip_address=lb.ip_address,
                api_token=pulumi.Output.secret("token"), ttl=300))

    return run_program("clusterstack", "test", {}, program)


@pytest.fixture(scope="module")
def plan():
    return _plan()


def _by(plan, type_: str) -> dict:
    return {r.name: r for r in plan.resources if r.type == type_}


def test_the_proxy_carries_an_ssl_policy_of_modern_tls_1_2(plan):
    (policy,) = _by(plan, SSL_POLICY).values()
    assert (policy.name, policy.inputs["profile"], policy.inputs["minTlsVersion"]) == \
        ("tpu-a-ssl-policy", "MODERN", "TLS_1_2")
    assert policy.adopt_id == "projects/lab-project/global/sslPolicies/tpu-a-ssl-policy"
    (proxy,) = (r for r in plan.resources if r.type.endswith(":TargetHttpsProxy"))
    assert proxy.inputs["sslPolicy"] == "tpu-a-ssl-policy-id" and policy.urn in proxy.dependencies


def test_without_a_policy_the_proxy_has_none(planned_plain):
    assert not _by(planned_plain, SSL_POLICY)
    (proxy,) = (r for r in planned_plain.resources if r.type.endswith(":TargetHttpsProxy"))
    assert "sslPolicy" not in proxy.inputs


@pytest.fixture(scope="module")
def planned_plain():
    return _plan(ARGS, dns=False)


def test_the_token_proxy_backend_is_throttled_per_client_ip(plan, planned_plain):
    armor = _by(plan, SECURITY_POLICY)
    assert sorted(armor) == ["tpu-a-proxy-armor", "tpu-a-relay-armor"]   # tpu-b has no token proxy
    throttle, default = armor["tpu-a-proxy-armor"].inputs["rules"]
    assert throttle == {
        "action": "throttle", "priority": 1000, "preview": False,
        "description": "120 requests per minute per client IP",
        "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}},
        "rateLimitOptions": {"conformAction": "allow", "exceedAction": "deny(429)", "enforceOnKey": "IP",
                             "rateLimitThreshold": {"count": 120, "intervalSec": 60}}}
    assert (default["action"], default["priority"]) == ("allow", 2147483647)
    assert armor["tpu-a-proxy-armor"].adopt_id == "projects/lab-project/global/securityPolicies/tpu-a-proxy-armor"
    backends = {r.name: r for r in plan.resources if r.type.endswith(":BackendService")}
    assert backends["tpu-a-proxy-be"].inputs["securityPolicy"] == "tpu-a-proxy-armor-id"
    assert "securityPolicy" not in backends["tpu-a-be"].inputs       # IAP guards the main path
    # off ([conventions] gclb_token_proxy_armor = false): the backend as before, no policy
    plain = {r.name: r for r in planned_plain.resources if r.type.endswith(":BackendService")}
    assert "securityPolicy" not in plain["tpu-a-proxy-be"].inputs
    assert sorted(_by(planned_plain, SECURITY_POLICY)) == ["tpu-a-relay-armor"]


def test_a_rate_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1 request per minute"):
        validate_args(replace(HARDENED, token_proxy_rate_limit=0))


def test_each_certificate_domain_gets_a_protected_unproxied_a_record_to_the_lb_ip(plan):
    records = _by(plan, DNS_RECORD)
    assert sorted(records) == ["a.example.com", "b.example.com"]
    (address,) = (r for r in plan.resources if r.type.endswith(":GlobalAddress"))
    (component,) = (r for r in plan.resources if r.type == LOAD_BALANCER_DNS_COMPONENT)
    (provider,) = (r for r in plan.resources if r.type == "pulumi:providers:cloudflare")
    for name, r in records.items():
        assert r.inputs == {"zoneId": ZONE, "name": name, "type": "A", "content": "[unknown]",
                            "proxied": False, "ttl": 300}
        assert r.dependencies == (address.urn,)            # the content is the LB address's IP
        assert r.protect and r.parent == component.urn and r.provider == provider.urn
        assert r.version == provider_version()
        assert r.adopt_id == f"{ZONE}/<record_id>"
    assert provider.inputs["apiToken"] == SECRET and provider.parent == component.urn
