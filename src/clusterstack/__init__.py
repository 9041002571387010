"""clusterstack."""
