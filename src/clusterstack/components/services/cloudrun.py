"""An IAP-gated Cloud Run service with its own runtime service account.

Sources:
- Cloud Run "Configure IAP for Cloud Run" (``iap_enabled`` on the v2 service, launch stage
  BETA in the provider's ``cloudrunv2_service_iap`` example): IAP calls the service as the IAP
  service agent ``service-<project number>@gcp-sa-iap.iam.gserviceaccount.com``, which
  therefore needs ``roles/run.invoker`` on the service; people reach it through IAP with
  ``roles/iap.httpsResourceAccessor`` on the service's IAP resource
  (``projects/<p>/iap_web/cloud_run-<region>/services/<name>``).
- Cloud Run "Configure secrets": an environment variable whose ``value_source.secret_key_ref``
  names a Secret Manager secret and version is resolved by Cloud Run when an instance starts;
  the runtime service account needs ``roles/secretmanager.secretAccessor`` on the secret. The
  value never passes through Pulumi (inputs, state or logs).
- Cloud Run "Rollbacks, gradual rollouts, and traffic migration": every template change
  creates a new immutable revision; Cloud Run keeps (retains) old revisions, so traffic can be
  sent back to any of them. This component never deletes revisions nor pins traffic to a
  named one (traffic follows the latest ready revision), and it stamps each revision template
  with its source commit and rollout message (:mod:`clusterstack.components.services.marks`)
  so ``clusterstack deploy history`` can tell retained revisions apart.
- Images by digest only (``…@sha256:…``): a tag can be moved, a digest names the bytes a
  revision ran, which is what a rollback returns to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pulumi

from clusterstack.components.bytoken import Declared
from clusterstack.components.gcp import kinds
from clusterstack.components.services import marks
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import CLOUD_RUN_SERVICE_COMPONENT
from clusterstack.redact import redact_text

INVOKER_ROLE = "roles/run.invoker"
IAP_ACCESSOR_ROLE = "roles/iap.httpsResourceAccessor"
SECRET_ACCESSOR_ROLE = "roles/secretmanager.secretAccessor"

_MEMBER_KINDS = ("group:", "serviceAccount:", "domain:")  # never user: (see iap_member)
_EMAIL = re.compile(r"\A[^@\s:]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\Z")
_DOMAIN = re.compile(r"\A[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\Z")
_ENV_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def iap_member(who: str) -> str:
    """An IAM member for an IAP access grant: ``*@example.org`` → ``domain:example.org``; a typed
    ``group:`` / ``serviceAccount:`` / ``domain:`` member is kept (email forms lower-cased, as IAM
    compares them). Raises ValueError for anything else (IAM "Principal identifiers").

    A person — a bare email or a ``user:`` member — is refused: the member becomes part of the
    grant's logical name, URN and import id, i.e. permanently in Pulumi state and in every plan,
    while people may only appear as encrypted ``human-NNN`` ids (docs/iam.md). Give people access
    through a group, or grant them in the IAM file. The error never repeats the email in full."""
    text = who.strip()
    if text.lower().startswith("user:") or (_EMAIL.match(text) and not text.startswith("*@")):
        raise ValueError(f"IAP member {redact_text(text)!r}: a personal email is not allowed (it would "
                         "be stored in resource names and state); use group:…, *@domain or "
                         "serviceAccount:…, or grant the person in the IAM file")
    if text.startswith(_MEMBER_KINDS):
        kind, _, rest = text.partition(":")
        ok = _DOMAIN.match(rest) if kind == "domain" else _EMAIL.match(rest)
        if not ok:
            raise ValueError(f"IAP member {redact_text(who)!r}: {redact_text(rest)!r} is not a valid {kind}")
        return f"{kind}:{rest.lower()}"
    if text.startswith("*@"):
        domain = text[2:]
        if not _DOMAIN.match(domain):
            raise ValueError(f"IAP member {who!r}: {domain!r} is not a domain")
        return f"domain:{domain.lower()}"
    if _EMAIL.match(text):
        return f"user:{text.lower()}"
    raise ValueError(f"IAP member {redact_text(who)!r}: give *@domain or a typed member "
                     "(group:, serviceAccount:, domain:)")


def iam_member_import_id(resource: str, role: str, member: str) -> str:
    """Import ID of a ``…IamMember`` resource: ``"<resource in question> <role> <member>"``,
    space-delimited (pulumi-gcp ``cloudrunv2.ServiceIamMember`` / ``iap.WebCloudRunServiceIamMember``
    / ``secretmanager.SecretIamMember`` "Import" sections)."""
    return f"{resource} {role} {member}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _unique_slugs(values: tuple[str, ...] | list[str], what: str) -> None:
    """Logical names are slugs; two values with one slug would collide as Pulumi names."""
    seen: dict[str, str] = {}
    for v in values:
        other = seen.setdefault(_slug(v), v)
        if other != v:
            raise ValueError(f"{what} {v!r} and {other!r} map to the same resource name; "
                             "they cannot both be declared")


def secret_accessor_grants(name: str, project: str, secret_env: tuple["SecretEnv", ...], member: str, *,
                           opts: pulumi.ResourceOptions, after: pulumi.Resource
                           ) -> dict[str, Declared]:
    """``roles/secretmanager.secretAccessor`` for ``member`` on each secret ``secret_env``
    references (once per secret, sorted), created after ``after`` (the runtime account), each
    importable: secret id → grant. Cloud Run reads the value when an instance or task starts,
    so the account needs exactly these (Cloud Run "Configure secrets")."""
    grants: dict[str, Declared] = {}
    for secret in sorted({s.secret for s in secret_env}):
        grant = kinds.SECRET_IAM_MEMBER(
            f"{name}-secret-{_slug(secret)}",
            {"project": project, "secretId": secret, "role": SECRET_ACCESSOR_ROLE, "member": member},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[after])))
        ids.importable(grant, iam_member_import_id(f"projects/{project}/secrets/{secret}",
                                                   SECRET_ACCESSOR_ROLE, member))
        grants[secret] = grant
    return grants


@dataclass(frozen=True)
class SecretEnv:
    name: str                # <service>:secretEnv key — the variable's name inside the container
    secret: str              # <service>:secretEnv value — Secret Manager secret id in the project
    version: str = "latest"  # <service>:secretEnv "secret:version" suffix (default latest)


@dataclass(frozen=True)
class CloudRunServiceArgs:
    project: str                  # <service>:project — the GCP project
    project_number: str           # <service>:projectNumber — names the IAP service agent
    region: str                   # <service>:region
    service_name: str             # <service>:serviceName (default: the Pulumi project name)
    image: str                    # <service>:image — container image by digest (…@sha256:…)
    runtime_account_id: str       # <service>:runtimeAccount — account id of the runtime SA
    env: tuple[tuple[str, str], ...] = ()      # <service>:env — plain (non-secret) variables
    secret_env: tuple[SecretEnv, ...] = ()     # <service>:secretEnv — Secret Manager references
    min_instances: int = 0        # <service>:minInstances
    max_instances: int = 3        # <service>:maxInstances
    iap_access: tuple[str, ...] = ()           # <service>:iapAccess — *@domain / group: / serviceAccount: members
    container_port: int = 8080    # <service>:port
    health_path: str = "/healthz"  # <service>:healthPath — startup and liveness probe path
    source_revision: str = marks.UNRELEASED   # <service>:sourceRevision — set by `deploy rollout`
    change_cause: str = ""        # <service>:changeCause — the rollout message, set by `deploy rollout`
    members: tuple[str, ...] = field(init=False, default=())  # iap_access normalised (iap_member)

    def __post_init__(self) -> None:
        if not marks.digest_pinned(self.image):
            raise ValueError(f"image {self.image!r} is not pinned by digest; use <repository>@sha256:<digest>")
        if not 0 <= self.min_instances <= self.max_instances or self.max_instances < 1:
            raise ValueError(f"instances: need 0 <= min ({self.min_instances}) <= max "
                             f"({self.max_instances}) and max >= 1")
        names = [n for n, _ in self.env] + [s.name for s in self.secret_env]
        bad = [n for n in names if not _ENV_NAME.match(n)]
        if bad:
            raise ValueError(f"invalid environment variable name {bad[0]!r}")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"environment variable {dup[0]!r} is set twice (env and secretEnv "
                             "share one namespace)")
        members = tuple(dict.fromkeys(iap_member(m) for m in self.iap_access))
        _unique_slugs(members, "IAP member")
        _unique_slugs(sorted({s.secret for s in self.secret_env}), "secret")
        object.__setattr__(self, "members", members)

    @property
    def runtime_email(self) -> str:
        return f"{self.runtime_account_id}@{self.project}.iam.gserviceaccount.com"

    @property
    def iap_service_agent(self) -> str:
        return f"service-{self.project_number}@gcp-sa-iap.iam.gserviceaccount.com"


class CloudRunService(pulumi.ComponentResource):
    """Runtime SA → secret access → the IAP-enabled ``gcp:cloudrunv2/service:Service`` → the IAP agent's
    invoker binding → one IAP access grant per member. Outputs: ``url``, ``runtime_account``,
    ``latest_ready_revision``."""

    service: Declared
    runtime_account: Declared

    def __init__(self, name: str, args: CloudRunServiceArgs, *, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLOUD_RUN_SERVICE_COMPONENT, name, None, opts)
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        a = args
        self.runtime_account = kinds.SERVICE_ACCOUNT(
            f"{name}-runtime", {"project": a.project, "accountId": a.runtime_account_id,
                                "displayName": f"{a.service_name} (Cloud Run runtime)"}, o)
        ids.importable(self.runtime_account, ids.gcp_service_account(a.project, a.runtime_email))
        runtime_member = f"serviceAccount:{a.runtime_email}"

        self.secret_access = secret_accessor_grants(name, a.project, a.secret_env, runtime_member,
                                                    opts=o, after=self.runtime_account)

        probe = {"httpGet": {"path": a.health_path, "port": a.container_port}}
        envs: list[dict] = [{"name": k, "value": v} for k, v in a.env]
        envs += [{"name": s.name,
                  "valueSource": {"secretKeyRef": {"secret": s.secret, "version": s.version}}}
                 for s in a.secret_env]
        annotations = {marks.SOURCE_REVISION: a.source_revision}
        if a.change_cause:
            annotations[marks.CLOUD_RUN_CHANGE_CAUSE] = a.change_cause
        self.service = kinds.CLOUD_RUN_SERVICE(
            name,
            {"name": a.service_name, "project": a.project, "location": a.region,
             "launchStage": "BETA", "iapEnabled": True, "ingress": "INGRESS_TRAFFIC_ALL",
             "template": {
                 "serviceAccount": a.runtime_email,
                 "annotations": annotations,
                 "scaling": {"minInstanceCount": a.min_instances, "maxInstanceCount": a.max_instances},
                 "containers": [{
                     "image": a.image, "ports": {"containerPort": a.container_port}, "envs": envs,
                     "startupProbe": {**probe, "periodSeconds": 5, "failureThreshold": 24},
                     "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 3}}]},
             "traffics": [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}]},
            pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(
                depends_on=[self.runtime_account, *self.secret_access.values()])))
        service_ref = f"projects/{a.project}/locations/{a.region}/services/{a.service_name}"
        ids.importable(self.service, ids.gcp_located(a.project, a.region, "services", a.service_name))

        agent = f"serviceAccount:{a.iap_service_agent}"
        self.iap_invoker = kinds.CLOUD_RUN_SERVICE_IAM_MEMBER(
            f"{name}-iap-invoker", {"project": a.project, "location": a.region,
                                    "name": self.service.output("name"), "role": INVOKER_ROLE,
                                    "member": agent}, o)
        ids.importable(self.iap_invoker, iam_member_import_id(service_ref, INVOKER_ROLE, agent))

        iap_ref = f"projects/{a.project}/iap_web/cloud_run-{a.region}/services/{a.service_name}"
        self.iap_access: dict[str, Declared] = {}
        for member in a.members:
            grant = kinds.IAP_CLOUD_RUN_IAM_MEMBER(
                f"{name}-iap-{_slug(member)}",
                {"project": a.project, "location": a.region,
                 "cloudRunServiceName": self.service.output("name"), "role": IAP_ACCESSOR_ROLE,
                 "member": member}, o)
            ids.importable(grant, iam_member_import_id(iap_ref, IAP_ACCESSOR_ROLE, member))
            self.iap_access[member] = grant

        self.register_outputs({"url": self.service.output("uri"), "runtime_account": a.runtime_email,
                               "latest_ready_revision": self.service.output("latestReadyRevision")})
