"""One owner per cloud identity: across every cluster stack of the workspace, each thing a
stack creates in a cloud is claimed by exactly one stack.

A copy of a cluster file with only ``name:`` changed validates on its own, yet both stacks
would then own the same DNS record, CKS cluster, NodePools and queue (or, on GCP, the same
addresses and load balancer) — and each ``up`` would fight the other's. The identities, and
the scope the receiving system makes them unique in:

- CoreWeave: the CKS cluster (``provisioning.coreweave.cluster.name``, unique per org), the
  Kueue ClusterQueue in that cluster, the federation DNS record (hostname in a Cloudflare zone);
- GCP: a static address (name in a project and region), an Artifact Registry repository
  (name in a project), the shared load balancer (its frontend name in a project).

NodePools live inside a CKS cluster, so the cluster's single owner owns them too.
"""

from __future__ import annotations

from typing import Iterable

from clusterstack.config.clusters import LoadedCluster
from clusterstack.config.document import Path_
from clusterstack.errors import Problem


def claims(loaded: LoadedCluster) -> list[tuple[tuple[str, ...], str, Path_]]:
    """``(identity, what, key path)`` of every cloud identity ``loaded`` creates."""
    cfg, out = loaded.config, []
    cw, gcp = cfg.provisioning.coreweave, cfg.provisioning.gcp
    if cw is not None:
        cks = cw.cluster.name
        out.append((("cks", cks), f"CKS cluster {cks!r}", ("provisioning", "coreweave", "cluster", "name")))
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
        for i, r in enumerate(gcp.registries):
            out.append((("registry", gcp.project, r.name), f"registry {r.name!r} in {gcp.project}",
                        ("provisioning", "gcp", "registries", i, "name")))
        if gcp.gclb is not None:
            out.append((("gclb", gcp.project, gcp.gclb.frontend_name), f"load balancer "
                        f"{gcp.gclb.frontend_name!r} in {gcp.project}",
                        ("provisioning", "gcp", "gclb", "frontend_name")))
    return out


def identity_problems(clusters: Iterable[LoadedCluster]) -> list[Problem]:
    """A Problem at each claim of an identity another stack already claims, naming both
    files (first claimant in file-name order). Linear in the number of claims."""
    owner: dict[tuple[str, ...], tuple[LoadedCluster, Path_]] = {}
    problems = []
    for loaded in sorted(clusters, key=lambda c: str(c.path)):
        for identity, what, path in claims(loaded):
            if identity not in owner:
                owner[identity] = (loaded, path)
                continue
            first, first_path = owner[identity]
            line = first.line_of(first_path)
            where = f"{first.path.name}:{line}" if line else first.path.name
            problems.append(loaded.problem(path, f"{what} is also claimed by {where} (stack "
                                           f"{first.config.name})", "each cloud identity belongs to "
                                           "exactly one stack: remove or rename it in one file"))
    return problems
