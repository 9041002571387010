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

from clusterstack.errors import ClusterstackError, ConfigError, Problem
from clusterstack.fsutil import write_atomic

WORKSPACE_FILE = "clusterstack.toml"
#: Entries ``init`` makes sure ``.gitignore`` has: the local file:// state backend, Python
#: caches, and the local IAM keyset (docs/iam.md).
# the advisory lock files of reviewed-file edits (fsutil.locked: `.iam.yaml.lock`, stack files'
# `.Pulumi.<stack>.yaml.lock`), left beside the file on purpose — untracked, they would make
# every tree dirty for `up`; and `diff --base`'s plan cache, written under the workspace root
# (plan/at_ref.py CACHE_DIR) — so the root's own .gitignore covers it wherever the root is
GITIGNORE_ENTRIES = (".pulumi-state/", "__pycache__/", "/.iam/", ".*.yaml.lock", "/.clusterstack-cache/")
#: Where ``init`` writes the JSON Schemas the scaffolded YAML files point their
#: ``yaml-language-server`` modeline at (regenerate with ``clusterstack schema``).
SCHEMA_DIR = ".clusterstack/schemas"


@dataclass(frozen=True)
class NodeShape:
    """What one node of an instance type offers: vCPUs, RAM and local disk in the scheduler's
    size syntax (``512GB``, ``6.98TiB``), and its GPUs (0 for a CPU type)."""

    cpu: int
    ram: str
    disk: str
    gpus: int = 0
    gpu_model: str | None = None


#: Per-node figures of the CoreWeave instance types Marin runs, as its reviewed configs state
#: them (../shared/reference/marin/lib/iris/config/cw-us-west-04a.yaml scale_groups
#: cpu-erapids and h100-8x; cw-us-east-08a.yaml gb200). Any other type: pass the figures
#: (``--node-cpu``, ``--node-ram``, ``--node-disk``, ``--gpus``, ``--gpu-model``).
KNOWN_SHAPES: dict[str, NodeShape] = {
    "cd-gp-i64-erapids": NodeShape(cpu=64, ram="512GB", disk="6.98TiB"),
    "gd-8xh100ib-i128": NodeShape(cpu=128, ram="2048GB", disk="27.94TiB", gpus=8, gpu_model="H100"),
    "gb200-4x": NodeShape(cpu=144, ram="960GB", disk="13.97TiB", gpus=4, gpu_model="GB200"),
}


@dataclass(frozen=True)
class Pool:
    """One scale group of a template: its instance type, a pinned node count (buffer_slices =
    max_slices = nodes) and the per-node figures (None: taken from :data:`KNOWN_SHAPES`)."""

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


@dataclass(frozen=True)
class Dns:
    """``provisioning.coreweave.federation_dns``: a Cloudflare CNAME ``hostname`` → ``target``
    (``<host>.<org id>-<CKS cluster>.coreweave.app``). ``zone_id``/``api_token`` None: from
    ``[defaults]`` (``dns_zone_id``, ``dns_api_token``)."""

    hostname: str
    target: str
    zone_id: str | None = None
    api_token: str | None = None


@dataclass(frozen=True)
class CoreweaveTemplate:
    """A CoreWeave cluster: one GPU pool, an optional CPU pool, optional federation DNS."""

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
class GcpTemplate:
    """A GCP project stack: its static addresses (new or pinned)."""

    name: str
    project: str
    addresses: tuple[Address, ...] = ()
    label_prefix: str | None = None
    provider = "gcp"


ClusterTemplate = CoreweaveTemplate | GcpTemplate


def template_text(name: str) -> str:
    """The shipped template ``scaffold/templates/<name>``."""
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def _render(template: str, **values: object) -> str:
    text = Template(template_text(template)).substitute({k: str(v) for k, v in values.items()})
    return text.replace("\x00\n", "")   # an empty optional block leaves no blank line


