"""``clusterstack import …``: adopting what already runs, by either path.

From live objects: ``generate`` builds Pulumi's bulk-import file from the offline plan (no CLI,
no credentials; with ``--live``/``--live-dump`` only the objects that exist) and prints what it
holds and its digest; ``report`` compares every declared object with the live one
(:mod:`clusterstack.imports.report`); ``apply`` runs the refusable, digest-confirmed transaction
of :mod:`clusterstack.imports.apply` through the run's engine (``clients().engine``), after the
adoption report, which must hold nothing but same/no-op objects unless ``--accept`` names each.

From an existing Pulumi stack: ``migrate`` maps the old stack's ``pulumi stack export`` to the
program's URNs and writes the migrated state (offline) with its report; ``state`` loads it
into the empty stack (``pulumi stack import``, checked and confirmed) and then writes the old
stack's retirement step (:mod:`clusterstack.imports.migrate`).

Exit codes: 0 ok, 2 refused (nothing changed), 3 blocked by the guard, an unconfirmed report
or the final no-change check, 1 internal failure.
"""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.adapters.gcp import GoogleCompute
from clusterstack.adapters.kubernetes import KubernetesApi
from clusterstack.cli import ask, clients, emit_json, err, out, status, workspace
from clusterstack.engine.model import count_ops
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.fsutil import write_atomic, write_output
from clusterstack.guard import GuardBlocked
from clusterstack.imports import apply as tx
from clusterstack.imports.generate import existence, existing, generate, parse_id_overrides
from clusterstack.imports.importfile import (FILE_MODE, check_mode, check_outside,
                                             check_writable_target)
from clusterstack.imports.live import AdapterView, DumpView
from clusterstack.imports.migrate import check_file, migrate, run_move
from clusterstack.imports.report import live_report, render_text
from clusterstack.plan import plan_stack
from clusterstack.pulumi.importfile import entries_by_type
from clusterstack.pulumi.state import load_state
from clusterstack.validation import load_cluster
from clusterstack.verify.model import CheckError
from clusterstack.workspace import check_stacks

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()

import_app = typer.Typer(name="import", no_args_is_help=True,
                         help="Adopt what already runs: from live objects (generate, report, apply) or from an existing Pulumi stack (migrate, state).")
app.add_typer(import_app, name="import")

SUMMARY_FORMAT = "clusterstack.import-summary/v1"


def _plan(ws, cluster: str):
    """Check the stack pointers and the cluster's config (errors as file:line, before the
    program runs), then plan the stack offline."""
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
         "placeholders": {type: [{"name", "logicalName", "form"}]}, "overridden": [name],
         "absent": [URN], "unverified": [URN], "patches": [URN]}

    ``absent``: left out, not live; ``unverified``: kept although nobody checked that the object
    exists (offline, every entry); ``patches``: Patch resources, never imported — `up` applies
    their fields to the existing object.
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
        "unverified": list(generated.unverified),
        "patches": list(generated.patches),
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
    if doc.get("patches"):
        out.print("patches (never imported; `up` applies their fields to the existing object — "
                  "`import report` compares them): " + ", ".join(doc["patches"]), markup=False)
    if doc.get("unverified"):
        total = sum(doc["imports"].values())
        if len(doc["unverified"]) == total:
            out.print(f"existence not checked: the {total} entries are the declared names; pass "
                      "--live or --live-dump to leave out what does not exist", markup=False)
        else:
            out.print(f"existence not checked ({len(doc['unverified'])}; kept in the file): "
                      + ", ".join(doc["unverified"]), markup=False)
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
                                  "under the declared names."),
        dumps: list[Path] = typer.Option(None, "--live-dump", metavar="FILE",
                                         help="Live objects as `kubectl get -o yaml`, `gcloud … "
                                              "describe --format=json` or Cloudflare's API wrote "
                                              "them: list only what exists. Repeatable.")) -> None:
    """Write Pulumi's bulk-import file for CLUSTER from the offline plan (mode 0600, atomic)."""
    ws = workspace()
    target = check_writable_target(output, ws.root)  # refuse before any work
    overrides = parse_id_overrides(ids or [])
    with status(as_json)(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)

    exists = None
    if live and dumps:
        raise ClusterstackError("give --live or --live-dump, not both",
                                "--live reads the cluster; --live-dump reads files you wrote")
    if dumps:
        exists = existence(DumpView(dumps))
    try:   # --live: a bad kubeconfig, an unknown context or an unreachable API server is exit 2
        if live:
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
    what = "move the state" if expected.startswith("migrate") else "import these resources"
    return ask(f"Type `{expected}` to {what}: ") or ""


