"""Components of the GCP project stack; every resource goes through one explicit
``gcp.Provider`` for the project."""
