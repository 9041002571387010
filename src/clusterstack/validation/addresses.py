"""Static addresses (``provisioning.gcp.addresses``): the rules that need another file or the
engine's preview.

Two rules of Compute Engine, each read 2026-12-02:

- **A regional address serves its region.** A regional static external IP address can be
  assigned only to a VM in the same region (Compute Engine "IP addresses",
  docs.cloud.google.com/vpc/docs/ip-addresses: regional external addresses are used by
  resources in their region; "Configure static external IP addresses",
  cloud.google.com/compute/docs/ip-addresses/configure-static-external-ip-address). An address
  ``attached_to`` a cluster's controller or log relay VM must therefore be in the region of
  that VM's zone — :func:`address_problems`, run by ``validate`` and every command that loads
  the stack (through :mod:`clusterstack.validation.references`).
- **A pinned IP is adopt-only.** A new external address gets its IP from Google's pool;
  ``addresses.insert`` with an explicit external IP succeeds only when the project already
  holds that IP — an ephemeral IP in use that the insert promotes, or a bring-your-own-IP
  prefix ("Reserve a static external IP address",
  docs.cloud.google.com/vpc/docs/reserve-static-external-ip-address: "You can reserve new
  external IP addresses or promote existing ephemeral external IP addresses"; the API's
  ``address`` field of an external address: "may only be specified for INTERNAL address
  types" in the generated provider docs). A pinned address (``address:`` given) is therefore
  imported, never created, unless ``promote: true`` says the IP is such an ephemeral IP now.
  :func:`adoption_problems` reads the engine's preview — the engine alone knows whether the
  address is in the stack's state — and refuses a ``create`` of such an address with the
  ``import`` commands to run (``preview`` and ``up``, :mod:`clusterstack.flows.up`, before
  anything is applied).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clusterstack.config.cluster import ClusterConfig
from clusterstack.config.cluster_file import LoadedCluster
from clusterstack.errors import FieldError, Problem
from clusterstack.pulumi.steps import Step
from clusterstack.pulumi.tokens import ADDRESS, STATIC_ADDRESSES_COMPONENT
from clusterstack.pulumi.urn import child_urn, new_urn

ADDRESSES = ("provisioning", "gcp", "addresses")
_VM = {"controller": "controller", "log_relay": "log relay"}


def zone_region(zone: str) -> str:
    """The region of a Compute Engine zone: the zone without its last ``-<letter>`` part
    (``us-central1-a`` → ``us-central1``; Compute Engine "Regions and zones")."""
    return zone.rsplit("-", 1)[0]


def address_problems(cfg: ClusterConfig, refs: Mapping[str, ClusterConfig]) -> list[FieldError]:
    """Every rule of an address's ``attached_to`` (module docstring): the cluster has that
    VM (``controller.gcp`` / ``log_relay.gcp``), in this stack's project, in a zone of the
    address's region. ``refs``: the referenced clusters' validated configs by name (one
    missing is skipped: the loader reports it). Rows located in this config: at
    ``attached_to.vm`` for a missing VM, ``attached_to.cluster`` for another project,
    ``region`` for another region."""
    gcp = cfg.provisioning.gcp
    if gcp is None:
        return []
    out: list[FieldError] = []
    for i, a in enumerate(gcp.addresses):
        if a.attached_to is None or a.attached_to.cluster not in refs:
            continue
        at, ref = (*ADDRESSES, i), refs[a.attached_to.cluster]
        role = a.attached_to.vm
        vm = ref.controller.gcp if role == "controller" else ref.log_relay.gcp
        who = f"the {_VM[role]} VM of cluster {ref.name}"
        if vm is None:
            out.append(FieldError((*at, "attached_to", "vm"), f"cluster {ref.name} has no {role}.gcp "
                                  f"(no {_VM[role]} VM to attach address {a.name!r} to)",
                                  f"name a cluster with {role}.gcp, or fix vm:"))
            continue
        project = ref.platform.gcp.project_id if ref.platform.gcp is not None else None
        if project != gcp.project:
            out.append(FieldError((*at, "attached_to", "cluster"),
                                  f"{who} runs in project {project!r}, not this stack's {gcp.project!r}: "
                                  "a static address serves VMs of its own project",
                                  "attach the address to a VM of this project"))
            continue
        region = zone_region(vm.zone)
        if region != a.region:
            out.append(FieldError((*at, "region"),
                                  f"{a.region} is not the region of {who} (zone {vm.zone}): a regional "
                                  "external address can be assigned only to a VM in its own region "
                                  "(Compute Engine \"IP addresses\")",
                                  f"set region: {region} — a new region is a new address: reserve it "
                                  "there, or move the VM"))
    return out


def pinned(cfg: ClusterConfig) -> list[tuple[int, str, str, str]]:
    """``(index, name, region, IP)`` of every adopt-only address of ``cfg`` (pinned, not
    ``promote``), in file order."""
    gcp = cfg.provisioning.gcp
    if gcp is None:
        return []
    return [(i, a.name, a.region, a.address) for i, a in enumerate(gcp.addresses)
            if a.address is not None and not a.promote]


def address_urn(stack: str, project: str, name: str) -> str:
    """The URN the program gives address ``name`` (:class:`~clusterstack.components.gcp.
    addresses.StaticAddresses` ``addresses`` under the Stack): the one URN rule."""
    parent = new_urn(stack, project, "", STATIC_ADDRESSES_COMPONENT, "addresses")
    return child_urn(parent, stack, project, ADDRESS, name)


def adoption_problems(loaded: LoadedCluster, steps: Iterable[Step], *, project: str) -> list[Problem]:
    """One Problem per adopt-only address that the previewed ``steps`` would create (a
    ``create`` step of its URN in Pulumi project ``project``), located at its ``address``
    line, with the ``import`` commands that adopt it instead (module docstring). [] when no
    step creates one."""
    cfg, stack = loaded.config, loaded.config.name
    created = {s.urn for s in steps if s.op == "create" and s.type == ADDRESS}
    out = []
    for i, name, region, ip in pinned(cfg):
        if address_urn(stack, project, name) not in created:
            continue
        out.append(loaded.problem(
            (*ADDRESSES, i, "address"),
            f"address {name!r} pins {ip}, and the preview would create it: GCP reserves a given "
            f"external IP only for a project that already holds it, so a pinned address is "
            f"adopt-only — it is imported, never created",
            f"adopt the reservation: `clusterstack import generate {stack} --only {ADDRESS} "
            f"--output ~/clusterstack-imports/{stack}.json`, then `clusterstack import apply {stack} "
            f"--file ~/clusterstack-imports/{stack}.json` (docs/adopting-a-cluster.md); if {ip} is an "
            f"ephemeral IP this project uses in {region} now, set promote: true; to reserve a new "
            "IP, remove address:"))
    return out
