"""Adoption from an existing Pulumi stack (``clusterstack import migrate``): the old stack's
state, moved under clusterstack's URNs, for ``pulumi stack import`` — and the old stack's
retirement, as a generated, reviewed ``pulumi state delete`` of exactly what moved.

**Mapping.** A resource of the old stack moves to the resource of the plan with the same type
and the same live identity: the ID Pulumi's import of that type takes
(:mod:`clusterstack.pulumi.importids`, declared next to each resource) against the old
resource's provider ID (``id``; a Cloudflare record's is ``<zone_id>/<record id>``, pulumi-
cloudflare's import ID). An ID template (``<zone>/<record_id>``) matches any ID of its form.
One old resource per new one and back; a provider moves with the resources it serves (the old
provider of every moved resource must map to one provider of the program, of the same type).
The same identity under another type (an API version the program declares differently) is not
moved: Pulumi keys state by URN and type, so it is reported, not guessed.

**The migrated deployment** (:attr:`Migration.document`, ``apitype.UntypedDeployment`` v3): the
old manifest (its ``magic`` recomputed, ``Manifest.NewMagic``) and secrets provider (secret
values stay the ciphertext they were; ``pulumi stack import`` decrypts them with that provider
and the next write re-encrypts with the stack's own), the program's Stack resource and every
component on the way to a moved resource (clusterstack's URNs and parents), each moved provider
with the old provider's ID, inputs and outputs, and each moved resource with its old ID,
inputs, outputs, ``protect``/``retainOnDelete``, timestamps and import ID carried over *exactly*
— only ``urn``, ``parent``, ``provider`` (``<new provider URN>::<old ID>``), ``dependencies``,
``propertyDependencies`` and ``deletedWith`` are rewritten (a reference to something that did not
move is dropped; the first ``up`` records the program's own), ``aliases`` and
``sourcePosition`` (they name the old program) dropped. Resources are ordered so that parents,
providers and dependencies come first, and the document is checked against
``Snapshot.VerifyIntegrity``'s rules (:func:`clusterstack.pulumi.state.integrity_problems`)
before it is returned. Inputs carried over exactly make an identical object ``same`` in the
first preview; what the first ``up`` does is :attr:`Migration.report` (and
``clusterstack diff --state <file>``, the same comparison).

**Retirement** (:attr:`Migration.retire`): the old URNs to remove from the old stack's state —
every moved resource, each old component left without children, each old provider left without
users — in reverse document order (dependents first: ``pulumi state delete`` refuses a resource
something still depends on, ``edit.DeleteResource``'s ``ResourceHasDependenciesError``,
``pkg/cmd/pulumi/state/state_delete.go``). A resource that stays in the old stack but depends
on one that moves is a *blocker* (its delete would fail): adopt it too, or name it with
``retire_also`` to drop it from the old state as well (the object stays live, unmanaged).
Never ``destroy``: every command removes a state record, no cloud object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from clusterstack.engine.model import Engine
from clusterstack.errors import Problem
from clusterstack.imports import rules
from clusterstack.imports.importfile import FILE_MODE, ImportRefused
from clusterstack.imports.report import (CREATE, AdoptionReport, Row, entry_names,
                                         sort_rows, verdict_of)
from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens
from clusterstack.pulumi.importfile import digest_of
from clusterstack.pulumi.importids import is_template, template_pattern
from clusterstack.pulumi.urn import provider_reference, provider_urn
from clusterstack.pulumi.state import (Deployment, StateResource, export_document,
    integrity_problems, manifest_magic, state_resources)
from clusterstack.flows.up import guarded_preview
from clusterstack.fsutil import write_atomic
from clusterstack.guard import GuardBlocked, GuardPolicy
from clusterstack.imports.apply import (AdoptionMismatch, CREATE_OPS, ImportBlocked,
    REPLACE_OR_DELETE)
from clusterstack.imports.live import identity, ref_of
from clusterstack.imports.statescript import state_delete_script
from clusterstack.plan.diff import STATE_OPTIONS, diff_plans, plan_from_state
from clusterstack.pulumi.paths import contains, lenient_parse

_DROPPED_FIELDS = ("aliases", "sourcePosition")


class MigrationRefused(ImportRefused):
    """The old stack cannot be moved as it is (exit 2; nothing written)."""


@dataclass(frozen=True)
class Move:
    """One old resource and the program's resource it becomes."""

    old: StateResource
    new: PlannedResource


