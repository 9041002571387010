"""``clusterstack iam …``: the reviewed IAM file (see docs/iam.md and :mod:`clusterstack.iam`).

Output never contains key material; emails appear only where the operator asked for them
(``whois``, ``review`` without ``--redact``, ``decrypt --out``), redacted elsewhere (``scan``
always redacts).
"""

from __future__ import annotations

from pathlib import Path

import typer

from clusterstack.cli import clients, emit_json, err, message_root, out, workspace
from clusterstack.errors import ConfigError, Problem
from clusterstack.fsutil import locked, write_atomic
from clusterstack.iam import ops
from clusterstack.iam.adopt import adopt as adopt_file
from clusterstack.iam.audit import audit_keys as audit_flow, parse_max_age
from clusterstack.iam.scan import run_scan
from clusterstack.iam.settings import IamSettings
from clusterstack.scaffold import with_iam_table
from clusterstack.validation import load_cluster
from clusterstack.validation.iam import check_rules, config_addresses, gcp_clusters

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()

iam_app = typer.Typer(no_args_is_help=True, help="IAM as reviewed code: encrypted principals, "
                      "grants, reviews, key rotation and audits.")
app.add_typer(iam_app, name="iam")


def _settings():
    """The [iam] settings — after settling an interrupted ``iam rotate`` (finished or undone,
    :func:`clusterstack.iam.ops.recover_interrupted`), said on stderr: every IAM command
    starts from a keyset that decrypts the file."""
    s, notes = _settled()
    for line in notes:
        err.print(line, markup=False)
    return s


def _settled():
    s = IamSettings.from_workspace(workspace())
    return s, ops.recover_interrupted(s)


def _file_rules():
    """``iam check``'s rules that need the stack's configs, run by every command that writes
    on the would-be file (:func:`clusterstack.validation.iam.check_rules`)."""
    return check_rules(workspace())


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


@iam_app.command()
def init(kms_key: str = typer.Option(None, "--kms-key", help="Encrypt the keyset with this Cloud KMS "
                                     "key (gcpkms://projects/…/cryptoKeys/…) instead of a local file."),
         project: str = typer.Option(None, "--project", help="GCP project of a new IAM file "
                                     "(default: the project of the [iam] stack)."),
         stack: str = typer.Option(None, "--stack", help="The GCP cluster whose stack applies the IAM "
                                   "file ([iam] stack; default: the workspace's one GCP cluster of the "
                                   "project).")) -> None:
    """Create the keyset (local 0600 git-ignored file, or KMS-encrypted) and the IAM file if
    missing, and set [iam] file and stack in clusterstack.toml when they are not set — an IAM
    file no stack applies is refused by `validate`, so the first `iam grant` leaves the
    workspace valid.

    Example: clusterstack iam init   (then: clusterstack iam grant ops@lab.example.org --role roles/viewer)"""
    ws = workspace()
    s = _settings()
    chosen = stack or s.stack
    if chosen is None:
        gcp = gcp_clusters(ws, project)
        if not gcp and project is not None:
            pass   # no GCP cluster yet: the file only; validate names the missing stack
        elif len(gcp) != 1:
            what = f" of project {project}" if project else ""
            raise ConfigError(problems=[Problem(
                f"no GCP cluster{what} to apply the IAM file" if not gcp else
                f"{len(gcp)} GCP clusters{what} could apply the IAM file: {', '.join(sorted(gcp))}",
                "add the project's GCP cluster first: clusterstack cluster new NAME --provider gcp "
                "--project PROJECT" if not gcp else "pass --stack NAME (the one that owns the project's IAM)",
                file=ws.file, field="iam.stack")])
        else:
            (chosen,) = gcp
    elif stack is not None and stack not in ws.cluster_names():
        raise ConfigError(f"--stack {chosen!r} is not a cluster of this workspace",
                          f"one of: {', '.join(ws.cluster_names()) or 'none'}", field="--stack")
    if project is None and not s.file.exists() and chosen is not None:
        gcp_cfg = load_cluster(ws, chosen).config.provisioning.gcp
        if gcp_cfg is None:
            raise ConfigError(f"{chosen!r} is not a GCP cluster: no stack of it could apply an IAM file",
                              "pass --stack NAME of a GCP cluster", field="--stack")
        project = gcp_cfg.project
    rel_file = _rel(s.file, s.root)
    with locked(ws.file):
        text = ws.file.read_text(encoding="utf-8")
        edited = with_iam_table(text, file=rel_file, stack=chosen)   # checked before anything is written
        r = ops.init(s, project=project, kms_key=kms_key, kms_aead=clients().kms)
        if edited != text:
            write_atomic(ws.file, edited)
            out.print(f"set [iam] file = {rel_file!r}" + (f", stack = {chosen!r}" if chosen else "")
                      + f" in {ws.file.name}", markup=False)
    if chosen is None:
        err.print(f"note: [iam] stack is not set: no GCP cluster of project {project} yet — add it "
                  "(clusterstack cluster new NAME --provider gcp --project …) and set [iam] stack "
                  "(`validate` refuses an IAM file no stack applies)", markup=False)
    if r.created_file:
        out.print(f"created {_rel(r.iam_file, s.root)}")
    how = f"encrypted with {r.kms_key} (commit it)" if r.kms_key else "mode 0600, git-ignored; never commit it"
    out.print(f"created keyset {_rel(r.keyset, s.root)} (key id {r.key_id}), {how}")


