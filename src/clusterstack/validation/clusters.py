"""The one entry to a fully checked cluster: :func:`load_cluster`.

First pass (:func:`clusterstack.config.cluster_file.load_cluster_file`): the file, ``[defaults]``,
the model and the rules across its sections. Second pass, here: every derivation runs once
(:func:`derive_all`, so a bad scale group is reported at load time with its line; the specs it
derives are kept on the :class:`CheckedCluster` the program declares from), then the configs
this one references (:mod:`clusterstack.validation.references`). Within
:func:`one_load_per_file` (a command's reads of one working tree) each file is read, checked
and derived once.
"""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from dataclasses import dataclass, fields
from pathlib import Path
from collections.abc import Collection, Iterator, Mapping

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.cluster_file import LoadedCluster, load_cluster_file
from clusterstack import reads
from clusterstack.derive import DEFAULT_CONVENTIONS, HOSTNAME_LABEL, says_infiniband, topology_levels
from clusterstack.derive.cluster import ClusterSpecs, derive_cluster
from clusterstack.derive.gclb import referenced_clusters
from clusterstack.errors import ClusterstackError, ConfigError, FieldError, Problem
from clusterstack.validation.references import reference_problems
from clusterstack.workspace import Workspace
from clusterstack.workspace.model import Conventions
from clusterstack.config.instances import CATALOGUE_READ, instance_type
from clusterstack.validation.identities import identity_problems


def derive_all(cfg: ClusterConfig, conventions: Conventions = DEFAULT_CONVENTIONS) -> ClusterSpecs | None:
    """Run every derivation once (validation at load time) with the workspace's
    ``[conventions]`` (what the program derives with): :func:`clusterstack.derive.cluster.derive_cluster`.
    Returns its specs (None for a GCP stack). Raises FieldError."""
    return derive_cluster(cfg, conventions)


@dataclass(frozen=True)
class CheckedCluster(LoadedCluster):
    """A cluster :func:`load_cluster` loaded and checked, with ``specs``: what it derived
    (:class:`clusterstack.derive.cluster.ClusterSpecs`; None for a GCP stack) — what the
    program declares."""

    specs: ClusterSpecs | None = None


#: The clusters loaded in the current :func:`one_load_per_file` block: the cluster file's path
#: and the text of the workspace file (its ``[defaults]`` and ``[conventions]``) → the checked
#: cluster and the reads its load noted (:mod:`clusterstack.reads`). None outside a block.
_LOADED: ContextVar[dict[tuple[str, str], tuple[CheckedCluster, tuple[tuple[str, str], ...]]] | None] = \
    ContextVar("clusterstack_loaded_clusters", default=None)


@contextlib.contextmanager
def one_load_per_file() -> Iterator[None]:
    """Within the block, :func:`load_cluster` reads, checks and derives each cluster file once:
    a later load of the same file under the same ``clusterstack.toml`` returns the first
    load's :class:`CheckedCluster` and notes again the reads that load noted (so the plan
    cache, :mod:`clusterstack.plan.cache`, sees the same inputs). Opened by each command for
    the length of its reads of one working tree (a plan: its checks and its programs;
    ``validate``'s checks; ``stacks``; ``inventory``; ``preview``/``up``'s checks; ``diff``'s
    working-tree side, closed before REF is planned in this process). A load that raises is not
    kept. Inside another block, the outer one's loads are shared."""
    if _LOADED.get() is not None:
        yield
        return
    token = _LOADED.set({})
    try:
        yield
    finally:
        _LOADED.reset(token)


def _checked(workspace: Workspace, name: str, path: Path) -> CheckedCluster:
    """The first pass and every derivation of ``path`` (see :func:`load_cluster`), once per
    file within :func:`one_load_per_file`. Raises ConfigError."""
    kept = _LOADED.get()
    key = (str(path), workspace.source.text if workspace.source is not None else "")
    if kept is not None and key in kept:
        checked, noted = kept[key]
        for kind, at in noted:
            reads.note(kind, at)
        return checked
    notes: list[tuple[str, str]] = []
    with reads.observing(lambda kind, at: notes.append((kind, at))):
        loaded = load_cluster_file(path, name, defaults=workspace.defaults.model_dump(exclude_none=True),
                                   defaults_source=workspace.source)
    try:
        specs = derive_all(loaded.config, workspace.conventions)
    except FieldError as fe:
        raise ConfigError(problems=loaded.problems([fe])) from None
    checked = CheckedCluster(**{f.name: getattr(loaded, f.name) for f in fields(loaded)}, specs=specs)
    if kept is not None:
        kept[key] = (checked, tuple(notes))
    return checked


