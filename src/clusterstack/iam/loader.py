"""Load the IAM file with ``file:line`` errors.

Read through the one loader (:mod:`clusterstack.config.document`): the C-based safe parse
(duplicate keys are an error with their line); the slower round-trip parse — positions and
comments, for the canonical writer and for locating a validation error — runs only when needed. Validation uses
:class:`clusterstack.iam.model.IamFile` (unknown fields, formats, empty member lists, plaintext
``user:`` members); then the cross-entry rules below, each reported at the offending line:

- a ``human-NNN`` member must be a key of ``principals`` (no dangling ids);
- a ciphertext may appear once in ``principals`` (deterministic encryption: one person = one
  ciphertext, so a second id for the same email is caught without decrypting);
- a member may appear once per binding (target, role, condition title);
- grants of one role and condition title on one target must carry the same condition (GCP
  keys a conditional binding by role + title; the provider's import ID uses the title);
- basic roles (``roles/owner|editor|viewer``) take no condition (GCP "IAM Conditions
  overview": conditions are not supported on basic roles);
- grants of one role on one target must agree on ``authoritative`` (an ``*IAMBinding`` and
  ``*IAMMember`` resources of one role fight over the policy: pulumi-gcp ``projects.IAMBinding``
  docs, "can be used in conjunction with IAMMember only if they do not grant privilege to the
  same role");
- a role must exist: a predefined ``roles/…`` of the shipped snapshot of GCP's predefined roles,
  or a custom role of the file's project declared in ``custom_roles``; near misses are named
  (:func:`clusterstack.iam.roles.role_problem`);
- ``custom_roles[].role_id`` and ``owned_service_accounts[].account_id`` are unique;
- two bindings (or two additive members) may not map to the same Pulumi logical name (slugs
  are lossy).

Every problem is collected, so one run reports them all; exit code 2. Every email quoted in a
message is redacted (:func:`clusterstack.redact.redact_text`): CI logs are public.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from clusterstack.config.document import Document, format_path, read_text
from clusterstack.errors import ConfigError, FieldError
from clusterstack.iam.model import IamFile
from clusterstack.iam.roles import role_problem
from clusterstack.iam.targets import HUMAN_RE, BindingSpec, merge_bindings
from clusterstack.iam.settings import DOC_DOMAINS
from clusterstack.redact import redact_text

KEEP_DOMAINS = DOC_DOMAINS
"""Email domains left readable in loader errors: RFC 2606 documentation domains (nobody's
address) and ``gserviceaccount.com`` (machines, not people)."""

BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")

class IamFileError(ConfigError):
    """The IAM file is missing or invalid (exit 2)."""


@dataclass
class LoadedIam:
    """A validated IAM file: the model and the text it was parsed from. ``document`` (the
    round-trip parse, for the canonical writer and line lookups) is built on first use: the
    round-trip parser is several times slower than the C safe loader used to validate."""

    path: Path
    text: str
    model: IamFile
    source: Document | None = None

    @property
    def document(self) -> Any:
        if self.source is None:
            self.source = _document(self.text, self.path)
        return self.source.positioned

    def bindings(self) -> tuple[BindingSpec, ...]:
        """One binding per (target, role, condition title), merged and sorted."""
        return bindings_of(self.model)

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        self.document  # noqa: B018  (parsed on first use)
        assert self.source is not None
        return self.source.line_of(path)


def _redact(text: str) -> str:
    # Messages may quote a value (an unknown member form, a duplicate member): CI logs are
    # public, so every email in them is redacted (documentation and service-account domains
    # stay readable).
    return redact_text(text, keep=KEEP_DOMAINS)


def _document(text: str, path: Path) -> Document:
    return Document(path=path, text=text, data=None, error=IamFileError, redact=_redact)


def bindings_of(model: IamFile) -> tuple[BindingSpec, ...]:
    """Merge the model's grants into bindings (see :func:`merge_bindings`)."""
    return merge_bindings((target, g.role, g.condition.spec() if g.condition else None, g.members,
                           g.authoritative) for _, target, g in model.grants())


def yaml_rt() -> YAML:
    """The one round-trip YAML configuration used to read and write the IAM file."""
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold a long value (ciphertexts, CEL expressions) across lines
    yaml.preserve_quotes = False
    return yaml


def parse_document(text: str, path: Path) -> Any:
    """Round-trip parse (comments and positions kept). Raises IamFileError with the line for
    syntax errors and duplicate keys, and when the document is not a mapping."""
    doc = _document(text, path)
    _require_mapping(doc.positioned, path)
    return doc.positioned