def _condition_opts():
    return (typer.Option(None, "--condition-title", help="IAM condition title (identifies the binding)."),
            typer.Option(None, "--condition-expression", help="CEL expression of a new condition."))


@iam_app.command()
def grant(who: str = typer.Argument(..., help="EMAIL, human-NNN, or a member such as serviceAccount:EMAIL."),
          role: str = typer.Option(..., "--role", help="roles/NAME or projects/P/roles/ID."),
          on: str = typer.Option("project", "--on", help="project | bucket:NAME | secret:NAME | "
                                 "repo:LOCATION/NAME | sa:EMAIL | kms:KEY | iap:BACKEND | "
                                 "keyring:KEY_RING | run:LOCATION/SERVICE | run-job:LOCATION/JOB | "
                                 "iap-run:LOCATION/SERVICE"),
          condition_title: str = _condition_opts()[0],
          condition_expression: str = _condition_opts()[1],
          condition_description: str = typer.Option(None, "--condition-description"),
          allow_public: bool = typer.Option(False, "--allow-public", help="Allow allUsers / "
                                            "allAuthenticatedUsers (makes the target public).")) -> None:
    """Grant ROLE on a target; registers a new person as the next human-NNN."""
    r = ops.grant(_settings(), who, role, on, condition_title=condition_title,
                  condition_expression=condition_expression,
                  condition_description=condition_description, allow_public=allow_public,
                  file_rules=_file_rules(), kms_aead=clients().kms)
    for line in r.lines:
        out.print(line, markup=False)


@iam_app.command()
def revoke(who: str = typer.Argument(..., help="EMAIL, human-NNN, or a member such as serviceAccount:EMAIL."),
           role: str = typer.Option(..., "--role"),
           on: str = typer.Option("project", "--on"),
           condition_title: str = _condition_opts()[0]) -> None:
    """Remove a member from the grant of ROLE on a target."""
    r = ops.revoke(_settings(), who, role, on, condition_title=condition_title,
                   file_rules=_file_rules(), kms_aead=clients().kms)
    for line in r.lines:
        out.print(line, markup=False)


