"""The outside world around the files: usage errors, colours, standard streams that
cannot be written, Ctrl-C at any moment, a git hook's environment, a kubeconfig that is no
kubeconfig. Each case is as small as its failure; none may end in exit 1 or a traceback.

Most run the real executable (outside.run): exit codes, signals and /dev/full are properties
of the process, not of :func:`clusterstack.cli.main`."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from helpers import REPO, edit, git
from outside import CLI, run

H100 = "clusters/cw-demo-h100.yaml"


# --- usage errors: the house line, not click's block ----------------------------------------

@pytest.mark.parametrize("argv, says", [
    (["plan", "--bogus"], "error: No such option: --bogus — run `clusterstack plan --help` for the usage"),
    (["plan", "--al"], "error: No such option: --al (Possible options: --all, --help) — run"),
    (["iam", "grant"], "error: Missing argument 'WHO' — run `clusterstack iam grant --help` for the usage"),
    (["inventory", "--json", "--json=x"], "error: Option '--json' does not take a value — run"),
    (["plan", "-o"], "error: Option '-o' requires an argument — run"),
])
def test_a_usage_error_is_one_house_line(capsys, argv, says):
    assert main(["--root", str(REPO), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1, err
    assert "Usage:" not in err and "Try '" not in err


# --- NO_COLOR wins over FORCE_COLOR (no-color.org) --------------------------------------------

def test_no_color_wins_over_force_color():
    # FORCE_COLOR made rich draw its spinner (cursor moves, colours) into a log despite NO_COLOR
    assert "\x1b[" in run("plan", "gcp-demo", root=REPO, env={"FORCE_COLOR": "1"}).both   # the control
    r = run("plan", "gcp-demo", root=REPO, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert r.code == 0 and "\x1b" not in r.out + r.err


# --- standard streams that cannot be written ----------------------------------------------------

def test_stdout_on_dev_full_is_exit_2_with_what_to_do():
    with open("/dev/full", "w") as full:
        r = run("validate", root=REPO, stdout=full)
    assert r.code == 2 and "No space left on device" in r.err and "Traceback" not in r.err
    assert "internal error" not in r.err and "Exception ignored" not in r.err


def test_stderr_on_dev_full_keeps_the_exit_code():
    with open("/dev/full", "w") as full:
        r = run("guard", "/nonexistent.json", root=REPO, stderr=full)
    assert r.code == 2


def test_a_closed_stdout_is_exit_2_not_a_traceback():
    r = run("validate", root=REPO, stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert r.code == 2 and "standard output is closed" in r.err and "Traceback" not in r.err


def test_a_reader_that_has_gone_is_no_internal_error():
    """`clusterstack validate | head -0`: stdout is a pipe whose reader has gone (closed here
    before the command writes, so the write certainly fails with EPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run([CLI, "--root", str(REPO), "validate"], stdout=write_end,
                           stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert p.returncode == 141   # as a shell reports a process ended by SIGPIPE
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    assert "Exception ignored" not in p.stderr


# --- outputs: never replace a pipe, a device or /dev/stdout with a regular file ---------------
# (any stack's plan will do: cw-demo-h100's child is ~half the CPU of gcp-demo's, which imports
# pulumi_gcp)

def test_plan_output_to_dev_stdout_writes_to_it(tmp_path):
    """As root, `plan --json -o /dev/stdout` turned /dev/stdout into a regular file; redirected,
    the rename detached the shell's file. The test goes through a link of its own to
    /proc/self/fd/1 — what /dev/stdout is — so a regression replaces that link, never the
    machine's /dev/stdout."""
    from clusterstack.fsutil import _own_descriptor

    assert _own_descriptor(Path("/dev/stdout")) == 1 and _own_descriptor(Path("/dev/fd/2")) == 2
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    out = tmp_path / "out.json"
    with out.open("w") as fh:
        r = run("plan", "cw-demo-h100", "--json", "-o", str(link), root=REPO, stdout=fh)
    assert r.code == 0, r.err
    text = out.read_text()
    half = len(text) // 2
    assert text[:half] == text[half:] and text.startswith("{")   # the -o copy, then the --json one
    assert link.is_symlink()


def test_plan_output_to_a_named_pipe_is_written_through(tmp_path):
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)   # blocks until a writer opens
    r = run("plan", "cw-demo-h100", "-o", str(fifo), root=REPO)
    got = reader.communicate(timeout=60)[0]
    assert r.code == 0, r.err
    assert got.startswith(b"{") and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_plan_output_to_a_named_pipe_nobody_reads_is_refused_not_hung(tmp_path):
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    r = run("plan", "cw-demo-h100", "-o", str(fifo), root=REPO)
    assert r.code == 2 and "a named pipe that nobody reads" in r.err and stat.S_ISFIFO(fifo.lstat().st_mode)


# --- Ctrl-C / SIGTERM at any moment: one line, 130 / 143 ----------------------------------------

@pytest.mark.parametrize("module", [
    "clusterstack.cli.plan",                    # while the command's module is being imported
    "clusterstack.flows.plan",                  # a flow that module imports
    "clusterstack.components.coreweave",        # inside the Pulumi program under the offline plan
])
@pytest.mark.parametrize("sig, code", [("INT", 130), ("TERM", 143)])
def test_an_interrupt_inside_any_import_is_one_clean_line(workspace_copy, module, sig, code):
    r = run("plan", "cw-demo-h100", root=workspace_copy, kill_at=f"import:{module}", signal=sig)
    assert r.code == code, r.err
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: interrupted by SIG{sig}"), r.err
    assert "Traceback" not in r.err and "AttributeError" not in r.err and "program failed" not in r.err


# --- a git hook's environment does not choose the repository -------------------------------------

@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY"])
def test_diff_base_compares_this_repository_whatever_the_hook_environment(workspace_copy, tmp_path, variable):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    git(workspace_copy, "init", "-q", "-b", "main")
    git(workspace_copy, "add", "-A")
    git(workspace_copy, "commit", "-q", "-m", "base")
    edit(workspace_copy / H100, "manager_memory_limit: 4Gi", "manager_memory_limit: 6Gi")
    value = {"GIT_DIR": other / ".git", "GIT_INDEX_FILE": tmp_path / "no-such-index",
             "GIT_WORK_TREE": other, "GIT_OBJECT_DIRECTORY": tmp_path / "no-objects"}[variable]
    r = run("diff", "cw-demo-h100", "--base", "HEAD", root=workspace_copy, env={variable: str(value)})
    assert r.code == 0, r.err
    assert '"4Gi" → "6Gi"' in r.out, r.out   # against this repository's HEAD, not the other one


# --- import generate --live with a kubeconfig that is no kubeconfig ------------------------------

@pytest.mark.parametrize("content, says", [
    ("garbage: [\n", "is not a valid kubeconfig (ParserError"),
    ("apiVersion: v1\nkind: Config\ncontexts: 5\n", "is not a valid kubeconfig (TypeError"),
    (None, "is a named pipe, not a regular file"),
])
def test_import_generate_live_with_a_bad_kubeconfig_is_exit_2(workspace_copy, tmp_path, content, says):
    kubeconfig = tmp_path / "kubeconfig"
    if content is None:
        os.mkfifo(kubeconfig)
    else:
        kubeconfig.write_text(content)
    r = run("import", "generate", "cw-demo-h100", "-o", str(tmp_path / "import.json"), "--live",
            root=workspace_copy, env={"KUBECONFIG": str(kubeconfig)})
    assert r.code == 2 and says in r.err and "internal error" not in r.err, r.err
    assert "--live: cannot read cluster cw-demo-h100" in r.err
