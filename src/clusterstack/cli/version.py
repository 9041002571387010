"""``clusterstack version [--json]``: this tool's version and what it runs with."""

from __future__ import annotations

import typer

from clusterstack.cli import app, emit_json, out


def versions() -> dict[str, str | None]:
    """``{"clusterstack", "python", "pulumi-sdk", "pulumi-cli"}``: installed versions (package
    metadata), and the Pulumi CLI's own answer to ``pulumi version`` when it is on PATH (None
    otherwise, or when it does not answer within 10 s) — what a bug report needs."""
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
            run = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=10)
            cli = run.stdout.strip() or None if run.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            cli = None
    return {"clusterstack": pkg("clusterstack"), "python": platform.python_version(),
            "pulumi-sdk": pkg("pulumi"), "pulumi-cli": cli}


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
