"""The project's IAM as declared in the reviewed IAM file (``iam/iam.yaml``).

- custom roles (``gcp:projects/iAMCustomRole:IAMCustomRole``);
- owned service accounts (``gcp:serviceaccount/account:Account``) with ``protect=True``: deleting a
  service account breaks every key, binding and workload identity that names it, and a
  re-created account with the same email is a *different* principal to IAM (GCP "Deleting
  service accounts"), so the engine must refuse the delete;
- grants, **additive by default**: one non-authoritative member resource per (target, role,
  condition title, member) — ``projects.IAMMember``, ``storage.BucketIAMMember``,
  ``secretmanager.SecretIamMember``, ``artifactregistry.RepositoryIamMember``,
  ``serviceaccount.IAMMember``, ``kms.CryptoKeyIAMMember``, ``iap.WebBackendServiceIamMember``,
  ``kms.KeyRingIAMMember``, ``cloudrunv2.ServiceIamMember``, ``cloudrunv2.JobIamMember``,
  ``iap.WebCloudRunServiceIamMember`` — for each kind the resource Marin declares, with the
  inputs Marin passes (marin-community/marin ``infra/pulumi/src/iac/gcp/iam.py`` @ 0fe5f595:
  ``_grant_*_iam``), so an adopted Marin member plans identical. Members the file does not
  list keep their access (provider docs, "IAM policy for …": "Non-authoritative. … Other members for the role … are preserved"), so the first ``up`` on an
  adopted project removes nobody; removing a member from the file deletes only that member's
  resource, which removes only that member. This is Marin's choice too: it grants with
  ``gcp.projects.IAMMember`` and finds undeclared members with a separate live scan
  (marin-community/marin ``infra/pulumi/src/iac/gcp/iam.py`` and ``infra/pulumi/iam_drift.py``);
- where the file opts a role in (``authoritative: true`` on the grants of that role on one
  target), one role-authoritative binding per (target, role, condition title):
  ``projects.IAMBinding``, ``storage.BucketIAMBinding``, ``secretmanager.SecretIamBinding``,
  ``artifactregistry.RepositoryIamBinding``, ``serviceaccount.IAMBinding``,
  ``kms.CryptoKeyIAMBinding``, ``iap.WebBackendServiceIamBinding``, ``kms.KeyRingIAMBinding``,
  ``cloudrunv2.ServiceIamBinding``, ``cloudrunv2.JobIamBinding``,
  ``iap.WebCloudRunServiceIamBinding``. Authoritative *for that
  role*: members added by hand in the console are removed on the next ``up``, other roles are
  left alone (provider docs: Binding vs Member vs Policy). ``clusterstack iam scan`` lists who
  would be removed before a role is opted in.

IAP accessors (``iap_backend_services`` of the IAM file) are bound on the backend service's
IAP resource, not on the project: a project grant of ``roles/iap.httpsResourceAccessor``
admits its members to every IAP-secured resource in the project (IAP "Managing access to
IAP-secured resources": project-level principals apply to all of them), while a
per-backend binding lets each controller have its own accessors — the least privilege, and
Marin's tested choice (it retired its project-wide IAP grant for per-backend bindings:
marin-community/marin ``infra/pulumi/src/iac/gcp/iap.py`` @ abd1f1293c93,
``GcpBackendServiceIapIam``; its ``gclb.py`` @ 3df94eb4de74 binds on ``backend.service.name``).
The binding names the backend by the backend resource's ``name`` output when the stack
declares it (``iap_backends``), so it waits for the backend.

Members that are people arrive as secret Outputs (``user:<email>``) resolved by the program:
the ``member`` of such an additive grant (whose logical name carries the ``human-NNN`` id), and
the whole ``members`` list of such an authoritative binding, is a secret, so Pulumi state
stores it encrypted and plans and previews show ``[secret]``. Bindings depend on the owned accounts and custom
roles they name (as target, member or role), and repository bindings on the stack's registry
mirrors, so a new account, role or repository exists before it is granted.

Import IDs: :func:`binding_import_id` gives, next to each resource class, the provider's
documented import ID ``"<resource in question> <role>[ <condition title>]"``, and
:func:`member_import_id` that of a member resource, ``"<resource in question> <role> <member>[
<condition title>]"`` (a person's member is the template ``user:<email>``: the email is never
in a plan); the component keeps them in :attr:`IamBindings.import_ids` and registers every child's ID (bindings, custom
roles, accounts) with :func:`clusterstack.pulumi.importids.importable` — never as an ``import_``
option, which would turn every ``up`` into an import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi

from clusterstack.components.bytoken import Declared, Kind
from clusterstack.components.gcp import kinds
from clusterstack.iam.targets import HUMAN_RE, BindingSpec, Target
from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import IAM_BINDINGS_COMPONENT


@dataclass(frozen=True)
class CustomRoleSpec:
    role_id: str                    # iam.yaml custom_roles[].role_id
    title: str                      # custom_roles[].title
    description: str                # custom_roles[].description
    permissions: tuple[str, ...]    # custom_roles[].permissions (sorted)
    stage: str = "GA"               # custom_roles[].stage (IAM RoleLaunchStage)


@dataclass(frozen=True)
class ServiceAccountSpec:
    account_id: str                 # iam.yaml owned_service_accounts[].account_id
    display_name: str               # owned_service_accounts[].display_name
    description: str | None         # owned_service_accounts[].description


@dataclass(frozen=True)
class IamArgs:
    project: str                                  # iam.yaml project (= provisioning.gcp.project)
    custom_roles: tuple[CustomRoleSpec, ...]      # iam.yaml custom_roles
    service_accounts: tuple[ServiceAccountSpec, ...]  # iam.yaml owned_service_accounts
    bindings: tuple[BindingSpec, ...]             # iam.yaml grants, merged (clusterstack.iam.loader.bindings_of)
    principals: tuple[tuple[str, Any], ...]       # human-NNN → secret Output "user:<email>" (the program decrypts)


# --- the resource of each target kind, with its import ID ("resource in question") -----------
# Import ID forms: provider docs, "Import" section of each *IamBinding / *IamMember resource:
#   project  "{{project_id}} roles/x[ title]"
#   bucket   "b/{{bucket}} roles/x[ title]"
#   secret   "projects/{{project}}/secrets/{{secret_id}} roles/x"
#   repo     "projects/{{project}}/locations/{{location}}/repositories/{{repository}} roles/x"
#   sa       "projects/{{project}}/serviceAccounts/{{email}} roles/x[ title]"
#   kms      "projects/{{project}}/locations/{{location}}/keyRings/{{key_ring}}/cryptoKeys/{{crypto_key}} roles/x"
#   iap      "projects/{{project}}/iap_web/compute/services/{{web_backend_service}} roles/x[ title]"
#   keyring  "projects/{{project}}/locations/{{location}}/keyRings/{{key_ring}} roles/x"
#   run      "projects/{{project}}/locations/{{location}}/services/{{name}} roles/x"
#   run-job  "projects/{{project}}/locations/{{location}}/jobs/{{name}} roles/x"
#   iap-run  "projects/{{project}}/iap_web/cloud_run-{{location}}/services/{{cloud_run_service_name}} roles/x"
# A member's import ID inserts the member after the role (member_import_id). The KMS forms are
# the full resource names: the provider accepts "{{project}}/{{location}}/…" too, but its
# import sets crypto_key_id / key_ring_id to the full name (terraform-provider-google
# google/services/kms/iam_kms_crypto_key.go CryptoIdParseFunc → KmsCryptoKeyId.CryptoKeyId(),
# resource_kms_utils.go: "projects/%s/locations/%s/keyRings/%s/cryptoKeys/%s"), and it is the
# form Marin declares (marin-community/marin infra/pulumi/src/iac/gcp/iam.py @ 0fe5f595
# _crypto_key_id, passed as crypto_key_id and used in the import ID).

def _sa_resource(email: str, project: str) -> str:
    """``projects/<p>/serviceAccounts/<email>``; ``<p>`` from a user-managed account's domain."""
    domain = email.rpartition("@")[2]
    owner = domain.removesuffix(".iam.gserviceaccount.com") if domain.endswith(".iam.gserviceaccount.com") else project
    return f"projects/{owner}/serviceAccounts/{email}"


