"""Which stacks and which services a change affects, from git — the CI matrix.

A *stack target* is one Pulumi stack of the workspace: a cluster stack (``cw-demo-h100``, the
cluster project ``infra/``) or a stack of a ``[projects]`` project, written
``<project>/<stack>`` (``buckets/lab``). :func:`all_stacks` lists them in the one project order
of :meth:`clusterstack.workspace.Workspace.all_projects`.

What reads what (the rules of :func:`affected_stacks`; each affected stack carries the files
and the rule that put it there):

- ``clusters/<c>.yaml`` → stack ``<c>``, and every stack whose config references ``<c>`` (a GCP
  stack's ``provisioning.gcp.gclb`` lists controller and log-relay clusters whose own files
  supply the rest, see :mod:`clusterstack.validation.references`);
- ``infra/Pulumi.<c>.yaml`` → stack ``<c>``; anything else under ``infra/`` (the program,
  ``Pulumi.yaml``) → every cluster stack;
- the IAM file (``[iam] file``) → the ``[iam] stack`` (the one GCP stack that applies it);
- ``<project dir>/Pulumi.<s>.yaml`` → ``<project>/<s>``; anything else in a ``[projects]``
  directory (its reviewed file, its program) → every stack of that project;
- the package (``src/``), ``pyproject.toml``, ``uv.lock`` (the locked providers) and
  ``clusterstack.toml`` (backend, defaults, guard) → every stack of every project.

A symlink among those inputs (a ``clusters/<c>.yaml`` that links to a shared file, a link
anywhere under ``infra/`` or a ``[projects]`` directory, the IAM file) is read by the plan
through its target, so a changed path also counts as the link's path when it is the link's
target (resolved inside the repository) or under it — :func:`symlinked_inputs`. The reason
then names both: ``shared/gb200.yaml (via clusters/cw-demo-gb200.yaml)``.

Services (:func:`affected_services`, the registry of :mod:`clusterstack.deploy.registry`):
anything under the service's ``project_dir``; its own entry in ``services.yaml`` (compared with
the entry at the base commit, so an edit of one service does not roll out the others); the
reviewed cluster a ``kubernetes`` service names (its kube context comes from that file); and the
package / lock / ``clusterstack.toml`` → every service (their programs import the package).

"Changed since REF" is the change a pull request makes: the files that differ between the merge
base of REF and HEAD and the working tree, plus untracked files (``git diff --merge-base``
semantics, so a branch behind ``main`` is not blamed for ``main``'s newer commits) —
:meth:`clusterstack.adapters.git.Git.changed_files`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from clusterstack.adapters.git import Git
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.workspace import CLUSTER_PROJECT, Project, Workspace
from clusterstack.workspace.projects import stack_names
from clusterstack.config.document import Document
from clusterstack.config.services import REGISTRY_FILE
from clusterstack.deploy.registry import load_registry
from clusterstack.derive.gclb import GCLB_PATH, referenced_clusters
from clusterstack.iam.settings import IamSettings
from clusterstack.validation import load_cluster

PACKAGE_FILES = ("pyproject.toml", "uv.lock")
PACKAGE_DIRS = ("src",)
WORKSPACE_FILE = "clusterstack.toml"
_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>.+)\.yaml$")


@dataclass(frozen=True, order=True)
class StackTarget:
    """One stack: ``project`` is the project handle (:data:`CLUSTER_PROJECT` for the cluster
    project), ``stack`` the Pulumi stack name."""

    project: str
    stack: str

    @property
    def is_cluster(self) -> bool:
        return self.project == CLUSTER_PROJECT

    @property
    def id(self) -> str:
        """``<cluster>`` for a cluster stack, ``<project>/<stack>`` otherwise (what users type)."""
        return self.stack if self.is_cluster else f"{self.project}/{self.stack}"

    @property
    def slug(self) -> str:
        """A file and artifact name: ``<cluster>`` or ``<project>.<stack>`` (a project handle
        has no dot, and GitHub artifact names may not contain ``/``)."""
        return self.stack if self.is_cluster else f"{self.project}.{self.stack}"


def project_stacks(project: Project) -> list[str]:
    """The stacks of a non-cluster project: its ``Pulumi.<stack>.yaml`` files, sorted, by the
    workspace's one rule (:func:`clusterstack.workspace.projects.stack_names`: a file whose
    name is no stack name, or a symlink, is a ConfigError — exit 2 — before it can reach a CI
    matrix or a PR comment)."""
    if not project.directory.is_dir():
        return []
    return stack_names(project.directory)


def all_stacks(ws: Workspace) -> list[StackTarget]:
    """Every stack of the workspace: the clusters (sorted), then each ``[projects]`` project's
    stacks in file order."""
    out = [StackTarget(CLUSTER_PROJECT, c) for c in ws.cluster_names()]
    for p in ws.projects:
        out += [StackTarget(p.key, s) for s in project_stacks(p)]
    return out


def parse_target(ws: Workspace, text: str) -> StackTarget:
    """``cw-demo-h100`` or ``buckets/lab`` → the :class:`StackTarget`. Raises ConfigError (exit
    2) naming the known stacks when it is not one."""
    known = all_stacks(ws)
    for t in known:
        if text in (t.id, t.slug):
            return t
    raise ConfigError(f"unknown stack {text!r}", "known stacks: " + ", ".join(t.id for t in known),
                      field="stack")


# --- rules ------------------------------------------------------------------------------------------

def _rel(ws: Workspace, path: Path) -> str:
    try:
        return path.resolve().relative_to(ws.root).as_posix()
    except ValueError:  # outside the repository: nothing in a diff can match it
        return "\0outside"


def _rel_link(ws: Workspace, path: Path) -> str:
    """Like :func:`_rel` but the last part is not followed: the path of a link itself."""
    parent = _rel(ws, path.parent)
    return "\0outside" if parent == "\0outside" else PurePosixPath(parent, path.name).as_posix()


def symlinked_inputs(ws: Workspace, inputs: Iterable[Path]) -> dict[str, str]:
    """``{link path: target path}`` (POSIX, relative to the root) for every symlink among
    ``inputs`` — each a file (or link) taken as it is, or a directory walked without following
    links. A link whose target resolves outside the repository is left out (no diff names it).
    Sorted by link path."""
    out: dict[str, str] = {}

    def visit(p: Path) -> None:
        if p.is_symlink():
            link, target = _rel_link(ws, p), _rel(ws, p)
            if "\0outside" not in (link, target):
                out[link] = target

    for top in inputs:
        if top.is_symlink() or not top.is_dir():
            visit(top)
            continue
        for dirpath, dirnames, filenames in os.walk(top.resolve()):
            dirnames.sort()
            for n in dirnames + sorted(filenames):
                visit(Path(dirpath) / n)
    return dict(sorted(out.items()))


def _through_links(files: Iterable[str], links: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``files`` plus, for each file at or under a link's target, the same path seen through
    the link; and ``{path seen through a link: what to show}``."""
    files = sorted(set(files))
    shown: dict[str, str] = {}
    for f in files:
        for link, target in links.items():
            if _under(f, target):
                alias = link + f[len(target):]
                if alias not in shown and alias not in files:
                    shown[alias] = f"{f} (via {link})"
    return sorted(set(files) | set(shown)), shown


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def is_package_file(path: str) -> bool:
    """The package, its lock or its build file: read by every program."""
    return path in PACKAGE_FILES or any(_under(path, d) for d in PACKAGE_DIRS)


