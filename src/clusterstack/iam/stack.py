"""The IAM file inside the GCP stack's Pulumi program (called from ``program.build_gcp``).

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
from clusterstack.iam.crypto import KmsAeadFactory, gcp_kms_aead, load_cipher
from clusterstack.iam.loader import LoadedIam, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.workspace import Workspace


def iam_args(loaded: LoadedIam, principals: dict[str, Any]):
    """The component's arguments from a loaded IAM file and resolved principals."""
    from clusterstack.components.gcp.iam import CustomRoleSpec, IamArgs, ServiceAccountSpec

    m = loaded.model
    return IamArgs(
        project=m.project,
        custom_roles=tuple(CustomRoleSpec(r.role_id, r.title, r.description, tuple(sorted(r.permissions)))
                           for r in sorted(m.custom_roles, key=lambda r: r.role_id)),
        service_accounts=tuple(ServiceAccountSpec(a.account_id, a.display_name, a.description)
                               for a in sorted(m.owned_service_accounts, key=lambda a: a.account_id)),
        bindings=loaded.bindings(),
        principals=tuple(sorted(principals.items())))


def summary(loaded: LoadedIam) -> dict[str, Any]:
    """The ``iam`` stack output: binding logical name → target, role, condition title and
    members *by id* (no email, no ciphertext)."""
    return {b.logical_name: {"target": b.target.spec, "role": b.role,
                             "condition": b.condition.title if b.condition else None,
                             "members": list(b.members)}
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


def declare_iam(workspace: Workspace, project: str, provider, *, depends_on: list | None = None,
                kms_aead: KmsAeadFactory = gcp_kms_aead):
    """Add the IAM component to the GCP stack of ``project`` when the workspace's IAM file
    exists and governs that project; returns the component or None.

    ``depends_on``: resources of the stack that grants may target (the registry mirrors), so a
    binding on a new repository waits for the repository.

    Raises IamFileError / KeysetError (exit 2) for an invalid file or an unusable keyset.
    """
    settings = IamSettings.from_workspace(workspace)
    if not settings.file.is_file():
        return None
    loaded = load_iam(settings.file)
    if loaded.model.project != project:
        return None
    from clusterstack.components.gcp.iam import IamBindings

    principals = resolve_principals(loaded, workspace.root, kms_aead=kms_aead)
    component = IamBindings("iam", iam_args(loaded, principals), provider=provider,
                            opts=pulumi.ResourceOptions(depends_on=depends_on or []))
    pulumi.export("iam", summary(loaded))
    return component
