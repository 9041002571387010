"""Which IAM roles exist: GCP's predefined roles, from a dated snapshot shipped with the package
(``iam/data/gcp-predefined-roles.txt``: its header names the source — the IAM API
``roles.list`` as recorded at a commit — and the date), plus the IAM file's own custom roles.

Why offline: a grant of ``roles/viewr`` is accepted by the provider's schema and fails only at
``up`` (the IAM API answers "Role roles/viewr is not supported for this resource"), so
``iam grant``, ``iam check``, ``validate`` and ``plan`` refuse it first and name the near misses
("did you mean roles/viewer?").

What the rule can know: the predefined roles of the snapshot and the custom roles of the file's
own project (``custom_roles``). What it cannot: a custom role of another project or of an
organization (``projects/<other>/roles/…``, ``organizations/<n>/roles/…``) — accepted as written;
a role GCP published after the snapshot — refused, with the snapshot's date in the message
(refresh the data file from the same source to allow it).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from importlib import resources

DATA_FILE = "gcp-predefined-roles.txt"


@dataclass(frozen=True)
class Snapshot:
    """The shipped snapshot: ``roles`` (``roles/<name>``), ``taken`` (ISO date the snapshot was
    taken) and ``source`` (its header: where the names come from and as of when)."""

    roles: frozenset[str]
    taken: str
    source: str


@functools.cache
def snapshot() -> Snapshot:
    """The predefined roles shipped with this package (read once)."""
    text = resources.files("clusterstack.iam").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    header = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]
    roles = frozenset(ln.strip() for ln in text.splitlines() if ln.startswith("roles/"))
    taken = re.search(r"Snapshot taken (\d{4}-\d{2}-\d{2})", " ".join(header))
    return Snapshot(roles=roles, taken=taken[1] if taken else "?", source=" ".join(header))


def _key(role: str) -> str:
    return role.lower()


def near_roles(role: str, candidates: frozenset[str] | set[str]) -> list[str]:
    """Up to three roles of ``candidates`` closest to ``role`` (case ignored), best first."""
    by_key = {_key(c): c for c in candidates}
    if _key(role) in by_key:
        return [by_key[_key(role)]]
    return [by_key[k] for k in difflib.get_close_matches(_key(role), list(by_key), n=3, cutoff=0.8)]


def role_problem(role: str, *, project: str, custom_role_ids: set[str]) -> tuple[str, str] | None:
    """``(problem, hint)`` when ``role`` is provably no role a grant in ``project`` can use, else
    None. ``custom_role_ids``: the IAM file's ``custom_roles[].role_id``.

    ``roles/<name>`` must be a predefined role of the snapshot (a custom role id written as
    ``roles/<id>`` is named as ``projects/<project>/roles/<id>``); ``projects/<project>/roles/<id>``
    of the file's own project must be one of its custom roles; other projects' and
    organizations' custom roles are not known here and pass."""
    own = f"projects/{project}/roles/"
    if role.startswith(own):
        rid = role[len(own):]
        if rid in custom_role_ids:
            return None
        near = [own + r for r in difflib.get_close_matches(rid, sorted(custom_role_ids), n=3, cutoff=0.8)]
        return (f"custom role {role} is not declared",
                "add it to custom_roles or fix the role id"
                + (f" (did you mean {' or '.join(near)}?)" if near else ""))
    if not role.startswith("roles/"):
        return None
    snap = snapshot()
    if role in snap.roles:
        return None
    name = role.removeprefix("roles/")
    if name in custom_role_ids:
        return (f"{role} is not a predefined role; {name} is a custom role of this file",
                f"write it as {own}{name}")
    near = near_roles(role, snap.roles)
    return (f"{role} is not a GCP predefined role (clusterstack's snapshot of {len(snap.roles)} roles, "
            f"taken {snap.taken})"
            + (f"; did you mean {' or '.join(near)}?" if near else ""),
            "fix the role name (`gcloud iam roles describe ROLE` shows one); a role GCP published "
            "after the snapshot: refresh src/clusterstack/iam/data/" + DATA_FILE)