def references(ws: Workspace) -> dict[str, set[str]]:
    """``{referenced cluster: {clusters whose config lists it}}`` over the working tree.

    Uses the typed config (:func:`clusterstack.derive.gclb.referenced_clusters`); a config that
    does not validate is read as plain YAML at the same paths, so an invalid file still
    propagates to the stacks it names (their preview then shows the error)."""
    out: dict[str, set[str]] = {}
    for name in ws.cluster_names():
        try:
            names = [n for n, _ in referenced_clusters(load_cluster(ws, name, references=False).config)]
        except ConfigError:
            names = _raw_references(ws.cluster_file(name), GCLB_PATH)
        for ref in names:
            if ref != name:
                out.setdefault(ref, set()).add(name)
    return out


def _raw_references(path: Path, gclb_path: tuple) -> list[str]:
    try:
        node: Any = Document.read(path).data
    except ConfigError:
        return []  # the cluster's own load reports it
    for key in gclb_path:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return []
    return [str(e["cluster"]) for k in ("controllers", "log_relays") for e in node.get(k) or []
            if isinstance(e, dict) and isinstance(e.get("cluster"), str)]


RULE_EVERY = "the package, its lock or clusterstack.toml (read by every program)"
_SHOWN = 3


def _reason(rule: str, files: list[str]) -> str:
    """``rule: a, b, c (+N more)``."""
    more = len(files) - _SHOWN
    return f"{rule}: {', '.join(files[:_SHOWN])}" + (f" (+{more} more)" if more > 0 else "")