def load_cluster(workspace: Workspace, name: str, *, references: bool = True) -> CheckedCluster:
    """Load, validate and derive ``clusters/<name>.yaml``: what every command and program uses.
    The derived specs are the result's ``specs`` (:class:`CheckedCluster`).

    With ``references`` (the default), configs this one references — the clusters behind a
    GCP stack's ``provisioning.gcp.gclb`` — are loaded too (without following their own
    references) and checked against it (:mod:`clusterstack.validation.references`).

    Raises ConfigError listing every problem as ``file:line: field: message — hint``.
    """
    path = workspace.cluster_file(name)  # a name with path parts is refused here
    workspace.confined(path, what="the cluster file")  # a link out of the repo, or dangling
    if path.is_dir():
        raise ConfigError(problems=[directory_config_problem(workspace, path)])
    if not path.exists():   # a pipe or a device by that name is refused by the loader, located
        known = ", ".join(workspace.cluster_names()) or "none"
        raise ConfigError(f"unknown cluster {name!r}", f"known clusters: {known}", file=path)
    loaded = _checked(workspace, name, path)
    if references:
        ref_problems = reference_problems(
            loaded, _KnownClusters(workspace),
            lambda other: load_cluster(workspace, other, references=False), workspace.cluster_file,
            root=workspace.root, conventions=workspace.conventions)
        if ref_problems:
            raise ConfigError(problems=ref_problems)
    return loaded


class _KnownClusters:
    """The workspace's cluster names as :func:`reference_problems` asks them: ``name in
    known`` is that one file's existence (``os.path.lexists``: what the ``clusters/*.yaml``
    glob of :meth:`Workspace.cluster_names` matches), the listing only for an error's hint.
    Why: the plan cache (plan/cache.py) keys a stack on every directory its plan listed, so
    listing ``clusters/`` made adding any cluster a miss of every cached stack; a referenced
    cluster that exists is opened next (keyed by its content), one that does not is an error
    (nothing cached)."""

    def __init__(self, workspace: Workspace) -> None:
        self._ws = workspace

    def __contains__(self, name: object) -> bool:
        try:
            return isinstance(name, str) and os.path.lexists(self._ws.cluster_file(name))
        except ClusterstackError:  # not a stack name: no such file
            return False

    def __iter__(self) -> Iterator[str]:  # the names, for a hint
        return iter(self._ws.cluster_names())

    def __len__(self) -> int:
        return len(self._ws.cluster_names())


def load_references(workspace: Workspace, cfg: ClusterConfig) -> dict[str, ClusterConfig]:
    """The validated configs of every cluster ``cfg`` references, by name.

    Raises ConfigError when one is unknown or invalid (normally caught earlier: loading
    ``cfg`` with :func:`load_cluster` already checks them).
    """
    out: dict[str, ClusterConfig] = {}
    for name, _via in referenced_clusters(cfg):
        if name == cfg.name:
            out[name] = cfg
        elif name not in out:
            out[name] = load_cluster(workspace, name, references=False).config
    return out


def load_all(workspace: Workspace) -> list[LoadedCluster]:
    """Load every cluster config; raises one ConfigError carrying every file's problems."""
    loaded, problems = [], []
    for name in workspace.cluster_names():
        try:
            loaded.append(load_cluster(workspace, name))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems=problems)
    return loaded


def referrers(ws: Workspace, name: str) -> list[str]:
    """The clusters whose configs reference cluster ``name`` (``provisioning.gcp.gclb``),
    sorted. A config that does not load on its own is skipped (its problems are its own)."""
    out = []
    for other in ws.cluster_names():
        if other == name:
            continue
        try:
            cfg = load_cluster(ws, other, references=False).config
        except ClusterstackError:
            continue
        if any(c == name for c, _ in referenced_clusters(cfg)):
            out.append(other)
    return out


def cluster_problems(ws: Workspace, names: list[str]) -> tuple[list[str], list[Problem]]:
    """Load ``names`` and every config that references one of them, and check that no two
    stacks claim one cloud identity (:mod:`clusterstack.validation.identities`). Returns (the
    clusters checked, problems).

    Linear: each file is read and validated once (first pass); references are checked
    against that index instead of reloading the referenced files per referrer.
    """
    all_names = ws.cluster_names()
    first: dict[str, LoadedCluster | None] = {}
    first_problems: dict[str, list[Problem]] = {}
    for n in all_names:
        try:
            first[n] = load_cluster(ws, n, references=False)
        except ClusterstackError as exc:
            first[n], first_problems[n] = None, exc.problems

    def load_one(other: str) -> LoadedCluster:
        got = first.get(other)
        if got is None:
            raise ConfigError(problems=first_problems.get(other) or [
                Problem(f"unknown cluster {other!r}", file=ws.cluster_file(other))])
        return got

    refs = {n: {c for c, _ in referenced_clusters(c.config)} for n, c in first.items() if c}
    checked = list(dict.fromkeys(names))
    for n in list(checked):
        if n in first:
            checked += sorted(r for r, rs in refs.items() if n in rs and r != n and r not in checked)
    problems: list[Problem] = []
    for n in checked:
        if n not in first:
            try:
                load_cluster(ws, n)
            except ClusterstackError as exc:
                problems.extend(exc.problems)
            continue
        loaded = first[n]
        if loaded is None:
            problems.extend(first_problems[n])
            continue
        problems.extend(reference_problems(loaded, set(all_names), load_one, ws.cluster_file,
                                           root=ws.root, conventions=ws.conventions))
    problems += identity_problems((c for c in first.values() if c is not None), ws.root,
                                  conventions=ws.conventions)
    return checked, problems


