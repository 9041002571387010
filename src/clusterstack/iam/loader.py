"""Load the IAM file with ``file:line`` errors.

Parsing uses ruamel.yaml's C-based safe loader (duplicate keys are an error with their line);
the slower round-trip parse — positions and comments, for the canonical writer and for
locating a validation error — runs only when needed. Validation uses
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
- a custom role of the file's project must be declared in ``custom_roles``;
- ``custom_roles[].role_id`` and ``owned_service_accounts[].account_id`` are unique;
- two bindings may not map to the same Pulumi logical name (slugs are lossy).

Every problem is collected, so one run reports them all; exit code 2. Every email quoted in a
message is redacted (:func:`clusterstack.redact.redact_text`): CI logs are public.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from clusterstack.config.loader import format_path, locate
from clusterstack.errors import ConfigError, FieldError, Problem
from clusterstack.iam.model import IamFile
from clusterstack.iam.targets import HUMAN_RE, BindingSpec, merge_bindings
from clusterstack.iam.settings import DOC_DOMAINS
from clusterstack.redact import redact_text

KEEP_DOMAINS = DOC_DOMAINS
"""Email domains left readable in loader errors: RFC 2606 documentation domains (nobody's
address) and ``gserviceaccount.com`` (machines, not people)."""

BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")

_HINTS = {
    "missing": "add this field",
    "extra_forbidden": "remove it or fix its spelling; every field of the IAM file is strict",
    "literal_error": "use the allowed value",
    "string_pattern_mismatch": "fix the value's format",
    "too_short": "a list here needs at least one entry; remove the entry instead of emptying it",
    "value_error": "fix the value",
}


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

    @cached_property
    def document(self) -> Any:
        return parse_document(self.text, self.path)

    def bindings(self) -> tuple[BindingSpec, ...]:
        """One binding per (target, role, condition title), merged and sorted."""
        return bindings_of(self.model)

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        return locate(self.document, path)[1]


def bindings_of(model: IamFile) -> tuple[BindingSpec, ...]:
    """Merge the model's grants into role-authoritative bindings (see :func:`merge_bindings`)."""
    return merge_bindings((target, g.role, g.condition.spec() if g.condition else None, g.members)
                          for _, target, g in model.grants())


def yaml_rt() -> YAML:
    """The one round-trip YAML configuration used to read and write the IAM file."""
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold a long value (ciphertexts, CEL expressions) across lines
    yaml.preserve_quotes = False
    return yaml


def _parse(text: str, path: Path, *, roundtrip: bool) -> Any:
    yaml = yaml_rt() if roundtrip else YAML(typ="safe")
    yaml.allow_duplicate_keys = False
    try:
        doc = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = (exc.problem or "invalid YAML").strip()
        dup = "duplicate key" in what
        if dup:
            what = what.split(" with value")[0]  # ruamel appends the (possibly long) value
        raise IamFileError(f"invalid YAML: {redact_text(what, keep=KEEP_DOMAINS)}",
                           "remove or merge the repeated key" if dup else "fix the YAML syntax",
                           file=path, line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(doc, dict):
        raise IamFileError("the IAM file must be a YAML mapping",
                           "start from the shipped iam/iam.yaml or run `clusterstack iam init`",
                           file=path, line=1)
    return doc


def parse_document(text: str, path: Path) -> Any:
    """Round-trip parse (comments and positions kept). Raises IamFileError with the line for
    syntax errors and duplicate keys."""
    return _parse(text, path, roundtrip=True)


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
    custom = {model.custom_role_name(r.role_id) for r in model.custom_roles}
    own_prefix = f"projects/{model.project}/roles/"
    groups: dict[tuple, tuple[Any, set[str]]] = {}
    first_path: dict[tuple, tuple] = {}
    for path, target, g in model.grants():
        if g.role.startswith(own_prefix) and g.role not in custom:
            errs.append(FieldError((*path, "role"), f"custom role {g.role} is not declared",
                                   "add it to custom_roles or fix the role id"))
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
        if b.logical_name in names and names[b.logical_name] != b.key:
            errs.append(FieldError(first_path[b.key], f"binding name {b.logical_name!r} collides "
                                   "with another binding's", "rename the target or condition title"))
        names.setdefault(b.logical_name, b.key)
    return errs


def load_iam_text(text: str, path: Path) -> LoadedIam:
    """Parse and validate IAM-file ``text`` (``path`` only labels errors).

    Raises IamFileError listing every problem as ``file:line: field: message — hint``.
    """
    positioned: list[Any] = []  # the round-trip parse, only when needed
    try:
        data = _parse(text, path, roundtrip=False)  # fast C loader; duplicate keys rejected too
    except IamFileError as exc:
        if "duplicate key" in exc.problems[0].message:
            raise
        # libyaml (YAML 1.1) refuses some YAML 1.2 the round-trip parser reads, e.g. a ':'
        # inside a flow-style plain scalar ([group:a@example.org]); let that parser decide.
        positioned.append(parse_document(text, path))
        data = positioned[0]

    def located(p: tuple, message: str, hint: str) -> Problem:
        if not positioned:
            positioned.append(parse_document(text, path))
        kept, line = locate(positioned[0], p)
        # Messages may quote a value (an unknown member form, a duplicate member): CI logs are
        # public, so every email in them is redacted (documentation and service-account domains stay readable).
        return Problem(message=redact_text(message, keep=KEEP_DOMAINS), hint=hint, file=path,
                       line=line, field=format_path(kept))

    try:
        model = IamFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for e in exc.errors(include_url=False):
            msg = e["msg"].removeprefix("Value error, ")
            problems.append(located(tuple(e["loc"]), msg, _HINTS.get(e["type"], "fix the value")))
        raise IamFileError(problems=problems) from None
    errs = semantic_errors(model)
    if errs:
        raise IamFileError(problems=[located(fe.path, fe.message, fe.hint) for fe in errs])
    return LoadedIam(path=path, text=text, model=model)


def load_iam(path: Path) -> LoadedIam:
    """Read and validate the IAM file at ``path``. Raises IamFileError (missing or invalid)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IamFileError("IAM file not found", "create it with `clusterstack iam init`, or set "
                           "[iam] file in clusterstack.toml", file=path) from None
    return load_iam_text(text, path)
