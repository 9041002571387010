"""Pulumi projects of the workspace.

:class:`ProjectInfo` is a Pulumi project on disk (its ``Pulumi.yaml``, entry point and stack
files ``Pulumi.<stack>.yaml``), read through the one loader. :class:`Project` is a project the
workspace declares: the cluster project (``[workspace] project_dir``, kind ``cluster``) or a
``[projects.<key>]`` table with its declared ``kind`` — which selects its program
(:mod:`clusterstack.programs`) and its document loader (:mod:`clusterstack.validation`),
never guessed from its ``__main__.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterstack import reads
from clusterstack.config.document import Document
from clusterstack.errors import ConfigError
from clusterstack.workspace.model import ProjectKind
from clusterstack.config.types import (PATTERN_RULES, PROJECT_NAME, PROJECT_NAME_RE, REPO_PATH,
    REPO_PATH_RE, STACK_NAME, STACK_NAME_RE)
from clusterstack.workspace.paths import PROJECT_DIRECTORY, confined

PROJECT_FILE_KEY = "file"  # stack config `<project>:file`: the reviewed document a project stack reads


def _read_yaml(path: Path, *, missing_hint: str = "check the project directory") -> Document:
    return Document.read(path, format="yaml", missing_hint=missing_hint)


@dataclass(frozen=True)
class ProjectInfo:
    """A Pulumi project on disk: its directory, ``name:`` from Pulumi.yaml, and entry point."""

    directory: Path
    name: str
    main: Path

    @classmethod
    def load(cls, directory: Path, *, program: bool = False) -> "ProjectInfo":
        """Read ``Pulumi.yaml``. Raises ConfigError when it is missing or has no name, and —
        with ``program`` (a project about to be planned, or checked as one) — when the name is
        not a Pulumi project name or the entry point (``main:``, default ``__main__.py``) does
        not exist: Pulumi could not run it. (Without ``program``, a template's
        ``$project_name`` still loads.)"""
        pulumi_yaml = directory / "Pulumi.yaml"
        doc = _read_yaml(pulumi_yaml)
        data = doc.data
        name = data.get("name") if isinstance(data, dict) else None
        if not name:
            raise ConfigError("Pulumi.yaml has no project name", "add `name: <project>`",
                              file=pulumi_yaml, line=1)
        if program and (not isinstance(name, str) or not PROJECT_NAME_RE.match(name)):
            # Pulumi refuses it (and a URN of it cannot be parsed: plan exited 1)
            raise ConfigError(problems=[doc.problem(("name",), f"{name!r} is not "
                                                    f"{PATTERN_RULES[PROJECT_NAME]}",
                                                    "rename the project")])
        main = cls._entry_point(doc, directory)
        if program and not main.is_file():  # Pulumi could not start it (plan exited 1)
            raise ConfigError(f"the program's entry point {main.name} does not exist",
                              "restore it from git, or fix `main:` in Pulumi.yaml",
                              file=main, line=None)
        return cls(directory=directory.resolve(), name=str(name), main=main)

    @staticmethod
    def _entry_point(doc: Document, directory: Path) -> Path:
        """The program's entry point: ``main:`` of Pulumi.yaml (Pulumi's project file reference,
        ``main``: where the program is, relative to Pulumi.yaml — for Python a directory holding
        ``__main__.py`` or a file, both run with ``runpy.run_path``), default ``__main__.py``. Like every path a reviewed file names
        (:mod:`clusterstack.workspace.paths`), ``main:`` is a
        :data:`~clusterstack.config.types.RepoPath` (relative, no ``..``) and resolves —
        symlinks followed — inside the project directory (:func:`paths.confined`): a program
        outside it would run code nobody reviewed as this project. Raises ConfigError at
        ``main:``'s line otherwise."""
        raw = doc.data.get("main") if isinstance(doc.data, dict) else None
        if raw is not None and (not isinstance(raw, str) or not REPO_PATH_RE.match(raw)):
            raise ConfigError(problems=[doc.problem(("main",), f"{raw!r} is not {PATTERN_RULES[REPO_PATH]}",
                                                    "name the program's directory relative to Pulumi.yaml, "
                                                    "inside the project directory")])
        main = directory / (raw or "__main__.py")
        where = {"file": doc.path, "line": doc.line_of(("main",)) if raw is not None else None,
                 "field": "main" if raw is not None else ""}
        main = confined(main, directory, what="the program's entry point", within=PROJECT_DIRECTORY, **where)
        if main.is_dir():
            main = confined(main / "__main__.py", directory, what="the program's entry point",
                            within=PROJECT_DIRECTORY, **where)
        return main

    def stack_file(self, stack: str) -> Path:
        return self.directory / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        """Stack names with a checked-in ``Pulumi.<stack>.yaml``, sorted (:func:`stack_names`)."""
        return stack_names(self.directory)

    def stack_document(self, stack: str) -> Document:
        """``Pulumi.<stack>.yaml``, parsed. Raises ConfigError when missing or malformed."""
        path = self.stack_file(stack)
        if not path.is_file():
            raise ConfigError(f"stack {stack!r} has no stack file", f"create {path.name} "
                              "(clusterstack stack init) or check the stack name", file=path)
        return _read_yaml(path)

    def stack_config(self, stack: str) -> dict[str, Any]:
        """The ``config:`` map of ``Pulumi.<stack>.yaml``, keys fully qualified.

        Secure values (``{secure: …}``) are passed as a placeholder: the offline plan never
        decrypts one. Raises ConfigError when the file is missing or malformed.
        """
        doc = self.stack_document(stack)
        data = doc.data or {}
        config = data.get("config", {}) if isinstance(data, dict) else None
        if not isinstance(config, dict):
            raise ConfigError("`config:` must be a mapping", "see the shipped stack files",
                              file=doc.path, line=1)
        out: dict[str, Any] = {}
        for key, value in config.items():
            full = key if ":" in key else f"{self.name}:{key}"
            if isinstance(value, dict) and "secure" in value:
                value = "<secure value, not decrypted offline>"
            out[full] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return out

    def document_of(self, stack: str, example: str = "<file>") -> Path:
        """The reviewed document stack ``stack`` names with ``<project>:file`` (relative to the
        project directory). Raises ConfigError located in its stack file when the key is
        missing."""
        key = f"{self.name}:{PROJECT_FILE_KEY}"
        name = self.stack_config(stack).get(key)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"stack {stack!r} has no {key} config",
                              f"its Pulumi.{stack}.yaml must contain `{key}: {example}`",
                              file=self.stack_file(stack), line=1, field="config")
        return self.directory / name  # not resolved: the caller confines it (workspace.paths)


