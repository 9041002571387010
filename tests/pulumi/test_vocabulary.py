"""The Pulumi vocabulary (clusterstack.pulumi): the URN rule, the property-path grammar, the table
of type tokens and families, and the promise that the vocabulary and the guard stay cheap."""

from __future__ import annotations

import ast
import re
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import parsed

from clusterstack.pulumi import tokens
from clusterstack.pulumi.paths import contains, format_path, get_path, parse_path
from clusterstack.pulumi.urn import (URN, URNError, child_urn, is_urn, name_of, new_urn,
                                     parse_reference, parse_urn, provider_urn, type_of)
from clusterstack.pulumi.values import SECRET, mask_pair

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "clusterstack"


def _reference_dir() -> Path | None:
    """``shared/reference`` beside the checkout or one of its parents (a worktree nests deeper)."""
    for d in (REPO, *REPO.parents):
        cand = d / "shared" / "reference"
        if cand.is_dir():
            return cand
    return None


REFERENCE = _reference_dir()
LIFECYCLE = REFERENCE / "pulumi/pkg/engine/lifecycletest/testdata/output" if REFERENCE else None

# --- URNs -----------------------------------------------------------------------------------

_ALNUM = "abcXYZ019"
_names = st.text(alphabet=_ALNUM + "_.-", min_size=1, max_size=12)  # stack / project names
_ident = st.builds(str.__add__, st.sampled_from("aZq"), st.text(alphabet=_ALNUM, max_size=8))
_types = st.builds(lambda p, m, t: f"{p}:{m}:{t}", _ident,
                   st.one_of(_ident, st.builds(lambda a, b: f"{a}/{b}", _ident, _ident)), _ident)
# resource names may hold anything, "::" and "$" included (urn.go: SplitN(…, 4))
_resource_names = st.text(alphabet=st.sampled_from("ab:$-_./ Z9"), max_size=16)


@settings(max_examples=200, deadline=None)
@given(stack=_names, project=_names, parents=st.lists(_types, max_size=4), type_=_types,
       name=_resource_names)
def test_urn_build_and_parse_round_trip(stack, project, parents, type_, name):
    parent_q = "$".join(parents)
    urn = new_urn(stack, project, parent_q, type_, name)
    u = parse_urn(urn)
    assert (u.stack, u.project, u.name, u.type, u.parent_types) == (stack, project, name, type_,
                                                                     tuple(parents))
    assert str(u) == urn and is_urn(urn) and type_of(urn) == type_ and name_of(urn) == name
    # a child of this resource carries the whole chain (resource.NewURN)
    child = parse_urn(child_urn(urn, stack, project, "c:d:E", "kid"))
    assert child.parent_types == (*parents, type_) and child.type == "c:d:E"
    # a provider reference splits at the last "::"
    assert parse_reference(f"{urn}::id-1") == (urn, "id-1")


def test_urn_rule_drops_the_root_stack_and_rejects_non_urns():
    root = new_urn("dev", "clusterstack", "", tokens.STACK_TYPE, "clusterstack-dev")
    assert root == "urn:pulumi:dev::clusterstack::pulumi:pulumi:Stack::clusterstack-dev"
    assert child_urn(root, "dev", "clusterstack", tokens.NODEPOOLS_COMPONENT, "nodepools") == \
        "urn:pulumi:dev::clusterstack::clusterstack:coreweave:NodePools::nodepools"
    assert child_urn(None, "dev", "p", "a:b:C", "n") == "urn:pulumi:dev::p::a:b:C::n"
    for bad in ("", "not-a-urn", "urn:pulumi:s::p::t", "urn:pulumi:s::::a:b:C::n",
                "urn:pulumi:s::p::a:b:C$::n", "urn:other:s::p::a:b:C::n"):
        assert not is_urn(bad) and type_of(bad) == ""
        with pytest.raises(URNError):
            parse_urn(bad)
    assert name_of("") == "" and provider_urn(None) is None
    bare = "urn:pulumi:s::p::pulumi:providers:kubernetes::k8s"
    assert provider_urn(bare) == bare and provider_urn(f"{bare}::0123") == bare


