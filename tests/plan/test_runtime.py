"""The offline plan: golden plans of the shipped examples, determinism, protection, no
environment and no secret resolution, URNs by the engine's rule, and the runtime's reset
between stacks."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sys
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest

from helpers import REPO, edit
from clusterstack import secrets
from clusterstack.config.secretspec import SecretSpec
from clusterstack.cli import main
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.plan import StackPlan, dumps, loads, plan_stack, run_program
from clusterstack.plan.model import FORMAT
from clusterstack.plan.runtime import CapturingMonitor
from clusterstack.pulumi.tokens import NODEPOOL as NODEPOOL_TYPE
from clusterstack.pulumi.values import SECRET
from clusterstack.workspace import ProjectInfo
from regen_golden import EXAMPLE_STACKS, golden_path

REPO = Path(__file__).resolve().parents[2]
REGEN = "run `.venv/bin/python tests/regen_golden.py` and review `git diff tests/golden`"


# ---------------------------------------------------------------------------------------
# Golden plans

@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_golden_plan(example_plans, stack):
    path = golden_path(stack)
    assert path.is_file(), f"no golden plan {path}: {REGEN}"
    actual = dumps([example_plans[stack]])
    assert actual == path.read_bytes().decode("utf-8"), (
        f"the plan of {stack} differs from {path}; if the change is intended, {REGEN}")


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_golden_round_trips(stack):
    text = golden_path(stack).read_text(encoding="utf-8")
    assert dumps(loads(text)) == text


@pytest.fixture(scope="module")
def plan_all_json_runs(plan_all_output) -> list[str]:
    """stdout of two runs of `clusterstack plan --all --json` on the repository (the first
    shared with the other modules that read it, the second run here)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--root", str(REPO), "plan", "--all", "--json"]) == 0
    return [plan_all_output("--json"), buf.getvalue()]


def test_plan_all_json_is_byte_identical_and_matches_the_goldens(plan_all_json_runs):
    first, second = plan_all_json_runs
    assert first == second
    plans = {p.stack: p for p in loads(first)}
    for stack in EXAMPLE_STACKS:  # the goldens were written by another process
        assert dumps([plans[stack]]) == golden_path(stack).read_text(encoding="utf-8"), REGEN


def test_every_nodepool_in_the_plan_is_protected(plan_all_json_runs):
    pools = [r for p in loads(plan_all_json_runs[0]) for r in p.resources if r.type == NODEPOOL_TYPE]
    assert len(pools) >= 3
    assert [r.urn for r in pools if r.protect is not True] == []


def test_json_shape(example_plans):
    doc = json.loads(dumps(list(example_plans.values())))
    assert set(doc) == {"format", "stacks"} and doc["format"] == FORMAT
    assert [s["stack"] for s in doc["stacks"]] == sorted(EXAMPLE_STACKS)
    for s in doc["stacks"]:
        assert set(s) == {"project", "stack", "outputs", "resources"} and s["project"] == "clusterstack"
        urns = [r["urn"] for r in s["resources"]]
        assert urns == sorted(urns) and len(set(urns)) == len(urns)
        assert sum(r["type"] == "pulumi:pulumi:Stack" for r in s["resources"]) == 1
        for r in s["resources"]:
            assert {"urn", "type", "name", "custom", "parent", "provider", "inputs", "dependencies",
                    "options"} <= set(r)
            assert {"protect", "retainOnDelete", "ignoreChanges", "deleteBeforeReplace",
                    "importId"} <= set(r["options"])
            assert r["urn"].endswith(f"::{r['name']}")


# ---------------------------------------------------------------------------------------
# Only reviewed files: no PULUMI_CONFIG*, no provider defaults from the environment.

ENV = {
    "PULUMI_CONFIG": json.dumps({"clusterstack:cluster": "gcp-demo", "kubernetes:context": "other",
                                 "gcp:project": "other-project"}),
    "PULUMI_CONFIG_CLUSTERSTACK_CLUSTER": "gcp-demo",
    "PULUMI_CONFIG_SECRET_KEYS": json.dumps(["clusterstack:cluster"]),
    "GOOGLE_PROJECT": "other-project", "GOOGLE_REGION": "europe-west4", "GOOGLE_ZONE": "europe-west4-a",
    "PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY": "false", "KUBECONFIG": "/home/someone/.kube/config",
    "CLOUDFLARE_API_TOKEN": "cf-env-token-value",
}