_DUMP_HELP = ("Live objects as `kubectl get … -o yaml`, `gcloud … describe --format=json` or "
              "Cloudflare's API wrote them (repeatable): compare with these files.")
_LIVE_HELP = ("Read the live objects through the adapters (read only: the stack's kube context, "
              "Application Default Credentials).")


def live_view(ws, cluster: str, *, live: bool, dumps: list[Path] | None, default_live: bool = False):
    """The live objects to compare with: the dump files, or the adapters (``--live``, or by
    default when ``default_live``). Raises ClusterstackError (exit 2) when both or neither are
    given, and when ``--live`` (not by default) cannot use the cluster's kube context; by
    default each Kubernetes object is then reported unverified with the reason."""
    if live and dumps:
        raise ClusterstackError("give --live or --live-dump, not both",
                                "--live reads the cluster and the project; --live-dump reads "
                                "files you wrote")
    if dumps:
        return DumpView(dumps)
    if not (live or default_live):
        raise ClusterstackError("no live objects to compare with",
                                "pass --live (reads them, read only) or --live-dump FILE…")

    cfg = load_cluster(ws, cluster).config
    kube, reason = None, ""
    if cfg.platform.coreweave is not None:
        try:
            kube = KubernetesApi.from_kubeconfig(cfg.platform.coreweave.kube_context,
                                                 connect=clients().kubernetes)
        except CheckError as exc:
            if not default_live:   # --live asked for the cluster: unreadable is exit 2, as for generate
                raise ClusterstackError(f"--live: cannot read cluster {cluster}: {exc}",
                                        "check the kubeconfig (KUBECONFIG), its context and your "
                                        "access, or give the objects as --live-dump FILE") from None
            reason = f"cannot read cluster {cluster}: {exc}"
    else:
        reason = f"{cluster} has no Kubernetes cluster"
    return AdapterView(kube, GoogleCompute(clients().gcp, timeout=15.0), kube_reason=reason)


def _print_report(report, as_json: bool) -> None:
    if as_json:
        out.file.write(report.dumps())
        return
    for line in render_text(report):
        out.print(line, markup=False)


