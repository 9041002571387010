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


def test_state_names_the_tree_of_head_equal_for_a_merge_of_an_up_to_date_branch(tmp_path):
    """``GitState.tree`` is ``git rev-parse HEAD^{tree}``: a --no-ff merge of a branch based on
    the current HEAD has another commit and the branch head's tree (what ``up --reviewed``
    accepts, clusterstack.guard.review)."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "a").write_text("1\n")
    commit_all(tmp_path, "base")
    assert Git(tmp_path).state().tree == git(tmp_path, "rev-parse", "HEAD^{tree}")
    git(tmp_path, "checkout", "-q", "-b", "pr")
    (tmp_path / "a").write_text("2\n")
    commit_all(tmp_path, "pr")
    head = Git(tmp_path).state()
    git(tmp_path, "checkout", "-q", "main")
    git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge", "pr")
    merged = Git(tmp_path).state()
    assert merged.commit != head.commit and merged.tree == head.tree is not None
    assert Git(tmp_path).tree_of("no-such-ref") is None
    git(tmp_path, "checkout", "-q", "HEAD~1")   # main before the merge: another tree
    assert Git(tmp_path).state().tree != head.tree
