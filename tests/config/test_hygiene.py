"""The loader's input hygiene (clusterstack.config.document: read_bytes → decode → parse →
check_structure) on every kind of file the tool reads: size and depth limits, control
characters, bounded integers, strict booleans — each a located exit-2 error, nothing written,
no traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import REPO, edit, line_of
from clusterstack.cli import main
from clusterstack.config.document import (MAX_BYTES, MAX_DEPTH, MAX_INT, Document, check_structure,
                                          decode, parse_json, read_text)
from clusterstack.errors import ConfigError
from outside import run

H100 = "clusters/cw-demo-h100.yaml"


def _validate(root: Path, capsys) -> tuple[int, str]:
    rc = main(["--root", str(root), "validate"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return rc, cap.err


def _insert_line3(path: Path, line: bytes) -> None:
    raw = path.read_bytes()
    cut = raw.index(b"\n", raw.index(b"\n") + 1) + 1
    path.write_bytes(raw[:cut] + line + raw[cut:])


@pytest.mark.parametrize("rel", [H100, "clusterstack.toml", "infra/Pulumi.cw-demo-h100.yaml",
                                 "buckets/buckets.yaml", "github/github.yaml", "iam/iam.yaml"])
@pytest.mark.parametrize("char", [b"\x00", b"\x07", b"\x1b", b"\x7f"])
def test_a_control_character_is_located_in_every_reviewed_file(workspace_copy, capsys, rel, char):
    root = workspace_copy.resolve()
    _insert_line3(root / rel, b"# a" + char + b"b\n")
    before = (root / rel).read_bytes()
    rc, err = _validate(root, capsys)
    assert rc == 2, err
    assert f"{rel}:3: control character U+{char[0]:04X} at column 4" in err
    assert (root / rel).read_bytes() == before


@pytest.mark.parametrize("rel", [H100, "clusterstack.toml", "iam/iam.yaml"])
@pytest.mark.parametrize("char, name", [("\u2028", "LINE SEPARATOR"), ("\u2029", "PARAGRAPH SEPARATOR"),
                                        ("\u202e", "RIGHT-TO-LEFT OVERRIDE"), ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
                                        ("\x85", "a C1 control character")])
def test_a_line_separator_or_bidi_control_is_located_in_a_reviewed_file(workspace_copy, capsys, rel,
                                                                        char, name):
    # U+2028 inside a comment on line 1 was refused as "line 4: did not find expected <document
    # start>": libyaml and ruamel's scanner break the line there, YAML 1.2 and a diff do not.
    root = workspace_copy.resolve()
    _insert_line3(root / rel, f"# a{char}b\n".encode())
    before = (root / rel).read_bytes()
    rc, err = _validate(root, capsys)
    assert rc == 2, err
    assert f"{rel}:3: U+{ord(char):04X} ({name}) at column 4" in err
    assert (root / rel).read_bytes() == before


def test_tab_newline_and_a_byte_order_mark_are_text():
    assert decode(b"\xef\xbb\xbfa:\t1\r\n", Path("x.yaml")) == "a:\t1\r\n"


def test_a_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_BYTES)
    with pytest.raises(ConfigError, match="larger than 4 MiB"):
        Document.read(big)


@pytest.mark.parametrize("text", ["deep: " + "[" * 5000 + "]" * 5000,
                                  "deep: " + "{a: " * 200 + "1" + "}" * 200,
                                  "".join(" " * i + "k:\n" for i in range(0, 2000, 2)) + " " * 2000 + "v",
                                  "deep:\n  " + "- " * 3000 + "x",      # one line of compact sequences
                                  "deep:\n  - " + "- " * 200 + "x"],
                         ids=["flow-lists", "flow-maps", "indentation", "compact-3000", "compact-200"])
def test_deep_yaml_is_a_located_error_not_a_recursion_error(tmp_path, text):
    path = tmp_path / "deep.yaml"
    path.write_text("a: 1\n" + text + "\n")
    with pytest.raises(ConfigError) as ei:
        Document.read(path)
    p = ei.value.problems[0]
    assert "nested more than" in p.message and p.line is not None and p.line >= 2


def test_yaml_aliases_cannot_expand_a_small_file_into_billions_of_values(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, "
              f"*a{i-1}, *a{i-1}, *a{i-1}]" for i in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="expands to more than"):
        Document.read(path)


@pytest.mark.parametrize("digits", [20, 400, 5000])
def test_an_integer_beyond_int64_is_a_located_error(workspace_copy, capsys, digits):
    path = workspace_copy / H100
    text = edit(path, "max_slices: 32", "max_slices: " + "9" * digits)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2, err
    assert f"{H100}:{line_of(text, '9' * digits)}:" in err and "out of range" in err
    assert "9" * 40 not in err   # the value is cut, not echoed


@pytest.mark.parametrize("spelled", [".nan", ".inf", "-.Inf", ".NaN"])
def test_a_number_that_is_not_finite_is_a_located_error(workspace_copy, capsys, spelled):
    text = edit(workspace_copy / H100, "max_slices: 32", f"max_slices: {spelled}")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2, err
    assert f"{H100}:{line_of(text, f'max_slices: {spelled}')}:" in err and "not a finite number" in err


@pytest.mark.parametrize("text, name", [("a:\n  free: {form: .nan}\n", "x.yaml"),
                                        ("[t]\nx = inf\n", "x.toml"), ("[t]\nx = nan\n", "x.toml")])
def test_nan_and_infinity_are_refused_in_every_reviewed_file(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match="is not a finite number") as exc:
        Document.read(path)
    assert f"{name}:2:" in str(exc.value)   # the value's line


def test_a_count_beyond_a_kubernetes_int32_is_refused(workspace_copy, capsys):
    text = edit(workspace_copy / H100, "device_count: 8}", f"device_count: {2**31}}}")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"{H100}:{line_of(text, str(2**31))}: scale_groups.h100.resources.device_count:" in err


@pytest.mark.parametrize("old,new,field", [
    ("ram: 512GB", "ram: " + "9" * 400 + "GB", "scale_groups.cpu-general.resources.ram"),
    ("disk: 6.98TiB", "disk: " + "9" * 300 + "TiB", "scale_groups.cpu-general.resources.disk"),
    ("ram: 512GB", "ram: 9EiB", "scale_groups.cpu-general.resources.ram"),            # > 8 EiB
    ("ram: 512GB", "ram: 8EiB", "scale_groups.cpu-general.resources.ram"),            # 2^63: one byte over
    ("manager_memory_limit: 4Gi", "manager_memory_limit: " + "9" * 400 + "Gi",
     "provisioning.coreweave.kueue.manager_memory_limit"),
])
def test_a_size_beyond_a_kubernetes_int64_quantity_is_a_located_error(workspace_copy, capsys, old,
                                                                      new, field):
    """A float would overflow to infinity (OverflowError, exit 1) and a 200-digit size would give
    nonsense quotas: sizes are bounded at 2^63 − 1 bytes, computed exactly, for validate and plan alike."""
    text = edit(workspace_copy / H100, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and f"{H100}:{line_of(text, new[:20])}: " in err, err
    limit = ("is out of range: at most 9223372036854775807 bytes (2^63 − 1, just under 8 EiB: a "
             "Kubernetes quantity is an int64)")
    assert f"{field}: " in err and limit in err and "internal error" not in err
    assert main(["--root", str(workspace_copy), "plan", "cw-demo-h100"]) == 2
    assert limit in capsys.readouterr().err


@pytest.mark.parametrize("old,new,field", [
    ("port: 10000", "port: true", "controller.coreweave.port"),
    ("max_slices: 32", "max_slices: false", "scale_groups.h100.max_slices"),
    ("max_slices: 32", "max_slices: '32'", "scale_groups.h100.max_slices"),
    ("max_slices: 32", "max_slices: 32.0", "scale_groups.h100.max_slices"),
])
def test_an_integer_field_takes_only_an_integer(workspace_copy, capsys, old, new, field):
    text = edit(workspace_copy / H100, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"{H100}:{line_of(text, new)}: {field}: Input should be a valid integer" in err


def test_a_boolean_field_takes_only_a_boolean(workspace_copy, capsys):
    text = edit(workspace_copy / "github/github.yaml", "required_review_thread_resolution: true",
                "required_review_thread_resolution: 1")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"github/github.yaml:{line_of(text, 'thread_resolution: 1')}:" in err
    assert "valid boolean" in err


def test_check_structure_reports_the_path():
    assert check_structure({"a": [1, {"b": MAX_INT + 1}]})[0] == ("a", 1, "b")
    assert check_structure({"a": [1, {"b": MAX_INT}]}) is None
    assert check_structure({"a": True}) is None


@pytest.mark.parametrize("text,fragment", [
    ('{"a": ' + "9" * 5000 + "}", "out of range"),
    ('{"a": ' + "9" * 19 + "}", "out of range"),
    ('{"a": NaN}', "not a JSON number"),
    ("[" * 5000 + "]" * 5000, "nested more than"),
    ('{"a": "[[[[", "b": 1}', None),
])
def test_json_limits(tmp_path, text, fragment):
    if fragment is None:
        assert parse_json(text, tmp_path / "x.json") == {"a": "[[[[", "b": 1}
        return
    with pytest.raises(ConfigError, match=fragment):
        parse_json(text, tmp_path / "x.json")


def test_a_state_file_gets_the_same_hygiene(tmp_path):
    from clusterstack.pulumi.state import StateFileError, load_state

    cases = {"latin1.json": b'{"version": 3, "x": "caf\xe9"}', "nul.json": b'{"a": "\x00"}',
             "huge.json": b'{"version": ' + b"9" * 5000 + b"}", "deep.json": b"[" * 3000 + b"]" * 3000}
    for name, raw in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(StateFileError) as ei:
            load_state(tmp_path / name)
        assert ei.value.exit_code == 2 and ei.value.problems[0].file == tmp_path / name
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(StateFileError, match="is a directory"):
        load_state(tmp_path / "dir.json")


def test_an_import_file_gets_the_same_hygiene(tmp_path):
    from clusterstack.pulumi.importfile import ImportFileError, parse

    with pytest.raises(ImportFileError, match="out of range"):
        parse(json.dumps({"resources": []})[:-1] + ', "x": ' + "1" * 5000 + "}", file=tmp_path / "i.json")


def test_a_keyset_path_that_is_a_directory_is_a_user_error(tmp_path):
    from clusterstack.iam.crypto import KeysetError, load_cipher
    from clusterstack.iam.model import Encryption

    (tmp_path / "keyset.json").mkdir()
    enc = Encryption.model_validate({"scheme": "tink-daead-aes256-siv", "keyset": "keyset.json"})
    with pytest.raises(KeysetError, match="is a directory"):
        load_cipher(enc, tmp_path)
    (tmp_path / "k2.json").write_bytes(b"\xff\xfe")
    (tmp_path / "k2.json").chmod(0o600)   # a cleartext keyset others may read is refused first
    with pytest.raises(KeysetError, match="not UTF-8"):
        load_cipher(Encryption.model_validate({"scheme": "tink-daead-aes256-siv", "keyset": "k2.json"}), tmp_path)


def test_read_text_refuses_a_directory(tmp_path):
    with pytest.raises(ConfigError, match="is a directory"):
        read_text(tmp_path)


def test_the_depth_limit_leaves_room_for_the_shipped_configs():
    for path in sorted(REPO.glob("clusters/*.yaml")) + [REPO / "iam/iam.yaml", REPO / "services.yaml"]:
        doc = Document.read(path)
        assert check_structure(doc.data, max_depth=MAX_DEPTH // 4) is None, path


# --- names with the receiving system's limits; errors in words, never a regex ----------------

@pytest.mark.parametrize("old,new,field,fragment", [
    ("kube_context: demo-h100_US-EAST-04A", 'kube_context: " "', "platform.coreweave.kube_context",
     "is not a non-blank value"),
    ("cluster: {name: demo-h100,", 'cluster: {name: "",', "provisioning.coreweave.cluster.name",
     "is not lowercase letters"),
    ("cluster: {name: demo-h100,", "cluster: {name: " + "d" * 64 + ",", "provisioning.coreweave.cluster.name",
     "at most 63 characters"),
    ("zone: US-EAST-04A}", "zone: ' US-EAST-04A'}", "provisioning.coreweave.cluster.zone",
     "is not a CoreWeave zone"),
    ("namespace: training", "namespace: " + "n" * 64, "kubernetes_provider.namespace", "at most 63"),
    ("cluster_queue: training-cq", "cluster_queue: " + "q" * 64, "kubernetes_provider.kueue.cluster_queue",
     "at most 63"),
])
def test_names_carry_the_limits_of_the_system_that_receives_them(workspace_copy, capsys, old, new,
                                                                 field, fragment):
    text = edit(workspace_copy / H100, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"{H100}:{line_of(text, new)}: {field}:" in err and fragment in err, err
    assert "\\A" not in err and "\\Z" not in err


def test_a_too_long_cluster_name_says_the_limit_and_its_source_not_pydantics_words(workspace_copy, capsys):
    text = edit(workspace_copy / H100, "name: cw-demo-h100\n", "name: " + "c" * 64 + "\n")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    (line,) = [ln for ln in err.splitlines() if f"{H100}:{line_of(text, 'name: ccc')}: name:" in ln]
    assert line.endswith(f"name: {'c' * 37!r}… is 64 characters; at most 63 characters are allowed: it is "
                         "an RFC 1123 DNS label (what Kubernetes object names and label values are, "
                         "RFC 1123 §2.1) — shorten it"), line
    assert "String should" not in err


def test_a_string_where_a_list_belongs_says_so(workspace_copy, capsys):
    text = edit(workspace_copy / H100, "federation_allow_sources: [203.0.113.10, 198.51.100.0/24]",
                "federation_allow_sources: '2'")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"{H100}:{line_of(text, 'federation_allow_sources')}: "
            "provisioning.coreweave.ingress.federation_allow_sources: must be a list") in err


def test_secret_references_and_emails_do_not_match_before_a_trailing_newline():
    from clusterstack.iam.targets import EMAIL_RE
    from clusterstack.config.secretspec import SecretSpec

    assert EMAIL_RE.match("a@example.org") and not EMAIL_RE.match("a@example.org\n")
    with pytest.raises(Exception):
        SecretSpec.parse("env:TOKEN\n")


def test_stack_names_are_pulumis():
    from clusterstack.config.types import STACK_NAME_RE

    assert STACK_NAME_RE.match("gcp-demo.v2_x")
    for bad in ("", ".", "..", "x <b>@octocat", "a/b", "a" * 101, "ok\n"):
        assert not STACK_NAME_RE.match(bad), bad


# --- near-miss keys in the sections shared with the scheduler ----------------------------------

@pytest.mark.parametrize("old,new,field,suggestion", [
    ("instance_type: gd-8xh100ib-i128", "instance_typ: gd-8xh100ib-i128",
     "scale_groups.h100.slice_template.coreweave.instance_typ", "instance_type"),
    ("    num_vms: 1\n    resources: {cpu: 128", "    num_nodes: 1\n    resources: {cpu: 128",
     "scale_groups.h100.num_nodes", "num_vms"),
    ("device_variant: H100, device_count: 8", "device_variant: H100, devcie_count: 8",
     "scale_groups.h100.resources.devcie_count", "device_count"),
])
def test_a_near_miss_of_a_key_the_tool_reads_is_an_error(workspace_copy, capsys, old, new, field,
                                                         suggestion):
    text = edit(workspace_copy / H100, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    typo = field.rsplit(".", 1)[1]
    # one line, read once: the key, then what to do (the suggestion named once, no second dash)
    line = next(x for x in err.splitlines() if f"unknown key {typo!r}" in x)
    assert line == (f"error: {H100}:{line_of(text, typo + ':')}: {field}: unknown key {typo!r} — "
                    f"rename it to {suggestion}: (clusterstack reads that key; this one it would "
                    "ignore)")
    assert line.count(" — ") == 1 and line.count(suggestion) == 1


def test_the_schedulers_own_keys_are_not_near_misses():
    from clusterstack.config.cluster import ClusterConfig
    from clusterstack.config.document import near_misses

    from k8s_schemas import reference_dir

    ref = reference_dir()
    marin = ref / "marin" / "lib" / "iris" / "config" if ref else None
    if marin is None or not marin.is_dir():
        pytest.skip("../shared/reference/marin is absent")
    for path in sorted(marin.glob("*.yaml")):
        assert near_misses(ClusterConfig, Document.read(path).data) == [], path


def test_unknown_keys_far_from_every_known_key_stay_allowed(workspace_copy, capsys):
    edit(workspace_copy / H100, "    max_slices: 32\n", "    max_slices: 32\n    priority: 3\n    worker: {port: 1}\n")
    assert _validate(workspace_copy, capsys)[0] == 0


@pytest.mark.parametrize("text, line", [
    ("a: [[[\nb: 1\n", 1),
    ("a: [[\nb: 1\n", None),
    ("a: '[[[' \nb: [[[\n", 2),                    # brackets inside a quoted string do not count
    ("a: 1 # [[[\nb: [[[\n", 2),                   # nor inside a comment
    ('a: "x\\\n[[[" \nb: [[[\n', 3),              # an escaped line break still counts as a line
    ("a: it's [[[\n", 1),                          # an apostrophe inside a word opens no string
    ("a:\n" + " " * 9 + "b: 1\n", 2),              # indentation past 4 × depth
    ("a:\r" + " " * 9 + "b: 1\n", 2),              # ... on a line ended by a carriage return
    ("a:\n" + " " * 9 + "\t\nb: [1]\n", None),     # a blank line is not nesting
])
def test_the_nesting_scan_names_the_first_line_too_deep(text, line):
    from clusterstack.config.document import _nesting_line
    assert _nesting_line(text, 2) == line


@pytest.mark.parametrize("merged", ["manager_memory_limt: 8Gi", "manager_memory_limit: 8Gi"])
def test_a_yaml_merge_key_is_refused_at_its_line(workspace_copy, capsys, merged):
    # `<<` is YAML 1.1's merge type, not YAML 1.2; ruamel honours it, so a merged key was
    # planned unseen (or, misspelt, crashed the error locator with a KeyError, exit 1).
    root = workspace_copy.resolve()
    edit(root / H100, "      manager_memory_limit: 4Gi\n",
         f"      manager_memory_limit: 4Gi\n      <<: {{{merged}}}\n")
    line = line_of((root / H100).read_text(), "<<:")
    for argv in (["validate"], ["plan", "cw-demo-h100"]):
        rc = main(["--root", str(root), *argv])
        cap = capsys.readouterr()
        assert rc == 2 and "Traceback" not in cap.err and "internal error" not in cap.err
        assert f"{H100}:{line}: invalid YAML: a merge key `<<`" in cap.err
        assert "write the merged keys out" in cap.err


def test_a_quota_of_nodes_times_a_per_node_size_beyond_an_int64_is_located_at_its_group(
        workspace_copy, capsys):
    # 7 EiB per node is a valid size; 32 nodes of it is a 224 EiB quota (no int64 holds it). An
    # instance type the table lacks, so the config's own figure is taken (a known type would
    # refuse 7 EiB as more than its hardware first: config.cluster_file.instance_type_contradictions)
    edit(workspace_copy / H100, "instance_type: gd-8xh100ib-i128", "instance_type: gd-8xh100ib-i999")
    text = edit(workspace_copy / H100, "ram: 2048GB", "ram: 7EiB")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2, err
    assert err.startswith(f"error: {H100}:{line_of(text, '  h100:')}: scale_groups.h100: the ClusterQueue's "
                          "memory quota of NodePool cwdemo-h100 is ")
    assert "(32 nodes × per-node capacity): out of range, at most 9223372036854775807 bytes" in err
    assert main(["--root", str(workspace_copy), "plan", "cw-demo-h100"]) == 2
    assert "224Ei" not in capsys.readouterr().out


# --- only regular files are read; YAML's non-core tags; an instance type's charset ------
# A named pipe, a device or a directory where a file is read is refused at once, located: a
# pipe blocked the read (`guard`, services.yaml, iam/iam.yaml hung), /dev/zero read until
# memory ran out. Run as child processes: a regression would hang, not fail (outside.TIMEOUT).


def _special(kind: str, path: Path) -> None:
    if path.exists() or path.is_symlink():
        (shutil.rmtree if path.is_dir() and not path.is_symlink() else Path.unlink)(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()


_SAID = {"fifo": "is a named pipe, not a regular file", "zero": "is a character device, not a regular file",
         "dir": "is a directory"}


@pytest.mark.parametrize("kind", ["fifo", "zero", "dir"])
def test_guard_refuses_a_file_that_is_no_file_at_once(tmp_path, kind):
    target = tmp_path / "preview.json"
    _special(kind, target)
    r = run("guard", str(target), root=REPO)
    assert r.code == 2 and f"error: {target}: {_SAID[kind]}" in r.err and "Traceback" not in r.both


@pytest.mark.parametrize("rel, argv", [
    ("iam/iam.yaml", ["iam", "check"]), ("iam/iam.yaml", ["iam", "whois", "human-001"]),
    ("iam/iam.yaml", ["validate"]), ("services.yaml", ["deploy", "list"]),
    (H100, ["validate", "cw-demo-h100"]), ("clusterstack.toml", ["validate"]),
])
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_reviewed_file_that_is_a_pipe_or_a_device_is_refused_at_once(tmp_path, rel, argv, kind):
    from helpers import copy_workspace, git

    root = copy_workspace(tmp_path / "ws", services=True)
    git(root, "init", "-q")
    _special(kind, root / rel)
    r = run(*argv, root=root)
    assert r.code == 2 and "Traceback" not in r.both and "internal error" not in r.both, r.err
    # a link to /dev/zero may be refused first as a path leaving the workspace root
    assert _SAID[kind] in r.err or (kind == "zero" and "outside the workspace root" in r.err), r.err


@pytest.mark.parametrize("value, tag", [
    ("[!!binary MC4wLjAuMC8w]", "!!binary"),         # base64 of 0.0.0.0/0: planned as the open internet
    ("!!set {203.0.113.10: null}", "!!set"),
    ("[!!python/object:os.system 203.0.113.10]", "!!python/object:os.system"),
    ("[!allow 203.0.113.10]", "!allow"),
    ("[!!timestamp 203.0.113.10]", "!!timestamp"),
    ("!!omap [{a: 203.0.113.10}]", "!!omap"),
])
def test_a_yaml_tag_beyond_the_core_schema_is_refused_at_its_line(workspace_copy, capsys, value, tag):
    text = edit(workspace_copy / H100, "federation_allow_sources: [203.0.113.10, 198.51.100.0/24]",
                f"federation_allow_sources: {value}")
    line = line_of(text, "federation_allow_sources:")
    for argv in (["validate"], ["plan", "cw-demo-h100"]):
        assert main(["--root", str(workspace_copy), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {H100}:{line}: the YAML tag {tag!r}: reviewed files hold plain YAML "
                              "1.2 values"), err
        assert "0.0.0.0/0" not in err


@pytest.mark.parametrize("value", ["[!!str 203.0.113.10]", "[! 203.0.113.10]"])
def test_the_core_tags_stay_accepted(workspace_copy, capsys, value):
    edit(workspace_copy / H100, "federation_allow_sources: [203.0.113.10, 198.51.100.0/24]",
         f"federation_allow_sources: {value}")
    assert _validate(workspace_copy, capsys)[0] == 0


@pytest.mark.parametrize("value", ['"gd 8x/../h100\\n"', "GD-8XH100IB-I128", "gd_8xh100", "gd-8xh100-", '"gd-8x\\th100"'])
def test_an_instance_type_is_one_coreweave_instance_name(workspace_copy, capsys, value):
    text = edit(workspace_copy / H100, "instance_type: gd-8xh100ib-i128}", f"instance_type: {value}}}")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2 and err.startswith(
        f"error: {H100}:{line_of(text, value)}: scale_groups.h100.slice_template.coreweave.instance_type: ")
    assert "is not a CoreWeave instance type such as gd-8xh100ib-i128" in err


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("bad", ["2027-02-30", "2027-13-31", "2027-02-29"])
def test_a_date_that_does_not_exist_is_located_not_an_integer_overflow(workspace_copy, capsys, bad):
    # ruamel.yaml 0.19.1 builds a timestamp-shaped plain scalar with datetime.date (constructor.py
    # construct_yaml_timestamp), which raised a bare ValueError once labelled "integer out of range"
    rel = "clusters/cw-demo-teams.yaml"
    text = edit(workspace_copy / rel, "ends: 2027-03-31", f"ends: {bad}")
    before = _tree(workspace_copy)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2, err
    assert f"{rel}:{line_of(text, f'ends: {bad}')}: '{bad}' is not a real date (YYYY-MM-DD)" in err
    assert "integer" not in err and "write a date that exists" in err
    assert _tree(workspace_copy) == before   # nothing written


@pytest.mark.parametrize("positions", [False, True])
def test_bad_dates_and_huge_integers_are_located_by_both_yaml_loaders(tmp_path, positions):
    from clusterstack.config.document.yamltext import parse_yaml
    for text, line, needle in [("a: 1\nb:\n  c: [x, 2027-02-30]\n", 3, "'2027-02-30' is not a real date"),
                               ("a: 2027-02-28 25:00:00\n", 1, "'2027-02-28 25:00:00' is not a real date and time"),
                               ("a: 1\nb: " + "9" * 5000 + "\n", 2, "integer 999999999999… is out of range")]:
        with pytest.raises(ConfigError) as exc:
            parse_yaml(text, tmp_path / "x.yaml", positions=positions)
        assert f"x.yaml:{line}: {needle}" in str(exc.value)
        assert "invalid YAML" not in str(exc.value)


def test_a_value_error_without_a_long_integer_is_not_called_an_integer_overflow(tmp_path):
    from clusterstack.config.document.limits import _unparsable
    err = _unparsable(ValueError("day is out of range for month"), "a = 1\n", tmp_path / "x.toml", ConfigError)
    assert "integer" not in str(err) and "day is out of range for month" in str(err)