def test_plan_ignores_pulumi_config_and_provider_environment(monkeypatch, repo_root):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    before = dict(os.environ)
    for stack in EXAMPLE_STACKS:
        text = dumps([plan_stack(repo_root / "infra", stack)])
        assert text == golden_path(stack).read_text(encoding="utf-8"), stack
        assert "cf-env-token-value" not in text and "europe-west4" not in text
    assert dict(os.environ) == before  # the environment is restored after each run


def test_a_stack_without_pointer_does_not_fall_back_to_the_environment(monkeypatch, workspace_copy):
    (workspace_copy / "infra" / "Pulumi.cw-demo-h100.yaml").write_text("config: {}\n", encoding="utf-8")
    monkeypatch.setenv("PULUMI_CONFIG_CLUSTERSTACK_CLUSTER", "cw-demo-h100")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"clusterstack:cluster": "cw-demo-h100"}))
    with pytest.raises(ClusterstackError, match="has no clusterstack:cluster config"):
        plan_stack(workspace_copy / "infra", "cw-demo-h100")


def test_program_sees_only_the_stack_file_config(monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG_PROJ_FROM_ENV", "leaked")
    seen = {}

    def program():
        cfg = pulumi.Config("proj")
        seen.update(key=cfg.get("key"), from_env=cfg.get("from_env"), home=os.environ.get("HOME"))
    run_program("proj", "s", {"proj:key": "v"}, program)
    assert seen == {"key": "v", "from_env": None, "home": None}
    assert os.environ["PULUMI_CONFIG_PROJ_FROM_ENV"] == "leaked"


# ---------------------------------------------------------------------------------------
# Secrets are never resolved offline.

# Resolving a spec would read its file (``open``) or reach Secret Manager (``socket.*``); the
# environment is empty while a program runs (hermetic_environ), so resolving an ``env:`` spec
# raises and the plan fails. Python's audit events (PEP 578) show what the plan touched,
# without replacing any of our functions.
_WATCHED_EVENTS = frozenset({"open", "socket.connect", "socket.getaddrinfo"})
_watches: list[list[tuple[str, str]]] = []
_hook_installed = False


def _audit(event: str, args: tuple) -> None:
    if _watches and event in _WATCHED_EVENTS:
        _watches[-1].append((event, os.fsdecode(args[0]) if isinstance(args[0], (str, bytes, os.PathLike))
                             else repr(args[0])))


@contextlib.contextmanager
def touched():
    """The files opened and the network look-ups/connections made inside the block."""
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_audit)      # cannot be removed: it records only while a block is open
        _hook_installed = True
    seen: list[tuple[str, str]] = []
    _watches.append(seen)
    try:
        yield seen
    finally:
        _watches.pop()


def _with_token(workspace_copy: Path, spec: str) -> None:
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml",
         ("api_token: gcp-secret://projects/demo-project/secrets/cloudflare-dns-token/versions/latest",
          f"api_token: {spec}"))


@pytest.mark.parametrize("spec", ["env:CLUSTERSTACK_TEST_UNSET_TOKEN", "file:/nonexistent/cloudflare-token"])
def test_unresolvable_secret_spec_still_plans(monkeypatch, workspace_copy, spec):
    monkeypatch.delenv("CLUSTERSTACK_TEST_UNSET_TOKEN", raising=False)
    _with_token(workspace_copy, spec)
    with touched() as seen:
        plan = plan_stack(workspace_copy / "infra", "cw-demo-h100")
    assert not [t for t in seen if "cloudflare-token" in t[1]]
    (provider,) = [r for r in plan.resources if r.type == "pulumi:providers:cloudflare"]
    assert provider.inputs == {"apiToken": SECRET}
    # The spec is not part of what the stack declares: the plan equals the shipped one.
    assert dumps([plan]) == golden_path("cw-demo-h100").read_text(encoding="utf-8")


def test_a_set_secret_value_never_reaches_the_plan(monkeypatch, workspace_copy):
    monkeypatch.setenv("CLUSTERSTACK_TEST_TOKEN", "real-token-value-42")
    _with_token(workspace_copy, "env:CLUSTERSTACK_TEST_TOKEN")
    text = dumps([plan_stack(workspace_copy / "infra", "cw-demo-h100")])
    assert "real-token-value-42" not in text and "CLUSTERSTACK_TEST_TOKEN" not in text


