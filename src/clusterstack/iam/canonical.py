"""The canonical form of the IAM file, and the edits the commands make to it.

Every write goes through ruamel.yaml's round-trip document, so comments survive, and through
:func:`normalize`, so the same content always gives the same bytes (a re-run never churns the
file and a review diff shows only real changes). Canonical form:

- top-level keys in schema order (``schema_version, project, encryption, principals,
  custom_roles, owned_service_accounts, project_grants, buckets, secrets,
  artifact_repositories, service_accounts, kms_keys, iap_backend_services, kms_key_rings,
  cloud_run_services, cloud_run_jobs, iap_cloud_run_services``); empty sections are dropped;
- keys of every entry in schema order (``role, authoritative, public, members, condition``; ``title, expression,
  description``; …); a default value is not written (``authoritative: false``, ``public: false``,
  a custom role's ``stage: GA``);
- ``principals`` by number; custom roles by id; owned accounts by id; targets by their
  identifying fields; grants by (role, condition title); members by :func:`member_sort_key`
  (people by number, then the rest alphabetically); permissions alphabetically;
- one entry per target and one grant per (role, condition title): duplicates are merged;
- block style everywhere, 2-space mappings, ``- `` items indented by 2, no line folding.

:func:`normalize` expects a document that passed :func:`clusterstack.iam.loader.load_iam_text`.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from clusterstack.errors import ClusterstackError
from clusterstack.iam.loader import yaml_rt
from clusterstack.iam.model import SECTIONS, target_fields
from clusterstack.iam.targets import ConditionSpec, Target, human_number, member_sort_key

TOP_ORDER = ("schema_version", "project", "encryption", "principals", "custom_roles",
             "owned_service_accounts", "project_grants", "buckets", "secrets",
             "artifact_repositories", "service_accounts", "kms_keys", "iap_backend_services",
             "kms_key_rings", "cloud_run_services", "cloud_run_jobs", "iap_cloud_run_services")
_ENTRY_ORDER = {
    "encryption": ("scheme", "keyset", "kms_key"),
    "custom_roles": ("role_id", "title", "description", "permissions", "stage"),
    "owned_service_accounts": ("account_id", "display_name", "description", "key_secret"),
    "grant": ("role", "authoritative", "public", "members", "condition"),
    "condition": ("title", "expression", "description"),
}


class EditError(ClusterstackError):
    """A grant/revoke request that does not fit the file (exit 2)."""


def _reorder(m: CommentedMap, order: tuple[str, ...]) -> None:
    for k in order:
        if k in m:
            m.move_to_end(k)


def _block(node: Any) -> None:
    if isinstance(node, (CommentedMap, CommentedSeq)):
        node.fa.set_block_style()
        for v in (node.values() if isinstance(node, CommentedMap) else node):
            _block(v)


def _merge_dups(seq: CommentedSeq, key: Callable[[Any], Any], merge: Callable[[Any, Any], None]) -> None:
    """Merge later items with an equal ``key`` into the first one, then delete them."""
    first: dict[Any, Any] = {}
    i = 0
    while i < len(seq):
        k = key(seq[i])
        if k in first:
            merge(first[k], seq[i])
            del seq[i]
        else:
            first[k] = seq[i]
            i += 1


def _grant_key(g: Any) -> tuple[str, str]:
    cond = g.get("condition")
    return (str(g["role"]), str(cond["title"]) if cond else "")


def _normalize_grants(grants: CommentedSeq) -> None:
    def merge(a: Any, b: Any) -> None:
        a["members"].extend(b["members"])
        for flag in ("authoritative", "public"):
            if b.get(flag) is True:
                a[flag] = True

    _merge_dups(grants, _grant_key, merge)
    for g in grants:
        for flag in ("authoritative", "public"):
            if g.get(flag) is False:
                del g[flag]  # the default (additive; no public member confirmed) is not written
        _reorder(g, _ENTRY_ORDER["grant"])
        members = g["members"]
        _merge_dups(members, str, lambda a, b: None)
        members.sort(key=lambda m: member_sort_key(str(m)))
        if g.get("condition") is not None:
            _reorder(g["condition"], _ENTRY_ORDER["condition"])
    grants.sort(key=_grant_key)


def normalize(doc: CommentedMap) -> CommentedMap:
    """Put a valid IAM document into canonical form, in place; returns it."""
    for k in [k for k in TOP_ORDER[3:] if k in doc and not doc[k]]:
        del doc[k]
    _reorder(doc, TOP_ORDER)
    _reorder(doc["encryption"], _ENTRY_ORDER["encryption"])
    if "principals" in doc:
        _reorder(doc["principals"], tuple(sorted(doc["principals"], key=human_number)))
    for section, ident in (("custom_roles", "role_id"), ("owned_service_accounts", "account_id")):
        for item in doc.get(section, ()):
            _reorder(item, _ENTRY_ORDER[section])
            if section == "custom_roles":
                _merge_dups(item["permissions"], str, lambda a, b: None)
                item["permissions"].sort(key=str)
                if item.get("stage") == "GA":
                    del item["stage"]  # the default launch stage is not written
        if section in doc:
            doc[section].sort(key=lambda item, ident=ident: str(item[ident]))
    if "project_grants" in doc:
        _normalize_grants(doc["project_grants"])
    for section, fields in SECTIONS.values():
        if section not in doc:
            continue
        ident = lambda e, fields=fields: tuple(str(e[f]) for f in fields)  # noqa: E731
        _merge_dups(doc[section], ident, lambda a, b: a["grants"].extend(b["grants"]))
        for entry in doc[section]:
            _reorder(entry, (*fields, "grants"))
            _normalize_grants(entry["grants"])
        doc[section].sort(key=ident)
    _block(doc)
    return doc


def dump(doc: CommentedMap) -> str:
    """Serialise a document with the IAM file's one YAML configuration."""
    buf = io.StringIO()
    yaml_rt().dump(doc, buf)
    return buf.getvalue()