@dataclass(frozen=True)
class Affected:
    """A stack (or service) a change affects and why: ``reasons`` are ``<rule>: <paths>`` lines."""

    name: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class StackChanges:
    """Result of :func:`affected_stacks`: ``stacks`` (targets in :func:`all_stacks` order, with
    reasons) and ``gone`` — cluster configs or stack files deleted by the change, whose stacks
    are not previewed (a stack is destroyed deliberately, never by CI)."""

    stacks: tuple[tuple[StackTarget, Affected], ...]
    gone: tuple[str, ...] = ()

    def matrix(self) -> dict[str, Any]:
        """The GitHub Actions matrix: ``{"include": [{"stack", "slug", "project"}, …]}``."""
        return {"include": [{"stack": t.id, "slug": t.slug, "project": t.project}
                            for t, _ in self.stacks]}


def affected_stacks(ws: Workspace, files: Iterable[str]) -> StackChanges:
    """Apply the module rules to changed ``files`` (POSIX paths relative to the root), each
    also seen through every input symlink it is the target of (module docstring)."""
    iam = IamSettings.from_workspace(ws)
    iam_link = ws.root / ws.settings.iam.file  # iam.file is resolved; this is the path as written
    links = symlinked_inputs(ws, [*ws.clusters_dir.glob("*.yaml"), ws.project_dir, iam_link,
                                  *(p.directory for p in ws.projects)])
    files, shown = _through_links(files, links)
    stacks = all_stacks(ws)
    by_id = {t.id: t for t in stacks}
    reasons: dict[StackTarget, dict[str, list[str]]] = {}
    gone: list[str] = []

    def add(t: StackTarget | None, rule: str, f: str) -> None:
        if t is not None:
            f = shown.get(f, f)
            files_ = reasons.setdefault(t, {}).setdefault(rule, [])
            if f not in files_:
                files_.append(f)

    clusters_rel, infra_rel = _rel(ws, ws.clusters_dir), _rel(ws, ws.project_dir)
    iam_rels = {_rel(ws, iam.file), _rel_link(ws, iam_link)}
    projects = [(p, _rel(ws, p.directory)) for p in ws.projects]
    refs: dict[str, set[str]] | None = None

    for f in files:
        pf = PurePosixPath(f)
        if f == WORKSPACE_FILE or is_package_file(f):
            for t in stacks:
                add(t, RULE_EVERY, f)
            continue
        if str(pf.parent) == clusters_rel and pf.suffix == ".yaml":
            name = pf.stem
            if name in by_id and by_id[name].is_cluster:
                add(by_id[name], "its cluster config", f)
            else:
                gone.append(f"{f}: deleted — stack {name} is not previewed (destroy it deliberately)")
            if refs is None:
                refs = references(ws)
            for other in sorted(refs.get(name, ())):
                add(by_id.get(other), "a cluster its gclb lists (that file supplies the rest)", f)
        if _under(f, infra_rel):
            m = _STACK_FILE.match(pf.name) if str(pf.parent) == infra_rel else None
            if m:
                t = by_id.get(m.group("stack"))
                if t is not None and t.is_cluster:
                    add(t, "its stack pointer file", f)
                else:
                    gone.append(f"{f}: no such cluster stack (deleted)")
            else:
                for t in stacks:
                    if t.is_cluster:
                        add(t, "the cluster project's program", f)
        if f in iam_rels and iam.stack:
            if iam.stack in by_id:
                add(by_id[iam.stack], "the IAM file ([iam] stack)", f)
        for p, prel in projects:
            if not _under(f, prel):
                continue
            m = _STACK_FILE.match(pf.name) if str(pf.parent) == prel else None
            if m:
                t = by_id.get(f"{p.key}/{m.group('stack')}")
                if t is not None:
                    add(t, "its stack config", f)
                else:
                    gone.append(f"{f}: stack {p.key}/{m.group('stack')} deleted")
            else:
                for t in stacks:
                    if t.project == p.key:
                        add(t, f"the {p.key} project's reviewed file or program", f)
    ordered = tuple((t, Affected(t.id, tuple(_reason(rule, fs) for rule, fs in reasons[t].items())))
                    for t in stacks if t in reasons)
    return StackChanges(stacks=ordered, gone=tuple(dict.fromkeys(gone)))


