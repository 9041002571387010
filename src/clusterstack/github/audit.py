"""``clusterstack github audit``: do the repository's Actions secrets and variables match the
names declared in ``github.yaml``? Names only — a value is never read into a report.

The seam to GitHub is :class:`clusterstack.adapters.github.GitHubRepo` (its names methods);
:class:`clusterstack.adapters.github.Repository` implements it with PyGithub over the REST API:

- ``GET /repos/{o}/{r}/actions/secrets`` and ``…/actions/variables`` (repository scope);
- ``GET /repos/{o}/{r}/environments`` and, per environment, ``…/environments/{e}/secrets`` and
  ``…/environments/{e}/variables`` (GitHub REST "Actions secrets", "Actions variables",
  "Deployment environments"). The variables endpoints also return values; only ``name`` is
  kept.

:func:`audit` is a pure comparison. A declared name the repository lacks is *missing*; a name
the repository has that github.yaml does not declare is *undeclared*. Environments are
compared too: a declared environment GitHub lacks is missing (with all its names), an
environment GitHub has that is not declared is undeclared (with all its names). Organization
secrets shared with the repository are not counted (docs/github.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from clusterstack.adapters.github import GitHubRepo
from clusterstack.errors import ClusterstackError, ConfigError
from clusterstack.config.github import GithubConfig, load_github
from clusterstack.workspace import ProjectInfo, Workspace

if TYPE_CHECKING:  # the outside systems' factories; the CLI builds them
    from clusterstack.clients import Clients

AUDIT_FORMAT = "clusterstack.github-audit/v1"
NAMES_DIFFER_EXIT_CODE = 4
REPOSITORY_SCOPE = "repository"
KINDS = ("secret", "variable")
GITHUB_PROJECT = "github"  # the [projects] handle of the GitHub project
_REPO = re.compile(r"^[A-Za-z0-9](-?[A-Za-z0-9])*/[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class ScopeAudit:
    """One (scope, kind): ``scope`` is ``repository`` or ``environment:<name>``; ``kind`` is
    ``secret`` or ``variable``; names sorted."""

    scope: str
    kind: str
    declared: tuple[str, ...]
    missing: tuple[str, ...]
    undeclared: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.missing and not self.undeclared

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "kind": self.kind, "declared": list(self.declared),
                "missing": list(self.missing), "undeclared": list(self.undeclared)}


@dataclass(frozen=True)
class AuditReport:
    """The comparison for one repository. ``clean``: nothing missing or undeclared."""

    repository: str
    scopes: tuple[ScopeAudit, ...]
    missing_environments: tuple[str, ...] = ()
    undeclared_environments: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return (not self.missing_environments and not self.undeclared_environments
                and all(s.clean for s in self.scopes))

    @property
    def differences(self) -> int:
        """Count of missing + undeclared names and environments."""
        return (len(self.missing_environments) + len(self.undeclared_environments)
                + sum(len(s.missing) + len(s.undeclared) for s in self.scopes))

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, trailing newline): names and counts, never a value."""
        doc = {"format": AUDIT_FORMAT, "repository": self.repository, "clean": self.clean,
               "differences": self.differences,
               "environments": {"missing": list(self.missing_environments),
                                "undeclared": list(self.undeclared_environments)},
               "scopes": [s.to_json() for s in self.scopes]}
        return json.dumps(doc, sort_keys=True, indent=2) + "\n"


def _scope(scope: str, kind: str, declared: Iterable[str], actual: Iterable[str]) -> ScopeAudit:
    d, a = set(declared), set(actual)
    return ScopeAudit(scope, kind, tuple(sorted(d)), tuple(sorted(d - a)), tuple(sorted(a - d)))


