"""``clusterstack import generate`` and ``clusterstack import apply``: adopting live resources.

``generate`` builds Pulumi's bulk-import file from the offline plan (no CLI, no credentials)
and prints what it holds and its digest; ``apply`` runs the refusable, digest-confirmed
transaction of :mod:`clusterstack.imports.apply` through the run's engine
(``clients().engine``). Exit codes: 0 ok, 2 refused (nothing changed), 3 blocked by the guard
or the final no-change check, 1 internal failure.
"""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.cli import app, emit_json, ask, clients, err, out, status, workspace
from clusterstack.errors import ClusterstackError

import_app = typer.Typer(name="import", no_args_is_help=True,
                         help="Adopt live resources: generate a Pulumi import file, apply it.")
app.add_typer(import_app, name="import")

SUMMARY_FORMAT = "clusterstack.import-summary/v1"


def _plan(ws, cluster: str):
    """Check the stack pointers and the cluster's config (errors as file:line, before the
    program runs), then plan the stack offline."""
    from clusterstack.validation import load_cluster
    from clusterstack.errors import ConfigError
    from clusterstack.plan import plan_stack
    from clusterstack.workspace import check_stacks

    known = [p.stack for p in check_stacks(ws)]
    if cluster not in known:
        raise ConfigError(f"unknown cluster {cluster!r}", f"known: {', '.join(known) or 'none'}",
                          field="cluster")
    load_cluster(ws, cluster)
    return plan_stack(ws.project_dir, cluster)


def summary_document(generated, *, cluster: str, path: str | None) -> dict:
    """The ``--json`` summary of ``import generate`` (sorted keys when dumped)::

        {"format", "cluster", "file", "digest", "confirm": "import <12 hex>",
         "imports": {type: n}, "components": n,
         "placeholders": {type: [{"name", "logicalName", "form"}]}, "overridden": [name]}
    """
    digest = generated.file.digest()
    return {
        "format": SUMMARY_FORMAT, "cluster": cluster, "file": path, "digest": digest,
        "confirm": f"import {digest[:12]}",
        "imports": generated.imports_by_type(),
        "components": sum(1 for e in generated.file.resources if e.component),
        "placeholders": {t: [{"name": p.name, "logicalName": p.logical_name, "form": p.form}
                             for p in ps] for t, ps in generated.placeholders_by_type().items()},
        "overridden": list(generated.overridden),
        "absent": list(generated.absent),
    }


def print_summary(doc: dict) -> None:
    """Human form of :func:`summary_document` (plain text: URNs and templates hold ``[``/``<``)."""
    from rich.table import Table

    table = Table(title=f"{doc['cluster']}: {sum(doc['imports'].values())} resource(s) to adopt, "
                        f"{doc['components']} component(s) keep the parent chain",
                  title_justify="left", show_edge=False)
    table.add_column("type")
    table.add_column("imports", justify="right")
    for typ, n in doc["imports"].items():
        table.add_row(typ, str(n))
    out.print(table)
    if doc["placeholders"]:
        out.print("placeholders (unknown IDs; apply refuses until each is filled with "
                  "`--id LOGICAL=ID`):", markup=False)
        for typ, rows in doc["placeholders"].items():
            for r in rows:
                out.print(f"  {typ}  {r['logicalName']}  (entry {r['name']}): form {r['form']}",
                          markup=False)
    if doc.get("absent"):
        out.print("not on the cluster (left out; `up` creates them): " + ", ".join(doc["absent"]),
                  markup=False)
    if doc["overridden"]:
        out.print("IDs given with --id: " + ", ".join(doc["overridden"]), markup=False)
    out.print(f"digest sha256:{doc['digest']}", markup=False)
    out.print(f"to apply, confirm with: {doc['confirm']}", markup=False)


