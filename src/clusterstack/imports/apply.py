"""The import transaction (``clusterstack import apply``): refusable, reviewable, confirmed by
the file's digest.

Order (each step only after every earlier one passed; nothing is written before step 5):

1. **The file** — outside the repository (symlinks resolved), a regular file of mode 0600,
   Pulumi's import-file shape; no ``<PLACEHOLDER>`` left in a non-component entry; every
   ``parent`` / ``provider`` reference resolves (:meth:`ImportFile.reference_problems`).
2. **Not stale** — the program is planned again now (offline) and the import file generated
   from it: its ``nameTable`` must equal the file's, and every entry of the file must be in
   the fresh set, unchanged (an ID the config cannot give must still have the declared form).
   A changed program, an edited ID, a renamed resource are refused, naming what differs.
3. **State** — the stack's state (``stack export``): an entry already managed under another
   ID is refused. The explicit providers the entries use must exist in state before Pulumi can
   import through them (``importer.registerProviders``: a provider URN that is not in state
   cannot be referenced); missing ones are created first by a targeted update of exactly those
   providers, their parent components and the Stack — state records only, no cloud object —
   checked step by step (only ``create``/``same`` of the targets, guard clean).
4. **Import preview** (``pulumi import --preview-only``) — the guard, no destructive step at
   all, an ``import`` (or ``same``) step for every entry, and every object found has the
   program's value of each field that cannot change in place (:data:`IMMUTABLE_INPUTS`: an
   address whose IP the config changed is refused here, not replaced after the import).
5. **Confirmation** — the operator types ``import <first 12 hex of the digest>`` (or passes
   ``--confirm-digest``); the import runs on a private copy of exactly the verified bytes, with
   ``protect`` on.
6. **Final preview** — a normal preview of the stack must show no create, replace or delete
   of an adopted resource; otherwise :class:`AdoptionMismatch` (exit 3) names the URNs and the
   release step written beside the file (``<file>.release.sh``, generated from the state it
   checked: :func:`clusterstack.imports.statescript.release_script`).

Before step 3 the CLI compares every entry with its live object (the adoption report,
:mod:`clusterstack.imports.report`) and :func:`check_accepted` refuses (exit 3, nothing imported)
while anything but ``same`` and proven ``no-op`` objects remains that ``--accept NAME`` does not
name.

Refusals are :class:`~clusterstack.imports.importfile.ImportRefused` (exit 2); guard blocks are
:class:`~clusterstack.guard.GuardBlocked` or :class:`ImportBlocked` (exit 3).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from clusterstack.engine.model import Engine
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.guard import GUARD_EXIT_CODE, GuardBlocked, GuardPolicy, Verdict, check
from clusterstack.imports.generate import Generated, generate
from clusterstack.imports.importfile import FILE_MODE, ImportRefused, read_checked
from clusterstack.plan.model import StackPlan
from clusterstack.pulumi.importfile import PLACEHOLDER, ImportEntry, ImportFile, ImportFileError
from clusterstack.pulumi.importids import is_template, template_pattern
from clusterstack.pulumi.state import state_resources
from clusterstack.pulumi.steps import DESTRUCTIVE_OPS, Step
from clusterstack.pulumi.tokens import ADDRESS, GLOBAL_ADDRESS, STACK_TYPE, is_provider
from clusterstack.flows.up import guarded_preview
from clusterstack.fsutil import write_atomic
from clusterstack.imports.statescript import release_script

if TYPE_CHECKING:  # the adoption report reads live objects: imported by the command that builds one
    from clusterstack.imports.report import AdoptionReport, Row

DIGEST_PREFIX = 12
CREATE_OPS = frozenset({"create", "create-replacement"})
REPLACE_OR_DELETE = DESTRUCTIVE_OPS
_ENTRY_FIELDS = ("type", "logical_name", "parent", "provider", "version", "component", "remote",
                 "properties", "plugin_download_url")
_JSON_NAMES = {"logical_name": "logicalName", "plugin_download_url": "pluginDownloadUrl"}


class ImportBlocked(ClusterstackError):
    """An engine preview of the transaction shows something an adoption must never do (a
    destructive step, a step outside the bootstrap's targets, an entry Pulumi would not
    import). Exit code 3; nothing was imported."""

    exit_code = GUARD_EXIT_CODE


#: Inputs the cloud cannot change in place, per type: when the object the import finds has
#: another value than the program declares, adopting it is followed by a replace (or a failed
#: update). From terraform-provider-google, which pulumi-gcp bridges:
#: google/services/compute/resource_compute_address.go (@020769f) and
#: resource_compute_global_address.go — ``address``, ``address_type``, ``network_tier``,
#: ``ip_version``, ``purpose``, ``prefix_length`` are ``ForceNew`` and read back unchanged
#: (``flattenComputeAddressAddress`` returns the API's value). ``region`` is ForceNew too but
#: read back as a self link or a name (``CompareSelfLinkOrResourceName``): the import ID holds it.
IMMUTABLE_INPUTS: Mapping[str, tuple[str, ...]] = {
    ADDRESS: ("address", "addressType", "networkTier", "ipVersion", "purpose", "prefixLength"),
    GLOBAL_ADDRESS: ("address", "addressType", "ipVersion", "purpose", "prefixLength"),
}


def immutable_mismatches(plan: StackPlan, steps: Iterable[Step]) -> list[Problem]:
    """Import-preview steps whose object, as the provider read it (the step's new inputs:
    Pulumi's import step carries the inputs it read, e.g. ``TestImportInputDiff/import`` of
    pulumi/pulumi's lifecycle tests), has another value of an :data:`IMMUTABLE_INPUTS` field than
    ``plan`` declares. Fields the program leaves unset or the read does not return are not
    compared. Step 4 refuses on any (a changed address IP in the config is seen here, before
    anything is imported, not after as a replace)."""
    declared = {r.urn: r for r in plan.resources}
    out = []
    for s in steps:
        fields = IMMUTABLE_INPUTS.get(s.type)
        r = declared.get(s.urn)
        if s.op != "import" or not fields or r is None or not s.new_inputs:
            continue
        for f in fields:
            want, found = r.inputs.get(f), s.new_inputs.get(f)
            if want is None or found is None or want == found:
                continue
            out.append(Problem(
                f"{s.urn}: the cloud's object has {f} {found!r}, the program declares {want!r} — "
                f"{f} cannot change in place, so adopting it would replace it",
                "nothing was imported; make the config say what the cloud has (or import "
                "the object that has the declared value), regenerate the file, review it again",
                field=f))
    return out


class AdoptionMismatch(ClusterstackError):
    """After the import, the preview still creates, replaces or deletes adopted resources: the
    program does not describe the live objects. Exit code 3. The import *is* recorded (the
    resources are protected); no ``up`` may run until the program matches. ``release``: the
    state-only step clusterstack wrote to release exactly these URNs
    (:func:`clusterstack.imports.statescript.release_script`), when it could write one."""

    exit_code = GUARD_EXIT_CODE

    def __init__(self, steps: Iterable[Step], release: Path | None = None, *,
                 hint: str | None = None) -> None:
        self.steps = tuple(steps)
        self.release = release
        undo = (f"or, if the wrong object was adopted, release it from the state with the step "
                f"clusterstack wrote and checked: review, then `sh {release}`") if release else \
            "or, if the wrong object was adopted, run `import apply` again: it writes the " \
            "release step once the state shows the import"
        hint = hint or ("the resources are imported and protected; do NOT run `up`: reconcile "
                        f"the reviewed config with the live object (see `clusterstack preview`), "
                        f"{undo}")
        super().__init__(problems=[Problem(f"after the import, the preview would {s.op} {s.urn}",
                                           hint) for s in self.steps])


class AdoptionUnconfirmed(ClusterstackError):
    """The adoption report holds objects that are not a proven no-op (a live change, a refused
    update, a replace, an object nobody could read, one that does not exist) and ``--accept``
    does not name them. Exit code 3; nothing was imported."""

    exit_code = GUARD_EXIT_CODE


def check_accepted(report: AdoptionReport, accept: Iterable[str], *, subject: str = "import") -> None:
    """The gate of ``import apply``: every row of ``report`` (an
    :class:`clusterstack.imports.report.AdoptionReport`) that is not ``same`` or ``no-op``
    must be named in ``accept`` (by its entry name). Raises ImportRefused for a name that is
    not in the report or needs no confirmation (a typo must not pass), AdoptionUnconfirmed
    listing every unconfirmed row."""
    accept = list(dict.fromkeys(accept))
    rows = {r.name: r for r in report.rows}
    needing = {r.name for r in report.needing_confirmation()}
    bad = [a for a in accept if a not in rows or a not in needing]
    if bad:
        raise ImportRefused(problems=[Problem(
            f"--accept {a}: " + ("no object of the report has this name" if a not in rows else
                                 f"{rows[a].ref} is {rows[a].verdict}: nothing to confirm"),
            "give the names in [brackets] of the report's lines that need confirmation")
            for a in bad])
    open_ = [r for r in report.needing_confirmation() if r.name not in set(accept)]
    if open_:
        def what(r: Row) -> str:
            if r.changes:
                first = r.changes[0]
                more = f" (+{len(r.changes) - 1} more)" if len(r.changes) > 1 else ""
                return f"{first.path}{more}"
            return r.reason or r.verdict
        raise AdoptionUnconfirmed(problems=[Problem(
            f"{r.verdict}: {r.ref} [{r.name}]: {what(r)}",
            f"nothing was imported; review the adoption report, then make the config say what "
            f"is live, or confirm this {subject} with --accept {r.name}") for r in open_])


@dataclass(frozen=True)
class Verified:
    """A file that passed steps 1–2: the parsed file, its digest, the fresh generation, the
    plan it came from, each entry's URN, and where the file is (resolved)."""

    file: ImportFile
    digest: str
    fresh: Generated
    plan: StackPlan
    urns: Mapping[str, str]
    path: Path | None = None

    @property
    def short_digest(self) -> str:
        return self.digest[:DIGEST_PREFIX]

    @property
    def adopted(self) -> tuple[ImportEntry, ...]:
        return tuple(e for e in self.file.resources if not e.component)


@dataclass(frozen=True)
class ApplyResult:
    """What the transaction did: ``bootstrapped`` URNs created by the targeted update,
    ``already_managed`` entry names whose resource was already in state with the same ID,
    ``imported`` the import's steps, ``final`` the final preview's steps, ``not_adopted`` URNs
    the final preview creates that are not part of the file (a later ``up`` creates them)."""

    stack: str
    digest: str
    bootstrapped: tuple[str, ...] = ()
    already_managed: tuple[str, ...] = ()
    imported: tuple[Step, ...] = ()
    final: tuple[Step, ...] = ()
    not_adopted: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)