@dataclass(frozen=True)
class Project:
    """One Pulumi project of the workspace.

    ``key``: its handle — the ``[projects.<key>]`` table name, or
    :data:`~clusterstack.workspace.model.CLUSTER_PROJECT` for the cluster project;
    ``directory``: absolute path of the directory holding ``Pulumi.yaml``; ``kind``: its
    declared kind (``cluster`` for the cluster project, whose stacks are the reviewed clusters,
    checked by :func:`clusterstack.workspace.stacks.check_stacks`); ``line``: the 1-based line
    of its table in ``clusterstack.toml`` (for the cluster project, of ``[workspace] project_dir``;
    None when the file does not set it).
    """

    key: str
    directory: Path
    kind: ProjectKind
    line: int | None = None
    file: Path | None = None  # clusterstack.toml, for located errors

    @property
    def clusters(self) -> bool:
        """True for the cluster project (kind ``cluster``)."""
        return self.kind == "cluster"

    def info(self) -> ProjectInfo:
        """Its ``Pulumi.yaml``. Raises ConfigError located at its ``[projects]`` table when the
        directory holds none, and at the entry point when that is missing."""
        if not (self.directory / "Pulumi.yaml").is_file():
            field = "workspace.project_dir" if self.clusters else f"projects.{self.key}.dir"
            raise ConfigError(f"project {self.key!r}: no Pulumi.yaml in {self.directory}",
                              "fix dir in clusterstack.toml or create the project",
                              file=self.file, line=self.line, field=field)
        return ProjectInfo.load(self.directory, program=True)


def stack_names(directory: Path) -> list[str]:
    """The stacks of the project in ``directory``: its ``Pulumi.<stack>.yaml`` files, sorted —
    the one discovery rule for plan, validate and CI (``ci.discover``).

    Raises ConfigError when a name is not a Pulumi stack name (``Pulumi..yaml``, ``Pulumi.x
    <b>@octocat.yaml`` — the name reaches CI matrices and PR comments) or the file is a
    symlink (a reviewed file is a file in the repository, never a link out of it).
    """
    out = []
    reads.note(reads.DIR, directory)
    for path in sorted(directory.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        if not STACK_NAME_RE.match(name):
            raise ConfigError(f"{name!r} is not {PATTERN_RULES[STACK_NAME]}",
                              "rename the stack file", file=path)
        if path.is_symlink():
            raise ConfigError("the stack file is a symlink", "replace it with the file itself",
                              file=path)
        out.append(name)
    return out