@import_app.command("report")
def report_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) whose objects to compare."),
        live: bool = typer.Option(False, "--live", help=_LIVE_HELP),
        dumps: list[Path] = typer.Option(None, "--live-dump", metavar="FILE", help=_DUMP_HELP),
        only: list[str] = typer.Option(None, "--only", metavar="TYPE|COMPONENT",
                                       help="Only these resource types / components (as for "
                                            "`import generate`). Repeatable."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """The adoption report: per declared object, what the first `up` after an import would do
    to the live one — same, no-op (and why), live change (the fields), refused, replace,
    create. Read only; offline with --live-dump."""
    ws = workspace()
    view = live_view(ws, cluster, live=live, dumps=dumps)
    policy = ws.guard
    with status(as_json)(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)
    urns = None
    if only:
        g = generate(stack_plan, only=only)
        urns = {g.urns[e.name] for e in g.imports}
    report = live_report(stack_plan, view, urns=urns, replace_paths=policy.replace_paths)
    _print_report(report, as_json)


@import_app.command("apply")
def apply_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) to adopt into."),
        file: Path = typer.Option(..., "--file", "-f", help="The file `import generate` wrote."),
        confirm_digest: str = typer.Option(None, "--confirm-digest", metavar="HEX12",
                                           help="The first 12 hex of the file's digest, for "
                                                "automation (instead of the typed prompt)."),
        message: str = typer.Option("", "--message", "-m",
                                    help="Extra text for the import's update message."),
        live: bool = typer.Option(False, "--live", help=_LIVE_HELP + " The default."),
        dumps: list[Path] = typer.Option(None, "--live-dump", metavar="FILE", help=_DUMP_HELP),
        accept: list[str] = typer.Option(None, "--accept", metavar="NAME",
                                         help="Confirm one object of the adoption report that "
                                              "is not same or a proven no-op (its [name]). "
                                              "Repeatable.")) -> None:
    """Adopt the file's resources into CLUSTER's stack (checks, adoption report, preview, guard,
    typed digest, import).

    Refusals exit 2 and change nothing; the guard, an unconfirmed adoption report and the final
    no-change check exit 3."""
    ws = workspace()
    if not file.is_file():   # preconditions first: before a plan that takes seconds
        raise ClusterstackError("no such file (the import file)", f"write it with `clusterstack import generate "
                                f"{cluster} -o {file}`, or pass the path it was written to", file=file)
    policy = ws.guard
    if live and dumps:
        raise ClusterstackError("give --live or --live-dump, not both",
                                "--live reads the cluster and the project; --live-dump reads "
                                "files you wrote")
    with status()(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)
    verified = tx.verify(file, ws.root, stack_plan)
    view = live_view(ws, cluster, live=live, dumps=dumps, default_live=True)
    out.print(f"{file}: {len(verified.adopted)} resource(s) to adopt into stack {cluster}, "
              f"digest sha256:{verified.digest}", markup=False)
    for typ, n in entries_by_type(verified.adopted).items():
        out.print(f"  {n:>3}  {typ}", markup=False)
    adopted_urns = {verified.urns[e.name] for e in verified.adopted}
    report = live_report(stack_plan, view, urns=adopted_urns, replace_paths=policy.replace_paths,
                         accepted=accept or [])
    _print_report(report, False)
    tx.check_accepted(report, accept or [])
    eng = clients().engine(ws)
    try:
        result = tx.run(eng, verified, policy=policy, message=message,
                        confirm_digest=confirm_digest,
                        prompt=None if confirm_digest is not None else _prompt,
                        report=lambda line: out.print(line, markup=False),
                        project_dir=ws.project_dir)
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


# --- from an existing Pulumi stack ------------------------------------------------------------------

def _migration(ws, cluster: str, export: Path, retire_also: list[str] | None, as_json: bool = False):
    """Read the old stack's export, plan the cluster, map them (offline)."""
    old = load_state(export)
    policy = ws.guard
    with status(as_json)(f"planning {cluster}…"):
        stack_plan = _plan(ws, cluster)
    return migrate(old, stack_plan, policy=policy, retire_also=retire_also or []), policy


def _export_digest(export: Path) -> str:
    import hashlib

    return hashlib.sha256(export.read_bytes()).hexdigest()


MIGRATE_FORMAT = "clusterstack.migration/v1"


