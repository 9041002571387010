"""THE table of type tokens: every resource type clusterstack declares, names or guards.

A Pulumi type token is ``<package>:<module>:<member>`` (pulumi/pulumi
``sdk/go/common/tokens/tokens.go``: ``QualifiedToken``; a type needs all three parts,
``ParseTypeToken``). Provider SDK classes fix the tokens of their resources (``gcp.compute.Address``
registers ``gcp:compute/address:Address``); a Kubernetes object's token is
``kubernetes:<group>/<version>:<Kind>`` with ``core`` for the core group (pulumi-kubernetes
``apiextensions.CustomResource`` builds it from ``apiVersion`` and ``kind``); a provider's is
``pulumi:providers:<package>``; the stack's is ``pulumi:pulumi:Stack`` (``resource.RootStackType``).

**Family**: the guard's rules are about a kind of thing, not one CRD version: a NodePool of
``compute.coreweave.com`` is the same resource at ``v1alpha1`` or ``v1``. :func:`family` maps a
Kubernetes token to ``kubernetes:<group>/*:<Kind>`` (any version); any other token is its own
family. :func:`same_family` compares two tokens that way.

A new resource type goes here first (docs/architecture.md "Where a new piece goes"); a test
checks that every token a shipped stack's plan declares is in :data:`ALL`.
"""

from __future__ import annotations

from dataclasses import dataclass

TOKEN_DELIMITER = ":"
STACK_TYPE = "pulumi:pulumi:Stack"  # resource.RootStackType
PROVIDER_PREFIX = "pulumi:providers:"  # providers.MakeProviderType


def provider_type(package: str) -> str:
    """``pulumi:providers:<package>``, the type of an explicit (or default) provider."""
    return f"{PROVIDER_PREFIX}{package}"


def is_provider(token: str) -> bool:
    return token.startswith(PROVIDER_PREFIX)


COMPONENT_PACKAGE = "clusterstack"  # the package of clusterstack's own components


def is_component(token: str) -> bool:
    """True for one of clusterstack's own component types (``clusterstack:<area>:<Name>``)."""
    return package(token) == COMPONENT_PACKAGE


def split(token: str) -> tuple[str, str, str]:
    """``(package, module, member)`` of a type token (tokens.go ``Package``/``Module``/``Name``:
    split at the first two ``:``). Raises ValueError for a token without three parts."""
    parts = token.split(TOKEN_DELIMITER, 2)
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not a type token <package>:<module>:<member>: {token!r}")
    return parts[0], parts[1], parts[2]


def package(token: str) -> str:
    """The package (provider) of a token: ``gcp`` of ``gcp:compute/address:Address``."""
    return token.split(TOKEN_DELIMITER, 1)[0]


def is_patch(token: str) -> bool:
    """A pulumi-kubernetes Patch resource (``kubernetes:apps/v1:DeploymentPatch``): a
    server-side apply of some fields of an existing object, never imported — the provider's
    import reads the kind from the type token (provider/pkg/provider/provider.go ``gvkFromURN``:
    ``Kind: urn.Type().Name()``), a ``…Patch`` kind no API server serves, so the read finds
    nothing. pulumi-kubernetes ``kinds.IsPatchResource`` (the kind plus ``Patch``)."""
    return package(token) == "kubernetes" and member(token).endswith("Patch") and member(token) != "Patch"


def member(token: str) -> str:
    """The member (type name, a Kubernetes kind) of a token: ``NodePool`` (the text after the
    last ``:``; a member never contains one)."""
    return token.rsplit(TOKEN_DELIMITER, 1)[-1]


