"""``clusterstack schema``: JSON Schemas from the models, usable by editors (ECMA anchors) and
agreeing with the loader on the shipped files."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from helpers import REPO
from clusterstack.cli import main
from clusterstack.schemas import KINDS, schema, schema_text


def patterns(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "pattern":
                yield v
            else:
                yield from patterns(v)
    elif isinstance(node, list):
        for v in node:
            yield from patterns(v)


@pytest.mark.parametrize("kind", list(KINDS))
def test_schema_is_valid_and_editor_anchored(kind):
    doc = schema(kind)
    jsonschema.Draft202012Validator.check_schema(doc)
    for p in patterns(doc):
        assert r"\A" not in p and r"\Z" not in p, p
        re.compile(p)


# Files that state every value themselves (the others take some from [defaults], which a
# per-file schema cannot know).
@pytest.mark.parametrize("rel,kind", [("clusters/cw-demo-h100.yaml", "cluster"),
                                      ("clusters/gcp-demo.yaml", "cluster"),
                                      ("clusters/gcp-tpu-a.yaml", "cluster"),
                                      ("services.yaml", "services"),
                                      ("github/github.yaml", "github")])
def test_shipped_files_pass_their_schema(rel, kind):
    path = REPO / rel
    if not path.is_file():
        pytest.skip(f"{rel} not shipped")
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema(kind),
                        cls=jsonschema.Draft202012Validator)


def test_schema_rejects_what_the_loader_rejects():
    data = yaml.safe_load((REPO / "clusters" / "cw-demo-h100.yaml").read_text(encoding="utf-8"))
    data["provisioning"]["coreweave"]["federation_dns"]["zone_id"] = "not-hex"
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.validate(data, schema("cluster"), cls=jsonschema.Draft202012Validator)
    data = yaml.safe_load((REPO / "clusters" / "cw-demo-h100.yaml").read_text(encoding="utf-8"))
    data["provisioning"]["coreweave"]["kueue"]["typo"] = 1     # strict under provisioning
    with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
        jsonschema.validate(data, schema("cluster"), cls=jsonschema.Draft202012Validator)


def test_schema_command_prints_the_schema(capsys):
    assert main(["schema", "workspace"]) == 0
    out = capsys.readouterr().out
    assert out == schema_text("workspace") and json.loads(out)["title"].startswith("clusterstack workspace")


def test_schema_command_refuses_an_unknown_kind(capsys):
    assert main(["schema", "clusterz"]) == 2
    assert "unknown schema 'clusterz'" in capsys.readouterr().err