@dataclass(frozen=True)
class Migration:
    """The result of :func:`migrate` (module docstring). ``document``: the migrated
    deployment; ``digest``: SHA-256 of its compact canonical JSON; ``retire``: old URNs in
    deletion order; ``protected``: those of them the old state protects; ``blockers``:
    ``(staying URN, moving URN it depends on)``; ``not_adopted``: old resources nothing adopts,
    with the reason; ``report``: the first ``up``, per adopted object."""

    old: Deployment
    plan: StackPlan
    moves: tuple[Move, ...]
    providers: Mapping[str, str]
    document: Mapping[str, Any]
    retire: tuple[str, ...]
    protected: frozenset[str]
    blockers: tuple[tuple[str, str], ...]
    not_adopted: tuple[tuple[str, str, str], ...]
    report: AdoptionReport
    retire_also: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return digest_of(self.document)

    def dumps(self) -> str:
        """The migrated deployment as ``pulumi stack export`` writes it (4-space indent) — the
        file for ``pulumi stack import --file``; keys sorted, so byte-identical per input."""
        return json.dumps(self.document, indent=4, sort_keys=True, ensure_ascii=False) + "\n"

    @property
    def source_name(self) -> str:
        return f"{self.old.project}/{self.old.stack}"


# --- identities -----------------------------------------------------------------------------------

def old_identity(r: StateResource) -> str | None:
    """The import ID of an old resource: its provider ID, or for a Cloudflare record
    ``<zone_id>/<record id>`` (pulumi-cloudflare's import ID)."""
    if r.type in (tokens.DNS_RECORD, tokens.LEGACY_DNS_RECORD):
        zone = r.inputs.get("zoneId")
        return f"{zone}/{r.id}" if zone and r.id else None
    return r.id or r.import_id


def _matches(adopt_id: str | None, identity: str) -> bool:
    if not adopt_id:
        return False
    if is_template(adopt_id):
        return bool(template_pattern(adopt_id).match(identity))
    return adopt_id == identity


def _leaves(plan: StackPlan) -> list[PlannedResource]:
    return [r for r in plan.resources if r.custom and not r.is_provider
            and r.type != tokens.STACK_TYPE]


# --- the mapping -------------------------------------------------------------------------------------

def match(old: Deployment, plan: StackPlan) -> tuple[list[Move], list[tuple[str, str, str]], list[Problem]]:
    """``(moves, not adopted [(urn, type, reason)], problems)`` of ``old`` against ``plan``."""
    leaves = _leaves(plan)
    moves: list[Move] = []
    stays: list[tuple[str, str, str]] = []
    problems: list[Problem] = []
    taken: dict[str, str] = {}
    for r in old.resources:
        if not r.custom or tokens.is_provider(r.type) or r.type == tokens.STACK_TYPE:
            continue
        ident = old_identity(r)
        if ident is None:
            stays.append((r.urn, r.type, "no provider ID in the old state"))
            continue
        same_type = [n for n in leaves if n.type == r.type and _matches(n.adopt_id, ident)]
        other_type = [n for n in leaves if n.type != r.type and tokens.member(n.type) ==
                      tokens.member(r.type) and tokens.package(n.type) == tokens.package(r.type)
                      and _matches(n.adopt_id, ident)]
        if len(same_type) > 1:
            problems.append(Problem(f"{r.urn} (ID {ident}) matches {len(same_type)} resources of "
                                    "the program: " + ", ".join(n.urn for n in same_type),
                                    "two declarations of one live object: fix the config"))
            continue
        if not same_type:
            reason = "clusterstack declares no resource of this type with this ID"
            if other_type:
                reason = (f"clusterstack declares this object as {other_type[0].type}: a type "
                          "change is not a state move (declare the old type, or adopt it with "
                          "`import generate/apply` after the move)")
            stays.append((r.urn, r.type, reason))
            continue
        new = same_type[0]
        if new.urn in taken:
            problems.append(Problem(f"{r.urn} and {taken[new.urn]} both map to {new.urn}",
                                    "the old stack manages one object twice: remove one of them "
                                    "from its state first"))
            continue
        taken[new.urn] = r.urn
        moves.append(Move(r, new))
    return moves, stays, problems


