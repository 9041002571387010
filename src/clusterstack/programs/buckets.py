"""The Pulumi program of the bucket project (kind ``buckets``; ``buckets/__main__.py`` calls
:func:`clusterstack.programs.main`, which calls :func:`build`).

The stack config names the reviewed file: ``clusterstack-buckets:file: buckets.yaml``
(relative to the project directory). Each provider section becomes one component with its
own explicit provider; provider tokens are secret specs resolved only on a real deployment.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from clusterstack import secrets
from clusterstack.components.gcp import kinds
from clusterstack.config.buckets import BucketsConfig
from clusterstack.derive.buckets import protected_prefixes, ttl_rules
from clusterstack.programs import stack_document
from clusterstack.validation import load_buckets
from clusterstack.workspace import Project, Workspace


def _labels(*maps: dict[str, str]) -> tuple[tuple[str, str], ...]:
    merged: dict[str, str] = {}
    for m in maps:
        merged.update(m)
    return tuple(sorted(merged.items()))


def declare(cfg: BucketsConfig, base_dir: Path) -> None:
    """Declare every bucket of ``cfg``; ``base_dir`` (the repository root) resolves ``file:``
    secret specs."""
    import pulumi_coreweave as coreweave

    from clusterstack.components import buckets as c

    rules = ttl_rules(cfg)
    days = cfg.abort_incomplete_multipart_days
    if cfg.gcs is not None:
        g = cfg.gcs
        provider = kinds.provider("gcp", project=g.project)
        c.GcsBuckets("gcs", c.GcsBucketsArgs(
            project=g.project,
            log_bucket=c.GcsLogBucketSpec(g.log_bucket.name, g.log_bucket.location,
                                          g.log_bucket.retention_days,
                                          g.log_bucket.soft_delete_days),
            buckets=tuple(c.GcsBucketSpec(
                name=b.name, location=b.location, storage_class=b.storage_class,
                autoclass_terminal=b.autoclass.terminal_storage_class if b.autoclass else None,
                soft_delete_days=b.soft_delete_days,
                protected_prefixes=protected_prefixes(cfg, b.protected_prefixes),
                object_writers=b.object_writers, labels=_labels(cfg.labels, b.labels))
                for b in g.buckets),
            ttl_rules=rules, abort_multipart_days=days), provider=provider)
        pulumi.export("gcs", sorted(b.name for b in g.buckets))
        pulumi.export("gcs_log_bucket", g.log_bucket.name)
    if cfg.coreweave is not None:
        cw = cfg.coreweave
        token = secrets.resolve_output(cw.api_token, base_dir=base_dir) if cw.api_token else None
        provider = coreweave.Provider("coreweave", token=token)
        c.CoreweaveBuckets("coreweave", c.CoreweaveBucketsArgs(
            buckets=tuple(c.CoreweaveBucketSpec(
                name=b.name, zone=b.zone,
                protected_prefixes=protected_prefixes(cfg, b.protected_prefixes),
                tags=_labels(cfg.labels, b.tags)) for b in cw.buckets),
            ttl_rules=rules, abort_multipart_days=days), provider=provider)
        pulumi.export("coreweave", sorted(b.name for b in cw.buckets))
    if cfg.r2 is not None:
        r2 = cfg.r2
        token = secrets.resolve_output(r2.api_token, base_dir=base_dir) if r2.api_token else None
        provider = c.r2_provider("r2", token)   # by type token: no pulumi_cloudflare import
        c.R2Buckets("r2", c.R2BucketsArgs(
            account_id=r2.account_id,
            buckets=tuple(c.R2BucketSpec(
                name=b.name, location=b.location, jurisdiction=b.jurisdiction,
                storage_class=b.storage_class,
                protected_prefixes=protected_prefixes(cfg, b.protected_prefixes))
                for b in r2.buckets),
            ttl_rules=rules, abort_multipart_days=days), provider=provider)
        pulumi.export("r2", sorted(b.name for b in r2.buckets))
    pulumi.export("ttl_prefixes", {r.rule_id: r.prefix for r in rules})


def build(workspace: Workspace, project: Project) -> None:
    """Read ``<project>:file`` from the stack config, load that file and declare its buckets.

    Raises ClusterstackError when the stack config lacks the key, and ConfigError for an
    invalid ``buckets.yaml``.
    """
    cfg = load_buckets(stack_document(project.directory, "buckets.yaml", workspace.root))
    # file: secret specs are relative to the repository root, as everywhere in clusterstack
    declare(cfg, workspace.root)
