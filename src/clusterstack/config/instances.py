"""CoreWeave's published catalogue, as far as a reviewed config depends on it: the known
instance types (what one node of each offers) and the Availability Zones. ONE table of each,
used by ``init``/``cluster new`` (per-node figures of a known type), ``validate`` (a config
that contradicts its type is refused at its line), the derivations (rack size of NVL72 types,
hence the NodePool's ``targetRacks`` and the Kueue quota) and ``inventory``.

Entry point: :func:`instance_type` ``(name) -> InstanceType | None``. A name the table lacks is
no error: a lab may run a type published after this table, and its config's own figures are
then taken as they are (``validate`` says so). Other per-type facts (a price per instance type) sit beside this table keyed by the same :attr:`InstanceType.name`, not in a second
table of types.

Sources, each read on :data:`CATALOGUE_READ` (2026-12-02) through the search tool's stored
copies (docs and pages corpora) — CoreWeave's own instance-spec pages
(``docs.coreweave.com/platform/instances/gpu-instances`` and ``…/cpu-instances``) are not among
them, so every figure names the page it was read from:

- ``[pricing]`` https://www.coreweave.com/pricing, per-instance "included" figures (GPUs, vCPUs,
  RAM, local storage), as transcribed on 2026-09-20 by api-evangelist/coreweave
  ``plans/coreweave-plans-pricing.yml`` ("every price_text was found verbatim in the fetched
  page text");
- ``[gb200]`` https://docs.coreweave.com/docs/platform/instances/gb200 — "GB200 NVL72-powered
  instances must be deployed as full racks of 18 Nodes … targetNodes must be a multiple of 18";
  ``instanceType: gb200-4x``;
- ``[specs]`` the GPU and CPU instance pages as transcribed on 2026-10-04 into a public
  instance table (a TypeScript ``INSTANCE_TYPES`` table in a public GitHub repository, found
  through the search tool's code index, whose header reads "Specs come from the instance pages
  (https://docs.coreweave.com/platform/instances/gpu-instances and /cpu-instances)"), used
  where neither page above states a figure;
- ``[marin]`` Marin's reviewed configs, whose comments state the hardware
  (marin-community/marin ``lib/iris/config/cw-us-west-04a.yaml``@0379ee52: "cd-gp-i64-erapids:
  64 vCPUs … 512 GB on-node RAM … 7.68 TB local NVMe", gd-8xh100ib-i128 "30.72 TB local NVMe
  (8x 3.84 TB)"; ``cw-us-east-02a.yaml``@004f4a55: "cd-gp-a192-genoa: 192 vCPUs … 1.5 TB …
  7.68 TB local NVMe"; ``cw-us-east-08a.yaml``@0234a407: "gb200-4x: 144 vCPUs (2x NVIDIA Grace)
  … 960 GB system (LPDDR5X) RAM"), as a second witness.

Where two sources disagree the larger figure is kept, because the table bounds what a config
may declare (a config may give less — what the node has allocatable — never more): gb200-4x
local storage is 30.72 TB on [pricing] and 15.36 TB ("4x 3.84 TB") in [marin] and [specs].
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal

#: When the catalogue below was read (ISO date).
CATALOGUE_READ = "2026-12-02"

_BYTES = {"TB": 10**12, "GB": 10**9}


@dataclass(frozen=True)
class InstanceType:
    """What one node of a CoreWeave instance type offers.

    ``name`` is the NodePool's ``spec.instanceType``; ``vcpus`` a count; ``ram`` and ``disk``
    (local NVMe) sizes as CoreWeave states them, in the scheduler's size syntax (``2048GB``,
    ``30.72TB``: decimal units); ``gpus`` the ``nvidia.com/gpu`` devices per node (0 for CPU
    types) and ``gpu_model`` their model as a scale group's ``resources.device_variant`` names
    it (``H100``, ``B200``, ``GB200``); ``rack_size`` the nodes of one NVL72 rack for
    rack-scale types (deployed in whole racks, no autoscaling), else None; ``source`` the
    pages the figures come from (module docstring)."""

    name: str
    vcpus: int
    ram: str
    disk: str
    gpus: int
    gpu_model: str | None
    rack_size: int | None
    source: str

    @property
    def ram_bytes(self) -> int:
        return _size(self.ram)

    @property
    def disk_bytes(self) -> int:
        return _size(self.disk)

    @property
    def rack_scale(self) -> bool:
        return self.rack_size is not None

    @property
    def rack_gpus(self) -> int | None:
        """GPUs of one rack (72 for an NVL72 rack of 18 four-GPU nodes), or None."""
        return self.rack_size * self.gpus if self.rack_size is not None else None

    def is_model(self, variant: str) -> bool:
        """True when a ``device_variant`` names this type's GPU model (case, ``NVIDIA `` and
        ``-``/``_``/space ignored: ``h100``, ``NVIDIA H100`` and ``H100`` are one model)."""
        return self.gpu_model is not None and gpu_model_key(variant) == gpu_model_key(self.gpu_model)


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(TB|GB)", text)
    assert m, text
    return int(Decimal(m[1]) * _BYTES[m[2]])


def gpu_model_key(variant: str) -> str:
    """A GPU model name reduced for comparison (``NVIDIA H100-SXM`` → ``H100SXM``)."""
    return re.sub(r"[\s_-]", "", variant.upper().removeprefix("NVIDIA").strip())


_PRICING = "https://www.coreweave.com/pricing (as of 2026-09-20)"
_GB200 = "https://docs.coreweave.com/docs/platform/instances/gb200"
_SPECS = "docs.coreweave.com/platform/instances/gpu-instances and /cpu-instances (as of 2026-10-04)"
_MARIN = "marin-community/marin lib/iris/config"

#: nodes per NVL72 rack: 72 GPUs / 4 per node ([gb200]: "full racks of 18 Nodes").
NVL72_RACK_NODES = 18
#: The extended resource of an instance type's GPUs on its nodes and in Kueue quotas (NVIDIA
#: device plugin, "nvidia.com/gpu"); ``InstanceType.gpus`` counts these.
GPU_RESOURCE = "nvidia.com/gpu"

_TABLE: tuple[InstanceType, ...] = (
    # GPU, 8 per node (HGX)
    InstanceType("gd-8xh100ib-i128", 128, "2048GB", "30.72TB", 8, "H100", None,
                 f"GPUs: {_PRICING}; vCPUs, RAM, disk: {_MARIN}/cw-us-west-04a.yaml@0379ee52, {_SPECS}"),
    InstanceType("gd-8xh200ib-i128", 128, "2048GB", "30.72TB", 8, "H200", None, _SPECS),
    InstanceType("b200-8x", 128, "2048GB", "30.72TB", 8, "B200", None,
                 f"GPUs, vCPUs, RAM: {_PRICING}; disk: {_SPECS}"),
    InstanceType("b300-8x", 192, "4096GB", "30.72TB", 8, "B300", None, _SPECS),
    InstanceType("gd-8xa100-i128", 128, "2048GB", "7.68TB", 8, "A100", None, _SPECS),
    InstanceType("gd-8xl40s-i128", 128, "1024GB", "7.68TB", 8, "L40S", None, _SPECS),
    InstanceType("gd-8xl40-i128", 128, "1024GB", "7.68TB", 8, "L40", None, _SPECS),
    InstanceType("rtxp6000-8x", 128, "1024GB", "7.68TB", 8, "RTX-PRO-6000", None, _SPECS),
    InstanceType("gd-1xgh200", 72, "480GB", "7.68TB", 1, "GH200", None, _SPECS),
    # GPU, rack-scale NVL72 (4 per node, 18 nodes per rack)
    InstanceType("gb200-4x", 144, "960GB", "30.72TB", 4, "GB200", NVL72_RACK_NODES,
                 f"GPUs, vCPUs, RAM, disk: {_PRICING}; whole racks of 18: {_GB200}; "
                 f"{_MARIN}/cw-us-east-08a.yaml@0234a407 and {_SPECS} give 15.36 TB of disk"),
    InstanceType("gb300-4x", 144, "960GB", "30.72TB", 4, "GB300", NVL72_RACK_NODES, _SPECS),
    # CPU
    InstanceType("cd-gp-i64-erapids", 64, "512GB", "7.68TB", 0, None, None,
                 f"{_MARIN}/cw-us-west-04a.yaml@0379ee52, {_SPECS}"),
    InstanceType("cd-gp-a192-genoa", 192, "1536GB", "7.68TB", 0, None, None,
                 f"{_MARIN}/cw-us-east-02a.yaml@004f4a55, {_SPECS}"),
    InstanceType("cd-gp-l-a192-genoa", 192, "1536GB", "30.72TB", 0, None, None, _SPECS),
    InstanceType("cd-hp-a96-genoa", 96, "768GB", "7.68TB", 0, None, None, _SPECS),
    InstanceType("cd-hc-a384-genoa", 384, "1536GB", "30.72TB", 0, None, None, _SPECS),
    InstanceType("cd-gp-i96-icelake", 96, "384GB", "6.4TB", 0, None, None, _SPECS),
    InstanceType("turin-gp", 192, "1536GB", "7.68TB", 0, None, None, _SPECS),
    InstanceType("turin-gp-l", 192, "1536GB", "30.72TB", 0, None, None, _SPECS),
)

INSTANCE_TYPES: dict[str, InstanceType] = {t.name: t for t in _TABLE}
"""Every known instance type by name (read-only by convention; :func:`instance_type`)."""


def instance_type(name: str) -> InstanceType | None:
    """The known instance type ``name`` (exact, as a NodePool's ``spec.instanceType``), or None
    for a type this table lacks."""
    return INSTANCE_TYPES.get(name)


# Rack-scale families, for a type the table lacks: GB200/GB300 NVL72 types deploy in whole
# racks and cannot autoscale (CoreWeave "Autoscale Node Pools": no autoscaling for rack-based
# GB200/GB300 types; [gb200]), so a new ``gb300-…`` variant is still sized in racks.
RACK_SCALE_FAMILIES = ("gb200", "gb300")


def rack_size(name: str) -> int | None:
    """Nodes per rack of instance type ``name``: the table's, else
    :data:`NVL72_RACK_NODES` for an unknown type of a :data:`RACK_SCALE_FAMILIES` family, else
    None (not rack-scale)."""
    known = instance_type(name)
    if known is not None:
        return known.rack_size
    return NVL72_RACK_NODES if any(f in name.lower() for f in RACK_SCALE_FAMILIES) else None


def near_instance_types(name: str) -> list[str]:
    """Known type names close to ``name`` (a typo: ``gd-8xh100-i128``), best first."""
    return difflib.get_close_matches(name, list(INSTANCE_TYPES), n=3, cutoff=0.75)


# --- Availability Zones -------------------------------------------------------------------
# CoreWeave "All Availability Zones" (https://docs.coreweave.com/platform/regions/all-availability-zones,
# grouped by Super Region), "Dedicated Access" and "General Access" Regions pages
# (https://docs.coreweave.com/docs/platform/regions/dedicated-access, …/general-access), the
# US-EAST and US-WEST Super Region pages and the "Instance availability matrix"
# (https://docs.coreweave.com/platform/instances/availability-matrix); zones of a section those
# copies cut off: as transcribed on 2026-10-04 with [specs] ("Availability Zones, from
# CoreWeave's region and instance availability pages (2026-10)"). A zone is its Region plus a
# letter (US-EAST-04 → US-EAST-04A); RNO2A, ATL2A, … are zones of the older naming.
COREWEAVE_ZONES: frozenset[str] = frozenset("""
    CA-EAST-01A
    EU-NORTH-01A EU-NORTH-02A EU-NORTH-04A EU-NORTH-05A
    EU-SOUTH-01A EU-SOUTH-03B EU-SOUTH-04A
    EU-WEST-01A EU-WEST-02A
    AUS1A DFW1A SBN1A
    US-CENTRAL-01A US-CENTRAL-02A US-CENTRAL-03A US-CENTRAL-04A US-CENTRAL-05A US-CENTRAL-06A
    US-CENTRAL-07A US-CENTRAL-08A US-CENTRAL-08B US-CENTRAL-09A US-CENTRAL-10A US-CENTRAL-11A
    ATL2A ATL4A RDU1A
    US-EAST-01A US-EAST-02A US-EAST-02B US-EAST-03A US-EAST-04A US-EAST-04B US-EAST-05A
    US-EAST-06A US-EAST-07A US-EAST-08A US-EAST-09A US-EAST-10A US-EAST-11A US-EAST-12A
    US-EAST-13A US-EAST-14A US-EAST-15A US-EAST-17A
    PDX2A RNO2A
    US-WEST-01A US-WEST-02A US-WEST-02B US-WEST-03A US-WEST-04A US-WEST-05A US-WEST-06A
    US-WEST-07A US-WEST-08A US-WEST-09B US-WEST-10A
""".split())


def zone_problem(value: str) -> str | None:
    """None when ``value`` is a CoreWeave Availability Zone of :data:`COREWEAVE_ZONES`, else
    what is wrong, naming the zones meant: a Region (``US-EAST-04``) names its zones
    (``US-EAST-04A``), a near miss its closest zones."""
    if value in COREWEAVE_ZONES:
        return None
    of_region = sorted(z for z in COREWEAVE_ZONES if z[:-1] == value)
    if of_region:
        return (f"{value!r} is a CoreWeave Region, not an Availability Zone; its zone"
                f"{'s' if len(of_region) > 1 else ''}: {', '.join(of_region)}")
    near = difflib.get_close_matches(value.upper(), sorted(COREWEAVE_ZONES), n=3, cutoff=0.8)
    return (f"{value!r} is not a CoreWeave Availability Zone (CoreWeave's list as read on "
            f"{CATALOGUE_READ})" + (f"; did you mean {' or '.join(near)}?" if near else ""))
