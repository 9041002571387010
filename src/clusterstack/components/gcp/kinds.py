"""The GCP resources clusterstack declares, by type token (:mod:`clusterstack.components.bytoken`
says why and what is repeated from the SDK), and the project's explicit provider.

Read from ``pulumi_gcp`` 10.2.0 (uv.lock), each kind from the file named in its row
(``_internal_init``: the token passed to ``super().__init__``, ``alias_opts``,
``secret_opts``; the ``@pulumi.getter(name=…)`` of each output read here), the provider from
``provider.py`` (``Provider._internal_init``: ``project``/``region``/``zone`` fall back to
``GOOGLE_PROJECT``… variables; ``additional_secret_outputs=["accessToken"]``) and the
instance lookup from ``compute/get_instance.py`` (``get_instance_output``).
``_utilities.get_plugin_download_url()`` is None. Inputs are written by wire name in the
components (``addressType``, nested ``portSpecification`` …), as the SDK's input types
translate them; tests/components/gcp/test_kinds.py checks these rows against the installed SDK.
"""

from __future__ import annotations

import os
from typing import Any

import pulumi

from clusterstack.components.bytoken import Kind, Package
from clusterstack.pulumi import tokens as t

GCP = Package("gcp", "pulumi_gcp", provider_secret_outputs=("accessToken",))

#: ``additional_secret_outputs`` of every labelled GCP resource (the provider's label maps).
_LABELS = ("effectiveLabels", "pulumiLabels")

ADDRESS = Kind(GCP, t.ADDRESS, "compute/address.py", ("address",), secret_outputs=_LABELS)
GLOBAL_ADDRESS = Kind(GCP, t.GLOBAL_ADDRESS, "compute/global_address.py", ("address",),
                      secret_outputs=_LABELS)
FIREWALL = Kind(GCP, t.FIREWALL, "compute/firewall.py")
MANAGED_SSL_CERTIFICATE = Kind(GCP, t.MANAGED_SSL_CERTIFICATE, "compute/managed_ssl_certificate.py",
                               aliases=("gcp:compute/mangedSslCertificate:MangedSslCertificate",))
NETWORK_ENDPOINT_GROUP = Kind(GCP, t.NETWORK_ENDPOINT_GROUP, "compute/network_endpoint_group.py")
NETWORK_ENDPOINT = Kind(GCP, t.NETWORK_ENDPOINT, "compute/network_endpoint.py")
HEALTH_CHECK = Kind(GCP, t.HEALTH_CHECK, "compute/health_check.py")
BACKEND_SERVICE = Kind(GCP, t.BACKEND_SERVICE, "compute/backend_service.py", ("generatedId",))
SECURITY_POLICY = Kind(GCP, t.SECURITY_POLICY, "compute/security_policy.py", secret_outputs=_LABELS)
SSL_POLICY = Kind(GCP, t.SSL_POLICY, "compute/ssl_policy.py")
URL_MAP = Kind(GCP, t.URL_MAP, "compute/url_map.py")
TARGET_HTTPS_PROXY = Kind(GCP, t.TARGET_HTTPS_PROXY, "compute/target_https_proxy.py")
GLOBAL_FORWARDING_RULE = Kind(GCP, t.GLOBAL_FORWARDING_RULE, "compute/global_forwarding_rule.py",
                              secret_outputs=_LABELS)
COMPUTE_INSTANCE = Kind(GCP, t.COMPUTE_INSTANCE, "compute/instance.py", secret_outputs=_LABELS)
IAP_SETTINGS = Kind(GCP, t.IAP_SETTINGS, "iap/settings.py")
ARTIFACT_REPOSITORY = Kind(GCP, t.ARTIFACT_REPOSITORY, "artifactregistry/repository.py",
                           secret_outputs=_LABELS)
CLOUD_RUN_SERVICE = Kind(GCP, t.CLOUD_RUN_SERVICE, "cloudrunv2/service.py",
                         ("uri", "latestReadyRevision"), secret_outputs=_LABELS)
CLOUD_RUN_JOB = Kind(GCP, t.CLOUD_RUN_JOB, "cloudrunv2/job.py", secret_outputs=_LABELS)
CLOUD_SCHEDULER_JOB = Kind(GCP, t.CLOUD_SCHEDULER_JOB, "cloudscheduler/job.py")
PROJECT_CUSTOM_ROLE = Kind(GCP, t.PROJECT_CUSTOM_ROLE, "projects/iam_custom_role.py")
SERVICE_ACCOUNT = Kind(GCP, t.GCP_SERVICE_ACCOUNT, "serviceaccount/account.py", ("email",),
                       aliases=("gcp:serviceAccount/account:Account",))
GCS_BUCKET = Kind(GCP, t.GCS_BUCKET, "storage/bucket.py", ("url",), secret_outputs=_LABELS)

# IAM grants: one role-authoritative binding and one additive member kind per target kind.
PROJECT_IAM_BINDING = Kind(GCP, t.PROJECT_IAM_BINDING, "projects/iam_binding.py")
PROJECT_IAM_MEMBER = Kind(GCP, t.PROJECT_IAM_MEMBER, "projects/iam_member.py")
GCS_BUCKET_IAM_BINDING = Kind(GCP, t.GCS_BUCKET_IAM_BINDING, "storage/bucket_iam_binding.py")
GCS_BUCKET_IAM_MEMBER = Kind(GCP, t.GCS_BUCKET_IAM_MEMBER, "storage/bucket_iam_member.py")
SECRET_IAM_BINDING = Kind(GCP, t.SECRET_IAM_BINDING, "secretmanager/secret_iam_binding.py")
SECRET_IAM_MEMBER = Kind(GCP, t.SECRET_IAM_MEMBER, "secretmanager/secret_iam_member.py")
ARTIFACT_REPOSITORY_IAM_BINDING = Kind(GCP, t.ARTIFACT_REPOSITORY_IAM_BINDING,
                                       "artifactregistry/repository_iam_binding.py")
