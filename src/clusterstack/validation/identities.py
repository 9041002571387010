"""One owner per cloud identity: across every cluster stack of the workspace, each thing a
stack creates in a cloud is claimed by exactly one stack.

A copy of a cluster file with only ``name:`` changed validates on its own, yet both stacks
would then own the same DNS record, CKS cluster, NodePools and queue (or, on GCP, the same
addresses and load balancer) — and each ``up`` would fight the other's. The identities, and
the scope the receiving system makes them unique in:

- CoreWeave: the CKS cluster (``provisioning.coreweave.cluster.name``, unique per org), the
  Kueue ClusterQueue in that cluster, the federation DNS record (hostname in a Cloudflare zone),
  and the kube context (``platform.coreweave.kube_context``): the Kubernetes cluster the
  stack's provider declares every object in — two stacks there declare the same object names
  (the Helm releases and ClusterIssuers always; NodePools, flavors and RBAC by prefix), and
  Kubernetes keeps one object per name, kind and namespace;
- GCP: a static address (name in a project and region), an Artifact Registry repository
  (name in a project and location — its resource name is
  ``projects/<project>/locations/<location>/repositories/<name>``, and a ``locations`` list
  declares one repository per location, so each location is claimed), the shared load balancer (its frontend name in a project), and each object it declares
  per routed cluster — NEG (name in a zone), health check, backend services, firewall rules,
  certificate, security policies — a log relay's, a token proxy's — (names in a project;
  :func:`clusterstack.derive.gclb.backend_objects`, the names ``GcpGclbIap`` gives them):
  a cluster listed by two GCP stacks of one project would have both own its backend, one
  Problem per listing naming the objects; and the load balancer's DNS records (one per
  certificate domain, a hostname in a Cloudflare zone, like a federation record).

NodePools live inside a CKS cluster, so the cluster's single owner owns them too.

Identities a stack does not create but must not share: a cluster's VMs — its controller VM
(``controller.gcp``: project ``platform.gcp.project_id``, zone, instance — the explicit name,
else the default ``iris-controller-<label_prefix>``) and its log relay VM (``log_relay.gcp``:
the same project, zone, instance). The scheduler runs one controller per cluster, on a VM of
its own name (marin-community/marin infra/pulumi/src/iac/program.py@ef45e6c0
``controller_vm_name``), and each cluster its own log server (Marin's configs: "this cluster's
server", lib/iris/config/cw-us-east-08a.yaml@0234a407 ``finelog:``). Both are backends of the
shared load balancer, so one VM named by two cluster files would route one cluster's
IAP-guarded controller backend to the other's controller or to its IAP-free log relay (a
copied ``controller:`` or ``log_relay:`` block): one index of VMs, whatever the role, and the
second claim is refused. Inside one cluster its controller and log relay may share a VM (two
ports, two network endpoint groups), never a port: each endpoint (``("endpoint", project,
zone, instance, port)``) is claimed once too, and a log relay on its own controller's VM and
port is refused — the relay's backend has no IAP (only Cloud Armor), so its network endpoint
group would route the relay's public domain to the controller API past IAP. (Across clusters
the VM claim already refuses, so the endpoint is not reported twice.) The token-proxy backend
of a controller is no second endpoint: it reuses the controller's own network endpoint group.

Buckets (:func:`bucket_identity_problems`, over the stacks of every ``buckets`` project): a GCS
bucket name is global — "Bucket names reside in a single namespace that is shared by all Cloud
Storage users" (Cloud Storage docs, "Bucket names") — the access-log bucket included; an R2
bucket name is unique in its Cloudflare account (R2 docs, "Create new buckets": per account),
a CoreWeave AI Object Storage bucket name is claimed across the organisation's storage, so by
name. Two stacks naming the same ``buckets.yaml`` would own every bucket in it twice: that is
one problem at the second stack file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Collection, Iterable, Mapping, Sequence

from clusterstack.config.buckets import BucketsConfig
from clusterstack.config.cluster import ClusterConfig, Gclb
from clusterstack.config.cluster_file import LoadedCluster
from clusterstack.derive.gclb import (DEFAULT_CONVENTIONS, ControllerBackendSpec, GclbBackends,
    LogRelayBackendSpec, backend_objects, controller_instance, derive_gclb, referenced_clusters)
from clusterstack.config.document import Document, Path_, format_path
from clusterstack.errors import ClusterstackError, FieldError, Problem, display_path
from clusterstack.workspace.model import Conventions


_HINT = "each cloud identity belongs to exactly one stack: remove or rename it in one file"
_VM_ROLES: dict[str | int, str] = {"controller": "controller VM", "log_relay": "log relay VM"}   # section → role


def _vm_hint(path: Path_, first_path: Path_, first_file: str) -> str:
    """The fix for a VM two clusters claim: its section in one file (both named when the two
    claims are of different roles)."""
    if path[0] == first_path[0]:
        return f"each cluster has its own {_VM_ROLES[path[0]]}: fix {path[0]}.gcp (zone, instance) in one file"
    return (f"a VM serves one cluster in one role: fix {path[0]}.gcp (zone, instance) here, or "
            f"{first_path[0]}.gcp in {first_file}")


_ENDPOINT_HINT = ("give the log relay its own port (log_relay.gcp.port) or VM: the controller "
                  "and log relay of one cluster may share a VM, never a port")


def _shared_endpoint(what: str, first: LoadedCluster, first_path: Path_) -> str:
    """The refusal of a log relay on its own controller's VM and port: the relay's backend has
    no IAP, so its network endpoint group would route the public relay domain to the
    controller API past IAP."""
    line = first.line_of(first_path)
    at = f"{format_path(first_path)}, line {line}" if line else format_path(first_path)
    return (f"{what} is the controller's own endpoint ({at}): the log relay's backend has no "
            "IAP, so its domain would reach the controller API without IAP")


def claims(loaded: LoadedCluster, configs: Mapping[str, ClusterConfig] | None = None,
           conventions: Conventions = DEFAULT_CONVENTIONS) -> list[tuple[tuple[str, ...], str, Path_]]:
    """``(identity, what, key path)`` of every cloud identity ``loaded`` creates, and of its
    controller and log relay VMs (module docstring; a VM's identity is ``("vm", project,
    zone, instance)`` whatever its role). ``configs``: the workspace's clusters by name, to
    name the load balancer's objects of each routed cluster (without them, or when the load
    balancer's references do not hold — their problems are reported by the loader — only its
    frontend is claimed). With [conventions] ``gclb_dns_records`` the load balancer's DNS
    records are claimed as DNS names, the same identity as a CoreWeave federation hostname
    (one name in one Cloudflare zone has one owner)."""
    cfg, out = loaded.config, []
    ctl, relay = cfg.controller.gcp, cfg.log_relay.gcp
    if cfg.platform.gcp is not None:
        project = cfg.platform.gcp.project_id
        if ctl is not None:
            vm = controller_instance(cfg)
            out.append((("vm", project, ctl.zone, vm), f"controller VM {vm!r} in {project}/{ctl.zone}",
                        ("controller", "gcp", "instance" if ctl.instance else "zone")))
            out.append((("endpoint", project, ctl.zone, vm, str(ctl.port)), f"controller endpoint "
                        f"{vm}:{ctl.port} in {project}/{ctl.zone}", ("controller", "gcp", "port")))
        if relay is not None:
            out.append((("vm", project, relay.zone, relay.instance), f"log relay VM "
                        f"{relay.instance!r} in {project}/{relay.zone}", ("log_relay", "gcp", "instance")))
            out.append((("endpoint", project, relay.zone, relay.instance, str(relay.port)),
                        f"log relay endpoint {relay.instance}:{relay.port} in {project}/{relay.zone}",
                        ("log_relay", "gcp", "port")))
    cw, gcp = cfg.provisioning.coreweave, cfg.provisioning.gcp
    if cw is not None:
        cks = cw.cluster.name
        out.append((("cks", cks), f"CKS cluster {cks!r}", ("provisioning", "coreweave", "cluster", "name")))
        if cfg.platform.coreweave is not None:
            # the Kubernetes cluster every object of the stack is declared in (the provider's
            # `context`): two stacks there declare the same object names — the Helm releases,
            # the ClusterIssuers, a same-prefixed NodePool — and each `up` would undo the other's
            ctx = cfg.platform.coreweave.kube_context
            out.append((("kube-context", ctx), f"kube context {ctx!r} (its Kubernetes objects: Helm "
                        "releases, ClusterIssuers, NodePools, the ClusterQueue and its flavors)",
                        ("platform", "coreweave", "kube_context")))
        if cfg.kubernetes_provider.kueue is not None:
            q = cfg.kubernetes_provider.kueue.cluster_queue
            out.append((("queue", cks, q), f"ClusterQueue {q!r} in CKS cluster {cks!r}",
                        ("kubernetes_provider", "kueue", "cluster_queue")))
        if cw.federation_dns is not None:
            dns = cw.federation_dns
            out.append((("dns", dns.zone_id, dns.hostname.lower()), f"DNS name {dns.hostname!r} in zone "
                        f"{dns.zone_id}", ("provisioning", "coreweave", "federation_dns", "hostname")))
    if gcp is not None:
        for i, a in enumerate(gcp.addresses):
            out.append((("address", gcp.project, a.region, a.name), f"address {a.name!r} in "
                        f"{gcp.project}/{a.region}", ("provisioning", "gcp", "addresses", i, "name")))
        for i, r in enumerate(gcp.registries):   # one repository per location (registries.py)
            out += [(("registry", gcp.project, loc, r.name), f"registry {r.name!r} in {gcp.project}/{loc}",
                     ("provisioning", "gcp", "registries", i, "name")) for loc in r.locations]
        if gcp.gclb is not None:
            out.append((("gclb", gcp.project, gcp.gclb.frontend_name), f"load balancer "
                        f"{gcp.gclb.frontend_name!r} in {gcp.project}",
                        ("provisioning", "gcp", "gclb", "frontend_name")))
            refs = {n: configs[n] for n, _via in referenced_clusters(cfg) if configs and n in configs}
            try:
                backends = derive_gclb(cfg, refs, conventions) if configs is not None else None
            except FieldError:
                backends = None
            if backends is not None:
                out += [(("gce", name), what, path)
                        for name, what, path in backend_objects(cfg, backends, conventions)]
                zone = gcp.gclb.dns_zone_id
                if conventions.gclb_dns_records and zone is not None:
                    out += [(("dns", zone, b.domain.lower()), f"DNS name {b.domain!r} in zone {zone}", via)
                            for b, via in _listings(gcp.gclb, backends)]
    return out


_GCLB: Path_ = ("provisioning", "gcp", "gclb")


def _listings(gclb: Gclb, backends: GclbBackends
              ) -> Sequence[tuple[ControllerBackendSpec | LogRelayBackendSpec, Path_]]:
    """Each backend of a cluster's load balancer ``gclb`` (controllers, then log relays) with
    the path of its listing (``gclb.controllers[i].cluster`` / ``gclb.log_relays[i].cluster``)."""
    ctl = {c.cluster: i for i, c in enumerate(gclb.controllers)}
    rel = {r.cluster: i for i, r in enumerate(gclb.log_relays)}
    return ([(c, (*_GCLB, "controllers", ctl[c.cluster], "cluster")) for c in backends.controllers]
            + [(r, (*_GCLB, "log_relays", rel[r.cluster], "cluster")) for r in backends.log_relays])


def _per_listing(identity: tuple[str, ...], path: Path_, first_path: Path_) -> bool:
    """Whether a shared claim joins the one Problem of its load-balancer listing: every object
    the load balancer declares for a routed cluster, and a certificate domain's DNS record two
    load balancers declare (one a CoreWeave federation name claims is reported alone)."""
    return identity[0] == "gce" or (identity[0] == "dns" and path[:3] == _GCLB == first_path[:3])


def identity_problems(clusters: Iterable[LoadedCluster], root: Path | None = None, *,
                      only: Collection[str] | None = None,
                      conventions: Conventions = DEFAULT_CONVENTIONS) -> list[Problem]:
    """A Problem at each claim of an identity another stack already claims, naming both
    files and lines (first claimant in file-name order; the other file shown relative to the
    workspace ``root``, as every message names files). A VM claimed in two roles says the
    first one's (``…, its log relay VM``); a log relay on its own controller's endpoint is
    refused at ``log_relay.gcp.port``; the load-balancer objects of one listing
    (``gclb.controllers[i]``/``log_relays[i]``) that another listing claims make one Problem
    naming them all. ``only``: report just the claims where one of the
    two stacks is one of these (``plan``'s selection); None: every claim. Linear in the
    number of claims."""
    clusters = sorted(clusters, key=lambda c: str(c.path))
    configs = {c.config.name: c.config for c in clusters}
    owner: dict[tuple[str, ...], tuple[LoadedCluster, Path_]] = {}
    shared: dict[tuple[Path, Path_, Path, Path_], list[str]] = {}   # load balancer objects per listing
    problems: list[Problem | tuple] = []
    for loaded in clusters:
        for identity, what, path in claims(loaded, configs, conventions):
            if identity not in owner:
                owner[identity] = (loaded, path)
                continue
            first, first_path = owner[identity]
            if only is not None and loaded.config.name not in only and first.config.name not in only:
                continue
            if first is loaded and not _per_listing(identity, path, first_path):
                if identity[0] == "endpoint":  # one VM, one port, two roles (module docstring)
                    problems.append(loaded.problem(path, _shared_endpoint(what, first, first_path), _ENDPOINT_HINT))
                continue  # one cluster's controller and log relay on one VM, two ports
            if identity[0] == "endpoint":
                continue  # two clusters on one VM: the VM claim above says it
            line = first.line_of(first_path)
            shown = display_path(first.path, root)
            where = f"{shown}:{line}" if line else shown
            if first is loaded:   # two listings of one load balancer name one object
                where = f"{format_path(first_path)}, line {line}" if line else format_path(first_path)
            if _per_listing(identity, path, first_path):   # one Problem per listing, naming each shared object
                key = (loaded.path, path, first.path, first_path)
                if key not in shared:
                    shared[key] = []
                    problems.append((loaded, path, where, first.config.name, shared[key]))
                shared[key].append(what)
                continue
            role = ""
            if identity[0] == "vm" and first_path[0] != path[0]:
                role = f", its {_VM_ROLES[first_path[0]]}"
            problems.append(loaded.problem(
                path, f"{what} is also claimed by {where} (stack {first.config.name}{role})",
                _vm_hint(path, first_path, first.path.name) if identity[0] == "vm" else _HINT))
    return [_gclb_problem(*p) if isinstance(p, tuple) else p for p in problems]


_GCLB_HINT = ("route each cluster through one load balancer: remove the cluster from one stack's "
              "provisioning.gcp.gclb, or put the two load balancers in different projects")


def _gclb_problem(loaded: LoadedCluster, path: Path_, where: str, stack: str, whats: list[str]) -> Problem:
    """The one Problem of a load-balancer listing whose objects another stack (or another
    listing of the same load balancer) declares too."""
    one = len(whats) == 1
    if stack == loaded.config.name:
        return loaded.problem(path, f"{', '.join(whats)} {'is' if one else 'are'} also declared for "
                              f"{where}: one name, two objects", "rename one of the two clusters: a "
                              "controller may not be named like another listed cluster's log relay "
                              "(<cluster>-relay)")
    return loaded.problem(path, f"{', '.join(whats)} {'is' if one else 'are'} also declared by the "
                          f"load balancer of {where} (stack {stack}): both stacks would own "
                          f"{'it' if one else 'them'}", _GCLB_HINT)


# --- buckets --------------------------------------------------------------------------------------

def bucket_claims(cfg: BucketsConfig) -> list[tuple[tuple[str, ...], str, Path_]]:
    """``(identity, what, key path)`` of every bucket ``cfg`` creates (module docstring)."""
    out: list[tuple[tuple[str, ...], str, Path_]] = []
    if cfg.gcs is not None:
        out.append((("gcs-bucket", cfg.gcs.log_bucket.name), f"GCS bucket {cfg.gcs.log_bucket.name!r}",
                    ("gcs", "log_bucket", "name")))
        out += [(("gcs-bucket", b.name), f"GCS bucket {b.name!r}", ("gcs", "buckets", i, "name"))
                for i, b in enumerate(cfg.gcs.buckets)]
    if cfg.coreweave is not None:
        out += [(("coreweave-bucket", b.name), f"CoreWeave bucket {b.name!r}", ("coreweave", "buckets", i, "name"))
                for i, b in enumerate(cfg.coreweave.buckets)]
    if cfg.r2 is not None:
        out += [(("r2-bucket", cfg.r2.account_id, b.name), f"R2 bucket {b.name!r} in account {cfg.r2.account_id}",
                 ("r2", "buckets", i, "name")) for i, b in enumerate(cfg.r2.buckets)]
    return out


def _line(path: Path, key: Path_) -> int | None:
    try:
        return Document.read(path).line_of(key)
    except ClusterstackError:
        return None


def bucket_identity_problems(owners: Iterable[tuple[str, Path, Path, BucketsConfig]],
                             root: Path | None = None, *,
                             only: Collection[str] | None = None) -> list[Problem]:
    """``owners``: ``(stack, stack file, buckets file, config)`` of every stack of the buckets
    projects, in the order to report (the first claimant keeps the identity). A Problem at each
    bucket another stack already claims, naming both files and lines; one Problem at a stack
    file naming a buckets file another stack already names. The other file is shown relative
    to the workspace ``root``. ``only``: just the problems where one of the two stacks is one
    of these (``plan``'s selection); None: all. Linear in the number of buckets."""
    def involved(*stacks: str) -> bool:
        return only is None or any(s in only for s in stacks)

    owner: dict[tuple[str, ...], tuple[str, Path, Path_]] = {}
    file_owner: dict[Path, tuple[str, Path]] = {}
    problems: list[Problem] = []
    for stack, stack_file, path, cfg in owners:
        if path in file_owner:
            first, first_file = file_owner[path]
            if not involved(stack, first):
                continue
            problems.append(Problem(
                f"stack {stack} names {display_path(path, root)}, which stack {first} "
                f"({display_path(first_file, root)}) already "
                "names: every bucket in it would have two owners", "give each stack its own buckets "
                "file, or remove the stack", file=stack_file, field="config"))
            continue
        file_owner[path] = (stack, stack_file)
        for identity, what, key in bucket_claims(cfg):
            if identity not in owner:
                owner[identity] = (stack, path, key)
                continue
            first, first_path, first_key = owner[identity]
            if not involved(stack, first):
                continue
            line = _line(first_path, first_key)
            shown = display_path(first_path, root)
            where = f"{shown}:{line}" if line else shown
            problems.append(Problem(
                f"{what} is also claimed by {where} (stack {first})", "bucket names are "
                "global (GCS) or per account: declare each bucket in exactly one stack's file",
                file=path, line=_line(path, key), field=format_path(key)))
    return problems
