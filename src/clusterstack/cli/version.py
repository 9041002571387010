"""``clusterstack version [--json]``: this tool's version and what it runs with."""

from __future__ import annotations

import re

import typer

from clusterstack.cli import emit_json, out

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


def versions() -> dict[str, str | None]:
    """``{"clusterstack", "python", "pulumi-sdk", "pulumi-cli"}``: installed versions (package
    metadata), and the Pulumi CLI's own answer to ``pulumi version`` when it is on PATH (None
    otherwise, or when it does not answer within 10 s; :func:`_cli_version` when it answers with
    no version) — what a bug report needs."""
    import platform
    import shutil
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    def pkg(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    cli = None
    exe = shutil.which("pulumi")
    if exe:
        try:
            run = subprocess.run([exe, "version"], capture_output=True, timeout=10)
            cli = _cli_version(run.stdout) if run.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            cli = None
    return {"clusterstack": pkg("clusterstack"), "python": platform.python_version(),
            "pulumi-sdk": pkg("pulumi"), "pulumi-cli": cli}


#: What ``pulumi version`` prints: ``v3.205.0`` (a release; pre-releases and dev builds add
#: ``-alpha.x``/``-dev.0``/``+sha``) — pulumi/pulumi ``pkg/cmd/pulumi/version``, the SDK's
#: ``PulumiCommand`` parses it as semver (``sdk/python/lib/pulumi/automation/_cmd.py``).
_VERSION = re.compile(r"v?[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*")


def _cli_version(stdout: bytes) -> str:
    """The version ``pulumi version`` printed, or ``unreadable (…)`` when its answer is no
    version: bytes that are not UTF-8, or text that is not one version (another program named
    ``pulumi``, a wrapper's message). The answer itself is never echoed then: it may hold
    terminal control sequences."""
    try:
        text = stdout.decode("utf-8").strip()
    except UnicodeDecodeError:
        return "unreadable (`pulumi version` printed bytes that are not UTF-8; is `pulumi` on PATH the Pulumi CLI?)"
    if not _VERSION.fullmatch(text):
        return "unreadable (`pulumi version` printed no version; is `pulumi` on PATH the Pulumi CLI?)"
    return text


@app.command()
def version(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the version of clusterstack, Python, the Pulumi SDK and the Pulumi CLI (`not
    found` when it is not on PATH)."""
    v = versions()
    if as_json:
        emit_json(v)
        return
    for name, value in v.items():
        out.print(f"{name} {value or 'not found'}", markup=False)