@dataclass(frozen=True)
class KubernetesKind:
    """A Kubernetes kind at one API version: ``group`` (``""`` for the core group), ``version``,
    ``kind``. ``api_version`` is what an object's ``apiVersion`` says; ``token`` its Pulumi type."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def token(self) -> str:
        return f"kubernetes:{self.group or 'core'}/{self.version}:{self.kind}"


def kubernetes_token(api_version: str, kind: str) -> str:
    """The Pulumi type of a Kubernetes object with this ``apiVersion`` and ``kind``."""
    group, _, version = api_version.rpartition("/")
    return KubernetesKind(group, version, kind).token


def family(token: str) -> str:
    """The resource family of ``token``: ``kubernetes:<group>/*:<Kind>`` for a Kubernetes kind
    (any API version; ``core`` for the core group), else the token itself."""
    try:
        pkg, module, name = split(token)
    except ValueError:
        return token
    if pkg == "kubernetes" and "/" in module:
        return f"kubernetes:{module.rsplit('/', 1)[0]}/*:{name}"
    return token


def same_family(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are one kind of resource (see :func:`family`)."""
    return family(a) == family(b)


# --- Kubernetes (pulumi-kubernetes) ---------------------------------------------------------
# Custom resources the components declare through apiextensions.CustomResource (apiVersion and
# kind come from here).
NODEPOOL_KIND = KubernetesKind("compute.coreweave.com", "v1alpha1", "NodePool")  # CoreWeave CKS
# Kueue 0.14 serves Topology only at v1beta1 (Kueue CHANGELOG-0.14, "Upgrading steps"); state
# written before holds it under the v1alpha1 type, which the component aliases.
KUEUE_TOPOLOGY_KIND = KubernetesKind("kueue.x-k8s.io", "v1beta1", "Topology")
KUEUE_RESOURCE_FLAVOR_KIND = KubernetesKind("kueue.x-k8s.io", "v1beta1", "ResourceFlavor")
KUEUE_CLUSTER_QUEUE_KIND = KubernetesKind("kueue.x-k8s.io", "v1beta1", "ClusterQueue")
KUEUE_LOCAL_QUEUE_KIND = KubernetesKind("kueue.x-k8s.io", "v1beta1", "LocalQueue")
CLUSTER_ISSUER_KIND = KubernetesKind("cert-manager.io", "v1", "ClusterIssuer")
TRAEFIK_MIDDLEWARE_KIND = KubernetesKind("traefik.io", "v1alpha1", "Middleware")

NODEPOOL = NODEPOOL_KIND.token
KUEUE_TOPOLOGY = KUEUE_TOPOLOGY_KIND.token
KUEUE_RESOURCE_FLAVOR = KUEUE_RESOURCE_FLAVOR_KIND.token
KUEUE_CLUSTER_QUEUE = KUEUE_CLUSTER_QUEUE_KIND.token
KUEUE_LOCAL_QUEUE = KUEUE_LOCAL_QUEUE_KIND.token
KUEUE_TOPOLOGY_V1ALPHA1 = "kubernetes:kueue.x-k8s.io/v1alpha1:Topology"  # an alias only, never declared
CLUSTER_ISSUER = CLUSTER_ISSUER_KIND.token
TRAEFIK_MIDDLEWARE = TRAEFIK_MIDDLEWARE_KIND.token
# Built-in kinds (pulumi_kubernetes classes) and the Helm release.
NAMESPACE = "kubernetes:core/v1:Namespace"
K8S_SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
K8S_SERVICE = "kubernetes:core/v1:Service"
PERSISTENT_VOLUME_CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
K8S_SECRET = "kubernetes:core/v1:Secret"  # never declared; CI redaction masks its data whole
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"

# --- GCP (pulumi-gcp) -----------------------------------------------------------------------
ADDRESS = "gcp:compute/address:Address"
GLOBAL_ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
FIREWALL = "gcp:compute/firewall:Firewall"
MANAGED_SSL_CERTIFICATE = "gcp:compute/managedSslCertificate:ManagedSslCertificate"
NETWORK_ENDPOINT_GROUP = "gcp:compute/networkEndpointGroup:NetworkEndpointGroup"
NETWORK_ENDPOINT = "gcp:compute/networkEndpoint:NetworkEndpoint"
HEALTH_CHECK = "gcp:compute/healthCheck:HealthCheck"
BACKEND_SERVICE = "gcp:compute/backendService:BackendService"
SECURITY_POLICY = "gcp:compute/securityPolicy:SecurityPolicy"
SSL_POLICY = "gcp:compute/sSLPolicy:SSLPolicy"  # pulumi-gcp 10.2.0 compute/ssl_policy.py
URL_MAP = "gcp:compute/uRLMap:URLMap"
TARGET_HTTPS_PROXY = "gcp:compute/targetHttpsProxy:TargetHttpsProxy"
GLOBAL_FORWARDING_RULE = "gcp:compute/globalForwardingRule:GlobalForwardingRule"
IAP_SETTINGS = "gcp:iap/settings:Settings"
IAP_CLOUD_RUN_IAM_MEMBER = "gcp:iap/webCloudRunServiceIamMember:WebCloudRunServiceIamMember"
IAP_BACKEND_IAM_BINDING = "gcp:iap/webBackendServiceIamBinding:WebBackendServiceIamBinding"
IAP_BACKEND_IAM_MEMBER = "gcp:iap/webBackendServiceIamMember:WebBackendServiceIamMember"
ARTIFACT_REPOSITORY = "gcp:artifactregistry/repository:Repository"
ARTIFACT_REPOSITORY_IAM_BINDING = "gcp:artifactregistry/repositoryIamBinding:RepositoryIamBinding"
ARTIFACT_REPOSITORY_IAM_MEMBER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
CLOUD_RUN_SERVICE = "gcp:cloudrunv2/service:Service"
CLOUD_RUN_SERVICE_IAM_MEMBER = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
CLOUD_RUN_SERVICE_IAM_BINDING = "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"
CLOUD_RUN_JOB = "gcp:cloudrunv2/job:Job"
CLOUD_SCHEDULER_JOB = "gcp:cloudscheduler/job:Job"
COMPUTE_INSTANCE = "gcp:compute/instance:Instance"
CLOUD_RUN_JOB_IAM_MEMBER = "gcp:cloudrunv2/jobIamMember:JobIamMember"
CLOUD_RUN_JOB_IAM_BINDING = "gcp:cloudrunv2/jobIamBinding:JobIamBinding"
IAP_CLOUD_RUN_IAM_BINDING = "gcp:iap/webCloudRunServiceIamBinding:WebCloudRunServiceIamBinding"
KMS_KEY_RING_IAM_MEMBER = "gcp:kms/keyRingIAMMember:KeyRingIAMMember"
KMS_KEY_RING_IAM_BINDING = "gcp:kms/keyRingIAMBinding:KeyRingIAMBinding"
KMS_CRYPTO_KEY_IAM_BINDING = "gcp:kms/cryptoKeyIAMBinding:CryptoKeyIAMBinding"
KMS_CRYPTO_KEY_IAM_MEMBER = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
PROJECT_IAM_BINDING = "gcp:projects/iAMBinding:IAMBinding"
PROJECT_IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
PROJECT_CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
SECRET_IAM_BINDING = "gcp:secretmanager/secretIamBinding:SecretIamBinding"
SECRET_IAM_MEMBER = "gcp:secretmanager/secretIamMember:SecretIamMember"
GCP_SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
SERVICE_ACCOUNT_IAM_BINDING = "gcp:serviceaccount/iAMBinding:IAMBinding"
SERVICE_ACCOUNT_IAM_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
GCS_BUCKET = "gcp:storage/bucket:Bucket"
GCS_BUCKET_IAM_BINDING = "gcp:storage/bucketIAMBinding:BucketIAMBinding"
GCS_BUCKET_IAM_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"

# --- Cloudflare (pulumi-cloudflare v6) ------------------------------------------------------
DNS_RECORD = "cloudflare:index/dnsRecord:DnsRecord"
LEGACY_DNS_RECORD = "cloudflare:index/record:Record"  # v5's name; still guarded in old state
R2_BUCKET = "cloudflare:index/r2Bucket:R2Bucket"
R2_BUCKET_LIFECYCLE = "cloudflare:index/r2BucketLifecycle:R2BucketLifecycle"
R2_BUCKET_LOCK = "cloudflare:index/r2BucketLock:R2BucketLock"

# --- CoreWeave (pulumi-coreweave) -----------------------------------------------------------
COREWEAVE_BUCKET = "coreweave:index/objectStorageBucket:ObjectStorageBucket"
COREWEAVE_BUCKET_LIFECYCLE = ("coreweave:index/objectStorageBucketLifecycleConfiguration:"
                              "ObjectStorageBucketLifecycleConfiguration")
COREWEAVE_BUCKET_POLICY = "coreweave:index/objectStorageBucketPolicy:ObjectStorageBucketPolicy"

# --- GitHub (pulumi-github) -----------------------------------------------------------------
GITHUB_RULESET = "github:index/repositoryRuleset:RepositoryRuleset"
GITHUB_ENVIRONMENT = "github:index/repositoryEnvironment:RepositoryEnvironment"
GITHUB_DEPLOYMENT_POLICY = ("github:index/repositoryEnvironmentDeploymentPolicy:"
                            "RepositoryEnvironmentDeploymentPolicy")

# --- pulumi-command -------------------------------------------------------------------------
LOCAL_COMMAND = "command:local:Command"

# --- providers ------------------------------------------------------------------------------
KUBERNETES_PROVIDER = provider_type("kubernetes")
GCP_PROVIDER = provider_type("gcp")
CLOUDFLARE_PROVIDER = provider_type("cloudflare")
COREWEAVE_PROVIDER = provider_type("coreweave")
GITHUB_PROVIDER = provider_type("github")

# --- clusterstack's own components (``clusterstack:<area>:<Name>``) ---------------------------
NODEPOOLS_COMPONENT = "clusterstack:coreweave:NodePools"
KUEUE_COMPONENT = "clusterstack:coreweave:Kueue"
INGRESS_COMPONENT = "clusterstack:coreweave:Ingress"
RBAC_COMPONENT = "clusterstack:coreweave:Rbac"
TEAMS_COMPONENT = "clusterstack:coreweave:Teams"
FEDERATION_DNS_COMPONENT = "clusterstack:cloudflare:FederationDns"
LOAD_BALANCER_DNS_COMPONENT = "clusterstack:cloudflare:LoadBalancerDns"
STATIC_ADDRESSES_COMPONENT = "clusterstack:gcp:StaticAddresses"
GCLB_IAP_COMPONENT = "clusterstack:gcp:GcpGclbIap"
IAM_BINDINGS_COMPONENT = "clusterstack:gcp:IamBindings"
REGISTRY_MIRRORS_COMPONENT = "clusterstack:gcp:RegistryMirrors"
GCS_BUCKETS_COMPONENT = "clusterstack:buckets:GcsBuckets"
COREWEAVE_BUCKETS_COMPONENT = "clusterstack:buckets:CoreweaveBuckets"
R2_BUCKETS_COMPONENT = "clusterstack:buckets:R2Buckets"
REPOSITORY_POLICY_COMPONENT = "clusterstack:github:RepositoryPolicy"
CLOUD_RUN_SERVICE_COMPONENT = "clusterstack:services:CloudRunService"
KUBERNETES_SERVICE_COMPONENT = "clusterstack:services:KubernetesService"
COMMAND_SERVICE_COMPONENT = "clusterstack:services:CommandService"
GCE_VM_SERVICE_COMPONENT = "clusterstack:services:GceVmService"
CLOUD_RUN_JOB_COMPONENT = "clusterstack:services:CloudRunJob"

# --- groups the guard's defaults use ----------------------------------------------------------
# Object storage buckets (the buckets/ project): a replace or delete destroys the data.
BUCKETS = frozenset({GCS_BUCKET, COREWEAVE_BUCKET, R2_BUCKET})

#: Every token above: the one table.
ALL = frozenset(v for k, v in dict(globals()).items()
                if k.isupper() and isinstance(v, str) and k not in
                ("TOKEN_DELIMITER", "PROVIDER_PREFIX", "COMPONENT_PACKAGE"))