def _scalar(value: str) -> str:
    """``value`` as ONE YAML double-quoted scalar, written by ruamel.yaml's emitter (so a ``,``,
    ``#``, newline, ``: `` or a character YAML must escape stays inside the value and reads
    back equal)."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_style = '"'
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
        return _render("gcp.yaml", name=t.name, name_scalar=_scalar(t.name), project=t.project,
                       project_scalar=_scalar(t.project), project_dir=project_dir,
                       label_prefix=_scalar(t.label_prefix or _label_prefix(t.name)),
                       addresses_block=block or " []", schema_path=schema_path)
    gpu, missing = t.gpu_pool.shape("--node-")
    cpu, more = (t.cpu_pool.shape("--cpu-node-") if t.cpu_pool else (None, []))
    missing += more
    if missing:
        raise ConfigError(problems=[Problem(
            f"no per-node figures known for instance type "
            f"{(t.gpu_pool if any(m.startswith('--node-') for m in missing) else t.cpu_pool).instance_type!r}",
            f"pass {', '.join(missing)} (what one node offers, e.g. --node-cpu 128 --node-ram 2048GB "
            f"--node-disk 27.94TiB); known types: {', '.join(sorted(KNOWN_SHAPES))}")])
    assert gpu is not None
    cks = t.cks_cluster or t.name
    from clusterstack.derive import is_rack_scale
    cpu_block = "\x00"
    if t.cpu_pool is not None and cpu is not None:
        cpu_block = _render("coreweave-cpu-pool.yaml", pool="cpu", cpu=cpu.cpu, ram=_scalar(cpu.ram),
                            disk=_scalar(cpu.disk), nodes=t.cpu_pool.nodes, region=_scalar(t.region),
                            instance_type=_scalar(t.cpu_pool.instance_type)).rstrip("\n")
    dns_block = "\x00"
    if t.dns is not None:
        dns_block = _render("coreweave-dns.yaml", hostname=_scalar(t.dns.hostname),
                            target=_scalar(t.dns.target),
                            zone_id=_scalar(t.dns.zone_id) if t.dns.zone_id else "\x01",
                            api_token=_scalar(t.dns.api_token) if t.dns.api_token else "\x01")
        dns_block = "".join(line for line in dns_block.splitlines(keepends=True)
                            if "\x01" not in line).rstrip("\n")   # omitted: from [defaults]
    gpus = gpu.gpus
    summary = (f"{t.gpu_pool.nodes} × {t.gpu_pool.instance_type} ({gpus} × {gpu.gpu_model or 'GPU'} each, "
               f"{gpus * t.gpu_pool.nodes} GPUs)")
    if t.cpu_pool is not None:
        summary += f" and {t.cpu_pool.nodes} × {t.cpu_pool.instance_type}"
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
                   flavor_topology=("multinode-nvlink-ib" if is_rack_scale(t.gpu_pool.instance_type)
                                    else "infiniband"),
                   acme_email=_scalar(t.acme_email), allow_sources=", ".join(map(_scalar, t.allow_sources)),
                   dns_block=dns_block)


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

    def check_new(self) -> None:
        """Raises ConfigError (exit 2) listing every file that already exists."""
        clash = [p for p in self.files if p.exists()]
        if clash:
            raise ConfigError(problems=[Problem("already exists; clusterstack never overwrites a file",
                                                "move it away, or edit it by hand",
                                                file=p) for p in clash])

    def write(self) -> list[str]:
        """Write every file (directories created, each file atomically); returns the relative
        paths written, in order. Raises ClusterstackError (exit 2) on a filesystem error."""
        self.check_new()
        done: list[str] = []
        try:
            for p, text in self.files.items():
                p.parent.mkdir(parents=True, exist_ok=True)
                try:   # created exclusively: a file that appeared since check_new is kept
                    write_atomic(p, text, mode=0o644, exclusive=True)
                except FileExistsError:
                    raise ConfigError("already exists (created while scaffolding); clusterstack never "
                                      "overwrites a file", "move it away, or edit it by hand"
                                      + (f"; written so far: {', '.join(done)}" if done else ""),
                                      file=p) from None
                done.append(self.relative(p))
            for p, text in self.append.items():
                old = p.read_text(encoding="utf-8") if p.exists() else ""
                sep = "" if not old or old.endswith("\n") else "\n"
                write_atomic(p, old + sep + text)
                done.append(self.relative(p))
        except OSError as exc:
            raise ClusterstackError(f"cannot write: {exc.strerror}", "check the directory's permissions",
                                    file=Path(exc.filename) if exc.filename else None) from None
        return done


def _gitignore_addition(path: Path) -> str:
    have = set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()
    missing = [e for e in GITIGNORE_ENTRIES if e not in have and e.lstrip("/") not in have]
    if not missing:
        return ""
    return "# clusterstack: local Pulumi state, Python caches, the local IAM keyset, edit locks, " \
        "diff --base's plan cache\n" + \
        "".join(f"{e}\n" for e in missing)


def _schemas(root: Path) -> dict[Path, str]:
    from clusterstack.schemas import schema_text

    return {root / SCHEMA_DIR / "cluster.json": schema_text("cluster")}


def check_cluster(t: ClusterTemplate, text: str, defaults: dict | None = None) -> None:
    """Run the cluster loader and every derivation ``validate`` runs on ``text`` (the file
    rendered for ``t``). Raises ConfigError naming each field the options got wrong."""
    from clusterstack.config.clusters import load_cluster_file
    from clusterstack.validation.clusters import derive_all
    from clusterstack.errors import FieldError

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


def init_plan(root: Path, *, project_name: str, clusters_dir: str = "clusters",
              project_dir: str = "infra", virtualenv: str = "../.venv",
              cluster: ClusterTemplate | None = None) -> Plan:
    """Every file ``clusterstack init`` writes in ``root``: ``clusterstack.toml``, the cluster
    project (``<project_dir>/Pulumi.yaml``, ``__main__.py``), the editor schemas, the
    ``.gitignore`` entries and, with ``cluster``, its file and stack file. Raises ConfigError
    for a ``cluster`` whose options do not validate."""
    root = root.resolve()
    plan = Plan(root)
    plan.files[root / WORKSPACE_FILE] = _render(
        "clusterstack.toml", **{k: _toml_string(v) for k, v in (
            ("project_name", project_name), ("clusters_dir", clusters_dir), ("project_dir", project_dir))})
    plan.files[root / project_dir / "Pulumi.yaml"] = _render(
        "Pulumi.yaml", project_name=_scalar(project_name), virtualenv=_scalar(virtualenv),
        description=_scalar(f"One stack per reviewed cluster config ({clusters_dir}/<cluster>.yaml)."))
    plan.files[root / project_dir / "__main__.py"] = template_text("__main__.py")
    plan.files.update(_schemas(root))
    if cluster is not None:
        _add_cluster(plan, root, cluster, clusters_dir=clusters_dir, project_dir=project_dir)
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