# --- steps 1-2: offline -------------------------------------------------------------------


def entry_differences(file_entry: ImportEntry, fresh_entry: ImportEntry, template: str | None
                      ) -> list[str]:
    """Human-readable differences of a file entry from the freshly generated one. ``template``
    is the declared ID (or template) of a non-component entry: a file ID is accepted when it
    equals it, or, for a template, when it has the template's form."""
    diffs = []
    for f in _ENTRY_FIELDS:
        a, b = getattr(file_entry, f), getattr(fresh_entry, f)
        if a != b:
            diffs.append(f"{_JSON_NAMES.get(f, f)} is {a!r} in the file, the program declares {b!r}")
    if not fresh_entry.component:
        fid = file_entry.id or ""
        if template is not None and is_template(template):  # an ID the config cannot give
            if fid and fid != PLACEHOLDER and not template_pattern(template).match(fid):
                diffs.append(f"id {fid!r} does not have the declared form {template!r}")
        elif fid != fresh_entry.id:
            diffs.append(f"id is {fid!r} in the file, the program declares {fresh_entry.id!r}")
    elif file_entry.id:
        diffs.append("a component entry has an id")
    return diffs


def staleness(file: ImportFile, fresh: Generated) -> list[Problem]:
    """Step 2: every way ``file`` differs from the program now (see the module docstring)."""
    problems: list[Problem] = []
    ft, nt = dict(file.name_table), dict(fresh.file.name_table)
    for name in sorted(set(ft) | set(nt)):
        if name not in nt:
            problems.append(Problem(f"nameTable entry {name!r} is not a provider of the program",
                                    "regenerate the file", field="nameTable"))
        elif name not in ft:
            problems.append(Problem(f"nameTable lacks {name!r} ({nt[name]})",
                                    "regenerate the file", field="nameTable"))
        elif ft[name] != nt[name]:
            problems.append(Problem(f"nameTable {name!r} is {ft[name]} in the file, the program "
                                    f"has {nt[name]}", "regenerate the file", field="nameTable"))
    fresh_by_name = fresh.file.by_name()
    for i, e in enumerate(file.resources):
        where = f"resources[{i}] ({e.name})"
        other = fresh_by_name.get(e.name)
        if other is None:
            problems.append(Problem(
                f"{e.type} {e.logical_name!r} is not declared by the program now (renamed, "
                "removed, or the entry was edited)", "regenerate the file from the current "
                "program, review it again", field=where))
            continue
        for d in entry_differences(e, other, fresh.templates.get(e.name)):
            problems.append(Problem(d, "regenerate the file from the current program, review it "
                                    "again", field=where))
    return problems