ARTIFACT_REPOSITORY_IAM_MEMBER = Kind(GCP, t.ARTIFACT_REPOSITORY_IAM_MEMBER,
                                      "artifactregistry/repository_iam_member.py")
SERVICE_ACCOUNT_IAM_BINDING = Kind(GCP, t.SERVICE_ACCOUNT_IAM_BINDING, "serviceaccount/iam_binding.py",
                                   aliases=("gcp:serviceAccount/iAMBinding:IAMBinding",))
SERVICE_ACCOUNT_IAM_MEMBER = Kind(GCP, t.SERVICE_ACCOUNT_IAM_MEMBER, "serviceaccount/iam_member.py",
                                  aliases=("gcp:serviceAccount/iAMMember:IAMMember",))
KMS_CRYPTO_KEY_IAM_BINDING = Kind(GCP, t.KMS_CRYPTO_KEY_IAM_BINDING, "kms/crypto_key_iam_binding.py")
KMS_CRYPTO_KEY_IAM_MEMBER = Kind(GCP, t.KMS_CRYPTO_KEY_IAM_MEMBER, "kms/crypto_key_iam_member.py")
IAP_BACKEND_IAM_BINDING = Kind(GCP, t.IAP_BACKEND_IAM_BINDING, "iap/web_backend_service_iam_binding.py")
IAP_BACKEND_IAM_MEMBER = Kind(GCP, t.IAP_BACKEND_IAM_MEMBER, "iap/web_backend_service_iam_member.py")
KMS_KEY_RING_IAM_BINDING = Kind(GCP, t.KMS_KEY_RING_IAM_BINDING, "kms/key_ring_iam_binding.py")
KMS_KEY_RING_IAM_MEMBER = Kind(GCP, t.KMS_KEY_RING_IAM_MEMBER, "kms/key_ring_iam_member.py")
CLOUD_RUN_SERVICE_IAM_BINDING = Kind(GCP, t.CLOUD_RUN_SERVICE_IAM_BINDING,
                                     "cloudrunv2/service_iam_binding.py")
CLOUD_RUN_SERVICE_IAM_MEMBER = Kind(GCP, t.CLOUD_RUN_SERVICE_IAM_MEMBER,
                                    "cloudrunv2/service_iam_member.py")
CLOUD_RUN_JOB_IAM_BINDING = Kind(GCP, t.CLOUD_RUN_JOB_IAM_BINDING, "cloudrunv2/job_iam_binding.py")
CLOUD_RUN_JOB_IAM_MEMBER = Kind(GCP, t.CLOUD_RUN_JOB_IAM_MEMBER, "cloudrunv2/job_iam_member.py")
IAP_CLOUD_RUN_IAM_BINDING = Kind(GCP, t.IAP_CLOUD_RUN_IAM_BINDING,
                                 "iap/web_cloud_run_service_iam_binding.py")
IAP_CLOUD_RUN_IAM_MEMBER = Kind(GCP, t.IAP_CLOUD_RUN_IAM_MEMBER, "iap/web_cloud_run_service_iam_member.py")

#: Every kind above (tests/components/gcp/test_kinds.py checks each against the SDK's source).
ALL: tuple[Kind, ...] = tuple(v for v in tuple(globals().values()) if isinstance(v, Kind))

#: ``compute/get_instance.py`` ``get_instance_output``'s token.
GET_INSTANCE = "gcp:compute/getInstance:getInstance"

#: The provider's inputs that fall back to environment variables when not given, in the
#: SDK's order of lookup (provider.py ``_internal_init``: ``_utilities.get_env``).
_ENV_FALLBACK: dict[str, tuple[str, ...]] = {
    "project": ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"),
    "region": ("GOOGLE_REGION", "GCLOUD_REGION", "CLOUDSDK_COMPUTE_REGION"),
    "zone": ("GOOGLE_ZONE", "GCLOUD_ZONE", "CLOUDSDK_COMPUTE_ZONE"),
}


def _env(names: tuple[str, ...]) -> str | None:
    """``_utilities.get_env``: the first of ``names`` that is set."""
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            return value
    return None


def provider(name: str, *, project: str | None = None, region: str | None = None,
             zone: str | None = None, opts: pulumi.ResourceOptions | None = None
             ) -> pulumi.ProviderResource:
    """``pulumi:providers:gcp`` as ``pulumi_gcp.Provider(name, project=…, region=…)`` declares
    it: an input not given falls back to its environment variables (which a plan hides:
    :func:`clusterstack.plan.runtime.hermetic_environ`), and ``accessToken`` is a secret output."""
    given = {"project": project, "region": region, "zone": zone}
    props = {k: v if v is not None else _env(_ENV_FALLBACK[k]) for k, v in given.items()}
    return GCP.provider(name, props, opts)


def get_instance_output(*, name: str, zone: str, project: str,
                        opts: pulumi.InvokeOutputOptions | None = None) -> pulumi.Output[Any]:
    """``gcp.compute.get_instance_output(name=…, zone=…, project=…)``: the instance as the
    provider returns it, by wire name (``networkInterfaces[0].networkIp``)."""
    return GCP.invoke_output(GET_INSTANCE, {"name": name, "project": project, "selfLink": None,
                                            "zone": zone}, opts)
