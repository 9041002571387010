"""Stack pointers: ``infra/Pulumi.<stack>.yaml`` files whose only config is
``clusterstack:cluster: <name>``. One stack per cluster, named after the cluster."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from clusterstack.errors import ConfigError, Problem

from clusterstack.workspace import Workspace

STACK_CONFIG_KEY = "cluster"  # the stack config key `clusterstack:cluster`
POINTER_KEY = f"clusterstack:{STACK_CONFIG_KEY}"
# Top-level keys Pulumi itself writes into a stack file (its secrets provider state); any other
# key — or any config key besides the pointer — would be a value outside the reviewed config.
PULUMI_STACK_KEYS = frozenset({"config", "encryptionsalt", "secretsprovider", "encryptedkey"})


@dataclass(frozen=True)
class StackPointer:
    """A stack file and the cluster it names (``None`` when it names none)."""

    stack: str
    file: Path
    cluster: str | None
    line: int | None
    extra: tuple[tuple[str, int], ...] = ()  # (field, 1-based line) of every key not allowed


def read_pointers(workspace: Workspace) -> list[StackPointer]:
    """Every ``Pulumi.<stack>.yaml`` of the project, sorted by stack. Raises ConfigError on bad YAML."""
    out = []
    for f in sorted(workspace.project_dir.glob("Pulumi.*.yaml")):
        stack = f.name[len("Pulumi."):-len(".yaml")]
        try:
            doc = YAML(typ="rt").load(f.read_text(encoding="utf-8")) or {}
        except YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', exc)}", "fix the syntax",
                              file=f, line=mark.line + 1 if mark else None) from None
        config = doc.get("config") if isinstance(doc, dict) else None
        cluster, line = None, 1
        if isinstance(config, dict) and POINTER_KEY in config:
            cluster = str(config[POINTER_KEY])
            line = config.lc.key(POINTER_KEY)[0] + 1
        extra: list[tuple[str, int]] = []
        if isinstance(doc, dict):
            extra += [(str(k), doc.lc.key(k)[0] + 1) for k in doc if k not in PULUMI_STACK_KEYS]
        if isinstance(config, dict):
            extra += [(f"config.{k}", config.lc.key(k)[0] + 1) for k in config if k != POINTER_KEY]
        out.append(StackPointer(stack=stack, file=f, cluster=cluster, line=line,
                                extra=tuple(sorted(extra, key=lambda e: e[1]))))
    return out


def check_stacks(workspace: Workspace, pointers: list[StackPointer] | None = None) -> list[StackPointer]:
    """Every cluster has a stack file naming it, every stack file names its own cluster, and a
    stack file holds nothing but the pointer (and Pulumi's :data:`PULUMI_STACK_KEYS`).

    Returns the pointers; raises ConfigError listing every mismatch.
    """
    pointers = read_pointers(workspace) if pointers is None else pointers
    clusters = set(workspace.cluster_names())
    problems: list[Problem] = []
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
        for field, at in p.extra:  # README: the stack file holds only the pointer
            problems.append(Problem("not allowed in a cluster stack file: it holds only the "
                                    f"`{POINTER_KEY}` pointer (and Pulumi's own secrets keys)",
                                    f"move the value into {workspace.clusters_dir.name}/"
                                    f"{p.stack}.yaml and delete it here",
                                    file=p.file, line=at, field=field))
    for c in sorted(clusters - set(by_stack)):
        problems.append(Problem("cluster config has no stack file",
                                f"create {workspace.project_dir.name}/Pulumi.{c}.yaml with "
                                f"`config: {{{POINTER_KEY}: {c}}}` (clusterstack stack init {c})",
                                file=workspace.cluster_file(c)))
    if problems:
        raise ConfigError(problems=problems)
    return pointers
