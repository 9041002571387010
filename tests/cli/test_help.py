"""Every command's help (cli/help.py): `-h`, examples that parse, its exit codes from the one
table README shows, text free of docstring markup, and completion of the workspace's names."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from helpers import REPO
from clusterstack import errors
from clusterstack.cli import SUBCOMMANDS, _command, main
from clusterstack.cli.help import (COMMANDS, EXIT_CODES, README_BEGIN, commands, exit_codes_markdown,
                                   readme_with_table)

PATHS = [path for path, _ in commands(_command())]


def test_every_command_is_in_the_table_and_every_entry_is_a_command():
    assert sorted(PATHS) == sorted(COMMANDS)


def _help(capsys, path: str, flag: str = "-h") -> str:
    assert main([*path.split(), flag]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path", PATHS)
def test_every_help_has_examples_and_its_exit_codes_and_no_developer_markup(capsys, path):
    text = _help(capsys, path)
    assert text == _help(capsys, path, "--help")        # -h is --help
    codes, examples = COMMANDS[path]
    assert "Examples:" in text and all(e in text for e in examples)
    assert "Exit codes" in text and all(f"{c} {EXIT_CODES[c][0]}" in text or f"{c}  {EXIT_CODES[c][0]}" in text
                                        for c in codes)
    # no reStructuredText, no exception class names, no Python types as value names
    for bad in ("``", ":func:", ":class:", ":meth:", ":data:", ":mod:", "Raises ", "<list[",
                "<str>", "<int", "<path>", "<float"):
        assert bad not in text, (path, bad)
    assert not re.search(r"\b[A-Z][A-Za-z]+Errors?\b", text), path


@pytest.mark.parametrize("path", [p for p in PATHS if p])
def test_every_usage_line_names_its_arguments_as_click_and_pulumi_do(capsys, path):
    """``NAME`` required, ``[NAME]`` optional, ``...`` once after one that repeats (click's
    ``Argument.make_metavar``) — no braces, which read as a choice, and no doubled ellipsis."""
    usage = _help(capsys, path).splitlines()[0]
    assert usage.startswith(f"Usage: clusterstack {path} [OPTIONS]"), usage
    assert not re.search(r"[{}…]|\.\.\.\.", usage), usage
    cmd = dict(commands(_command()))[path]
    for param in cmd.params:
        if param.param_type_name == "argument":
            name = param.metavar if param.required else f"[{param.metavar}]"
            piece = name + ("..." if param.nargs != 1 else "")
            assert f" {piece}" in usage, (usage, piece)


def test_the_usage_of_a_required_an_optional_and_a_repeated_argument(capsys):
    assert _help(capsys, "up").splitlines()[0] == "Usage: clusterstack up [OPTIONS] CLUSTER"
    assert _help(capsys, "iam grant").splitlines()[0] == "Usage: clusterstack iam grant [OPTIONS] WHO"
    assert _help(capsys, "ci preview").splitlines()[0] == \
        "Usage: clusterstack ci preview [OPTIONS] [STACK]..."
    assert _help(capsys, "guard").splitlines()[0] == "Usage: clusterstack guard [OPTIONS] FILE..."


@pytest.mark.parametrize("path", PATHS)
def test_every_help_lists_the_refusal_a_bad_option_gets(capsys, path):
    """Any command refuses an option it does not know with exit 2 (click's usage error, the
    house ``error:`` line), so each help lists 2 — README's table says every command can
    return it."""
    assert main([*path.split(), "--no-such-option"]) == errors.EXIT_REFUSED
    assert "No such option" in capsys.readouterr().err
    codes, _ = COMMANDS[path]
    assert {errors.EXIT_OK, errors.EXIT_FAILED, errors.EXIT_REFUSED} <= set(codes), path


def test_the_readme_says_every_command_only_of_a_code_every_command_lists():
    table = exit_codes_markdown()
    for code in EXIT_CODES:
        row = next(r for r in table.splitlines() if r.startswith(f"| {code} |"))
        listed_by_all = all(code in codes for codes, _ in COMMANDS.values())
        assert row.endswith("| every command |") == listed_by_all, row


@pytest.mark.parametrize("path", [p for p in PATHS if p])
def test_every_example_parses_as_the_command_it_illustrates(path):
    """Each example is a real command line: its options and arguments parse (nothing runs)."""
    root = _command()
    for example in COMMANDS[path][1]:
        line = next(part for part in example.split("&&") if "clusterstack" in part)
        line = line.split(" > ")[0].split("#")[0]
        argv = shlex.split(line)[1:]
        # a group's make_context parses its own options and keeps the rest (the deploy group
        # reads `deploy <service> <verb>` as `deploy <verb> <service>` there)
        ctx = root.make_context("clusterstack", list(argv))
        cmd, names = root, []
        while hasattr(cmd, "commands"):
            rest = [*getattr(ctx, "_protected_args", ()), *ctx.args]
            name, cmd, rest = cmd.resolve_command(ctx, rest)
            names.append(name)
            ctx = cmd.make_context(name, list(rest), parent=ctx)
        assert (" ".join(names) + " ").startswith(path + " "), example   # a group: one of its commands


def test_the_root_listing_says_what_each_command_says():
    """The root group lists each command with the sentence of :data:`SUBCOMMANDS` without
    loading it: at every width, click shortens it to what it shortens the command's own help
    to (``get_short_help_str``), so the listing is the one a built tree would print."""
    from typer._click import Context
    from typer._click.utils import make_default_short_help

    root = _command()
    assert list(root.list_commands(Context(root))) == list(SUBCOMMANDS)
    for name, entry in SUBCOMMANDS.items():
        cmd = root.get_command(Context(root), name)
        assert cmd is not None and not cmd.hidden and not cmd.short_help, name
        for limit in range(10, 400):
            assert make_default_short_help(entry.help, limit).strip() == cmd.get_short_help_str(limit), (name, limit)


def test_every_command_a_module_defines_is_in_the_registry():
    """A command module's ``app`` holds its commands; each is listed in :data:`SUBCOMMANDS`
    under a module with that same ``app`` — a command missing there would not exist."""
    import importlib
    import pkgutil

    import typer
    import typer.main

    import clusterstack.cli

    seen = set()
    for info in pkgutil.iter_modules(clusterstack.cli.__path__, "clusterstack.cli."):
        module = importlib.import_module(info.name)
        holder = getattr(module, "app", None)
        if not isinstance(holder, typer.Typer):
            continue
        for name in typer.main.get_group(holder).commands:
            assert name in SUBCOMMANDS, f"{info.name} defines `{name}`, which SUBCOMMANDS lacks"
            assert importlib.import_module(SUBCOMMANDS[name].module).app is holder, (name, info.name)
            seen.add(name)
    assert seen == set(SUBCOMMANDS)


def test_the_readme_table_is_the_generated_one():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_BEGIN in text
    assert readme_with_table(text) == text, \
        "README's exit codes are stale: run `.venv/bin/python -m clusterstack.cli.readme README.md`"
    table = exit_codes_markdown()
    # verify's 4 is in it (README omitted it), and 3 names every command the guard stops
    assert "| 4 |" in table and "`verify`" in table.split("| 4 |")[1]
    assert all(f"`{c}`" in table.split("| 3 |")[1].split("\n")[0]
               for c in ("preview", "up", "diff", "guard", "import apply", "deploy rollout"))


def test_the_readme_generator_rewrites_the_table_without_a_warning(tmp_path):
    """The command README names for its table runs clean (no runpy RuntimeWarning: it is not a
    module the ``clusterstack.cli`` package imports itself) and gives the committed text; a
    file without the block is exit 2 with one ``error:`` line, left as it was."""
    import subprocess
    import sys

    stale = (REPO / "README.md").read_text(encoding="utf-8").replace("| every command |", "| ? |")
    readme, other = tmp_path / "README.md", tmp_path / "other.md"
    readme.write_text(stale, encoding="utf-8")
    other.write_text("no table\n", encoding="utf-8")
    command = README_BEGIN.split("`")[1].split()
    assert command[:2] == ["python", "-m"] and command[-1] == "README.md"

    def run(path):
        return subprocess.run([sys.executable, "-W", "error", *command[1:-1], str(path)],
                              capture_output=True, text=True, cwd=tmp_path)

    proc = run(readme)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert readme.read_text(encoding="utf-8") == (REPO / "README.md").read_text(encoding="utf-8")
    proc = run(other)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {other}: no exit-code table")
    assert other.read_text(encoding="utf-8") == "no table\n"
    proc = run(tmp_path / "missing.md")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_codes_the_layers_raise_are_the_tables():
    from clusterstack.adapters.github import UNAVAILABLE_EXIT_CODE
    from clusterstack.deploy.model import ApiUnreachable, CredentialsUnavailable
    from clusterstack.github.audit import NAMES_DIFFER_EXIT_CODE
    from clusterstack.guard import GUARD_EXIT_CODE
    from clusterstack.verify.model import EXIT_MISSING, EXIT_UNVERIFIED

    assert GUARD_EXIT_CODE == errors.EXIT_BLOCKED
    assert EXIT_MISSING == NAMES_DIFFER_EXIT_CODE == errors.EXIT_DIFFERS
    # an API or network that cannot be used: the same code from verify, deploy and github
    assert EXIT_UNVERIFIED == UNAVAILABLE_EXIT_CODE == ApiUnreachable.exit_code == \
        CredentialsUnavailable.exit_code == errors.ClusterstackError.exit_code == errors.EXIT_REFUSED
    assert set(EXIT_CODES) == {0, 1, 2, 3, 4}


def test_version_subcommand_and_flag(capsys):
    from importlib.metadata import version

    assert main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"clusterstack {version('clusterstack')}"
    assert "pulumi-sdk " in out and "python " in out
    assert main(["version", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["clusterstack"] == version("clusterstack") and set(doc) == {
        "clusterstack", "python", "pulumi-sdk", "pulumi-cli"}
    assert main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"clusterstack {version('clusterstack')}"


# --- completion ----------------------------------------------------------------------------

def _complete(monkeypatch, capsys, *words: str) -> list[str]:
    """What bash completion offers for the last word (click's bash protocol: COMP_WORDS,
    COMP_CWORD; typer's ``_<PROG>_COMPLETE=complete_bash``)."""
    monkeypatch.setenv("_CLUSTERSTACK_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", " ".join(("clusterstack", *words)))
    monkeypatch.setenv("COMP_CWORD", str(len(words)))
    main([])
    return capsys.readouterr().out.split()


def test_completion_offers_the_workspaces_clusters_stacks_services_and_projects(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert _complete(monkeypatch, capsys, "plan", "cw") == ["cw-demo-gb200", "cw-demo-h100", "cw-demo-teams"]
    assert _complete(monkeypatch, capsys, "up", "gcp-tpu") == ["gcp-tpu-a", "gcp-tpu-b"]
    assert _complete(monkeypatch, capsys, "deploy", "history", "") == ["echo", "logrelay"]
    assert {"echo", "logrelay", "rollout"} <= set(_complete(monkeypatch, capsys, "deploy", ""))
    assert _complete(monkeypatch, capsys, "diff", "--project", "") == ["buckets", "github"]
    assert "lab" in _complete(monkeypatch, capsys, "ci", "preview", "")   # a [projects] stack
    assert _complete(monkeypatch, capsys, "schema", "c") == ["cluster"]


@pytest.mark.parametrize("command", ["plan", "diff"])
def test_project_completion_the_error_list_and_what_is_taken_agree(monkeypatch, capsys, command):
    """``--project`` takes a key of [projects] (its help): the completion offers exactly those,
    an unknown key's error lists exactly those, and each of them is taken — the cluster
    project's handle is none of them (its stacks are named as arguments)."""
    monkeypatch.chdir(REPO)
    offered = _complete(monkeypatch, capsys, command, "--project", "")
    assert offered == ["buckets", "github"]
    monkeypatch.delenv("_CLUSTERSTACK_COMPLETE")
    base = ["--base", "HEAD"] if command == "diff" else []
    assert main([command, "--project", "nosuch", *base]) == 2
    err = capsys.readouterr().err
    assert f"known projects: {', '.join(offered)} (" in err, err
    assert main([command, "--project", "clusters", *base]) == 2
    assert "'clusters' is the cluster project" in capsys.readouterr().err
    if command == "plan":
        for key in offered:
            assert main(["plan", "--project", key, "--json"]) == 0, capsys.readouterr().err
            capsys.readouterr()


def test_completion_after_a_service_offers_its_verbs_without_an_error(monkeypatch, capsys):
    """``deploy echo <TAB>``: the service is there, the verb is being typed — completion parses
    the line resiliently (click), so the refusal of a service without a verb is not raised
    (it printed an ``error:`` line into the shell and offered nothing)."""
    monkeypatch.chdir(REPO)
    for typed in ("", "ro"):
        monkeypatch.setenv("_CLUSTERSTACK_COMPLETE", "complete_bash")
        monkeypatch.setenv("COMP_WORDS", f"clusterstack deploy echo {typed}")
        monkeypatch.setenv("COMP_CWORD", "3")
        assert main([]) == 0
        cap = capsys.readouterr()
        assert cap.err == ""
        verbs = ["rollout", "rollback"] if typed else ["history", "rollout", "rollback"]
        assert set(verbs) <= set(cap.out.split()), cap.out


def test_completion_outside_a_workspace_offers_nothing_and_does_not_fail(monkeypatch, capsys, tmp_path):
    # a --root that is no workspace: nothing offered, no traceback in the shell
    assert _complete(monkeypatch, capsys, "--root", str(tmp_path), "plan", "") == []
    # no --root: the workspace is discovered at or above the working directory — which this
    # test does not own above tmp_path (another process may have left a clusterstack.toml there)
    above = [d for d in tmp_path.parents if (d / "clusterstack.toml").is_file()]
    if above:
        pytest.skip(f"{above[0] / 'clusterstack.toml'} exists above the test's directory")
    monkeypatch.chdir(tmp_path)
    assert _complete(monkeypatch, capsys, "plan", "") == [], Path.cwd()