@iam_app.command()
def review(base: str = typer.Option("HEAD", "--base", help="Git revision to compare against."),
           head: str = typer.Option(None, "--head", help="Git revision to review (default: the working tree)."),
           redact: bool = typer.Option(False, "--redact", help="a***@example.org instead of emails (public PRs)."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON."),
           allow_undecryptable: bool = typer.Option(
               False, "--allow-undecryptable",
               help="Exit 0 even when some base principals cannot be decrypted (review incomplete).")) -> None:
    """Who gains or loses which role on what, from the git diff of the IAM file and configs.

    People are compared by decrypted email, never by id. Base ciphertexts the current keyset
    cannot read are tried with the previous local keyset (``<keyset>.previous``, kept by
    ``iam rotate``) and the base revision's committed KMS-wrapped keyset; if still unreadable the
    review is printed marked INCOMPLETE and the exit code is 2 (unless --allow-undecryptable).
    """
    result = ops.review_diff(_settings(), workspace(), base=base, head=head, redact=redact,
                             warn=lambda line: err.print(line, markup=False))
    if as_json:
        emit_json({"base": base, "head": head, "lines": [c.render() for c in result.changes],
                                   "notes": list(result.notes), "incomplete": list(result.incomplete)})
    else:
        out.file.write(result.render())
    if result.incomplete and not allow_undecryptable:
        err.print("error: the review is incomplete: some base principals could not be decrypted, so "
                  "who gains or loses access is unknown — get the base revision's keyset, or pass "
                  "--allow-undecryptable to accept an incomplete review", markup=False)
        raise typer.Exit(2)


@iam_app.command()
def whois(pid: str = typer.Argument(..., metavar="ID", help="human-NNN"),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Decrypt one principal and list its grants."""
    info = ops.whois(_settings(), pid, kms_aead=clients().kms)
    if as_json:
        emit_json(info)
        return
    out.print(f"{info['id']}: user:{info['email']}", markup=False)
    for g in info["grants"]:
        cond = f" if {g['condition']}" if g["condition"] else ""
        out.print(f"  {g['role']} on {g['target']}{cond}", markup=False)


@iam_app.command()
def decrypt(output: Path = typer.Option(..., "--out", help="File outside the repository (written 0600).")) -> None:
    """Write every principal's email to a private file outside the repository."""
    n = ops.decrypt_to(_settings(), output, kms_aead=clients().kms)
    if output.expanduser().is_file():
        err.print(f"wrote {n} principal(s) to {output} (mode 0600); delete it when done", markup=False)
    else:   # a pipe, a terminal: nothing was stored
        err.print(f"wrote {n} principal(s) to {output}", markup=False)


@iam_app.command()
def rotate(new_kms_key: str = typer.Option(None, "--new-kms-key", help="Wrap the new keyset with this "
                                           "Cloud KMS key (gcpkms://…)."),
           resume: bool = typer.Option(False, "--resume", help="Only settle a rotation that was "
                                       "interrupted (finish it, or undo it when the IAM file was "
                                       "not rewritten yet); start no new one.")) -> None:
    """Re-encrypt every principal under a new keyset; ids and references stay. A rotation is
    journaled (.iam/rotation.json): an interrupted one is finished or undone by the next
    `clusterstack iam` command (or `iam rotate --resume`)."""
    if resume:
        s, notes = _settled()
        for line in notes or ["nothing to resume: no interrupted `iam rotate` is pending"]:
            out.print(line, markup=False)
        return
    s = _settings()   # settles an interrupted rotation first (and says so)
    r = ops.rotate(s, new_kms_key=new_kms_key, file_rules=_file_rules(), kms_aead=clients().kms)
    out.print(f"re-encrypted {r.principals} principal(s): key ids {list(r.old_key_ids)} → {r.new_key_id}")
    out.print(f"keyset written to {_rel(r.keyset, s.root)}"
              + (f" (encrypted with {r.kms_key}; commit it)" if r.kms_key else " (0600, git-ignored)"))
    if r.backup is not None:
        out.print(f"previous keyset kept at {_rel(r.backup, s.root)}: delete it once the rotation is merged")
    out.print("review and commit the IAM file: only ciphertexts change")


@iam_app.command()
def adopt(source: Path = typer.Argument(..., metavar="IAM_DATA_YAML", help="Marin's "
                                        "infra/pulumi/src/iac/gcp/iam_data.yaml (schema_version 1 or 2)."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Convert Marin's iam_data.yaml into the IAM file: every grant additive, on the same
    target, role, condition and member; custom roles and owned service accounts as declared.
    People are decrypted with Marin's Cloud KMS key in memory and re-encrypted as human-NNN:
    no email is written or printed. Run `clusterstack iam init` first (the file's project is
    Marin's project)."""
    r = adopt_file(_settings(), source, file_rules=_file_rules(), kms_aead=clients().kms)
    if as_json:
        emit_json({"changed": r.changed, "members": r.members, "members_total": sum(r.members.values()),
                   "added": r.added, "custom_roles_added": r.custom_roles,
                   "service_accounts_added": r.service_accounts, "ids": r.ids,
                   "registered": list(r.registered), "public": list(r.public)})
        return
    for line in r.lines:
        out.print(line, markup=False)


@iam_app.command()
def fmt() -> None:
    """Rewrite the IAM file in canonical form."""
    s = _settings()
    changed = ops.fmt(s, file_rules=_file_rules())
    out.print(f"{'formatted' if changed else 'already canonical:'} {_rel(s.file, s.root)}")


@iam_app.command()
def check(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """CI gate: schema, canonical form, accessor grants on declared IAP backends, no plaintext
    personal emails in tracked files, no dangling ids."""
    s = _settings()
    ws = workspace()
    report = ops.check(s, ws, required_emails=config_addresses(ws), file_rules=check_rules(ws))
    if as_json:
        emit_json({"ok": not report.problems, "tracked_files": report.tracked_files,
                                   "principals": report.principals, "bindings": report.bindings,
                                   "problems": [p.render(message_root()) for p in report.problems]})
        if report.problems:
            raise typer.Exit(2)
        return
    if report.problems:
        raise ConfigError(problems=list(report.problems))
    out.print(f"ok: {_rel(s.file, s.root)} is valid and canonical ({report.principals} principal(s), "
              f"{report.bindings} binding(s)); no personal email in {report.tracked_files} tracked file(s)")


@iam_app.command()
def scan(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Read-only: live project IAM the file lacks (undeclared members, service agents, broad
    roles) and what the next `up` would remove from an authoritative role; emails redacted."""
    report = run_scan(_settings(), clients().gcp, kms_aead=clients().kms)
    if as_json:
        emit_json(report.to_json())
        return
    out.file.write(report.render())


@iam_app.command("audit-keys")
def audit_keys(project: str = typer.Option(None, "--project", help="GCP project (default: the IAM file's)."),
               max_age: str = typer.Option("90d", "--max-age", help="Age limit: 90d, 12w, 36h."),
               rotate_: bool = typer.Option(False, "--rotate", help="Rotate stale keys of accounts "
                                            "with a key_secret in the IAM file."),
               yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """User-managed service-account keys older than --max-age; --rotate replaces them."""
    from rich.table import Table

    run = audit_flow(_settings(), clients=clients(), project=project, max_age=parse_max_age(max_age),
                     rotate=rotate_, confirm=lambda text: yes or typer.confirm(text))
    project, rows, rotations, skipped, stale = run.project, run.rows, run.rotations, run.skipped, run.stale
    if as_json:
        emit_json({
            "project": project, "max_age": max_age, "keys": [r.to_json() for r in rows],
            "stale": len(stale), "skipped": skipped,
            "rotations": [{"account": x.account, "new_key_id": x.new_key_id,
                           "secret_version": x.secret_version, "disabled": list(x.disabled)}
                          for x in rotations]})
        return
    table = Table(title=f"user-managed keys in {project} (limit {max_age})", title_justify="left",
                  show_edge=False)
    for col in ("account", "key", "age (days)", "status"):
        table.add_column(col)
    for r in rows:
        status = "disabled" if r.disabled else ("STALE" if r.stale else "ok")
        table.add_row(r.account, r.key_id, str(r.age_days), status)
    out.print(table)
    out.print(f"{len(stale)} stale enabled key(s)")
    for x in rotations:
        out.print(f"rotated {x.account}: new key {x.new_key_id} stored as {x.secret_version}; "
                  f"disabled {', '.join(x.disabled) or 'none'}")
    for a in skipped:
        out.print(f"skipped {a}: no rotation (no key_secret in the IAM file, or declined)")