@import_app.command("generate")
def generate_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) whose resources to adopt."),
        output: Path = typer.Option(..., "--output", "-o",
                                    help="Where to write the import file (outside the repository)."),
        ids: list[str] = typer.Option(None, "--id", metavar="LOGICAL=ID",
                                      help="Supply an ID the config cannot give (a Cloudflare "
                                           "record ID: <zone_id>/<record_id>). Repeatable."),
        only: list[str] = typer.Option(None, "--only", metavar="TYPE|COMPONENT",
                                       help="Adopt only these resource types / components "
                                            "(type token or component name). Repeatable."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
        live: bool = typer.Option(False, "--live", help="Read the cluster (read only, the stack's "
                                  "kube context) and list only the Kubernetes objects that exist "
                                  "under the declared names.")) -> None:
    """Write Pulumi's bulk-import file for CLUSTER from the offline plan (mode 0600, atomic)."""
    from clusterstack.fsutil import write_output
    from clusterstack.imports.generate import generate, parse_id_overrides
    from clusterstack.imports.importfile import FILE_MODE, check_writable_target

    ws = workspace()
    target = check_writable_target(output, ws.root)  # refuse before any work
    overrides = parse_id_overrides(ids or [])
    with status(as_json)(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)
    from clusterstack.errors import ClusterstackError
    from clusterstack.verify.model import CheckError

    exists = None
    try:   # --live: a bad kubeconfig, an unknown context or an unreachable API server is exit 2
        if live:
            from clusterstack.imports.generate import existing
            from clusterstack.validation import load_cluster
            from clusterstack.verify.kube import KubernetesApi

            cw = load_cluster(ws, cluster).config.platform.coreweave
            if cw is not None:
                exists = existing(stack_plan, KubernetesApi.from_kubeconfig(cw.kube_context,
                                                                      connect=clients().kubernetes))
        generated = generate(stack_plan, only=only or [], ids=overrides, exists=exists)
    except CheckError as exc:
        raise ClusterstackError(f"--live: cannot read cluster {cluster}: {exc}",
                                "check the kubeconfig (KUBECONFIG), its context and your access, "
                                "or drop --live") from None
    write_output(target, generated.file.dumps(), mode=FILE_MODE)  # a pipe or device: written through
    doc = summary_document(generated, cluster=cluster, path=str(target))
    if as_json:
        emit_json(doc)
        return
    err.print(f"wrote {target} (mode 0600)", markup=False)
    print_summary(doc)


def _prompt(expected: str) -> str:
    """Ask for the typed confirmation; returns what was typed ('' when stdin is closed)."""
    return ask(f"Type `{expected}` to import these resources: ") or ""


@import_app.command("apply")
def apply_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) to adopt into."),
        file: Path = typer.Option(..., "--file", "-f", help="The file `import generate` wrote."),
        confirm_digest: str = typer.Option(None, "--confirm-digest", metavar="HEX12",
                                           help="The first 12 hex of the file's digest, for "
                                                "automation (instead of the typed prompt)."),
        message: str = typer.Option("", "--message", "-m",
                                    help="Extra text for the import's update message.")) -> None:
    """Adopt the file's resources into CLUSTER's stack (checks, preview, guard, typed digest, import).

    Refusals exit 2 and change nothing; the guard and the final no-change check exit 3."""
    from clusterstack.engine.model import count_ops
    from clusterstack.guard import GuardBlocked, GuardPolicy
    from clusterstack.imports import apply as tx
    from clusterstack.pulumi.importfile import entries_by_type

    ws = workspace()
    if not file.is_file():   # preconditions first: before a plan that takes seconds
        raise ClusterstackError("no such file (the import file)", f"write it with `clusterstack import generate "
                                f"{cluster} -o {file}`, or pass the path it was written to", file=file)
    policy = GuardPolicy.from_toml(ws.guard, file=ws.file, line_of=ws.line_of)
    with status()(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)
    verified = tx.verify(file, ws.root, stack_plan)
    out.print(f"{file}: {len(verified.adopted)} resource(s) to adopt into stack {cluster}, "
              f"digest sha256:{verified.digest}", markup=False)
    for typ, n in entries_by_type(verified.adopted).items():
        out.print(f"  {n:>3}  {typ}", markup=False)
    eng = clients().engine(ws)
    try:
        result = tx.run(eng, verified, policy=policy, message=message,
                        confirm_digest=confirm_digest,
                        prompt=None if confirm_digest is not None else _prompt,
                        report=lambda line: out.print(line, markup=False))
    except GuardBlocked as exc:
        for v in exc.verdict.violations:
            err.print(v.render(), markup=False)
        raise
    out.print(f"adopted {len(verified.adopted)} resource(s) into {cluster} (protected); final "
              f"preview: {count_ops(result.final) or 'no steps'}", markup=False)
    if result.not_adopted:
        out.print(f"{len(result.not_adopted)} resource(s) were not part of this import and will be "
                  "created by the next `clusterstack up`:", markup=False)
        for urn in result.not_adopted:
            out.print(f"  {urn}", markup=False)
