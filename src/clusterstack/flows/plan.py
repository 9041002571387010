"""``clusterstack plan``: the offline plans of the selected stacks (the real program under
Pulumi's mock runtime, :func:`clusterstack.plan.plan_stack`), cluster stacks first, then the
``[projects]`` projects' stacks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.workspace import ProjectInfo, Workspace, check_name, check_stacks
from clusterstack.validation import load_cluster
from clusterstack.validation.clusters import one_load_per_file, plan_identity_problems
from clusterstack.validation.projects import plan_bucket_problems

if TYPE_CHECKING:  # plan/ loads the Pulumi SDK's mock runtime: imported when planning
    from clusterstack.plan.model import StackPlan


def project_stacks(ws: Workspace, keys: list[str] | None = None) -> list[tuple[Path, str]]:
    """``(project directory, stack)`` of every stack of the workspace's other projects
    (``[projects]`` in clusterstack.toml, file order; ``keys``: only these handles), stacks
    sorted. ``keys`` are what ``--project`` takes: keys of ``[projects]`` (what its completion
    offers). Raises ConfigError for an unknown handle (naming those keys) or a project without
    ``Pulumi.yaml``, ClusterstackError for the cluster project's handle."""
    by_key = {ref.key: ref for ref in ws.projects}
    for key in dict.fromkeys(keys or ()):
        if key == ws.cluster_project.key:
            raise ClusterstackError(f"{key!r} is the cluster project",
                                    "name clusters as arguments, or pass --all")
        if key not in by_key:
            raise ConfigError(f"unknown project {key!r}",
                              f"known projects: {', '.join(by_key) or 'none'} "
                              "([projects] in clusterstack.toml)", file=ws.file)
    refs = [by_key[k] for k in dict.fromkeys(keys)] if keys is not None else list(ws.projects)
    out = []
    for ref in refs:
        if not (ref.directory / "Pulumi.yaml").is_file():
            raise ConfigError(f"project {ref.key!r}: no Pulumi.yaml in {ref.directory}",
                              "fix dir in clusterstack.toml or create the project",
                              file=ws.file, line=ref.line, field=f"projects.{ref.key}.dir")
        info = ProjectInfo.load(ref.directory)
        out += [(ref.directory, s) for s in info.stacks()]
    return out


def select(all_: bool, names: list[str], known: list[str]) -> list[str]:
    """The stacks a command acts on: every known one with ``all_``, else ``names`` in the
    order given, each once (a stack appears once in a plan). Raises ClusterstackError (exit 2)
    for neither or both."""
    if all_ and names:
        raise ClusterstackError("give cluster names or --all, not both", "drop one of them")
    if all_:
        return known
    if not names:
        raise ClusterstackError("no cluster given", "name one or more clusters, or pass --all")
    return list(dict.fromkeys(names))


def check_before_planning(ws: Workspace, clusters: list[str],
                          others: Sequence[tuple[Path, str]] = ()) -> None:
    """What every command that runs a program (``plan``, ``diff``, ``preview``, ``up``) checks
    first, so that none plans what ``validate`` refuses: each cluster config of ``clusters``
    loads (:func:`clusterstack.validation.load_cluster`), no cloud identity one of them claims
    is claimed by another cluster (:func:`clusterstack.validation.clusters.plan_identity_problems`),
    and no bucket a stack of ``others`` (``[projects]`` stacks: ``(project directory, stack)``) owns is owned
    by another buckets stack (:func:`clusterstack.validation.projects.plan_bucket_problems`).
    Raises ConfigError with every problem located (``file:line``, exit 2)."""
    loaded = {name: load_cluster(ws, name) for name in clusters}  # the first bad config raises
    problems = plan_identity_problems(ws, list(loaded), loaded=loaded) if loaded else []
    problems += plan_bucket_problems(ws, list(others))
    if problems:
        raise ConfigError(problems=problems)  # validate's rule: one owner per cloud identity


def plan(ws: Workspace, names: list[str], *, all_: bool = False,
         projects: list[str] | None = None) -> list[StackPlan]:
    """The :class:`~clusterstack.plan.model.StackPlan` of each selected stack: the cluster
    stacks ``names`` (all with ``all_``), then the stacks of the ``[projects]`` projects
    ``projects`` (all with ``all_``; only these when no cluster is named). Every stack file and
    named cluster config is checked before any program runs (located errors, exit 2), with
    validate's cross-stack rule: no cloud identity a selected cluster claims is claimed by
    another cluster (:func:`clusterstack.validation.clusters.plan_identity_problems`), no
    bucket a selected buckets stack owns is owned by another stack
    (:func:`clusterstack.validation.projects.plan_bucket_problems`). The checks and the programs
    load each cluster file once (:func:`clusterstack.validation.clusters.one_load_per_file`):
    its specs are derived once, checked, and declared."""
    from clusterstack.plan import plan_stack

    for name in names:  # a name with path parts is refused before any file is read
        check_name(name)
    pointers = check_stacks(ws)
    if all_ and projects:
        raise ClusterstackError("give --project or --all, not both", "--all plans every project")
    selected = [] if projects and not names else select(all_, names, [p.stack for p in pointers])
    others = project_stacks(ws, None if all_ else list(projects or [])) if all_ or projects else []
    with one_load_per_file():
        check_before_planning(ws, selected, others)
        plans = [plan_stack(ws.project_dir, name) for name in selected]
        plans += [plan_stack(directory, stack) for directory, stack in others]
    return plans


__all__ = ["check_before_planning", "one_load_per_file", "plan", "project_stacks", "select"]
