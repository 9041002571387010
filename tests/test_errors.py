"""One rendering of a located problem: ``file:line: field: message — hint`` on ONE line, a name
read from a file shown with its control characters escaped as ``repr`` escapes them."""

from __future__ import annotations

from pathlib import Path

from helpers import shown
from clusterstack.cli import main
from clusterstack.errors import Problem, one_line


def test_control_characters_are_escaped_as_repr_escapes_them():
    for ch in ("\n", "\r", "\t", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"):
        assert one_line(f"a{ch}b") == f"a{repr(ch)[1:-1]}b"
    assert one_line("é → ok: [x]") == "é → ok: [x]"        # printable text is kept as is


def test_the_head_of_a_problem_is_one_line_whatever_its_names_hold():
    p = Problem("unknown table [a\x1bb]", "fix it", file=Path("x\ny.toml"), line=3, field="a\nb")
    assert p.render() == "x\\ny.toml:3: a\\nb: unknown table [a\\x1bb] — fix it"
    # a hint is ours: it may show the shape to write on the lines below
    shape = Problem("Field required", "add it, shaped like:\n  rbac:\n    service_account: <text>")
    assert shape.render() == "Field required — add it, shaped like:\n  rbac:\n    service_account: <text>"


def test_a_projects_key_with_a_newline_is_one_error_line(workspace_copy, capsys):
    toml = workspace_copy / "clusterstack.toml"
    before = toml.read_text()
    toml.write_text(before.replace("[projects.github]", '[projects."git\\nhub"]'))
    assert main(["--root", str(workspace_copy), "validate"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.splitlines()
    assert len(lines) == 1, cap.err
    line = before.splitlines().index("[projects.github]") + 1          # located at its table
    assert lines[0].startswith(f"error: {shown(toml)}:{line}: ") and "projects.git\\nhub: bad project name 'git\\nhub'" in lines[0]
    assert toml.read_text() == before.replace("[projects.github]", '[projects."git\\nhub"]')   # nothing written
