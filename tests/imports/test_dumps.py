"""Live objects from dump files and through the adapters (clusterstack.imports.live): the
recorded formats of tests/fixtures/adoption are read, identities match the declared ones, a
dump is complete for the kinds it holds and says nothing about the others."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from clusterstack.cli import main
from clusterstack.imports.live import (ABSENT, FOUND, UNVERIFIED, AdapterView, DumpView, LiveDumpError,
                                       decode_helm_release, identity)
from clusterstack.plan.model import PlannedResource
from clusterstack.pulumi import tokens
from clusterstack.adapters.kubernetes import KubernetesApi
from fakes.kubernetes_api import FakeKubernetes, kube_path
from imports.conftest import ADOPTION, CW_DUMPS, marin_dumps
from imports.world import helm_secret

import yaml


def leaf(type_: str, name: str, inputs: dict, adopt_id: str | None = None) -> PlannedResource:
    return PlannedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                           parent=None, provider=None, inputs=inputs, dependencies=(), adopt_id=adopt_id)


def k8s(kind: str, api: str, name: str, ns: str | None = None, **body) -> PlannedResource:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return leaf(tokens.kubernetes_token(api, kind), name, {"apiVersion": api, "kind": kind, "metadata": meta, **body})


RELEASE = leaf(tokens.HELM_RELEASE, "kueue", {"name": "kueue", "namespace": "kueue-system", "chart": "cks-kueue",
                                             "version": "1.5.0", "values": {}})


def test_the_recorded_dumps_are_read():
    view = DumpView(marin_dumps(*CW_DUMPS))
    assert view.describe()["objects"] == 17 + 3 + 3 + 1   # objects, helm Secrets, their releases, the record
    ns = view.lookup(k8s("Namespace", "v1", "iris-ci"))
    assert ns.state == FOUND and ns.body["metadata"]["labels"] == {"kubernetes.io/metadata.name": "iris-ci"}
    rel = view.lookup(RELEASE)
    assert rel.state == FOUND and rel.ref == "Helm release kueue-system/kueue"
    assert (rel.body["chart"], rel.body["version"], rel.body["status"]) == ("cks-kueue", "1.4.0", "deployed")
    assert rel.body["values"]["kueue"]["controllerManager"]["featureGates"][4] == \
        {"name": "TASBalancedPlacement", "enabled": False}


def test_helm_storage_secrets_decode_to_the_release_records():
    # helm v3 pkg/storage/driver/util.go: data.release = base64(base64(gzip(release JSON)))
    secrets = yaml.safe_load((ADOPTION / "cw-us-west-04a.helm.yaml").read_text())["items"]
    records = json.loads((ADOPTION / "cw-us-west-04a.helm-releases.json").read_text())
    assert [decode_helm_release(s) for s in secrets] == records
    assert decode_helm_release({"data": {"release": "not base64!"}}) is None


def test_a_dump_is_complete_for_the_kinds_it_holds():
    view = DumpView(marin_dumps(*CW_DUMPS))
    # LocalQueues are in the dump (Iris's own iris-ci-lq): clusterstack's iris-cq does not exist
    assert view.lookup(k8s("LocalQueue", "kueue.x-k8s.io/v1beta1", "iris-cq", "iris-ci")).state == ABSENT
    assert view.lookup(k8s("ResourceFlavor", "kueue.x-k8s.io/v1beta1", "cw-tas")).state == ABSENT
    # no Role at all in the dumps: an empty `kubectl get` list names no kind, so nothing is known
    role = view.lookup(k8s("Role", "rbac.authorization.k8s.io/v1", "r", "iris-ci"))
    assert role.state == UNVERIFIED and "dumps hold no Role" in role.reason
    addr = leaf(tokens.ADDRESS, "a", {}, adopt_id="projects/p/regions/r/addresses/a")
    assert view.lookup(addr).state == UNVERIFIED


def test_gcloud_and_cloudflare_objects():
    view = DumpView(marin_dumps("marin.gcloud.json", "cw-us-west-04a.cloudflare.json"))
    addr = leaf(tokens.ADDRESS, "a", {}, adopt_id="projects/hai-gcp-models/regions/us-central1/addresses/iris-marin-fed-egress")
    found = view.lookup(addr)
    assert found.state == FOUND and found.body["address"] == "34.27.183.11"
    assert found.body["project"] == "hai-gcp-models"
    repo = leaf(tokens.ARTIFACT_REPOSITORY, "r", {},
                adopt_id="projects/hai-gcp-models/locations/europe/repositories/docker-mirror")
    body = view.lookup(repo).body
    assert (body["location"], body["repositoryId"]) == ("europe", "docker-mirror")
    assert body["cleanupPolicies"]["delete-old"]["condition"]["olderThan"] == "2592000s"
    gone = leaf(tokens.ARTIFACT_REPOSITORY, "g", {}, adopt_id="projects/hai-gcp-models/locations/asia/repositories/x")
    assert view.lookup(gone).state == ABSENT
    dns = leaf(tokens.DNS_RECORD, "iris-cw-us-west-04a.oa.dev",
               {"zoneId": "169959d6aafcbfd77764b8efafa3a509", "name": "iris-cw-us-west-04a.oa.dev", "type": "CNAME"})
    rec = view.lookup(dns)
    assert rec.state == FOUND and rec.body["content"] == "iris-cw-us-west-04a.208261-marin.coreweave.app"


def test_the_newest_release_revision_is_the_live_one(tmp_path):
    old = helm_secret(RELEASE, revision=3, status="superseded", values={"x": 1})
    new = helm_secret(RELEASE, revision=4, status="deployed", values={"x": 2})
    path = tmp_path / "helm.yaml"
    path.write_text(yaml.safe_dump_all([new, old]))      # several documents, newest first
    got = DumpView([path]).lookup(RELEASE)
    assert (got.body["revision"], got.body["values"]) == (4, {"x": 2})


def test_bad_dumps_are_located_user_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("items: [\n")
    with pytest.raises(LiveDumpError) as exc:
        DumpView([bad])
    assert exc.value.exit_code == 2 and exc.value.problems[0].file == bad
    with pytest.raises(LiveDumpError):
        DumpView([tmp_path / "missing.yaml"])


def test_identities_follow_the_declarations():
    assert identity(k8s("ClusterRole", "rbac.authorization.k8s.io/v1", "r")) == \
        ("k8s", "rbac.authorization.k8s.io", "ClusterRole", "", "r")
    assert identity(RELEASE) == ("helm", "kueue-system", "kueue")
    assert identity(leaf(tokens.FIREWALL, "f", {}, adopt_id="projects/p/global/firewalls/f")) is None


# --- through the adapters ------------------------------------------------------------------------

def api(url: str) -> KubernetesApi:
    cfg = client.Configuration(host=url)
    cfg.retries = 0
    return KubernetesApi(client.ApiClient(cfg), timeout=(2.0, 5.0))


def test_the_adapters_read_objects_and_releases_read_only():
    cr = k8s("ResourceFlavor", "kueue.x-k8s.io/v1beta1", "cw-ib", spec={"topologyName": "infiniband"})
    secret = helm_secret(RELEASE, revision=2, values={"kueue": {"enableKueueViz": False}})
    with FakeKubernetes() as srv:
        srv.objects[kube_path("kueue.x-k8s.io/v1beta1", "resourceflavors", "cw-ib")] = {
            **cr.inputs, "metadata": {"name": "cw-ib", "uid": "u"}}
        srv.objects[kube_path("v1", "secrets", secret["metadata"]["name"], "kueue-system")] = secret
        view = AdapterView(api(srv.url), None, gcp_reason="no GCP in this test")
        assert view.lookup(cr).state == FOUND
        rel = view.lookup(RELEASE)
        assert rel.state == FOUND and rel.body["values"] == {"kueue": {"enableKueueViz": False}}
        assert view.lookup(k8s("ResourceFlavor", "kueue.x-k8s.io/v1beta1", "cw-cpu")).state == ABSENT
        assert {m for m, _ in srv.requests} == {"GET"}
    addr = leaf(tokens.ADDRESS, "a", {}, adopt_id="projects/p/regions/r/addresses/a")
    assert view.lookup(addr).reason == "no GCP in this test"
    assert "no adapter reads Cloudflare" in view.lookup(
        leaf(tokens.DNS_RECORD, "d", {"zoneId": "z", "name": "d", "type": "CNAME"})).reason


def test_an_unreachable_cluster_is_unverified_not_absent():
    view = AdapterView(api("http://127.0.0.1:9"), None)
    first = view.lookup(k8s("Namespace", "v1", "n"))
    assert first.state == UNVERIFIED and "unreachable" in first.reason
    assert view.lookup(RELEASE).state == UNVERIFIED     # asked once, then remembered


def test_report_without_a_live_source_is_refused(capsys):
    assert main(["import", "report", "cw-demo-h100"]) == 2
    assert "no live objects to compare with" in capsys.readouterr().err
    assert main(["import", "report", "cw-demo-h100", "--live", "--live-dump", "x.yaml"]) == 2
    assert "not both" in capsys.readouterr().err


# --- the formats of tests/fixtures/marin/live (helm list + values, gcloud YAML documents) ------

def test_helm_list_with_values_and_gcloud_yaml_documents(tmp_path):
    helm = tmp_path / "helm.yaml"
    helm.write_text(yaml.safe_dump({"releases": [
        {"name": "kueue", "namespace": "kueue-system", "chart": "cks-kueue-1.5.0", "status": "deployed",
         "values": {"kueue": {"enableKueueViz": False}}},
        {"name": "traefik", "namespace": "traefik", "chart": "traefik-1.35.0", "status": "deployed"}]}))
    view = DumpView([helm])
    got = view.lookup(RELEASE)
    assert got.state == FOUND and (got.body["chart"], got.body["version"]) == ("cks-kueue", "1.5.0")
    assert got.body["values"] == {"kueue": {"enableKueueViz": False}}
    traefik = leaf(tokens.HELM_RELEASE, "traefik", {"name": "traefik", "namespace": "traefik", "chart": "traefik"})
    assert "without its values" in view.lookup(traefik).reason
    gcloud = tmp_path / "marin.yaml"
    gcloud.write_text("# gcloud compute addresses describe --format=yaml, one document each\n---\n" + yaml.safe_dump(
        {"address": "34.27.183.11", "addressType": "EXTERNAL", "kind": "compute#address", "name": "a",
         "region": "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1"}))
    addr = leaf(tokens.ADDRESS, "a", {}, adopt_id="projects/p/regions/us-central1/addresses/a")
    assert DumpView([gcloud]).lookup(addr).body["address"] == "34.27.183.11"


@pytest.mark.skipif(not (ADOPTION.parent / "marin" / "live" / "cw-us-west-04a.helm.yaml").is_file(),
                    reason="tests/fixtures/marin/live is not in this tree")
def test_the_marin_catalogue_dumps_are_read():
    live = ADOPTION.parent / "marin" / "live"
    view = DumpView([live / "cw-us-west-04a.yaml", live / "cw-us-west-04a.helm.yaml", live / "marin.yaml"])
    assert view.lookup(RELEASE).state == FOUND
    assert view.lookup(k8s("Namespace", "v1", "iris-ci")).state == FOUND
    mirror = leaf(tokens.ARTIFACT_REPOSITORY, "m", {}, adopt_id="projects/hai-gcp-models/locations/us/repositories/ghcr-mirror")
    assert view.lookup(mirror).state == FOUND