def audit(cfg: GithubConfig, repo: GitHubRepo, repository: str | None = None) -> AuditReport:
    """Compare ``cfg``'s declared names with ``repo``. ``repository`` (owner/name) labels the
    report (default: ``cfg.repository``). Scopes: repository first, then environments sorted
    by name (declared and undeclared alike). Raises GitHubError from ``repo``."""
    scopes = [_scope(REPOSITORY_SCOPE, "secret", cfg.actions.secrets, repo.secret_names()),
              _scope(REPOSITORY_SCOPE, "variable", cfg.actions.variables, repo.variable_names())]
    existing = repo.environment_names()
    declared = set(cfg.environments)
    for name in sorted(declared | existing):
        env = cfg.environments.get(name)
        present = name in existing
        secrets = repo.environment_secret_names(name) if present else set()
        variables = repo.environment_variable_names(name) if present else set()
        scopes.append(_scope(f"environment:{name}", "secret", env.secrets if env else (), secrets))
        scopes.append(_scope(f"environment:{name}", "variable", env.variables if env else (),
                             variables))
    return AuditReport(repository=repository or cfg.repository, scopes=tuple(scopes),
                       missing_environments=tuple(sorted(declared - existing)),
                       undeclared_environments=tuple(sorted(existing - declared)))


class NamesDiffer(ClusterstackError):
    """The audit found differences: exit code 4 (:data:`NAMES_DIFFER_EXIT_CODE`)."""

    exit_code = NAMES_DIFFER_EXIT_CODE

    def __init__(self, report: AuditReport) -> None:
        self.report = report
        super().__init__(f"{report.differences} difference(s) between github.yaml and "
                         f"{report.repository}",
                         "declare the name in github.yaml, or create it (gh secret set NAME / "
                         "gh variable set NAME) or delete it on GitHub")


def github_file(ws, stack: str | None) -> Path:
    """The ``github.yaml`` a stack of the GitHub project names (``<project>:file``).

    ``stack`` None: the project's only stack. Raises ConfigError when the workspace has no
    ``[projects.github]``, the stack is unknown or ambiguous, or its config lacks ``file``.
    """
    ref = ws.project(GITHUB_PROJECT)
    info = ProjectInfo.load(ref.directory)
    stacks = info.stacks()
    if stack is None:
        if len(stacks) != 1:
            raise ConfigError(f"{len(stacks)} stacks in {ref.directory.name}/: "
                              f"{', '.join(stacks) or 'none'}", "name one with --stack, or "
                              "pass --file")
        stack = stacks[0]
    elif stack not in stacks:
        raise ConfigError(f"unknown stack {stack!r} of project {info.name}",
                          f"known stacks: {', '.join(stacks) or 'none'}", field="--stack")
    key = f"{info.name}:file"
    name = info.stack_config(stack).get(key)
    if not name:
        raise ConfigError(f"no `{key}` config", f"add `{key}: github.yaml`",
                          file=info.stack_file(stack), line=1)
    return info.directory / name


def audit_repository(workspace: Callable[[], Workspace], *, clients: Clients, repo: str | None = None,
                     file: Path | None = None, stack: str | None = None,
                     api_url: str | None = None) -> AuditReport:
    """``clusterstack github audit``: the declared names of ``file`` (default: the
    ``github.yaml`` the GitHub project's ``stack`` names; ``workspace()`` is only loaded then)
    against the repository ``repo`` (default: ``repository:`` of the file), read through
    ``clients.github(api_url)`` — the token is required only after the file is valid. Raises
    ClusterstackError for bad arguments, ConfigError (located) for a bad file, GitHubError."""
    if file is not None and stack is not None:
        raise ClusterstackError("give --file or --stack, not both", "drop one of them")
    if repo is not None and not _REPO.match(repo):
        raise ClusterstackError(f"bad repository {repo!r}", "give OWNER/NAME, e.g. "
                                "example-lab/clusterstack", field="--repo")
    cfg = load_github(file if file is not None else github_file(workspace(), stack))
    full_name = repo or cfg.repository
    return audit(cfg, clients.github(api_url).repository(full_name, check=True), full_name)
