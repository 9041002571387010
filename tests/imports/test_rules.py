"""The receiving systems' rules the adoption report encodes (clusterstack.imports.rules): each
test names the rule it holds the code to, and its source."""

from __future__ import annotations

import pytest

from clusterstack.imports import rules
from clusterstack.imports.rules import MISSING, compare
from clusterstack.pulumi import tokens
from clusterstack.pulumi.forcenew import force_new_paths

CQ = tokens.KUEUE_CLUSTER_QUEUE
TOPOLOGY = tokens.KUEUE_TOPOLOGY
FLAVOR = tokens.KUEUE_RESOURCE_FLAVOR


def by_path(changes):
    return {c.path: c for c in changes}


# --- server-side apply --------------------------------------------------------------------------

def test_an_apply_sets_only_what_it_declares():
    # Kubernetes "Server-Side Apply": fields the applier never owned stay (labels merge by key)
    declared = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"a": "1"}}}
    live = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "ns", "uid": "u", "labels": {"a": "1", "team": "x"},
                         "annotations": {"note": "kept"}}, "spec": {"finalizers": ["kubernetes"]}}
    assert compare(tokens.NAMESPACE, declared, live, owned=False) == ()
    changed = compare(tokens.NAMESPACE, {**declared, "metadata": {"name": "ns", "labels": {"a": "2"}}},
                      live, owned=False)
    assert [(c.path, c.before, c.declared, c.effect) for c in changed] == [
        ("metadata.labels.a", "1", "2", rules.CHANGE)]


def test_an_atomic_list_is_replaced_whole_and_the_differing_items_are_named():
    declared = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}
    same_length = {**declared, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    c = by_path(compare(tokens.CLUSTER_ROLE, declared, same_length, owned=False))
    assert set(c) == {"rules[0].resources[0]"}
    longer = {**declared, "rules": declared["rules"] * 2}
    c = by_path(compare(tokens.CLUSTER_ROLE, declared, longer, owned=False))
    assert set(c) == {"rules"} and len(c["rules"].before) == 2
    # extra live fields inside an item are the server's defaults (a CRD `default`): not a change
    defaulted = {**declared, "rules": [{**declared["rules"][0], "resourceNames": []}]}
    assert compare(tokens.CLUSTER_ROLE, declared, defaulted, owned=False) == ()


def test_an_owned_apply_removes_what_it_no_longer_declares():
    # a migrated state keeps the old stack's field manager: a field it set and the program drops
    # is removed by the next apply
    old = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "n"},
           "imagePullSecrets": [{"name": "ghcr"}]}
    new = {k: v for k, v in old.items() if k != "imagePullSecrets"}
    assert compare(tokens.K8S_SERVICE_ACCOUNT, new, old, owned=False) == ()
    (c,) = compare(tokens.K8S_SERVICE_ACCOUNT, new, old, owned=True)
    assert (c.path, c.declared, c.before) == ("imagePullSecrets", MISSING, [{"name": "ghcr"}])


def test_values_the_plan_cannot_know_are_not_compared():
    declared = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
                "data": "[secret]"}
    assert compare(tokens.K8S_SECRET, declared, {**declared, "data": {"k": "dg=="}}, owned=False) == ()


def test_quantities_compare_by_value_at_quota_paths_only():
    # Kueue's ClusterQueue webhook returns the canonical spelling (1000000000 → 1G)
    def cq(q):
        return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "q"},
                "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "f", "resources": [{"name": "cpu", "nominalQuota": q}]}]}]}}
    assert compare(CQ, cq("1000000000"), cq("1G"), owned=False) == ()
    assert compare(CQ, cq(64), cq("64"), owned=False) == ()
    assert compare(CQ, cq("1Gi"), cq("1G"), owned=False) != ()
    assert rules.quantity("1Pi") == 2**50 and rules.quantity("500m") == rules.quantity("0.5")
    assert rules.quantity("1e3") == 1000 and rules.quantity("abc") is None
    # elsewhere a string is a string
    label = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": {"size": "1G"}}}
    assert compare(tokens.NAMESPACE, label, {**label, "metadata": {"name": "n", "labels": {"size": "1000M"}}},
                   owned=False) != ()


def test_a_declared_server_default_is_already_live():
    # kueue v0.14.4 clusterqueues CRD: queueingStrategy defaults to BestEffortFIFO; the old
    # program left it unset, the new one declares the default
    old = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "q"},
           "spec": {"namespaceSelector": {}}}
    new = {**old, "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                           "preemption": {"reclaimWithinCohort": "Never"}}}
    assert compare(CQ, new, old, owned=True) == ()
    other = {**old, "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO"}}
    assert [c.path for c in compare(CQ, other, old, owned=True)] == ["spec.queueingStrategy"]
    assert rules.server_default(tokens.NAMESPACE, ("spec", "finalizers"), ["kubernetes"])
    assert rules.server_default(tokens.NAMESPACE, ("spec",), {"finalizers": ["kubernetes"]})
    assert rules.server_default(tokens.NAMESPACE, ("spec", "finalizers"), ["example.com/x"]) is None


