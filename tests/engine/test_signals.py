"""SIGINT/SIGTERM while the engine runs: clusterstack — a real process — forwards ONE SIGINT to
the Pulumi CLI's process group (Pulumi's graceful cancel), waits for it, reports what the
engine reported with the shell's exit code (130/143); a second signal is not forwarded (Pulumi
would terminate at once, pulumi/pulumi pkg/backend/cancellation.go) but says what still runs;
and the engine has exited when clusterstack does.

The engine is the stand-in ``pulumi`` of tests/fakes/pulumi_cli.py, a child process like the
real CLI. Each test signals at a point the stand-in announces (its ``waiting_file``, touched
when the event stream reaches ``interrupt_after_sequence``) — never after a guessed delay; the
deadlines below only bound a failing run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fakes.pulumi import FakeCli
from outside import CLI

STACK = "cw-demo-h100"
DEADLINE = 60.0   # seconds a failing run may take before the test gives up on it


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The stand-in CLI; after the test, whatever a failed test left running (clusterstack or
    the stand-in engine) is killed by its pid."""
    fake = FakeCli(tmp_path, monkeypatch)
    yield fake
    for run in Run.started:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
    Run.started.clear()
    for call in fake.calls():
        if not _gone(call["pid"]):
            os.kill(call["pid"], signal.SIGKILL)


class Run:
    """``clusterstack ARGS`` as a child process, its stderr read line by line as it comes."""

    started: list["Run"] = []

    def __init__(self, root: Path, *args: str, stdin: str = "") -> None:
        self.proc = subprocess.Popen([CLI, "--root", str(root), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Run.started.append(self)
        self.proc.stdin.write(stdin)
        self.proc.stdin.close()
        self.err: list[str] = []
        self.out = ""
        self._readers = [threading.Thread(target=self._read_err, daemon=True),
                         threading.Thread(target=self._read_out, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)

    def _read_out(self) -> None:
        self.out = self.proc.stdout.read()

    def until(self, what, ready) -> None:
        end = time.monotonic() + DEADLINE
        while not ready():
            if self.proc.poll() is not None and not ready():
                for t in self._readers:
                    t.join(5)
                pytest.fail(f"clusterstack ended ({self.proc.returncode}) before {what}: {''.join(self.err)}")
            assert time.monotonic() < end, f"no {what} within {DEADLINE} s: {''.join(self.err)}"
            time.sleep(0.02)

    def wait(self) -> int:
        rc = self.proc.wait(DEADLINE)
        for t in self._readers:
            t.join(5)
        return rc

    @property
    def stderr(self) -> str:
        return "".join(self.err)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie (exited, not yet reaped by init) is gone too
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _engine_pid(cli: FakeCli, verb: str) -> int:
    return next(c["pid"] for c in cli.calls() if verb in c["argv"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_preview_cancels_the_engine_once_and_waits_for_it(cli, workspace_copy, tmp_path, sig):
    waiting = tmp_path / "waiting"
    cli.scenario(preview={"events": "events/preview-update.jsonl", "interrupt_after_sequence": 5,
                          "waiting_file": str(waiting)})
    run = Run(workspace_copy, "preview", STACK)
    run.until("the engine's stream", waiting.exists)
    os.kill(run.proc.pid, sig)   # clusterstack only, as a CI cancel does: never the engine
    assert run.wait() == 128 + sig
    engine = _engine_pid(cli, "preview")
    assert cli.signals() == [{"signal": "SIGINT", "pid": engine}]   # forwarded once, as SIGINT
    name = signal.Signals(sig).name
    assert f"{name} received: asked `pulumi preview --stack {STACK}` (pid {engine}) to cancel" in run.stderr
    assert (f"error: stack {STACK}: interrupted by {name}: `pulumi preview --stack {STACK}` was cancelled "
            "and has exited (the engine reports: update canceled)") in run.stderr
    assert "Traceback" not in run.stderr and _gone(engine)


def test_a_second_signal_says_what_still_runs_and_is_not_forwarded(cli, workspace_copy, tmp_path):
    waiting, release = tmp_path / "waiting", tmp_path / "steps-in-flight-done"
    cli.scenario(preview={"events": "events/preview-update.jsonl", "interrupt_after_sequence": 5,
                          "waiting_file": str(waiting), "cancel_waits_for": str(release)})
    run = Run(workspace_copy, "preview", STACK)
    run.until("the engine's stream", waiting.exists)
    os.kill(run.proc.pid, signal.SIGTERM)
    run.until("the forwarded cancel", lambda: cli.signals() != [])
    os.kill(run.proc.pid, signal.SIGINT)
    run.until("the second signal's answer", lambda: "clusterstack: still running" in run.stderr)
    engine = _engine_pid(cli, "preview")
    assert not _gone(engine)   # still finishing its steps in flight: waited for, not abandoned
    assert f"clusterstack: still running: `pulumi preview --stack {STACK}` (pid {engine}), cancelling for" \
        in run.stderr and "Not forwarded" in run.stderr
    release.touch()
    assert run.wait() == 143   # the first signal's code
    assert cli.signals() == [{"signal": "SIGINT", "pid": engine}]   # the second never reached it
    assert _gone(engine)


def test_sigterm_during_up_reports_the_cancelled_update(cli, workspace_copy, tmp_path):
    waiting = tmp_path / "waiting"
    cli.scenario(preview={"events": "events/preview-update.jsonl"},
                 up={"events": "events/up-update.jsonl", "interrupt_after_sequence": 5,
                     "waiting_file": str(waiting)},
                 stack_history={"stdout_file": "history.json"})
    # not a git checkout: `up` asks for the typed phrase even with --yes
    run = Run(workspace_copy, "up", STACK, "--yes", stdin=f"{STACK}@no-commit\n")
    run.until("the update's stream", waiting.exists)
    os.kill(run.proc.pid, signal.SIGTERM)
    assert run.wait() == 143
    engine = _engine_pid(cli, "up")
    assert cli.signals() == [{"signal": "SIGINT", "pid": engine}]
    assert (f"interrupted by SIGTERM: `pulumi up --stack {STACK}` was cancelled and has exited (the "
            "engine reports: update canceled); no change was applied before it stopped") in run.stderr
    assert _gone(engine)
