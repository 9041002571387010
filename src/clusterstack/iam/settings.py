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

from clusterstack.workspace import Workspace

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
        """Resolve ``ws.iam`` (typed and checked when the workspace was loaded:
        :class:`clusterstack.workspace.model.IamSection`)."""
        iam = ws.iam

        def normal(values: list[str]) -> tuple[str, ...]:
            return tuple(v.lower().lstrip(".") for v in values)

        return cls(root=ws.root, file=(ws.root / iam.file).resolve(), stack=iam.stack,
                   allow_email_domains=DOC_DOMAINS + normal(iam.allow_email_domains),
                   allow_emails=normal(iam.allow_emails))
