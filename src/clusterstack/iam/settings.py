"""The ``[iam]`` section of ``clusterstack.toml`` (all keys optional)::

    [iam]
    file = "iam/iam.yaml"                    # the reviewed IAM file, relative to the root
    stack = "gcp-demo"                       # the ONE stack that applies it (several GCP stacks
                                             # may share a project; only one may own its IAM)
    allow_email_domains = ["lab.example"]    # more domains whose addresses `iam check` accepts
    allow_emails = ["builds@ci.example"]     # individual non-personal addresses it accepts

Documentation domains reserved by RFC 2606 / RFC 6761 (``example.com|net|org``, ``*.example``,
``*.test``, ``*.invalid``, ``*.localhost``) and service-account domains
(``*.gserviceaccount.com``: machines, not people) are always accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterstack.errors import ConfigError
from clusterstack.workspace import Workspace

DEFAULT_FILE = "iam/iam.yaml"
DOC_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost",
               "gserviceaccount.com")


@dataclass(frozen=True)
class IamSettings:
    """Resolved ``[iam]`` settings: ``file`` absolute; domains lower-case, without a leading dot."""

    root: Path
    file: Path
    stack: str | None
    allow_email_domains: tuple[str, ...]
    allow_emails: tuple[str, ...]

    @classmethod
    def from_workspace(cls, ws: Workspace) -> "IamSettings":
        """Read ``ws.iam``. Raises ConfigError (exit 2) for a value of the wrong type."""
        raw = ws.iam

        def str_list(key: str) -> tuple[str, ...]:
            value = raw.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ConfigError(f"[iam] {key} must be a list of non-empty strings",
                                  "e.g. allow_email_domains = [\"lab.example\"]", file=ws.file,
                                  field=f"iam.{key}")
            return tuple(v.lower().lstrip(".") for v in value)

        file = raw.get("file", DEFAULT_FILE)
        if not isinstance(file, str) or not file:
            raise ConfigError("[iam] file must be a path relative to the repository root",
                              f'e.g. file = "{DEFAULT_FILE}"', file=ws.file, field="iam.file")
        stack = raw.get("stack")
        if stack is not None and (not isinstance(stack, str) or not stack):
            raise ConfigError("[iam] stack must be a stack (cluster) name", 'e.g. stack = "gcp-demo"',
                              file=ws.file, field="iam.stack")
        return cls(root=ws.root, file=(ws.root / file).resolve(), stack=stack,
                   allow_email_domains=DOC_DOMAINS + str_list("allow_email_domains"),
                   allow_emails=str_list("allow_emails"))
