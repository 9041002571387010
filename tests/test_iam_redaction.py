"""Personal emails never reach error output in full (CI logs are public): IAM loader messages
and the CLI's error printer redact them; documentation domains and service accounts stay
readable."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.errors import ConfigError
from clusterstack.iam.loader import IamFileError, load_iam

REPO = Path(__file__).resolve().parent.parent


def _with_member(root: Path, member: str) -> Path:
    iam = root / "iam" / "iam.yaml"
    if not iam.exists():
        shutil.copytree(REPO / "iam", root / "iam")
    text = iam.read_text()
    text = text.replace("    members:\n      - human-004\n", f"    members:\n      - human-004\n      - '{member}'\n", 1)
    assert member in text
    iam.write_text(text)
    return iam


@pytest.mark.parametrize("member", ["User:bob.smith@gmail.com", "deleted:user:bob.smith@gmail.com?uid=1"])
def test_loader_errors_redact_the_email(workspace_copy, member):
    iam = _with_member(workspace_copy, member)
    with pytest.raises(IamFileError) as ei:
        load_iam(iam)
    text = ei.value.render()
    assert "unknown member form" in text and "b***@gmail.com" in text
    assert "bob.smith" not in text


@pytest.mark.parametrize("argv", [["iam", "check"], ["plan", "gcp-demo"]])
def test_cli_never_prints_the_email(workspace_copy, capsys, argv):
    _with_member(workspace_copy, "User:bob.smith@gmail.com")
    subprocess.run(["git", "init", "-q", str(workspace_copy)], check=True)  # `iam check` scans git files
    subprocess.run(["git", "-C", str(workspace_copy), "add", "-A"], check=True)
    rc = main(["--root", str(workspace_copy), *argv])
    cap = capsys.readouterr()
    assert rc == 2, cap.err
    assert "unknown member form" in cap.err and "b***@gmail.com" in cap.err
    assert "bob.smith" not in cap.out + cap.err


def test_cli_error_printer_redacts_any_loader(monkeypatch, capsys, tmp_path):
    """A problem raised by any loader goes through the redactor on its way out; documentation
    domains and service-account addresses stay readable."""
    import clusterstack.cli as cli

    def boom(*_a, **_k):
        raise ConfigError("owner jane.doe@corp-mail.com, docs alice@example.org, "
                          "sa ci@p.iam.gserviceaccount.com", "ask carl.x@gmail.com")
    monkeypatch.setattr(cli, "app", boom)
    assert cli.main(["whatever"]) == 2
    err = capsys.readouterr().err
    assert "j***@corp-mail.com" in err and "c***@gmail.com" in err
    assert "jane.doe" not in err and "carl.x" not in err
    assert "alice@example.org" in err and "ci@p.iam.gserviceaccount.com" in err
