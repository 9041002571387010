"""The grouped diff of a preview: folding, property paths, secret masking, whole values."""

import json

from clusterstack.engine.model import PreviewResult, count_ops
from clusterstack.views.preview import fmt_value, group_changes, render_changes
from clusterstack.pulumi import tokens
from clusterstack.pulumi.paths import get_path, parse_path
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.values import mask
from clusterstack.pulumi.wire import SECRET_SIG, SIG_KEY

U = "urn:pulumi:s::clusterstack::kubernetes:core/v1:ConfigMap::cm"


def test_property_paths_follow_pulumis_syntax():
    assert parse_path('spec.rules[0]["a.b"].verbs[12]') == ("spec", "rules", 0, "a.b", "verbs", 12)
    doc = {"spec": {"rules": [{"a.b": {"verbs": ["get"]}}]}}
    assert get_path(doc, 'spec.rules[0]["a.b"].verbs[0]') == "get"
    assert get_path(doc, "spec.rules[3]") is None and get_path(None, "x") is None


def test_secret_envelopes_are_masked_at_any_depth():
    sig = SIG_KEY
    assert sig == "4dabf18193072939515e22adb298388d" and SECRET_SIG == "1b47061264138c4ac30d75fd1eb44270"
    v = {"token": {sig: SECRET_SIG, "ciphertext": "v1:abc"}, "list": [{sig: "x"}]}
    assert mask(v) == {"token": "[secret]", "list": ["[secret]"]}
    assert "v1:abc" not in fmt_value(v)
    assert fmt_value("x" * 200) == '"' + "x" * 200 + '"'


def test_a_long_value_is_shown_whole_on_lines_of_its_own():
    """A review never crops a value (it was cut at 80 characters, mid-flag: the reviewer could
    not see what changed). A short change stays one line; a long one shows the path, then each
    side whole on its own line — the same lines at any terminal width."""
    flags = ["--leader-elect", "--zap-log-level=2",
             "--feature-gates=TopologyAwareScheduling=true,LocalQueueMetrics=true,ElasticJobsViaWorkloadSlices=true"]
    new_flags = flags[:2] + [flags[2].replace("LocalQueueMetrics=true", "LocalQueueMetrics=false")]
    dd = {"spec.args": {"kind": "update"}, "spec.image": {"kind": "add"}}
    step = Step("update", U, "kubernetes:core/v1:ConfigMap", diffs=("spec",), detailed_diff=dd,
                old_inputs={"spec": {"args": flags}}, new_inputs={"spec": {"args": new_flags, "image": "i:1"}})
    lines = render_changes(PreviewResult(stack="s", steps=(step,), counts={"update": 1}))
    assert lines[3:] == ["        ~ spec.args:",
                         "            old: " + json.dumps(flags, separators=(",", ":")),
                         "            new: " + json.dumps(new_flags, separators=(",", ":")),
                         '        + spec.image: "i:1"']
    assert "…" not in "\n".join(lines)


def test_a_replacement_pair_is_one_replace_and_same_steps_are_hidden():
    old = {"data": {"k": "old"}}
    new = {"data": {"k": "new"}}
    dd = {"data.k": {"kind": "update-replace", "inputDiff": True}}
    steps = (Step("same", "urn:pulumi:s::clusterstack::pulumi:pulumi:Stack::x", tokens.STACK_TYPE),
             Step("create-replacement", U, "kubernetes:core/v1:ConfigMap", replace_reasons=("data",),
                  detailed_diff=dd, old_inputs=old, new_inputs=new),
             Step("replace", U, "kubernetes:core/v1:ConfigMap", replace_reasons=("data",)),
             Step("delete-replaced", U, "kubernetes:core/v1:ConfigMap", replace_reasons=("data",)))
    groups = group_changes(steps)
    [ch] = groups["replace"]
    assert ch.ops == ("create-replacement", "replace", "delete-replaced")
    assert [(p.path, p.old, p.new, p.forces_replace) for p in ch.properties] == [("data.k", "old", "new", True)]
    assert sum(len(v) for v in groups.values()) == 1
    lines = render_changes(PreviewResult(stack="s", steps=steps, counts={"same": 1, "replace": 1}))
    assert lines == ["s: 1 to replace (1 unchanged)", "  replaces (1):",
                     "    +- kubernetes:core/v1:ConfigMap  cm",
                     '        ~ data.k: "old" → "new"  (forces replacement)']