def _collect(obj, out: dict[str, set]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("urn", "parent") and isinstance(v, str) and v.startswith("urn:pulumi:"):
                out["urn"].add(v)
            elif k == "provider" and isinstance(v, str) and v.startswith("urn:pulumi:"):
                out["provider"].add(v)
            elif k == "metadata" and isinstance(v, dict) and isinstance(v.get("urn"), str):
                out["typed"].add((v["urn"], v.get("type") or ""))
            _collect(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _collect(v, out)


@pytest.mark.skipif(LIFECYCLE is None or not LIFECYCLE.is_dir(),
                    reason="Pulumi's recorded lifecycle-test outputs (shared/reference/pulumi) are absent")
def test_real_urns_from_pulumis_recorded_event_streams_parse_and_rebuild():
    found: dict[str, set] = {"urn": set(), "provider": set(), "typed": set()}
    files = sorted(LIFECYCLE.glob("*/*/eventstream.json"))
    assert files
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                _collect(json.loads(line), found)
    assert len(found["urn"]) > 100
    nested = 0
    for urn in sorted(found["urn"]):
        u = parse_urn(urn)
        nested += bool(u.parent_types)
        assert str(u) == urn
        assert new_urn(u.stack, u.project, "$".join(u.parent_types), u.type, u.name) == urn
    assert nested, "the recorded streams hold parent-type chains"
    for ref in sorted(found["provider"]):
        prov, _id = parse_reference(ref)
        assert tokens.is_provider(type_of(prov)), ref
    for urn, typ in sorted(found["typed"]):
        # the engine's own type field agrees with the URN's; a malformed type with an empty
        # module ("pkgA::Foo", TestPluginDownloadURLDefaultProvider) makes its URN ambiguous, and urn.go's Type()
        # reads it as we do ("pkgA")
        if typ and "::" not in typ:
            assert type_of(urn) == typ, urn
        elif typ:
            assert type_of(urn) == typ.split("::")[0]


# --- property paths -------------------------------------------------------------------------

# Keys: anything but a trailing backslash, which Pulumi's grammar cannot spell (paths.py).
_keys = st.text(max_size=8).filter(lambda k: not k.endswith("\\"))
_segments = st.lists(st.one_of(_keys, st.integers(min_value=0, max_value=10**6)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(_segments)
def test_property_path_round_trip(segments):
    text = format_path(segments)
    assert parse_path(text) == tuple(segments)
    assert format_path(parse_path(text)) == text


@pytest.mark.parametrize("text, segments", [   # properties_path.go's own examples
    ("root", ("root",)),
    ("root.nested", ("root", "nested")),
    ('root["nested"]', ("root", "nested")),
    ('root["double"]["nest"]', ("root", "double", "nest")),
    ("root.array[100]", ("root", "array", 100)),
    ("root.array[0][1].nested", ("root", "array", 0, 1, "nested")),
    ('root["key with \\"escaped\\" quotes"]', ("root", 'key with "escaped" quotes')),
    ('root["key with a ."]', ("root", "key with a .")),
    ('["root key with a ."][100]', ("root key with a .", 100)),
    ("root.array[*].field", ("root", "array", "*", "field")),
    ('root.array["*"].field', ("root", "array", "*", "field")),
    ('spec.nodeLabels["cwdemo/scale-group"]', ("spec", "nodeLabels", "cwdemo/scale-group")),
])
def test_pulumis_path_examples_parse(text, segments):
    assert parse_path(text) == segments


@pytest.mark.parametrize("bad", ['a["x', 'a["x"', "a[0", "a[x]", "a[1.5]"])
def test_malformed_paths_are_refused(bad):
    with pytest.raises(ValueError):
        parse_path(bad)


def test_path_lookup_and_containment():
    doc = {"spec": {"rules": [{"a.b": {"verbs": ["get"]}}]}}
    assert get_path(doc, 'spec.rules[0]["a.b"].verbs[0]') == "get"
    assert get_path(doc, ("spec", "rules", 0)) == {"a.b": {"verbs": ["get"]}}
    assert get_path(doc, "spec.rules[3]") is None and get_path(doc, "spec.x", default=0) == 0
    assert contains(("spec",), ("spec", "instanceType")) and contains(("a", "*", "c"), ("a", 7, "c", 1))
    assert not contains(("spec", "instanceType"), ("spec",)) and not contains(("a", "0"), ("a", 0))


def test_a_secret_on_either_side_masks_both():
    assert mask_pair("[secret]", "b") == (SECRET, SECRET)
    assert mask_pair(None, SECRET) == (None, SECRET)
    assert mask_pair("a", "b") == ("a", "b")


# --- type tokens and families ---------------------------------------------------------------

# Tokens the table holds although no shipped stack's plan declares them, and why.
NOT_IN_SHIPPED_PLANS = {
    tokens.LEGACY_DNS_RECORD: "pulumi-cloudflare v5's record type, still guarded in old state",
    tokens.K8S_SECRET: "never declared; CI redaction masks a Secret's data whole",
    tokens.LOCAL_COMMAND: "the command deploy kind (components/services/command.py); no shipped service uses it",
    tokens.COMMAND_SERVICE_COMPONENT: "likewise",
    tokens.KUEUE_TOPOLOGY_V1ALPHA1: "an alias of the Topology (its type before Kueue 0.14), never declared",
    **{t: "the cloud-run-job and gce-vm deploy kinds (components/services/cloudrunjob.py, gce.py): no shipped "
          "service uses them; examples/marin/infra/finelog-gce and tests/components/services/test_vm_and_job.py "
          "plan them"
       for t in (tokens.CLOUD_RUN_JOB_COMPONENT, tokens.GCE_VM_SERVICE_COMPONENT, tokens.CLOUD_RUN_JOB,
                 tokens.CLOUD_SCHEDULER_JOB, tokens.COMPUTE_INSTANCE)},
    **{t: "the binding of a role the IAM file makes authoritative; the shipped file opts in only "
          "the IAP accessors (components/gcp/iam.py, tests/components/gcp/test_iam.py declares it)"
       for t in (tokens.PROJECT_IAM_BINDING, tokens.GCS_BUCKET_IAM_BINDING, tokens.SECRET_IAM_BINDING,
                 tokens.ARTIFACT_REPOSITORY_IAM_BINDING, tokens.SERVICE_ACCOUNT_IAM_BINDING,
                 tokens.KMS_CRYPTO_KEY_IAM_BINDING)},
    tokens.IAP_BACKEND_IAM_MEMBER: "an additive IAP accessor; the shipped IAM file makes its accessors authoritative",
    **{t: "a grant on a resource kind Marin's IAM uses and the shipped IAM file does not (KMS key ring, "
          "Cloud Run service or job, IAP on Cloud Run): tests/iam/test_marin_adopt.py plans the members, "
          "tests/components/gcp/test_iam.py the bindings"
       for t in (tokens.CLOUD_RUN_SERVICE_IAM_BINDING, tokens.CLOUD_RUN_JOB_IAM_MEMBER,
                 tokens.CLOUD_RUN_JOB_IAM_BINDING, tokens.IAP_CLOUD_RUN_IAM_BINDING,
                 tokens.KMS_KEY_RING_IAM_MEMBER, tokens.KMS_KEY_RING_IAM_BINDING)},
}


def _shipped_projects() -> list[Path]:
    return sorted(p.parent for p in REPO.glob("**/Pulumi.yaml")
                  # examples/marin plans only with Marin's configs beside it (not shipped):
                  # tests/programs/test_marin_example.py plans it with them
                  if not any(part.startswith(".") or part in ("tests", "node_modules", "examples")
                             for part in p.relative_to(REPO).parts))


@pytest.fixture(scope="module")
def shipped_types(example_plans) -> set[str]:
    """Every type token of every stack of every shipped Pulumi project (infra/, the [projects]
    projects, the services), planned offline."""
    from clusterstack.plan import plan_stack
    from clusterstack.plan.runtime import ProjectInfo

    types = {r.type for p in example_plans.values() for r in p.resources}
    for d in _shipped_projects():
        for stack in ProjectInfo.load(d).stacks():
            if d.name == "infra" and stack in example_plans:
                continue
            types |= {r.type for r in plan_stack(d, stack).resources}
    return types


def test_every_declared_type_token_is_in_the_table(shipped_types):
    assert {REPO / d for d in ("infra", "buckets", "github")} <= set(_shipped_projects())
    missing = sorted(shipped_types - tokens.ALL)
    assert missing == [], "add these to clusterstack/pulumi/tokens.py"
    unused = sorted(tokens.ALL - shipped_types - set(NOT_IN_SHIPPED_PLANS))
    assert unused == [], "no shipped stack declares these: remove them or say why above"


def test_families_ignore_the_kubernetes_version_only():
    moved = tokens.kubernetes_token("compute.coreweave.com/v1", "NodePool")
    assert moved == "kubernetes:compute.coreweave.com/v1:NodePool" and moved != tokens.NODEPOOL
    assert tokens.same_family(tokens.NODEPOOL, moved)
    assert tokens.family(tokens.NODEPOOL) == "kubernetes:compute.coreweave.com/*:NodePool"
    assert not tokens.same_family(tokens.NODEPOOL, "kubernetes:compute.coreweave.com/v1:NodeClass")
    assert not tokens.same_family(tokens.NODEPOOL, "kubernetes:other.example.com/v1alpha1:NodePool")
    assert tokens.family(tokens.ADDRESS) == tokens.ADDRESS
    assert not tokens.same_family(tokens.ADDRESS, tokens.GLOBAL_ADDRESS)
    assert tokens.family("not a token") == "not a token"
    assert tokens.kubernetes_token("v1", "Namespace") == tokens.NAMESPACE
    k = tokens.NODEPOOL_KIND
    assert (k.api_version, k.kind, k.token) == ("compute.coreweave.com/v1alpha1", "NodePool", tokens.NODEPOOL)
    assert tokens.split(tokens.HELM_RELEASE) == ("kubernetes", "helm.sh/v3", "Release")
    assert tokens.STACK_TYPE in tokens.ALL and tokens.BUCKETS <= tokens.ALL


# --- cheap imports, one way down --------------------------------------------------------------

def test_the_guard_and_the_vocabulary_do_not_import_the_pulumi_sdk():
    mods = ["clusterstack.guard", "clusterstack.pulumi.steps", "clusterstack.pulumi.urn",
            "clusterstack.pulumi.tokens", "clusterstack.pulumi.paths", "clusterstack.pulumi.values",
            "clusterstack.pulumi.documents", "clusterstack.pulumi.state",
            "clusterstack.pulumi.importfile", "clusterstack.pulumi.importids"]
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m == 'pulumi' or m.startswith('pulumi.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_vocabulary_sits_below_plan_and_imports_and_the_cycle_is_gone():
    for f in sorted((SRC / "pulumi").glob("*.py")):
        ours = {m for m in _imports(f) if m.startswith("clusterstack")}
        # The one loader's input hygiene (decode, JSON limits) is shared, nothing else.
        assert ours <= {"clusterstack.errors", "clusterstack.config.document"} | {
            m for m in ours if m.startswith("clusterstack.pulumi")}, f
    for pkg in ("plan", "components", "pulumi", "guard"):
        for f in sorted((SRC / pkg).rglob("*.py")):
            assert not any(m.startswith("clusterstack.imports") for m in _imports(f)), f
    # the guard holds policy, check and capacity measure; Pulumi's vocabulary (op sets, type
    # tokens, URN rules) stays in pulumi/: no guard module defines an op set or token constant
    for f in sorted((SRC / "guard").glob("*.py")):
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"^[A-Z_]*OPS\s*=|^[A-Z_]+\s*=\s*\"kubernetes:", text, re.M), f


def test_urn_strings_are_built_and_split_only_by_the_urn_module():
    """No other module of the package joins ``urn:pulumi:`` or splits on ``::``."""
    offenders = []
    for f in sorted(SRC.rglob("*.py")):
        if f == SRC / "pulumi" / "urn.py":
            continue
        text = f.read_text(encoding="utf-8")
        for needle in ('f"urn:pulumi:', '"urn:pulumi:" +', 'split("::"', "split('::'",
                       'rsplit("::"', "rsplit('::'", 'partition("::"'):
            if needle in text:
                offenders.append(f"{f.relative_to(SRC)}: {needle}")
    assert offenders == []


def test_urn_dataclass_is_the_parse_result():
    u = parse_urn("urn:pulumi:s::p::a:b:C$d:e:F::n::x$y")
    assert u == URN("s", "p", "a:b:C$d:e:F", "n::x$y") and u.type == "d:e:F"


# --- state documents ------------------------------------------------------------------------

def test_state_reader_reads_the_last_deployment():
    from clusterstack.pulumi.state import StateFileError, read_state, state_resources
    from clusterstack.pulumi.wire import SECRET_SIG, SIG_KEY

    root = new_urn("dev", "clusterstack", "", tokens.STACK_TYPE, "clusterstack-dev")
    prov = new_urn("dev", "clusterstack", "", tokens.KUBERNETES_PROVIDER, "k8s")
    ns = child_urn(root, "dev", "clusterstack", tokens.NAMESPACE, "training")
    ext = new_urn("dev", "clusterstack", "", tokens.NAMESPACE, "kube-system")
    doc = {"version": 3, "deployment": {"resources": [
        {"urn": root, "type": tokens.STACK_TYPE,
         "outputs": {"token": {SIG_KEY: SECRET_SIG, "ciphertext": "v1:abc"}}},
        {"urn": prov, "type": tokens.KUBERNETES_PROVIDER, "custom": True, "id": "p-1"},
        {"urn": ns, "type": tokens.NAMESPACE, "custom": True, "id": "training", "parent": root,
         "provider": f"{prov}::p-1", "protect": True, "dependencies": [prov, prov]},
        {"urn": ns, "type": tokens.NAMESPACE, "custom": True, "id": "old", "delete": True},
        {"urn": ext, "type": tokens.NAMESPACE, "custom": True, "id": "kube-system", "external": True},
    ]}}
    d = read_state(doc)
    assert (d.project, d.stack, d.outputs) == ("clusterstack", "dev", {"token": SECRET})
    assert [r.urn for r in d.resources] == sorted([root, prov, ns])
    r = next(r for r in d.resources if r.urn == ns)
    assert (r.name, r.provider, r.protect, r.dependencies) == ("training", prov, True, (prov,))
    raw = state_resources(doc)
    assert raw[ns]["id"] == "training" and ext in raw  # pending delete dropped, read kept
    other = new_urn("prod", "clusterstack", "", tokens.NAMESPACE, "x")
    with pytest.raises(StateFileError, match="2 stacks"):
        read_state({"version": 3, "deployment": {"resources": [
            {"urn": ns, "type": tokens.NAMESPACE}, {"urn": other, "type": tokens.NAMESPACE}]}})
    with pytest.raises(StateFileError, match="malformed URN"):
        read_state({"version": 3, "deployment": {"resources": [{"urn": "x::y", "type": "a:b:C"}]}})


def test_patch_resources_are_told_from_kinds():
    """pulumi-kubernetes kinds.IsPatchResource: the type is the kind plus ``Patch``
    (``DeploymentPatch``); a provider, another package or a plain kind is not one."""
    assert tokens.is_patch("kubernetes:apps/v1:DeploymentPatch")
    assert tokens.is_patch("kubernetes:core/v1:NamespacePatch")
    assert not tokens.is_patch("kubernetes:apps/v1:Deployment")
    assert not tokens.is_patch("kubernetes:helm.sh/v3:Release")
    assert not tokens.is_patch("gcp:compute/address:AddressPatch")
    assert not tokens.is_patch("pulumi:providers:kubernetes")
