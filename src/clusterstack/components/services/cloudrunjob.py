"""A Cloud Run job with its own runtime service account, optionally run on a schedule.

The shape of Marin's scheduled jobs (``iac.gcp.cloud_run_job.ScheduledCloudRunJob``,
``infra/pulumi/src/iac/gcp/cloud_run_job.py``@107c2918: the ``echo-sync`` job of
``infra/echo/__main__.py``@1b52ee73 — a Cloud Run v2 job, secrets mounted by reference, the
Cloud SQL connector at ``/cloudsql``, a Cloud Scheduler trigger that POSTs the Admin API's
``jobs.run`` with an OAuth token of the job's service account), built from a pushed image:

- the image by digest only (a rollback returns to the bytes an execution ran);
- the task template carries its own provenance — ``CLUSTERSTACK_SOURCE_REVISION`` and
  ``CLUSTERSTACK_CHANGE_CAUSE`` in the container's environment — because an execution keeps
  the template it ran (Cloud Run Admin API v2, ``Execution.template``) and nothing else of the
  rollout; ``clusterstack deploy history`` reads them back (:mod:`clusterstack.deploy.cloudrunjob`);
- secrets as Secret Manager references (the value never enters Pulumi), the runtime account
  granted ``roles/secretmanager.secretAccessor`` on each (as
  :class:`~clusterstack.components.services.cloudrun.CloudRunService`);
- with a ``schedule``, a ``cloudscheduler.Job`` whose HTTP target is
  ``https://run.googleapis.com/v2/projects/<p>/locations/<r>/jobs/<job>:run`` (Cloud Run "Execute
  jobs on a schedule"; a ``*.googleapis.com`` target takes an OAuth token, not OIDC) and the
  runtime account's ``roles/run.invoker`` on the job, which this stack owns
  (:mod:`clusterstack.validation.ownership`: the registry's ``stack_grants``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.components.services import marks
from clusterstack.components.services.cloudrun import (INVOKER_ROLE, SecretEnv, iam_member_import_id,
                                                       secret_accessor_grants)
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import CLOUD_RUN_JOB_COMPONENT

RUN_JOB_URI = "https://run.googleapis.com/v2/projects/{project}/locations/{region}/jobs/{job}:run"
_ENV_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_CONNECTION = re.compile(r"\A[a-z][a-z0-9-]{4,28}[a-z0-9]:[a-z]+-[a-z]+\d+:[a-z][-a-z0-9]{0,96}\Z")


@dataclass(frozen=True)
class CloudRunJobArgs:
    project: str                  # <service>:project
    region: str                   # <service>:region
    job_name: str                 # <service>:jobName
    image: str                    # <service>:image — container image by digest (…@sha256:…)
    runtime_account_id: str       # <service>:runtimeAccount
    env: tuple[tuple[str, str], ...] = ()      # <service>:env — plain variables
    secret_env: tuple[SecretEnv, ...] = ()     # <service>:secretEnv — Secret Manager references
    cpu: str = "1"                # <service>:cpu
    memory: str = "2Gi"           # <service>:memory
    timeout_seconds: int = 1800   # <service>:timeoutSeconds — per attempt
    max_retries: int = 1          # <service>:maxRetries
    cloudsql_instances: tuple[str, ...] = ()   # <service>:cloudsqlInstances — project:region:instance
    schedule: str = ""            # <service>:schedule — cron (Cloud Scheduler syntax); "" = no trigger
    time_zone: str = "Etc/UTC"    # <service>:timeZone
    source_revision: str = marks.UNRELEASED   # <service>:sourceRevision — set by `deploy rollout`
    change_cause: str = ""        # <service>:changeCause — set by `deploy rollout`

    def __post_init__(self) -> None:
        if not marks.digest_pinned(self.image):
            raise ValueError(f"image {self.image!r} is not pinned by digest; use <repository>@sha256:<digest>")
        names = [n for n, _ in self.env] + [s.name for s in self.secret_env]
        reserved = {marks.JOB_SOURCE_REVISION_ENV, marks.JOB_CHANGE_CAUSE_ENV} & set(names)
        if reserved:
            raise ValueError(f"environment variable {sorted(reserved)[0]!r} is set by clusterstack (provenance)")
        bad = [n for n in names if not _ENV_NAME.match(n)]
        if bad:
            raise ValueError(f"invalid environment variable name {bad[0]!r}")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"environment variable {dup[0]!r} is set twice (env and secretEnv share one namespace)")
        wrong = [c for c in self.cloudsql_instances if not _CONNECTION.match(c)]
        if wrong:
            raise ValueError(f"Cloud SQL connection {wrong[0]!r}: give project:region:instance")
        if self.timeout_seconds < 1 or self.max_retries < 0:
            raise ValueError("timeoutSeconds must be positive and maxRetries not negative")

    @property
    def runtime_email(self) -> str:
        return f"{self.runtime_account_id}@{self.project}.iam.gserviceaccount.com"


class CloudRunJob(pulumi.ComponentResource):
    """Runtime SA → secret access → the ``gcp:cloudrunv2/job:Job`` → (with a schedule) the runtime
    account's invoker grant on it and the Cloud Scheduler trigger. Outputs: ``job``,
    ``runtime_account``."""

    job: Declared

    def __init__(self, name: str, args: CloudRunJobArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLOUD_RUN_JOB_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        a = args
        self.runtime_account = kinds.SERVICE_ACCOUNT(
            f"{name}-runtime", {"project": a.project, "accountId": a.runtime_account_id,
                                "displayName": f"{a.job_name} (Cloud Run job)"}, o)
        ids.importable(self.runtime_account, ids.gcp_service_account(a.project, a.runtime_email))
        member = f"serviceAccount:{a.runtime_email}"
        grants = list(secret_accessor_grants(name, a.project, a.secret_env, member, opts=o,
                                             after=self.runtime_account).values())
        envs: list[dict] = [{"name": k, "value": v} for k, v in a.env]
        envs += [{"name": s.name, "valueSource": {"secretKeyRef": {"secret": s.secret, "version": s.version}}}
                 for s in a.secret_env]
        envs += [{"name": marks.JOB_SOURCE_REVISION_ENV, "value": a.source_revision}]
        if a.change_cause:
            envs.append({"name": marks.JOB_CHANGE_CAUSE_ENV, "value": a.change_cause})
        container: dict = {"image": a.image, "envs": envs,
                           "resources": {"limits": {"cpu": a.cpu, "memory": a.memory}}}
        task: dict = {"serviceAccount": a.runtime_email, "timeout": f"{a.timeout_seconds}s",
                      "maxRetries": a.max_retries, "containers": [container]}
        if a.cloudsql_instances:
            task["volumes"] = [{"name": "cloudsql", "cloudSqlInstance": {"instances": list(a.cloudsql_instances)}}]
            container["volumeMounts"] = [{"name": "cloudsql", "mountPath": "/cloudsql"}]
        self.job = kinds.CLOUD_RUN_JOB(
            name, {"name": a.job_name, "project": a.project, "location": a.region,
                   "template": {"template": task}},
            pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.runtime_account, *grants])))
        ids.importable(self.job, ids.gcp_located(a.project, a.region, "jobs", a.job_name))
        if a.schedule:
            job_ref = f"projects/{a.project}/locations/{a.region}/jobs/{a.job_name}"
            self.invoker = kinds.CLOUD_RUN_JOB_IAM_MEMBER(
                f"{name}-trigger-invoker", {"project": a.project, "location": a.region,
                                            "name": self.job.output("name"), "role": INVOKER_ROLE,
                                            "member": member}, o)
            ids.importable(self.invoker, iam_member_import_id(job_ref, INVOKER_ROLE, member))
            self.trigger = kinds.CLOUD_SCHEDULER_JOB(
                f"{name}-trigger",
                {"name": f"{a.job_name}-trigger", "project": a.project, "region": a.region,
                 "schedule": a.schedule, "timeZone": a.time_zone,
                 "httpTarget": {"httpMethod": "POST",
                                "uri": RUN_JOB_URI.format(project=a.project, region=a.region, job=a.job_name),
                                "oauthToken": {"serviceAccountEmail": a.runtime_email}}},
                pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[self.job, self.invoker])))
            ids.importable(self.trigger, ids.gcp_located(a.project, a.region, "jobs", f"{a.job_name}-trigger"))
        self.register_outputs({"job": a.job_name, "runtime_account": a.runtime_email})
