"""The Pulumi program of the GitHub project (kind ``github``; ``github/__main__.py`` calls
:func:`clusterstack.programs.main`, which calls :func:`build`).

The stack config names the reviewed file: ``clusterstack-github:file: github.yaml`` (relative to
the project directory). The provider is bound to the repository's owner; it authenticates with
the operator's ``GITHUB_TOKEN`` at deployment time (docs/github.md). The stack exports the
declared secret and variable NAMES — never a value.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from clusterstack.config.github import GithubConfig, load_github
from clusterstack.programs import stack_document
from clusterstack.workspace import Project, Workspace


def declare(cfg: GithubConfig) -> None:
    """Declare the repository policy of ``cfg`` and export the declared names."""
    import pulumi_github as github

    from clusterstack.components.github import (
        EnvironmentSpec,
        RepositoryPolicy,
        RepositoryPolicyArgs,
        RulesetSpec,
    )

    r = cfg.ruleset
    provider = github.Provider("github", owner=cfg.owner)
    RepositoryPolicy("repository", RepositoryPolicyArgs(
        repository=cfg.name,
        ruleset=RulesetSpec(
            name=r.name, enforcement=r.enforcement,
            required_approving_review_count=r.required_approving_review_count,
            dismiss_stale_reviews_on_push=r.dismiss_stale_reviews_on_push,
            require_code_owner_review=r.require_code_owner_review,
            require_last_push_approval=r.require_last_push_approval,
            required_review_thread_resolution=r.required_review_thread_resolution,
            required_status_checks=tuple(r.required_status_checks),
            strict_status_checks=r.strict_status_checks),
        environments=tuple(EnvironmentSpec(
            name=name,
            reviewer_team_ids=tuple(e.reviewers.teams[k] for k in sorted(e.reviewers.teams)),
            reviewer_user_ids=tuple(e.reviewers.users[k] for k in sorted(e.reviewers.users)),
            prevent_self_review=e.prevent_self_review, can_admins_bypass=e.can_admins_bypass,
            wait_timer_minutes=e.wait_timer_minutes,
            deployment_branches=(e.deployment_branches if isinstance(e.deployment_branches, str)
                                 else tuple(e.deployment_branches)))
            for name, e in cfg.environments.items())),
        provider=provider)
    pulumi.export("repository", cfg.repository)
    pulumi.export("required_status_checks", list(r.required_status_checks))
    pulumi.export("actions_secret_names", sorted(cfg.actions.secrets))
    pulumi.export("actions_variable_names", sorted(cfg.actions.variables))
    pulumi.export("environments", {name: {"secret_names": sorted(e.secrets),
                                          "variable_names": sorted(e.variables)}
                                   for name, e in cfg.environments.items()})


def build(workspace: Workspace, project: Project) -> None:
    """Read ``<project>:file`` from the stack config, load that file and declare the policy.

    Raises ClusterstackError when the stack config lacks the key, and ConfigError for an
    invalid ``github.yaml``.
    """
    declare(load_github(stack_document(project.directory, "github.yaml", workspace.root)))