def test_a_secret_file_is_never_read_and_secret_manager_never_asked(workspace_copy, tmp_path):
    token = tmp_path / "cloudflare-token"
    token.write_text("real-token-value-42\n", encoding="utf-8")
    _with_token(workspace_copy, f"file:{token}")
    with touched() as seen:
        text = dumps([plan_stack(workspace_copy / "infra", "cw-demo-h100")])
    assert "real-token-value-42" not in text
    assert ("open", str(token)) not in seen
    # the shipped spec is a gcp-secret:// one: resolving it would call Secret Manager
    with touched() as seen:
        plan_stack(REPO / "infra", "cw-demo-h100")
    assert not [t for t in seen if t[0].startswith("socket.")]
    # the watch itself sees a read of that file
    with touched() as seen:
        secrets.resolve(SecretSpec.parse(f"file:{token}"))
    assert ("open", str(token)) in seen


def test_secure_stack_config_is_not_decrypted(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: svc\nruntime: python\n", encoding="utf-8")
    (tmp_path / "Pulumi.dev.yaml").write_text(
        "config:\n  svc:plain: hello\n  port: 8080\n  svc:password:\n    secure: v1:AAAABBBB\n", encoding="utf-8")
    config = ProjectInfo.load(tmp_path).stack_config("dev")
    assert config == {"svc:plain": "hello", "svc:port": "8080",
                      "svc:password": "<secure value, not decrypted offline>"}


# ---------------------------------------------------------------------------------------
# URNs follow the engine's rule (resource.NewURN): children of the root Stack carry no
# Stack prefix; nested components chain their qualified types with `$`.

class Outer(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("test:index:Outer", name, None, opts)
        Inner("inner", pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


class Inner(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("test:index:Inner", name, None, opts)
        p = k8s.Provider("inner-k8s", kubeconfig="", opts=pulumi.ResourceOptions(parent=self))
        k8s.core.v1.ConfigMap("cm", metadata={"name": "cm"}, data={"k": "v"},
                              opts=pulumi.ResourceOptions(parent=self, provider=p))
        self.register_outputs({})


def test_urns_of_nested_components():
    def program():
        k8s.core.v1.Namespace("top", opts=pulumi.ResourceOptions(
            provider=k8s.Provider("k8s", kubeconfig="")))
        Outer("outer")
    plan = run_program("proj", "dev", {}, program)
    u = "urn:pulumi:dev::proj::"
    by_name = {r.name: r for r in plan.resources}
    assert {n: r.urn for n, r in by_name.items()} == {
        "proj-dev": f"{u}pulumi:pulumi:Stack::proj-dev",
        "k8s": f"{u}pulumi:providers:kubernetes::k8s",
        "top": f"{u}kubernetes:core/v1:Namespace::top",
        "outer": f"{u}test:index:Outer::outer",
        "inner": f"{u}test:index:Outer$test:index:Inner::inner",
        "inner-k8s": f"{u}test:index:Outer$test:index:Inner$pulumi:providers:kubernetes::inner-k8s",
        "cm": f"{u}test:index:Outer$test:index:Inner$kubernetes:core/v1:ConfigMap::cm",
    }
    assert by_name["proj-dev"].parent is None
    assert by_name["outer"].parent == by_name["top"].parent == by_name["proj-dev"].urn
    assert by_name["inner"].parent == by_name["outer"].urn
    assert by_name["cm"].parent == by_name["inner"].urn
    assert by_name["cm"].provider == by_name["inner-k8s"].urn  # provider reference without its id
    assert by_name["top"].provider == by_name["k8s"].urn
    assert by_name["cm"].inputs["data"] == {"k": "v"}


# ---------------------------------------------------------------------------------------
# One process, many stacks: the runtime is reset between runs.

def test_runtime_is_reset_between_stacks():
    def first():
        k8s.core.v1.Namespace("only-in-first", opts=pulumi.ResourceOptions(
            provider=k8s.Provider("k8s", kubeconfig="")))
        pulumi.export("first", 1)

    seen = {}

    def second():
        seen["key"] = pulumi.Config("p").get("key")
        seen["stack"] = pulumi.get_stack()
        pulumi.export("second", 2)

    a = run_program("p", "one", {"p:key": "from-first"}, first)
    b = run_program("p", "two", {}, second)
    assert any(r.name == "only-in-first" for r in a.resources)
    assert [r.name for r in b.resources] == ["p-two"]  # only its own Stack resource
    assert (a.outputs, b.outputs) == ({"first": 1}, {"second": 2})
    assert seen == {"key": None, "stack": "two"}


def test_planning_leaks_no_event_loops(repo_root, example_plans):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to count file descriptors")
    assert set(example_plans) == set(EXAMPLE_STACKS)  # warm: each stack planned in this process
    gc.collect()
    gc.disable()  # loops left open would survive until a collection; none may be left
    try:
        before = len(os.listdir("/proc/self/fd"))
        for stack in EXAMPLE_STACKS:
            plan_stack(repo_root / "infra", stack)
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------
# plan_stack takes any Pulumi project directory and a stack, and reports failures cleanly.

def _project(tmp_path: Path, main_py: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: svc\nruntime: python\n", encoding="utf-8")
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  svc:replicas: '3'\n", encoding="utf-8")
    (tmp_path / "__main__.py").write_text(main_py, encoding="utf-8")
    return tmp_path


def test_plan_any_project(tmp_path):
    project = _project(tmp_path, (
        "import pulumi, pulumi_kubernetes as k8s\n"
        "p = k8s.Provider('k8s', kubeconfig='')\n"
        "n = pulumi.Config().require_int('replicas')\n"
        "k8s.core.v1.ConfigMap('settings', data={'replicas': str(n)},\n"
        "                      opts=pulumi.ResourceOptions(provider=p, protect=True))\n"))
    plan = plan_stack(project, "dev")
    assert (plan.project, plan.stack) == ("svc", "dev")
    (cm,) = [r for r in plan.resources if r.type == "kubernetes:core/v1:ConfigMap"]
    assert cm.urn == "urn:pulumi:dev::svc::kubernetes:core/v1:ConfigMap::settings"
    assert cm.inputs["data"] == {"replicas": "3"} and cm.protect


def test_program_crash_is_an_internal_error_without_traceback(tmp_path):
    project = _project(tmp_path, "raise ValueError('boom')\n")
    with pytest.raises(ClusterstackError) as ei:
        plan_stack(project, "dev")
    assert ei.value.exit_code == 1
    assert ei.value.render() == ("stack dev: the program failed: ValueError: boom — "
                                 "run with --debug for the traceback")


def test_missing_stack_file(tmp_path):
    project = _project(tmp_path, "")
    with pytest.raises(ConfigError) as ei:
        plan_stack(project, "prod")
    assert ei.value.problems[0].file == project.resolve() / "Pulumi.prod.yaml"
    assert "has no stack file" in ei.value.render()


def test_config_error_inside_the_program_keeps_its_location(workspace_copy):
    text = edit(workspace_copy / "clusters" / "cw-demo-h100.yaml",
                ("manager_memory_limit: 4Gi", "manager_memory_limit: 1Gi"))
    line = text[:text.index("1Gi")].count("\n") + 1
    with pytest.raises(ConfigError) as ei:
        plan_stack(workspace_copy / "infra", "cw-demo-h100")
    path = (workspace_copy / "clusters" / "cw-demo-h100.yaml").resolve()
    assert ei.value.exit_code == 2
    assert ei.value.render() == (f"{path}:{line}: provisioning.coreweave.kueue.manager_memory_limit: "
                                 "1Gi is below the 2Gi minimum for the Kueue manager — fix the value")


def test_stackplan_json_round_trip(example_plans):
    for plan in example_plans.values():
        assert StackPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_loads_rejects_other_documents():
    with pytest.raises(ValueError, match="not a clusterstack plan"):
        loads(json.dumps({"format": "something/v9", "stacks": []}))


# ---------------------------------------------------------------------------------------
# The monitor answers a plain registration with its own struct: the same response as the SDK's
# MockMonitor round trip (pulumi/runtime/mocks.py RegisterResource, pulumi 3.272.0).

_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"   # pulumi/runtime/rpc.py UNKNOWN
_SIG_KEY = "4dabf18193072939515e22adb298388d"        # rpc.py _special_sig_key
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"     # rpc.py _special_secret_sig


def _request(props: dict, *, name: str = "r", import_id: str = ""):
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import resource_pb2

    obj = struct_pb2.Struct()
    obj.update(props)
    return resource_pb2.RegisterResourceRequest(type="test:index:Thing", name=name, custom=True,
                                                object=obj, importId=import_id)


@contextlib.contextmanager
def _mock_settings():
    """The SDK's settings as :func:`run_program` configures them (preview, project ``p``,
    stack ``s``), with an event loop for the SDK mock's ``_sync_await``; both undone after."""
    import asyncio

    from pulumi.runtime import mocks as pmocks
    from pulumi.runtime import settings as psettings

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    psettings.configure(pmocks.MockSettings(
        monitor=CapturingMonitor(), monitor_features=set(), engine=pmocks.MockEngine(None),
        project="p", stack="s", dry_run=True, organization="organization", callbacks=None,
        root_directory=None, parallel=None))
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _registrations(monitor) -> dict:
    """The mock's kept registrations, ``Unknown()`` (compared by identity) as a marker."""
    from pulumi.output import Unknown

    def plain(v):
        if isinstance(v, Unknown):
            return "<unknown>"
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return [plain(x) for x in v] if isinstance(v, list) else v
    return {u: (r.urn, r.id, plain(r.state)) for u, r in monitor.resources.items()}


def _both(request):
    from pulumi.runtime import mocks as pmocks
    from clusterstack.plan.runtime import CapturingMonitor, _Mocks

    ours, sdk = CapturingMonitor(), pmocks.MockMonitor(_Mocks())
    a, b = ours.RegisterResource(request), sdk.RegisterResource(request)
    return ours, sdk, a, b


def test_a_plain_registration_is_echoed_with_the_sdk_mocks_response():
    props = {"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {"replicas": 3.0,
             "list": ["x", 1.5, True, {"k": "v"}], "empty": {}, "none": []}, "up": _UNKNOWN}
    with _mock_settings():
        ours, sdk, a, b = _both(_request(props, import_id="given-id"))
        assert CapturingMonitor()._echo(_request(props)) is not None   # the shortcut is taken
    assert (a.urn, a.id, a.object) == (b.urn, b.id, b.object)
    assert a.id == "given-id"
    assert _registrations(ours) == _registrations(sdk)


def test_echoed_registrations_are_kept_whole_while_other_threads_register():
    """The SDK calls the monitor from several executor threads; the mock's registrations are
    read (a ``getResource`` invoke) while others are still being answered."""
    import threading

    from clusterstack.plan.runtime import CapturingMonitor

    with _mock_settings():
        monitor, errors = CapturingMonitor(), []

        def register(t: int) -> None:
            try:
                for i in range(300):
                    monitor.RegisterResource(_request({"spec": {"i": float(i)}}, name=f"r{t}-{i}"))
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)
        threads = [threading.Thread(target=register, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            assert all(r.urn == u for u, r in list(monitor.resources.items()))
        for th in threads:
            th.join()
    assert errors == []
    assert len(monitor.resources) == 1200
    assert monitor.resources[monitor.records[-1].urn].state == {
        "spec": {"i": monitor.records[-1].inputs["spec"]["i"]}}


@pytest.mark.parametrize("props", [
    {"data": {_SIG_KEY: _SECRET_SIG, "value": "s"}},             # a secret: pushed up a level
    {"spec": {"inner": {"x": {_SIG_KEY: _SECRET_SIG, "value": 1.0}}}},
    {"spec": {"gone": None, "kept": "v"}},                        # nulls leave maps
    {"list": [None, "v"]},
])
def test_special_values_and_nulls_take_the_sdk_path(props):
    with _mock_settings():
        ours, sdk, a, b = _both(_request(props))
        assert CapturingMonitor()._echo(_request(props)) is None
    assert (a.urn, a.id, a.object) == (b.urn, b.id, b.object)


def _values():
    from hypothesis import strategies as st

    leaf = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=5), st.just(_UNKNOWN), st.just("08"))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.builds(lambda v: {_SIG_KEY: _SECRET_SIG, "value": v}, inner)), max_leaves=12)


def test_any_registration_gets_the_sdk_mocks_response():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=150, deadline=None)
    @given(st.dictionaries(st.text(min_size=1, max_size=4), _values(), max_size=4))
    def check(props):
        with _mock_settings():
            ours, sdk, a, b = _both(_request(props))
        assert (a.urn, a.id, a.object) == (b.urn, b.id, b.object)
        assert _registrations(ours) == _registrations(sdk)

    check()


def test_two_resources_with_one_urn_are_refused_as_the_engine_refuses_them():
    import pulumi_kubernetes as k8s

    from clusterstack.errors import ClusterstackError
    from clusterstack.plan.runtime import run_program

    def program() -> None:
        for _ in range(2):
            k8s.core.v1.Namespace("same", metadata={"name": "same"})
    with pytest.raises(ClusterstackError, match="two resources have the URN .*::same"):
        run_program("p", "s", {}, program)