def import_ref(target: Target) -> str:
    """The "resource in question" part of a binding's import ID (table above)."""
    if target.kind == "project":
        return target.name
    if target.kind == "bucket":
        return f"b/{target.name}"
    if target.kind == "secret":
        return f"projects/{target.project}/secrets/{target.name}"
    if target.kind == "repo":
        location, repo = target.name.split("/", 1)
        return f"projects/{target.project}/locations/{location}/repositories/{repo}"
    if target.kind == "sa":
        return _sa_resource(target.name, target.project)
    if target.kind == "iap":
        return f"projects/{target.project}/iap_web/compute/services/{target.name}"
    if target.kind in ("kms", "keyring"):
        return target.name  # the full resource name (table above)
    location, name = target.name.split("/", 1)
    if target.kind == "iap-run":
        return f"projects/{target.project}/iap_web/cloud_run-{location}/services/{name}"
    collection = "jobs" if target.kind == "run-job" else "services"
    return f"projects/{target.project}/locations/{location}/{collection}/{name}"


def binding_import_id(binding: BindingSpec) -> str:
    """``"<resource in question> <role>[ <condition title>]"`` — what ``pulumi import`` takes to
    adopt the existing binding (space-delimited; the title only for a conditional binding)."""
    out = f"{import_ref(binding.target)} {binding.role}"
    return f"{out} {binding.condition.title}" if binding.condition else out


