"""Pulumi URNs: THE rule that builds one and THE parser. No other module splits or joins a URN.

Grammar (pulumi/pulumi ``sdk/go/common/resource/urn.go``)::

    urn:pulumi:<stack>::<project>::<qualified type>::<name>
    <qualified type> = [<parent qualified type> "$"] <type>

``NewURN(stack, project, parentType, baseType, name)`` prefixes the parent's *qualified* type
with ``$`` unless the parent is the root Stack (``pulumi:pulumi:Stack``) or there is none, so a
chain of components reads ``A$B$C``. The name is everything after the third ``::`` and may
itself contain ``::`` and ``$`` (``URN.Name`` uses ``SplitN(…, 4)``); a type token contains
neither. ``IsValid`` requires the prefix, four parts and a stack and project name.

A *provider reference* is ``<provider URN>::<provider ID>``, split at the LAST ``::``
(``pkg/resource/deploy/providers/reference.go`` ``ParseReference``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterstack.pulumi.tokens import STACK_TYPE

PREFIX = "urn:pulumi:"
NAME_DELIMITER = "::"
TYPE_DELIMITER = "$"

# Stack and project names: Pulumi's stack/project name characters (``tokens.ValidateStackName``,
# ``ValidateProjectName``: ``[A-Za-z0-9_.-]``). urn.go's IsValid also wants a leading letter,
# ``_`` or ``.`` (``tokens.IsName``); a stack named ``2fa`` is legal, so a leading digit is kept.
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class URNError(ValueError):
    """A string that is not a Pulumi URN (or provider reference)."""


@dataclass(frozen=True)
class URN:
    """A parsed URN. ``qualified_type`` is ``parent$…$type``; ``name`` may contain ``::``."""

    stack: str
    project: str
    qualified_type: str
    name: str

    @property
    def type(self) -> str:
        """The resource's own type token (the last ``$`` segment, urn.go ``Type``)."""
        return self.qualified_type.rsplit(TYPE_DELIMITER, 1)[-1]

    @property
    def parent_types(self) -> tuple[str, ...]:
        """The ancestors' type tokens, outermost first (empty under the Stack)."""
        return tuple(self.qualified_type.split(TYPE_DELIMITER)[:-1])

    def __str__(self) -> str:
        return f"{PREFIX}{self.stack}{NAME_DELIMITER}{self.project}{NAME_DELIMITER}" \
               f"{self.qualified_type}{NAME_DELIMITER}{self.name}"


def new_urn(stack: str, project: str, parent_type: str, type_: str, name: str) -> str:
    """Pulumi ``resource.NewURN``: ``parent_type`` is the parent's qualified type (``""`` for
    none; the root Stack's type counts as none)."""
    qualified = type_ if not parent_type or parent_type == STACK_TYPE \
        else f"{parent_type}{TYPE_DELIMITER}{type_}"
    return f"{PREFIX}{stack}{NAME_DELIMITER}{project}{NAME_DELIMITER}{qualified}{NAME_DELIMITER}{name}"


def child_urn(parent: str | None, stack: str, project: str, type_: str, name: str) -> str:
    """The URN of a resource named ``name`` of type ``type_`` under the resource whose URN is
    ``parent`` (``None``: no parent). Raises URNError when ``parent`` is not a URN."""
    return new_urn(stack, project, parse_urn(parent).qualified_type if parent else "", type_, name)


def parse_urn(text: str) -> URN:
    """Split a URN into its parts (urn.go ``IsValid`` / ``SplitN(…, 4)``). Raises URNError on
    a missing prefix, fewer than four parts, an empty stack/project/type or a type segment."""
    if not isinstance(text, str) or not text.startswith(PREFIX):
        raise URNError(f"not a Pulumi URN (no {PREFIX!r} prefix): {text!r}")
    parts = text[len(PREFIX):].split(NAME_DELIMITER, 3)
    if len(parts) != 4:
        raise URNError(f"not a Pulumi URN (expected <stack>::<project>::<type>::<name>): {text!r}")
    stack, project, qualified, name = parts
    if not _NAME.fullmatch(stack) or not _NAME.fullmatch(project):
        raise URNError(f"not a Pulumi URN (bad stack or project name): {text!r}")
    if not qualified or not all(qualified.split(TYPE_DELIMITER)):
        raise URNError(f"not a Pulumi URN (empty type): {text!r}")
    return URN(stack, project, qualified, name)


def is_urn(text: object) -> bool:
    """True when ``text`` parses as a URN."""
    try:
        parse_urn(text)  # type: ignore[arg-type]
    except URNError:
        return False
    return True


def type_of(urn: str) -> str:
    """The resource type token of ``urn``, or ``""`` when it is not a URN."""
    try:
        return parse_urn(urn).type
    except URNError:
        return ""


def name_of(urn: str) -> str:
    """The resource name of ``urn`` (may contain ``::``); a non-URN string is returned as is
    (display use: a diagnostic's URN field may be empty)."""
    try:
        return parse_urn(urn).name
    except URNError:
        return urn


def qualified_type_of(urn: str) -> str:
    """The qualified type (``parent$…$type``) of ``urn``. Raises URNError."""
    return parse_urn(urn).qualified_type


def renamed_urn(urn: str, stack: str) -> str:
    """``urn`` after ``pulumi stack rename <stack>``: the stack part replaced, and the root
    Stack resource's name ``<project>-<old stack>`` made ``<project>-<stack>`` (pulumi/pulumi
    pkg/resource/edit/operations.go ``RenameStack``; every other name is the program's and
    stays). Raises URNError when ``urn`` is not a URN."""
    u = parse_urn(urn)
    name = f"{u.project}-{stack}" if u.qualified_type == STACK_TYPE else u.name
    return f"{PREFIX}{stack}{NAME_DELIMITER}{u.project}{NAME_DELIMITER}{u.qualified_type}{NAME_DELIMITER}{name}"


def parse_reference(reference: str) -> tuple[str, str]:
    """A provider reference ``<URN>::<ID>`` → ``(URN, ID)``, split at the last ``::``
    (``providers.ParseReference``). Raises URNError when the part before it is not a URN."""
    urn, sep, id_ = reference.rpartition(NAME_DELIMITER)
    if not sep or not is_urn(urn):
        raise URNError(f"not a provider reference <URN>::<ID>: {reference!r}")
    return urn, id_


def provider_reference(urn: str, id_: str) -> str:
    """The provider reference ``<URN>::<ID>`` (``providers.NewReference``)."""
    return f"{urn}{NAME_DELIMITER}{id_}"


def provider_urn(reference: str | None) -> str | None:
    """The provider URN of a provider reference (``None`` for none). A value that is not a
    reference (already a bare URN, or malformed) is returned unchanged."""
    if not reference:
        return None
    try:
        return parse_reference(reference)[0]
    except URNError:
        return reference