def plan_identity_problems(ws: Workspace, names: Collection[str], *,
                           loaded: Mapping[str, LoadedCluster] | None = None) -> list[Problem]:
    """What ``plan`` refuses of the cluster stacks ``names`` beyond each one's own config: a
    cloud identity (CKS cluster, queue, DNS name, address, registry, load balancer and each
    object it declares per routed cluster, controller or log relay VM) that one of them claims and another cluster of the workspace claims too
    (:func:`clusterstack.validation.identities.identity_problems`, the rule ``validate``
    applies) — so a plan of a config ``validate`` refuses fails too. The clusters a named one
    references count as named (a GCP stack's load balancer routes to their VMs: a VM two of
    them claim is a backend of its plan). Every other cluster is read for its claims; one
    that does not load claims nothing (its problems are its own). ``loaded``: clusters the
    caller has loaded already (``{name: LoadedCluster}``), not read again."""
    clusters = []
    for n in ws.cluster_names():
        if loaded is not None and n in loaded:
            clusters.append(loaded[n])
            continue
        try:
            clusters.append(load_cluster(ws, n, references=False))
        except ClusterstackError:
            continue
    involved = set(names)
    involved |= {r for c in clusters if c.config.name in names
                 for r, _via in referenced_clusters(c.config)}
    return identity_problems(clusters, ws.root, only=involved, conventions=ws.conventions)


#: What may sit in the clusters directory beside the ``<cluster>.yaml`` configs without being a
#: config: documentation (Marin's ``lib/iris/config`` holds a README.md) and hidden files
#: (``.gitkeep``, editors' swap files).
_NOT_CONFIGS = (".md",)


def directory_config_problem(ws: Workspace, path: Path) -> Problem:
    """The one problem of a directory named like a config (``clusters/<name>.yaml/``): it is
    no cluster (:meth:`Workspace.cluster_names` skips it), so nothing else is said of it."""
    return Problem("the cluster config is a directory, not a file",
                   "a cluster config is a <cluster>.yaml file: remove or rename the directory "
                   f"(configs are not searched recursively: move any in it up into {ws.clusters_dir.name}/)",
                   file=path)


def stray_problems(ws: Workspace) -> list[Problem]:
    """Entries of the clusters directory that are not ``<cluster>.yaml`` configs: a
    ``*.yml``/``*.YAML``/``*.json`` file, a subdirectory, any other suffix.

    Rule: an operator who wrote ``clusters/x.yml`` expects it planned or refused, never
    silently ignored — so each is an error (not a warning: validate is the gate CI runs, and a
    warning there is read by nobody), with the rename to make. Dotfiles and ``*.md`` are
    allowed (:data:`_NOT_CONFIGS`). Returns one Problem per entry, sorted.
    """
    if not ws.clusters_dir.is_dir():
        return []
    problems = []
    for entry in sorted(ws.clusters_dir.iterdir()):
        name = entry.name
        if name.startswith(".") or name.endswith(_NOT_CONFIGS):
            continue
        if entry.suffix == ".yaml" and entry.is_dir():
            problems.append(directory_config_problem(ws, entry))
            continue
        if entry.suffix == ".yaml" and (entry.exists() or entry.is_symlink()):
            continue  # a config (a link, a pipe or a device is refused when it is loaded)
        stem = name.split(".")[0]
        if entry.is_dir():
            message = "a directory in the clusters directory is not read (configs are not searched recursively)"
            hint = f"move its <cluster>.yaml files up into {ws.clusters_dir.name}/, or move it out"
        elif entry.suffix.lower() in (".yml", ".yaml"):
            message = "not read: only <cluster>.yaml files are cluster configs"
            hint = f"rename it to {stem}.yaml, or move it out of {ws.clusters_dir.name}/"
        else:
            message = "not a cluster config: only <cluster>.yaml files belong here"
            hint = f"move it out of {ws.clusters_dir.name}/ (documentation may stay as *.md)"
        problems.append(Problem(message, hint, file=entry))
    return problems