def member_import_id(binding: BindingSpec, member: str) -> str:
    """``"<resource in question> <role> <member>[ <condition title>]"`` of one additive grant
    (provider docs, "Import" of each ``*IamMember``: "IAM member imports use space-delimited
    identifiers; the resource in question, the role, and the member identity"; a conditional
    one ends with the condition title). A person (``human-NNN``) is the template
    ``user:<email>`` — ``import generate --id`` supplies it; the plan never holds an email."""
    who = "user:<email>" if HUMAN_RE.match(member) else member
    out = f"{import_ref(binding.target)} {binding.role} {who}"
    return f"{out} {binding.condition.title}" if binding.condition else out


def _target_inputs(target: Target) -> dict[str, Any]:
    """The inputs that name ``target`` on its grant resource, by wire name."""
    if target.kind == "project":
        return {"project": target.name}
    if target.kind == "bucket":
        return {"bucket": target.name}
    if target.kind == "secret":
        return {"project": target.project, "secretId": target.name}
    if target.kind == "repo":
        location, repo = target.name.split("/", 1)
        return {"project": target.project, "location": location, "repository": repo}
    if target.kind == "sa":
        return {"serviceAccountId": _sa_resource(target.name, target.project)}
    if target.kind == "iap":
        return {"project": target.project, "webBackendService": target.name}
    if target.kind == "kms":
        return {"cryptoKeyId": target.name}
    if target.kind == "keyring":
        return {"keyRingId": target.name}
    location, name = target.name.split("/", 1)
    if target.kind == "iap-run":
        return {"project": target.project, "location": location, "cloudRunServiceName": name}
    return {"project": target.project, "location": location, "name": name}  # run, run-job


_RESOURCE: dict[str, Kind] = {
    "project": kinds.PROJECT_IAM_BINDING,
    "bucket": kinds.GCS_BUCKET_IAM_BINDING,
    "secret": kinds.SECRET_IAM_BINDING,
    "repo": kinds.ARTIFACT_REPOSITORY_IAM_BINDING,
    "sa": kinds.SERVICE_ACCOUNT_IAM_BINDING,
    "kms": kinds.KMS_CRYPTO_KEY_IAM_BINDING,
    "iap": kinds.IAP_BACKEND_IAM_BINDING,
    "keyring": kinds.KMS_KEY_RING_IAM_BINDING,
    "run": kinds.CLOUD_RUN_SERVICE_IAM_BINDING,
    "run-job": kinds.CLOUD_RUN_JOB_IAM_BINDING,
    "iap-run": kinds.IAP_CLOUD_RUN_IAM_BINDING,
}


_MEMBER_RESOURCE: dict[str, Kind] = {
    "project": kinds.PROJECT_IAM_MEMBER,
    "bucket": kinds.GCS_BUCKET_IAM_MEMBER,
    "secret": kinds.SECRET_IAM_MEMBER,
    "repo": kinds.ARTIFACT_REPOSITORY_IAM_MEMBER,
    "sa": kinds.SERVICE_ACCOUNT_IAM_MEMBER,
    "kms": kinds.KMS_CRYPTO_KEY_IAM_MEMBER,
    "iap": kinds.IAP_BACKEND_IAM_MEMBER,
    "keyring": kinds.KMS_KEY_RING_IAM_MEMBER,
    "run": kinds.CLOUD_RUN_SERVICE_IAM_MEMBER,
    "run-job": kinds.CLOUD_RUN_JOB_IAM_MEMBER,
    "iap-run": kinds.IAP_CLOUD_RUN_IAM_MEMBER,
}

_KEPT_INPUTS: dict[str, list[str]] = {"kms": ["cryptoKeyId"]}
"""Inputs a grant resource keeps as its state has them (``ignore_changes``), per target kind.
``cryptoKeyId``: stacks applied before the full key name was declared hold the short
``P/L/R/K`` form; the field is ForceNew (terraform-provider-google iam_kms_crypto_key.go
``IamKmsCryptoKeySchema``), so the new form would plan a replace — and the replace of an
additive member creates the new one, then deletes the old one, which removes the member from
the key's policy. Both forms name the same key, and the key is part of the logical name
(:attr:`Target.slug`), so another key is always another resource: ignoring the field never
hides a change of key."""


