"""Personal emails never reach error output in full (CI logs are public): IAM loader messages
and the CLI's error printer redact them, by the one rule of clusterstack.redact that CI's
comments follow too; only service accounts (machines) stay readable."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.errors import ConfigError
from clusterstack.iam.loader import IamFileError, load_iam

REPO = Path(__file__).resolve().parents[2]


def _with_member(root: Path, member: str) -> Path:
    iam = root / "iam" / "iam.yaml"
    if not iam.exists():
        shutil.copytree(REPO / "iam", root / "iam")
    text = iam.read_text()
    text = text.replace("    members:\n      - human-004\n", f"    members:\n      - human-004\n      - '{member}'\n", 1)
    assert member in text
    iam.write_text(text)
    return iam


@pytest.mark.parametrize("member", ["User:bob.smith@" "gmail.com", "deleted:user:bob.smith@" "gmail.com?uid=1"])
def test_loader_errors_redact_the_email(workspace_copy, member):
    iam = _with_member(workspace_copy, member)
    with pytest.raises(IamFileError) as ei:
        load_iam(iam)
    text = ei.value.render()
    assert "unknown member form" in text and "b***@gmail.com" in text
    assert "bob.smith" not in text


@pytest.mark.parametrize("argv", [["iam", "check"], ["plan", "gcp-demo"]])
def test_cli_never_prints_the_email(workspace_copy, capsys, argv):
    _with_member(workspace_copy, "User:bob.smith@" "gmail.com")
    subprocess.run(["git", "init", "-q", str(workspace_copy)], check=True)  # `iam check` scans git files
    subprocess.run(["git", "-C", str(workspace_copy), "add", "-A"], check=True)
    rc = main(["--root", str(workspace_copy), *argv])
    cap = capsys.readouterr()
    assert rc == 2, cap.err
    assert "unknown member form" in cap.err and "b***@gmail.com" in cap.err
    assert "bob.smith" not in cap.out + cap.err


def test_cli_error_printer_redacts_any_loader():
    """A problem raised by any loader goes through the redactor on its way out; only
    service-account addresses stay readable (documentation domains are redacted like any other)."""
    from clusterstack.cli import error_lines

    exc = ConfigError("owner jane.doe@" "corp-mail.com, docs alice@example.org, "
                      "sa ci@p.iam.gserviceaccount.com", "ask carl.x@" "gmail.com")
    [line] = error_lines(exc)
    assert line.startswith("error: ")
    assert "j***@corp-mail.com" in line and "c***@gmail.com" in line and "a***@example.org" in line
    assert "jane.doe" not in line and "carl.x" not in line and "alice@" not in line
    assert "ci@p.iam.gserviceaccount.com" in line


def test_a_cli_error_and_a_ci_comment_redact_the_same_text_the_same_way(workspace_copy, tmp_path, capsys):
    """The same failure text — a person at a documentation domain, one elsewhere, a service
    account — reads the same in `preview`'s error line and in the PR comment of `ci preview`."""
    from clusterstack.engine.errors import EngineCommandError
    from fakes.clients import fake_clients
    from fakes.pulumi import FakeEngine, FakeStack

    text = "owner alice@example.org and bob.smith@lab.example, sa ci@p.iam.gserviceaccount.com"
    expected = "owner a***@example.org and b***@lab.example, sa ci@p.iam.gserviceaccount.com"
    stack = "cw-demo-h100"
    eng = FakeEngine({stack: FakeStack()}).fail("preview", stack, EngineCommandError(stack, text))
    clients = fake_clients(engine=eng)
    root = str(workspace_copy)
    assert main(["--root", root, "preview", stack], clients=clients) == EngineCommandError(stack, text).exit_code
    cli_err = capsys.readouterr().err
    out = tmp_path / "previews"
    assert main(["--root", root, "ci", "preview", stack, "--out", str(out)], clients=clients) == 2
    comment = tmp_path / "comment.md"
    assert main(["ci", "comment", str(out), "--output", str(comment)], clients=clients) == 0
    body = comment.read_text()
    # the comment as a reader sees it: its Markdown escapes (\\*, U+200B after "@") rendered away
    import html
    import re

    from markdown_it import MarkdownIt

    seen = html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt("commonmark").render(body))).replace("\u200b", "")
    assert expected in cli_err and expected in seen
    assert "alice@" not in cli_err + body and "bob.smith" not in cli_err + body
