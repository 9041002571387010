"""Secret specs: where a secret value lives, never the value itself.

Forms (validated when a reviewed file is loaded; resolved by :mod:`clusterstack.secrets` only
when a real deployment needs the value):

- ``gcp-secret://projects/<project>/secrets/<name>/versions/<version|latest>``
  — Secret Manager (resource name format from Secret Manager's REST reference);
- ``env:NAME`` — an environment variable of the process that runs the deployment;
- ``file:PATH`` — a file (trailing newline stripped).

:class:`SecretSpec` is the parsed spec, :data:`SecretSpecField` its pydantic field type (the
models of ``services.yaml``, cluster and bucket files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_GCP = re.compile(r"\Agcp-secret://projects/(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9]|\d+)/secrets/"
                  r"(?P<secret>[A-Za-z0-9_-]{1,255})/versions/(?P<version>latest|[1-9]\d*)\Z")
_ENV = re.compile(r"\Aenv:(?P<name>[A-Za-z_][A-Za-z0-9_]*)\Z")
_FILE = re.compile(r"\Afile:(?P<path>.+)\Z")


@dataclass(frozen=True)
class SecretSpec:
    """A parsed secret spec. ``scheme`` is ``gcp-secret``, ``env`` or ``file``; ``ref`` the rest."""

    scheme: str
    ref: str

    def __str__(self) -> str:
        return f"gcp-secret://{self.ref}" if self.scheme == "gcp-secret" else f"{self.scheme}:{self.ref}"

    @classmethod
    def parse(cls, text: str) -> "SecretSpec":
        """Parse a spec string. Raises ValueError naming the accepted forms."""
        if not isinstance(text, str):
            raise ValueError("a secret spec must be a string")
        if _GCP.match(text):
            return cls("gcp-secret", text.removeprefix("gcp-secret://"))
        if m := _ENV.match(text):
            return cls("env", m["name"])
        if m := _FILE.match(text):
            return cls("file", m["path"])
        if text.startswith("gcp-secret://"):
            raise ValueError(_gcp_problem(text))
        raise ValueError("not a secret spec; use gcp-secret://projects/P/secrets/NAME/versions/V, "
                         "env:NAME or file:PATH (a literal secret value is never accepted)")


_GCP_SHAPE = re.compile(r"\Agcp-secret://projects/(?P<project>[^/]*)/secrets/(?P<secret>[^/]*)"
                        r"/versions/(?P<version>[^/]*)\Z")


def _gcp_problem(text: str) -> str:
    """What is wrong with a ``gcp-secret://`` spec, part by part: a spec of the right shape
    whose project id is too short is told so, not called "not a secret spec". Rules: a
    project id (6–30 lowercase letters, digits and ``-``, a letter first, not ending in ``-``;
    Google Cloud "Creating and managing projects") or a project number; a secret id of 1–255
    letters, digits, ``-`` and ``_`` (Secret Manager ``secrets.create``, ``secretId``); a
    version ``latest`` or a positive number (Secret Manager "versions")."""
    m = _GCP_SHAPE.match(text)
    if m is None:
        return (f"{text[:80]!r} is not gcp-secret://projects/<project>/secrets/<name>/versions/<version> "
                "(four parts separated by '/')")
    project, secret, version = m["project"], m["secret"], m["version"]
    if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]|\d+", project):
        why = (f"is {len(project)} characters; a GCP project id has 6–30" if len(project) < 6 or len(project) > 30
               else "is not a GCP project id (lowercase letters, digits and '-', a letter first, not "
                    "ending in '-') nor a project number")
        return f"gcp-secret:// spec: project {project!r} {why} — use the project id or number"
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", secret):
        return (f"gcp-secret:// spec: secret name {secret!r} is not 1–255 letters, digits, '-' and '_' "
                "(Secret Manager secret ids)")
    return f"gcp-secret:// spec: version {version!r} is not 'latest' or a positive version number"


def _coerce(value: object) -> SecretSpec:
    if isinstance(value, SecretSpec):
        return value
    if not isinstance(value, str):
        raise ValueError("a secret spec must be a string")
    return SecretSpec.parse(value)


# In a reviewed file a secret spec is a string (the JSON Schema editors see: clusterstack schema).
SecretSpecField = Annotated[SecretSpec, BeforeValidator(_coerce), PlainSerializer(str),
                            WithJsonSchema({"type": "string", "pattern": r"\A(gcp-secret://|env:|file:).+\Z",
                                            "description": "a secret spec: gcp-secret://projects/P/"
                                            "secrets/NAME/versions/V, env:NAME or file:PATH"})]
"""Pydantic field type for a secret spec (validated at load, serialised back to its text)."""
