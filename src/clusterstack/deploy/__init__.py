"""Service deploys: the registry (``services.yaml``), rollout helpers, history, and one
rollback planner + executor over three backends.

- :mod:`~clusterstack.deploy.registry` — ``services.yaml`` loaded and resolved (the model:
  :mod:`clusterstack.config.services`; ``file:line`` errors);
- :mod:`~clusterstack.deploy.rollout` — ``--config`` overrides on a temporary stack-file copy,
  secrets resolved (and masked) at rollout time;
- :mod:`~clusterstack.deploy.model` — revisions, plans, typed outcomes, the Backend protocol;
- :mod:`~clusterstack.deploy.rollback` — the planner and the executor;
- backends: :mod:`~clusterstack.deploy.kubernetes` (``kubernetes`` client),
  :mod:`~clusterstack.deploy.cloudrun` (``google-cloud-run``), :mod:`~clusterstack.deploy.cloudrunjob`
  (a Cloud Run job) and :mod:`~clusterstack.deploy.gce` (one Compute Engine VM), both through
  the typed Protocols of :mod:`clusterstack.adapters.gcp` with :mod:`~clusterstack.deploy.gcperrors`
  (what a failed call means), :mod:`~clusterstack.deploy.stack` (a plain Pulumi stack, through
  the engine);
- :mod:`~clusterstack.deploy.health` — the URL health check;
- :mod:`~clusterstack.deploy.service` — the flows of one service (rollout, rollback, history)
  over the run's :class:`~clusterstack.clients.Clients`.

The CLI is :mod:`clusterstack.cli.deploy`; the runbooks are ``docs/deploying-services.md`` and
``docs/rolling-back.md``.
"""
