"""Pulumi's bulk-import file (``pulumi import --file``), its canonical JSON and its digest.

Format (pulumi/pulumi ``pkg/cmd/pulumi/operations/import.go``, ``importFile`` / ``importSpec``)::

    {"nameTable": {"<name>": "<parent or provider URN>", ...},
     "resources": [{"type": str, "name": str, "logicalName": str, "id": str,
                    "parent": "<name>", "provider": "<name>", "version": str,
                    "component": bool, "remote": bool, "properties": [str],
                    "pluginDownloadUrl": str}, ...]}

Pulumi's rules, checked here before the CLI sees a file: a non-component entry needs an
``id``, a component entry must not have one, ``remote`` only with ``component``; ``parent``
names an entry of ``nameTable`` or another entry's ``name``; ``provider`` names an entry of
``nameTable``; an entry's URN is ``resource.NewURN(stack, project, <parent's qualified type>,
type, logicalName)`` (:func:`clusterstack.pulumi.urn.new_urn`) — the same rule the program's
URNs follow, which is why adopted resources keep their real URNs. Empty optional fields are
omitted (Go ``omitempty``). ``<PLACEHOLDER>`` is what Pulumi's own tooling writes for an ID it
cannot know (``pulumi import`` codegen).

The file is written canonically (sorted keys, 2-space indent, trailing newline), so the same
plan gives byte-identical files; its *digest* is the SHA-256 of the document's compact
canonical JSON (sorted keys, ``,``/``:`` separators, UTF-8), so re-indenting the file does not
change it while any edit of a value does.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.pulumi.urn import URNError, new_urn, qualified_type_of
from clusterstack.config.document import parse_json

PLACEHOLDER = "<PLACEHOLDER>"
"""What Pulumi's own tooling writes for an ID it cannot know (``pulumi import`` codegen)."""


class ImportFileError(ClusterstackError):
    """A document is not an import file Pulumi would accept (exit 2)."""


@dataclass(frozen=True)
class ImportEntry:
    """One element of ``resources[]``. ``parent`` / ``provider`` are *names* (nameTable keys or,
    for ``parent``, another entry's ``name``), not URNs."""

    type: str
    name: str
    logical_name: str
    id: str | None = None
    parent: str | None = None
    provider: str | None = None
    version: str | None = None
    component: bool = False
    remote: bool = False
    properties: tuple[str, ...] | None = None
    plugin_download_url: str | None = None

    @property
    def is_placeholder(self) -> bool:
        """A non-component entry whose ID is still unknown (``<PLACEHOLDER>`` or empty)."""
        return not self.component and (not self.id or self.id == PLACEHOLDER)

    def to_json(self) -> dict[str, Any]:
        """The entry as Pulumi writes it: empty optional fields omitted."""
        d: dict[str, Any] = {"type": self.type, "name": self.name, "logicalName": self.logical_name}
        for key, value in (("id", self.id), ("parent", self.parent), ("provider", self.provider),
                           ("version", self.version), ("pluginDownloadUrl", self.plugin_download_url)):
            if value:
                d[key] = value
        if self.component:
            d["component"] = True
        if self.remote:
            d["remote"] = True
        if self.properties is not None:
            d["properties"] = list(self.properties)
        return d


