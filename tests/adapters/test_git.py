"""Git.checkout_converts: whether a checkout may differ from the blobs (filters, line-ending
conversions), asked of the tree, the repository's attributes files and its config."""

from __future__ import annotations

from pathlib import Path

from clusterstack.adapters.git import Git
from helpers import commit_all, git


def _repo(root: Path) -> Git:
    (root / "a").mkdir(parents=True)
    (root / "a" / "b.txt").write_text("b\n")
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "one file")
    return Git(root)


def test_checkout_converts_only_without_attributes_and_conversion_config(tmp_path):
    root = tmp_path / "r"
    g = _repo(root)
    assert not g.checkout_converts(g.tree(g.resolve("HEAD")))
    git(root, "config", "core.autocrlf", "true")
    assert g.checkout_converts(g.tree(g.resolve("HEAD")))
    git(root, "config", "--unset", "core.autocrlf")
    git(root, "config", "filter.x.smudge", "cat")
    assert g.checkout_converts(g.tree(g.resolve("HEAD")))
    git(root, "config", "--remove-section", "filter.x")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("*.txt ident\n")
    assert g.checkout_converts(g.tree(g.resolve("HEAD")))
    (root / ".git" / "info" / "attributes").unlink()
    assert not g.checkout_converts(g.tree(g.resolve("HEAD")))
    (root / "a" / ".gitattributes").write_text("*.txt eol=crlf\n")   # below the top counts
    commit_all(root, "attributes below the top")
    assert g.checkout_converts(g.tree(g.resolve("HEAD")))
