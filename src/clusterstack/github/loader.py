"""Load ``github.yaml`` with ``file:line`` errors and check the rules that span fields."""

from __future__ import annotations

from pathlib import Path

from clusterstack.config.reviewed import load_document
from clusterstack.errors import FieldError
from clusterstack.github.model import GithubConfig

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
