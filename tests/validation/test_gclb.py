"""``provisioning.gcp.gclb`` and the fields it reads from other clusters' configs: the
derived backends of the shipped example, and every validation error with both locations
(the referencing GCP stack's file and the referenced cluster's file). Expected lines are
computed from the edited text."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import edit, line_of, shown
from clusterstack.cli import main
from clusterstack.validation import load_cluster
from clusterstack.validation import load_references
from clusterstack.derive.gclb import derive_gclb
from clusterstack.errors import ConfigError
from clusterstack.workspace import Workspace

GCLB = "provisioning.gcp.gclb"


def _problems(root: Path, cluster: str = "gcp-demo"):
    with pytest.raises(ConfigError) as exc:
        load_cluster(Workspace.load(root), cluster)
    return exc.value.problems


def _one(root: Path, cluster: str = "gcp-demo"):
    problems = _problems(root, cluster)
    assert len(problems) == 1, [p.render() for p in problems]
    return problems[0]


def _files(root: Path):
    c = root / "clusters"
    return c / "gcp-demo.yaml", c / "gcp-tpu-a.yaml", c / "gcp-tpu-b.yaml"


def test_example_backends(repo_root):
    ws = Workspace.load(repo_root)
    cfg = load_cluster(ws, "gcp-demo").config
    backends = derive_gclb(cfg, load_references(ws, cfg))
    assert backends.project_number == "123456789012"
    a, b = backends.controllers
    assert (a.cluster, a.domain, a.zone, a.instance, a.port, a.network_tag, a.backend_service_id) == (
        "gcp-tpu-a", "ctl-a.example.org", "us-central1-a", "tpua-controller", 10000, "tpua-controller",
        "4721349812345678901")
    assert a.programmatic_clients == ("123456789012-desktop.apps.googleusercontent.com",
                                      "123456789012-ci.apps.googleusercontent.com")
    assert a.token_proxy is True
    # network_tag given explicitly; token_proxy from the gclb entry.
    assert (b.network_tag, b.token_proxy) == ("tpub-ctl", False)
    # No deny_public flag: the deny follows from "behind the load balancer".
    assert not hasattr(a, "deny_public")
    assert cfg.provisioning.gcp.gclb.internal_source_ranges == ("10.128.0.0/9",)
    (relay,) = backends.log_relays
    assert (relay.cluster, relay.domain, relay.instance, relay.port, relay.network_tag) == (
        "gcp-tpu-a", "logs.example.org", "tpua-log-relay", 10001, "tpua-log-relay")
    assert relay.sender_source_ranges == ("192.0.2.0/24", "198.51.100.0/24")
    # A config without gclb derives nothing.
    assert derive_gclb(load_cluster(ws, "gcp-tpu-a").config, {}) is None


# --- errors in the GCP stack's own file -----------------------------------------------------

def test_unknown_cluster(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("        - cluster: gcp-tpu-b\n", "        - cluster: gcp-tpu-z\n"))
    p = _one(workspace_copy)
    assert (p.file, p.line, p.field) == (demo, line_of(text, "- cluster: gcp-tpu-z"),
                                         f"{GCLB}.controllers[1].cluster")
    assert "unknown cluster 'gcp-tpu-z'" in p.message and "gcp-tpu-b" in p.hint


def test_frontend_must_be_a_controller(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("frontend_name: gcp-tpu-a", "frontend_name: gcp-demo"))
    p = _one(workspace_copy)
    assert (p.line, p.field) == (line_of(text, "frontend_name:"), f"{GCLB}.frontend_name")
    assert "not one of the controllers" in p.message


def test_at_least_one_controller(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ('''      controllers:                    # zone/instance/port, domain and IAP audience: each cluster's own file
        - cluster: gcp-tpu-a          # token_proxy (default true): /proxy/t routed past IAP
        - cluster: gcp-tpu-b
          token_proxy: false
''', "      controllers: []\n"))
    problems = _problems(workspace_copy)
    assert any(p.field == f"{GCLB}.controllers" and p.line == line_of(text, "controllers: []")
               and "at least 1 item" in p.message for p in problems), [p.render() for p in problems]


def test_controller_listed_twice(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("        - cluster: gcp-tpu-b\n", "        - cluster: gcp-tpu-a\n"))
    p = _one(workspace_copy)
    assert p.field == f"{GCLB}.controllers[1].cluster"
    assert p.line == line_of(text, "- cluster: gcp-tpu-a\n          token_proxy")
    assert "controller gcp-tpu-a is listed twice" in p.message


@pytest.mark.parametrize("ranges, message", [
    ("[" + ", ".join(f"10.{i}.0.0/16" for i in range(11)) + "]", "at most 10 items"),
    ("[]", "at least 1 item"),
    ("[192.0.2.0/24, 198.51.100.300/24]", "is not an IP address or CIDR"),
])
def test_sender_source_ranges(workspace_copy, ranges, message):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("sender_source_ranges: [192.0.2.0/24, 198.51.100.0/24]",
                       f"sender_source_ranges: {ranges}"))
    p = _one(workspace_copy)
    assert p.field.startswith(f"{GCLB}.log_relays[0].sender_source_ranges")
    assert p.line == line_of(text, "sender_source_ranges:") and message in p.message


def test_unknown_gclb_key_is_rejected(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("      network: default\n", "      network: default\n      health_path: /x\n"))
    p = _one(workspace_copy)
    assert (p.field, p.line) == (f"{GCLB}.health_path", line_of(text, "health_path:"))


def test_relay_domain_already_used(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("domain: logs.example.org", "domain: ctl-b.example.org"))
    p = _one(workspace_copy)
    assert (p.file, p.field, p.line) == (demo, f"{GCLB}.log_relays[0].domain", line_of(text, "domain:"))
    assert "also used by controller gcp-tpu-b" in p.message


def test_certificate_names_collide(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    edit(demo, ("domain: logs.example.org", "domain: ctl-a-example.org"))
    p = _one(workspace_copy)
    assert p.field == f"{GCLB}.log_relays[0].domain"
    assert "same certificate name 'ctl-a-example-org-cert'" in p.message


def test_derived_name_too_long(workspace_copy):
    demo, _, b = _files(workspace_copy)
    long = "gcp-tpu-" + "b" * 45            # 53 characters: a valid cluster name …
    (workspace_copy / "clusters" / f"{long}.yaml").write_text(
        b.read_text().replace("name: gcp-tpu-b", f"name: {long}"))
    text = edit(demo, ("        - cluster: gcp-tpu-b\n", f"        - cluster: {long}\n"))
    p = _one(workspace_copy)                # … but {long}-deny-public-10000 has 72
    assert (p.field, p.line) == (f"{GCLB}.controllers[1].cluster", line_of(text, f"- cluster: {long}"))
    assert "not a valid name" in p.message and "63 characters" in p.message


# --- errors in a referenced cluster's file: located there, naming the referencing line -------

def _assert_referenced(p, file: Path, line: int, field: str, cluster: str, demo: Path, demo_line: int,
                       via: str) -> None:
    assert (p.file, p.line, p.field) == (file, line, field), p.render()
    assert p.message.startswith(f"cluster {cluster}: ")
    assert f"(listed at {shown(demo)}:{demo_line} ({via}))" in p.message   # relative, as the head


def test_controller_without_controller_gcp(workspace_copy):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ('''controller:
  gcp:
    zone: us-east5-b
    instance: tpub-controller
    port: 10000
    network_tag: tpub-ctl         # the tag the VM carries (instead of the default tpub-controller)
''', "controller: {}\n"))
    p = _one(workspace_copy)
    demo_text = demo.read_text()
    _assert_referenced(p, b, line_of(text, "controller: {}"), "controller.gcp", "gcp-tpu-b", demo,
                       line_of(demo_text, "- cluster: gcp-tpu-b"), f"{GCLB}.controllers[1].cluster")
    assert "zone, instance, port" in p.message


@pytest.mark.parametrize("url, reason", [
    ("http://ctl-b.example.org", "is not an https origin"),
    ("https://ctl-b.example.org/ui", "is not an https origin"),
    ("https://ctl-b.example.org:8443", "is not an https origin"),
])
def test_iap_url_must_be_an_https_origin(workspace_copy, url, reason):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("url: https://ctl-b.example.org", f"url: {url}"))
    p = _one(workspace_copy)
    _assert_referenced(p, b, line_of(text, "url:"), "auth.iap.url", "gcp-tpu-b", demo,
                       line_of(demo.read_text(), "- cluster: gcp-tpu-b"), f"{GCLB}.controllers[1].cluster")
    assert reason in p.message


def test_iap_url_missing(workspace_copy):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("    url: https://ctl-b.example.org\n", ""))
    p = _one(workspace_copy)
    assert (p.file, p.field, p.line) == (b, "auth.iap.url", line_of(text, "  iap:"))
    assert "missing: the IAP origin" in p.message


@pytest.mark.parametrize("audience, reason", [
    ("/projects/123456789012/global/backendServices/ctl-b-be", "is not /projects/<number>/global/backendServices/<id>"),
    ("projects/123456789012/global/backendServices/5832461923456789012", "is not /projects/"),
])
def test_signed_header_audience_format(workspace_copy, audience, reason):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("signed_header_audience: /projects/123456789012/global/backendServices/5832461923456789012",
                    f"signed_header_audience: {audience}"))
    p = _one(workspace_copy)
    _assert_referenced(p, b, line_of(text, "signed_header_audience:"), "auth.iap.signed_header_audience",
                       "gcp-tpu-b", demo, line_of(demo.read_text(), "- cluster: gcp-tpu-b"),
                       f"{GCLB}.controllers[1].cluster")
    assert reason in p.message


def test_a_controller_without_an_audience_yet_needs_only_the_project_number(workspace_copy):
    # a controller whose backend does not exist yet has no audience to copy (it is an
    # output of the load balancer stack); it plans once the stack names its project number
    demo, _, b = _files(workspace_copy)
    edit(b, ("    signed_header_audience: /projects/123456789012/global/backendServices/5832461923456789012\n", ""))
    edit(demo, ("    project: demo-project\n", "    project: demo-project\n    project_number: \"123456789012\"\n"))
    ws = Workspace.load(workspace_copy)
    cfg = load_cluster(ws, "gcp-demo").config
    backends = derive_gclb(cfg, load_references(ws, cfg))
    b_spec = {c.cluster: c for c in backends.controllers}["gcp-tpu-b"]
    assert backends.project_number == "123456789012"
    assert b_spec.backend_service_id == "<backend_service_id>"   # an import-ID template: adopting only
    assert main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 0


def test_without_audience_or_project_number_the_number_is_asked_for_by_its_field(workspace_copy):
    demo, a, b = _files(workspace_copy)
    for f in (a, b):
        text = f.read_text()
        f.write_text("".join(ln for ln in text.splitlines(keepends=True) if "signed_header_audience:" not in ln))
    problems = _problems(workspace_copy)
    assert {(p.file, p.field) for p in problems} == {(demo, "provisioning.gcp.project")}
    assert "provisioning.gcp.project_number must name the project's number" in problems[0].message
    assert "gcloud projects describe demo-project --format='value(projectNumber)'" in problems[0].hint


@pytest.mark.parametrize("audience, why", [
    ("/projects/111111111111/global/backendServices/4721349812345678901",
     "project number 111111111111 differs from 123456789012 of provisioning.gcp.project_number"),
    ("/projects/123456789012/global/backendServices/0",
     "backend service id 0 is not a Compute Engine id: 0 is the value of an unset uint64"),
    ("/projects/123456789012/global/backendServices/18446744073709551616",
     "backend service id 18446744073709551616 is not a Compute Engine id (a uint64 without a leading zero)"),
])
def test_an_invented_audience_is_refused_where_it_is_provably_wrong(workspace_copy, audience, why):
    # `/projects/111111111111/global/backendServices/0` was accepted silently
    demo, a, _ = _files(workspace_copy)
    edit(demo, ("    project: demo-project\n", "    project: demo-project\n    project_number: \"123456789012\"\n"))
    text = edit(a, ("/projects/123456789012/global/backendServices/4721349812345678901", audience))
    p = _one(workspace_copy)
    assert (p.file, p.line, p.field) == (a, line_of(text, "signed_header_audience:"), "auth.iap.signed_header_audience")
    assert why in p.message


def test_two_controllers_naming_one_backend_service_are_refused(workspace_copy):
    _, _, b = _files(workspace_copy)
    text = edit(b, ("backendServices/5832461923456789012", "backendServices/4721349812345678901"))
    p = _one(workspace_copy)
    assert (p.file, p.line) == (b, line_of(text, "signed_header_audience:"))
    assert ("backend service id 4721349812345678901 is also controller gcp-tpu-a's: two backend services "
            "never share an id") in p.message


def test_controllers_share_one_project_number(workspace_copy):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("/projects/123456789012/global", "/projects/210987654321/global"))
    p = _one(workspace_copy)
    _assert_referenced(p, b, line_of(text, "signed_header_audience:"), "auth.iap.signed_header_audience",
                       "gcp-tpu-b", demo, line_of(demo.read_text(), "- cluster: gcp-tpu-b"),
                       f"{GCLB}.controllers[1].cluster")
    assert "project number 210987654321 differs from 123456789012 of controller gcp-tpu-a" in p.message


def test_controller_in_another_project(workspace_copy):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("gcp: {project_id: demo-project}", "gcp: {project_id: other-project}"))
    p = _one(workspace_copy)
    _assert_referenced(p, b, line_of(text, "project_id"), "platform.gcp.project_id", "gcp-tpu-b", demo,
                       line_of(demo.read_text(), "- cluster: gcp-tpu-b"), f"{GCLB}.controllers[1].cluster")
    assert "runs in project 'other-project', but the load balancer is in 'demo-project'" in p.message


def test_controller_not_on_gcp(workspace_copy):
    _, _, b = _files(workspace_copy)
    edit(b, ("  gcp: {project_id: demo-project}\n", ""))
    p = _one(workspace_copy)
    assert (p.file, p.field) == (b, "platform.gcp.project_id")
    assert "is not a GCP cluster" in p.message


def test_log_relay_without_log_relay_gcp(workspace_copy):
    demo, _, b = _files(workspace_copy)
    demo_text = edit(demo, ("      log_relays:\n        - cluster: gcp-tpu-a\n",
                            "      log_relays:\n        - cluster: gcp-tpu-b\n"))
    p = _one(workspace_copy)
    # No log_relay section at all: the line is that of the document's first key.
    _assert_referenced(p, b, line_of(b.read_text(), "name: gcp-tpu-b"), "log_relay.gcp", "gcp-tpu-b", demo,
                       line_of(demo_text, "- cluster: gcp-tpu-b\n          domain"),
                       f"{GCLB}.log_relays[0].cluster")


def test_invalid_referenced_config(workspace_copy):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("    port: 10000\n", "    port: 70000\n"))
    problems = _problems(workspace_copy)
    assert [(p.file, p.field) for p in problems] == [
        (b, "controller.gcp.port"), (demo, f"{GCLB}.controllers[1].cluster")]
    assert problems[0].line == line_of(text, "port: 70000")
    assert "cluster 'gcp-tpu-b' has an invalid config" in problems[1].message
    assert problems[1].hint == "fix clusters/gcp-tpu-b.yaml (problems listed above)"  # relative


def test_every_problem_is_reported_at_once(workspace_copy):
    _, a, b = _files(workspace_copy)
    edit(a, ("url: https://ctl-a.example.org", "url: ctl-a.example.org"))
    edit(b, ("/projects/123456789012/global/backendServices/5832461923456789012", "/projects/x"))
    assert sorted((p.file.name, p.field) for p in _problems(workspace_copy)) == [
        ("gcp-tpu-a.yaml", "auth.iap.url"), ("gcp-tpu-b.yaml", "auth.iap.signed_header_audience")]


def test_cli_renders_both_locations_and_exits_2(workspace_copy, capsys):
    demo, _, b = _files(workspace_copy)
    text = edit(b, ("port: 10000", "port: 10000\n    zone_typo: x"),
                ("    zone: us-east5-b\n", ""))
    assert main(["--root", str(workspace_copy), "plan", "gcp-demo"]) == 2
    err = capsys.readouterr().err
    line = line_of(text, "controller:\n  gcp:") + 1
    assert f"error: {shown(b)}:{line}: controller.gcp.zone: Field required — add this field" in err
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    assert f"{shown(demo)}:{line_of(demo.read_text(), '- cluster: gcp-tpu-b')}: {GCLB}.controllers[1].cluster: " \
           "cluster 'gcp-tpu-b' has an invalid config" in capsys.readouterr().err


def test_deny_public_is_no_longer_a_flag(workspace_copy):
    """The deny-public rule follows from "a controller is behind the load balancer"; a
    leftover ``deny_public`` key is an unknown field, located."""
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("          token_proxy: false\n",
                       "          token_proxy: false\n          deny_public: false\n"))
    p = _one(workspace_copy)
    assert (p.field, p.line) == (f"{GCLB}.controllers[1].deny_public", line_of(text, "deny_public:"))


def test_internal_source_ranges_are_cidrs(workspace_copy):
    demo, _, _ = _files(workspace_copy)
    text = edit(demo, ("internal_source_ranges: [10.128.0.0/9]", "internal_source_ranges: [10.300.0.0/9]"))
    p = _one(workspace_copy)
    assert p.field.startswith(f"{GCLB}.internal_source_ranges")
    assert p.line == line_of(text, "internal_source_ranges:") and "is not an IP address or CIDR" in p.message


def test_validate_says_what_it_cannot_know_of_an_audience(repo_root, capsys):
    assert main(["--root", str(repo_root), "validate"]) == 0
    err = capsys.readouterr().err
    a = (repo_root / "clusters" / "gcp-tpu-a.yaml").read_text()
    assert (f"note: clusters/gcp-tpu-a.yaml:{line_of(a, 'signed_header_audience:')}: auth.iap.signed_header_audience: "
            "taken as the audience of an existing backend service of gcp-demo's load balancer: its id is used "
            "only as the import ID of the backend's IAP settings (adopting); offline, clusterstack cannot know "
            "whether that backend exists or is this controller's") in err
