"""Shared data buckets (GCS, CoreWeave AI Object Storage, Cloudflare R2) as their own Pulumi
project, ``buckets/``, operated by hand and never applied by CI (docs/buckets.md).

``buckets.yaml`` (reviewed) → :func:`load_buckets` → :class:`BucketsConfig` →
:mod:`clusterstack.buckets.derive` (TTL and protected-prefix rules) →
:mod:`clusterstack.components.buckets` (one component per provider) →
:func:`clusterstack.buckets.program.build` (the project's ``__main__.py``).
"""

from clusterstack.buckets.loader import load_buckets
from clusterstack.buckets.model import BucketsConfig

__all__ = ["BucketsConfig", "load_buckets"]
