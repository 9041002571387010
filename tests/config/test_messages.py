"""Errors in the reviewed file's words: paths relative to the workspace root (absolute only
outside it), a missing section shown with its shape (derived from the model), and — over every
model and representative bad values — no regex and no pydantic class name in any message."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from helpers import REPO, edit
from clusterstack.cli import main
from clusterstack.config.document import Document, shape
from clusterstack.errors import Problem
from clusterstack.schemas import KINDS, model_of

# The shipped file of each model kind (clusterstack.schemas.KINDS), read as a valid start.
SHIPPED = {"cluster": "clusters/cw-demo-h100.yaml", "workspace": "clusterstack.toml",
           "iam": "iam/iam.yaml", "services": "services.yaml", "buckets": "buckets/buckets.yaml",
           "github": "github/github.yaml"}
# One bad value of each kind a field can get wrong: the wrong scalar type, a mapping where a
# scalar is, a list where a mapping is, an out-of-format string, a huge number.
BAD_VALUES = ("Not Valid ~ value!", {"unexpected": 1}, ["a", "b"], 99999999999, True, -1, "")
# How a regex shows itself in a message (anchors, classes, groups, quantifiers, escapes).
REGEX = re.compile(r"\\[AZdswb]|\[\^?[a-z0-9]-|\(\?|\{\d+(,\d*)?\}|\.\*|\[\\|\$'")


def _model_names() -> set[str]:
    names: set[str] = set()

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("clusterstack."):
                names.add(sub.__name__)
            walk(sub)
    walk(BaseModel)
    return {n for n in names if len(n) > 3}


def _leaves(data, path=()):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data[:2]):
            yield from _leaves(v, (*path, i))
    if path:
        yield path


def _set(data, path, value):
    out = copy.deepcopy(data)
    node = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


def test_every_models_errors_name_no_regex_and_no_class():
    assert set(SHIPPED) == set(KINDS)
    models = {kind: model_of(kind) for kind in SHIPPED}    # imports every model module
    classes = _model_names()
    assert {"ClusterConfig", "CoreweaveProvisioning", "WorkspaceFile"} <= classes
    seen = 0
    for kind, rel in SHIPPED.items():
        model = models[kind]
        doc = Document.read(REPO / rel)
        positions = [doc.positioned] if doc.format == "yaml" else []
        for path in _leaves(doc.data):
            for bad in BAD_VALUES:
                data = _set(doc.data, path, bad)
                try:
                    model.model_validate(data)
                    continue
                except ValidationError as exc:
                    # the original's positions (parsed once): lines of the unchanged text
                    problems = Document(path=doc.path, text=doc.text, data=data, format=doc.format,
                                        _positioned=positions).validation_problems(exc, model)
                for p in problems:
                    text = p.render()
                    seen += 1
                    assert not REGEX.search(text), (kind, path, bad, text)
                    named = [c for c in classes if re.search(rf"\b{c}\b", text)]
                    assert not named, (kind, path, bad, text)
                    assert "instance of" not in text and "valid dictionary" not in text, text
    assert seen > 500   # the walk reached every kind's fields, not a handful


def test_the_checker_sees_a_regex_and_a_class_name():
    assert REGEX.search(r"String should match pattern '\A[a-z0-9-]+\Z'")
    assert REGEX.search("should match pattern '^[a-z]{1,63}$'")
    assert not REGEX.search("'Bad!' is not lowercase letters, digits and '-' (at most 63 characters)")
    model_of("cluster")
    assert "Ingress" in _model_names()


def test_a_missing_section_is_shown_with_its_shape_from_the_model():
    from clusterstack.config.cluster import ClusterConfig, Ingress
    from clusterstack.workspace.model import WorkspaceSection

    # every required field of the model, and none of the optional ones
    ingress = shape("ingress", Ingress).splitlines()
    required = [k for k, f in Ingress.model_fields.items() if f.is_required()]
    assert ingress[0] == "  ingress:" and [ln.split(":")[0].strip() for ln in ingress[1:]] == required
    assert "ingress_class" not in "\n".join(ingress)          # has a default
    assert shape("provisioning", ClusterConfig.model_fields["provisioning"].annotation) == \
        "  provisioning:\n    provider: <coreweave | gcp>"
    toml = shape("workspace", WorkspaceSection, format="toml")
    assert toml.splitlines()[0] == "  [workspace]"
    assert all(" = " in ln for ln in toml.splitlines()[1:])


def test_the_cli_shows_a_missing_section_with_its_shape(workspace_copy, capsys):
    path = workspace_copy / "clusters" / "cw-demo-h100.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("    rbac: {service_account: controller}\n", ""), encoding="utf-8")
    assert main(["--root", str(workspace_copy), "validate", "cw-demo-h100"]) == 2
    err = capsys.readouterr().err
    assert ("provisioning.coreweave.rbac: Field required — add it, shaped like:\n"
            "  rbac:\n    service_account: <text>\n") in err


def test_paths_are_relative_to_the_workspace_root_and_absolute_outside(workspace_copy, tmp_path,
                                                                        monkeypatch, capsys):
    edit(workspace_copy / "clusters" / "cw-demo-h100.yaml", "max_slices: 32", "max_slices: 2")
    monkeypatch.chdir(workspace_copy / "clusters")          # discovered from a subdirectory
    assert main(["validate", "cw-demo-h100"]) == 2
    assert capsys.readouterr().err.startswith("error: clusters/cw-demo-h100.yaml:")
    outside = tmp_path / "elsewhere" / "preview.json"
    outside.parent.mkdir()
    outside.write_text("{}", encoding="utf-8")
    assert main(["guard", str(outside)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {outside}")


def test_render_keeps_its_api():
    p = Problem("bad", "fix it", file=Path("/ws/clusters/a.yaml"), line=3, field="name")
    assert p.render() == "/ws/clusters/a.yaml:3: name: bad — fix it"
    assert p.render(Path("/ws")) == "clusters/a.yaml:3: name: bad — fix it"
    assert p.render(Path("/other")) == "/ws/clusters/a.yaml:3: name: bad — fix it"
