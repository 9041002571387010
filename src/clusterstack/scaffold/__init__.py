"""Scaffolding: a new workspace (``clusterstack init``) and a new cluster from a template
(``clusterstack cluster new``).

The text of every scaffolded file comes from the templates shipped beside this module
(``scaffold/templates/``, :class:`string.Template` placeholders), so what a lab starts from is
reviewed text, not code. Every write is all-or-nothing: the whole set of files is computed and
checked first — a file that already exists is never overwritten (:class:`ConfigError`, exit 2,
nothing written) and a cluster rendered from the options must pass the same loader and
derivations ``validate`` runs — then each file is written atomically (``fsutil.write_atomic``).
The one exception is ``.gitignore``, to which missing entries are appended (its existing lines
are kept byte for byte).
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from types import MappingProxyType
from typing import Mapping

from clusterstack.config.instances import (INSTANCE_TYPES, instance_type as instance_type_of,
    near_instance_types, rack_size)
from clusterstack.config.types import parse_bytes, parse_bytes as parse_size
from clusterstack.errors import ClusterstackError, ConfigError, FieldError, Problem
from clusterstack.fsutil import testpoint, write_atomic
from clusterstack.config.cluster_file import load_cluster_file
from clusterstack.config.document import Document, json_loads, read_text
from clusterstack.config.services import REGISTRY_FILE, RegistryFile
from clusterstack.derive import HOSTNAME_TOPOLOGY, is_rack_scale, says_infiniband
from clusterstack.schemas import schema_text
from clusterstack.validation.clusters import derive_all

WORKSPACE_FILE = "clusterstack.toml"
#: Entries ``init`` makes sure ``.gitignore`` has: the local file:// state backend, Python
#: caches, and the local IAM keyset (docs/iam.md).
# the advisory lock files of reviewed-file edits (fsutil.locked: `.iam.yaml.lock`, stack files'
# `.Pulumi.<stack>.yaml.lock`), left beside the file on purpose — untracked, they would make
# every tree dirty for `up`; and `diff --base`'s plan cache, written under the workspace root
# (plan/at_ref.py CACHE_DIR) — so the root's own .gitignore covers it wherever the root is
# (and `.clusterstack.toml.lock`, the lock of `iam init`'s edit of clusterstack.toml); the
# virtualenv getting-started creates in the repository (`python3 -m venv .venv`: ~13,000 files
# `git add -A` would stage) and the temporary files of atomic writes (`*.tmp`: fsutil.write_atomic's
# `.<name>.<pid>-<hex>.tmp`, removed by the next write when a kill left one; the scaffold
# journal is one while it runs)
GITIGNORE_ENTRIES = (".pulumi-state/", "__pycache__/", "/.iam/", ".*.yaml.lock", ".*.toml.lock",
                     "/.clusterstack-cache/", ".venv/", "*.tmp")
#: The journal of a scaffold in progress (``init``, ``cluster new``), at the workspace root:
#: what the run is writing, by path and SHA-256, so a run killed half-way is completed by the
#: next one instead of refused for the files it had written (:meth:`Plan.write`).
JOURNAL = ".clusterstack-scaffold-journal.tmp"
JOURNAL_FORMAT = "clusterstack.scaffold-journal/v1"
#: Where ``init`` writes the JSON Schemas the scaffolded YAML files point their
#: ``yaml-language-server`` modeline at (regenerate with ``clusterstack schema``).
SCHEMA_DIR = ".clusterstack/schemas"


@dataclass(frozen=True)
class NodeShape:
    """What one node of an instance type offers: vCPUs, RAM and local disk in the scheduler's
    size syntax (``512GB``, ``30.72TB``), and its GPUs (0 for a CPU type)."""

    cpu: int
    ram: str
    disk: str
    gpus: int = 0
    gpu_model: str | None = None


#: The per-node figures ``init`` fills in for a known instance type: the ONE instance-type
#: table (:mod:`clusterstack.config.instances`), by name.
KNOWN_SHAPES: Mapping[str, NodeShape] = MappingProxyType({
    t.name: NodeShape(cpu=t.vcpus, ram=t.ram, disk=t.disk, gpus=t.gpus, gpu_model=t.gpu_model)
    for t in INSTANCE_TYPES.values()})


@dataclass(frozen=True)
class Pool:
    """One scale group of a template: its instance type, a pinned node count (buffer_slices =
    max_slices = nodes) and the per-node figures given by flags (None: the instance-type
    table's)."""

    instance_type: str
    nodes: int
    cpu: int | None = None
    ram: str | None = None
    disk: str | None = None
    gpus: int | None = None
    gpu_model: str | None = None

    def shape(self, option: str) -> tuple[NodeShape | None, list[str]]:
        """The node shape and the names of the options still needed (``option`` prefixes
        them: ``--node-`` or ``--cpu-node-``)."""
        known = KNOWN_SHAPES.get(self.instance_type)
        cpu = self.cpu if self.cpu is not None else (known.cpu if known else None)
        ram = self.ram or (known.ram if known else None)
        disk = self.disk or (known.disk if known else None)
        gpus = self.gpus if self.gpus is not None else (known.gpus if known else None)
        model = self.gpu_model or (known.gpu_model if known else None)
        missing = [f"{option}{n}" for n, v in (("cpu", cpu), ("ram", ram), ("disk", disk)) if v is None]
        if cpu is None or ram is None or disk is None:
            return None, missing
        return NodeShape(cpu=cpu, ram=ram, disk=disk, gpus=gpus or 0, gpu_model=model), missing


#: The flags of a pool's per-node figures, by pool: (instance type, nodes, racks, vCPUs, RAM,
#: disk, GPUs, GPU model). The CPU pool has no racks, GPUs or model.
GPU_FLAGS = ("--instance-type", "--nodes", "--racks", "--node-cpu", "--node-ram", "--node-disk", "--gpus",
             "--gpu-model")
CPU_FLAGS = ("--cpu-instance-type", "--cpu-nodes", None, "--cpu-node-cpu", "--cpu-node-ram",
             "--cpu-node-disk", None, None)


def _size_problem(value: str, flag: str) -> str | None:
    """Why ``value`` is no per-node size for ``flag`` (the scheduler's size syntax, with a
    unit: config.types.SchedulerSize), or None."""
    try:
        parse_bytes(value)
    except ValueError as exc:
        return f"{flag} {value!r}: {exc}"
    if re.fullmatch(r"\s*[0-9]+(\.[0-9]*)?\s*", value):
        return f"{flag} {value!r} has no unit: write a size such as {value.strip()}GB"
    return None


def resolve_pool(*, gpu: bool, instance_type: str | None, nodes: int | None, racks: int | None = None,
                 cpu: int | None = None, ram: str | None = None, disk: str | None = None,
                 gpus: int | None = None, gpu_model: str | None = None) -> tuple[Pool | None, list[Problem]]:
    """The GPU (``gpu``) or CPU pool the flags describe, and EVERY problem with them at once,
    each naming the flag to pass or change (never a config-file term such as ``max_slices``):

    - ``--nodes`` or, for a rack-scale (NVL72) type, ``--racks`` (``nodes = racks × rack
      size`` of the instance-type table, :func:`clusterstack.config.instances.rack_size`); a
      rack-scale ``--nodes`` that is not whole racks names the ``--racks`` around it;
      ``--racks`` of a type that is not rack-scale is refused;
    - a known type (:func:`clusterstack.config.instances.instance_type`) fills the per-node
      figures; a flag contradicting it (``--gpus 8`` of ``gb200-4x``, another ``--gpu-model``,
      more vCPUs, RAM or disk than the hardware) is refused; a GPU type as the CPU pool or a CPU
      type as the GPU pool is refused;
    - a type the table lacks needs every figure: ``--node-cpu``, ``--node-ram``,
      ``--node-disk`` and, for the GPU pool, ``--gpus`` and ``--gpu-model`` (near known names
      are suggested: a typo is the likelier case).

    Returns ``(None, problems)`` when any problem is found."""
    f_type, f_nodes, f_racks, f_cpu, f_ram, f_disk, f_gpus, f_model = GPU_FLAGS if gpu else CPU_FLAGS
    problems: list[Problem] = []
    if instance_type is None:        # the caller reports the missing type with the other required flags
        if nodes is None and racks is None:
            problems.append(Problem(f"{f_nodes} is required" + (f" (or {f_racks} of a rack-scale type)" if f_racks else ""),
                                    f"pass {f_nodes} N" + (f", or {f_racks} N for whole NVL72 racks" if f_racks else "")))
        return None, problems
    known = instance_type_of(instance_type)
    size = rack_size(instance_type)
    if known is not None and gpu and not known.gpus:
        problems.append(Problem(f"{f_type} {instance_type} is a CPU instance type ({known.vcpus} vCPUs, no GPU)",
                                f"pass the GPU pool's type to {f_type} (e.g. b200-8x, gb200-4x, "
                                "gd-8xh100ib-i128); a CPU pool is --cpu-instance-type and --cpu-nodes"))
    if known is not None and not gpu and known.gpus:
        problems.append(Problem(f"{f_type} {instance_type} is a GPU instance type ({known.gpus} × "
                                f"{known.gpu_model})", f"the GPU pool is --instance-type; pass a CPU "
                                f"type to {f_type} (e.g. cd-gp-i64-erapids)"))
    # how many nodes
    if size is not None and gpu:
        if racks is not None and nodes is not None:
            problems.append(Problem(f"both --nodes and --racks given for {instance_type}",
                                    f"pass one: --racks {racks} is {racks * size} nodes"))
        elif racks is not None:
            nodes = racks * size
        elif nodes is None:
            problems.append(Problem(f"--racks is required for {instance_type}: it deploys in whole "
                                    f"{size}-node NVL72 racks", f"pass --racks N (N × {size} nodes, "
                                    f"N × {size * (known.gpus if known else 4)} GPUs)"))
        elif nodes % size:
            below, above = nodes // size, nodes // size + 1
            problems.append(Problem(f"--nodes {nodes} is not a whole number of {size}-node NVL72 racks "
                                    f"of {instance_type}", f"pass --racks {above} ({above * size} nodes)"
                                    + (f" or --racks {below} ({below * size} nodes)" if below else "")))
    else:
        if racks is not None and f_racks is not None:
            problems.append(Problem(f"--racks is for rack-scale (NVL72) instance types; {instance_type} is "
                                    "not one", "pass --nodes N"))
        if nodes is None:
            problems.append(Problem(f"{f_nodes} is required with {f_type}", f"pass {f_nodes} N (pinned: "
                                    "NodePool min = max)"))
    # what one node offers
    for value, flag in ((ram, f_ram), (disk, f_disk)):
        if value is not None and (why := _size_problem(value, flag)) is not None:
            problems.append(Problem(why, f"pass {flag} with a unit, e.g. 2048GB or 30.72TB"))
    if known is not None:
        table = f"{instance_type} has {known.vcpus} vCPUs, {known.ram} RAM, {known.disk} local disk" \
            + (f", {known.gpus} × {known.gpu_model}" if known.gpus else "")
        if gpu and gpus is not None and known.gpus and gpus != known.gpus:
            problems.append(Problem(f"--gpus {gpus} contradicts {instance_type}: it has {known.gpus} GPUs per node",
                                    "omit --gpus (the instance-type table fills it in)"))
        if gpu and gpu_model is not None and known.gpus and not known.is_model(gpu_model):
            problems.append(Problem(f"--gpu-model {gpu_model} contradicts {instance_type}: its GPUs are "
                                    f"{known.gpu_model}", "omit --gpu-model (the instance-type table fills it in)"))
        if cpu is not None and cpu > known.vcpus:
            problems.append(Problem(f"{f_cpu} {cpu} is more than {instance_type} has ({table})",
                                    f"omit {f_cpu}, or pass at most {known.vcpus}"))
        for value, flag, limit, shown in ((ram, f_ram, known.ram_bytes, known.ram),
                                          (disk, f_disk, known.disk_bytes, known.disk)):
            if value is not None and _size_problem(value, flag) is None and parse_size(value) > limit * 1.005:
                problems.append(Problem(f"{flag} {value} is more than {instance_type} has ({table})",
                                        f"omit {flag}, or pass at most {shown}"))
    else:
        needed = [(f_cpu, cpu), (f_ram, ram), (f_disk, disk)]
        if gpu:
            needed += [(f_gpus, gpus), (f_model, gpu_model)]
        missing = [flag for flag, value in needed if value is None]
        if missing:
            near = near_instance_types(instance_type)
            problems.append(Problem(
                f"{f_type} {instance_type} is not in clusterstack's instance-type table"
                + (f" (did you mean {' or '.join(near)}?)" if near else ""),
                f"pass what one node offers: {', '.join(missing)} (e.g. --node-cpu 128 --node-ram 2048GB "
                "--node-disk 30.72TB --gpus 8 --gpu-model H100); the ClusterQueue quota is nodes × these"))
    if problems:
        return None, problems
    assert nodes is not None
    return Pool(instance_type, nodes, cpu=cpu, ram=ram, disk=disk, gpus=(gpus if gpu else 0),
                gpu_model=gpu_model), []


@dataclass(frozen=True)
class Dns:
    """``provisioning.coreweave.federation_dns``: a Cloudflare CNAME ``hostname`` → ``target``
    (``<host>.<org id>-<CKS cluster>.coreweave.app``). ``zone_id``/``api_token`` None: from
    ``[defaults]`` (``dns_zone_id``, ``dns_api_token``)."""

    hostname: str
    target: str
    zone_id: str | None = None
    api_token: str | None = None


#: The CPU pool a CoreWeave template gets when none is given: two nodes of a type whose figures
#: are known, enough for the controller and two replicas of each system chart.
DEFAULT_CPU_POOL = Pool("cd-gp-i64-erapids", 2)


@dataclass(frozen=True)
class CoreweaveTemplate:
    """A CoreWeave cluster: one GPU pool, a CPU pool (the controller's and the system charts'
    scale group, ``controller.coreweave.scale_group``; None: :data:`DEFAULT_CPU_POOL`),
    optional federation DNS."""

    name: str
    region: str
    gpu_pool: Pool
    acme_email: str
    allow_sources: tuple[str, ...]
    cpu_pool: Pool | None = None
    dns: Dns | None = None
    cks_cluster: str | None = None        # default: the cluster's name
    kube_context: str | None = None       # default: <cks cluster>_<region>
    label_prefix: str | None = None       # default: the name without '-', at most 40 characters
    namespace: str = "training"
    provider = "coreweave"


@dataclass(frozen=True)
class Address:
    name: str
    region: str
    address: str | None   # None: a new reservation (GCP picks the IP)


@dataclass(frozen=True)
class GcpController:
    """The project's controller VM behind IAP and the lab's HTTPS load balancer (this stack's
    own ``controller.gcp``, ``auth.iap`` and ``provisioning.gcp.gclb`` listing itself).

    ``audience`` is None for a backend this stack creates (its audience is the stack output
    ``iap_audiences`` after the first ``up``; derive.gclb), else an existing backend's, to
    adopt. ``dns_zone_id``/``dns_api_token`` None: from ``[defaults]``."""

    zone: str
    port: int
    iap_domain: str
    instance: str | None = None
    audience: str | None = None
    dns_zone_id: str | None = None
    dns_api_token: str | None = None


@dataclass(frozen=True)
class GcpTemplate:
    """A GCP project stack: its static addresses (new or pinned) and, optionally, its
    controller behind IAP and the load balancer."""

    name: str
    project: str
    addresses: tuple[Address, ...] = ()
    label_prefix: str | None = None
    project_number: str | None = None
    controller: GcpController | None = None
    provider = "gcp"


ClusterTemplate = CoreweaveTemplate | GcpTemplate


def template_text(name: str) -> str:
    """The shipped template ``scaffold/templates/<name>``."""
    return resources.files(__name__).joinpath("templates", name).read_text(encoding="utf-8")


def _render(template: str, **values: object) -> str:
    text = Template(template_text(template)).substitute({k: str(v) for k, v in values.items()})
    return text.replace("\x00\n", "")   # an empty optional block leaves no blank line


#: Marks a line of a template whose value was not given: the line is left out
#: (:func:`_drop_omitted`), e.g. a lab-wide value taken from ``[defaults]``.
_OMIT = "\x01"


def _drop_omitted(text: str) -> str:
    """``text`` without the lines holding :data:`_OMIT`."""
    return "".join(line for line in text.splitlines(keepends=True) if _OMIT not in line)


def _scalar(value: str) -> str:
    """``value`` as ONE YAML double-quoted scalar, written by ruamel.yaml's emitter (so a ``,``,
    ``#``, newline, ``: `` or a character YAML must escape stays inside the value and reads
    back equal)."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    # ruamel.yaml 0.19.1 main.py:187 sets default_style = None (so its type reads as None) while
    # main.py:1252 documents it as one of None, '', '"', "'", '|', '>'
    yaml.default_style = '"'  # pyright: ignore[reportAttributeAccessIssue]
    yaml.width = 2**30  # one line: no folding inside the quotes
    out = io.StringIO()
    yaml.dump(value, out)
    return out.getvalue().rstrip("\n")


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_string(value: str) -> str:
    """``value`` as ONE TOML basic string (TOML v1.0.0, "String": a quotation mark, backslash
    and the control characters U+0000–U+001F and U+007F must be escaped; ``\\uXXXX`` for those
    without a short form). tomllib reads it back equal. No TOML writer is a dependency."""
    return '"' + "".join(_TOML_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
                         for c in value) + '"'


def _label_prefix(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())[:40] or "lab"


def _pool_name(instance_type: str, gpu_model: str | None, fallback: str) -> str:
    name = re.sub(r"[^a-z0-9-]", "-", (gpu_model or fallback).lower()).strip("-")
    return name or fallback


def render_cluster(t: ClusterTemplate, *, project_dir: str = "infra",
                   schema_path: str = f"../{SCHEMA_DIR}/cluster.json") -> str:
    """The text of ``clusters/<name>.yaml`` for template ``t``. Raises ConfigError naming
    every option still needed (per-node figures of an instance type not in
    :data:`KNOWN_SHAPES`)."""
    if isinstance(t, GcpTemplate):
        block = "".join("\n" + _render("gcp-address.yaml" if a.address else "gcp-address-new.yaml",
                                       address_name=_scalar(a.name), region=_scalar(a.region),
                                       address=_scalar(a.address or "")).rstrip("\n")
                        for a in t.addresses)
        c = t.controller
        controller_block = gclb_block = "\x00"
        if c is not None:
            controller_block = _drop_omitted(_render(
                "gcp-controller.yaml", zone=_scalar(c.zone), port=c.port,
                instance=_scalar(c.instance) if c.instance else _OMIT, url=_scalar(f"https://{c.iap_domain}"),
                audience=_scalar(c.audience) if c.audience else _OMIT,
                no_audience=_OMIT if c.audience else "")).rstrip("\n")
            gclb_block = _drop_omitted(_render(
                "gcp-gclb.yaml", name_scalar=_scalar(t.name),
                dns_zone_id=_scalar(c.dns_zone_id) if c.dns_zone_id else _OMIT,
                dns_api_token=_scalar(c.dns_api_token) if c.dns_api_token else _OMIT)).rstrip("\n")
        parts = (["static addresses"] if t.addresses or c is None else []) + (
            [f"its controller behind IAP (https://{c.iap_domain})", "the lab's HTTPS load balancer"]
            if c is not None else [])
        summary = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return _drop_omitted(_render(
            "gcp.yaml", name=t.name, name_scalar=_scalar(t.name), project=t.project,
            project_scalar=_scalar(t.project), project_dir=project_dir, summary=summary,
            label_prefix=_scalar(t.label_prefix or _label_prefix(t.name)),
            project_number=_scalar(t.project_number) if t.project_number else _OMIT,
            addresses_block=block or " []", schema_path=schema_path,
            controller_block=controller_block, gclb_block=gclb_block))
    gpu, missing = t.gpu_pool.shape("--node-")
    cpu_pool = t.cpu_pool or DEFAULT_CPU_POOL
    cpu, more = cpu_pool.shape("--cpu-node-")
    missing += more
    if missing:
        raise ConfigError(problems=[Problem(
            f"no per-node figures known for instance type "
            f"{(t.gpu_pool if any(m.startswith('--node-') for m in missing) else cpu_pool).instance_type!r}",
            f"pass {', '.join(missing)} (what one node offers, e.g. --node-cpu 128 --node-ram 2048GB "
            f"--node-disk 27.94TiB); known types: {', '.join(sorted(KNOWN_SHAPES))}")])
    assert gpu is not None
    cks = t.cks_cluster or t.name
    assert cpu is not None
    cpu_block = _render("coreweave-cpu-pool.yaml", pool="cpu", cpu=cpu.cpu, ram=_scalar(cpu.ram),
                        disk=_scalar(cpu.disk), nodes=cpu_pool.nodes, region=_scalar(t.region),
                        instance_type=_scalar(cpu_pool.instance_type)).rstrip("\n")
    dns_block = "\x00"
    if t.dns is not None:
        dns_block = _render("coreweave-dns.yaml", hostname=_scalar(t.dns.hostname),
                            target=_scalar(t.dns.target),
                            zone_id=_scalar(t.dns.zone_id) if t.dns.zone_id else "\x01",
                            api_token=_scalar(t.dns.api_token) if t.dns.api_token else "\x01")
        dns_block = "".join(line for line in dns_block.splitlines(keepends=True)
                            if "\x01" not in line).rstrip("\n")   # omitted: from [defaults]
    gpus = gpu.gpus
    size = rack_size(t.gpu_pool.instance_type)
    racks = f"{t.gpu_pool.nodes // size} NVL72 racks = " if size else ""
    summary = (f"{racks}{t.gpu_pool.nodes} × {t.gpu_pool.instance_type} ({gpus} × {gpu.gpu_model or 'GPU'} "
               f"each, {gpus * t.gpu_pool.nodes} GPUs)")
    summary += f" and {cpu_pool.nodes} × {cpu_pool.instance_type}"
    return _render("coreweave.yaml", name=t.name, name_scalar=_scalar(t.name), schema_path=schema_path,
                   project_dir=project_dir, gpu_summary=summary,
                   label_prefix=_scalar(t.label_prefix or _label_prefix(t.name)),
                   region=_scalar(t.region), kube_context=_scalar(t.kube_context or f"{cks}_{t.region}"),
                   namespace=t.namespace, cluster_queue=f"{t.namespace}-cq",
                   pool=_scalar(_pool_name(t.gpu_pool.instance_type, gpu.gpu_model, "gpu")),
                   cpu=gpu.cpu, ram=_scalar(gpu.ram), disk=_scalar(gpu.disk),
                   gpu_model=_scalar(gpu.gpu_model or "GPU"), gpus=gpus, nodes=t.gpu_pool.nodes,
                   instance_type=_scalar(t.gpu_pool.instance_type), cpu_pool_block=cpu_block,
                   cks_cluster=_scalar(cks),
                   flavor_topology=_flavor_topology(t.gpu_pool.instance_type),
                   acme_email=_scalar(t.acme_email), allow_sources=", ".join(map(_scalar, t.allow_sources)),
                   dns_block=dns_block)


def _flavor_topology(instance_type: str) -> str:
    """The Topology a new cluster's GPU flavor binds: ``multinode-nvlink-ib`` for an NVL72 type,
    ``infiniband`` for a type whose name says InfiniBand (:func:`clusterstack.derive.says_infiniband`),
    else ``hostname``: TAS lists only nodes carrying every level label (kueue v0.14.4
    pkg/cache/scheduler/tas_flavor.go L107-113), and only every node's ``kubernetes.io/hostname``
    is certain for the others — under ``infiniband`` nodes without fabric labels would admit no
    GPU job. A lab whose nodes carry them sets ``infiniband`` (validate's note says how to check)."""
    if is_rack_scale(instance_type):
        return "multinode-nvlink-ib"
    return "infiniband" if says_infiniband(instance_type) else HOSTNAME_TOPOLOGY


def render_stack(name: str) -> str:
    """The text of ``<project_dir>/Pulumi.<name>.yaml``: only the pointer to the cluster."""
    return _render("stack.yaml", name=_scalar(name))


@dataclass
class Plan:
    """The files a scaffold writes: path → text (``append`` paths get text appended)."""

    root: Path
    files: dict[Path, str] = field(default_factory=dict)
    append: dict[Path, str] = field(default_factory=dict)

    def relative(self, p: Path) -> str:
        return str(p.relative_to(self.root))

    @property
    def journal(self) -> Path:
        return self.root / JOURNAL

    def interrupted(self) -> set[Path]:
        """The files an interrupted scaffold (its :data:`JOURNAL` left behind) wrote and nobody
        changed since: same path, same SHA-256 as journaled. They are this tool's own
        half-finished work, so a new run may write them again. Empty without a journal; a
        journal that cannot be read is ignored (every existing file then counts as a clash)."""
        if not self.journal.is_file():
            return set()
        try:
            doc = json_loads(read_text(self.journal))
            files = doc["files"] if isinstance(doc, dict) and doc.get("format") == JOURNAL_FORMAT else {}
        except (ClusterstackError, ValueError, KeyError, TypeError, RecursionError):
            return set()
        ours = set()
        for rel, digest in files.items() if isinstance(files, dict) else ():
            p = self.root / str(rel)
            if p.is_file() and not p.is_symlink() and _sha256(p.read_bytes()) == digest:
                ours.add(p)
        return ours

    def check_new(self) -> None:
        """Raises ConfigError (exit 2) listing every file that already exists — except the
        files an interrupted run of a scaffold wrote and nobody changed (:meth:`interrupted`)."""
        ours = self.interrupted()
        clash = [p for p in self.files if (p.exists() or p.is_symlink()) and p not in ours]
        if clash:
            raise ConfigError(problems=[Problem("already exists; clusterstack never overwrites a file",
                                                "move it away, or edit it by hand",
                                                file=p) for p in clash])

    def write(self) -> list[str]:
        """Write every file (directories created, each file atomically); returns the relative
        paths written, in order. Raises ClusterstackError (exit 2) on a filesystem error.

        A transaction that survives a kill: the journal (:data:`JOURNAL`: each file's path and
        SHA-256) is written first and removed last, so a run killed half-way leaves files the
        next run recognises as its own (:meth:`interrupted`) and writes again, instead of a
        half workspace that refuses every re-run. Test points (fsutil.testpoint):
        ``scaffold:journal-written``, ``scaffold:file-written`` (after the first file)."""
        ours = self.interrupted()
        self.check_new()
        done: list[str] = []
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(self.journal, json.dumps({
            "format": JOURNAL_FORMAT,
            "files": {self.relative(p): _sha256(text.encode("utf-8")) for p, text in self.files.items()},
        }, indent=2, sort_keys=True) + "\n")
        testpoint("scaffold:journal-written")
        for p, text in self.files.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            if p in ours:   # written by the interrupted run: written again (same or new options)
                write_atomic(p, text, mode=0o644)
            else:
                try:   # created exclusively: a file that appeared since check_new is kept
                    write_atomic(p, text, mode=0o644, exclusive=True)
                except FileExistsError:
                    raise ConfigError("already exists (created while scaffolding); clusterstack never "
                                      "overwrites a file", "move it away, or edit it by hand"
                                      + (f"; written so far: {', '.join(done)}" if done else ""),
                                      file=p) from None
            done.append(self.relative(p))
            testpoint("scaffold:file-written")
        for p, text in self.append.items():
            old = p.read_text(encoding="utf-8") if p.exists() else ""
            sep = "" if not old or old.endswith("\n") else "\n"
            write_atomic(p, old + sep + text)
            done.append(self.relative(p))
        self.journal.unlink(missing_ok=True)
        return done


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _gitignore_addition(path: Path) -> str:
    have = set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()
    missing = [e for e in GITIGNORE_ENTRIES if e not in have and e.lstrip("/") not in have]
    if not missing:
        return ""
    return "# clusterstack: local Pulumi state, Python caches, the local IAM keyset, edit locks, " \
        "diff --base's plan cache, the virtualenv, temporary files\n" + \
        "".join(f"{e}\n" for e in missing)


def _schemas(root: Path) -> dict[Path, str]:
    return {root / SCHEMA_DIR / "cluster.json": schema_text("cluster")}


def check_cluster(t: ClusterTemplate, text: str, defaults: dict | None = None) -> None:
    """Run the cluster loader and every derivation ``validate`` runs on ``text`` (the file
    rendered for ``t``). Raises ConfigError naming each field the options got wrong."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{t.name}.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            loaded = load_cluster_file(path, t.name, defaults=defaults or {})
            derive_all(loaded.config)
        except ConfigError as exc:
            problems = exc.problems
        except FieldError as fe:
            problems = [Problem(fe.message, fe.hint, field=".".join(map(str, fe.path)))]
        else:
            return
    raise ConfigError(problems=[Problem(f"{p.field + ': ' if p.field else ''}{p.message}",
                                        f"{p.hint} (set by this command's options)")
                                for p in problems])


#: The lab-wide values ``init`` writes to ``[defaults]`` (so ``cluster new`` needs no option for
#: them), in the order written: ``[defaults]`` key → the option that gives it.
LAB_WIDE = {"acme_email": "--acme-email", "federation_allow_sources": "--allow-source",
            "dns_zone_id": "--dns-zone-id", "dns_api_token": "--dns-token"}


def _defaults_block(defaults: Mapping[str, object]) -> str:
    """The ``[defaults]`` table of ``clusterstack.toml``: the lab-wide values given to ``init``
    (:data:`LAB_WIDE`), else the commented example of the template."""
    if not defaults:
        return _drop_omitted(template_text("defaults-commented.toml")).rstrip("\n")
    lines = ["[defaults]", "# Values the lab shares across clusters (given to `clusterstack init`); a cluster",
             "# file may omit them, and `clusterstack cluster new` needs no option for them."]
    for key in LAB_WIDE:
        value = defaults.get(key)
        if isinstance(value, (list, tuple)):
            lines.append(f"{key} = [{', '.join(_toml_string(str(v)) for v in value)}]")
        elif value is not None:
            lines.append(f"{key} = {_toml_string(str(value))}")
    return "\n".join(lines)


def init_plan(root: Path, *, project_name: str, clusters_dir: str = "clusters",
              project_dir: str = "infra", virtualenv: str = "../.venv",
              cluster: ClusterTemplate | None = None, defaults: Mapping[str, object] | None = None,
              ci: Mapping[str, str] | None = None) -> Plan:
    """Every file ``clusterstack init`` writes in ``root``: ``clusterstack.toml`` (with the
    lab-wide ``defaults``, :data:`LAB_WIDE`, as its ``[defaults]``), the cluster project
    (``<project_dir>/Pulumi.yaml``, ``__main__.py``), the editor schemas, the ``.gitignore``
    entries, with ``ci`` the GitHub workflows (:func:`ci_files`) and, with ``cluster``, its
    file and stack file. Raises ConfigError for a ``cluster`` whose options do not validate."""
    root = root.resolve()
    plan = Plan(root)
    plan.files[root / WORKSPACE_FILE] = _render(
        "clusterstack.toml", defaults_block=_defaults_block(defaults or {}),
        **{k: _toml_string(v) for k, v in (
            ("project_name", project_name), ("clusters_dir", clusters_dir), ("project_dir", project_dir))})
    plan.files[root / project_dir / "Pulumi.yaml"] = _render(
        "Pulumi.yaml", project_name=_scalar(project_name), virtualenv=_scalar(virtualenv),
        description=_scalar(f"One stack per reviewed cluster config ({clusters_dir}/<cluster>.yaml)."))
    plan.files[root / project_dir / "__main__.py"] = template_text("__main__.py")
    plan.files.update(_schemas(root))
    if ci is not None:
        plan.files.update(ci_files(root, **ci))
    if cluster is not None:
        _add_cluster(plan, root, cluster, clusters_dir=clusters_dir, project_dir=project_dir,
                     defaults=dict(defaults or {}))
    gi = root / ".gitignore"
    addition = _gitignore_addition(gi)
    if addition:
        plan.append[gi] = addition
    return plan


def _add_cluster(plan: Plan, root: Path, t: ClusterTemplate, *, clusters_dir: str,
                 project_dir: str, defaults: dict | None = None) -> None:
    depth = len(Path(clusters_dir).parts)
    text = render_cluster(t, project_dir=project_dir,
                          schema_path="/".join([".."] * depth + [SCHEMA_DIR, "cluster.json"]))
    check_cluster(t, text, defaults)
    plan.files[root / clusters_dir / f"{t.name}.yaml"] = text
    plan.files[root / project_dir / f"Pulumi.{t.name}.yaml"] = render_stack(t.name)


def cluster_plan(workspace, t: ClusterTemplate) -> Plan:
    """The files ``clusterstack cluster new`` writes in ``workspace``: the cluster file and
    its stack file (and the editor schema when missing)."""
    root = workspace.root
    plan = Plan(root)
    _add_cluster(plan, root, t, clusters_dir=workspace.settings.workspace.clusters_dir,
                 project_dir=workspace.settings.workspace.project_dir,
                 defaults=workspace.defaults.model_dump(exclude_none=True))
    for p, text in _schemas(root).items():
        if not p.exists():
            plan.files[p] = text
    return plan


# --- CI workflows for a lab's own repository --------------------------------------------

#: The GitHub workflows ``init`` writes (``scaffold/templates/ci/``): the same jobs as
#: clusterstack's own ``.github/workflows`` (preview with one PR comment, weekly drift, the
#: post-merge deployment check), installed with pip from :data:`REQUIREMENTS_FILE` instead of a
#: lock file a pip-installed lab does not have.
CI_WORKFLOWS = ("preview", "drift", "deployment-check")
#: The pip requirements file the workflows install clusterstack from.
REQUIREMENTS_FILE = "requirements-clusterstack.txt"


def install_requirement() -> str:
    """How this clusterstack was installed, as one pip requirement line: ``clusterstack @ <url>``
    when pip recorded a remote origin (PEP 610 ``direct_url.json``: a VCS URL at its commit, or
    an archive URL), else ``clusterstack==<version>`` (an index, or a local path CI cannot reach
    — then edit the file)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("clusterstack")
    except metadata.PackageNotFoundError:
        return "clusterstack"

    direct = dist.read_text("direct_url.json")
    try:
        info = json_loads(direct) if direct else None
    except ValueError:      # not JSON (JSONDecodeError is one), or past a limit: no origin known
        info = None
    if isinstance(info, dict):
        url = str(info.get("url", ""))
        vcs = info.get("vcs_info") or {}
        if vcs.get("vcs") == "git" and url.startswith(("https://", "ssh://", "git+")):
            commit = vcs.get("commit_id")
            return f"clusterstack @ git+{url.removeprefix('git+')}" + (f"@{commit}" if commit else "")
        if url.startswith("https://"):
            return f"clusterstack @ {url}"
    return f"clusterstack=={dist.version}"


def ci_settings(requirement: str | None = None) -> dict[str, str]:
    """The values the workflows are written with, from this environment: the pip
    ``requirement`` (default :func:`install_requirement`), the Python ``major.minor`` and the
    installed pulumi SDK's version (the Pulumi CLI the workflows install: the CLI and the SDK
    are released together)."""
    import sys
    from importlib import metadata

    return {"requirement": requirement or install_requirement(),
            "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
            "pulumi_version": metadata.version("pulumi")}


def ci_files(root: Path, *, requirement: str, python_version: str, pulumi_version: str,
             clusters_dir: str = "clusters", project_dir: str = "infra") -> dict[Path, str]:
    """``.github/workflows/<name>.yaml`` for each of :data:`CI_WORKFLOWS` and the
    requirements file they install from, relative to ``root`` (GitHub reads workflows at the
    repository's top: init the workspace there)."""
    values = {"@REQUIREMENTS@": REQUIREMENTS_FILE, "@PYTHON_VERSION@": python_version,
              "@PULUMI_VERSION@": pulumi_version, "@CLUSTERS_DIR@": clusters_dir,
              "@PROJECT_DIR@": project_dir}
    out: dict[Path, str] = {}
    for name in CI_WORKFLOWS:
        text = template_text(f"ci/{name}.yaml")
        for token, value in values.items():
            text = text.replace(token, value)
        out[root / ".github" / "workflows" / f"{name}.yaml"] = text
    out[root / REQUIREMENTS_FILE] = (
        "# clusterstack for this repository's CI workflows (.github/workflows) and its operators:\n"
        f"#   python -m pip install -r {REQUIREMENTS_FILE}\n"
        "# Written by `clusterstack init` from how clusterstack was installed; pin what you review.\n"
        f"{requirement}\n")
    return out



# --- [iam] in clusterstack.toml (`clusterstack iam init`) --------------------------------

#: The commented ``[iam]`` block of the ``init`` template, replaced in place by the real table.
_IAM_COMMENTED = re.compile(r"^# \[iam\]\n(?:#.*\n)*", re.MULTILINE)


def with_iam_table(text: str, *, file: str, stack: str | None) -> str:
    """``clusterstack.toml`` text with ``[iam] file`` and ``stack`` (None: the file only) set, so the IAM file
    ``iam init`` creates is applied by a stack and the workspace stays valid (``validate``
    refuses an IAM file no stack applies). An existing ``[iam]`` table gets the missing keys
    after its header (a key it has is kept: ``iam init`` never changes a reviewed choice); else
    the template's commented ``[iam]`` block is replaced, or the table appended. Comments and
    every other line are kept byte for byte. Raises ConfigError when the result would not be
    TOML with those values (a hand-edited file this cannot edit safely)."""
    import tomllib

    have = tomllib.loads(text).get("iam")
    wanted = {"file": file, **({"stack": stack} if stack is not None else {})}
    if isinstance(have, dict):
        lines = [f"{k} = {_toml_string(v)}" for k, v in wanted.items() if k not in have]
        if not lines:
            return text
        m = re.search(r"^\[iam\][ \t]*(#.*)?$\n?", text, re.MULTILINE)
        if m is None:
            raise ConfigError("[iam] is not a table header this command can edit (an inline table?)",
                              f"add {' and '.join(lines)} under [iam] by hand", file=Path(WORKSPACE_FILE))
        out = text[:m.end()] + ("" if m.group(0).endswith("\n") else "\n") + "".join(f"{ln}\n" for ln in lines) \
            + text[m.end():]
    else:
        table = ("[iam]\n# The reviewed IAM file and the ONE GCP stack that applies it (docs/iam.md).\n"
                 + "".join(f"{k} = {_toml_string(v)}\n" for k, v in wanted.items()))
        m = _IAM_COMMENTED.search(text)
        if m is not None:
            out = text[:m.start()] + table + text[m.end():]
        else:
            out = text + ("" if text.endswith("\n") or not text else "\n") + "\n" + table
    parsed = tomllib.loads(out).get("iam", {})
    if any(parsed.get(k) != (have or {}).get(k, v) for k, v in wanted.items()):
        raise ConfigError("could not add [iam] file and stack to clusterstack.toml safely",
                          "add " + " and ".join(f"{k} = {_toml_string(v)}" for k, v in wanted.items())
                          + " under [iam]", file=Path(WORKSPACE_FILE))
    return out


# --- a service (`clusterstack service new`) ------------------------------------------------

@dataclass(frozen=True)
class CloudRunTemplate:
    """A Cloud Run service project (:mod:`clusterstack.programs.cloudrun`) and its
    ``services.yaml`` entry (kind ``cloud-run``; docs/deploying-services.md)."""

    name: str
    project: str
    project_number: str
    region: str
    image: str
    runtime_account: str
    stack: str = "prod"
    iap_access: tuple[str, ...] = ()


def service_plan(workspace, t: CloudRunTemplate) -> Plan:
    """The files ``clusterstack service new`` writes: ``services/<name>/Pulumi.yaml``,
    ``__main__.py`` (the Cloud Run program), ``Pulumi.<stack>.yaml`` (the reviewed stack config)
    and the entry appended to ``services.yaml`` (created when missing). Raises ConfigError when
    the registry would not load with the entry (``clusterstack validate`` would refuse it) or
    already names the service."""
    root = workspace.root
    plan = Plan(root)
    project_dir = f"services/{t.name}"
    # ../../.venv: the environment init's project uses (infra/Pulumi.yaml's ../.venv), from here
    plan.files[root / project_dir / "Pulumi.yaml"] = _render(
        "Pulumi.yaml", project_name=_scalar(t.name), virtualenv=_scalar("../../.venv"),
        description=_scalar(f"{t.name}: a Cloud Run service (services.yaml; docs/deploying-services.md)."))
    plan.files[root / project_dir / "__main__.py"] = template_text("service-cloudrun.py")
    access = "".join(f"\n    - {_scalar(a)}" for a in t.iap_access) or " []"
    plan.files[root / project_dir / f"Pulumi.{t.stack}.yaml"] = _render(
        "service-stack.yaml", name=t.name, stack=t.stack, project=_scalar(t.project),
        project_number=_scalar(t.project_number), region=_scalar(t.region), image=_scalar(t.image),
        runtime_account=_scalar(t.runtime_account), iap_access=access)
    registry = root / REGISTRY_FILE
    entry = _render("service-entry.yaml", name=t.name, project_dir=_scalar(project_dir),
                    stack=_scalar(t.stack), project=_scalar(t.project), region=_scalar(t.region),
                    service=_scalar(t.name))
    old = registry.read_text(encoding="utf-8") if registry.exists() else ""
    if old.strip():
        text = old + ("" if old.endswith("\n") else "\n") + entry
        plan.append[registry] = ("" if old.endswith("\n") else "\n") + entry
    else:
        text = template_text("services-header.yaml") + entry
        plan.files[registry] = text
    existing = (Document.parse(old, registry, format="yaml").data or {}) if old.strip() else {}
    if isinstance(existing, dict) and t.name in (existing.get("services") or {}):
        raise ConfigError(f"service {t.name!r} is already registered", "pick another name", file=registry)
    data = Document.parse(text, registry, format="yaml").data or {}
    try:
        model = RegistryFile.model_validate(data)
    except Exception:   # pydantic's ValidationError: the file's own problem, `validate` locates it
        raise ConfigError(f"{REGISTRY_FILE} would not load with the new entry",
                          f"fix {REGISTRY_FILE} first (`clusterstack validate` names the problem)",
                          file=registry) from None
    if t.name not in model.services:
        raise ConfigError(f"{REGISTRY_FILE}: the entry could not be appended (its services: mapping is "
                          "not the file's last key)", f"add the entry for {t.name} under services: by hand",
                          file=registry)
    return plan