def _require_mapping(data: Any, path: Path) -> None:
    if not isinstance(data, dict):
        raise IamFileError("the IAM file must be a YAML mapping",
                           "start from the shipped iam/iam.yaml or run `clusterstack iam init`",
                           file=path, line=1)


def semantic_errors(model: IamFile) -> list[FieldError]:
    """The cross-entry rules of the module docstring, as path-located FieldErrors."""
    errs: list[FieldError] = []
    seen_ct: dict[str, str] = {}
    for pid, ct in model.principals.items():
        if ct in seen_ct:
            errs.append(FieldError(("principals", pid), f"same ciphertext as {seen_ct[ct]}: one "
                                   "person registered twice", f"use {seen_ct[ct]} and remove {pid}"))
        else:
            seen_ct[ct] = pid
    for section, attr in (("custom_roles", "role_id"), ("owned_service_accounts", "account_id")):
        seen: set[str] = set()
        for i, item in enumerate(getattr(model, section)):
            value = getattr(item, attr)
            if value in seen:
                errs.append(FieldError((section, i, attr), f"duplicate {attr} {value!r}",
                                       "declare it once"))
            seen.add(value)
    custom_ids = {r.role_id for r in model.custom_roles}
    groups: dict[tuple, tuple[Any, set[str]]] = {}
    first_path: dict[tuple, tuple] = {}
    mode: dict[tuple, tuple[bool, tuple]] = {}
    for path, target, g in model.grants():
        first_mode, mode_path = mode.setdefault((target, g.role), (g.authoritative, path))
        if g.authoritative != first_mode:
            errs.append(FieldError((*path, "authoritative"), f"{g.role} on {target.spec} is "
                                   f"{'authoritative' if first_mode else 'additive'} at "
                                   f"{format_path(mode_path)} but not here",
                                   "every grant of one role on one target takes the same "
                                   "authoritative: value"))
        problem = role_problem(g.role, project=model.project, custom_role_ids=custom_ids)
        if problem is not None:
            errs.append(FieldError((*path, "role"), *problem))
        if g.condition is not None and g.role in BASIC_ROLES:
            errs.append(FieldError((*path, "condition"), f"{g.role} is a basic role; GCP does "
                                   "not allow conditions on basic roles",
                                   "use a predefined or custom role for a conditional grant"))
        key = (target, g.role, g.condition.title if g.condition else "")
        if key not in groups:
            groups[key] = (g.condition, set())
            first_path[key] = path
        cond, members = groups[key]
        if g.condition != cond:
            first_line = format_path(first_path[key])
            errs.append(FieldError((*path, "condition"), f"conflicts with the condition titled "
                                   f"{key[2]!r} for {g.role} at {first_line}",
                                   "one title = one condition: give this one another title or "
                                   "use the same expression and description"))
        for k, m in enumerate(g.members):
            if HUMAN_RE.match(m) and m not in model.principals:
                errs.append(FieldError((*path, "members", k), f"{m} is not a registered principal",
                                       "register the person with `clusterstack iam grant EMAIL …` "
                                       "or fix the id"))
            if m in members:
                errs.append(FieldError((*path, "members", k), f"duplicate member {m} for {g.role} "
                                       f"on {target.spec}", "list each member once per role"))
            members.add(m)
    names: dict[str, tuple] = {}
    for b in bindings_of(model):
        for name, who in ((n, (b.key, m)) for n, m in zip(b.resource_names, b.members)):
            if name in names and names[name] != who:
                errs.append(FieldError(first_path[b.key], f"binding name {name!r} collides "
                                       "with another binding's", "rename the target or condition title"))
            names.setdefault(name, who)
    return errs


def load_iam_text(text: str, path: Path) -> LoadedIam:
    """Parse and validate IAM-file ``text`` (``path`` only labels errors).

    Raises IamFileError listing every problem as ``file:line: field: message — hint``.
    """
    doc = Document.parse(text, path, format="yaml", error=IamFileError, redact=_redact)
    _require_mapping(doc.data, path)
    model = doc.validate(IamFile, cross_checks=semantic_errors,
                         strict="every field of the IAM file is strict")
    return LoadedIam(path=path, text=text, model=model, source=doc)


def load_iam(path: Path) -> LoadedIam:
    """Read and validate the IAM file at ``path``. Raises IamFileError (missing or invalid)."""
    text = read_text(path, missing="IAM file not found",
                     missing_hint="create it with `clusterstack iam init`, or set [iam] file in "
                                  "clusterstack.toml", error=IamFileError)
    return load_iam_text(text, path)
