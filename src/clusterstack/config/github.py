"""Typed model of ``github/github.yaml``: the repository's policy as reviewed code.

Every section is strict. What it declares:

- ``ruleset`` — the default-branch ruleset: required reviews, required status checks (job
  names of ``.github/workflows/*``, the preview workflow's among them), and always no force
  pushes (``non_fast_forward``) and no deletion of the default branch;
- ``environments`` — the deployment environments the rollout workflow uses, with their
  protection rules (required reviewers, wait timer, which branches may deploy);
- ``actions`` / ``environments.<env>`` ``secrets`` and ``variables`` — the NAMES of the Actions
  secrets and variables that must exist. Values never appear here, in Pulumi, or in the
  repository; ``clusterstack github audit`` compares the names with GitHub.

:func:`load_github` reads the file through the one loader and checks the rules across fields
(:func:`cross_checks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool

from clusterstack.config.document import Strict, load_document  # Strict: unknown keys rejected
from clusterstack.config.types import Int, unique_items
from clusterstack.errors import FieldError


def _not_github_prefixed(name: str) -> str:
    # Rule: GitHub rejects secret and variable names starting with GITHUB_ (GitHub Docs,
    # "Naming your secrets" / "Naming conventions for configuration variables").
    if name.startswith("GITHUB_"):
        raise ValueError(f"{name!r}: names starting with GITHUB_ are reserved by GitHub")
    return name


#: An Actions secret or variable name: letters, digits and '_', not starting with a digit
#: (GitHub Docs, "Naming your secrets"). GitHub stores names upper-cased, so they are
#: declared upper-case to compare exactly.
SecretName = Annotated[str, Field(pattern=r"\A[A-Z_][A-Z0-9_]*\Z", max_length=255),
                       AfterValidator(_not_github_prefixed)]
Names = Annotated[tuple[SecretName, ...], AfterValidator(unique_items)]
#: GitHub team slug / user login.
TeamSlug = Annotated[str, Field(pattern=r"\A[a-z0-9][a-z0-9_-]*\Z", max_length=100)]
Login = Annotated[str, Field(pattern=r"\A[A-Za-z0-9](-?[A-Za-z0-9])*\Z", max_length=39)]
BranchPattern = Annotated[str, Field(min_length=1, max_length=255, pattern=r"\A[^\s]+\Z")]


class Ruleset(Strict):
    """The default-branch ruleset (GitHub "About rulesets"; pulumi-github RepositoryRuleset)."""

    name: str = Field(default="default-branch", min_length=1, max_length=100)
    enforcement: Literal["active", "evaluate", "disabled"] = "active"
    required_approving_review_count: Int = Field(default=1, ge=0, le=10)
    dismiss_stale_reviews_on_push: StrictBool = True
    require_code_owner_review: StrictBool = False
    require_last_push_approval: StrictBool = False
    required_review_thread_resolution: StrictBool = True
    # Check names as GitHub reports them: a workflow job's `name:` (or its id).
    required_status_checks: Annotated[list[Annotated[str, Field(min_length=1, max_length=255)]],
                                      AfterValidator(unique_items)] = Field(min_length=1)
    strict_status_checks: StrictBool = True   # the branch must be up to date before merging


class Reviewers(Strict):
    # slug/login → numeric ID (the API takes IDs): `gh api orgs/ORG/teams/SLUG --jq .id`,
    # `gh api users/LOGIN --jq .id`. The name keeps the file readable and reviewable.
    teams: dict[TeamSlug, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    users: dict[Login, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)


class Environment(Strict):
    """A deployment environment (GitHub "Managing environments for deployment")."""

    reviewers: Reviewers = Field(default_factory=Reviewers)   # at most 6 in total (GitHub)
    prevent_self_review: StrictBool = True
    can_admins_bypass: StrictBool = False
    wait_timer_minutes: Int = Field(default=0, ge=0, le=43200)   # GitHub: 0–43200 minutes
    # all: any branch; protected: branches with protection rules; a list: these branch patterns.
    deployment_branches: Literal["all", "protected"] | Annotated[
        list[BranchPattern], Field(min_length=1), AfterValidator(unique_items)] = "protected"
    secrets: Names = ()      # names of environment secrets that must exist
    variables: Names = ()    # names of environment variables that must exist


class Actions(Strict):
    secrets: Names = ()      # names of repository Actions secrets that must exist
    variables: Names = ()    # names of repository Actions variables that must exist


class GithubConfig(Strict):
    """The whole ``github.yaml``."""

    repository: str = Field(pattern=r"\A[A-Za-z0-9](-?[A-Za-z0-9])*/[A-Za-z0-9._-]+\Z")  # owner/name
    ruleset: Ruleset
    environments: dict[Annotated[str, Field(pattern=r"\A[A-Za-z0-9._-]{1,255}\Z")], Environment] = \
        Field(default_factory=dict)
    actions: Actions = Field(default_factory=Actions)

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repository.split("/", 1)[1]


#: GitHub allows at most six required reviewers (users and teams together) per environment
#: (GitHub Docs, "Deployment protection rules — Required reviewers").
MAX_REVIEWERS = 6


def cross_checks(cfg: GithubConfig) -> list[FieldError]:
    """Rules across fields:

    - an environment lists at most :data:`MAX_REVIEWERS` reviewers;
    - ``prevent_self_review`` needs reviewers (it constrains who may approve).
    """
    errs: list[FieldError] = []
    for name, env in cfg.environments.items():
        n = len(env.reviewers.teams) + len(env.reviewers.users)
        if n > MAX_REVIEWERS:
            errs.append(FieldError(("environments", name, "reviewers"),
                                   f"{n} reviewers; GitHub allows at most {MAX_REVIEWERS}",
                                   "use a team instead of individual users"))
        if env.prevent_self_review and n == 0:
            errs.append(FieldError(("environments", name, "prevent_self_review"),
                                   "prevent_self_review without reviewers has no effect",
                                   "add reviewers, or set prevent_self_review: false"))
    return errs


def load_github(path: Path) -> GithubConfig:
    """Load and check ``github.yaml``. Raises ConfigError listing every problem located."""
    return load_document(path, GithubConfig, cross_checks=cross_checks,
                         missing_hint="the github stack's `file` config names it, relative to "
                                      "the project directory; `github audit --file` takes a path")
