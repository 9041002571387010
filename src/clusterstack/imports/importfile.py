"""Pulumi's bulk-import file (``pulumi import --file``), its canonical JSON and its digest.

Format (Pulumi ``pkg/cmd/pulumi/operations/import.go``, ``importFile`` / ``importSpec``)::

    {"nameTable": {"<name>": "<parent or provider URN>", ...},
     "resources": [{"type": str, "name": str, "logicalName": str, "id": str,
                    "parent": "<name>", "provider": "<name>", "version": str,
                    "component": bool, "remote": bool, "properties": [str],
                    "pluginDownloadUrl": str}, ...]}

Pulumi's rules, enforced here before the CLI sees a file: a non-component entry needs an
``id``, a component entry must not have one, ``remote`` only with ``component``; ``parent``
names an entry of ``nameTable`` or another entry's ``name``; ``provider`` names an entry of
``nameTable``; an entry's URN is ``resource.NewURN(stack, project, <parent's qualified type>,
type, logicalName)`` — the same rule the program's URNs follow, which is why adopted
resources keep their real URNs. Empty optional fields are omitted (Go ``omitempty``).

The file is written canonically (sorted keys, 2-space indent, trailing newline), so the same
plan gives byte-identical files; its *digest* is the SHA-256 of the document's compact
canonical JSON (sorted keys, ``,``/``:`` separators, UTF-8), so re-indenting the file does not
change it while any edit of a value does.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clusterstack.errors import ClusterstackError, Problem
from clusterstack.imports.ids import PLACEHOLDER

STACK_TYPE = "pulumi:pulumi:Stack"
FILE_MODE = 0o600


class ImportRefused(ClusterstackError):
    """``import apply`` (or ``generate``) refuses: the file, its place, or its content is not
    the reviewed transaction. Exit code 2; nothing was changed."""


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
        entries). Raises ImportRefused on an unresolvable or cyclic parent chain."""
        by_name = self.by_name()
        out: dict[str, str] = {}

        def resolve(name: str, seen: tuple[str, ...]) -> str:
            if name in out:
                return out[name]
            if name in seen:
                raise ImportRefused(f"parent chain of entry {name!r} is cyclic", "regenerate the file")
            r = by_name[name]
            parent_type = ""
            if r.parent:
                if r.parent in self.name_table:
                    parent_urn = self.name_table[r.parent]
                elif r.parent in by_name:
                    parent_urn = resolve(r.parent, (*seen, name))
                else:
                    raise ImportRefused(f"parent {r.parent!r} of entry {name!r} does not resolve",
                                        "regenerate the file")
                parent_type = qualified_type(parent_urn)
            out[name] = make_urn(project, stack, parent_type, r.type, r.logical_name)
            return out[name]

        for r in self.resources:
            resolve(r.name, ())
        return out


