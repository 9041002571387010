"""Offline checks behind ``clusterstack validate``: everything ``plan --all`` would reject,
without running a program.

- cluster configs (:func:`clusterstack.config.load_cluster`), including — for ``validate
  CLUSTER`` — the configs that *reference* CLUSTER (a GCP stack's ``provisioning.gcp.gclb``
  lists controller clusters; a bad audience in gcp-tpu-b is a problem of gcp-demo's plan);
- stack pointers (:func:`clusterstack.stacks.check_stacks`, which also rejects any key of a
  cluster stack file besides the pointer and Pulumi's own secrets keys);
- the ``[projects]`` configs: each stack's ``<project>:file`` loaded with the loader its
  program uses (``buckets.yaml`` → :func:`clusterstack.buckets.loader.load_buckets`,
  ``github.yaml`` → :func:`clusterstack.github.loader.load_github`);
- the IAM file (:func:`clusterstack.iam.loader.load_iam`, which rejects plaintext ``user:``
  members) and, as the program checks, that its ``project:`` is the ``[iam] stack``'s project
  (:func:`clusterstack.iam.stack.check_project`).

Every function returns a list of :class:`~clusterstack.errors.Problem` (empty when valid).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

from clusterstack.config.reviewed import PROJECT_FILE_KEY
from clusterstack.errors import ClusterstackError, Problem
from clusterstack.workspace import Workspace

# The program module a project's entry point imports → ``module:function`` of the loader its
# build() applies to the file the stack config ``<project>:file`` names.
PROGRAM_LOADERS: dict[str, str] = {
    "clusterstack.buckets.program": "clusterstack.buckets.loader:load_buckets",
    "clusterstack.github.program": "clusterstack.github.loader:load_github",
}


def _collect(fn: Callable[[], object], problems: list[Problem]) -> bool:
    """Run ``fn``; add the problems of a ClusterstackError it raises. True when it passed."""
    try:
        fn()
    except ClusterstackError as exc:
        problems.extend(exc.problems)
        return False
    return True


def referrers(ws: Workspace, name: str) -> list[str]:
    """The clusters whose configs reference cluster ``name`` (``provisioning.gcp.gclb``),
    sorted. A config that does not load on its own is skipped (its problems are its own)."""
    from clusterstack.config import load_cluster
    from clusterstack.derive.gclb import referenced_clusters

    out = []
    for other in ws.cluster_names():
        if other == name:
            continue
        try:
            cfg = load_cluster(ws, other, references=False).config
        except ClusterstackError:
            continue
        if any(c == name for c, _ in referenced_clusters(cfg)):
            out.append(other)
    return out


def cluster_problems(ws: Workspace, names: list[str]) -> tuple[list[str], list[Problem]]:
    """Load ``names`` and every config that references one of them. Returns (the clusters
    checked, problems)."""
    from clusterstack.config import load_cluster

    checked = list(dict.fromkeys(names))
    for n in list(checked):
        if n in ws.cluster_names():
            checked += [r for r in referrers(ws, n) if r not in checked]
    problems: list[Problem] = []
    for n in checked:
        _collect(lambda n=n: load_cluster(ws, n), problems)
    return checked, problems


def _program_module(main: Path) -> str | None:
    """The ``clusterstack.*.program`` module a project's entry point imports, if any."""
    try:
        tree = ast.parse(main.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in PROGRAM_LOADERS:
            return node.module
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in PROGRAM_LOADERS:
                    return a.name
    return None


def project_problems(ws: Workspace) -> tuple[int, list[Problem]]:
    """Check every ``[projects]`` project: ``Pulumi.yaml``, each stack file's ``<project>:file``
    key and the reviewed file it names (each file once). Returns (files checked, problems)."""
    import importlib

    from clusterstack.plan import ProjectInfo

    problems: list[Problem] = []
    seen: set[Path] = set()
    for ref in ws.projects:
        if ref.clusters:
            continue
        if not (ref.directory / "Pulumi.yaml").is_file():
            problems.append(Problem(f"project {ref.key!r}: no Pulumi.yaml in {ref.directory}",
                                    "fix dir in clusterstack.toml or create the project",
                                    file=ws.file, line=ref.line, field=f"projects.{ref.key}.dir"))
            continue
        info: list[ProjectInfo] = []
        if not _collect(lambda: info.append(ProjectInfo.load(ref.directory)), problems):
            continue
        module = _program_module(info[0].main)
        if module is None:  # a program clusterstack does not know: plan runs it as is
            continue
        mod_name, fn_name = PROGRAM_LOADERS[module].split(":")
        loader = getattr(importlib.import_module(mod_name), fn_name)
        key = f"{info[0].name}:{PROJECT_FILE_KEY}"
        for stack in info[0].stacks():
            config: list[dict] = []
            if not _collect(lambda: config.append(info[0].stack_config(stack)), problems):
                continue
            name = config[0].get(key)
            if not isinstance(name, str) or not name:
                problems.append(Problem(f"stack {stack!r} has no {key} config",
                                        f"its Pulumi.{stack}.yaml must contain `{key}: <file>`",
                                        file=info[0].stack_file(stack), line=1, field="config"))
                continue
            path = (ref.directory / name).resolve()
            if path not in seen:
                seen.add(path)
                _collect(lambda: loader(path), problems)
    return len(seen), problems


def iam_problems(ws: Workspace) -> tuple[bool, list[Problem]]:
    """Check the IAM file when it exists: load it, and when ``[iam] stack`` names a GCP
    cluster whose config loads, compare the projects. Returns (file checked, problems)."""
    from clusterstack.config import load_cluster
    from clusterstack.iam.loader import load_iam
    from clusterstack.iam.settings import IamSettings
    from clusterstack.iam.stack import check_project

    problems: list[Problem] = []
    settings: list[IamSettings] = []
    if not _collect(lambda: settings.append(IamSettings.from_workspace(ws)), problems):
        return False, problems
    s = settings[0]
    if not s.file.is_file():
        return False, problems
    loaded = []
    if not _collect(lambda: loaded.append(load_iam(s.file)), problems):
        return True, problems
    if s.stack is not None and s.stack in ws.cluster_names():
        try:
            cfg = load_cluster(ws, s.stack, references=False).config
        except ClusterstackError:
            return True, problems  # the cluster's own problems are reported with the clusters
        gcp = cfg.provisioning.gcp
        if gcp is not None:
            _collect(lambda: check_project(loaded[0], s.file, s.stack, gcp.project), problems)
    return True, problems
