"""A cluster file + the lab-wide ``[defaults]`` of ``clusterstack.toml`` → :class:`ClusterConfig`.

Read through the one loader (:mod:`clusterstack.config.document`): the fast safe parse on the
happy path, the round-trip parse only to locate an error. A value the file omits is filled
from ``[defaults]``; a bad filled value is reported at its line in ``clusterstack.toml``. Then
the rules that span sections (:func:`_cross_checks`) and near-miss top-level keys. Derivations
and references to other clusters are the second pass (:mod:`clusterstack.validation`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from clusterstack.config.cluster import ClusterConfig, Provisioning
from clusterstack.config.document import Document, Path_, format_path, near_misses, shape
from clusterstack.config.instances import instance_type
from clusterstack.config.types import parse_bytes
from clusterstack.errors import ConfigError, FieldError, Problem

CLUSTER_STRICT = "fields under provisioning are strict"


@dataclass(frozen=True)
class LoadedCluster:
    """A validated cluster config and where it came from (for located errors).

    ``source``: the cluster file; ``defaults_source``: ``clusterstack.toml`` (None when no
    defaults were given); ``filled``: key path → the ``[defaults]`` key its value came from.
    """

    config: ClusterConfig
    path: Path
    source: Document
    defaults_source: Document | None = None
    filled: Mapping[Path_, str] = field(default_factory=dict)

    @property
    def document(self) -> Any:
        """The round-trip document (keys carry their lines); parsed only when asked for."""
        return self.source.positioned

    def line_of(self, path: Path_) -> int | None:
        """1-based line of a key path (its nearest existing ancestor when missing)."""
        return self.source.line_of(path)

    def problem(self, path: Path_, message: str, hint: str) -> Problem:
        """A Problem at ``path``: in ``clusterstack.toml`` when the value came from
        ``[defaults]``, else in the cluster file."""
        return _locate(self.source, self.defaults_source, self.filled, path, message, hint)

    def problems(self, errors: list[FieldError]) -> list[Problem]:
        return [self.problem(fe.path, fe.message, fe.hint) for fe in errors]


def _locate(source: Document, defaults_source: Document | None, filled: Mapping[Path_, str],
            path: Path_, message: str, hint: str) -> Problem:
    for at, key in filled.items():
        if tuple(path[:len(at)]) == at and defaults_source is not None:
            kept, line = defaults_source.locate(("defaults", key))
            return Problem(message=f"{message} (the lab-wide value {source.path.name} uses for "
                           f"{format_path(at)})", hint=hint, file=defaults_source.path, line=line,
                           field=format_path(("defaults", key, *path[len(at):])))
    return source.problem(path, message, hint)


def _missing_problem(doc: Document, defaults_source: Document | None, loc: Path_,
                     hint: str) -> Problem | None:
    """A required lab-wide value that neither the cluster file nor ``[defaults]`` provides:
    one error naming both places (never a silent demo value)."""
    key = DEFAULTABLE.get(tuple(loc))
    if key is None:
        return None
    toml = defaults_source.path.name if defaults_source is not None else "clusterstack.toml"
    return doc.problem(loc, f"missing here and in [defaults] {key} of {toml}",
                       f"set {format_path(loc)} in {doc.path.name}, or {key} under [defaults] in "
                       f"{toml} for every cluster")


#: Where ``[defaults]`` fills a cluster file: (the section's key path, the field, the
#: ``[defaults]`` key). The GCP load balancer's DNS zone and the CoreWeave federation record
#: share the lab's one Cloudflare zone; ACME e-mail and allow sources are lab-wide.
LAB_DEFAULTS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("provisioning", "gcp", "gclb"), "dns_zone_id", "dns_zone_id"),
    (("provisioning", "gcp", "gclb"), "dns_api_token", "dns_api_token"),
    (("provisioning", "coreweave", "ingress"), "acme_email", "acme_email"),
    (("provisioning", "coreweave", "ingress"), "federation_allow_sources", "federation_allow_sources"),
    (("provisioning", "coreweave", "federation_dns"), "zone_id", "dns_zone_id"),
    (("provisioning", "coreweave", "federation_dns"), "api_token", "dns_api_token"),
)


#: The same table by key path (a cluster file's path → the ``[defaults]`` key).
DEFAULTABLE: dict[Path_, str] = {(*section, field): key for section, field, key in LAB_DEFAULTS}


def _apply_defaults(data: dict, defaults: dict, filled: dict[Path_, str] | None = None) -> dict:
    """Fill lab-wide values from ``clusterstack.toml`` ``[defaults]`` where a file omits them.

    Returns a copy of ``data``. When ``filled`` is given, records each filled key path →
    the ``[defaults]`` key it came from (so an error in that value points at the TOML).
    """
    data = copy.deepcopy(data)
    filled = {} if filled is None else filled
    for section, field, key in LAB_DEFAULTS:
        parent: object = data
        for part in section:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and field not in parent and key in defaults:
            value = defaults[key]
            parent[field] = list(value) if isinstance(value, list) else value
            filled[(*section, field)] = key
    return data


def _repeated(values: list[str], path: tuple, what: str, key: str | None = "name") -> list[FieldError]:
    seen: dict[str, int] = {}
    errs = []
    for i, v in enumerate(values):
        if v in seen:
            at = (*path, i, key) if key else (*path, i)
            errs.append(FieldError(at, f"{what} {v!r} is declared twice (first as "
                                   f"{path[-1]}[{seen[v]}])", "remove the repeat or rename it"))
        seen.setdefault(v, i)
    return errs


def _duplicates(cfg: ClusterConfig) -> list[FieldError]:
    """Names that must be unique inside one config: each becomes one cloud resource (one URN,
    one import ID), so a repeat would declare the same resource twice."""
    errs: list[FieldError] = []
    cw, gcp = cfg.provisioning.coreweave, cfg.provisioning.gcp
    if cw is not None:
        errs += _repeated(list(cw.ingress.cluster_issuers),
                          ("provisioning", "coreweave", "ingress", "cluster_issuers"), "issuer", None)
    if gcp is not None:
        errs += _repeated([a.name for a in gcp.addresses], ("provisioning", "gcp", "addresses"), "address")
        errs += _repeated([r.name for r in gcp.registries], ("provisioning", "gcp", "registries"), "registry")
    return errs


def _cross_checks(cfg: ClusterConfig, expected_name: str) -> list[FieldError]:
    """Rules that span sections; each names the field a user must change."""
    errs: list[FieldError] = []
    if cfg.name != expected_name:
        errs.append(FieldError(("name",), f"{cfg.name!r} does not match the file name "
                               f"{expected_name}.yaml", "rename the file or fix name:"))
    prov = cfg.provisioning
    other = "gcp" if prov.provider == "coreweave" else "coreweave"
    if getattr(prov, prov.provider) is None:
        errs.append(FieldError(("provisioning", prov.provider),
                               f"provider is {prov.provider} but the {prov.provider} block is missing",
                               f"add provisioning.{prov.provider}, shaped like:\n  provisioning:\n"
                               + shape(prov.provider, Provisioning.model_fields[prov.provider].annotation,
                                       indent="    ")))
    if getattr(prov, other) is not None:
        errs.append(FieldError(("provisioning", other),
                               f"provider is {prov.provider}; a {other} block is not allowed",
                               f"remove provisioning.{other} or change provider"))
    errs += _duplicates(cfg)
    if prov.provider == "coreweave":
        if cfg.platform.coreweave is None:
            errs.append(FieldError(("platform", "coreweave"), "missing for a CoreWeave stack",
                                   "add platform.coreweave with region and kube_context"))
        if cfg.kubernetes_provider.kueue is None:
            errs.append(FieldError(("kubernetes_provider", "kueue", "cluster_queue"),
                                   "required for a CoreWeave stack",
                                   "add kubernetes_provider.kueue.cluster_queue"))
        if cfg.controller.coreweave is None:
            errs.append(FieldError(("controller", "coreweave"),
                                   "required for a CoreWeave stack (the federation Ingress backend)",
                                   "add controller.coreweave with service_name and port"))
        if prov.coreweave is not None:
            errs += _coreweave_placement(cfg, prov.coreweave.cluster.zone)
            errs += _coreweave_capacity(cfg)
            errs += instance_type_contradictions(cfg)
    errs += _intents_match_the_config(cfg)
    return errs


def _intents_match_the_config(cfg: ClusterConfig) -> list[FieldError]:
    """Rule: an intent states the change this config makes (clusterstack.guard.intent) — a
    retired pool and a migration's old pool are gone from ``scale_groups``, a migration's new
    pool and a shrunk pool are there, a shrunk pool has ``to_nodes`` nodes now (``max_slices`` ×
    ``num_vms``, its NodePool's size); one intent per pool. Otherwise the stanza approves
    something else than the diff shows."""
    errs: list[FieldError] = []
    seen: dict[str, int] = {}
    for i, it in enumerate(cfg.intents):
        at = ("intents", i)
        groups = cfg.scale_groups
        for pool in (it.pool, it.to) if it.to else (it.pool,):
            if pool in seen:
                errs.append(FieldError((*at, it.verb), f"pool {pool!r} is already in intents[{seen[pool]}]",
                                       "one intent per pool"))
            seen.setdefault(pool, i)
        if it.verb in ("retire", "migrate") and it.pool in groups:
            errs.append(FieldError((*at, it.verb), f"scale group {it.pool!r} is still in scale_groups",
                                   f"remove scale_groups.{it.pool} in the same change, or drop the intent"))
        if it.verb == "migrate" and it.to not in groups:
            errs.append(FieldError((*at, "to"), f"no scale group {it.to!r} to migrate to",
                                   "add the new pool to scale_groups in the same change"))
        if it.verb == "shrink":
            sg = groups.get(it.pool)
            if sg is None:
                errs.append(FieldError((*at, "shrink"), f"no scale group {it.pool!r}",
                                       "name a pool of scale_groups"))
            elif sg.max_slices * max(1, sg.num_vms) != it.to_nodes:
                errs.append(FieldError((*at, "to_nodes"), f"scale group {it.pool!r} has "
                                       f"{sg.max_slices * max(1, sg.num_vms)} nodes, not {it.to_nodes}",
                                       "to_nodes is the pool's size after the change (max_slices × num_vms)"))
    return errs


def _coreweave_placement(cfg: ClusterConfig, zone: str) -> list[FieldError]:
    """Rule: one zone per CoreWeave stack. A CKS cluster lives in one zone (CoreWeave CKS API
    / Pulumi ``coreweave.CksCluster``: ``zone`` required, e.g. ``US-EAST-04A``) and a NodePool
    adds Nodes to that one cluster (CoreWeave "Node Pools": "for use by a specified CKS
    cluster"; the NodePool spec has no zone of its own), so the scheduler's
    ``platform.coreweave.region`` and every slice's ``slice_template.coreweave.region`` name
    ``provisioning.coreweave.cluster.zone`` — as each of Marin's four CoreWeave configs does
    (marin-community/marin lib/iris/config/cw-*.yaml: region = cluster zone). A slice
    declaring another zone would be scheduled as if its Nodes were there."""
    errs: list[FieldError] = []
    hint = (f"set it to {zone} (provisioning.coreweave.cluster.zone), or move the stack by "
            "changing the cluster's zone")
    platform = cfg.platform.coreweave
    if platform is not None and platform.region != zone:
        errs.append(FieldError(("platform", "coreweave", "region"),
                               f"region {platform.region!r} is not the CKS cluster's zone {zone!r}", hint))
    for group in sorted(cfg.scale_groups):
        cw = cfg.scale_groups[group].slice_template.coreweave
        if cw is not None and cw.region is not None and cw.region != zone:
            errs.append(FieldError(("scale_groups", group, "slice_template", "coreweave", "region"),
                                   f"region {cw.region!r} is not the CKS cluster's zone {zone!r}: "
                                   "the NodePool's Nodes join that cluster, in its zone", hint))
    return errs


def _coreweave_capacity(cfg: ClusterConfig) -> list[FieldError]:
    """Rule: a scale group that becomes a NodePool declares a node that can run a pod — at
    least one CPU, more than 0 bytes of ``ram`` and of ``disk`` (in any unit: ``0``, ``0GB``,
    ``0.0TiB``), and (``device_type: gpu``) at least one GPU. Its figures are the Kueue
    ClusterQueue's per-node quota (:func:`clusterstack.derive.derive_kueue_quota`: nodes ×
    per node); a ClusterQueue "admits workloads if and only if" the sum of their requests is
    within the quota (kubernetes-sigs/kueue docs/concepts/cluster_queue.md), so a quota of 0
    admits no workload requesting the resource — and every pod requests cpu."""
    errs: list[FieldError] = []
    for group in sorted(cfg.scale_groups):
        sg = cfg.scale_groups[group]
        cw, res = sg.slice_template.coreweave, sg.resources
        if cw is None or not cw.instance_type:
            continue  # no NodePool: the scheduler's own settings
        at = ("scale_groups", group, "resources")
        if res.cpu == 0:
            errs.append(FieldError((*at, "cpu"), f"0 CPUs per {cw.instance_type} node: the "
                                   "ClusterQueue's cpu quota would be 0 and Kueue would admit no pod",
                                   f"set it to the vCPUs one {cw.instance_type} node offers"))
        for fieldname, what, resource in (("ram", "memory", "memory"),
                                          ("disk", "local disk", "ephemeral-storage")):
            value = getattr(res, fieldname)
            try:
                empty = value is not None and parse_bytes(value) == 0
            except ValueError:
                empty = False  # not a size: refused where it is parsed (derive_kueue_quota)
            if empty:
                errs.append(FieldError((*at, fieldname), f"0 bytes of {what} per "
                                       f"{cw.instance_type} node ({value!r}): the ClusterQueue's {resource} "
                                       f"quota would be 0 and Kueue would admit no pod requesting {resource}",
                                       f"set it to the {what} one {cw.instance_type} node offers, "
                                       "e.g. 512GB or 6.98TiB"))
        if res.device_type == "gpu" and res.device_count == 0:
            errs.append(FieldError((*at, "device_count"), f"a GPU scale group with 0 GPUs per "
                                   f"{cw.instance_type} node: its GPU quota would be 0",
                                   f"set it to the GPUs one {cw.instance_type} node has, or "
                                   "device_type: cpu"))
    return errs


def load_cluster_file(path: Path, expected_name: str, *, defaults: Mapping[str, Any] | None = None,
                      defaults_source: Document | None = None) -> LoadedCluster:
    """Load and validate the cluster file ``path`` (whose ``name:`` must be ``expected_name``),
    filling omitted lab-wide values from ``defaults`` (the ``[defaults]`` table, read from
    ``defaults_source``).

    Raises ConfigError listing every problem as ``file:line: field: message — hint``.
    """
    doc = Document.read(path, missing_hint="check the cluster name and clusters_dir in "
                                           "clusterstack.toml")
    data = doc.require_mapping(hint="start from a shipped example")
    filled: dict[Path_, str] = {}  # key path → [defaults] key, for values the file omits
    typos = near_misses(ClusterConfig, data)
    try:
        cfg = ClusterConfig.model_validate(_apply_defaults(data, dict(defaults or {}), filled))
    except ValidationError as exc:
        def where(loc: Path_, message: str, hint: str) -> Problem | None:
            if any(tuple(loc[:len(at)]) == at for at in filled):
                return _locate(doc, defaults_source, filled, loc, message, hint)
            if message == "Field required":
                return _missing_problem(doc, defaults_source, loc, hint)
            return None
        problems = [doc.problem(fe.path, fe.message, fe.hint) for fe in typos]
        problems += doc.validation_problems(exc, ClusterConfig, strict=CLUSTER_STRICT, where=where)
        raise ConfigError(problems=problems) from None
    loaded = LoadedCluster(config=cfg, path=path, source=doc, defaults_source=defaults_source,
                           filled=filled)
    field_errors = typos + _cross_checks(cfg, expected_name)
    if field_errors:
        raise ConfigError(problems=loaded.problems(field_errors))
    return loaded


#: How far a per-node size may exceed the table's before it is a contradiction: a figure
#: written in another unit with two decimals rounds up by less than this (Marin's
#: ``27.94TiB`` for 30.72 TB is 0.001 % above it).
SIZE_ROUNDING = 0.005


def instance_type_contradictions(cfg: ClusterConfig) -> list[FieldError]:
    """Rule: a scale group that becomes a NodePool of a *known* instance type
    (:func:`clusterstack.config.instances.instance_type`) may not declare per-node figures
    its hardware does not have — they are the ClusterQueue's quota (nodes × per node,
    :func:`clusterstack.derive.derive_kueue_quota`), and Kueue admits workloads up to the
    quota, not up to the hardware (kubernetes-sigs/kueue docs/concepts/cluster_queue.md), so a
    quota above the fleet admits pods that never find a node. Each is refused at its field:
    ``device_count`` other than the type's GPUs per node (``gb200-4x`` has 4: 8 would make a
    quota of 864 where 6 racks have 432); ``device_variant`` another model than the type's
    (an H100 type declared as ``B200``); ``device_type`` other than ``gpu`` for a GPU type
    (its GPUs would get no quota) or ``gpu`` for a CPU type; ``cpu`` above the type's vCPUs;
    ``ram``/``disk`` above the type's by more than :data:`SIZE_ROUNDING` (less is fine: what
    a node has allocatable is less than its hardware). A type the table lacks is taken with
    the config's own figures (``validate`` notes it)."""
    errs: list[FieldError] = []
    for group in sorted(cfg.scale_groups):
        sg = cfg.scale_groups[group]
        cw, res = sg.slice_template.coreweave, sg.resources
        known = instance_type(cw.instance_type) if cw is not None and cw.instance_type else None
        if known is None:
            continue
        at = ("scale_groups", group, "resources")
        nodes = sg.max_slices * max(1, sg.slice_template.num_vms)
        what = f"{known.name} in clusterstack's instance-type table"
        if known.gpus and res.device_type != "gpu":
            errs.append(FieldError((*at, "device_type"), f"{known.name} has {known.gpus} {known.gpu_model} "
                                   f"GPUs per node; as device_type {res.device_type} they get no GPU quota "
                                   "and Kueue admits no GPU pod there",
                                   f"set device_type: gpu, device_variant: {known.gpu_model}, "
                                   f"device_count: {known.gpus}"))
        elif not known.gpus and res.device_type == "gpu":
            errs.append(FieldError((*at, "device_type"), f"{known.name} is a CPU instance type: its "
                                   "nodes have no GPU", "set device_type: cpu (and drop device_count), "
                                   "or name a GPU instance type"))
        elif known.gpus and res.device_count not in (0, known.gpus):   # 0: _coreweave_capacity
            errs.append(FieldError((*at, "device_count"), f"{res.device_count} GPUs per node, but "
                                   f"{known.name} has {known.gpus}: the ClusterQueue's nvidia.com/gpu "
                                   f"quota would be {nodes * res.device_count} where {nodes} nodes have "
                                   f"{nodes * known.gpus}", f"set device_count: {known.gpus} (from {what})"))
        if known.gpus and res.device_type == "gpu" and res.device_variant is not None \
                and not known.is_model(res.device_variant):
            errs.append(FieldError((*at, "device_variant"), f"{res.device_variant!r} GPUs, but "
                                   f"{known.name} has {known.gpu_model} GPUs",
                                   f"set device_variant: {known.gpu_model}, or name the instance type "
                                   f"of {res.device_variant} nodes"))
        if res.cpu is not None and res.cpu > known.vcpus:
            errs.append(FieldError((*at, "cpu"), f"{res.cpu} CPUs per node, but {known.name} has "
                                   f"{known.vcpus} vCPUs: the cpu quota would exceed the fleet",
                                   f"set it to at most {known.vcpus} (from {what})"))
        for fieldname, limit, shown in (("ram", known.ram_bytes, known.ram), ("disk", known.disk_bytes, known.disk)):
            value = getattr(res, fieldname)
            try:
                size = parse_bytes(value) if value is not None else None
            except ValueError:
                continue   # not a size: refused where it is parsed (derive_kueue_quota)
            if size is not None and size > limit * (1 + SIZE_ROUNDING):
                errs.append(FieldError((*at, fieldname), f"{value} per node, but {known.name} has "
                                       f"{shown}: the {'memory' if fieldname == 'ram' else 'ephemeral-storage'} "
                                       "quota would exceed the fleet",
                                       f"set it to at most {shown} (from {what})"))
    return errs
