"""Configs that reference other clusters' configs (a GCP stack's shared load balancer).

``provisioning.gcp.gclb`` lists clusters by name; each listed cluster's own reviewed file
supplies the rest (controller VM, IAP origin and audience, log relay VM). This module loads
those files — from the same reviewed directory, never following *their* references — and
turns the rules of :func:`clusterstack.derive.gclb.gclb_problems` into located problems that
name both places: the referenced file's line (where the value lives) and the referencing
file's line (which cluster listed it).
"""

from __future__ import annotations

from clusterstack.config.loader import LoadedCluster, Path_, format_path, load_cluster, locate
from clusterstack.config.models import ClusterConfig
from clusterstack.errors import ConfigError, FieldError, Problem
from clusterstack.workspace import Workspace


def _where(loaded: LoadedCluster, path: Path_) -> str:
    """``<file>:<line> (<field>)`` of a key path in a loaded file."""
    kept, line = locate(loaded.document, tuple(path))
    return f"{loaded.path}:{line} ({format_path(kept)})" if line else f"{loaded.path} ({format_path(kept)})"


def _problem(loaded: LoadedCluster, path: Path_, message: str, hint: str) -> Problem:
    kept, line = locate(loaded.document, tuple(path))
    return Problem(message=message, hint=hint, file=loaded.path, line=line, field=format_path(kept))


def _load_referenced(workspace: Workspace, loaded: LoadedCluster
                     ) -> tuple[dict[str, LoadedCluster], list[Problem]]:
    from clusterstack.derive.gclb import referenced_clusters

    out: dict[str, LoadedCluster] = {}
    problems: list[Problem] = []
    known = set(workspace.cluster_names())
    for name, via in referenced_clusters(loaded.config):
        if name in out:
            continue
        if name not in known:
            problems.append(_problem(loaded, via, f"unknown cluster {name!r}",
                                     f"known clusters: {', '.join(sorted(known)) or 'none'}"))
            continue
        if name == loaded.config.name:
            out[name] = loaded
            continue
        try:
            out[name] = load_cluster(workspace, name, references=False)
        except ConfigError as exc:
            problems.extend(exc.problems)
            problems.append(_problem(loaded, via, f"cluster {name!r} has an invalid config",
                                     f"fix {workspace.cluster_file(name)} (problems listed above)"))
    return out, problems


def reference_problems(workspace: Workspace, loaded: LoadedCluster) -> list[Problem]:
    """Every problem of the clusters ``loaded`` references, located in both files.

    A problem in a referenced file reads
    ``<referenced file>:<line>: <field>: cluster <name>: <message> (listed at <referencing
    file>:<line> (<field>)) — <hint>``; one in the referencing file is located there and names
    the cluster. Returns [] when the config references nothing or everything holds.
    """
    from clusterstack.derive.gclb import gclb_problems

    refs, problems = _load_referenced(workspace, loaded)
    if problems:
        return problems
    for fe in gclb_problems(loaded.config, {n: r.config for n, r in refs.items()}):
        problems.append(_field_problem(loaded, refs, fe))
    return problems


def _field_problem(loaded: LoadedCluster, refs: dict[str, LoadedCluster], fe: FieldError) -> Problem:
    cluster = fe.extra.get("cluster")
    if cluster is None:
        return _problem(loaded, fe.path, fe.message, fe.hint)
    via = _where(loaded, fe.extra["via"])
    return _problem(refs[cluster], fe.path, f"{fe.message} (listed at {via})", fe.hint)


def load_references(workspace: Workspace, cfg: ClusterConfig) -> dict[str, ClusterConfig]:
    """The validated configs of every cluster ``cfg`` references, by name.

    Raises ConfigError when one is unknown or invalid (normally caught earlier: loading
    ``cfg`` with :func:`~clusterstack.config.loader.load_cluster` already checks them).
    """
    from clusterstack.derive.gclb import referenced_clusters

    out: dict[str, ClusterConfig] = {}
    for name, _via in referenced_clusters(cfg):
        if name == cfg.name:
            out[name] = cfg
        elif name not in out:
            out[name] = load_cluster(workspace, name, references=False).config
    return out