def test_without_a_detailed_diff_the_changed_keys_are_shown():
    s = Step("update", U, "kubernetes:core/v1:ConfigMap", diffs=("data",),
             old_inputs={"data": {"k": 1}}, new_inputs={"data": {"k": 2}})
    lines = render_changes(PreviewResult(stack="s", steps=(s,), counts=count_ops((s,))))
    assert lines[-1] == '        ~ data: {"k":1} → {"k":2}'


def test_a_preview_names_clusterqueue_items_by_key_not_by_the_providers_positions():
    """pulumi-kubernetes reports list items by position (provider/pkg/provider/provider.go
    ``addPatchArrayToDiff``): with the CPU flavor deleted, flavor 0's GPU quota reads 0 → 256.
    The preview shows the removed flavor by name instead, each size in one unit."""
    flavor = lambda name, gpus, disk: {"name": name, "resources": [
        {"name": "ephemeral-storage", "nominalQuota": disk}, {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
    cq = lambda *fs: {"spec": {"resourceGroups": [{"flavors": list(fs)}]}}
    cpu, b200 = flavor("cpu-flavor", 0, "30698364647504"), flavor("b200-flavor", 256, "32T")
    dd = {"spec.resourceGroups[0].flavors[0].name": {"kind": "update"},
          "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota": {"kind": "update"},
          "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota": {"kind": "update"},
          "spec.resourceGroups[0].flavors[1]": {"kind": "delete"}}
    urn = "urn:pulumi:s::clusterstack::kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue::cq"
    step = Step("update", urn, tokens.KUEUE_CLUSTER_QUEUE, diffs=("spec",), detailed_diff=dd,
                old_inputs=cq(cpu, b200), new_inputs=cq(b200))
    lines = render_changes(PreviewResult(stack="s", steps=(step,), counts={"update": 1}))
    f = 'spec.resourceGroups[0].flavors[name="cpu-flavor"]'
    assert lines[3:] == [f'        - {f}.resources[name="ephemeral-storage"].nominalQuota: "30698364647504"  (30698.36 GB)',
                         f'        - {f}.resources[name="nvidia.com/gpu"].nominalQuota: 0']
    assert "0 → 256" not in "\n".join(lines)


def test_a_list_of_scalars_the_provider_reports_by_position_is_one_whole_change():
    """pulumi-kubernetes reports a plain string list by position: removing the first of two
    allowed sources read `sourceRange[0]: "203.0.113.10/32" → "198.51.100.0/24"` and
    `sourceRange[1]` deleted. The preview shows the list once, whole, as the static diff does."""
    urn = "urn:pulumi:s::clusterstack::kubernetes:traefik.io/v1alpha1:Middleware::allow"
    src = lambda *s: {"spec": {"ipAllowList": {"sourceRange": list(s)}}}
    dd = {"spec.ipAllowList.sourceRange[0]": {"kind": "update"},
          "spec.ipAllowList.sourceRange[1]": {"kind": "delete"}}
    step = Step("update", urn, "kubernetes:traefik.io/v1alpha1:Middleware", diffs=("spec",),
                detailed_diff=dd, old_inputs=src("203.0.113.10/32", "198.51.100.0/24"),
                new_inputs=src("198.51.100.0/24"))
    lines = render_changes(PreviewResult(stack="s", steps=(step,), counts={"update": 1}))
    assert lines[3:] == ['        ~ spec.ipAllowList.sourceRange: ["203.0.113.10/32","198.51.100.0/24"] → ["198.51.100.0/24"]']
