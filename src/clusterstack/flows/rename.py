"""``clusterstack stack rename OLD NEW``: rename a cluster — its stack in the state backend, its
stack file and its reviewed cluster file — without any resource being deleted or re-created.

A cluster's name is its stack's name, and a stack's name is part of every URN of it. Renaming
the files alone would make a new, empty stack (``up NEW`` would create every resource again,
while OLD's state still holds the live ones); renaming the stack in the backend is Pulumi's own
``pulumi stack rename``: every URN of the state rewritten, nothing in the cloud touched
(pulumi/pulumi pkg/resource/edit/operations.go ``RenameStack``; the project's
``Pulumi.<old>.yaml`` is moved along, pkg/cmd/pulumi/stack/stack_rename.go). A resource whose
*name* the program derives from the cluster's name is still replaced — Pulumi says so in the
command's help — and the review shows which: ``clusterstack diff`` pairs the two stacks
(:func:`clusterstack.plan.diff.pair_stack_renames`) and compares them as the renamed state,
so the NodePools read as unchanged and only such names as changed.

Order, every step done once and the command safe to run again (docs/making-a-change.md,
"Renaming a cluster"):

1. checks, before anything changes: both names are stack names and differ; OLD is a cluster
   (or its files were renamed already); NEW is taken by no cluster file, stack file or
   backend stack; no other reviewed file names OLD — a GCP stack's load balancer or address
   listing it, ``services.yaml``'s ``kubernetes.cluster``, a service stack's config, ``[iam]
   stack`` — each such reference is refused at its line (change them in the same commit);
2. the state (unless ``files_only``): ``pulumi stack rename`` when the backend has OLD, nothing
   when it has NEW already (done before) or neither (never created);
3. the files: ``clusters/OLD.yaml`` → ``clusters/NEW.yaml`` with its ``name:`` line changed
   (the rest byte for byte), ``Pulumi.OLD.yaml`` → ``Pulumi.NEW.yaml`` with its pointer
   changed (Pulumi's own keys kept), each written atomically before the old one is removed.

``files_only`` prepares the change for review (a pull request) while the state keeps the old
name until the change is merged; the same command without it then moves the state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from clusterstack.clients import Clients
from clusterstack.config.types import PATTERN_RULES, RFC1123_LABEL, RFC1123_LABEL_RE
from clusterstack.errors import ConfigError, Problem, display_path
from clusterstack.workspace import Workspace, check_name, write_pointer
from clusterstack.config.document import Document
from clusterstack.config.services import REGISTRY_FILE
from clusterstack.derive.gclb import referenced_clusters
from clusterstack.fsutil import locked, write_atomic
from clusterstack.validation import load_cluster

Report = Callable[[str], None]


@dataclass(frozen=True)
class RenameResult:
    """What :func:`rename_stack` did. ``state``: ``renamed`` (the backend's stack was renamed
    now), ``done`` (it already had NEW), ``absent`` (it has neither: never created), ``skipped``
    (``files_only``); ``moved``: ``(from, to)`` of each file renamed now (empty when the files
    had been renamed before)."""

    old: str
    new: str
    state: str
    moved: tuple[tuple[Path, Path], ...]


def references(ws: Workspace, old: str) -> list[Problem]:
    """A Problem at each place outside OLD's own files that names cluster ``old``: another
    cluster's ``referenced_clusters`` (a GCP load balancer's controllers and log relays, an
    address's ``attached_to``), ``services.yaml`` ``services.<s>.kubernetes.cluster``, a value
    of a registered service's stack config equal to ``old``, and ``[iam] stack``."""
    hint = f"change it to the new name in the same change; the rename moves only {old}'s own files"
    out: list[Problem] = []
    for name in ws.cluster_names():
        if name == old:
            continue
        try:
            loaded = load_cluster(ws, name, references=False)
        except ConfigError:
            continue   # an invalid file is validate's to report; it cannot be said to name OLD
        for ref, via in referenced_clusters(loaded.config):
            if ref == old:
                out.append(Problem(f"names cluster {old!r}", hint, file=loaded.path,
                                   line=loaded.line_of(via), field=".".join(map(str, via))))
    registry = ws.root / REGISTRY_FILE
    if registry.is_file():
        doc = Document.read(registry, format="yaml")
        services = (doc.data or {}).get("services") if isinstance(doc.data, dict) else None
        for svc, entry in (services or {}).items() if isinstance(services, dict) else ():
            if not isinstance(entry, dict):
                continue
            target = entry.get("kubernetes")
            if isinstance(target, dict) and target.get("cluster") == old:
                at = ("services", svc, "kubernetes", "cluster")
                out.append(Problem(f"names cluster {old!r}", hint, file=registry,
                                   line=doc.line_of(at), field=".".join(at)))
            stack, project = entry.get("stack"), entry.get("project_dir")
            if isinstance(stack, str) and isinstance(project, str):
                out += _config_values(ws.root / project / f"Pulumi.{stack}.yaml", old, hint)
    if ws.iam.stack == old:
        out.append(Problem(f"names stack {old!r}", hint, file=ws.file, line=ws.line_of("iam", "stack"),
                           field="iam.stack"))
    return out


