"""The GcpGclbIap component under Pulumi's mock runtime (types, inputs, options, import IDs).

Args are written out here (two controllers — one with the token proxy — and one log relay);
expected values are spelled out, not recomputed by the code.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pytest

from clusterstack.components.gcp import gclb as gclb_mod
from clusterstack.components.gcp.firewall import firewall_import_id
from clusterstack.components.gcp.gclb import (GcpGclbIap, GcpGclbIapArgs, endpoint_import_id,
                                              iap_settings_import_id, validate_args)
from clusterstack.derive.gclb import ControllerBackendSpec, LogRelayBackendSpec
from clusterstack.plan import run_program
from clusterstack.plan.runtime import _Mocks

P = "lab-project"
CTL_A = ControllerBackendSpec(
    cluster="tpu-a", domain="a.example.com", zone="us-central1-a", instance="a-ctl", port=10000,
    network_tag="a-controller", backend_service_id="111", programmatic_clients=("desk", "ci"),
    token_proxy=True)
CTL_B = ControllerBackendSpec(
    cluster="tpu-b", domain="b.example.com", zone="us-east5-b", instance="b-ctl", port=8080,
    network_tag="b-tag", backend_service_id="222", programmatic_clients=("desk",),
    token_proxy=False)
RELAY = LogRelayBackendSpec(
    cluster="tpu-a", domain="logs.example.com", zone="us-central1-a", instance="a-relay", port=10001,
    network_tag="a-log-relay", sender_source_ranges=("203.0.113.0/24", "192.0.2.0/24"))
ARGS = GcpGclbIapArgs(project=P, project_number="999", frontend_name="tpu-a", network="lab-net",
                      subnetwork="lab-subnet", controllers=(CTL_A, CTL_B), log_relays=(RELAY,),
                      internal_source_ranges=("10.8.0.0/16",))


def _run(args: GcpGclbIapArgs = ARGS, mocks: _Mocks | None = None):
    holder = {}

    def program() -> None:
        provider = gcp.Provider("gcp", project=args.project)
        holder["gclb"] = GcpGclbIap("gclb", args, provider=provider)
        pulumi.export("lb_ip", holder["gclb"].ip_address)

    plan = run_program("clusterstack", "test", {}, program, mocks=mocks)
    return plan, holder["gclb"]


@pytest.fixture(scope="module")
def planned():
    return _run()


def _res(plan, type_suffix: str, name: str):
    matches = [r for r in plan.resources if r.type.endswith(type_suffix) and r.name == name]
    assert len(matches) == 1, (type_suffix, name, [r.name for r in plan.resources if r.type.endswith(type_suffix)])
    return matches[0]


def _names(plan, type_suffix: str) -> list[str]:
    return sorted(r.name for r in plan.resources if r.type.endswith(type_suffix))


def test_resource_inventory(planned):
    plan, _ = planned
    assert _names(plan, ":NetworkEndpointGroup") == ["tpu-a-neg", "tpu-a-relay-neg", "tpu-b-neg"]
    assert _names(plan, ":NetworkEndpoint") == ["tpu-a-endpoint", "tpu-a-relay-endpoint", "tpu-b-endpoint"]
    assert _names(plan, ":HealthCheck") == ["tpu-a-hc", "tpu-a-relay-hc", "tpu-b-hc"]
    assert _names(plan, ":BackendService") == ["tpu-a-be", "tpu-a-proxy-be", "tpu-a-relay-be", "tpu-b-be"]
    assert _names(plan, ":Settings") == ["tpu-a-iap-settings", "tpu-b-iap-settings"]
    assert _names(plan, ":Firewall") == ["tpu-a-allow-internal", "tpu-a-allow-lb",
                                         "tpu-a-deny-public-10000", "tpu-a-relay-allow-lb",
                                         "tpu-a-relay-deny-public-10001", "tpu-b-allow-internal",
                                         "tpu-b-allow-lb", "tpu-b-deny-public-8080"]
    assert _names(plan, ":SecurityPolicy") == ["tpu-a-relay-armor"]
    assert _names(plan, ":ManagedSslCertificate") == ["a-example-com-cert", "b-example-com-cert",
                                                      "logs-example-com-cert"]
    assert _names(plan, ":GlobalAddress") == ["tpu-a-lb-ip"]
    comp = _res(plan, "clusterstack:gcp:GcpGclbIap", "gclb")
    custom = [r for r in plan.resources if r.custom and not r.is_provider and r.type != "pulumi:pulumi:Stack"]
    assert all(r.parent == comp.urn for r in custom)
    assert all(r.provider and r.provider.endswith("::gcp") for r in custom)


def test_neg_health_check_and_endpoint(planned):
    plan, _ = planned
    neg = _res(plan, ":NetworkEndpointGroup", "tpu-b-neg").inputs
    assert neg == {"defaultPort": 8080, "name": "tpu-b-neg", "network": "lab-net",
                   "networkEndpointType": "GCE_VM_IP_PORT", "project": P, "subnetwork": "lab-subnet",
                   "zone": "us-east5-b"}
    hc = _res(plan, ":HealthCheck", "tpu-b-hc").inputs
    assert hc["httpHealthCheck"] == {"port": 8080, "portSpecification": "USE_FIXED_PORT", "requestPath": "/health"}
    ep = _res(plan, ":NetworkEndpoint", "tpu-b-endpoint").inputs
    # The VM's internal IP is looked up at deploy time: unknown in the offline plan.
    assert ep == {"instance": "b-ctl", "ipAddress": "[unknown]", "networkEndpointGroup": "tpu-b-neg",
                  "port": 8080, "project": P, "zone": "us-east5-b"}


def test_endpoint_ip_comes_from_the_instance_lookup():
    seen = []

    class InstanceLookup(_Mocks):
        def call(self, args):
            seen.append((args.token, dict(args.args)))
            return {"name": args.args["name"], "networkInterfaces": [
                {"networkIp": "10.128.0.5", "network": "lab-net", "name": "nic0"}]}

    plan, _ = _run(mocks=InstanceLookup())
    assert _res(plan, ":NetworkEndpoint", "tpu-b-endpoint").inputs["ipAddress"] == "10.128.0.5"
    assert ("gcp:compute/getInstance:getInstance",
            {"name": "b-ctl", "project": P, "zone": "us-east5-b"}) in seen


def test_iap_only_on_controller_backends(planned):
    plan, _ = planned
    for name in ("tpu-a-be", "tpu-b-be"):
        be = _res(plan, ":BackendService", name)
        assert be.inputs["iap"] == {"enabled": True}        # no OAuth client id or secret
        assert be.inputs["loadBalancingScheme"] == "EXTERNAL_MANAGED"
        assert set(be.ignore_changes) == {"iap.oauth2ClientId", "iap.oauth2ClientSecret",
                                          "iap.oauth2ClientSecretSha256"}
    for name in ("tpu-a-proxy-be", "tpu-a-relay-be"):
        be = _res(plan, ":BackendService", name)
        assert "iap" not in be.inputs
        assert be.inputs["loadBalancingScheme"] == "EXTERNAL_MANAGED"
        assert be.ignore_changes == ()


def test_iap_settings_own_only_the_programmatic_clients(planned):
    plan, _ = planned
    s = _res(plan, ":Settings", "tpu-a-iap-settings")
    # Named after the backend's generated id: unknown until the backend exists (offline plan).
    assert s.inputs == {"name": "[unknown]",
                        "accessSettings": {"oauthSettings": {"programmaticClients": ["desk", "ci"]}}}
    assert set(s.ignore_changes) == {"accessSettings.oauthSettings.clientId",
                                     "accessSettings.oauthSettings.clientSecret",
                                     "accessSettings.oauthSettings.clientSecretSha256"}
    assert _res(plan, ":BackendService", "tpu-a-be").urn in s.dependencies


def test_firewall_source_ranges_and_priorities(planned):
    plan, _ = planned
    allow = _res(plan, ":Firewall", "tpu-b-allow-lb").inputs
    assert allow == {"name": "tpu-b-allow-lb", "project": P, "network": "lab-net", "direction": "INGRESS",
                     "priority": 900, "sourceRanges": ["130.211.0.0/22", "35.191.0.0/16"],
                     "targetTags": ["b-tag"], "allows": [{"protocol": "tcp", "ports": ["8080"]}],
                     "description": "load balancer to controller tpu-b"}
    deny = _res(plan, ":Firewall", "tpu-b-deny-public-8080").inputs
    assert (deny["priority"], deny["sourceRanges"], deny["targetTags"], deny["denies"]) == (
        1000, ["0.0.0.0/0"], ["b-tag"], [{"protocol": "tcp", "ports": ["8080"]}])
    assert "allows" not in deny
    assert allow["priority"] < deny["priority"]   # the load balancer's allow wins
    # Every controller behind the load balancer gets its deny-public rule (no opt-in flag).
    deny_a = _res(plan, ":Firewall", "tpu-a-deny-public-10000").inputs
    assert (deny_a["priority"], deny_a["sourceRanges"], deny_a["targetTags"], deny_a["denies"]) == (
        1000, ["0.0.0.0/0"], ["a-controller"], [{"protocol": "tcp", "ports": ["10000"]}])
    # The VPC's ranges are allowed above the deny (it would override default-allow-internal).
    internal = _res(plan, ":Firewall", "tpu-a-allow-internal").inputs
    assert internal == {"name": "tpu-a-allow-internal", "project": P, "network": "lab-net",
                        "direction": "INGRESS", "priority": 900, "sourceRanges": ["10.8.0.0/16"],
                        "targetTags": ["a-controller"], "allows": [{"protocol": "tcp", "ports": ["10000"]}],
                        "description": "VPC to controller tpu-a (above its deny-public rule)"}
    relay_allow = _res(plan, ":Firewall", "tpu-a-relay-allow-lb").inputs
    assert (relay_allow["sourceRanges"], relay_allow["targetTags"]) == (
        ["130.211.0.0/22", "35.191.0.0/16"], ["a-log-relay"])


def test_armor_allows_senders_and_denies_the_rest(planned):
    plan, _ = planned
    armor = _res(plan, ":SecurityPolicy", "tpu-a-relay-armor")
    rules = [(r["priority"], r["action"], r["match"]["versionedExpr"], r["match"]["config"]["srcIpRanges"])
             for r in armor.inputs["rules"]]
    assert rules == [(1000, "allow", "SRC_IPS_V1", ["192.0.2.0/24", "203.0.113.0/24"]),
                     (2147483647, "deny(403)", "SRC_IPS_V1", ["*"])]
    relay_be = _res(plan, ":BackendService", "tpu-a-relay-be")
    assert armor.urn in relay_be.dependencies and "securityPolicy" in relay_be.inputs
    for name in ("tpu-a-be", "tpu-b-be", "tpu-a-proxy-be"):
        assert "securityPolicy" not in _res(plan, ":BackendService", name).inputs


def test_url_map_routes_hosts_and_the_token_proxy(planned):
    plan, _ = planned
    um = _res(plan, ":URLMap", "tpu-a-urlmap")
    be_id = {n: f"{n}-id" for n in _names(plan, ":BackendService")}  # the mock's IDs
    assert um.inputs["defaultService"] == be_id["tpu-a-be"]
    assert um.inputs["hostRules"] == [
        {"hosts": ["a.example.com"], "pathMatcher": "tpu-a"},
        {"hosts": ["logs.example.com"], "pathMatcher": "tpu-a-relay"},
        {"hosts": ["b.example.com"], "pathMatcher": "tpu-b"}]
    matchers = {m["name"]: m for m in um.inputs["pathMatchers"]}
    assert matchers["tpu-a"]["defaultService"] == be_id["tpu-a-be"]
    assert matchers["tpu-a"]["pathRules"] == [
        {"paths": ["/proxy/t", "/proxy/t/*"], "service": be_id["tpu-a-proxy-be"]}]
    assert matchers["tpu-b"]["pathRules"] == []          # token_proxy: false
    assert matchers["tpu-a-relay"] == {"name": "tpu-a-relay", "defaultService": be_id["tpu-a-relay-be"],
                                       "pathRules": []}


def test_frontend_is_protected(planned):
    plan, _ = planned
    address = _res(plan, ":GlobalAddress", "tpu-a-lb-ip")
    assert (address.protect, address.retain_on_delete) == (True, True)
    assert address.inputs == {"addressType": "EXTERNAL", "ipVersion": "IPV4", "name": "tpu-a-lb-ip",
                              "project": P}
    for suffix, name in ((":URLMap", "tpu-a-urlmap"), (":TargetHttpsProxy", "tpu-a-https-proxy"),
                         (":GlobalForwardingRule", "tpu-a-https-fr"),
                         (":ManagedSslCertificate", "a-example-com-cert"),
                         (":ManagedSslCertificate", "logs-example-com-cert")):
        assert _res(plan, suffix, name).protect, name
    fr = _res(plan, ":GlobalForwardingRule", "tpu-a-https-fr")
    assert (fr.inputs["portRange"], fr.inputs["ipProtocol"], fr.inputs["loadBalancingScheme"]) == (
        "443", "TCP", "EXTERNAL_MANAGED")
    assert fr.inputs["ipAddress"] == "[unknown]" and address.urn in fr.dependencies
    proxy = _res(plan, ":TargetHttpsProxy", "tpu-a-https-proxy")
    assert proxy.inputs["sslCertificates"] == ["a-example-com-cert-id", "b-example-com-cert-id",
                                               "logs-example-com-cert-id"]
    assert _res(plan, ":ManagedSslCertificate", "b-example-com-cert").inputs["managed"] == {
        "domains": ["b.example.com"]}
    # Backends are not protected: they can be replaced without losing the entry point.
    assert not _res(plan, ":BackendService", "tpu-b-be").protect
    assert plan.outputs["lb_ip"] == "[unknown]"


def test_import_ids(planned):
    plan, component = planned
    got = {(i.type_token, i.logical_name): i.import_id for i in component.import_ids}
    expected = {
        ("gcp:compute/networkEndpointGroup:NetworkEndpointGroup", "tpu-b-neg"):
            f"projects/{P}/zones/us-east5-b/networkEndpointGroups/tpu-b-neg",
        ("gcp:compute/networkEndpoint:NetworkEndpoint", "tpu-b-endpoint"):
            f"projects/{P}/zones/us-east5-b/networkEndpointGroups/tpu-b-neg/b-ctl/<ip_address>/8080",
        ("gcp:compute/healthCheck:HealthCheck", "tpu-b-hc"): f"projects/{P}/global/healthChecks/tpu-b-hc",
        ("gcp:compute/backendService:BackendService", "tpu-a-proxy-be"):
            f"projects/{P}/global/backendServices/tpu-a-proxy-be",
        ("gcp:iap/settings:Settings", "tpu-b-iap-settings"):
            "projects/999/iap_web/compute/services/222/iapSettings",
        ("gcp:compute/firewall:Firewall", "tpu-b-deny-public-8080"):
            f"projects/{P}/global/firewalls/tpu-b-deny-public-8080",
        ("gcp:compute/securityPolicy:SecurityPolicy", "tpu-a-relay-armor"):
            f"projects/{P}/global/securityPolicies/tpu-a-relay-armor",
        ("gcp:compute/managedSslCertificate:ManagedSslCertificate", "logs-example-com-cert"):
            f"projects/{P}/global/sslCertificates/logs-example-com-cert",
        ("gcp:compute/globalAddress:GlobalAddress", "tpu-a-lb-ip"): f"projects/{P}/global/addresses/tpu-a-lb-ip",
        ("gcp:compute/uRLMap:URLMap", "tpu-a-urlmap"): f"projects/{P}/global/urlMaps/tpu-a-urlmap",
        ("gcp:compute/targetHttpsProxy:TargetHttpsProxy", "tpu-a-https-proxy"):
            f"projects/{P}/global/targetHttpsProxies/tpu-a-https-proxy",
        ("gcp:compute/globalForwardingRule:GlobalForwardingRule", "tpu-a-https-fr"):
            f"projects/{P}/global/forwardingRules/tpu-a-https-fr",
    }
    for key, value in expected.items():
        assert got[key] == value, key
    # Every declared resource has exactly one, registered under its own type and name …
    custom = {(r.type, r.name) for r in plan.resources
              if r.custom and not r.is_provider and r.type != "pulumi:pulumi:Stack"}
    assert set(got) == custom and len(component.import_ids) == len(custom)
    # … reaches the shared collector (the plan's adoptId), and is never Pulumi's import option.
    for r in plan.resources:
        if (r.type, r.name) in custom:
            assert r.adopt_id == got[(r.type, r.name)]
            assert r.import_id is None


def test_import_id_rules():
    assert endpoint_import_id("p", "z", "n", "vm", 80, "10.0.0.2") == \
        "projects/p/zones/z/networkEndpointGroups/n/vm/10.0.0.2/80"
    assert iap_settings_import_id("123", "456") == "projects/123/iap_web/compute/services/456/iapSettings"
    assert firewall_import_id("p", "fw") == "projects/p/global/firewalls/fw"
    assert gclb_mod.global_import_id("p", "urlMaps", "m") == "projects/p/global/urlMaps/m"


@pytest.mark.parametrize("change, message", [
    ({"controllers": ()}, "at least one controller"),
    ({"frontend_name": "tpu-c"}, "not one of the controllers"),
    ({"log_relays": (LogRelayBackendSpec(**{**RELAY.__dict__, "domain": "b.example.com"}),)},
     "domains must be unique"),
    ({"log_relays": (LogRelayBackendSpec(**{**RELAY.__dict__, "sender_source_ranges": ()}),)},
     "sender source range"),
])
def test_invalid_args_are_refused(change, message):
    args = GcpGclbIapArgs(**{**ARGS.__dict__, **change})
    with pytest.raises(ValueError, match=message):
        validate_args(args)