def verify(path: Path, workspace_root: Path, plan: StackPlan) -> Verified:
    """Steps 1–2 against ``plan`` (the program planned *now*). Raises ImportRefused listing
    every problem of the failing step."""
    file = read_checked(path, workspace_root)
    placeholders = file.placeholders()
    if placeholders:
        raise ImportRefused(problems=[Problem(
            f"{e.type} {e.logical_name!r} still has no ID ({e.id or 'empty'})",
            f"regenerate with `--id {e.logical_name}=<id>` (or `--only` without it)",
            file=path, field=f"resources ({e.name})") for e in placeholders])
    refs = file.reference_problems()
    if refs:
        for p in refs:
            p.file = path
        raise ImportRefused(problems=refs)
    fresh = generate(plan)
    stale = staleness(file, fresh)
    if stale:
        for p in stale:
            p.file = path
        raise ImportRefused(problems=stale)
    try:
        urns = file.urns(plan.project, plan.stack)
    except ImportFileError as exc:
        raise ImportRefused(problems=exc.problems) from None
    return Verified(file=file, digest=file.digest(), fresh=fresh, plan=plan, urns=urns,
                    path=Path(path).resolve())


def check_confirmation(verified: Verified, *, confirm_digest: str | None,
                       prompt: Callable[[str], str] | None) -> None:
    """Step 5's gate. ``confirm_digest``: the first 12 hex of the digest (automation);
    otherwise ``prompt(expected_text)`` must return exactly ``import <12 hex>``. Raises
    ImportRefused on a mismatch or when neither is available."""
    expected = verified.short_digest
    if confirm_digest is not None:
        if confirm_digest.strip().lower() != expected:
            raise ImportRefused(f"--confirm-digest {confirm_digest} does not match the file "
                                f"(digest {expected}…)", "the file is not the one you reviewed: "
                                "run `import generate` again and review what it prints")
        return
    if prompt is None:
        raise ImportRefused("no terminal to confirm the import on",
                            f"pass --confirm-digest {expected} after reviewing the preview")
    answer = prompt(f"import {expected}")
    if answer.strip() != f"import {expected}":
        raise ImportRefused("confirmation did not match; nothing was imported",
                            f"type exactly: import {expected}")


