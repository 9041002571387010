"""Marin's services move too: ``examples/marin/services.yaml`` registers what ``marin-deploy``
deploys, value for value, and every ``marin-deploy`` command runs as ``clusterstack deploy``
end to end against the fakes (the Pulumi engine, Secret Manager, Cloud Run, Compute Engine, the
Kubernetes API server) in a stand-in Marin checkout.

The stand-in: ``examples/marin`` copied, Marin's published cluster configs
(``../shared/reference/marin``) in ``lib/iris/config`` for the kube contexts, and Marin's service
projects as :mod:`marin.checkout` writes them (``Pulumi.yaml`` and the stack files — the
programs are Marin's and never run here: the engine is the fake). Each expected value below cites the Marin file and commit it comes from.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from ruamel.yaml import YAML

from clusterstack.adapters.gcp import CloudRunClients, GcpClients
from clusterstack.cli import main
from deploy_support import kube_client
from fakes.clients import bound_engine, fake_clients
from fakes.gcp_api import FakeGcp, FakeSecretManager
from fakes.kubernetes_api import FakeKubernetes
from fakes.pulumi import FakeEngine, FakeStack, res_step
from helpers import REPO, git
from marin.checkout import KMS, add_service_projects
from marin.counts import CONFIGS

CF_SECRET = "projects/hai-gcp-models/secrets/cloudflare-oa-dns-token/versions/latest"
CF = f"gcp-secret://{CF_SECRET}"

# infra/deploy/src/marin_deploy/pulumi.py@3cbaec2b and @9c36bfbd, PULUMI_SERVICES (name, stack,
# secret_environment); GCP_PROJECT = "hai-gcp-models"; CLOUDFLARE_API_TOKEN = SecretEnvironment(
# variable="CLOUDFLARE_API_TOKEN", secret="cloudflare-oa-dns-token"), read as `gcloud secrets
# versions access latest`; project_directory = infra/<name>
MARIN_DEPLOY_PULUMI_SERVICES = {
    "ducky": ("ducky-marin", {}),
    "echo": ("marin-echo", {"CLOUDFLARE_API_TOKEN": CF}),
    "evaldash": ("marin-evaldash", {"CLOUDFLARE_API_TOKEN": CF}),
    "grafana": ("marin-grafana", {"CLOUDFLARE_API_TOKEN": CF}),
    "loom": ("marin-loom", {"CLOUDFLARE_API_TOKEN": CF}),
    "xprof": ("xprof-marin", {}),
}
# the platform each one runs on, as its program declares it
TARGETS = {
    "ducky": "stack ducky-marin",              # IrisService job: infra/ducky/__main__.py@2a2db55f
    "xprof": "stack xprof-marin",              # IrisService job: infra/xprof/__main__.py@06ebf845
    # infra/echo/__main__.py@1b52ee73 PROJECT, REGION, API_SERVICE; job_name echo-sync
    "echo": "hai-gcp-models/us-central1/echo-api",
    "echo-sync": "hai-gcp-models/us-central1/jobs/echo-sync",
    "evaldash": "hai-gcp-models/us-central1/marin-evaldash",   # infra/evaldash/__main__.py@049d5495
    "grafana": "hai-gcp-models/us-central1/marin-grafana",     # infra/grafana/__main__.py@004f4a55
    # infra/loom/Pulumi.marin-loom.yaml@002b940b zone, instanceName; infrastructure.py@002b940b loom-image
    "loom": "hai-gcp-models/us-central1-a/loom (loom-image, restart)",
    # lib/finelog/config/marin.yaml@032da538 (deployment.gcp.zone, name)
    "finelog-marin": "hai-gcp-models/us-central1-a/finelog-marin (clusterstack-image, watch)",
}
# marin_deploy/finelog.py@52e58bb8: `finelog rollout|rollback <name>` on the Kubernetes stack
# <name> of infra/finelog (Pulumi.<name>.yaml@1435a05c / @788296ea: finelog:cluster); the
# Deployment is lib/finelog/config/<name>.yaml's name in deployment.k8s.namespace
FINELOG_K8S = {
    "cw-rno2a": ("finelog-cw-rno2a", "iris"),         # lib/finelog/config/cw-rno2a.yaml@1f052168
    "cw-us-east-02a": ("finelog-cw-use02a", "iris"),  # lib/finelog/config/cw-us-east-02a.yaml@06889c32
    "cw-us-east-08a": ("finelog-cw-use08a", "iris"),  # lib/finelog/config/cw-us-east-08a.yaml@2718f8b5
}
# each cluster's kube context (lib/iris/config/<cluster>.yaml kubernetes_provider.kube_context,
# ../shared/reference/marin SOURCE.md commits; cw-us-east-08a's also in its finelog config @2718f8b5)
KUBE_CONTEXTS = {"cw-rno2a": "marin-rn02a_RNO2A", "cw-us-east-02a": "marin-gpu_US-EAST-02A",
                 "cw-us-east-08a": "marin-us-east-08a_US-EAST-08A"}
IMG = "us-central1-docker.pkg.dev/hai-gcp-models/%s/%s@sha256:%064x"


@pytest.fixture
def marin(tmp_path: Path) -> Path:
    """A stand-in Marin checkout (module docstring), committed on main."""
    if not CONFIGS.is_dir():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    root = tmp_path / "marin"
    shutil.copytree(REPO / "examples" / "marin", root, ignore=shutil.ignore_patterns("__pycache__"))
    for f in CONFIGS.glob("*.yaml"):
        shutil.copy(f, root / "lib" / "iris" / "config" / f.name)
    add_service_projects(root)
    (root / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a Marin checkout with clusterstack")
    return root


def listing(root: Path, capsys) -> dict[str, dict]:
    assert main(["--root", str(root), "deploy", "list", "--json"], clients=fake_clients()) == 0
    return {r["service"]: r for r in json.loads(capsys.readouterr().out)["services"]}


def test_every_marin_deploy_service_is_registered_with_its_stack_and_secret_environment(marin, capsys):
    rows = listing(marin, capsys)
    registry = YAML(typ="safe").load((marin / "services.yaml").read_text())["services"]
    for name, (stack, secrets) in MARIN_DEPLOY_PULUMI_SERVICES.items():
        assert rows[name]["project_dir"] == f"infra/{name}" and rows[name]["stack"] == stack, name
        assert registry[name].get("secrets", {}) == secrets, name
    for cluster, (deployment, namespace) in FINELOG_K8S.items():
        row = rows[f"finelog-{cluster}"]
        assert (row["kind"], row["project_dir"], row["stack"]) == ("kubernetes", "infra/finelog", cluster)
        assert row["target"] == f"{KUBE_CONTEXTS[cluster]}/{namespace}/{deployment}"
    for name, target in TARGETS.items():
        assert rows[name]["target"] == target, name
    assert set(rows) == set(MARIN_DEPLOY_PULUMI_SERVICES) | set(TARGETS) | {f"finelog-{c}" for c in FINELOG_K8S}


def test_the_kinds_are_what_the_programs_run(marin, capsys):
    kinds = {name: row["kind"] for name, row in listing(marin, capsys).items()}
    assert kinds == {"ducky": "pulumi", "xprof": "pulumi", "echo": "cloud-run", "evaldash": "cloud-run",
                     "grafana": "cloud-run", "echo-sync": "cloud-run-job", "loom": "gce-vm",
                     "finelog-marin": "gce-vm", **{f"finelog-{c}": "kubernetes" for c in FINELOG_K8S}}


# --- `marin-deploy <service> rollout [--yes] [--config K=V]…` ------------------------------------

def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rollout_of_an_iris_job_with_config_on_a_temporary_copy(marin, capsys, monkeypatch):
    # `marin-deploy ducky rollout --yes --config ducky:deploy_generation=1` (pulumi.py@3cbaec2b _rollout)
    eng = FakeEngine({"ducky-marin": FakeStack(steps=(res_step("update", "ducky-marin", "command:local:Command",
                                                               "ducky-job"),))})
    stack_file = marin / "infra" / "ducky" / "Pulumi.ducky-marin.yaml"
    before = sha(stack_file)
    code = main(["--root", str(marin), "deploy", "ducky", "rollout", "--yes", "--config", "deploy_generation=1"],
                clients=fake_clients(engine=bound_engine(eng)))
    assert code == 0, capsys.readouterr().err
    assert sha(stack_file) == before and git(marin, "status", "--porcelain") == ""
    (bound,) = [kw for op, _, kw in eng.calls if op == "bind"]
    assert bound["project_dir"] == marin / "infra" / "ducky" and not Path(bound["config_file"]).exists()
    assert YAML(typ="safe").load(bound["config_text"])["config"]["ducky:deploy_generation"] == "1"
    assert YAML(typ="safe").load(bound["config_text"])["secretsprovider"] == KMS   # the copy keeps the provider
    assert [op for op, _, _ in eng.calls if op in ("preview", "up", "refresh")] == ["preview", "up"]


def cloud_run_world(service: str, *, project: str = "hai-gcp-models") -> FakeGcp:
    srv = FakeGcp(project=project, region="us-central1", service=service)
    revs = [{"n": n, "image": IMG % (service, service, n), "commit": f"{n:x}" * 40, "message": f"{service} {n}"}
            for n in (1, 2, 3)]
    return srv.seed(revs, [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}])


def gcp_clients(srv: FakeGcp) -> dict:
    g = GcpClients(api_endpoint=srv.url, credentials=AnonymousCredentials())
    return {"gcp": g, "cloud_run": lambda: CloudRunClients(*g.cloud_run().__dict__.values())}


def test_rollout_of_a_cloud_run_service_resolves_the_cloudflare_token_and_verifies(marin, capsys, monkeypatch):
    # `marin-deploy echo rollout --yes` with `--config marin-echo:custom_domain=…` (pulumi.py@3cbaec2b)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    sm = FakeSecretManager({CF_SECRET: "cf-token-5e1d"})
    eng = FakeEngine({"marin-echo": FakeStack(steps=(res_step("update", "marin-echo", "gcp:cloudrunv2/service:Service",
                                                              "api-service"),))})
    stack_file = marin / "infra" / "echo" / "Pulumi.marin-echo.yaml"
    before = sha(stack_file)
    with cloud_run_world("echo-api") as srv:
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: sm, **gcp_clients(srv))
        code = main(["--root", str(marin), "deploy", "echo", "rollout", "--yes",
                     "--config", "custom_domain=echo2.oa.dev", "-m", "echo: new api"], clients=clients)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert srv.writes() == []   # a rollout only reads the service it verifies
    assert out.startswith("::add-mask::cf-token-5e1d\n")   # masked before anything is printed
    assert sm.names == [CF_SECRET]
    (bound,) = [kw for op, _, kw in eng.calls if op == "bind"]
    assert bound["env"] == {"CLOUDFLARE_API_TOKEN": "cf-token-5e1d"}
    assert YAML(typ="safe").load(bound["config_text"])["config"]["marin-echo:custom_domain"] == "echo2.oa.dev"
    assert sha(stack_file) == before
    assert "echo: revision 3 (echo-api-00003-dxq) is serving and healthy" in out


def test_rollout_without_the_token_stops_before_anything_runs(marin, capsys):
    from google.api_core import exceptions as gexc

    sm = FakeSecretManager()
    sm.access_error = gexc.PermissionDenied("Permission 'secretmanager.versions.access' denied")
    eng = FakeEngine({"marin-grafana": FakeStack()})
    code = main(["--root", str(marin), "deploy", "grafana", "rollout", "--yes"],
                clients=fake_clients(engine=bound_engine(eng), secret_manager=lambda: sm))
    assert code == 2
    assert "secret CLOUDFLARE_API_TOKEN (gcp-secret://projects/hai-gcp-models/secrets/cloudflare-oa-dns-token" \
           in capsys.readouterr().err
    assert [op for op, _, _ in eng.calls if op != "bind"] == []


# --- rollback / history of the Cloud Run services (marin-deploy had none; Marin's own
#     iac/gcp/cloud_run_rollback.py@08b616a1 moves 100 % of traffic with the etag) -------------

def test_history_and_rollback_of_grafana(marin, capsys):
    with cloud_run_world("marin-grafana") as srv:
        eng = FakeEngine({"marin-grafana": FakeStack()})
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager({CF_SECRET: "t"}),
                               **gcp_clients(srv))
        assert main(["--root", str(marin), "deploy", "grafana", "history", "--json"], clients=clients) == 0
        revs = json.loads(capsys.readouterr().out)["revisions"]
        assert [(r["revision"], r["serving"]) for r in revs] == [(3, True), (2, False), (1, False)]
        code = main(["--root", str(marin), "deploy", "grafana", "rollback", "--to-revision", "1", "--yes"],
                    clients=clients)
        assert code == 0, capsys.readouterr().err
        assert srv.serving() == {srv.revision_name(1): 100}
    assert [op for op, _, _ in eng.calls if op != "bind"] == ["refresh"]


# --- `marin-deploy finelog rollout|rollback <cluster> [--to-revision N] [--yes]` ---------------

def finelog_world(cluster: str) -> FakeKubernetes:
    name, namespace = FINELOG_K8S[cluster]
    img = "ghcr.io/marin-community/finelog@sha256:%064x"
    revs = [{"revision": n, "image": img % n, "commit": f"{n:x}" * 40, "health": "healthy", "message": f"finelog {n}"}
            for n in (1, 2, 3)]
    return FakeKubernetes(namespace=namespace, name=name).seed(revs, serving=3)


def kube_for(cluster: str, url: str):
    def make(context: str):
        assert context == KUBE_CONTEXTS[cluster]   # the cluster config's context, not a default
        return kube_client(url)
    return make


def test_finelog_rollback_to_a_revision_on_its_cluster(marin, capsys, monkeypatch):
    monkeypatch.setenv("R2_KEY_ID", "r2-id")
    monkeypatch.setenv("R2_KEY_SECRET", "r2-secret")
    eng = FakeEngine({"cw-rno2a": FakeStack()})
    with finelog_world("cw-rno2a") as srv:
        clients = fake_clients(engine=bound_engine(eng), kubernetes=kube_for("cw-rno2a", srv.url))
        assert main(["--root", str(marin), "deploy", "finelog-cw-rno2a", "history", "--json"], clients=clients) == 0
        revs = json.loads(capsys.readouterr().out)["revisions"]
        assert [(r["revision"], r["serving"]) for r in revs] == [(3, True), (2, False), (1, False)]
        code = main(["--root", str(marin), "deploy", "finelog-cw-rno2a", "rollback", "--to-revision", "1", "--yes"],
                    clients=clients)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert srv.deployment["spec"]["template"]["spec"]["containers"][0]["image"].endswith("%064x" % 1)
    refresh = [(op, kw) for op, _, kw in eng.calls if op == "refresh"]
    assert refresh == [("refresh", {"preview_only": False})]
    binds = [kw for op, _, kw in eng.calls if op == "bind"]
    assert {b["project_dir"] for b in binds} == {marin / "infra" / "finelog"}
    assert binds[-1]["env"] == {"R2_KEY_ID": "r2-id", "R2_KEY_SECRET": "r2-secret"}   # the refresh's env


def test_finelog_rollout_needs_the_archive_keys_of_the_deploy_shell(marin, capsys, monkeypatch):
    monkeypatch.delenv("R2_KEY_ID", raising=False)
    eng = FakeEngine({"cw-us-east-08a": FakeStack()})
    code = main(["--root", str(marin), "deploy", "finelog-cw-us-east-08a", "rollout", "--yes"],
                clients=fake_clients(engine=bound_engine(eng)))
    assert code == 2 and "secret R2_KEY_ID (env:R2_KEY_ID)" in capsys.readouterr().err
    assert [op for op, _, _ in eng.calls if op != "bind"] == []


# --- the GCE services: finelog-marin (`finelog rollout marin`) and loom -------------------------

class VmEngine(FakeEngine):
    """The fake engine whose update also does what the GCP provider's update of the VM does:
    ``instances.setMetadata`` with the program's metadata (image, commit, message) — the keys
    GceVmService declares, the record kept (``ignore_changes``)."""

    def __init__(self, vm, stacks):
        super().__init__(stacks)
        self.vm = vm

    def up(self, stack, **kw):
        result = super().up(stack, **kw)
        config = YAML(typ="safe").load(Path(self.config_file).read_text())["config"]
        self.vm.set_items({**self.vm.items, "clusterstack-image": config["finelog-gce:image"],
                           "clusterstack-source-revision": config["finelog-gce:sourceRevision"],
                           "clusterstack-change-cause": config["finelog-gce:changeCause"]})
        return result


def test_finelog_marin_rollout_pins_the_image_refreshes_first_and_records_the_revision(marin, capsys):
    image = "ghcr.io/marin-community/finelog@sha256:" + "%064x" % 7
    with FakeGcp(project="hai-gcp-models") as srv:
        vm = srv.add_vm("hai-gcp-models", "us-central1-a", "finelog-marin",
                        image="ghcr.io/marin-community/finelog@sha256:" + "%064x" % 6)
        eng = VmEngine(vm, {"marin": FakeStack(steps=(res_step("update", "marin", "gcp:compute/instance:Instance",
                                                                "finelog"),))})
        clients = fake_clients(engine=bound_engine(eng), **gcp_clients(srv))
        code = main(["--root", str(marin), "deploy", "finelog-marin", "rollout", "--yes",
                     "--config", f"image={image}", "-m", "finelog 7"], clients=clients)
        out, err = capsys.readouterr()
        assert code == 0, err
        record = json.loads(vm.items["clusterstack-revisions"])
    assert [op for op, _, _ in eng.calls if op in ("refresh", "preview", "up")] == ["refresh", "preview", "up", "refresh"]
    head = git(marin, "rev-parse", "HEAD")
    assert record == [{"revision": 1, "image": image, "commit": head, "message": "finelog 7",
                       "time": record[0]["time"], "health": "healthy"}]
    assert "finelog-marin: revision 1 (finelog@sha256:000000000000) is serving and healthy" in out


def test_loom_rollback_sets_its_key_and_restarts_the_vm(marin, capsys):
    img = "us-central1-docker.pkg.dev/hai-gcp-models/loom/loom@sha256:%064x"
    with FakeGcp(project="hai-gcp-models") as srv:
        record = json.dumps([{"revision": n, "image": img % n, "commit": f"{n:x}" * 40, "message": f"loom {n}",
                              "time": f"2025-03-0{n}T10:00:00Z", "health": "healthy"} for n in (1, 2)])
        vm = srv.add_vm("hai-gcp-models", "us-central1-a", "loom", image=img % 2, image_key="loom-image",
                        activation="restart", items={"clusterstack-revisions": record})
        # the registry's readiness URL is loom.oa.dev's; here the fake VM's (the only edit)
        registry = marin / "services.yaml"
        registry.write_text(registry.read_text().replace("https://loom.oa.dev/api/ready",
                                                         f"{srv.url}/vm/loom/api/ready"))
        eng = FakeEngine({"marin-loom": FakeStack()})
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager({CF_SECRET: "t"}),
                               **gcp_clients(srv))
        code = main(["--root", str(marin), "deploy", "loom", "rollback", "--yes"], clients=clients)
        assert code == 0, capsys.readouterr().err
        assert vm.items["loom-image"] == img % 1 and vm.running == img % 1
        steps = [p.rsplit("/", 1)[-1] for m, p in srv.requests if m == "POST" and "/instances/loom/" in p]
        assert steps[:3] == ["setMetadata", "stop", "start"]
    assert [op for op, _, _ in eng.calls if op != "bind"] == ["refresh"]


# --- the Cloud Run job (echo-sync) --------------------------------------------------------------

def test_echo_sync_rollback_patches_the_job_template(marin, capsys):
    with FakeGcp(project="hai-gcp-models") as srv:
        job = "projects/hai-gcp-models/locations/us-central1/jobs/echo-sync"
        revs = [{"image": IMG % ("echo", "echo-sync", n), "commit": f"{n:x}" * 40} for n in (1, 2)]
        srv.add_job(job, revisions=revs, schedule_runs=[(0, "succeeded"), (1, "failed")])
        eng = FakeEngine({"marin-echo": FakeStack()})
        clients = fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager({CF_SECRET: "t"}),
                               **gcp_clients(srv))
        code = main(["--root", str(marin), "deploy", "echo-sync", "rollback", "--yes"], clients=clients)
        assert code == 0, capsys.readouterr().err
        assert srv.jobs[job]["template"]["template"]["containers"][0]["image"] == IMG % ("echo", "echo-sync", 1)
        assert not any(p.endswith(":run") for _, p in srv.requests)   # max_retries 0: never replayed


# --- one side owns each Cloud Run grant ----------------------------------------------------------

IAM = """\
schema_version: 1
project: hai-gcp-models
encryption:
  scheme: tink-daead-aes256-siv
  keyset: .iam/keyset.json