# --- refused by the API server ---------------------------------------------------------------------

def test_a_priority_class_value_is_refused_not_replaced():
    # pulumi-kubernetes' diff.go has no forceNew for PriorityClass: Pulumi plans an update, the
    # API server refuses it (ValidatePriorityClassUpdate)
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"},
          "value": 10000, "preemptionPolicy": "PreemptLowerPriority", "description": "old"}
    c = by_path(compare(tokens.PRIORITY_CLASS, {**pc, "value": 1000000, "description": "new"}, pc, owned=False))
    assert c["value"].effect == rules.REFUSED and "ValidatePriorityClassUpdate" in c["value"].rule
    assert c["description"].effect == rules.CHANGE
    assert rules.worst(list(c.values())) == rules.REFUSED


def test_topology_levels_are_immutable():
    topo = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "a"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    fewer = {**topo, "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}
    (c,) = compare(TOPOLOGY, fewer, topo, owned=False)
    assert c.effect == rules.REFUSED and "kueue.x-k8s.io_topologies.yaml:66-68" in c.rule


def test_a_flavor_spec_is_immutable_only_once_it_has_a_topology():
    # CEL `!has(oldSelf.topologyName) || self == oldSelf`
    plain = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "f"},
             "spec": {"nodeLabels": {"a": "1"}}}
    tas = {**plain, "spec": {"nodeLabels": {"a": "1"}, "topologyName": "ib"}}
    assert [c.effect for c in compare(FLAVOR, {**plain, "spec": {"nodeLabels": {"a": "2"}}}, plain,
                                      owned=False)] == [rules.CHANGE]
    assert [c.effect for c in compare(FLAVOR, {**tas, "spec": {"nodeLabels": {"a": "2"}, "topologyName": "ib"}},
                                      tas, owned=False)] == [rules.REFUSED]


def test_a_local_queue_cannot_move_to_another_cluster_queue():
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "n"}, "spec": {"clusterQueue": "a"}}
    (c,) = compare(tokens.KUEUE_LOCAL_QUEUE, {**lq, "spec": {"clusterQueue": "b"}}, lq, owned=False)
    assert c.effect == rules.REFUSED


# --- replaced by the provider -------------------------------------------------------------------------

def test_a_binding_role_ref_is_a_replace():
    # pulumi-kubernetes diff.go forceNew: RoleBinding/ClusterRoleBinding .roleRef
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "a"}, "subjects": []}
    changed = {**crb, "roleRef": {**crb["roleRef"], "name": "b"}}
    (c,) = compare(tokens.CLUSTER_ROLE_BINDING, changed, crb, owned=False)
    assert c.effect == rules.REPLACE and "diff.go" in c.rule
    assert "roleRef" in force_new_paths(tokens.ROLE_BINDING)
    assert force_new_paths(CQ) == ("metadata.name", "metadata.namespace")
    assert force_new_paths(tokens.HELM_RELEASE) == ()


