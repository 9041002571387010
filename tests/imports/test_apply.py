"""`import apply`: every refusal of the transaction, and the flow against the fake engine."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.engine import StackNotFoundError
from deploy_support import Typing
from imports.world import dump_args, write_world
from fakes.clients import fake_clients
from fakes.pulumi import FakeEngine, FakeStack
from clusterstack.pulumi import tokens
from clusterstack.pulumi.importfile import parse
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import NODEPOOL

STACK = "cw-demo-h100"
ZONE = "0123456789abcdef0123456789abcdef"
DNS = "ctl-cw-demo-h100.example.org"
RECORD_ID = f"{ZONE}/372e67954025e0ba6aaa6d586b9e0b59"


@pytest.fixture
def ws(workspace_copy: Path) -> Path:
    return workspace_copy


@pytest.fixture
def outdir(tmp_path: Path) -> Path:
    d = tmp_path / "private"
    d.mkdir(mode=0o700)
    return d


def generate(ws: Path, out: Path, *extra: str) -> str:
    """Run `import generate` and return the file's digest."""
    rc = main(["--root", str(ws), "import", "generate", STACK, "-o", str(out), *extra])
    assert rc == 0
    return parse(out.read_text()).digest()


def fresh_stack(plan) -> FakeStack:
    """A stack that exists but has no state: a preview would create everything."""
    return FakeStack(steps=tuple(Step(op="create", urn=r.urn, type=r.type) for r in plan.resources))


@pytest.fixture
def engine(example_plans) -> FakeEngine:
    """The shipped stack's plan (each test's workspace starts as a copy of it)."""
    return FakeEngine({STACK: fresh_stack(example_plans[STACK])})


def apply(engine: FakeEngine, ws: Path, out: Path, *extra: str) -> int:
    """`import apply` with ``engine`` as the run's engine (``Clients.engine``)."""
    return main(["--root", str(ws), "import", "apply", STACK, "--file", str(out), *extra],
                clients=fake_clients(engine=engine))


@pytest.fixture
def live(example_plans, tmp_path: Path) -> list[str]:
    """``--live-dump`` arguments of a cluster that runs exactly what the stack declares
    (tests/imports/world.py): the adoption report is all same / no-op."""
    return dump_args(write_world(example_plans[STACK], tmp_path / "live"))


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=2))
    os.chmod(path, 0o600)


def entry(doc: dict, logical: str) -> dict:
    return next(e for e in doc["resources"] if e["logicalName"] == logical)


def ops(eng: FakeEngine) -> list[str]:
    return [c[0] for c in eng.calls]


# --- the flow ----------------------------------------------------------------------------

