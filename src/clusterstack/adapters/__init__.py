"""One adapter per outside system (docs/architecture.md, "Outside systems").

- :mod:`clusterstack.adapters.git` — the only code that runs ``git``;
- :mod:`clusterstack.adapters.github` — GitHub's REST API through PyGithub;
- :mod:`clusterstack.adapters.kubernetes` — kubeconfig + ``kubernetes`` client, one retry rule;
- :mod:`clusterstack.adapters.gcp` — the Google Cloud clients (Secret Manager, Cloud Run,
  Compute Engine, Artifact Registry, IAM Admin, Cloud KMS).

The Pulumi CLI's adapter is :mod:`clusterstack.engine.automation`. Every adapter imports its SDK
lazily (inside the function that needs it), so importing this package costs nothing; the one
object that hands them out is :class:`clusterstack.clients.Clients`.
"""
