"""Stack pointers: ``infra/Pulumi.<stack>.yaml`` files whose only config is
``clusterstack:cluster: <name>``. One stack per cluster, named after the cluster.

Read through the one loader (:class:`~clusterstack.config.document.Document`); written by
:func:`write_pointer` (``clusterstack stack init``) with a round-trip edit, atomically.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ruamel.yaml import YAML

from clusterstack import reads
from clusterstack.config.document import Document, parse_yaml, read_text
from clusterstack.errors import ConfigError, Problem
from clusterstack.fsutil import locked, write_atomic

if TYPE_CHECKING:
    from clusterstack.workspace import Workspace

STACK_CONFIG_KEY = "cluster"  # the stack config key `clusterstack:cluster`
POINTER_KEY = f"clusterstack:{STACK_CONFIG_KEY}"
# Top-level keys Pulumi itself writes into a stack file (its secrets provider state); any other
# key — or any config key besides the pointer — would be a value outside the reviewed config.
PULUMI_STACK_KEYS = frozenset({"config", "encryptionsalt", "secretsprovider", "encryptedkey"})


@dataclass(frozen=True)
class StackPointer:
    """A stack file and the cluster it names (``None`` when it names none).

    ``line`` (of the pointer key, 1 when there is none) and ``extra`` (``(field, line)`` of
    every key not allowed) are looked up only when read: a line needs the round-trip parse of
    the file (:attr:`Document.positioned`), which only an error message needs — every command
    reads every stack file, and the fast parse of a pointer is a tenth of the round-trip one.
    """

    stack: str
    file: Path
    cluster: str | None
    source: Document = field(repr=False, compare=False)
    _extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), repr=False)

    @property
    def line(self) -> int | None:
        """1-based line of ``config.clusterstack:cluster`` (1 when the file names no cluster)."""
        return self.source.line_of(("config", POINTER_KEY)) if self.cluster is not None else 1

    @property
    def extra(self) -> tuple[tuple[str, int], ...]:
        """``(field, 1-based line)`` of every key a stack file may not hold, by line."""
        return tuple(sorted(((name, self.source.line_of(at) or 1) for name, at in self._extra),
                            key=lambda e: e[1]))


def read_pointer(file: Path) -> StackPointer:
    """Read one ``Pulumi.<stack>.yaml``. Raises ConfigError on a file that is not UTF-8 YAML,
    or that is a symlink (a stack file is a file in the repository, never a link —
    :func:`~clusterstack.workspace.projects.stack_names`)."""
    stack = file.name[len("Pulumi."):-len(".yaml")]
    if file.is_symlink():
        raise ConfigError("the stack file is a symlink", "replace it with the file itself", file=file)
    doc = Document.read(file, format="yaml")
    data = doc.data if isinstance(doc.data, dict) else {}
    config = data.get("config")
    cluster = None
    if isinstance(config, dict) and POINTER_KEY in config:
        cluster = str(config[POINTER_KEY])
    names = [(str(k), (k,)) for k in data if k not in PULUMI_STACK_KEYS]
    if isinstance(config, dict):
        names += [(f"config.{k}", ("config", k)) for k in config if k != POINTER_KEY]
    return StackPointer(stack=stack, file=file, cluster=cluster, source=doc, _extra=tuple(names))


def read_pointers(workspace: "Workspace") -> list[StackPointer]:
    """Every ``Pulumi.<stack>.yaml`` of the cluster project, sorted by stack. Raises
    ConfigError on bad YAML."""
    reads.note(reads.DIR, workspace.project_dir)
    return [read_pointer(f) for f in sorted(workspace.project_dir.glob("Pulumi.*.yaml"))]


def check_stacks(workspace: "Workspace", pointers: list[StackPointer] | None = None) -> list[StackPointer]:
    """The cluster project has its ``Pulumi.yaml`` and entry point, every cluster has a stack
    file naming it, every stack file names its own cluster, a
    stack file holds nothing but the pointer (and Pulumi's :data:`PULUMI_STACK_KEYS`), and the
    cluster project's ``Pulumi.yaml`` is named ``[workspace] project_name`` (else its stacks
    would be another project's).

    Returns the pointers; raises ConfigError listing every mismatch.
    """
    pointers = read_pointers(workspace) if pointers is None else pointers
    clusters = set(workspace.cluster_names())
    problems: list[Problem] = []
    pulumi_yaml = workspace.project_dir / "Pulumi.yaml"
    try:  # the project itself: Pulumi.yaml and its entry point (plan cannot run without them)
        workspace.cluster_project.info()
    except ConfigError as exc:
        problems.extend(exc.problems)
    if pulumi_yaml.is_file():
        doc = Document.read(pulumi_yaml, format="yaml")
        name = doc.data.get("name") if isinstance(doc.data, dict) else None
        if name is not None and str(name) != workspace.project_name:
            problems.append(doc.problem(("name",), f"project name {name!r} is not [workspace] "
                                        f"project_name {workspace.project_name!r}",
                                        f"make them equal (here or in {workspace.file.name})"))
    by_stack = {p.stack: p for p in pointers}
    for p in pointers:
        if p.cluster is None:
            problems.append(Problem(f"no `{POINTER_KEY}` config", f"add `{POINTER_KEY}: {p.stack}`",
                                    file=p.file, line=p.line, field="config"))
        elif p.cluster not in clusters:
            problems.append(Problem(f"points at cluster {p.cluster!r}, which has no config in "
                                    f"{workspace.clusters_dir.name}/",
                                    "add the cluster config or delete this stack file",
                                    file=p.file, line=p.line, field=f"config.{POINTER_KEY}"))
        elif p.cluster != p.stack:
            problems.append(Problem(f"stack {p.stack!r} points at cluster {p.cluster!r}",
                                    "a stack is named after its cluster: fix the pointer or the file name",
                                    file=p.file, line=p.line, field=f"config.{POINTER_KEY}"))
        for name, at in p.extra:  # README: the stack file holds only the pointer
            problems.append(Problem("not allowed in a cluster stack file: it holds only the "
                                    f"`{POINTER_KEY}` pointer (and Pulumi's own secrets keys)",
                                    f"move the value into {workspace.clusters_dir.name}/"
                                    f"{p.stack}.yaml and delete it here",
                                    file=p.file, line=at, field=name))
    for c in sorted(clusters - set(by_stack)):
        problems.append(Problem("cluster config has no stack file",
                                f"create {workspace.project_dir.name}/Pulumi.{c}.yaml with "
                                f"`config: {{{POINTER_KEY}: {c}}}` (clusterstack stack init {c})",
                                file=workspace.cluster_file(c)))
    if problems:
        raise ConfigError(problems=problems)
    return pointers


def write_pointer(pointer: Path, cluster: str) -> bool:
    """Make ``pointer`` (``infra/Pulumi.<cluster>.yaml``) carry ``config.clusterstack:cluster:
    <cluster>``, keeping every other key — ``pulumi stack init`` writes the secrets provider's
    ``encryptionsalt:`` / ``secretsprovider:`` + ``encryptedkey:`` to this same file, and they
    must survive (a ruamel round-trip edit: comments kept). Written atomically
    (fsutil.write_atomic). Returns False when the file already named the cluster (nothing
    written), True when it was created or the key added.
    Raises ConfigError on a file that is not UTF-8 YAML or not a mapping. The
    read-modify-write holds the file's lock (fsutil.locked)."""
    with locked(pointer):
        return _write_pointer(pointer, cluster)


def _write_pointer(pointer: Path, cluster: str) -> bool:
    doc = (parse_yaml(read_text(pointer), pointer, positions=True) if pointer.exists() else None)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError("the stack file is not a YAML mapping", f"set `config: {{{POINTER_KEY}: {cluster}}}`",
                          file=pointer)
    config = doc.get("config")
    if isinstance(config, dict) and config.get(POINTER_KEY) == cluster:
        return False
    if not isinstance(config, dict):
        # the pointer first, as `stack init` always wrote it; Pulumi's keys after it
        items = [(k, v) for k, v in doc.items() if k != "config"]
        doc.clear()
        doc["config"] = {}
        doc.update(items)
        config = doc["config"]
    config[POINTER_KEY] = cluster
    buf = io.StringIO()
    YAML(typ="rt").dump(doc, buf)
    write_atomic(pointer, buf.getvalue())
    return True