@dataclass(frozen=True)
class ImportFile:
    """A whole import file. ``name_table``: name → URN; ``resources`` in file order."""

    name_table: Mapping[str, str]
    resources: tuple[ImportEntry, ...]
    raw: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"nameTable": dict(sorted(self.name_table.items())),
                "resources": [r.to_json() for r in self.resources]}

    def document(self) -> Mapping[str, Any]:
        """The JSON document: as read from disk when parsed (so the digest covers exactly what
        the operator reviewed), else :meth:`to_json`."""
        return self.raw if self.raw is not None else self.to_json()

    def dumps(self) -> str:
        """Canonical file text: sorted keys, 2-space indent, UTF-8, trailing newline."""
        return json.dumps(self.document(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    def digest(self) -> str:
        """SHA-256 (64 hex) of the document's compact canonical JSON."""
        return digest_of(self.document())

    def by_name(self) -> dict[str, ImportEntry]:
        return {r.name: r for r in self.resources}

    def placeholders(self) -> list[ImportEntry]:
        """Non-component entries whose ID is unknown, in file order."""
        return [r for r in self.resources if r.is_placeholder]

    def reference_problems(self) -> list[Problem]:
        """Pulumi's structural rules (see the module docstring), one Problem per violation."""
        problems: list[Problem] = []
        names = [r.name for r in self.resources]
        dup = sorted(n for n, c in Counter(names).items() if c > 1)
        for n in dup:
            problems.append(Problem(f"entry name {n!r} is used by more than one entry",
                                    "names must be unique: regenerate the file", field="resources"))
        entry_names = set(names)
        for i, r in enumerate(self.resources):
            where = f"resources[{i}] ({r.name})"
            if r.component and r.id:
                problems.append(Problem("a component entry has an id", "regenerate the file",
                                        field=where))
            if r.remote and not r.component:
                problems.append(Problem("`remote` without `component`", "regenerate the file",
                                        field=where))
            if r.parent and r.parent not in self.name_table and r.parent not in entry_names:
                problems.append(Problem(f"parent {r.parent!r} is neither in nameTable nor an entry",
                                        "restore the parent entry or regenerate the file",
                                        field=where))
            if r.parent and r.parent in self.name_table and r.parent in entry_names:
                problems.append(Problem(f"parent {r.parent!r} is both in nameTable and an entry",
                                        "regenerate the file", field=where))
            if r.provider and r.provider not in self.name_table:
                problems.append(Problem(f"provider {r.provider!r} has no entry in nameTable",
                                        "restore the nameTable entry or regenerate the file",
                                        field=where))
        return problems

    def urns(self, project: str, stack: str) -> dict[str, str]:
        """``{entry name: URN}`` by Pulumi's rule (parents resolved through nameTable and
        entries). Raises ImportFileError on an unresolvable or cyclic parent chain."""
        by_name = self.by_name()
        out: dict[str, str] = {}

        def resolve(name: str, seen: tuple[str, ...]) -> str:
            if name in out:
                return out[name]
            if name in seen:
                raise ImportFileError(f"parent chain of entry {name!r} is cyclic", "regenerate the file")
            r = by_name[name]
            parent_type = ""
            if r.parent:
                if r.parent in self.name_table:
                    parent_urn = self.name_table[r.parent]
                elif r.parent in by_name:
                    parent_urn = resolve(r.parent, (*seen, name))
                else:
                    raise ImportFileError(f"parent {r.parent!r} of entry {name!r} does not resolve",
                                          "regenerate the file")
                try:
                    parent_type = qualified_type_of(parent_urn)
                except URNError:
                    raise ImportFileError(f"not a Pulumi URN: {parent_urn!r}",
                                          "regenerate the file") from None
            out[name] = new_urn(stack, project, parent_type, r.type, r.logical_name)
            return out[name]

        for r in self.resources:
            resolve(r.name, ())
        return out


def digest_of(document: Mapping[str, Any]) -> str:
    """SHA-256 hex of ``document``'s compact canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- parsing -------------------------------------------------------------------------------


class _EntryModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    type: str = Field(min_length=1)
    name: str = Field(default="")
    logicalName: str = Field(default="")  # noqa: N815 (Pulumi's spelling)
    id: str = ""
    parent: str = ""
    provider: str = ""
    version: str = ""
    component: bool = False
    remote: bool = False
    properties: list[str] | None = None
    pluginDownloadUrl: str = ""  # noqa: N815


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    nameTable: dict[str, str] = Field(default_factory=dict)  # noqa: N815
    resources: list[_EntryModel]


def parse(text: str, *, file: Path | None = None) -> ImportFile:
    """Parse import-file text. Raises ImportFileError (with ``file`` and the field) on invalid
    JSON or a shape Pulumi would not accept. ``name``/``logicalName`` default to each other,
    as in Pulumi."""
    # The loader's JSON limits (depth, bounded integers); the text comes through its decode.
    raw = parse_json(text, file or Path("<import file>"), error=ImportFileError,
                     hint="regenerate it with `clusterstack import generate`")
    try:
        model = _FileModel.model_validate(raw)
    except ValidationError as exc:
        problems = [Problem(e["msg"], "regenerate it with `clusterstack import generate`",
                            file=file, field=".".join(str(p) for p in e["loc"]))
                    for e in exc.errors()]
        raise ImportFileError(problems=problems) from None
    entries = []
    for i, e in enumerate(model.resources):
        name = e.name or e.logicalName
        if not name:
            raise ImportFileError("the entry has neither name nor logicalName",
                                  "regenerate the file", file=file, field=f"resources.{i}")
        entries.append(ImportEntry(
            type=e.type, name=name, logical_name=e.logicalName or name, id=e.id or None,
            parent=e.parent or None, provider=e.provider or None, version=e.version or None,
            component=e.component, remote=e.remote,
            properties=tuple(e.properties) if e.properties is not None else None,
            plugin_download_url=e.pluginDownloadUrl or None))
    return ImportFile(name_table=dict(model.nameTable), resources=tuple(entries), raw=raw)


def entries_by_type(entries: Iterable[ImportEntry]) -> dict[str, int]:
    """``{type: count}`` sorted by type."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.type] = counts.get(e.type, 0) + 1
    return dict(sorted(counts.items()))