def canonical_text(doc: CommentedMap) -> str:
    """``dump(normalize(doc))``: the bytes the file must have to pass ``iam check``."""
    return dump(normalize(doc))


# --- edits -----------------------------------------------------------------------------------

def _grants_of(doc: CommentedMap, target: Target, *, create: bool) -> CommentedSeq | None:
    if target.kind == "project":
        if "project_grants" not in doc:
            if not create:
                return None
            doc["project_grants"] = CommentedSeq()
        return doc["project_grants"]
    section, _ = SECTIONS[target.kind]
    fields = target_fields(target)
    if section not in doc:
        if not create:
            return None
        doc[section] = CommentedSeq()
    for entry in doc[section]:
        if all(str(entry[f]) == v for f, v in fields.items()):
            return entry["grants"]
    if not create:
        return None
    entry = CommentedMap(fields)
    entry["grants"] = CommentedSeq()
    doc[section].append(entry)
    return entry["grants"]


def _delete(seq: CommentedSeq, pred: Callable[[Any], bool]) -> None:
    """Delete matching items by index (``del`` keeps ruamel's per-item comments aligned)."""
    for i in reversed(range(len(seq))):
        if pred(seq[i]):
            del seq[i]


def _find(grants: CommentedSeq, role: str, title: str) -> Any:
    for g in grants:
        if _grant_key(g) == (role, title):
            return g
    return None