def _config_values(path: Path, old: str, hint: str) -> list[Problem]:
    if not path.is_file():
        return []
    try:
        doc = Document.read(path, format="yaml")
    except ConfigError:
        return []
    config = doc.data.get("config") if isinstance(doc.data, dict) else None
    return [Problem(f"names cluster {old!r}", hint, file=path, line=doc.line_of(("config", key)),
                    field=f"config.{key}")
            for key, value in (config or {}).items() if value == old]


_NAME_LINE = re.compile(r"^name:[ \t]*(?P<q>['\"]?)(?P<v>[^'\"#\s]+)(?P=q)", re.M)


def renamed_cluster_text(text: str, old: str, new: str, file: Path) -> str:
    """The cluster file's text with its top-level ``name: OLD`` made ``name: NEW`` — that line
    only, so every comment and layout stays. Raises ConfigError when the file has no such
    line (its ``name:`` is something else, or missing)."""
    m = _NAME_LINE.search(text)
    if m is None or m["v"] != old:
        raise ConfigError(f"no top-level `name: {old}` line to rename", "set `name:` to the "
                          "file's name first (clusterstack validate)", file=file, field="name")
    return f"{text[:m.start('v')]}{new}{text[m.end('v'):]}"


def rename_stack(ws: Workspace, old: str, new: str, *, clients: Clients, files_only: bool = False,
                 report: Report = lambda _line: None) -> RenameResult:
    """Rename cluster ``old`` to ``new`` (module docstring: checks, then state, then files).
    Raises ConfigError (exit 2, nothing changed) for a bad or taken name, an unknown cluster, or
    references to ``old`` elsewhere; the engine's errors (no Pulumi CLI, an unreachable backend,
    a locked stack) before any file is touched."""
    check_name(old)
    check_name(new)
    if not RFC1123_LABEL_RE.match(new) or len(new) > 63:   # the cluster file's `name:` rule
        raise ConfigError(f"cluster name {new!r} is not {PATTERN_RULES[RFC1123_LABEL]}",
                          "give a new name such as cw-h200 (the cluster file's `name:` must be "
                          "a DNS label: it names Kubernetes objects)", field="name")
    if old == new:
        raise ConfigError(f"the cluster is already named {new!r}", "give a new name")
    old_cfg, new_cfg = ws.cluster_file(old), ws.cluster_file(new)
    old_ptr, new_ptr = ws.project_dir / f"Pulumi.{old}.yaml", ws.project_dir / f"Pulumi.{new}.yaml"
    files_done = not old_cfg.exists() and new_cfg.exists()
    if not old_cfg.exists() and not files_done:
        raise ConfigError(f"unknown cluster {old!r}: no {display_path(old_cfg, ws.root)}",
                          f"known clusters: {', '.join(ws.cluster_names()) or 'none'}", file=old_cfg)
    if not files_done:
        for taken in (new_cfg, new_ptr):
            if taken.exists():
                raise ConfigError(f"{new!r} is taken: {display_path(taken, ws.root)} exists",
                                  "choose another name, or remove that file in its own change",
                                  file=taken)
        problems = references(ws, old)
        if problems:
            raise ConfigError(problems=problems)

    state = "skipped"
    if not files_only:
        engine = clients.engine(ws)
        names = {s.name for s in engine.list_stacks()}
        if old in names and new in names:
            raise ConfigError(f"the state backend has both stack {old!r} and stack {new!r}",
                              f"one of them is not this cluster's: check with `clusterstack stack ls` "
                              f"({ws.backend_url}) before renaming", file=ws.file)
        if old in names:
            engine.rename_stack(old, new)   # `pulumi stack rename`: moves Pulumi.<old>.yaml too
            state = "renamed"
            report(f"stack {old} renamed to {new} in {ws.backend_url} (every URN rewritten; no "
                   "resource touched)")
        elif new in names:
            state = "done"
            report(f"stack {new} is already in {ws.backend_url}: the state was renamed before")
        else:
            state = "absent"
            report(f"no stack {old} in {ws.backend_url} (never created): no state to rename")
    else:
        report(f"--files-only: the state keeps the name {old}; after the change is merged, run "
               f"`clusterstack stack rename {old} {new}` to rename it")

    moved: list[tuple[Path, Path]] = []
    if not files_done:
        with locked(old_cfg):
            text = renamed_cluster_text(old_cfg.read_text(encoding="utf-8"), old, new, old_cfg)
            write_atomic(new_cfg, text, exclusive=True)
            old_cfg.unlink()
        moved.append((old_cfg, new_cfg))
        report(f"renamed {display_path(old_cfg, ws.root)} → {display_path(new_cfg, ws.root)} "
               f"(name: {new})")
    if old_ptr.exists() and not new_ptr.exists():
        write_atomic(new_ptr, old_ptr.read_bytes(), exclusive=True)
        old_ptr.unlink()
        moved.append((old_ptr, new_ptr))
    if new_ptr.exists() or not files_done:
        if write_pointer(new_ptr, new) or moved:
            report(f"{display_path(new_ptr, ws.root)} names cluster {new}")
    return RenameResult(old=old, new=new, state=state, moved=tuple(moved))


__all__ = ["RenameResult", "references", "rename_stack", "renamed_cluster_text"]
