"""Load ``buckets.yaml`` (model: :mod:`clusterstack.config.buckets`) through the one loader and
check the rules that span fields — they use the bucket derivations
(:mod:`clusterstack.derive.buckets`), hence this second pass."""

from __future__ import annotations

from pathlib import Path

from clusterstack.config.buckets import BucketsConfig
from clusterstack.config.document import load_document
from clusterstack.derive.buckets import overlaps, protected_prefixes, temp_root
from clusterstack.errors import FieldError

_PROVIDERS = ("gcs", "coreweave", "r2")


def cross_checks(cfg: BucketsConfig) -> list[FieldError]:
    """Rules across fields, each naming the field to change:

    - at least one provider section;
    - bucket names unique per provider (GCS: the log bucket included) — two entries would be
      two Pulumi resources fighting over one bucket;
    - no protected prefix overlaps ``<temp_prefix>/``: the TTL lifecycle rules delete there, and a
      lifecycle deletion is not subject to any bucket policy or IAM deny;
    - a GCS bucket uses exactly one of ``storage_class`` and ``autoclass`` (with Autoclass the
      class is managed by GCS — Cloud Storage "Autoclass");
    - a GCS bucket with protected prefixes lists ``object_writers``: GCS cannot deny deletion by
      prefix, only grant it outside the prefixes, so without writers the rule would protect
      nothing (docs/buckets.md).
    """
    errs: list[FieldError] = []
    if all(getattr(cfg, p) is None for p in _PROVIDERS):
        errs.append(FieldError(("gcs",), "no provider section",
                               "declare buckets under gcs, coreweave or r2"))
    root = temp_root(cfg)
    for i, p in enumerate(cfg.protected_prefixes):
        if overlaps(p, root):
            errs.append(_overlap(("protected_prefixes", i), p, root))

    for provider in _PROVIDERS:
        section = getattr(cfg, provider)
        if section is None:
            continue
        seen: dict[str, int] = {}
        if provider == "gcs":
            seen[section.log_bucket.name] = -1
        for i, b in enumerate(section.buckets):
            if b.name in seen:
                other = "the log bucket" if seen[b.name] < 0 else f"{provider}.buckets[{seen[b.name]}]"
                errs.append(FieldError((provider, "buckets", i, "name"),
                                       f"bucket {b.name!r} is declared twice (also {other})",
                                       "give each bucket one entry"))
            seen.setdefault(b.name, i)
            for j, p in enumerate(b.protected_prefixes):
                if overlaps(p, root):
                    errs.append(_overlap((provider, "buckets", i, "protected_prefixes", j), p, root))

    if cfg.gcs is not None:
        for i, b in enumerate(cfg.gcs.buckets):
            if (b.storage_class is None) == (b.autoclass is None):
                errs.append(FieldError(("gcs", "buckets", i, "storage_class"),
                                       "give exactly one of storage_class and autoclass",
                                       "e.g. storage_class: STANDARD, or autoclass: "
                                       "{terminal_storage_class: NEARLINE}"))
            if protected_prefixes(cfg, b.protected_prefixes) and not b.object_writers:
                errs.append(FieldError(("gcs", "buckets", i, "object_writers"),
                                       "protected prefixes need object_writers on GCS",
                                       "list the principals that write this bucket: GCS cannot "
                                       "deny deletion by prefix, only grant it outside the "
                                       "protected prefixes (docs/buckets.md)"))
    return errs


def _overlap(path: tuple[str | int, ...], prefix: str, root: str) -> FieldError:
    return FieldError(path, f"protected prefix {prefix!r} overlaps the TTL area {root!r}",
                      "TTL rules delete there; move the protected data out of temp_prefix")


def load_buckets(path: Path) -> BucketsConfig:
    """Load and check ``buckets.yaml``. Raises ConfigError listing every problem located."""
    return load_document(path, BucketsConfig, cross_checks=cross_checks,
                         missing_hint="the buckets stack's `file` config names it, relative to "
                                      "the project directory")