@import_app.command("migrate")
def migrate_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) to move the old stack into."),
        export: Path = typer.Option(..., "--export", metavar="FILE",
                                    help="The old stack's `pulumi stack export --file FILE`."),
        output: Path = typer.Option(..., "--output", "-o",
                                    help="Where to write the migrated state (outside the "
                                         "repository; mode 0600)."),
        retire_also: list[str] = typer.Option(None, "--retire-also", metavar="URN",
                                              help="An old resource nothing adopts, to retire "
                                                   "with the rest (it stays live, unmanaged). "
                                                   "Repeatable."),
        as_json: bool = typer.Option(False, "--json", help="Print the mapping and the report as "
                                                           "JSON.")) -> None:
    """Map an existing Pulumi stack's state to CLUSTER's URNs and write it for `import state`,
    with the report of what the first `up` would do. Offline; nothing is changed."""
    ws = workspace()
    target = check_writable_target(output, ws.root)
    m, _policy = _migration(ws, cluster, export, retire_also, as_json)
    write_atomic(target, m.dumps(), mode=FILE_MODE)
    doc = {"format": MIGRATE_FORMAT, "cluster": cluster, "from": m.source_name,
           "file": str(target), "digest": m.digest, "confirm": f"migrate {m.digest[:12]}",
           "moved": [{"from": mv.old.urn, "to": mv.new.urn, "id": mv.old.id} for mv in m.moves],
           "providers": [{"from": o, "to": n} for o, n in sorted(m.providers.items())],
           "retire": list(m.retire),
           "blockers": [{"stays": a, "dependsOn": b} for a, b in m.blockers],
           "report": m.report.to_json()}
    if as_json:
        emit_json(doc)
        return
    err.print(f"wrote {target} (mode 0600)", markup=False)
    out.print(f"{m.source_name} → {m.plan.project}/{cluster}: {len(m.moves)} resource(s) and "
              f"{len(m.providers)} provider(s) move", markup=False)
    _print_report(m.report, False)
    if m.blockers:
        out.print("the retirement of the old stack is blocked (a resource that stays depends on "
                  "one that moves):", markup=False)
        for stay, moving in m.blockers:
            out.print(f"  {stay}\n    depends on {moving}", markup=False)
        out.print("  adopt it, or pass --retire-also '<URN>' to retire it with the rest",
                  markup=False)
    out.print(f"what the first `up` does, as a plan diff: clusterstack diff {cluster} --state "
              f"{target}", markup=False)
    out.print(f"digest sha256:{m.digest}", markup=False)
    out.print(f"to move the state, confirm with: migrate {m.digest[:12]} "
              f"(clusterstack import state {cluster} --file {target} --export {export} …)",
              markup=False)


@import_app.command("state")
def state_cmd(
        cluster: str = typer.Argument(..., help="The cluster (= stack) to load the state into."),
        file: Path = typer.Option(..., "--file", "-f", help="The file `import migrate` wrote."),
        export: Path = typer.Option(..., "--export", metavar="FILE",
                                    help="The old stack's export `import migrate` read."),
        retire_script: Path = typer.Option(..., "--retire-script", metavar="FILE",
                                           help="Where to write the old stack's retirement step "
                                                "(outside the repository; mode 0600)."),
        retire_also: list[str] = typer.Option(None, "--retire-also", metavar="URN",
                                              help="As given to `import migrate`."),
        accept: list[str] = typer.Option(None, "--accept", metavar="NAME",
                                         help="Confirm one object of the report that is not "
                                              "same or a proven no-op. Repeatable."),
        confirm_digest: str = typer.Option(None, "--confirm-digest", metavar="HEX12",
                                           help="The first 12 hex of the migrated state's "
                                                "digest (instead of the typed prompt).")) -> None:
    """Load the migrated state into CLUSTER's empty stack (`pulumi stack import`, checked and
    confirmed), preview, then write the old stack's retirement step (`pulumi state delete` of
    exactly what moved, for you to review and run)."""
    ws = workspace()
    resolved = check_outside(file, ws.root)
    check_mode(resolved)
    script = check_writable_target(retire_script, ws.root)
    m, policy = _migration(ws, cluster, export, retire_also)
    check_file(m, resolved)
    _print_report(m.report, False)
    tx.check_accepted(m.report, accept or [], subject="move")
    eng = clients().engine(ws)
    try:
        result = run_move(eng, m, resolved, policy=policy, export_digest=_export_digest(export),
                          retire_path=script, confirm_digest=confirm_digest,
                          prompt=None if confirm_digest is not None else _prompt,
                          report=lambda line: out.print(line, markup=False))
    except GuardBlocked as exc:
        for v in exc.verdict.violations:
            err.print(v.render(), markup=False)
        raise
    out.print(f"stack {cluster} holds the state of {m.source_name}'s {len(m.moves)} moved "
              f"resource(s); first preview: {count_ops(result.final) or 'no steps'}", markup=False)
    out.print(f"wrote the retirement step {result.retire_script} (mode 0600): review it, then run "
              f"`sh {result.retire_script}` in {m.old.project}'s project directory", markup=False)