principals: {}
cloud_run_services:
  - location: us-central1
    name: echo-api
    grants:
      - role: roles/run.developer
        members: [serviceAccount:deploy@hai-gcp-models.iam.gserviceaccount.com]
      - role: roles/run.invoker
        members: [serviceAccount:service-748532799086@gcp-sa-iap.iam.gserviceaccount.com]
cloud_run_jobs:
  - location: us-central1
    name: echo-sync
    grants:
      - role: roles/run.invoker
        members: [serviceAccount:echo-sync@hai-gcp-models.iam.gserviceaccount.com]
"""


def test_a_grant_the_service_stack_owns_is_refused_in_the_iam_file(marin, capsys):
    (marin / "iam").mkdir()
    (marin / "iam" / "iam.yaml").write_text(IAM)
    eng = FakeEngine({"marin-echo": FakeStack()})
    code = main(["--root", str(marin), "deploy", "echo", "rollout", "--yes"],
                clients=fake_clients(engine=bound_engine(eng), secret_manager=lambda: FakeSecretManager({CF_SECRET: "t"})))
    err = capsys.readouterr().err
    assert code == 2
    # the invoker (the service's stack owns it) at its line; run.developer and the job's invoker
    # (echo-sync: stack_grants [] — the IAM file owns every grant on it) are the IAM file's
    assert "iam/iam.yaml:13: cloud_run_services[0].grants[1]: roles/run.invoker on run:us-central1/echo-api is " \
           "declared by the stack of service echo (services.yaml:25: stack_grants)" in err
    assert "run.developer" not in err and "echo-sync" not in err
    assert [op for op, _, _ in eng.calls if op != "bind"] == []


def test_the_ownership_rule_runs_in_iam_check(marin):
    from clusterstack.validation.ownership import stack_grant_problems
    from clusterstack.iam.loader import load_iam
    from clusterstack.validation.iam import check_rules
    from clusterstack.workspace import Workspace

    (marin / "iam").mkdir()
    (marin / "iam" / "iam.yaml").write_text(IAM)
    ws = Workspace.load(marin)
    loaded = load_iam(marin / "iam" / "iam.yaml")
    found = [p for rule in check_rules(ws) for p in rule(loaded)]
    assert [(p.line, p.field) for p in stack_grant_problems(ws, loaded)] == [(13, "cloud_run_services[0].grants[1]")]
    assert [(p.line, p.field) for p in found if "stack of service" in p.message] == [(13, "cloud_run_services[0].grants[1]")]


def test_loom_refusals_and_a_failed_rollback_exit_as_documented(marin, capsys):
    """docs/rolling-back.md §3: a bad --to-revision is refused (exit 2, nothing changed); a target
    that never becomes ready is restored (exit 1, "failed and restored")."""
    img = "us-central1-docker.pkg.dev/hai-gcp-models/loom/loom@sha256:%064x"
    with FakeGcp(project="hai-gcp-models") as srv:
        record = json.dumps([{"revision": n, "image": img % n, "commit": f"{n:x}" * 40, "message": f"loom {n}",
                              "time": f"2025-03-0{n}T10:00:00Z", "health": h}
                             for n, h in ((1, "healthy"), (2, "unhealthy"), (3, "healthy"))])
        vm = srv.add_vm("hai-gcp-models", "us-central1-a", "loom", image=img % 3, image_key="loom-image",
                        activation="restart", items={"clusterstack-revisions": record})
        registry = marin / "services.yaml"
        registry.write_text(registry.read_text().replace("https://loom.oa.dev/api/ready",
                                                         f"{srv.url}/vm/loom/api/ready"))
        clients = fake_clients(engine=bound_engine(FakeEngine({"marin-loom": FakeStack()})),
                               secret_manager=lambda: FakeSecretManager({CF_SECRET: "t"}), **gcp_clients(srv))
        for n, why in ((7, "revision 7 is not retained"), (2, "revision 2 is not known healthy")):
            code = main(["--root", str(marin), "deploy", "loom", "rollback", "--to-revision", str(n), "--yes"],
                        clients=clients)
            assert code == 2 and why in capsys.readouterr().err
        assert srv.writes() == []
        vm.broken = {img % 1}
        code = main(["--root", str(marin), "deploy", "loom", "rollback", "--yes", "--json"], clients=clients)
        out, err = capsys.readouterr()
        assert code == 1, err
        doc = json.loads(out)
        assert doc["outcome"] == "failed-restored" and doc["exit_code"] == 1
        assert vm.items["loom-image"] == img % 3 and vm.running == img % 3
        assert {e["revision"]: e["health"] for e in json.loads(vm.items["clusterstack-revisions"])}[1] == "unhealthy"
