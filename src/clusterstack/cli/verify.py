"""``clusterstack verify CLUSTER [--json]``: the read-only preflight of a cluster's stack.

Exit codes: 0 every declared resource exists and matches; 4 something is missing or
different (the output names the ``clusterstack preview``/``up`` that fixes it); 2 something
could not be checked (no credentials, no access, API unreachable — each cause said once, not
per resource) or bad config.
"""

from __future__ import annotations


import typer

from clusterstack.cli import clients, emit_json, out, workspace
from clusterstack.errors import ClusterstackError
from clusterstack.verify import verify_prerequisites

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()


@app.command()
def verify(cluster: str = typer.Argument(..., help="Cluster (= stack) to check."),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
           timeout: float = typer.Option(15.0, "--timeout", min=1.0, max=300.0,
                                         help="Seconds per API call.")) -> None:
    """Check, read-only, that every resource the stack owns exists and is the declared one."""
    report = verify_prerequisites(cluster, workspace=workspace(), timeout=timeout, clients=clients())
    if as_json:
        emit_json(report.to_json())
    else:
        _render(report)
    if report.exit_code:
        raise VerifyFailed(report)


class VerifyFailed(ClusterstackError):
    """Verify found a gap (exit 4) or could not check everything (exit 2)."""

    def __init__(self, report) -> None:
        self.exit_code = report.exit_code
        if report.status == "unverified":
            super().__init__(f"{report.count('error')} resource(s) of {report.cluster} could not be checked",
                             "fix access (credentials, kube context, network) and run verify again")
        else:
            gaps = report.count("missing") + report.count("different")
            super().__init__(f"{gaps} resource(s) of {report.cluster} missing or different",
                             f"run `{report.fix[0]}`, then `{report.fix[1]}`")


_MARK = {"ok": "ok", "missing": "MISSING", "different": "DIFFERENT", "error": "UNCHECKED",
         "skipped": "skipped"}


def _render(report) -> None:
    errors: dict[str, list] = {}
    for f in report.findings:
        if f.state == "ok":
            continue
        if f.state == "error":   # said once per cause below, not once per resource
            errors.setdefault(f.message, []).append(f)
            continue
        out.print(f"{_MARK[f.state]:<9} {f.type}  {f.ref}", markup=False)
        for d in f.diffs:
            out.print(f"          {d.field}: live {d.live!r}, declared {d.declared!r}", markup=False)
        if f.state == "skipped":
            out.print(f"          {f.message}", markup=False)
    for message, found in errors.items():   # one line per cause, not per resource
        kinds = sorted({f.type.rsplit(":", 1)[-1] for f in found})
        out.print(f"UNCHECKED {len(found)} resource(s) ({', '.join(kinds)}): {message}", markup=False)
    counts = ", ".join(f"{report.count(s)} {s}" for s in ("ok", "missing", "different", "error", "skipped")
                       if report.count(s))
    out.print(f"{report.cluster}: {len(report.findings)} resources checked — {counts or 'nothing declared'}",
              markup=False)
    if report.fix:
        preview, up = report.fix
        out.print(f"fix: {preview}   # review what up would create or change", markup=False)
        out.print(f"     {up}", markup=False)