def _provider_map(moves: Sequence[Move], old: Deployment, plan: StackPlan
                  ) -> tuple[dict[str, str], list[Problem]]:
    by_old = old.by_urn()
    by_new = plan.by_urn()
    mapping: dict[str, str] = {}
    back: dict[str, str] = {}
    problems: list[Problem] = []
    for m in moves:
        po, pn = m.old.provider, m.new.provider
        if not po or po not in by_old:
            problems.append(Problem(f"{m.old.urn} has no provider in the old state",
                                    "export the old stack again (`pulumi stack export`)"))
            continue
        if not pn or pn not in by_new:
            problems.append(Problem(f"{m.new.urn} uses a default provider",
                                    "clusterstack's components declare explicit providers: this "
                                    "is a bug of the component (exit 1 would be right)"))
            continue
        if by_old[po].type != by_new[pn].type:
            problems.append(Problem(f"provider {po} ({by_old[po].type}) would become {pn} "
                                    f"({by_new[pn].type})", "check the old export"))
            continue
        if mapping.get(po, pn) != pn:
            problems.append(Problem(f"the old provider {po} serves resources that clusterstack "
                                    f"splits between {mapping[po]} and {pn}",
                                    "move them in separate steps (`--only`) or declare one provider"))
            continue
        if back.get(pn, po) != po:
            problems.append(Problem(f"clusterstack's provider {pn} would take the place of both "
                                    f"{back[pn]} and {po}", "the old stack targets one system "
                                    "through two providers: move them in separate steps"))
            continue
        mapping[po] = pn
        back[pn] = po
    return mapping, problems


def _rewrite(raw: Mapping[str, Any], urn_map: Mapping[str, str]) -> dict[str, Any]:
    """The reference fields of a state record rewritten through ``urn_map`` (a reference to an
    unmapped URN dropped)."""
    out = {k: v for k, v in raw.items() if k not in _DROPPED_FIELDS}
    deps = [urn_map[d] for d in raw.get("dependencies") or () if d in urn_map]
    out.pop("dependencies", None)
    if deps:
        out["dependencies"] = list(dict.fromkeys(deps))
    if "propertyDependencies" in raw:
        out["propertyDependencies"] = {
            k: list(dict.fromkeys(urn_map[d] for d in v or () if d in urn_map))
            for k, v in sorted((raw.get("propertyDependencies") or {}).items())}
    if raw.get("deletedWith"):
        if raw["deletedWith"] in urn_map:
            out["deletedWith"] = urn_map[raw["deletedWith"]]
        else:
            out.pop("deletedWith")
    return out


