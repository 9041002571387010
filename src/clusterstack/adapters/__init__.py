"""One adapter per outside system (docs/architecture.md, "Outside systems"), each behind one
typed Protocol — what the features depend on, what the fakes of ``tests/fakes/`` implement:

- :class:`Engine` — the Pulumi CLI (:mod:`clusterstack.engine.model`; production:
  :class:`clusterstack.engine.automation.AutomationEngine`);
- :class:`GitRepo` — :mod:`clusterstack.adapters.git`, the only code that runs ``git``;
- :class:`GitHubRepo` (one repository) and :class:`GitHubApi` (the connection) —
  :mod:`clusterstack.adapters.github`, GitHub's REST API through PyGithub;
- :class:`KubeApi` — :mod:`clusterstack.adapters.kubernetes`, kubeconfig + ``kubernetes``
  client, one retry rule;
- :class:`CloudRunApi` (Cloud Run services and jobs), :class:`SecretManagerClient`,
  :class:`IamAdminClient`, :class:`ComputeApi` (Compute Engine and the Artifact Registry
  reads) — :mod:`clusterstack.adapters.gcp`, the Google Cloud clients;
- :class:`Kms` — :mod:`clusterstack.adapters.kms`, Cloud KMS through Tink.

What a reader looks up and its errors: :mod:`clusterstack.adapters.lookups`. Every adapter
imports its SDK lazily (inside the function that needs it), so importing this package imports
no SDK; the one object that hands the adapters out is :class:`clusterstack.clients.Clients`.
"""

from clusterstack.adapters.gcp import CloudRunApi, ComputeApi, IamAdminClient, SecretManagerClient
from clusterstack.adapters.git import GitRepo
from clusterstack.adapters.github import GitHubApi, GitHubRepo
from clusterstack.adapters.kms import Kms
from clusterstack.adapters.kubernetes import KubeApi
from clusterstack.engine.model import Engine

__all__ = ["CloudRunApi", "ComputeApi", "Engine", "GitHubApi", "GitHubRepo", "GitRepo", "IamAdminClient",
           "KubeApi", "Kms", "SecretManagerClient"]