# --- services ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServiceChange:
    """A registered service a change affects: name, production stack, kind and reasons."""

    service: str
    stack: str
    kind: str
    reasons: tuple[str, ...]


def affected_services(ws: Workspace, files: Iterable[str], base: str | None) -> list[ServiceChange]:
    """Services of ``services.yaml`` (loaded with :func:`clusterstack.deploy.registry.load_registry`)
    that the changed ``files`` affect, sorted by name (rules: module docstring). ``base`` is the
    merge-base commit, used to compare each ``services.yaml`` entry with its old version; with
    None every entry counts as changed when the file changed. No ``services.yaml`` → []."""

    if not (ws.root / REGISTRY_FILE).is_file():
        return []
    registry = load_registry(ws)
    links = symlinked_inputs(ws, [*ws.clusters_dir.glob("*.yaml"),
                                  *(e.project_dir for e in registry.services.values())])
    files, shown = _through_links(files, links)
    clusters_rel = _rel(ws, ws.clusters_dir)
    changed_entries: set[str] = set()
    if REGISTRY_FILE in files:
        new = Document.read(ws.root / REGISTRY_FILE).data or {}
        old_text = Git(ws.root).show(base, f"./{REGISTRY_FILE}") if base else None
        old = (Document.parse(old_text, ws.root / REGISTRY_FILE).data or {}) if old_text else {}
        new_s, old_s = (new.get("services") or {}), (old.get("services") or {}) if isinstance(old, dict) else {}
        changed_entries = {n for n in new_s if base is None or old_text is None or old_s.get(n) != new_s.get(n)}
    out = []
    for name, entry in registry.services.items():
        why: dict[str, list[str]] = {}
        prel = _rel(ws, entry.project_dir)
        cluster = entry.spec.kubernetes.cluster if entry.spec.kubernetes is not None else None
        for f in files:
            if f == WORKSPACE_FILE or is_package_file(f):
                why.setdefault(RULE_EVERY, []).append(shown.get(f, f))
            elif _under(f, prel):
                why.setdefault("its Pulumi project", []).append(shown.get(f, f))
            elif cluster and f == f"{clusters_rel}/{cluster}.yaml":
                why.setdefault("the cluster it runs on (its kube context)", []).append(shown.get(f, f))
        if name in changed_entries:
            why.setdefault("its services.yaml entry", []).append(REGISTRY_FILE)
        if why:
            out.append(ServiceChange(service=name, stack=entry.stack, kind=entry.kind,
                                     reasons=tuple(_reason(r, fs) for r, fs in why.items())))
    return out


def services_matrix(changes: list[ServiceChange]) -> dict[str, Any]:
    """``{"include": [{"service", "stack", "kind"}, …]}`` for a GitHub Actions matrix."""
    return {"include": [{"service": c.service, "stack": c.stack, "kind": c.kind} for c in changes]}


def compact_json(doc: Any) -> str:
    """One line, sorted keys: safe for ``$GITHUB_OUTPUT`` (``name=value`` lines)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))
