"""`import generate`: Pulumi's bulk-import file from the offline plan.

Golden files: tests/golden/import-<stack>.json. After a deliberate change to a component or an
example config, regenerate them (with the golden plans) by ``.venv/bin/python
tests/regen_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from conftest import EXAMPLE_STACKS, REPO

from clusterstack.cli import main
from clusterstack.imports.generate import generate, parse_id_overrides, selectors
from clusterstack.imports.importfile import ImportRefused
from clusterstack.pulumi import tokens
from clusterstack.pulumi.importfile import PLACEHOLDER, digest_of, parse
from clusterstack.pulumi.tokens import NODEPOOL

GOLDEN = REPO / "tests" / "golden"
ZONE = "0123456789abcdef0123456789abcdef"
H100_DNS = "ctl-cw-demo-h100.example.org"


def golden_path(stack: str) -> Path:
    return GOLDEN / f"import-{stack}.json"


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_golden_import_files(example_plans, stack):
    text = generate(example_plans[stack]).file.dumps()
    assert text == golden_path(stack).read_text(encoding="utf-8"), (
        f"import file of {stack} changed: review, then `.venv/bin/python tests/regen_golden.py`")


def test_byte_identical_across_runs(example_plans):
    from clusterstack.plan import plan_stack

    again = plan_stack(REPO / "infra", "cw-demo-h100")  # a second, independent program run
    assert generate(again).file.dumps() == generate(example_plans["cw-demo-h100"]).file.dumps()


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_entries_keep_the_real_urns(example_plans, stack):
    """Pulumi computes each entry's URN from its parent chain; it must be the program's URN,
    or the next `up` would create a second object and delete the adopted one."""
    plan = example_plans[stack]
    g = generate(plan)
    computed = g.file.urns(plan.project, plan.stack)
    plan_urns = plan.by_urn()
    for name, urn in computed.items():
        assert urn in plan_urns, name
        assert g.urns[name] == urn
    leaves = {r.urn for r in plan.resources if r.custom and not r.is_provider}
    assert {g.urns[e.name] for e in g.imports} == leaves
    assert g.file.reference_problems() == []


def test_shape_follows_pulumis_format(example_plans):
    plan = example_plans["cw-demo-h100"]
    doc = json.loads(generate(plan).file.dumps())
    assert set(doc) == {"nameTable", "resources"}
    providers = {r.urn for r in plan.resources if r.is_provider}
    assert set(doc["nameTable"].values()) == providers
    for e in doc["resources"]:
        assert set(e) <= {"type", "name", "logicalName", "id", "parent", "provider", "version", "component"}
        if e.get("component"):
            assert "id" not in e and "provider" not in e
        else:
            assert e["id"] and e["provider"] in doc["nameTable"] and e["version"]
            assert e["parent"] in {x["name"] for x in doc["resources"] if x.get("component")}
    pools = [e for e in doc["resources"] if e["type"].endswith(":NodePool")]
    assert {(e["id"], e["parent"], e["provider"]) for e in pools} == {
        ("cwdemo-h100", "nodepools", "k8s_provider"), ("cwdemo-cpu-general", "nodepools", "k8s_provider")}


def test_placeholders_are_listed_with_their_form(example_plans):
    g = generate(example_plans["cw-demo-h100"])
    [p] = g.placeholders
    assert (p.logical_name, p.form) == (H100_DNS, f"{ZONE}/<record_id>")
    assert g.file.by_name()[p.name].id == PLACEHOLDER
    assert list(g.placeholders_by_type()) == [tokens.DNS_RECORD]


# --- scoping and overrides ----------------------------------------------------------------

def test_only_components_and_types(example_plans):
    plan = example_plans["cw-demo-h100"]
    g = generate(plan, only=["nodepools", tokens.CLUSTER_ROLE])
    types = g.imports_by_type()
    assert types == {NODEPOOL: 2,
                     tokens.CLUSTER_ROLE: 2}
    comps = [e.name for e in g.file.resources if e.component]
    assert comps == ["nodepools", "rbac"]  # only the ancestors of what is adopted
    assert g.placeholders == ()
    assert dict(g.file.name_table) == dict(generate(plan).file.name_table)  # always every provider
    g2 = generate(plan, only=[tokens.RBAC_COMPONENT])
    assert sum(g2.imports_by_type().values()) == 8  # + the namespaced Role and RoleBinding


def test_only_unknown_selector_is_refused(example_plans):
    with pytest.raises(ImportRefused, match="matches nothing") as exc:
        generate(example_plans["cw-demo-h100"], only=["traefik-stuff"])
    assert "nodepools" in exc.value.problems[0].hint
    assert "nodepools" in selectors(example_plans["cw-demo-h100"])


def test_id_override_fills_the_placeholder(example_plans):
    g = generate(example_plans["cw-demo-h100"], ids={H100_DNS: f"{ZONE}/372e67954025e0ba6aaa6d586b9e0b59"})
    assert g.placeholders == ()
    e = next(e for e in g.imports if e.logical_name == H100_DNS)
    assert e.id == f"{ZONE}/372e67954025e0ba6aaa6d586b9e0b59"
    assert g.overridden == (e.name,)
    # by entry name too
    g2 = generate(example_plans["cw-demo-h100"], ids={e.name: f"{ZONE}/abc"})
    assert g2.file.by_name()[e.name].id == f"{ZONE}/abc"


@pytest.mark.parametrize("ids, match", [
    ({H100_DNS: "ffff/abc"}, "does not have the form"),                  # another zone
    ({H100_DNS: f"{ZONE}/a/b"}, "does not have the form"),
    ({"cwdemo-h100": "other-pool"}, "derived from the config"),          # a derivable ID
    ({"cwdemo-controller": "x"}, "shared by entries"),                   # ClusterRole + Binding
    ({"no-such-thing": "x"}, "no entry or logical name"),
])
def test_bad_overrides_are_refused(example_plans, ids, match):
    with pytest.raises(ImportRefused, match=match):
        generate(example_plans["cw-demo-h100"], ids=ids)


def test_override_outside_the_scope_is_refused(example_plans):
    with pytest.raises(ImportRefused, match="outside the --only scope"):
        generate(example_plans["cw-demo-h100"], only=["nodepools"], ids={H100_DNS: f"{ZONE}/abc"})


def test_parse_id_overrides():
    assert parse_id_overrides(["a=b/c=d"]) == {"a": "b/c=d"}
    for bad in (["a"], ["=b"], ["a="], ["a=1", "a=2"]):
        with pytest.raises(ImportRefused):
            parse_id_overrides(bad)


# --- the digest ---------------------------------------------------------------------------

def test_digest_ignores_layout_not_content(example_plans):
    text = generate(example_plans["gcp-demo"]).file.dumps()
    f = parse(text)
    compact = json.dumps(json.loads(text), separators=(",", ":"))
    assert parse(compact).digest() == f.digest() == digest_of(json.loads(text))
    assert parse(text.replace("controller-ingress", "controller-ingresz")).digest() != f.digest()


# --- the CLI --------------------------------------------------------------------------------

def test_cli_writes_0600_atomically_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "imports" / "h100.json"
    out.parent.mkdir()
    rc = main(["--root", str(REPO), "import", "generate", "cw-demo-h100", "--output", str(out),
               "--id", f"{H100_DNS}={ZONE}/abc"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in out.parent.iterdir()] == ["h100.json"]  # no temp file left
    digest = parse(out.read_text()).digest()
    assert f"digest sha256:{digest}" in cap.out
    assert f"import {digest[:12]}" in cap.out
    assert NODEPOOL in cap.out
    assert "placeholders" not in cap.out


def test_cli_json_summary(tmp_path, capsys):
    out = tmp_path / "h100.json"
    assert main(["--root", str(REPO), "import", "generate", "cw-demo-h100", "-o", str(out),
                 "--only", "nodepools", "--only", "dns", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["imports"] == {"cloudflare:index/dnsRecord:DnsRecord": 1,
                              NODEPOOL: 2}
    assert doc["components"] == 2
    [ph] = doc["placeholders"][tokens.DNS_RECORD]
    assert ph["form"] == f"{ZONE}/<record_id>"
    assert doc["digest"] == parse(out.read_text()).digest()


def test_cli_refuses_inside_the_repository(capsys):
    target = REPO / "clusters" / "import-test.json"
    rc = main(["--root", str(REPO), "import", "generate", "cw-demo-h100", "-o", str(target)])
    assert rc == 2
    assert not target.exists()
    assert "inside the repository" in capsys.readouterr().err


def test_cli_refuses_a_symlink_into_the_repository(tmp_path, capsys):
    link = tmp_path / "looks-outside"
    link.symlink_to(REPO / "infra")
    rc = main(["--root", str(REPO), "import", "generate", "cw-demo-h100", "-o", str(link / "x.json")])
    assert rc == 2
    assert not (REPO / "infra" / "x.json").exists()
    assert "via symlinks" in capsys.readouterr().err


def test_cli_missing_directory_is_a_user_error(tmp_path, capsys):
    rc = main(["--root", str(REPO), "import", "generate", "cw-demo-h100",
               "-o", str(tmp_path / "nope" / "x.json")])
    assert rc == 2
    assert "does not exist" in capsys.readouterr().err


# --- only what exists ----------------------------------------------------------------------------

def test_offline_every_entry_is_marked_unverified(example_plans):
    from clusterstack.imports.generate import generate

    g = generate(example_plans["cw-demo-h100"])
    assert set(g.unverified) == {g.urns[e.name] for e in g.imports} and g.absent == ()


def test_live_dumps_leave_out_what_does_not_exist_and_mark_what_they_cannot_tell(marin_root, tmp_path, capsys):
    """`import generate` listed IDs of objects a Marin cluster does not run. With the
    recorded dumps of cw-us-west-04a (tests/fixtures/adoption) the file holds what exists; what
    the dumps cannot tell (no object of that kind in them) stays, marked."""
    from imports.conftest import CW_DUMPS, marin_dumps

    root = marin_root
    out = tmp_path / "private" / "cw.json"
    out.parent.mkdir(mode=0o700)
    args = [a for f in marin_dumps(*CW_DUMPS) for a in ("--live-dump", str(f))]
    assert main(["--root", str(root), "import", "generate", "cw-us-west-04a", "-o", str(out), "--json", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    kinds = lambda urns: sorted(u.split("::")[2].rsplit(":", 1)[1] for u in urns)  # noqa: E731
    file = parse(out.read_text())
    in_file = {e.type.rsplit(":", 1)[1] for e in file.resources if not e.component}
    for urn in doc["absent"]:
        # left out: the dumps hold objects of that kind, none under the declared name
        assert urn.split("::")[2].rsplit(":", 1)[1] in {"LocalQueue", "ResourceFlavor", "ClusterRole",
                                                         "ClusterRoleBinding", "NodePool", "Namespace"}
    # Iris's own queue is <label_prefix>-lq: the example declares no LocalQueue at all
    # ([conventions] local_queue = false), so none is listed, absent or in the file
    assert "LocalQueue" not in kinds(doc["absent"]) + kinds(doc["unverified"])
    assert "LocalQueue" not in in_file
    assert "ResourceFlavor" in kinds(doc["absent"])     # the recorded dumps predate cw-tas
    # what the dumps cannot tell (no object of that kind in them) is kept and marked
    from clusterstack.imports.live import UNVERIFIED, DumpView
    from clusterstack.plan import plan_stack

    plan = plan_stack(root / "infra" / "clusterstack", "cw-us-west-04a").by_urn()
    view = DumpView(marin_dumps(*CW_DUMPS))
    assert all(view.lookup(plan[u]).state == UNVERIFIED for u in doc["unverified"])
    assert set(doc["unverified"]) <= {u for u in plan} and not set(doc["unverified"]) & set(doc["absent"])
    assert main(["--root", str(root), "import", "generate", "cw-us-west-04a", "-o", str(out), *args]) == 0
    text = capsys.readouterr().out
    assert "not on the cluster (left out; `up` creates them)" in text
    if doc["unverified"]:
        assert f"existence not checked ({len(doc['unverified'])}; kept in the file)" in text