# --- steps 3-6: the engine ----------------------------------------------------------------


def bootstrap_targets(verified: Verified, state: Mapping[str, Any]) -> tuple[str, ...]:
    """URNs a targeted update must create before the import: each explicit provider an entry
    uses that is not in state, its ancestor components, and the Stack if missing."""
    used = {verified.file.name_table[e.provider] for e in verified.file.resources if e.provider}
    missing = sorted(u for u in used if u not in state)
    if not missing:
        return ()
    by_urn = verified.plan.by_urn()
    targets: set[str] = set()
    for urn in missing:
        cur: str | None = urn
        while cur is not None and cur in by_urn:
            if cur not in state:
                targets.add(cur)
            cur = by_urn[cur].parent
    return tuple(sorted(targets))


def _write_release(engine: Engine, verified: Verified, steps: Sequence[Step],
                   project_dir: Path | None) -> Path | None:
    """Write the release step for the mismatched URNs that the state shows imported (checked
    against ``stack export``); None when there is no file to write beside or nothing to release."""
    if verified.path is None:
        return None
    state = state_resources(engine.export(verified.plan.stack))
    urns = [s.urn for s in steps if s.urn in state and s.op not in CREATE_OPS]
    urns += [s.urn for s in steps if s.urn in state and s.op in CREATE_OPS and s.urn not in urns]
    if not urns:
        return None
    target = verified.path.with_name(verified.path.name + ".release.sh")
    write_atomic(target, release_script(verified.plan.stack, str(project_dir or "the project"),
                                        sorted(dict.fromkeys(urns), reverse=True),
                                        digest=verified.digest), mode=FILE_MODE)
    return target


