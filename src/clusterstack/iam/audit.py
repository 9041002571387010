"""``iam audit-keys``: user-managed service-account keys older than a limit, and their rotation.

Reads with the IAM Admin API (``google.cloud.iam_admin_v1.IAMClient``):
``ListServiceAccounts(projects/P)`` then ``ListServiceAccountKeys(name, key_types=[USER_MANAGED])``
per account — system-managed keys are rotated by Google and are not ours to audit (IAM
"Service account keys" docs). A key's age is ``now - valid_after_time``.

Rotation of one account (only accounts the IAM file owns *and* gives a ``key_secret``):

1. ``CreateServiceAccountKey(account)`` — the response carries the new key's
   ``private_key_data`` (a JSON credentials file), the only time GCP ever returns it;
2. ``AddSecretVersion(projects/P/secrets/<key_secret>, payload{data, data_crc32c})`` in Secret
   Manager — consumers read ``versions/latest``; if this fails, the new key is deleted again so
   no unrecorded key is left behind;
3. after confirmation, ``DisableServiceAccountKey`` for each stale key (disabled, not deleted:
   re-enabling is the rollback if a consumer still used it).

The key material only ever lives in the ``CreateServiceAccountKey`` response object and the
Secret Manager request: it is never printed, logged, or written anywhere else.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from clusterstack.adapters.gcp import (GcpApiError, GcpCredentialsError, IamAdminClient,
    PERMISSION_DENIED, SecretManagerClient, call_errors, iam_user_managed_key_type, secret_payload)
from clusterstack.errors import ClusterstackError
from clusterstack.iam.loader import load_iam
from clusterstack.iam.settings import IamSettings

if TYPE_CHECKING:
    from clusterstack.clients import Clients


class AuditError(ClusterstackError):
    """A bad argument or a failed API call during audit/rotation (exit 2)."""


def parse_max_age(text: str) -> dt.timedelta:
    """``90d``, ``12w`` or ``36h`` → timedelta. Raises AuditError for another form or zero."""
    m = re.fullmatch(r"(\d+)([dhw])", text.strip())
    if not m or int(m.group(1)) == 0:
        raise AuditError(f"bad --max-age {text!r}", "use a positive number of days, weeks or "
                         "hours: 90d, 12w, 36h", field="--max-age")
    n, unit = int(m.group(1)), m.group(2)
    return {"d": dt.timedelta(days=n), "w": dt.timedelta(weeks=n), "h": dt.timedelta(hours=n)}[unit]


@dataclass(frozen=True, order=True)
class KeyRow:
    """One user-managed key: ``account`` email, ``key_id`` (last segment of the key name), age
    in whole days, ``stale`` (older than the limit), ``disabled``; ``name`` the full resource."""

    account: str
    key_id: str
    age_days: int
    stale: bool
    disabled: bool
    name: str
    valid_after: str

    def to_json(self) -> dict:
        return {"account": self.account, "key_id": self.key_id, "age_days": self.age_days,
                "stale": self.stale, "disabled": self.disabled, "valid_after": self.valid_after}


def list_keys(iam: IamAdminClient, project: str, max_age: dt.timedelta, now: dt.datetime) -> list[KeyRow]:
    """Every user-managed key of every service account of ``project``, sorted by account and
    key id. ``now`` must be timezone-aware."""
    user_managed = iam_user_managed_key_type()
    rows = []
    for account in iam.list_service_accounts(request={"name": f"projects/{project}"}):
        resp = iam.list_service_account_keys(request={"name": account.name, "key_types": [user_managed]})
        for key in resp.keys:
            after = key.valid_after_time
            age = now - after
            rows.append(KeyRow(account=account.email, key_id=key.name.rsplit("/", 1)[-1],
                               age_days=age.days, stale=age > max_age, disabled=bool(key.disabled),
                               name=key.name, valid_after=after.strftime("%Y-%m-%dT%H:%M:%SZ")))
    return sorted(rows)


@dataclass(frozen=True)
class Rotation:
    """What one account's rotation did: the new key id, the Secret Manager version it was
    stored in, and the stale key ids it disabled (empty when the operator declined)."""

    account: str
    new_key_id: str
    secret_version: str
    disabled: tuple[str, ...]


def rotate_account(iam: IamAdminClient, sm: SecretManagerClient, *, project: str, account: str,
                   secret: str, stale: list[KeyRow], confirm_disable: Callable[[], bool]) -> Rotation:
    """Create a new key for ``account``, store it as a new version of ``secret`` (a secret id in
    ``project`` or a full ``projects/…/secrets/…`` name), then disable ``stale`` keys if
    ``confirm_disable()`` says yes. Every call goes through
    :func:`clusterstack.adapters.gcp.call_errors`: a key that cannot be created is its
    GcpApiError / GcpCredentialsError (exit 2, nothing changed); a later step that fails is an
    AuditError saying what was already done (the new key is deleted if it could not be stored)."""
    failed = (GcpApiError, GcpCredentialsError)
    parent = secret if secret.startswith("projects/") else f"projects/{project}/secrets/{secret}"
    sa_name = f"projects/{project}/serviceAccounts/{account}"
    with call_errors("IAM API", f"creating a key for {account}",
                     {PERMISSION_DENIED: "the caller needs iam.serviceAccountKeys.create on the account"}):
        created = iam.create_service_account_key(request={"name": sa_name})
    new_id, data = created.name.rsplit("/", 1)[-1], b""
    try:
        data = created.private_key_data
        with call_errors("Secret Manager API", f"adding a version to {parent}"):
            version = sm.add_secret_version(request={"parent": parent, "payload": secret_payload(data)})
    except failed as exc:
        try:
            with call_errors("IAM API", f"deleting the new key {new_id}"):
                iam.delete_service_account_key(request={"name": created.name})
            undo = f"the new key {new_id} was deleted again"
        except failed:
            undo = f"the new key {new_id} could NOT be deleted: delete it by hand"
        raise AuditError(f"cannot store the new key of {account}: {exc.problems[0].message}; {undo}",
                         "check secretmanager.versions.add permission on the secret") from None
    finally:
        del created, data  # drop every reference to the key material
    disabled: list[str] = []
    if stale and confirm_disable():
        for row in stale:
            if row.disabled:
                continue
            try:
                with call_errors("IAM API", f"disabling key {row.key_id}"):
                    iam.disable_service_account_key(request={"name": row.name})
            except failed as exc:
                raise AuditError(f"new key {new_id} stored as {version.name}, but "
                                 f"{exc.problems[0].message}",
                                 "disable the old key by hand once consumers use the new one") from None
            disabled.append(row.key_id)
    return Rotation(account=account, new_key_id=new_id, secret_version=version.name,
                    disabled=tuple(disabled))


@dataclass(frozen=True)
class AuditRun:
    """What ``iam audit-keys`` found and did: every user-managed key (``rows``), the stale
    enabled ones, the rotations done and the accounts skipped (no ``key_secret``, or declined)."""

    project: str
    rows: tuple[KeyRow, ...]
    rotations: tuple[Rotation, ...] = ()
    skipped: tuple[str, ...] = ()

    @property
    def stale(self) -> list[KeyRow]:
        return [r for r in self.rows if r.stale and not r.disabled]


def audit_keys(settings: IamSettings, *, clients: Clients, project: str | None, max_age: dt.timedelta, rotate: bool = False,
               confirm: Callable[[str], bool] = lambda _text: False) -> AuditRun:
    """``iam audit-keys``: the user-managed keys of ``project`` (default: the IAM file's) older
    than ``max_age`` on ``clients.clock``; with ``rotate``, each stale account that the IAM file
    owns *and* gives a ``key_secret`` is rotated after ``confirm(question)`` (and its old keys
    disabled after a second ``confirm``). Clients: ``clients.gcp.iam_admin()`` and
    ``clients.secret_manager()`` (only when rotating). Raises AuditError (exit 2) for no
    project or a failed step, GcpCredentialsError (exit 2) without credentials or with refused
    ones, GcpApiError (exit 2) when the IAM API cannot be reached or refuses the listing
    (:func:`clusterstack.adapters.gcp.call_errors`)."""
    secrets: dict[str, str] = {}
    if settings.file.is_file():
        m = load_iam(settings.file).model
        project = project or m.project
        if project == m.project:
            secrets = {m.owned_account_email(a.account_id): a.key_secret
                       for a in m.owned_service_accounts if a.key_secret}
    if not project:
        raise AuditError("no project", "pass --project P", field="--project")
    iam = clients.gcp.iam_admin()
    sm = clients.secret_manager() if rotate else None

    with call_errors("IAM API", f"listing the service-account keys of project {project}"):
        rows = list_keys(iam, project, max_age, clients.clock.now())
    stale = [r for r in rows if r.stale and not r.disabled]
    rotations: list[Rotation] = []
    skipped: list[str] = []
    if sm is not None:  # rotating
        by_account: dict[str, list[KeyRow]] = {}
        for r in stale:
            by_account.setdefault(r.account, []).append(r)
        for account, keys in sorted(by_account.items()):
            if account not in secrets:
                skipped.append(account)
                continue
            ids = ", ".join(k.key_id for k in keys)
            if not confirm(f"rotate {account}: create a new key and store it as a new "
                           f"version of secret {secrets[account]}?"):
                skipped.append(account)
                continue
            rotations.append(rotate_account(
                iam, sm, project=project, account=account, secret=secrets[account], stale=keys,
                confirm_disable=lambda ids=ids, account=account: confirm(
                    f"disable old key(s) {ids} of {account}? (consumers must use the new version)")))
    return AuditRun(project, tuple(rows), tuple(rotations), tuple(skipped))
