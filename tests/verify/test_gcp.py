"""``clusterstack verify`` on the GCP stack: the Google Cloud client libraries (Compute Engine,
Artifact Registry; REST transport, anonymous credentials) against a local server that serves
REST objects of the real shape.

The "live project" below is written out by hand from the example configs (gcp-demo and the
controller clusters gcp-tpu-a / gcp-tpu-b): the test's oracle, not derived from the code.
"""

from __future__ import annotations

import json

import pytest
from google.auth.credentials import AnonymousCredentials

from clusterstack.adapters.gcp import GcpClients, GoogleCompute
from clusterstack.cli import main
from clusterstack.verify import (EXIT_MISSING, EXIT_OK, EXIT_UNVERIFIED, check_expectations,
                                 verify_prerequisites)
from clusterstack.verify.expect import expectations
from clusterstack.workspace import Workspace
from fakes.clients import fake_clients
from fakes.gcp_api import GCE, FakeGcp, gce_object, gce_path, google_error, repository

CLUSTER = "gcp-demo"
P = "demo-project"
LB_RANGES = ["130.211.0.0/22", "35.191.0.0/16"]


def _url(collection: str, name: str, **where) -> str:
    return GCE + gce_path(P, collection, name, **where).removeprefix("/compute/v1")


def gcp_demo_world() -> dict[str, object]:
    """Every object gcp-demo declares (that verify reads), as the REST APIs return them."""
    w: dict[str, object] = {}

    def put(obj: dict, collection: str, **where) -> None:
        w[gce_path(P, collection, obj["name"], **where)] = obj

    put(gce_object("address", P, "addresses", "controller-ingress", region="us-central1",
                   address="34.16.10.20", addressType="EXTERNAL", status="RESERVED",
                   networkTier="PREMIUM", description="Federation ingress of the controllers"),
        "addresses", region="us-central1")
    put(gce_object("address", P, "addresses", "log-relay", region="us-central1", address="34.16.10.21",
                   addressType="EXTERNAL", status="IN_USE", networkTier="PREMIUM"),
        "addresses", region="us-central1")
    for loc, name in (("us", "dockerhub-mirror"), ("europe", "dockerhub-mirror"), ("us", "ghcr-mirror")):
        w[f"/v1/projects/{P}/locations/{loc}/repositories/{name}"] = repository(P, loc, name)

    backends = (  # prefix, zone, instance, port, IAP, tag
        ("gcp-tpu-a", "us-central1-a", "tpua-controller", 10000, True, "tpua-controller"),
        ("gcp-tpu-a-relay", "us-central1-a", "tpua-log-relay", 10001, False, "tpua-log-relay"),
        ("gcp-tpu-b", "us-east5-b", "tpub-controller", 10000, True, "tpub-ctl"),
    )
    for prefix, zone, instance, port, iap, tag in backends:
        neg = gce_object("networkEndpointGroup", P, "networkEndpointGroups", f"{prefix}-neg", zone=zone,
                         networkEndpointType="GCE_VM_IP_PORT", defaultPort=port, size=1,
                         network=_url("networks", "default"),
                         subnetwork=f"{GCE}/projects/{P}/regions/{zone[:-2]}/subnetworks/default")
        path = gce_path(P, "networkEndpointGroups", f"{prefix}-neg", zone=zone)
        w[path] = neg
        w[path + "#endpoints"] = [{"networkEndpoint": {
            "instance": f"{GCE}/projects/{P}/zones/{zone}/instances/{instance}",
            "ipAddress": "10.128.0.7", "port": port}, "healths": []}]
        put(gce_object("healthCheck", P, "healthChecks", f"{prefix}-hc", type="HTTP",
                       checkIntervalSec=10, timeoutSec=5, healthyThreshold=2, unhealthyThreshold=3,
                       httpHealthCheck={"port": port, "portSpecification": "USE_FIXED_PORT",
                                        "requestPath": "/health", "proxyHeader": "NONE"}),
            "healthChecks")
        be = dict(protocol="HTTP", portName="http", timeoutSec=300, loadBalancingScheme="EXTERNAL_MANAGED",
                  healthChecks=[_url("healthChecks", f"{prefix}-hc")],
                  backends=[{"group": _url("networkEndpointGroups", f"{prefix}-neg", zone=zone),
                             "balancingMode": "RATE", "maxRatePerEndpoint": 1000, "capacityScaler": 1}],
                  connectionDraining={"drainingTimeoutSec": 0}, fingerprint="abc=")
        if iap:
            be["iap"] = {"enabled": True, "oauth2ClientId": "", "oauth2ClientSecretSha256": ""}
        else:
            be["securityPolicy"] = _url("securityPolicies", f"{prefix}-armor")
        put(gce_object("backendService", P, "backendServices", f"{prefix}-be", **be), "backendServices")
        put(gce_object("firewall", P, "firewalls", f"{prefix}-allow-lb", network=_url("networks", "default"),
                       priority=900, direction="INGRESS", sourceRanges=LB_RANGES, targetTags=[tag],
                       allowed=[{"IPProtocol": "tcp", "ports": [str(port)]}], disabled=False,
                       logConfig={"enable": False}), "firewalls")
    put(gce_object("backendService", P, "backendServices", "gcp-tpu-a-proxy-be", protocol="HTTP",
                   loadBalancingScheme="EXTERNAL_MANAGED", timeoutSec=300,
                   healthChecks=[_url("healthChecks", "gcp-tpu-a-hc")]), "backendServices")
    for name, tag in (("gcp-tpu-a-allow-internal", "tpua-controller"), ("gcp-tpu-b-allow-internal", "tpub-ctl")):
        put(gce_object("firewall", P, "firewalls", name, network=_url("networks", "default"),
                       priority=900, direction="INGRESS", sourceRanges=["10.128.0.0/9"], targetTags=[tag],
                       allowed=[{"IPProtocol": "tcp", "ports": ["10000"]}]), "firewalls")
    for name, tag, port in (("gcp-tpu-a-deny-public-10000", "tpua-controller", 10000),
                            ("gcp-tpu-b-deny-public-10000", "tpub-ctl", 10000),
                            ("gcp-tpu-a-relay-deny-public-10001", "tpua-log-relay", 10001)):
        put(gce_object("firewall", P, "firewalls", name, network=_url("networks", "default"),
                       priority=1000, direction="INGRESS", sourceRanges=["0.0.0.0/0"], targetTags=[tag],
                       denied=[{"IPProtocol": "tcp", "ports": [str(port)]}]), "firewalls")
    put(gce_object("securityPolicy", P, "securityPolicies", "gcp-tpu-a-relay-armor", type="CLOUD_ARMOR",
                   fingerprint="xyz=", rules=[
                       {"kind": "compute#securityPolicyRule", "priority": 1000, "action": "allow",
                        "preview": False, "match": {"versionedExpr": "SRC_IPS_V1",
                                                    "config": {"srcIpRanges": ["198.51.100.0/24", "192.0.2.0/24"]}}},
                       {"kind": "compute#securityPolicyRule", "priority": 2147483647, "action": "deny(403)",
                        "preview": False, "description": "default rule",
                        "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}}}]),
        "securityPolicies")
    put(gce_object("securityPolicy", P, "securityPolicies", "gcp-tpu-a-proxy-armor", type="CLOUD_ARMOR",
                   fingerprint="pqr=", rules=[
                       {"kind": "compute#securityPolicyRule", "priority": 1000, "action": "throttle",
                        "preview": False, "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}},
                        "rateLimitOptions": {"conformAction": "allow", "exceedAction": "deny(429)",
                                             "enforceOnKey": "IP",
                                             "rateLimitThreshold": {"count": 600, "intervalSec": 60}}},
                       {"kind": "compute#securityPolicyRule", "priority": 2147483647, "action": "allow",
                        "preview": False, "description": "default rule",
                        "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}}}]),
        "securityPolicies")
    put(gce_object("sslPolicy", P, "sslPolicies", "gcp-tpu-a-ssl-policy", profile="MODERN", minTlsVersion="TLS_1_2",
                   enabledFeatures=["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"], fingerprint="ssl="),
        "sslPolicies")
    for domain in ("ctl-a.example.org", "ctl-b.example.org", "logs.example.org"):
        put(gce_object("sslCertificate", P, "sslCertificates", domain.replace(".", "-") + "-cert",
                       type="MANAGED", subjectAlternativeNames=[domain],
                       managed={"domains": [domain], "status": "ACTIVE", "domainStatus": {domain: "ACTIVE"}}),
            "sslCertificates")
    put(gce_object("address", P, "addresses", "gcp-tpu-a-lb-ip", address="34.120.7.8", addressType="EXTERNAL",
                   ipVersion="IPV4", status="IN_USE", networkTier="PREMIUM"), "addresses")
    put(gce_object("urlMap", P, "urlMaps", "gcp-tpu-a-urlmap", defaultService=_url("backendServices", "gcp-tpu-a-be"),
                   hostRules=[{"hosts": ["ctl-b.example.org"], "pathMatcher": "gcp-tpu-b"},
                              {"hosts": ["logs.example.org"], "pathMatcher": "gcp-tpu-a-relay"},
                              {"hosts": ["ctl-a.example.org"], "pathMatcher": "gcp-tpu-a"}],
                   pathMatchers=[{"name": "gcp-tpu-a", "defaultService": _url("backendServices", "gcp-tpu-a-be"),
                                  "pathRules": [{"paths": ["/proxy/t", "/proxy/t/*"],
                                                 "service": _url("backendServices", "gcp-tpu-a-proxy-be")}]}]),
        "urlMaps")
    put(gce_object("targetHttpsProxy", P, "targetHttpsProxies", "gcp-tpu-a-https-proxy",
                   urlMap=_url("urlMaps", "gcp-tpu-a-urlmap"),
                   sslCertificates=[_url("sslCertificates", "ctl-a-example-org-cert")]), "targetHttpsProxies")
    put(gce_object("forwardingRule", P, "forwardingRules", "gcp-tpu-a-https-fr", IPAddress="34.120.7.8",
                   IPProtocol="TCP", portRange="443-443", loadBalancingScheme="EXTERNAL_MANAGED",
                   target=_url("targetHttpsProxies", "gcp-tpu-a-https-proxy"), networkTier="PREMIUM"),
        "forwardingRules")
    return w


@pytest.fixture(scope="module")
def demo_expected(example_plans):
    return expectations(example_plans[CLUSTER])   # the shipped stack, planned once per run


def _gcp(url: str) -> GcpClients:
    """The Google clients against the local fake, without credentials."""
    return GcpClients(api_endpoint=url, credentials=AnonymousCredentials())


def _api(url: str) -> GoogleCompute:
    return GoogleCompute(_gcp(url), timeout=5.0)


def _no_kube():
    raise AssertionError("a GCP stack must not touch Kubernetes")


def _find(report, type_suffix: str, name: str):
    return next(f for f in report.findings if f.type.endswith(type_suffix) and f.name == name)


def test_complete_project_is_ok(demo_expected):
    with FakeGcp() as srv:
        srv.objects.update(gcp_demo_world())
        report = check_expectations(CLUSTER, demo_expected, kube=_no_kube, gcp=lambda: _api(srv.url))
    bad = [f for f in report.findings if f.state not in ("ok", "skipped")]
    assert report.exit_code == EXIT_OK, bad
    checked = {f.type.rsplit(":", 1)[1] for f in report.findings if f.state == "ok"}
    assert checked >= {"Address", "Repository", "GlobalAddress", "NetworkEndpointGroup", "NetworkEndpoint",
                       "HealthCheck", "BackendService", "Firewall", "SecurityPolicy",
                       "ManagedSslCertificate", "URLMap", "TargetHttpsProxy", "GlobalForwardingRule",
                       "SSLPolicy"}
    assert _find(report, ":Settings", "gcp-tpu-a-iap-settings").state == "skipped"
    # Read-only: GETs, plus the NEG member listing (a POST that reads).
    assert {(m, p.rsplit("/", 1)[-1]) for m, p in srv.requests if m != "GET"} == {
        ("POST", "listNetworkEndpoints")}


def test_missing_and_different_parts(demo_expected):
    world = gcp_demo_world()
    world[gce_path(P, "addresses", "controller-ingress", region="us-central1")]["address"] = "34.16.10.99"
    del world[gce_path(P, "backendServices", "gcp-tpu-b-be")]
    world[gce_path(P, "firewalls", "gcp-tpu-a-allow-lb")]["priority"] = 1000
    world[gce_path(P, "networkEndpointGroups", "gcp-tpu-b-neg", zone="us-east5-b") + "#endpoints"] = []
    armor = world[gce_path(P, "securityPolicies", "gcp-tpu-a-relay-armor")]
    armor["rules"][0]["match"]["config"]["srcIpRanges"] = ["0.0.0.0/0"]
    world[gce_path(P, "forwardingRules", "gcp-tpu-a-https-fr")]["portRange"] = "80-80"
    del world[f"/v1/projects/{P}/locations/europe/repositories/dockerhub-mirror"]
    with FakeGcp() as srv:
        srv.objects.update(world)
        report = check_expectations(CLUSTER, demo_expected, kube=_no_kube, gcp=lambda: _api(srv.url))
    addr = _find(report, ":Address", "controller-ingress")
    assert addr.state == "different"
    assert [(d.field, d.declared, d.live) for d in addr.diffs] == [("address", "34.16.10.20", "34.16.10.99")]
    assert _find(report, ":BackendService", "gcp-tpu-b-be").state == "missing"
    fw = _find(report, ":Firewall", "gcp-tpu-a-allow-lb")
    assert [(d.field, d.declared, d.live) for d in fw.diffs] == [("priority", 900, 1000)]
    member = _find(report, ":NetworkEndpoint", "gcp-tpu-b-endpoint")
    assert member.state == "missing" and "tpub-controller:10000" in member.ref
    rules = _find(report, ":SecurityPolicy", "gcp-tpu-a-relay-armor")
    assert rules.state == "different" and rules.diffs[0].field == "rules"
    assert [(d.field, d.live) for d in _find(report, ":GlobalForwardingRule", "gcp-tpu-a-https-fr").diffs] == [
        ("portRange", "80")]
    repo = _find(report, ":Repository", "dockerhub-mirror-europe")
    assert repo.state == "missing"
    assert repo.ref == f"projects/{P}/locations/europe/repositories/dockerhub-mirror"
    assert _find(report, ":Repository", "dockerhub-mirror-us").state == "ok"
    assert report.exit_code == EXIT_MISSING
    assert report.fix == ("clusterstack preview gcp-demo", "clusterstack up gcp-demo")


def test_permission_denied_is_unverified(demo_expected):
    with FakeGcp() as srv:
        srv.objects.update(gcp_demo_world())
        denied = gce_path(P, "urlMaps", "gcp-tpu-a-urlmap")
        srv.failures[denied] = (403, google_error(
            403, "Required 'compute.urlMaps.get' permission for 'projects/demo-project/global/urlMaps/gcp-tpu-a-urlmap'",
            "forbidden"))
        report = check_expectations(CLUSTER, demo_expected, kube=_no_kube, gcp=lambda: _api(srv.url))
    f = _find(report, ":URLMap", "gcp-tpu-a-urlmap")
    assert f.state == "error" and "compute.urlMaps.get" in f.message
    assert report.count("error") == 1
    assert report.exit_code == EXIT_UNVERIFIED


def test_unreachable_api_is_asked_once(demo_expected):
    with FakeGcp() as srv:
        url = srv.url
    calls = []

    class Counting(GoogleCompute):
        def get(self, obj):
            calls.append(obj)
            return super().get(obj)

    report = check_expectations(CLUSTER, demo_expected, kube=_no_kube,
                                gcp=lambda: Counting(_gcp(url), timeout=2.0))
    gcp_findings = [f for f in report.findings if f.state != "skipped"]
    assert len(calls) == 1
    assert len(gcp_findings) > 20 and all(f.state == "error" for f in gcp_findings)
    assert report.exit_code == EXIT_UNVERIFIED


def test_cli_json_and_library_agree(repo_root, monkeypatch, capsys):
    world = gcp_demo_world()
    del world[gce_path(P, "sslCertificates", "logs-example-org-cert")]
    with FakeGcp() as srv:
        srv.objects.update(world)
        clients = fake_clients(gcp=_gcp(srv.url))
        assert main(["--root", str(repo_root), "verify", CLUSTER, "--json"], clients=clients) == EXIT_MISSING
        doc = json.loads(capsys.readouterr().out)
        assert main(["--root", str(repo_root), "verify", CLUSTER], clients=clients) == EXIT_MISSING
        text = capsys.readouterr().out
        report = verify_prerequisites(CLUSTER, workspace=Workspace.load(repo_root), clients=clients)
    assert doc == json.loads(json.dumps(report.to_json()))
    assert [f["ref"] for f in doc["findings"] if f["state"] == "missing"] == [
        f"projects/{P}/global/sslCertificates/logs-example-org-cert"]
    assert "MISSING   gcp:compute/managedSslCertificate:ManagedSslCertificate" in text
    assert "fix: clusterstack preview gcp-demo" in text and "clusterstack up gcp-demo" in text


def test_an_ssl_policy_left_at_tls_1_0_or_a_looser_throttle_is_different(demo_expected):
    world = gcp_demo_world()
    world[gce_path(P, "sslPolicies", "gcp-tpu-a-ssl-policy")]["minTlsVersion"] = "TLS_1_0"
    world[gce_path(P, "securityPolicies", "gcp-tpu-a-proxy-armor")]["rules"][0]["rateLimitOptions"][
        "rateLimitThreshold"]["count"] = 6000
    with FakeGcp() as srv:
        srv.objects.update(world)
        report = check_expectations(CLUSTER, demo_expected, kube=_no_kube, gcp=lambda: _api(srv.url))
    assert _find(report, ":SSLPolicy", "gcp-tpu-a-ssl-policy").state == "different"
    assert _find(report, ":SecurityPolicy", "gcp-tpu-a-proxy-armor").state == "different"
    assert report.exit_code == 4