def test_a_guard_replace_property_is_a_replace():
    pool = {"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"instanceType": "a"}}
    (c,) = compare(tokens.NODEPOOL, {**pool, "spec": {"instanceType": "b"}}, pool, owned=False,
                   replace_paths=("spec.instanceType",))
    assert c.effect == rules.REPLACE and "guard replace_properties" in c.rule


def test_artifact_registry_rules():
    # terraform-provider-google resource_artifact_registry_repository.go: remote_repository_config
    # is ForceNew (the whole block), description updates in place; cleanup policies are a set by
    # id with durations compared in seconds and tag_state ANY by default
    live = {"project": "p", "location": "us", "repositoryId": "m", "format": "DOCKER",
            "mode": "REMOTE_REPOSITORY", "remoteRepositoryConfig": {"commonRepository": {"uri": "https://ghcr.io"}},
            "cleanupPolicies": {"old": {"id": "old", "action": "DELETE",
                                        "condition": {"olderThan": "2592000s", "tagState": "ANY"}}}}
    declared = {"project": "p", "location": "us", "repositoryId": "m", "format": "docker",
                "mode": "REMOTE_REPOSITORY", "description": "",
                "remoteRepositoryConfig": {"commonRepository": {"uri": "https://ghcr.io"}},
                "cleanupPolicies": [{"id": "old", "action": "DELETE", "condition": {"olderThan": "30d"}}],
                "cleanupPolicyDryRun": False}
    AR = tokens.ARTIFACT_REPOSITORY
    assert compare(AR, declared, live, owned=False) == ()
    rrc = {**declared, "remoteRepositoryConfig": {**declared["remoteRepositoryConfig"], "description": "mirror"}}
    (c,) = compare(AR, rrc, live, owned=False)
    assert (c.path, c.effect) == ("remoteRepositoryConfig.description", rules.REPLACE)
    (c,) = compare(AR, {**declared, "description": "new"}, live, owned=False)
    assert (c.path, c.effect) == ("description", rules.CHANGE)
    # a live description the program leaves out is planned away (optional, not computed)
    (c,) = compare(AR, declared, {**live, "description": "set by hand"}, owned=False)
    assert (c.path, c.declared, c.effect) == ("description", MISSING, rules.CHANGE)


def test_address_rules():
    # resource_compute_address.go: every argument but labels is ForceNew; region compares by
    # name (CompareSelfLinkOrResourceName); ip_version "" equals IPV4; labels non-authoritative
    live = {"name": "a", "project": "p", "address": "1.2.3.4", "addressType": "EXTERNAL",
            "networkTier": "PREMIUM", "ipVersion": "IPV4", "labels": {"x": "1", "y": "2"},
            "region": "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1"}
    declared = {"name": "a", "project": "p", "address": "1.2.3.4", "addressType": "EXTERNAL",
                "region": "us-central1", "labels": {"x": "1"}}
    assert compare(tokens.ADDRESS, declared, live, owned=False) == ()
    (c,) = compare(tokens.ADDRESS, {**declared, "address": "1.2.3.5"}, live, owned=False)
    assert c.effect == rules.REPLACE and "resource_compute_address.go" in c.rule
    (c,) = compare(tokens.ADDRESS, {**declared, "labels": {"x": "2"}}, live, owned=False)
    assert c.effect == rules.CHANGE
    assert rules.gcp_suppression(tokens.ADDRESS, "region", "us-central1", live["region"])
    assert rules.gcp_suppression(tokens.ADDRESS, "description", MISSING, "")
    assert rules.gcp_suppression(tokens.ADDRESS, "description", "a", "b") is None


# --- Helm releases -------------------------------------------------------------------------------------

def test_a_release_changes_only_with_its_chart_version_or_values():
    declared = {"name": "kueue", "namespace": "kueue-system", "chart": "cks-kueue", "version": "1.5.0",
                "values": {"a": {"b": 1}}, "atomic": True, "repositoryOpts": {"repo": "https://x"}}
    live = {"name": "kueue", "namespace": "kueue-system", "chart": "coreweave/cks-kueue", "version": "1.5.0",
            "values": {"a": {"b": 1}}, "timeout": 300}
    assert compare(tokens.HELM_RELEASE, declared, live, owned=True) == ()
    c = by_path(compare(tokens.HELM_RELEASE, {**declared, "version": "1.6.0", "values": {"a": {"b": 2}}},
                        live, owned=False))
    assert set(c) == {"version", "values.a.b"} and c["values.a.b"].before == 1


# --- what Pulumi shows after an import ----------------------------------------------------------------------

def test_a_custom_resource_is_read_without_its_spec():
    # pulumi-kubernetes provider.go Read: a CRD kind has no schema input properties
    live = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": "t", "uid": "u"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}
    read = rules.import_read(TOPOLOGY, live)
    assert read == {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": "t"}}
    shown = rules.shown_paths(TOPOLOGY, read, {k: v for k, v in live.items() if k != "status"} |
                              {"metadata": {"name": "t"}})
    assert shown == ("spec",)
    assert "reads only a custom resource's apiVersion, kind, name and namespace" in \
        rules.artefact_reason(TOPOLOGY, "spec", live)


def test_a_namespace_is_read_with_what_the_api_server_added():
    live = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "n", "uid": "u", "resourceVersion": "1", "creationTimestamp": "t",
                         "labels": {"kubernetes.io/metadata.name": "n"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    read = rules.import_read(tokens.NAMESPACE, live)
    assert read["metadata"] == {"name": "n", "labels": {"kubernetes.io/metadata.name": "n"}}
    assert "status" not in read
    declared = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    shown = rules.shown_paths(tokens.NAMESPACE, read, declared)
    assert shown == ('metadata.labels["kubernetes.io/metadata.name"]', "spec.finalizers")
    assert "well-known label" in rules.artefact_reason(tokens.NAMESPACE, shown[0], live)
    assert "PrepareForUpdate" in rules.artefact_reason(tokens.NAMESPACE, "spec.finalizers", live)


@pytest.mark.parametrize("path", ["repositoryOpts", "atomic", "chart"])
def test_a_release_import_shows_updates_that_change_nothing(path):
    reason = rules.artefact_reason(tokens.HELM_RELEASE, path, {})
    assert "helm_release.go" in reason or "same chart" in reason