def test_full_adoption_against_the_fake_engine(ws, outdir, engine, capsys, live):
    out = outdir / "h100.json"
    digest = generate(ws, out, "--id", f"{DNS}={RECORD_ID}")
    capsys.readouterr()
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    text = capsys.readouterr().out
    # the providers first (state only), then the import preview, the import, the final check
    assert ops(engine) == ["export", "preview", "up", "preview_import", "export", "import_file", "preview"]
    boot = engine.calls[1][2]["targets"]
    assert set(boot) == {
        f"urn:pulumi:{STACK}::clusterstack::pulumi:pulumi:Stack::clusterstack-{STACK}",
        f"urn:pulumi:{STACK}::clusterstack::pulumi:providers:kubernetes::k8s",
        f"urn:pulumi:{STACK}::clusterstack::clusterstack:cloudflare:FederationDns::dns",
        f"urn:pulumi:{STACK}::clusterstack::clusterstack:cloudflare:FederationDns$pulumi:providers:cloudflare::cloudflare"}
    assert engine.calls[5][2]["protect"] is True
    state = engine.state(STACK)
    pool = state[f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"]
    assert pool["id"] == "cwdemo-h100" and pool["protect"] is True
    dns = next(r for r in state.values() if r["type"] == tokens.DNS_RECORD)
    assert dns["id"] == RECORD_ID
    # 20 + the namespaced Role/RoleBinding, the LocalQueue, a flavor per pool, the CPU
    # flavors' hostname Topology
    assert "adopted 25 resource(s)" in text
    # the engine imported exactly the verified bytes, from a private copy (not the operator's file)
    assert engine.calls[5][2]["path"] != str(out)


def test_only_scope_leaves_the_rest_to_up(ws, outdir, engine, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools", "--only", "rbac")
    capsys.readouterr()
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    text = capsys.readouterr().out
    assert "adopted 10 resource(s)" in text  # incl. the namespaced Role and RoleBinding
    # only the kubernetes provider was needed; the DNS component was never touched
    assert not any("cloudflare" in u for u in engine.calls[1][2]["targets"])
    assert "will be created by the next `clusterstack up`" in text
    assert "kubernetes:helm.sh/v3:Release::traefik" in text
    imported = {r["type"] for r in engine.state(STACK).values() if r.get("protect")}
    assert imported == {NODEPOOL, tokens.NAMESPACE, tokens.K8S_SERVICE_ACCOUNT,
                        tokens.CLUSTER_ROLE, tokens.CLUSTER_ROLE_BINDING,
                        tokens.ROLE, tokens.ROLE_BINDING}


def test_typed_confirmation(ws, outdir, engine, monkeypatch, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    typed = Typing(monkeypatch, f"import {digest[:12]}")
    assert apply(engine, ws, out, *live) == 0
    assert len(typed.prompts) == 1  # asked once, for exactly this phrase:
    assert f"Type `import {digest[:12]}` to import these resources: " in capsys.readouterr().err
    assert "import_file" in ops(engine)


def test_wrong_typed_confirmation_imports_nothing(ws, outdir, engine, monkeypatch, capsys, live):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    Typing(monkeypatch, "yes")
    assert apply(engine, ws, out, *live) == 2
    assert "import_file" not in ops(engine)
    assert "confirmation did not match" in capsys.readouterr().err


def test_digest_mismatch_imports_nothing(ws, outdir, engine, capsys, live):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    assert apply(engine, ws, out, *live, "--confirm-digest", "0123456789ab") == 2
    assert "import_file" not in ops(engine)
    assert "does not match the file" in capsys.readouterr().err


def test_final_preview_must_not_create_replace_or_delete_adopted(ws, outdir, engine, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    pool = f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
    # the live pool has another instance type than the config: the program would replace it
    engine.stacks[STACK].after_import = (
        Step(op="same", urn=f"urn:pulumi:{STACK}::clusterstack::pulumi:providers:kubernetes::k8s",
             type=tokens.KUBERNETES_PROVIDER),
        Step(op="replace", urn=pool, type=NODEPOOL, old_protect=True, replace_reasons=("spec",)),
        Step(op="create", urn=f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:Kueue::kueue",
             type=tokens.KUEUE_COMPONENT),
    )
    rc = apply(engine, ws, out, *live, "--confirm-digest", digest[:12])
    err = capsys.readouterr().err
    assert rc == 3
    assert f"the preview would replace {pool}" in err
    assert "do NOT run `up`" in err
    assert "Kueue::kueue" not in err  # not adopted: a later `up` creates it, not a failure
    assert "import_file" in ops(engine)  # the import happened; the check reports it clearly
    # the way back is a step clusterstack wrote from the state it checked, not raw Pulumi
    release = out.with_name(out.name + ".release.sh")
    assert f"`sh {release}`" in err
    assert oct(release.stat().st_mode & 0o777) == "0o600"
    script = release.read_text()
    assert f"pulumi state unprotect --stack \"$STACK\" --yes '{pool}'" in script
    assert f"pulumi state delete --stack \"$STACK\" --yes '{pool}'" in script
    assert "destroy" not in script.replace("never `destroy`", "") and "--force" not in script
    assert "Kueue::kueue" not in script       # only what was imported and would change


def test_guard_on_the_import_preview(ws, outdir, engine, monkeypatch, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    pool = f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
    real = engine.preview_import

    def preview_import(stack, path):
        res = real(stack, path)
        return replace(res, steps=res.steps + (Step(op="import-replacement", urn=pool, type=NODEPOOL),))

    engine.preview_import = preview_import  # this test's engine only
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 3
    assert "BLOCKED replace" in capsys.readouterr().err
    assert "import_file" not in ops(engine)


def test_already_managed_under_another_id_is_refused(ws, outdir, engine, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    pool = f"urn:pulumi:{STACK}::clusterstack::clusterstack:coreweave:NodePools${NODEPOOL}::cwdemo-h100"
    engine.stacks[STACK].export = {"version": 3, "deployment": {"resources": [
        {"urn": pool, "type": NODEPOOL, "custom": True, "id": "some-other-pool"}]}}
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 2
    assert "already managed with ID 'some-other-pool'" in capsys.readouterr().err
    assert ops(engine) == ["export"]


def test_unknown_stack(ws, outdir, monkeypatch, capsys, live):
    eng = FakeEngine({})
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    assert apply(eng, ws, out, *live, "--confirm-digest", digest[:12]) == StackNotFoundError(STACK).exit_code
    assert "stack init" in capsys.readouterr().err


def test_rerun_after_success_is_a_no_op_import(ws, outdir, engine, capsys, live):
    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    engine.calls.clear()
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    assert "up" not in ops(engine)  # providers exist now
    assert "already in the stack's state with the same ID" in capsys.readouterr().out


# --- refusals (exit 2, the engine never called) ----------------------------------------------

def refused(ws, out, engine, capsys, needle: str, *extra: str) -> None:
    rc = apply(engine, ws, out, *extra)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert needle in err, err
    assert engine.calls == []


def test_refuses_a_stale_program(ws, outdir, engine, capsys):
    from helpers import edit

    out = outdir / "h100.json"
    generate(ws, out, "--id", f"{DNS}={RECORD_ID}")
    edit(ws / "clusters" / f"{STACK}.yaml", ("kueue: {cluster_queue: training-cq}",
                                             "kueue: {cluster_queue: research-cq}"))
    refused(ws, out, engine, capsys,
            "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue 'training-cq' is not declared by the program now",
            "--confirm-digest", "000000000000")


def test_refuses_an_edited_id(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    edit_json(out, lambda d: entry(d, "cwdemo-h100").update(id="someone-elses-pool"))
    refused(ws, out, engine, capsys,
            "id is 'someone-elses-pool' in the file, the program declares 'cwdemo-h100'")


def test_refuses_an_edited_placeholder_id_of_the_wrong_form(ws, outdir, engine, capsys):
    out = outdir / "dns.json"
    generate(ws, out, "--only", "dns", "--id", f"{DNS}={RECORD_ID}")
    edit_json(out, lambda d: entry(d, DNS).update(id="ffffffffffffffffffffffffffffffff/abc"))
    refused(ws, out, engine, capsys, "does not have the declared form")


def test_refuses_an_edited_logical_name(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    edit_json(out, lambda d: entry(d, "cwdemo-h100").update(logicalName="cwdemo-h100-old"))
    refused(ws, out, engine, capsys,
            "logicalName is 'cwdemo-h100-old' in the file, the program declares 'cwdemo-h100'")


def test_refuses_a_renamed_entry(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")

    def rename(d):
        e = entry(d, "cwdemo-h100")
        e.update(name="pool_x", logicalName="pool-x")
    edit_json(out, rename)
    refused(ws, out, engine, capsys, "'pool-x' is not declared by the program now")


def test_refuses_a_missing_name_table_entry(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    edit_json(out, lambda d: d["nameTable"].pop("k8s_provider"))
    refused(ws, out, engine, capsys, "provider 'k8s_provider' has no entry in nameTable")


def test_refuses_a_changed_name_table(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    edit_json(out, lambda d: d["nameTable"].update(
        k8s_provider=f"urn:pulumi:{STACK}::clusterstack::pulumi:providers:kubernetes::default"))
    refused(ws, out, engine, capsys, "nameTable 'k8s_provider' is")


def test_refuses_a_missing_parent(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    edit_json(out, lambda d: d.update(resources=[e for e in d["resources"] if not e.get("component")]))
    refused(ws, out, engine, capsys, "parent 'nodepools' is neither in nameTable nor an entry")


def test_refuses_a_placeholder_left(ws, outdir, engine, capsys):
    out = outdir / "h100.json"
    generate(ws, out)
    refused(ws, out, engine, capsys, f"cloudflare:index/dnsRecord:DnsRecord '{DNS}' still has no ID")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o660, 0o604])
def test_refuses_a_wrong_mode(ws, outdir, engine, capsys, mode):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    os.chmod(out, mode)
    refused(ws, out, engine, capsys, f"mode {mode:04o}")


def test_refuses_a_path_inside_the_repository(ws, outdir, engine, capsys):
    out = outdir / "pools.json"
    generate(ws, out, "--only", "nodepools")
    inside = ws / "pools.json"
    inside.write_bytes(out.read_bytes())
    os.chmod(inside, 0o600)
    refused(ws, inside, engine, capsys, "inside the repository")
    link = outdir / "link.json"  # a symlink outside pointing inside
    link.symlink_to(inside)
    refused(ws, link, engine, capsys, "via symlinks")


def test_refuses_a_missing_or_malformed_file(ws, outdir, engine, capsys):
    refused(ws, outdir / "nope.json", engine, capsys, "no such file")
    bad = outdir / "bad.json"
    bad.write_text('{"resources": [{"type": "x", "name": "a", "id": 5}]}')
    os.chmod(bad, 0o600)
    refused(ws, bad, engine, capsys, "resources.0.id")


def test_entry_differences_for_ids_the_config_cannot_give():
    from clusterstack.imports.apply import entry_differences
    from clusterstack.pulumi.importfile import PLACEHOLDER, ImportEntry

    fresh = ImportEntry(type="t", name="n", logical_name="l", id=PLACEHOLDER, provider="p")
    supplied = replace(fresh, id="projects/p/zones/z/networkEndpointGroups/neg/vm/10.0.0.7/80")
    # a value only the deployment knows (an Output unknown offline): any supplied ID is taken
    assert entry_differences(supplied, fresh, PLACEHOLDER) == []
    # a template: the supplied ID must have its form
    assert entry_differences(replace(fresh, id=f"{ZONE}/abc"), fresh, f"{ZONE}/<record_id>") == []
    assert entry_differences(replace(fresh, id="other/abc"), fresh, f"{ZONE}/<record_id>") == [
        f"id 'other/abc' does not have the declared form '{ZONE}/<record_id>'"]
    # a derived ID must be equal
    derived = replace(fresh, id="cwdemo-h100")
    assert entry_differences(replace(derived, id="x"), derived, "cwdemo-h100") == [
        "id is 'x' in the file, the program declares 'cwdemo-h100'"]
    assert entry_differences(replace(derived, provider="q"), derived, "cwdemo-h100") == [
        "provider is 'q' in the file, the program declares 'p'"]


def test_an_immediate_re_run_is_harmless(ws, outdir, engine, capsys, live):
    # import.go plans `same` for every entry already in state under its ID and `--json` shows no
    # sames: the re-run sees no step for any entry, imports nothing and passes its final check
    out = outdir / "h100.json"
    digest = generate(ws, out, "--id", f"{DNS}={RECORD_ID}")
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    capsys.readouterr()
    n_imports = ops(engine).count("import_file")
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 0
    text = capsys.readouterr().out
    assert ops(engine).count("import_file") == n_imports
    assert "nothing to import" in text


# --- the object found must have what cannot change in place --------------------------------------

GCP = "gcp-demo"
INGRESS_ID = "projects/demo-project/regions/us-central1/addresses/controller-ingress"
RELAY_ID = "projects/demo-project/regions/us-east5/addresses/log-relay"


def gcp_engine(ws: Path, cloud: dict) -> FakeEngine:
    from clusterstack.plan import plan_stack

    plan = plan_stack(ws / "infra", GCP)
    return FakeEngine({GCP: FakeStack(steps=tuple(Step(op="create", urn=r.urn, type=r.type) for r in plan.resources),
                                      cloud=cloud)})


def gcp_apply(engine: FakeEngine, ws: Path, out: Path, digest: str, *extra: str) -> int:
    return main(["--root", str(ws), "import", "apply", GCP, "--file", str(out), "--confirm-digest", digest[:12],
                 *extra], clients=fake_clients(engine=engine))


def gcp_world(example_plans, tmp_path: Path) -> list[str]:
    """The project runs the shipped config: its addresses hold 34.16.10.20 and .21."""
    return dump_args(write_world(example_plans[GCP], tmp_path / "gcp-live"))


def test_an_address_whose_ip_the_config_changed_is_refused_before_anything_is_imported(
        ws, outdir, capsys, example_plans, tmp_path):
    from helpers import edit

    # the cloud's addresses, as the provider reads them (terraform-provider-google flattens
    # `address` unchanged); the config said 34.16.10.20 when the file was generated and reviewed
    cloud = {INGRESS_ID: {"name": "controller-ingress", "address": "34.16.10.20", "addressType": "EXTERNAL",
                          "region": "us-central1"},
             RELAY_ID: {"name": "log-relay", "address": "34.16.10.21", "addressType": "EXTERNAL"}}
    out = outdir / "addresses.json"
    rc = main(["--root", str(ws), "import", "generate", GCP, "-o", str(out), "--only", "addresses"])
    assert rc == 0
    digest = parse(out.read_text()).digest()
    edit(ws / "clusters" / "gcp-demo.yaml", ("address: 34.16.10.20", "address: 34.16.10.99"))
    engine = gcp_engine(ws, cloud)
    live = gcp_world(example_plans, tmp_path)
    capsys.readouterr()
    # 1. the adoption report sees it first: `address` is ForceNew, the first `up` would replace
    assert gcp_apply(engine, ws, out, digest, *live) == 3
    text = capsys.readouterr()
    assert "REPLACE    projects/demo-project/regions/us-central1/addresses/controller-ingress" in text.out
    assert "address: \"34.16.10.20\" → \"34.16.10.99\"" in text.out
    assert "replace: projects/demo-project/regions/us-central1/addresses/controller-ingress " \
           "[address_controller_ingress]: address" in text.err and "nothing was imported" in text.err
    assert ops(engine) == []
    # 2. confirmed anyway: the import preview still refuses it (the object the import finds
    # has another value of a field that cannot change in place)
    assert gcp_apply(engine, ws, out, digest, *live, "--accept", "address_controller_ingress") == 2
    err = capsys.readouterr().err
    assert "controller-ingress: the cloud's object has address '34.16.10.20', the program declares " \
           "'34.16.10.99'" in err and "nothing was imported" in err
    assert "import_file" not in ops(engine) and not any(r.get("protect") for r in engine.state(GCP).values())


def test_addresses_that_match_the_config_are_adopted(ws, outdir, capsys, example_plans, tmp_path):
    cloud = {INGRESS_ID: {"address": "34.16.10.20", "addressType": "EXTERNAL"},
             RELAY_ID: {"address": "34.16.10.21"}}
    out = outdir / "addresses.json"
    assert main(["--root", str(ws), "import", "generate", GCP, "-o", str(out), "--only", "addresses"]) == 0
    engine = gcp_engine(ws, cloud)
    assert gcp_apply(engine, ws, out, parse(out.read_text()).digest(), *gcp_world(example_plans, tmp_path)) == 0
    assert "import_file" in ops(engine)


# --- the adoption report gates the import -------------------------------------------------------

def refused_pc(example_plans, tmp_path):
    plan = example_plans[STACK]
    pc = next(r for r in plan.resources if r.type == tokens.PRIORITY_CLASS)

    def older(_r, live):
        return {**live, "value": 10000}
    return pc, dump_args(write_world(plan, tmp_path / "pc-live", edit={pc.urn: older}))


def test_apply_refuses_until_every_change_is_accepted_by_name(ws, outdir, engine, capsys, example_plans, tmp_path):
    pc, live = refused_pc(example_plans, tmp_path)
    out = outdir / "h100.json"
    digest = generate(ws, out, "--id", f"{DNS}={RECORD_ID}")
    capsys.readouterr()
    assert apply(engine, ws, out, *live, "--confirm-digest", digest[:12]) == 3
    text = capsys.readouterr()
    assert "1 refused" in text.out and "REFUSED    PriorityClass" in text.out
    assert "refused: PriorityClass" in text.err and "--accept priorityclass_" in text.err
    assert ops(engine) == []                              # nothing reached the engine
    # a typo or a no-op cannot confirm anything
    assert apply(engine, ws, out, *live, "--accept", "priorityclass_typo", "--confirm-digest", digest[:12]) == 2
    assert "no object of the report has this name" in capsys.readouterr().err
    assert apply(engine, ws, out, *live, "--accept", "nodepool_cwdemo_h100", "--confirm-digest", digest[:12]) == 2
    assert "is no-op: nothing to confirm" in capsys.readouterr().err
    name = next(line.split("[")[1].split("]")[0] for line in text.out.splitlines() if line.startswith("REFUSED"))
    assert apply(engine, ws, out, *live, "--accept", name, "--confirm-digest", digest[:12]) == 0
    assert "(accepted)" in capsys.readouterr().out
    assert "import_file" in ops(engine)


def test_apply_without_dumps_reads_the_live_objects_through_the_adapters(ws, outdir, engine, capsys):
    # the demo's kube context is not in any kubeconfig here: every object is unverified, so
    # nothing is proven and the import waits for confirmations
    from fakes.clients import fake_clients

    out = outdir / "pools.json"
    digest = generate(ws, out, "--only", "nodepools")
    rc = main(["--root", str(ws), "import", "apply", STACK, "--file", str(out), "--confirm-digest", digest[:12]],
              clients=fake_clients(engine=engine).replace(kubernetes=_no_kubeconfig))
    assert rc == 3
    text = capsys.readouterr()
    assert "2 unverified" in text.out and "cannot read cluster" in text.out
    assert ops(engine) == []


def _no_kubeconfig(context):
    from clusterstack.adapters.kubernetes import KubeconfigError

    raise KubeconfigError(f"cannot use kube context {context!r} of kubeconfig /nonexistent")


def test_report_live_that_cannot_use_the_kube_context_is_exit_2(ws, capsys):
    # `--live` asked for the cluster's objects: an unusable kube context is a failed read (exit 2,
    # as for `import generate --live` and `verify`), not a report of every object unverified
    from fakes.clients import fake_clients

    rc = main(["--root", str(ws), "import", "report", STACK, "--live"],
              clients=fake_clients().replace(kubernetes=_no_kubeconfig))
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert f"--live: cannot read cluster {STACK}: cannot use kube context" in cap.err
    assert "Traceback" not in cap.err