def _order(records: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with every parent, provider and dependency before the resource naming it;
    otherwise in URN order (deterministic)."""
    done: set[str] = set()
    out: list[dict[str, Any]] = []

    def refs(r: Mapping[str, Any]) -> list[str]:
        names: list[str] = [r["parent"]] if r.get("parent") else []
        if (provider := provider_urn(r.get("provider"))) is not None:
            names.append(provider)
        names += list(r.get("dependencies") or ())
        names += [d for ds in (r.get("propertyDependencies") or {}).values() for d in ds]
        if r.get("deletedWith"):
            names.append(r["deletedWith"])
        return sorted(set(n for n in names if n in records))

    def visit(urn: str, path: tuple[str, ...]) -> None:
        if urn in done:
            return
        if urn in path:
            raise ValueError(f"dependency cycle through {urn}")
        for d in refs(records[urn]):
            visit(d, (*path, urn))
        done.add(urn)
        out.append(records[urn])

    stack = [u for u, r in records.items() if r.get("type") == tokens.STACK_TYPE]
    for urn in stack + sorted(records):
        visit(urn, ())
    return out


def _retirement(old: Deployment, moved: set[str], also: set[str]
                ) -> tuple[tuple[str, ...], frozenset[str], tuple[tuple[str, str], ...]]:
    by_urn = old.by_urn()
    retired = set(moved) | set(also)
    children: dict[str, set[str]] = {}
    for r in old.resources:
        if r.parent:
            children.setdefault(r.parent, set()).add(r.urn)
    changed = True
    while changed:   # components and providers the move leaves empty, to a fixpoint
        changed = False
        for r in old.resources:
            if r.urn in retired or r.type == tokens.STACK_TYPE:
                continue
            kids = children.get(r.urn, set())
            if tokens.is_provider(r.type):
                users = [u.urn for u in old.resources if u.provider == r.urn]
                empty = bool(users) and set(users) <= retired and kids <= retired
            elif not r.custom:
                empty = bool(kids) and kids <= retired
            else:
                continue
            if empty:
                retired.add(r.urn)
                changed = True
    blockers = []
    for r in old.resources:
        if r.urn in retired or r.type == tokens.STACK_TYPE:
            continue
        refs = set(r.dependencies) | ({r.provider} if r.provider else set()) | \
            ({r.parent} if r.parent else set())
        raw_pd = r.raw.get("propertyDependencies") or {}
        refs |= {d for ds in raw_pd.values() for d in ds or ()}
        if r.raw.get("deletedWith"):
            refs.add(r.raw["deletedWith"])
        blockers += [(r.urn, d) for d in sorted(refs & retired)]
    order = [u for u in reversed(old.order) if u in retired]
    protected = frozenset(u for u in order if by_urn[u].protect)
    return tuple(order), protected, tuple(blockers)


# --- the report ------------------------------------------------------------------------------------

_OPTION_REASON = "a resource option: a state record, no API call"


def _shown_reason(type_token: str, path: str, old_value: Any, new_value: Any) -> str | None:
    """Why a line the migrated preview shows changes nothing live, or None when no rule says so
    (it then counts as a change)."""
    if type_token == tokens.HELM_RELEASE:
        return rules.artefact_reason(type_token, path, {})
    if tokens.package(type_token) == "gcp":
        return rules.gcp_suppression(type_token, path, old_value, new_value)
    segs = lenient_parse(path)
    if rules._is_quantity_path(segs):
        return rules.QUANTITY_REASON
    if (rule := rules.server_default(type_token, segs, new_value)) is not None:
        return f"the API server's default, already live ({rule})"
    return None


def _rows(moves: Sequence[Move], plan: StackPlan, migrated: StackPlan, policy: GuardPolicy
          ) -> list[Row]:
    diff = diff_plans(migrated, plan, policy, options=STATE_OPTIONS)
    changed = {c.urn: c for c in diff.changed}
    names = entry_names(plan)
    rows: list[Row] = []
    for m in moves:
        new = m.new
        changes = list(rules.compare(new.type, new.inputs, m.old.inputs, owned=True,
                                     ignore_changes=new.ignore_changes,
                                     replace_paths=policy.replace_paths(new.type)))
        rc = changed.get(new.urn)
        artefacts: list[rules.Artefact] = []
        if rc is not None:
            for prov, key, o, n in rc.provider_reasons:
                changes.append(rules.FieldChange(
                    f"provider.{key}", n, o, rules.REPLACE,
                    f"the provider {prov} targets another cluster: pulumi-kubernetes DiffConfig "
                    "replaces every resource it manages (clusterstack.plan.diff.PROVIDER_REPLACE_KEYS)"))
            live_paths = [c.path for c in changes]
            for p in rc.properties:
                if p.ignored or any(_overlap(p.path, c) for c in live_paths):
                    continue
                reason = _shown_reason(new.type, p.path, p.old, p.new)
                if reason is None:
                    changes.append(rules.FieldChange(p.path, p.new, p.old))
                else:
                    artefacts.append(rules.Artefact(p.path, reason))
            for o in rc.options:
                artefacts.append(rules.Artefact(f"[option] {o.option}", _OPTION_REASON))
        changes.sort(key=lambda c: c.path)
        rows.append(Row(names.get(new.urn, new.name), new.urn, new.type, _ref(new),
                        verdict_of(changes, artefacts), tuple(changes), tuple(artefacts)))
    moved = {m.new.urn for m in moves}
    for r in diff.added:
        if r.custom and not r.is_provider and r.type != tokens.STACK_TYPE and r.urn not in moved:
            rows.append(Row(names.get(r.urn, r.name), r.urn, r.type, _ref(r), CREATE,
                            reason="not in the old stack: `up` creates it"))
    return rows


def _overlap(a: str, b: str) -> bool:
    pa, pb = lenient_parse(a), lenient_parse(b)
    return contains(pa, pb) or contains(pb, pa)


def _ref(r: PlannedResource) -> str:
    key = identity(r)
    return ref_of(key) if key else r.name


# --- the whole migration ------------------------------------------------------------------------------

def migrate(old: Deployment, plan: StackPlan, *, policy: GuardPolicy | None = None,
            retire_also: Iterable[str] = ()) -> Migration:
    """Move ``old`` (the old stack's last deployment, :func:`clusterstack.pulumi.state.read_state`
    with raw resources) under ``plan``'s URNs (module docstring). ``policy``: the guard policy
    (replace properties); ``retire_also``: old URNs that stay unadopted but are retired with
    the rest (clears their blockers).

    Raises MigrationRefused (exit 2) for pending operations in the old state, an ambiguous or
    conflicting mapping, an unknown ``retire_also`` URN, or nothing to move."""
    policy = policy or GuardPolicy()
    if old.pending_operations:
        raise MigrationRefused(f"the old stack {old.project}/{old.stack} has "
                               f"{old.pending_operations} pending operation(s) of an "
                               "interrupted update", "let the old project's own tooling finish "
                               "or cancel that update and refresh its stack, then export it again")
    moves, stays, problems = match(old, plan)
    providers, more = _provider_map(moves, old, plan)
    problems += more
    also = tuple(dict.fromkeys(retire_also))
    by_old = old.by_urn()
    for u in also:
        if u not in by_old:
            problems.append(Problem(f"--retire-also {u}: not in the old stack's state",
                                    "give a URN of the export (`pulumi stack --show-urns`)"))
        elif u in {m.old.urn for m in moves}:
            problems.append(Problem(f"--retire-also {u}: it moves already", "drop the option"))
    if problems:
        raise MigrationRefused(problems=problems)
    if not moves:
        raise MigrationRefused(f"nothing of {old.project}/{old.stack} maps to stack {plan.stack}",
                               "check that the export is of the cluster's old stack and that "
                               "the config describes the live objects (names, IDs)")

    by_new = plan.by_urn()
    urn_map = {m.old.urn: m.new.urn for m in moves} | dict(providers)
    records: dict[str, dict[str, Any]] = {}
    stack_urn = next(r.urn for r in plan.resources if r.type == tokens.STACK_TYPE)
    records[stack_urn] = {"urn": stack_urn, "custom": False, "type": tokens.STACK_TYPE}

    def add_ancestors(urn: str | None) -> None:
        while urn and urn in by_new and urn not in records:
            c = by_new[urn]
            rec: dict[str, Any] = {"urn": c.urn, "custom": False, "type": c.type}
            if c.parent:
                rec["parent"] = c.parent
            records[urn] = rec
            urn = c.parent

    for po, pn in sorted(providers.items()):
        rec = _rewrite(by_old[po].raw, urn_map)
        rec.update(urn=pn, type=by_new[pn].type)
        rec.pop("parent", None)
        if by_new[pn].parent:
            rec["parent"] = by_new[pn].parent
            add_ancestors(by_new[pn].parent)
        records[pn] = rec
    for m in moves:
        po = m.old.provider
        assert po is not None, "every move has an old provider (_provider_map refuses the rest)"
        rec = _rewrite(m.old.raw, urn_map)
        rec.update(urn=m.new.urn, type=m.new.type,
                   provider=provider_reference(providers[po], str(by_old[po].id)))
        rec.pop("parent", None)
        if m.new.parent:
            rec["parent"] = m.new.parent
            add_ancestors(m.new.parent)
        records[m.new.urn] = rec
    manifest = dict(old.manifest)
    manifest["magic"] = manifest_magic(str(manifest.get("version") or ""))
    ordered = _order(records)
    broken = integrity_problems(manifest, ordered)
    if broken:   # the rules above guarantee this; a failure is a bug, never a file to import
        raise AssertionError("migrated deployment breaks Pulumi's integrity rules: " + "; ".join(broken))
    document = export_document(manifest, old.secrets_providers, ordered)

    retire, protected, blockers = _retirement(old, {m.old.urn for m in moves}, set(also))
    migrated = plan_from_state(document)
    rows = _rows(moves, plan, migrated, policy)
    not_adopted = tuple(sorted(s for s in stays if s[0] not in set(also)))
    report = AdoptionReport(
        stack=plan.stack, source={"kind": "stack", "from": f"{old.project}/{old.stack}"},
        rows=sort_rows(rows), absent_label=f"{old.project}/{old.stack}",
        not_adopted=tuple({"urn": u, "type": t, "reason": why} for u, t, why in not_adopted))
    return Migration(old=old, plan=plan, moves=tuple(moves), providers=providers,
                     document=document, retire=retire, protected=protected, blockers=blockers,
                     not_adopted=not_adopted, report=report, retire_also=also)


# --- the retirement script -------------------------------------------------------------------------

def retirement_script(m: Migration, *, export_digest: str) -> str:
    """The reviewed retirement step (:mod:`clusterstack.imports.statescript`): ``pulumi state
    unprotect`` (only what the old state protects) and ``pulumi state delete`` of exactly
    :attr:`Migration.retire`, dependents first. Raises MigrationRefused while
    :attr:`Migration.blockers` remain (the deletes would fail)."""
    if m.blockers:
        raise MigrationRefused(problems=[Problem(
            f"{stay} stays in {m.source_name} but depends on {moving}, which moves: "
            "`pulumi state delete` refuses to remove a resource something depends on",
            f"adopt it too (declare it in clusterstack), or retire it with the rest: "
            f"--retire-also '{stay}' (the object stays live, managed by neither stack)")
            for stay, moving in m.blockers])
    old = m.old
    moved = {x.old.urn for x in m.moves}
    header = [
        f"Retire from {m.source_name} what moved to {m.plan.project}/{m.plan.stack}.",
        f"Generated by `clusterstack import state` after it checked that {m.plan.project}/"
        f"{m.plan.stack} holds",
        f"every moved resource under the same ID. Old export sha256:{export_digest};",
        f"migrated deployment sha256:{m.digest}.",
        "",
        f"Run it in the old project's directory (the one whose Pulumi.yaml names {old.project}),",
        "logged in to its backend. Every command removes a record from the old stack's state",
        "(`pulumi state delete`, never `destroy`): the objects stay live, managed by clusterstack.",
        "Dependents come first; Pulumi refuses a delete that would leave a dangling reference.",
        f"{len(m.retire)} record(s): {sum(1 for u in m.retire if u in moved)} moved resource(s), "
        "the components and providers they leave empty"
        + (f", {len(m.retire_also)} named with --retire-also" if m.retire_also else "") + ".",
        "Do not run `pulumi up` on the old stack afterwards: its program still declares them.",
    ]
    return state_delete_script(header, old.stack, m.retire, m.protected,
                               done=f"retired {len(m.retire)} record(s) from {m.source_name}")


def moved_problems(m: Migration, state: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """What the new stack's state (``{urn: ResourceV3}``, after ``pulumi stack import``) lacks
    of the migration: every moved resource under its new URN with the old ID, every moved
    provider. Empty: the retirement may be generated."""
    out = []
    for mv in m.moves:
        got = state.get(mv.new.urn)
        if got is None:
            out.append(Problem(f"{mv.new.urn} is not in the stack's state",
                               "the stack import did not take: run `clusterstack import state` again"))
        elif got.get("id") != mv.old.id:
            out.append(Problem(f"{mv.new.urn} has ID {got.get('id')!r} in the stack's state, the "
                               f"old stack {mv.old.id!r}", "investigate the state before retiring"))
    for pn in sorted(set(m.providers.values())):
        if pn not in state:
            out.append(Problem(f"provider {pn} is not in the stack's state",
                               "the stack import did not take"))
    return out


# --- `import state`: the transaction ---------------------------------------------------------------

@dataclass(frozen=True)
class MoveResult:
    """What ``import state`` did: ``imported`` False when the stack already held the migrated
    state (a re-run); ``final`` the final preview's steps; ``retire_script`` where the
    retirement step was written."""

    stack: str
    digest: str
    imported: bool
    final: tuple[Any, ...]
    retire_script: Path


def check_file(m: Migration, path: Path) -> None:
    """The checkpoint file must be byte for byte what the migration writes now (the same old
    export, the same program): an edited file or a changed program is refused."""
    text = path.read_text(encoding="utf-8")
    if text != m.dumps():
        raise MigrationRefused(
            "the file is not the migrated state of this export and program (edited, or the "
            "config, the program or the export changed since `import migrate`)",
            "run `clusterstack import migrate` again and review what it prints", file=path)


def run_move(engine: Engine, m: Migration, path: Path, *, policy: GuardPolicy, export_digest: str,
             retire_path: Path, confirm_digest: str | None = None,
             prompt: Callable[[str], str] | None = None,
             report: Callable[[str], None] = lambda _line: None) -> MoveResult:
    """``import state`` after the offline checks (:func:`check_file`, the accept gate):

    1. the stack's state must be empty (``pulumi stack import`` replaces the whole deployment)
       — or already hold exactly the migrated resources (a re-run: nothing is imported);
    2. the typed confirmation ``migrate <12 hex of the digest>`` (or ``confirm_digest``);
    3. ``pulumi stack import`` of a private copy of exactly the checked bytes;
    4. the state read back must hold every moved resource under its old ID
       (:func:`moved_problems`), else ImportBlocked;
    5. a normal preview, guarded: no moved resource may be created, replaced or deleted
       (AdoptionMismatch, exit 3: do not run ``up``, do not retire the old stack);
    6. only then the retirement step is written to ``retire_path`` (mode 0600).

    Raises MigrationRefused (exit 2), ImportBlocked / GuardBlocked / AdoptionMismatch (exit 3)
    or the engine's typed errors."""
    import tempfile


    stack = m.plan.stack
    short = m.digest[:12]
    state = state_resources(engine.export(stack))
    wanted = {r["urn"] for r in m.document["deployment"]["resources"]
              if r.get("type") != tokens.STACK_TYPE}
    held = {u for u, r in state.items() if r.get("type") != tokens.STACK_TYPE}
    imported = False
    rerun = bool(held) and held == wanted and not moved_problems(m, state)
    if held and not rerun:
        raise MigrationRefused(
            f"stack {stack} already holds {len(held)} resource(s): `pulumi stack import` "
            "replaces the whole deployment and would drop them from the state",
            "move the old stack into a new, empty stack (`clusterstack stack init`), or adopt "
            "the rest with `import generate`/`import apply` instead")
    if rerun:
        report(f"stack {stack} already holds the migrated state (digest {short}…): nothing to import")
    else:
        if confirm_digest is not None:
            if confirm_digest.strip().lower() != short:
                raise MigrationRefused(f"--confirm-digest {confirm_digest} does not match the "
                                       f"migrated state (digest {short}…)",
                                       "the file is not the one you reviewed: run `import "
                                       "migrate` again and review what it prints")
        elif prompt is None:
            raise MigrationRefused("no terminal to confirm the move on",
                                   f"pass --confirm-digest {short} after reviewing the report")
        elif prompt(f"migrate {short}").strip() != f"migrate {short}":
            raise MigrationRefused("confirmation did not match; nothing was imported",
                                   f"type exactly: migrate {short}")
        with tempfile.TemporaryDirectory(prefix="clusterstack-migrate-") as tmp:
            private = Path(tmp) / "state.json"
            private.touch(mode=FILE_MODE)
            private.write_text(m.dumps(), encoding="utf-8")
            engine.import_state(stack, str(private))
        imported = True
        report(f"pulumi stack import: {len(wanted)} record(s) into {stack} "
               f"({len(m.moves)} resource(s) moved from {m.source_name})")
        missing = moved_problems(m, state_resources(engine.export(stack)))
        if missing:
            raise ImportBlocked(problems=missing)
    final, verdict = guarded_preview(engine, stack, policy)
    moved = {mv.new.urn for mv in m.moves}
    bad = [s for s in final.steps if s.urn in moved and (s.op in CREATE_OPS or s.op in REPLACE_OR_DELETE)]
    if bad:
        raise AdoptionMismatch(bad, hint=(
            f"the state moved, but the old stack {m.source_name} still holds every record "
            "(nothing was retired): do NOT run `up`; make the reviewed config describe the live "
            "object until `clusterstack preview` shows no create, replace or delete of a moved "
            "resource, then run `import state` again — it writes the retirement step only then"))
    if not verdict.ok:
        raise GuardBlocked(verdict)
    write_atomic(retire_path, retirement_script(m, export_digest=export_digest), mode=FILE_MODE)
    return MoveResult(stack=stack, digest=m.digest, imported=imported, final=tuple(final.steps),
                      retire_script=retire_path)


__all__ = ["Migration", "MigrationRefused", "Move", "MoveResult", "check_file", "match",
           "migrate", "moved_problems", "old_identity", "retirement_script", "run_move"]
