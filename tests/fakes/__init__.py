"""One fake per outside system (docs/architecture.md, "Outside systems"), each speaking the real
system's format and semantics and citing where they come from:

- :mod:`fakes.pulumi` — the Pulumi CLI: the in-memory FakeEngine and the stand-in ``pulumi``
  executable (:mod:`fakes.pulumi_cli`) replaying Pulumi's recorded outputs;
- :mod:`fakes.github_api` — GitHub's REST API;
- :mod:`fakes.kubernetes_api` — the Kubernetes API server;
- :mod:`fakes.gcp_api` — the Google Cloud REST APIs (Cloud Run, Compute Engine, Artifact Registry);
- :mod:`fakes.http` — the one local HTTP server they share;
- :mod:`fakes.clients` — :class:`clusterstack.clients.Clients` built from these fakes;
- :mod:`fakes.clock` — time that passes only when someone sleeps.

git has no fake: tests run it on real temporary repositories.
"""
