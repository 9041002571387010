"""Configs that reference other clusters' configs (a GCP stack's shared load balancer, and
the VMs its static addresses are attached to: :mod:`clusterstack.validation.addresses`).

``provisioning.gcp.gclb`` lists clusters by name; each listed cluster's own reviewed file
supplies the rest (controller VM, IAP origin and audience, log relay VM). The caller loads
those files (:func:`clusterstack.validation.clusters.load_cluster`, never following *their*
references) and this module turns the rules of :func:`clusterstack.derive.gclb.gclb_problems`
into located problems that name both places: the referenced file's line (where the value
lives) and the referencing file's line (which cluster listed it).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Callable

from clusterstack.config.cluster_file import LoadedCluster
from clusterstack.config.document import Path_, format_path
from clusterstack.derive.gclb import DEFAULT_CONVENTIONS, gclb_problems, referenced_clusters
from clusterstack.errors import ConfigError, FieldError, Problem, display_path
from clusterstack.validation.addresses import address_problems
from clusterstack.workspace.model import Conventions


def _where(loaded: LoadedCluster, path: Path_, root: Path | None) -> str:
    """``<file>:<line> (<field>)`` of a key path in a loaded file, the file shown relative to
    ``root`` as the head of every message is (:func:`~clusterstack.errors.display_path`)."""
    kept, line = loaded.source.locate(tuple(path))
    shown = display_path(loaded.path, root)
    return f"{shown}:{line} ({format_path(kept)})" if line else f"{shown} ({format_path(kept)})"


def _load_referenced(loaded: LoadedCluster, known: Collection[str], load: Callable[[str], LoadedCluster],
                     file_of: Callable[[str], Path], root: Path | None
                     ) -> tuple[dict[str, LoadedCluster], list[Problem]]:
    out: dict[str, LoadedCluster] = {}
    problems: list[Problem] = []
    for name, via in referenced_clusters(loaded.config):
        if name in out:
            continue
        if name not in known:
            problems.append(loaded.source.problem(via, f"unknown cluster {name!r}",
                                                  f"known clusters: {', '.join(sorted(known)) or 'none'}"))
            continue
        if name == loaded.config.name:
            out[name] = loaded
            continue
        try:
            out[name] = load(name)
        except ConfigError as exc:
            problems.extend(exc.problems)
            problems.append(loaded.source.problem(via, f"cluster {name!r} has an invalid config",
                                                  f"fix {display_path(file_of(name), root)} (problems listed above)"))
    return out, problems


def reference_problems(loaded: LoadedCluster, known: Collection[str], load: Callable[[str], LoadedCluster],
                       file_of: Callable[[str], Path], *, root: Path | None = None,
                       conventions: Conventions = DEFAULT_CONVENTIONS) -> list[Problem]:
    """Every problem of the clusters ``loaded`` references, located in both files.

    ``known``: the workspace's cluster names; ``load(name)``: a referenced cluster, loaded
    without following its own references; ``file_of(name)``: its file (for the hint);
    ``root``: the workspace root, files inside it are named relative to it in the message text.

    A problem in a referenced file reads
    ``<referenced file>:<line>: <field>: cluster <name>: <message> (listed at <referencing
    file>:<line> (<field>)) — <hint>``; one in the referencing file is located there and names
    the cluster. Returns [] when the config references nothing or everything holds.
    """
    refs, problems = _load_referenced(loaded, known, load, file_of, root)
    if problems:
        return problems
    configs = {n: r.config for n, r in refs.items()}
    for fe in (*gclb_problems(loaded.config, configs, conventions),
               *address_problems(loaded.config, configs)):
        problems.append(_field_problem(loaded, refs, fe, root))
    return problems


def _field_problem(loaded: LoadedCluster, refs: dict[str, LoadedCluster], fe: FieldError,
                   root: Path | None) -> Problem:
    cluster = fe.extra.get("cluster")
    if cluster is None:
        return loaded.source.problem(fe.path, fe.message, fe.hint)
    via = _where(loaded, fe.extra["via"], root)
    return refs[cluster].source.problem(fe.path, f"{fe.message} (listed at {via})", fe.hint)
