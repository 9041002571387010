"""Reviewed cluster configs: typed models and the located loader."""

from clusterstack.config.loader import LoadedCluster, load_all, load_cluster
from clusterstack.config.models import ClusterConfig

__all__ = ["ClusterConfig", "LoadedCluster", "load_all", "load_cluster"]
