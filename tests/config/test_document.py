"""The one loader of reviewed files (clusterstack.config.document) on every kind of reviewed
file, the typed workspace (clusterstack.toml), the shared constrained types, and the answers
that used to differ between validate and plan."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from helpers import edit, line_of, parsed, shown
from clusterstack.cli import main
from clusterstack.config.document import Document, Lenient, Strict, decode
from clusterstack.errors import ConfigError
from clusterstack.workspace import Workspace, write_pointer

REPO = Path(__file__).resolve().parents[2]
H100 = "cw-demo-h100"


def _validate(root: Path, capsys, *args: str) -> tuple[int, str]:
    rc = main(["--root", str(root), "validate", *args])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return rc, cap.err


def _with_services(root: Path) -> Path:
    shutil.copy(REPO / "services.yaml", root / "services.yaml")
    shutil.copytree(REPO / "services", root / "services", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "services.yaml"


def _load_services(root: Path):
    from clusterstack.deploy.registry import load_registry
    return load_registry(Workspace.load(root))


def _load_iam(root: Path):
    from clusterstack.iam.loader import load_iam
    return load_iam(root / "iam" / "iam.yaml")


# --- one bad value in each kind of reviewed file: located file:line: field -------------------

# (file relative to the root, old, new, needle on the bad line, field, message fragment)
BAD_VALUES = [
    ("clusters/cw-demo-h100.yaml", "manager_memory_limit: 4Gi", "manager_memory_limit: 4GB",
     "4GB", "provisioning.coreweave.kueue.manager_memory_limit", "not a Kubernetes memory quantity"),
    ("buckets/buckets.yaml", "ttl_days: [7, 30]", "ttl_days: [7, 0]", "ttl_days", "ttl_days[1]",
     "greater than or equal to 1"),
    ("github/github.yaml", "required_approving_review_count: 1", "required_approving_review_count: 11",
     "review_count: 11", "ruleset.required_approving_review_count", "less than or equal to 10"),
    ("services.yaml", "kind: cloud-run", "kind: lambda", "kind: lambda", "services.echo.kind",
     "Input should be"),
    ("iam/iam.yaml", "schema_version: 1", "schema_version: 2", "schema_version", "schema_version",
     "Input should be 1"),
    ("clusterstack.toml", 'release_branch = "main"', "release_branch = 5", "release_branch =",
     "workspace.release_branch", "valid string"),
    ("infra/Pulumi.cw-demo-h100.yaml", "clusterstack:cluster: cw-demo-h100",
     "clusterstack:cluster: cw-demo-h100\n  clusterstack:replicas: 3", "replicas",
     "config.clusterstack:replicas", "not allowed in a cluster stack file"),
]
LOADERS = {
    "services.yaml": _load_services,
    "iam/iam.yaml": _load_iam,
}


@pytest.mark.parametrize("rel, old, new, needle, field, fragment", BAD_VALUES,
                         ids=[b[0] for b in BAD_VALUES])
def test_a_bad_value_is_located_in_every_kind_of_reviewed_file(workspace_copy, capsys, rel, old,
                                                                 new, needle, field, fragment):
    root = workspace_copy.resolve()
    _with_services(root)
    path = root / rel
    text = edit(path, (old, new))
    want = f"{path}:{line_of(text, needle)}: {field}: "
    if rel in LOADERS:
        with pytest.raises(ConfigError) as ei:
            LOADERS[rel](root)
        rendered = [p.render() for p in ei.value.problems]
    else:
        rc, err = _validate(root, capsys)
        assert rc == 2
        rendered = [ln.removeprefix("error: ") for ln in err.splitlines()]
        want = want.removeprefix(f"{root}/")   # the CLI: relative to the workspace root
    assert any(r.startswith(want) and fragment in r for r in rendered), rendered


@pytest.mark.parametrize("rel", ["clusters/cw-demo-h100.yaml", "clusterstack.toml",
                                 "infra/Pulumi.cw-demo-h100.yaml", "buckets/buckets.yaml",
                                 "github/github.yaml", "iam/iam.yaml", "infra/Pulumi.yaml"])
def test_a_byte_that_is_not_utf8_is_a_located_user_error(workspace_copy, capsys, rel):
    root = workspace_copy.resolve()
    path = root / rel
    raw = path.read_bytes()
    cut = raw.index(b"\n", raw.index(b"\n") + 1) + 1   # the start of line 3
    path.write_bytes(raw[:cut] + b"# caf\xe9\n" + raw[cut:])
    rc, err = _validate(root, capsys)
    assert rc == 2, err
    assert f"error: {shown(path)}:3: not UTF-8 text: byte 0xe9 at column 6 — save the file as UTF-8" in err


def test_decode_names_line_and_column():
    with pytest.raises(ConfigError) as ei:
        decode(b"a: 1\nb: \xff\xfe\n", Path("x.yaml"))
    assert ei.value.problems[0].render() == "x.yaml:2: not UTF-8 text: byte 0xff at column 4 — save the file as UTF-8"


def test_services_yaml_bad_utf8(workspace_copy):
    root = workspace_copy.resolve()
    f = _with_services(root)
    f.write_bytes(f.read_bytes() + b"# \xc3\x28\n")
    with pytest.raises(ConfigError) as ei:
        _load_services(root)
    p = ei.value.problems[0]
    assert (p.file, p.line, ei.value.exit_code) == (f, f.read_text("latin-1").count("\n"), 2)


# --- clusterstack.toml: unknown tables and keys are located errors ---------------------------

@pytest.mark.parametrize("added, field, message", [
    ('[Workspace]\nbackend_url = "gs://prod-state"\n', "Workspace", "unknown table [Workspace]"),
    ('[convention]\n', "convention", "unknown table [convention]"),
    ('workspace_dir = "x"\n', "workspace_dir", "unknown key 'workspace_dir'"),
])
def test_an_unknown_table_is_a_located_error(workspace_copy, added, field, message):
    toml = workspace_copy / "clusterstack.toml"
    text = added + toml.read_text()
    toml.write_text(text)
    with pytest.raises(ConfigError) as ei:
        Workspace.load(workspace_copy)
    (p,) = ei.value.problems
    assert (p.line, p.field, p.message) == (1, field, message)
    assert p.hint == "allowed keys: conventions, cost, defaults, guard, iam, projects, workspace"


def test_an_unknown_workspace_key_is_located_and_names_the_allowed_ones(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, ('release_branch = "main"', 'release_branch = "main"\nbackend = "gs://x"'))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert err == (f"error: {shown(toml)}:{line_of(text, 'backend = ')}: workspace.backend: unknown key "
                   "'backend' — allowed keys: backend_url, clusters_dir, project_dir, project_name, "
                   "release_branch, secrets_provider\n")


@pytest.mark.parametrize("old, new, needle, field", [
    ('stack = "gcp-demo"\n', 'stack = "gcp-demo"\nallow_emails = [""]\n', 'allow_emails = [""]', "iam.allow_emails[0]"),
    ('federation_allow_sources = ["203.0.113.10", "198.51.100.0/24"]', "federation_allow_sources = 5",
     "federation_allow_sources = 5", "defaults.federation_allow_sources"),
])
def test_wrongly_typed_values_are_located(workspace_copy, capsys, old, new, needle, field):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, (old, new))
    with pytest.raises(ConfigError) as ei:
        Workspace.load(workspace_copy)
    assert (ei.value.problems[0].line, ei.value.problems[0].field) == (line_of(text, needle), field)


def test_toml_index_reads_keys_as_tomllib_does():
    import tomllib

    from clusterstack.config.document import toml_index

    text = ('"a\\"b" = 1\n'
            '[t . "x.y"]\n'
            '"k\\"q".\'l"it\' . bare = 2\n'
            '"\\u0041" = 3\n'
            '[[arr."]"]]\n'
            'v = 4\n')
    data = tomllib.loads(text)  # the index's paths are the parsed document's own
    assert data["a\"b"] == 1 and data["t"]["x.y"]['k"q']['l"it']["bare"] == 2 and data["t"]["x.y"]["A"] == 3
    assert data["arr"]["]"] == [{"v": 4}]
    assert toml_index(text) == {("a\"b",): 1, ("t", "x.y"): 2, ("t", "x.y", 'k"q', 'l"it', "bare"): 3,
                                ("t", "x.y", "A"): 4, ("arr", "]"): 5, ("arr", "]", "v"): 6}


def test_a_quoted_key_with_an_escaped_quote_is_located_at_its_line(workspace_copy):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, ('release_branch = "main"', 'release_branch = "main"\n"back\\"end" = "x"'))
    with pytest.raises(ConfigError) as ei:
        Workspace.load(workspace_copy)
    (p,) = ei.value.problems
    assert (p.line, p.field) == (line_of(text, '"back\\"end" = '), 'workspace.back"end')


def test_a_workspace_from_a_mapping_is_checked_like_the_file(tmp_path):
    ws = Workspace.from_mapping(tmp_path, {"workspace": {"project_dir": "proj"}, "iam": {"stack": "s"}})
    assert (ws.project_dir, ws.iam.stack, ws.backend_url) == (tmp_path.resolve() / "proj", "s",
                                                             "file://.pulumi-state")
    from pydantic import ValidationError
    with pytest.raises(ValidationError):
        Workspace.from_mapping(tmp_path, {"Workspace": {}})


def test_invalid_toml_is_located(workspace_copy):
    toml = workspace_copy / "clusterstack.toml"
    text = edit(toml, ('release_branch = "main"', 'release_branch = main'))
    with pytest.raises(ConfigError) as ei:
        Workspace.load(workspace_copy)
    p = ei.value.problems[0]
    assert p.line == line_of(text, "release_branch = main") and p.message.startswith("invalid TOML")


def test_cluster_project_name_must_match_pulumi_yaml(workspace_copy, capsys):
    pulumi_yaml = workspace_copy / "infra" / "Pulumi.yaml"
    text = edit(pulumi_yaml, ("name: clusterstack", "name: clusterstack-infra"))
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"error: {shown(pulumi_yaml)}:{line_of(text, 'name: clusterstack-infra')}: name: project name "
            "'clusterstack-infra' is not [workspace] project_name 'clusterstack'") in err
    assert main(["--root", str(workspace_copy), "plan", H100]) == 2


# --- projects: a declared kind, never a sniffed __main__.py ---------------------------------

def test_validate_checks_a_project_with_its_declared_kind_however_main_imports(workspace_copy, capsys):
    """`buckets/__main__.py` may import the program however it likes: the declared kind picks
    the loader, so validate rejects what plan rejects."""
    main_py = workspace_copy / "buckets" / "__main__.py"
    main_py.write_text("from pathlib import Path\n\nimport clusterstack.programs as programs\n\n"
                       "programs.main(Path(__file__).resolve().parent)\n")
    path = workspace_copy / "buckets" / "buckets.yaml"
    text = edit(path, ("ttl_days: [7, 30]", "ttl_dayz: [7, 30]"))
    want = f"error: {shown(path)}:{line_of(text, 'ttl_dayz')}: ttl_dayz: "
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and want in err
    assert main(["--root", str(workspace_copy), "plan", "--project", "buckets"]) == 2
    assert want in capsys.readouterr().err


def test_a_project_kind_selects_its_program_and_loader():
    from typing import get_args

    from clusterstack.programs import BUILDERS
    from clusterstack.validation import DOCUMENT_LOADERS
    from clusterstack.workspace.model import ProjectKind, ProjectSection

    kinds = set(get_args(ProjectKind))
    assert set(BUILDERS) == kinds
    assert set(DOCUMENT_LOADERS) == set(get_args(ProjectSection.model_fields["kind"].annotation))
    assert set(DOCUMENT_LOADERS) == kinds - {"cluster"}
    ws = Workspace.load(REPO)
    assert [(p.key, p.kind) for p in ws.all_projects()] == [
        ("clusters", "cluster"), ("buckets", "buckets"), ("github", "github")]


def test_a_program_outside_the_declared_projects_is_refused(tmp_path):
    from clusterstack.plan import plan_stack

    (tmp_path / "clusterstack.toml").write_text("[workspace]\n")
    project = tmp_path / "buckets"
    project.mkdir()
    for f in ("Pulumi.yaml", "__main__.py"):
        (project / f).write_text((REPO / "buckets" / f).read_text())
    (project / "Pulumi.lab.yaml").write_text("config:\n  clusterstack-buckets:file: buckets.yaml\n")
    with pytest.raises(ConfigError, match="is not a project of this workspace"):
        plan_stack(project, "lab")


# --- services.yaml: Kubernetes names are RFC 1123 labels --------------------------------------

def test_services_accept_an_rfc1123_name_that_starts_with_a_digit(workspace_copy):
    root = workspace_copy.resolve()
    f = _with_services(root)
    edit(f, ("  logrelay:\n", "  2fa-proxy:\n"))
    reg = _load_services(root)
    assert "2fa-proxy" in reg.services
    # the Kubernetes service component accepts the same name
    from clusterstack.components.services.kubernetes import KubernetesServiceArgs
    KubernetesServiceArgs(namespace="logging", name="2fa-proxy", image="r@sha256:" + "0" * 64, port=80)


@pytest.mark.parametrize("name, fragment", [("Proxy", "RFC 1123"), ("-proxy", "RFC 1123"),
                                            ("a" * 64, "RFC 1123"), ("rollout", "deploy verb")])
def test_services_reject_names_that_are_not_labels(workspace_copy, name, fragment):
    root = workspace_copy.resolve()
    f = _with_services(root)
    text = edit(f, ("  logrelay:\n", f"  {name}:\n"))
    with pytest.raises(ConfigError) as ei:
        _load_services(root)
    (p,) = ei.value.problems
    assert (p.line, p.field) == (line_of(text, f"  {name}:"), f"services.{name}") and fragment in p.message


# --- anchored patterns --------------------------------------------------------------------

def test_a_scale_group_name_with_a_trailing_newline_is_rejected(workspace_copy):
    path = workspace_copy / "clusters" / f"{H100}.yaml"
    text = edit(path, ("  h100:\n", '  "h100\\n":\n'))
    from clusterstack.validation import load_cluster
    with pytest.raises(ConfigError) as ei:
        load_cluster(Workspace.load(workspace_copy), H100)
    (p,) = ei.value.problems
    assert p.line == line_of(text, '"h100\\n":') and "is not a valid RFC 1123 label" in p.message


@pytest.mark.parametrize("old, new", [("manager_memory_limit: 4Gi", 'manager_memory_limit: "4Gi\\n"'),
                                      ("cluster_queue: training-cq", 'cluster_queue: "training-cq\\n"'),
                                      ("label_prefix: cwdemo", 'label_prefix: "cwdemo\\n"')])
def test_a_value_with_a_trailing_newline_is_rejected(workspace_copy, old, new):
    edit(workspace_copy / "clusters" / f"{H100}.yaml", (old, new))
    from clusterstack.validation import load_cluster
    with pytest.raises(ConfigError):
        load_cluster(Workspace.load(workspace_copy), H100)


def _models() -> list[type[BaseModel]]:
    import clusterstack.config.buckets  # noqa: F401
    import clusterstack.config.cluster  # noqa: F401
    import clusterstack.config.github  # noqa: F401
    import clusterstack.config.services  # noqa: F401
    import clusterstack.iam.model  # noqa: F401
    import clusterstack.workspace.model  # noqa: F401

    out, todo = [], [Strict, Lenient]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def _patterns(obj, seen=None):
    """Every ``pattern`` in a JSON Schema."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "pattern":
                yield v
            else:
                yield from _patterns(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _patterns(v)


def test_every_pattern_of_every_reviewed_file_model_is_anchored():
    models = _models()
    assert len(models) > 40
    patterns = {p for m in models if m not in (Strict, Lenient) for p in _patterns(m.model_json_schema())}
    assert len(patterns) > 20
    for p in patterns:
        assert p.startswith(r"\A") and p.endswith(r"\Z"), p
        assert re.compile(p).search("h100\n") is None or not p.endswith(r"[a-z0-9])?\Z"), p
    for m in models:
        assert m.model_config.get("regex_engine") == "python-re", m


# --- the stack-file edit of `stack init` ---------------------------------------------------

def test_write_pointer_keeps_pulumis_keys_and_comments(tmp_path):
    f = tmp_path / "Pulumi.c1.yaml"
    assert write_pointer(f, "c1") is True
    assert f.read_text() == "config:\n  clusterstack:cluster: c1\n"
    assert write_pointer(f, "c1") is False
    f.write_text("# written by pulumi\nencryptionsalt: v1:abc=\n")
    assert write_pointer(f, "c1") is True
    assert f.read_text() == "# written by pulumi\nconfig:\n  clusterstack:cluster: c1\nencryptionsalt: v1:abc=\n"
    f.write_bytes(b"config: {a: \xff}\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        write_pointer(f, "c1")


@pytest.mark.parametrize("text", [
    "a: yes\nb: 010\nc: 0o10\nd: on\ne: 1.5e3\nf: ~\ng: [1, true, null, '2']\nh: 2001-12-14\n",
    "%YAML 1.2\n---\na: no\nb: 0x1f\n",
])
def test_the_fast_parse_resolves_scalars_as_ruamels_own_safe_loader(text):
    # The one loader pins the resolver's YAML version per load (config/document/yamltext.py
    # _OneVersionResolver); what a scalar becomes must not change: compared with an unmodified
    # ruamel safe loader and with the round-trip loader the located errors come from.
    from ruamel.yaml import YAML

    from clusterstack.config.document import parse_yaml
    plain = YAML(typ="safe")
    assert parse_yaml(text, Path("x.yaml")) == plain.load(text)
    assert parse_yaml(text, Path("x.yaml")) == parse_yaml(text, Path("x.yaml"), positions=True)


@pytest.mark.parametrize("positions", [False, True])
def test_a_yaml_directive_of_another_version_is_refused_at_its_line(positions):
    # ruamel's C loader reads YAML 1.2 whatever the directive says, its round-trip parser
    # honours %YAML 1.1 (yes → true, 010 → 8): one file, two meanings — refused.
    from clusterstack.config.document import parse_yaml
    text = "# a cluster\n%YAML 1.1\n---\nenabled: yes\n"
    with pytest.raises(ConfigError) as ei:
        parse_yaml(text, Path("x.yaml"), positions=positions)
    problem = ei.value.problems[0]
    assert problem.line == 2 and "YAML 1.1 directive" in problem.message
    assert parse_yaml(text.replace("1.1", "1.2"), Path("x.yaml"), positions=positions) == {"enabled": "yes"}


#: Modules allowed a plain ``json.load(s)``: the one reader itself, and the plan cache and the
#: diff --base protocol, which also run under a REF's package that may predate ``json_loads``
#: (a cache entry's failures are misses; a protocol document is the driver's own).
_PLAIN_JSON_OK = {"config/document/jsontext.py", "plan/cache.py", "plan/refproto.py"}


def test_every_json_input_is_decoded_by_the_one_reader():
    """``json.loads`` / ``json.load`` appear nowhere in ``src/clusterstack`` but where
    :data:`_PLAIN_JSON_OK` says (found by the AST: a call whatever its line breaks)."""
    import ast

    src = Path(__file__).resolve().parents[2] / "src" / "clusterstack"
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(parsed(path)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("loads", "load") and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "json" and rel not in _PLAIN_JSON_OK):
                found.append(f"{rel}:{node.lineno}")
    assert not found, f"decode with clusterstack.config.document.json_loads instead: {found}"


@pytest.mark.parametrize("text, problem", [
    ('{"n": ' + "9" * 5000 + "}", "out of range"), ("[NaN]", "NaN is not a JSON number"),
    ("[Infinity]", "Infinity is not a JSON number"), ('{"n": 1', "Expecting"),
    ("[1e999]", "number 1e999 is out of range"), ("[-1.5e400]", "out of range"),
    # RFC 8259 4: names SHOULD be unique; readers disagree on which value counts
    ('{"op": "delete", "urn": "u", "op": "same"}', "the key 'op' appears twice in one object"),
    ('[{"a": {"b": 1, "b": 1}}]', "the key 'b' appears twice"),
])
def test_json_loads_refuses_what_no_input_may_hold(text, problem):
    from clusterstack.config.document import json_loads

    with pytest.raises(ValueError, match=problem):
        json_loads(text)
    assert json_loads("[1.5e308, -2.5, 0.1]") == [1.5e308, -2.5, 0.1]


def test_every_json_reader_refuses_a_repeated_key(tmp_path):
    """The readers built on the one JSON reader refuse a key named twice, each with its own
    located error: a stack export, an import file, a saved plan, a ``meta.json`` of ``ci
    preview``, a preview comment's data line (no data)."""
    from clusterstack.ci.comment import CommentError, load_reports, parse_data
    from clusterstack.errors import ClusterstackError
    from clusterstack.plan.model import loads
    from clusterstack.pulumi.importfile import parse as parse_import
    from clusterstack.pulumi.state import load_state

    state = tmp_path / "state.json"
    state.write_text('{"version": 3, "deployment": {"resources": [], "resources": []}}')
    with pytest.raises(ClusterstackError, match="the key 'resources' appears twice"):
        load_state(state)
    with pytest.raises(ClusterstackError, match="the key 'id' appears twice"):
        parse_import('{"resources": [{"type": "a:b:C", "name": "x", "id": "1", "id": "2"}]}')
    with pytest.raises(ValueError, match="the key 'format' appears twice"):
        loads('{"format": "x", "format": "clusterstack.plan/v1"}')
    (tmp_path / "ci" / "a").mkdir(parents=True)
    (tmp_path / "ci" / "a" / "meta.json").write_text('{"schema": 2, "stack": "x", "severity": "none", '
                                                     '"severity": "blocked"}')
    with pytest.raises(CommentError, match="the key 'severity' appears twice"):
        load_reports(tmp_path / "ci")
    assert parse_data('<!-- clusterstack-ci:data {"changed": ["x"], "changed": []} -->') is None


@pytest.mark.parametrize("name, text, line", [("c.yaml", "a: 1\nqps: abc\n", 2),
                                              ("c.toml", 'a = 1\nqps = "abc"\n', 2)])
def test_a_union_refusing_a_value_is_one_problem_at_its_key(tmp_path, name, text, line):
    # pydantic reports one error per member of ``StrictInt | StrictFloat`` (locs qps.int,
    # qps.float): the reader sees one value, so one problem, at its line, naming the field
    from typing import Annotated
    from pydantic import BaseModel, StrictFloat, StrictInt

    class M(BaseModel):
        a: int
        qps: Annotated[StrictInt | StrictFloat, "x"]

    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as exc:
        Document.read(tmp_path / name).validate(M)
    (p,) = exc.value.problems
    assert (p.field, p.line) == ("qps", line)
    assert p.message == "Input should be a valid integer or a valid number"