def make_urn(project: str, stack: str, parent_type: str, type_: str, name: str) -> str:
    """Pulumi ``resource.NewURN``: the parent's qualified type joined with ``$`` unless the
    parent is the root Stack (or there is none)."""
    qualified = f"{parent_type}${type_}" if parent_type and parent_type != STACK_TYPE else type_
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def qualified_type(urn: str) -> str:
    """The qualified type of a URN (``a$b$c`` for nested resources)."""
    parts = urn.split("::")
    if len(parts) < 4 or not parts[0].startswith("urn:pulumi:"):
        raise ImportRefused(f"not a Pulumi URN: {urn!r}", "regenerate the file")
    return parts[2]


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
    """Parse import-file text. Raises ImportRefused (with ``file`` and the field) on invalid
    JSON or a shape Pulumi would not accept. ``name``/``logicalName`` default to each other,
    as in Pulumi."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not JSON: {exc.msg}", "regenerate it with `clusterstack import "
                            "generate`", file=file, line=exc.lineno) from None
    try:
        model = _FileModel.model_validate(raw)
    except ValidationError as exc:
        problems = [Problem(e["msg"], "regenerate it with `clusterstack import generate`",
                            file=file, field=".".join(str(p) for p in e["loc"]))
                    for e in exc.errors()]
        raise ImportRefused(problems=problems) from None
    entries = []
    for i, e in enumerate(model.resources):
        name = e.name or e.logicalName
        if not name:
            raise ImportRefused("the entry has neither name nor logicalName",
                                "regenerate the file", file=file, field=f"resources.{i}")
        entries.append(ImportEntry(
            type=e.type, name=name, logical_name=e.logicalName or name, id=e.id or None,
            parent=e.parent or None, provider=e.provider or None, version=e.version or None,
            component=e.component, remote=e.remote,
            properties=tuple(e.properties) if e.properties is not None else None,
            plugin_download_url=e.pluginDownloadUrl or None))
    return ImportFile(name_table=dict(model.nameTable), resources=tuple(entries), raw=raw)


# --- where the file may live ---------------------------------------------------------------


def repository_roots(workspace_root: Path) -> tuple[Path, ...]:
    """The directories an import file must stay out of: the workspace root and, when the
    workspace sits inside a larger git work tree, that tree's root (symlinks resolved)."""
    root = workspace_root.resolve()
    roots = [root]
    for d in (root, *root.parents):
        if (d / ".git").exists():
            if d != root:
                roots.append(d)
            break
    return tuple(roots)


def check_outside(path: Path, workspace_root: Path) -> Path:
    """Resolve ``path`` (symlinks included, even for a file that does not exist yet) and
    refuse it when it lies inside the repository. Returns the resolved path.

    Rule: an import file holds provider IDs of live objects (and the operator's record IDs);
    it must never be committed, so it may not even be written inside the work tree.
    """
    resolved = Path(os.path.abspath(path)).resolve()
    for root in repository_roots(workspace_root):
        if resolved == root or root in resolved.parents:
            raise ImportRefused(
                f"inside the repository ({root})" + (f", via symlinks: {resolved}"
                                                     if resolved != Path(os.path.abspath(path)) else ""),
                "import files hold provider IDs and must never be committed: use a path "
                "outside it, e.g. ~/clusterstack-imports/<cluster>.json", file=Path(path))
    return resolved


def check_writable_target(path: Path, workspace_root: Path) -> Path:
    """For ``generate --output``: outside the repository (:func:`check_outside`), in an
    existing directory, and not a directory itself. Returns the resolved path."""
    resolved = check_outside(path, workspace_root)
    if resolved.is_dir():
        raise ImportRefused("is a directory", "give a file name, e.g. <dir>/<cluster>.json",
                            file=Path(path))
    if not resolved.parent.is_dir():
        raise ImportRefused(f"directory {resolved.parent} does not exist",
                            f"create it first (mkdir -m 700 {resolved.parent})", file=Path(path))
    return resolved


def check_mode(path: Path) -> None:
    """Refuse a file that is not a regular file readable and writable by its owner only
    (mode 0600; 0400 is accepted too). Raises ImportRefused."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ImportRefused("no such file", "give the file `import generate --output` wrote",
                            file=path) from None
    if not stat.S_ISREG(st.st_mode):
        raise ImportRefused("not a regular file", "give the file `import generate` wrote",
                            file=path)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise ImportRefused(
            f"mode {mode:04o}: readable or writable by others than its owner",
            f"the file holds provider IDs: `chmod 600 {path}` after checking nobody else "
            "edited it, or regenerate it", file=path)


def read_checked(path: Path, workspace_root: Path) -> ImportFile:
    """Read an import file for ``apply``: outside the repository, mode 0600, valid shape."""
    resolved = check_outside(path, workspace_root)
    check_mode(resolved)
    return parse(resolved.read_text(encoding="utf-8"), file=path)


def entries_by_type(entries: Iterable[ImportEntry]) -> dict[str, int]:
    """``{type: count}`` sorted by type."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.type] = counts.get(e.type, 0) + 1
    return dict(sorted(counts.items()))
