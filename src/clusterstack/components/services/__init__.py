"""Reusable components of service projects (``services/<name>/``), one per module:

- :mod:`~clusterstack.components.services.cloudrun` — :class:`CloudRunService`, an IAP-gated
  Cloud Run service with its runtime service account;
- :mod:`~clusterstack.components.services.kubernetes` — :class:`KubernetesService`, a
  single-writer server (Deployment with ``Recreate``, probes, ClusterIP Service, protected PVC);
- :mod:`~clusterstack.components.services.command` — :class:`CommandService`, a job deployed by
  an external deploy CLI through ``pulumi-command``;
- :mod:`~clusterstack.components.services.marks` — the annotation keys the components write and
  ``clusterstack deploy`` reads (no Pulumi import, so the deploy adapters stay light).

This package module imports nothing: import the component you use from its module.
"""
