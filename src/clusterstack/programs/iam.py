"""The IAM file inside the GCP stack's Pulumi program (called from
:func:`clusterstack.programs.cluster.build_gcp`).

The component never reads files (house rule); this module does: it loads the IAM file, turns
it into :class:`IamArgs`, and resolves the people among the members:

- in a real run (``pulumi preview``/``up``) every referenced principal is decrypted once, in
  memory, into a *secret* Output ``user:<email>`` — the keyset never reaches a resource, so
  it never enters state, and the email is stored only encrypted (Pulumi secrets);
- under the offline plan (:func:`clusterstack.secrets.offline`) nothing is decrypted and no
  keyset is needed (a fresh clone plans fine): the members are secret placeholders that the
  plan renders ``[secret]``, and the stack output ``iam`` lists every binding's members by
  ``human-NNN`` id — what a reviewer of the plan sees, never an email.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from clusterstack import secrets
from clusterstack.components.gcp.iam import CustomRoleSpec, IamArgs, IamBindings, ServiceAccountSpec
from clusterstack.iam.crypto import KmsAeadFactory, gcp_kms_aead, load_cipher
from clusterstack.iam.loader import IamFileError, LoadedIam, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.validation import check_project
from clusterstack.validation.iam import iap_backend_problems, missing_file_problem
from clusterstack.workspace import Workspace


def iam_args(loaded: LoadedIam, principals: dict[str, Any]):
    """The component's arguments from a loaded IAM file and resolved principals."""
    m = loaded.model
    return IamArgs(
        project=m.project,
        custom_roles=tuple(CustomRoleSpec(r.role_id, r.title, r.description, tuple(sorted(r.permissions)), r.stage)
                           for r in sorted(m.custom_roles, key=lambda r: r.role_id)),
        service_accounts=tuple(ServiceAccountSpec(a.account_id, a.display_name, a.description)
                               for a in sorted(m.owned_service_accounts, key=lambda a: a.account_id)),
        bindings=loaded.bindings(),
        principals=tuple(sorted(principals.items())))


def summary(loaded: LoadedIam) -> dict[str, Any]:
    """The ``iam`` stack output: binding logical name → target, role, condition title,
    ``authoritative`` (the role's members are exactly these) and members *by id* (no email,
    no ciphertext)."""
    return {b.logical_name: {"target": b.target.spec, "role": b.role,
                             "condition": b.condition.title if b.condition else None,
                             "authoritative": b.authoritative, "members": list(b.members)}
            for b in loaded.bindings()}


def resolve_principals(loaded: LoadedIam, root: Path, *,
                       kms_aead: KmsAeadFactory = gcp_kms_aead) -> dict[str, Any]:
    """``human-NNN`` → secret Output ``user:<email>`` for every principal a binding uses.

    Offline: placeholders, no keyset read. Otherwise raises KeysetError when the keyset is
    missing or does not decrypt a principal.
    """
    used = sorted({h for b in loaded.bindings() for h in b.humans})
    if secrets.is_offline():
        return {pid: pulumi.Output.secret(f"user:{pid} (not decrypted offline)") for pid in used}
    cipher = load_cipher(loaded.model.encryption, root, kms_aead=kms_aead)
    return {pid: pulumi.Output.secret("user:" + cipher.decrypt(loaded.model.principals[pid], pid=pid))
            for pid in used}


def declare_iam(workspace: Workspace, stack: str, project: str, provider, *,
                repositories: list | None = None, iap_backends: dict | None = None,
                kms_aead: KmsAeadFactory = gcp_kms_aead):
    """Add the IAM component to GCP stack ``stack`` (project ``project``) when it is the stack
    named by ``[iam] stack`` and the IAM file exists; returns the component or None.

    Several GCP stacks may share one project (the TPU clusters do), but authoritative
    bindings and owned accounts must have exactly one owner — hence the explicit stack.
    ``repositories``: the stack's resources that create Artifact Registry repositories (the
    registry mirrors); repository bindings depend on them, so a grant on a new mirror waits
    for the mirror. ``iap_backends``: the stack's IAP-protected backend services by GCE name
    (``GcpGclbIap.iap_backends``), None without a load balancer; the IAP accessor bindings
    name them by their ``name`` output.

    Raises IamFileError (invalid file, or its project is not the stack's) and KeysetError
    (an unusable keyset in a real run); exit 2.
    """
    settings = IamSettings.from_workspace(workspace)
    if settings.stack != stack:
        return None
    if (missing := missing_file_problem(workspace)) is not None:
        raise IamFileError(problems=[missing])  # never a stack that silently drops its IAM
    loaded = load_iam(settings.file)
    check_project(loaded, settings.file, stack, project)
    if problems := iap_backend_problems(loaded, settings.file, iap_backends):
        raise IamFileError(problems=problems)  # the rule validate applies offline

    principals = resolve_principals(loaded, workspace.root, kms_aead=kms_aead)
    component = IamBindings("iam", iam_args(loaded, principals), provider=provider,
                            repositories=repositories or (), iap_backends=iap_backends)
    pulumi.export("iam", summary(loaded))
    return component