def _require_only(steps: Iterable[Step], allowed_urns: set[str], allowed_ops: frozenset[str],
                  what: str) -> None:
    bad = [s for s in steps if s.urn not in allowed_urns or s.op not in allowed_ops]
    if bad:
        raise ImportBlocked(problems=[Problem(
            f"{what}: unexpected {s.op} of {s.urn}", "nothing was imported; check the stack "
            "with `clusterstack preview` before adopting") for s in bad])


def _guard(steps: Iterable[Step], policy: GuardPolicy) -> Verdict:
    steps = tuple(steps)
    verdict = check(steps, policy)
    if not verdict.ok:
        raise GuardBlocked(verdict)
    destructive = [s for s in steps if s.op in REPLACE_OR_DELETE]
    if destructive:
        raise ImportBlocked(problems=[Problem(
            f"an adoption never replaces or deletes: the preview would {s.op} {s.urn}",
            "nothing was imported; find out why with `clusterstack preview`") for s in destructive])
    return verdict


Report = Callable[[str], None]


def run(engine: Engine, verified: Verified, *, policy: GuardPolicy, message: str,
        confirm_digest: str | None = None, prompt: Callable[[str], str] | None = None,
        report: Report = lambda _line: None, project_dir: Path | None = None) -> ApplyResult:
    """Steps 3–6 on ``engine`` (a :class:`clusterstack.engine.Engine`) for a verified file.

    ``report`` receives one line per milestone (the CLI prints them). Raises ImportRefused
    (exit 2), GuardBlocked / ImportBlocked / AdoptionMismatch (exit 3) or the engine's typed
    errors. On AdoptionMismatch the release step for exactly the mismatched URNs is written
    beside the import file (``<file>.release.sh``, mode 0600) once the stack's state shows
    them imported; ``project_dir`` is named in it (where to run it).
    """
    stack = verified.plan.stack
    entry_urns = {verified.urns[e.name]: e for e in verified.file.resources}
    state = state_resources(engine.export(stack))

    # 3. state: conflicting IDs, providers to bootstrap
    conflicts, already = [], []
    for urn, e in sorted(entry_urns.items()):
        old = state.get(urn)
        if old is None or e.component:
            continue
        old_id = old.get("importID") or old.get("id")  # Pulumi keeps the import ID when it differs
        if old_id != e.id:
            conflicts.append(Problem(f"{urn} is already managed with ID {old_id!r}, the file says "
                                     f"{e.id!r}", "nothing to adopt there: it is Pulumi's already"))
        else:
            already.append(e.name)
    if conflicts:
        raise ImportRefused(problems=conflicts)
    if already:
        report(f"{len(already)} entr{'y is' if len(already) == 1 else 'ies are'} already in the "
               "stack's state with the same ID (the import keeps them as they are)")

    targets = bootstrap_targets(verified, state)
    if targets:
        report(f"the import needs {len(targets)} provider/component record(s) in state first "
               "(a targeted update of only these; no cloud object is created):")
        for urn in targets:
            report(f"  {urn}")
        pre = engine.preview(stack, targets=list(targets))
        _require_only(pre.changes, set(targets), frozenset({"create"}), "provider bootstrap preview")
        _guard(pre.steps, policy)
        allowed = set(targets)
        engine.up(stack, message=f"clusterstack import {verified.short_digest}: providers",
                  targets=list(targets),
                  on_step=lambda s: s.op == "same" or (s.urn in allowed and s.op == "create"))
        report(f"created {len(targets)} provider/component record(s)")

    with tempfile.TemporaryDirectory(prefix="clusterstack-import-") as tmp:
        private = Path(tmp) / "import.json"
        private.touch(mode=FILE_MODE)
        private.write_text(verified.file.dumps(), encoding="utf-8")

        # 4. import preview
        preview = engine.preview_import(stack, str(private))
        _guard(preview.steps, policy)
        mismatched = immutable_mismatches(verified.plan, preview.steps)
        if mismatched:
            raise ImportRefused(problems=mismatched)
        planned = {s.urn: s for s in preview.steps}
        # pkg/resource/deploy/import.go: an entry already in state under the same ID gets a
        # `same` step, and `pulumi import --json` never shows sames — no step is its answer
        # (after the bootstrap, whose components — e.g. the `dns` FederationDns — are entries too)
        now = state_resources(engine.export(stack)) if targets else state
        in_state = {u for u, e in entry_urns.items() if u in now
                    and (e.component or (now[u].get("importID") or now[u].get("id")) == e.id)}
        not_planned = [u for u, e in sorted(entry_urns.items())
                       if (u not in planned and u not in in_state)
                       or (u in planned and planned[u].op not in ("import", "same"))]
        if not_planned:
            raise ImportBlocked(problems=[Problem(
                f"the import preview has no import step for {u}"
                + (f" (it shows {planned[u].op})" if u in planned else ""),
                "nothing was imported; regenerate the file and check the stack") for u in not_planned])
        strays = [s for s in preview.changes if s.urn not in entry_urns
                  and not (s.op == "create" and (s.type == STACK_TYPE or is_provider(s.type)))]
        if strays:
            raise ImportBlocked(problems=[Problem(
                f"the import preview would also {s.op} {s.urn}",
                "nothing was imported; an import touches only the file's entries") for s in strays])
        n_res = sum(1 for s in preview.steps if s.op == "import" and s.urn in entry_urns
                    and not entry_urns[s.urn].component)
        n_comp = sum(1 for s in preview.steps if s.op == "import" and s.urn in entry_urns
                     and entry_urns[s.urn].component)
        report(f"import preview: {n_res} resource(s) and {n_comp} component(s) to import, "
               f"{len(already)} already managed; guard clean")

        # 5. confirmation, then the import (protect on); a re-run with every entry already in
        # state has nothing to import and runs no import at all
        result: Any = None
        if n_res + n_comp:
            check_confirmation(verified, confirm_digest=confirm_digest, prompt=prompt)
            result = engine.import_file(stack, str(private), protect=True,
                                        message=f"clusterstack import {verified.short_digest}: "
                                                f"{len(verified.adopted)} resource(s). {message}".strip())
    if result is not None:
        report(f"imported with protect on: {dict(result.counts)}")
    else:
        report("nothing to import: every entry is already in the stack's state with its ID")

    # 6. final preview: nothing adopted may be created, replaced or deleted; a protected
    # resource Pulumi refuses to touch is the guard's verdict (exit 3), not a program failure

    final, final_verdict = guarded_preview(engine, stack, policy)
    adopted = {verified.urns[e.name] for e in verified.file.resources}
    bad = [s for s in final.steps if s.urn in adopted and (s.op in CREATE_OPS or s.op in REPLACE_OR_DELETE)]
    if bad:
        raise AdoptionMismatch(bad, _write_release(engine, verified, bad, project_dir))
    if not final_verdict.ok:
        raise GuardBlocked(final_verdict)
    not_adopted = tuple(sorted({s.urn for s in final.steps if s.op in CREATE_OPS and s.urn not in adopted}))
    return ApplyResult(stack=stack, digest=verified.digest, bootstrapped=targets,
                       already_managed=tuple(already),
                       imported=tuple(result.steps) if result is not None else (),
                       final=tuple(final.steps), not_adopted=not_adopted,
                       counts=dict(result.counts) if result is not None else {})