def members_input(binding: BindingSpec, principals: dict[str, Any]) -> Any:
    """The ``members`` input: a plain list, or — when a person is among them — one secret
    Output of the whole list (``human-NNN`` replaced by the program's ``user:`` Output)."""
    if not binding.humans:
        return list(binding.members)
    items = [principals[m] if HUMAN_RE.match(m) else m for m in binding.members]
    return pulumi.Output.secret(pulumi.Output.all(*items).apply(list))


class IamBindings(pulumi.ComponentResource):
    """Custom roles, owned service accounts, additive member grants and (opted-in)
    role-authoritative bindings of one project. ``bindings``: logical name → ``*IAMBinding``
    of each authoritative binding; ``members``: logical name → ``*IAMMember`` of each additive
    grant; ``import_ids``: logical name → import ID (or template) of both."""

    roles: dict[str, Declared]
    accounts: dict[str, Declared]
    bindings: dict[str, Declared]
    members: dict[str, Declared]
    import_ids: dict[str, str]

    def __init__(self, name: str, args: IamArgs, *, provider: pulumi.ProviderResource,
                 repositories: Sequence[pulumi.Resource] = (),
                 iap_backends: Mapping[str, Any] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """``repositories``: resources that create the repositories grants may target (the
        stack's registry mirrors); every repository binding depends on them.
        ``iap_backends``: backend service GCE name → the stack's backend service resource
        (``GcpGclbIap.iap_backends``); an ``iap`` binding on one of them names it by the
        resource's ``name`` output (so it depends on it)."""
        super().__init__(IAM_BINDINGS_COMPONENT, name, None, opts)
        self.roles, self.accounts, self.bindings, self.members, self.import_ids = {}, {}, {}, {}, {}
        principals = dict(args.principals)
        for r in args.custom_roles:
            self.roles[f"projects/{args.project}/roles/{r.role_id}"] = kinds.PROJECT_CUSTOM_ROLE(
                r.role_id, {"project": args.project, "roleId": r.role_id, "title": r.title,
                            "description": r.description, "permissions": list(r.permissions),
                            "stage": r.stage},
                pulumi.ResourceOptions(parent=self, provider=provider))
            ids.importable(self.roles[f"projects/{args.project}/roles/{r.role_id}"],
                           ids.gcp_custom_role(args.project, r.role_id))
        for a in args.service_accounts:
            email = f"{a.account_id}@{args.project}.iam.gserviceaccount.com"
            self.accounts[email] = kinds.SERVICE_ACCOUNT(
                a.account_id, {"project": args.project, "accountId": a.account_id,
                               "displayName": a.display_name, "description": a.description},
                pulumi.ResourceOptions(parent=self, provider=provider, protect=True))
            ids.importable(self.accounts[email], ids.gcp_service_account(args.project, email))
        for b in args.bindings:
            deps: list[pulumi.Resource] = []
            if b.role in self.roles:
                deps.append(self.roles[b.role])
            named = {b.target.name} if b.target.kind == "sa" else set()
            named |= {m.removeprefix("serviceAccount:") for m in b.members if m.startswith("serviceAccount:")}
            deps += [acc for email, acc in sorted(self.accounts.items()) if email in named]
            if b.target.kind == "repo":
                deps += list(repositories)
            condition = None
            if b.condition is not None:
                condition = {"title": b.condition.title, "expression": b.condition.expression}
                if b.condition.description:
                    condition["description"] = b.condition.description
            target = _target_inputs(b.target)
            if b.target.kind == "iap" and iap_backends and b.target.name in iap_backends:
                target["webBackendService"] = iap_backends[b.target.name].name
            opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=deps,
                                          ignore_changes=_KEPT_INPUTS.get(b.target.kind))
            if b.authoritative:
                name_ = b.logical_name
                self.bindings[name_] = _RESOURCE[b.target.kind](
                    name_, {"role": b.role, "members": members_input(b, principals),
                            "condition": condition, **target}, opts)
                self.import_ids[name_] = binding_import_id(b)
                ids.importable(self.bindings[name_], self.import_ids[name_])
                continue
            for m in b.members:
                name_ = b.member_name(m)
                self.members[name_] = _MEMBER_RESOURCE[b.target.kind](
                    name_, {"role": b.role, "member": principals[m] if HUMAN_RE.match(m) else m,
                            "condition": condition, **target}, opts)
                self.import_ids[name_] = member_import_id(b, m)
                ids.importable(self.members[name_], self.import_ids[name_])
        self.register_outputs({
            "custom_roles": sorted(self.roles),
            "service_accounts": sorted(self.accounts),
            "bindings": sorted(self.bindings),
            "members": sorted(self.members),
        })
