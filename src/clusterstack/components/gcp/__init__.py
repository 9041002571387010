"""Components of the GCP project stack; every resource goes through one explicit
GCP provider for the project (``pulumi:providers:gcp``), declared by type token with them
(:mod:`clusterstack.components.gcp.kinds`)."""