def add_member(doc: CommentedMap, target: Target, role: str, condition: ConditionSpec | None,
               member: str, *, condition_title: str | None = None, public: bool = False) -> bool:
    """Add ``member`` to the grant of ``role`` (and condition) on ``target``, creating the
    target entry and the grant as needed. Returns False when the member is already there.
    ``public``: the member is a public one granted knowingly — the grant gets ``public: true``.

    ``condition`` is a full condition for a new conditional grant; ``condition_title`` alone
    names an existing one. Raises EditError when a title is reused with another expression or
    names no existing grant.
    """
    title = condition.title if condition else (condition_title or "")
    grants = _grants_of(doc, target, create=True)
    assert grants is not None
    g = _find(grants, role, title)
    if g is not None and condition is not None:
        existing = g["condition"]
        if (str(existing["expression"]) != condition.expression
                or (condition.description is not None
                    and existing.get("description") != condition.description)):
            raise EditError(f"a condition titled {title!r} already exists for {role} on "
                            f"{target.spec} with another expression",
                            "reuse it with --condition-title alone, or choose another title",
                            field="--condition-title")
    if g is None:
        if title and condition is None:
            raise EditError(f"no grant of {role} with condition {title!r} on {target.spec}",
                            "a new condition needs --condition-expression too", field="--condition-title")
        g = CommentedMap()
        g["role"] = role
        if any(str(o["role"]) == role and o.get("authoritative") is True for o in grants):
            g["authoritative"] = True  # one role on one target: one mode (loader rule)
        g["members"] = CommentedSeq()
        if condition is not None:
            c = CommentedMap()
            c["title"] = condition.title
            c["expression"] = condition.expression
            if condition.description:
                c["description"] = condition.description
            g["condition"] = c
        grants.append(g)
    marked = False
    if public and g.get("public") is not True:
        g["public"] = True
        marked = True
    if member in [str(m) for m in g["members"]]:
        if marked:
            normalize(doc)
        return marked
    g["members"].append(member)
    normalize(doc)
    return True


def add_members(doc: CommentedMap, target: Target, role: str, condition: ConditionSpec | None,
                members: list[str], *, public: bool = False) -> int:
    """Add ``members`` to the grant of ``role`` (under ``condition``) on ``target`` — the batch
    form of :func:`add_member` for a whole file's worth of grants (``iam adopt``): the target
    entry and grant are created as needed, nothing is normalised (call :func:`canonical_text`
    once at the end). ``public``: the grant gets ``public: true`` (its public members were
    granted knowingly). A new grant of a role that is authoritative on the target becomes
    authoritative too (one mode per role and target: the loader's rule). Returns how many
    members were new. Raises EditError when the condition's title names an existing grant
    with another expression or description."""
    title = condition.title if condition else ""
    grants = _grants_of(doc, target, create=True)
    assert grants is not None
    g = _find(grants, role, title)
    if g is not None and condition is not None:
        existing = g["condition"]
        if (str(existing["expression"]) != condition.expression
                or (existing.get("description") or None) != (condition.description or None)):
            raise EditError(f"a condition titled {title!r} already exists for {role} on {target.spec} "
                            "with another expression or description",
                            "give one of the two conditions another title")
    if g is None:
        g = CommentedMap()
        g["role"] = role
        if any(str(o["role"]) == role and o.get("authoritative") is True for o in grants):
            g["authoritative"] = True
        g["members"] = CommentedSeq()
        if condition is not None:
            c = CommentedMap()
            c["title"] = condition.title
            c["expression"] = condition.expression
            if condition.description:
                c["description"] = condition.description
            g["condition"] = c
        grants.append(g)
    if public:
        g["public"] = True
    present = {str(m) for m in g["members"]}
    added = [m for m in dict.fromkeys(members) if m not in present]
    g["members"].extend(added)
    return len(added)


def remove_member(doc: CommentedMap, target: Target, role: str, title: str, member: str) -> bool:
    """Remove ``member`` from the grant of ``role`` (condition ``title``, "" for none) on
    ``target``; an emptied grant, target entry and section are removed. Returns False when
    the member had no such grant."""
    grants = _grants_of(doc, target, create=False)
    g = _find(grants, role, title) if grants is not None else None
    if g is None or member not in [str(m) for m in g["members"]]:
        return False
    _delete(g["members"], lambda m: str(m) == member)
    if not g["members"]:
        _delete(grants, lambda x: x is g)  # type: ignore[arg-type]
    if target.kind != "project" and not grants:
        _delete(doc[SECTIONS[target.kind][0]], lambda e: not e["grants"])
    normalize(doc)  # drops emptied sections
    return True


def set_principal(doc: CommentedMap, pid: str, ciphertext: str) -> None:
    """Set ``principals[pid]`` (creating the section), keeping canonical order."""
    if "principals" not in doc:
        doc["principals"] = CommentedMap()
    doc["principals"][pid] = ciphertext
    normalize(doc)
