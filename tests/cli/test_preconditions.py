"""Preconditions first: a command that needs several things (the Pulumi CLI, a passphrase, a
file) names every missing one in one run and exits 2 before doing any work."""

from __future__ import annotations

import pytest

from clusterstack.cli import main


@pytest.fixture
def bare_env(tmp_path, monkeypatch):
    """No `pulumi` on PATH (an empty directory) and no passphrase."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)


@pytest.mark.parametrize("argv", [["preview", "cw-demo-h100"], ["stack", "init", "cw-demo-h100"]])
def test_missing_cli_and_passphrase_are_named_together(workspace_copy, bare_env, capsys, argv):
    assert main(["--root", str(workspace_copy), *argv]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert any("the Pulumi CLI is not installed" in ln for ln in lines), err
    assert any("PULUMI_CONFIG_PASSPHRASE" in ln and "is not set" in ln for ln in lines), err
    assert "internal error" not in err and "Traceback" not in err


def test_only_the_missing_piece_is_named(workspace_copy, bare_env, monkeypatch, capsys):
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    assert main(["--root", str(workspace_copy), "preview", "cw-demo-h100"]) == 2
    err = capsys.readouterr().err
    assert "the Pulumi CLI is not installed" in err and "PULUMI_CONFIG_PASSPHRASE" not in err


def test_import_apply_with_a_missing_file_fails_before_any_plan(workspace_copy, tmp_path, capsys):
    from fakes.clients import fake_clients
    from fakes.pulumi import FakeEngine

    eng = FakeEngine()
    missing = tmp_path / "nowhere.json"
    assert main(["--root", str(workspace_copy), "import", "apply", "cw-demo-h100", "--file", str(missing)],
                clients=fake_clients(engine=lambda _ws, **_kw: eng)) == 2
    cap = capsys.readouterr()
    assert f"{missing}: no such file (the import file)" in cap.err and "import generate" in cap.err
    assert cap.out == "" and eng.calls == []
