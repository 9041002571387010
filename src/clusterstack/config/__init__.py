"""Reviewed files: the one document loader (:mod:`~clusterstack.config.document`), the shared
constrained types (:mod:`~clusterstack.config.types`) and one model module per reviewed file —
:mod:`~clusterstack.config.cluster` (``clusters/<name>.yaml``, loaded with ``[defaults]`` by
:mod:`~clusterstack.config.cluster_file`), :mod:`~clusterstack.config.buckets`,
:mod:`~clusterstack.config.github`, :mod:`~clusterstack.config.services`. A fully checked
cluster (derivations and references too) comes from :func:`clusterstack.validation.load_cluster`.
"""