def cluster_notes(ws: Workspace, names: Collection[str]) -> list[Problem]:
    """What ``validate`` accepts but cannot check, said once per place (``note:`` lines; the
    ``notes`` of ``validate --json``), for the clusters ``names`` that load:

    - a NodePool scale group whose instance type the instance-type table lacks
      (:func:`clusterstack.config.instances.instance_type`): its per-node figures — the Kueue
      quota — are the config's own, unchecked against the hardware;
    - a GPU NodePool under a topology-aware flavor whose Topology has fabric levels
      (``backend.coreweave.cloud/fabric``, ``…/leafgroup``) while its instance type's name does
      not say InfiniBand (no ``ib`` as in ``gd-8xh100ib-i128``, not an NVL72 type): TAS lists
      only nodes carrying every level label (kubernetes-sigs/kueue v0.14.4
      pkg/cache/scheduler/tas_flavor.go L107-113), CoreWeave sets those labels on InfiniBand
      nodes ("InfiniBand and RoCE labels"), and clusterstack cannot tell offline whether this
      type's nodes carry them — if they do not, Kueue admits no GPU job there;
    - a controller behind a GCP stack's load balancer that gives
      ``auth.iap.signed_header_audience``: the id of an existing backend service, used only
      as the import ID of its IAP settings when adopting it; offline, nothing can tell whether
      that backend exists or is this controller's (the forms that are provably wrong are
      refused: :func:`clusterstack.derive.gclb.audience_problem`).

    Sorted by file and line; [] when there is nothing to say."""
    notes: list[Problem] = []
    for name in names:
        try:
            loaded = load_cluster(ws, name, references=False)
        except ClusterstackError:
            continue
        cfg = loaded.config
        for group in sorted(cfg.scale_groups):
            sg = cfg.scale_groups[group]
            cw, res = sg.slice_template.coreweave, sg.resources
            if cw is None or not cw.instance_type or instance_type(cw.instance_type) is not None:
                continue
            figures = ", ".join(f"{k} {v}" for k, v in (("cpu", res.cpu), ("ram", res.ram), ("disk", res.disk))
                                if v is not None)
            if res.device_type == "gpu":
                figures += f", {res.device_count} GPUs"
            notes.append(loaded.problem(
                ("scale_groups", group, "slice_template", "coreweave", "instance_type"),
                f"instance type {cw.instance_type!r} is not in clusterstack's instance-type table "
                f"(CoreWeave's catalogue as read on {CATALOGUE_READ}): its per-node figures ({figures}) "
                "are this file's own and unchecked — they make the ClusterQueue quota",
                "compare them with the type's CoreWeave instance page"))
        cw_prov = cfg.provisioning.coreweave
        if cw_prov is not None:
            levels = [lvl for lvl in topology_levels(cw_prov.kueue.flavor_topology, ws.conventions)
                      if lvl != HOSTNAME_LABEL]
            pools = loaded.specs.nodepools if levels and loaded.specs is not None else ()
            for pool in pools:
                if not pool.gpu or says_infiniband(pool.instance_type):
                    continue
                notes.append(loaded.problem(
                    ("scale_groups", pool.scale_group, "slice_template", "coreweave", "instance_type"),
                    f"GPU pool {pool.name} ({pool.instance_type}) is under the Kueue Topology "
                    f"{cw_prov.kueue.flavor_topology!r}, whose levels {', '.join(levels)} CoreWeave sets on "
                    "InfiniBand nodes, and the type's name does not say InfiniBand (as the 'ib' of "
                    "gd-8xh100ib-i128 does): TAS lists only nodes carrying every level label (kueue "
                    "v0.14.4 pkg/cache/scheduler/tas_flavor.go L107-113), so if these nodes lack them "
                    "Kueue admits no GPU job here",
                    f"check a node of this type: kubectl get nodes -l node.kubernetes.io/instance-type="
                    f"{pool.instance_type} -L {','.join(levels)}"))
        for ref, via in referenced_clusters(cfg):
            if "controllers" not in via:
                continue
            try:
                target = loaded if ref == cfg.name else load_cluster(ws, ref, references=False)
            except ClusterstackError:
                continue
            iap = target.config.auth.iap
            if iap is None or not iap.signed_header_audience:
                continue
            notes.append(target.problem(
                ("auth", "iap", "signed_header_audience"),
                f"taken as the audience of an existing backend service of {cfg.name}'s load balancer: "
                "its id is used only as the import ID of the backend's IAP settings (adopting); "
                "offline, clusterstack cannot know whether that backend exists or is this "
                "controller's",
                "for a backend this stack creates, remove it (the stack output iap_audiences gives "
                "the audience after the first `up`); when adopting, the import preview shows it"))
    unique = {p.render(): p for p in notes}
    return sorted(unique.values(), key=lambda p: (str(p.file), p.line or 0, p.field))
