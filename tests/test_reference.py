"""The committed reference (docs/reference/) is what the models say today."""

from __future__ import annotations

from helpers import REPO
from clusterstack.reference import BECOMES, field_comments, pages, render
from clusterstack.config.cluster import Ingress, ScaleGroup
from clusterstack.schemas import KINDS, model_of


def test_committed_reference_is_current():
    committed = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "docs" / "reference").glob("*.md")}
    fresh = pages()
    stale = sorted(n for n in fresh if committed.get(n) != fresh[n])
    assert not stale, (f"docs/reference/{stale} out of date: run "
                       "`.venv/bin/python -m clusterstack.reference docs/reference`")
    assert set(committed) == set(fresh)


def test_every_field_of_every_model_is_listed():
    for kind in KINDS:
        text = render(kind)
        seen = set()

        def walk(model):
            if model.__name__ in seen:
                return
            seen.add(model.__name__)
            assert f"## {model.__name__}\n" in text, (kind, model.__name__)
            for name, f in model.model_fields.items():
                assert f"| `{f.alias or name}` |" in text, (kind, model.__name__, name)
                for arg in _models_in(f.annotation):
                    walk(arg)
        walk(model_of(kind))


def _models_in(t):
    from pydantic import BaseModel
    if isinstance(t, type) and issubclass(t, BaseModel):
        yield t
    for a in getattr(t, "__args__", ()) or ():
        yield from _models_in(a)


def test_what_a_cluster_field_becomes_is_stated_for_every_listed_path():
    text = render("cluster")
    for path, becomes in BECOMES.items():
        assert becomes in text, path


def test_field_comments_come_from_the_model_source():
    assert field_comments(ScaleGroup) == {}          # no trailing comments there
    assert "per-node local disk" in render("cluster")
    assert field_comments(Ingress) == {}
    from clusterstack.workspace.model import WorkspaceSection
    assert field_comments(WorkspaceSection)["project_name"] == "must equal `name:` in <project_dir>/Pulumi.yaml"


def test_editor_patterns_are_anchored_for_ecma_regexes():
    text = render("cluster")
    assert r"\A" not in text and r"\Z" not in text
    assert "matches `^[0-9a-f]{32}$`" in text    # FederationDns.zone_id, \A[0-9a-f]{32}\Z in the model
