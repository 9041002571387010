"""The annotations that tie a running revision to where it came from — written by the service
components, read by ``clusterstack deploy history`` / ``rollback``. One definition for both.

- :data:`SOURCE_REVISION` — the git commit a revision was rolled out from. Kubernetes: on the
  Deployment's *pod template* (so each ReplicaSet carries the commit of its rollout); Cloud
  Run: on the revision template (``Revision.annotations``).
- :data:`CHANGE_CAUSE` — the rollout message. Kubernetes' own ``kubernetes.io/change-cause``
  on the Deployment's metadata: the deployment controller copies Deployment annotations to the
  new ReplicaSet, and ``kubectl rollout history`` shows it as CHANGE-CAUSE. Cloud Run:
  :data:`CLOUD_RUN_CHANGE_CAUSE` on the revision template (Cloud Run rejects only the
  ``run.googleapis.com``, ``cloud.googleapis.com``, ``serving.knative.dev`` and
  ``autoscaling.knative.dev`` annotation namespaces).
- The ``GCE_*`` instance metadata keys and the launcher's guest-attribute namespace of a VM
  service (:mod:`~clusterstack.components.services.gce`, :mod:`clusterstack.deploy.gce`), and
  the ``JOB_*`` container environment variables a Cloud Run job template carries its commit
  and message in (:mod:`~clusterstack.components.services.cloudrunjob`,
  :mod:`clusterstack.deploy.cloudrunjob`).
- :data:`HEALTH` — clusterstack's verdict on a Kubernetes ReplicaSet after it served:
  ``healthy`` / ``unhealthy`` / ``rolled-back``. Written on the ReplicaSet's own metadata (not
  the pod template, so recording it never starts a rollout) by ``deploy rollout`` after its
  health check and by ``deploy rollback``. Kubernetes keeps no memory of whether an old
  ReplicaSet ever became available, so without this mark a revision's health is unknown.
"""

SOURCE_REVISION = "clusterstack.dev/source-revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
CLOUD_RUN_CHANGE_CAUSE = "clusterstack.dev/change-cause"
HEALTH = "clusterstack.dev/health"

HEALTHY, UNHEALTHY, ROLLED_BACK = "healthy", "unhealthy", "rolled-back"

# Compute Engine VM services (GceVmService, clusterstack.deploy.gce): instance metadata keys
GCE_IMAGE_KEY = "clusterstack-image"                      # the image the VM runs (by digest)
GCE_SOURCE_REVISION_KEY = "clusterstack-source-revision"  # the commit of the rollout
GCE_CHANGE_CAUSE_KEY = "clusterstack-change-cause"        # the rollout message
GCE_REVISIONS_KEY = "clusterstack-revisions"              # deploy's revision record (never declared)
GUEST_NAMESPACE = "clusterstack"                          # the launcher's guest attributes: image, health

# Cloud Run jobs (CloudRunJob, clusterstack.deploy.cloudrunjob): the task template's own provenance
JOB_SOURCE_REVISION_ENV = "CLUSTERSTACK_SOURCE_REVISION"
JOB_CHANGE_CAUSE_ENV = "CLUSTERSTACK_CHANGE_CAUSE"

UNRELEASED = "unreleased"
"""Source revision of a program run outside ``deploy rollout`` (an offline plan, a bare
``pulumi up``): the stack config carries no commit."""


def digest_pinned(image: str) -> bool:
    """True when ``image`` is referenced by digest (``<repository>@sha256:<64 hex>``): the
    only form that names exactly one image, so a revision can be rolled back to the bytes it
    ran (OCI image spec, "Digests"; a tag can be moved)."""
    repo, sep, digest = image.partition("@")
    return bool(repo) and sep == "@" and digest.startswith("sha256:") and len(digest) == 71 and \
        all(c in "0123456789abcdef" for c in digest[7:])
