"""The repository's policy on GitHub: the default-branch ruleset and the deployment environments.

Sources: GitHub "About rulesets" (``~DEFAULT_BRANCH`` targets whatever the default branch is;
``non_fast_forward`` blocks force pushes; ``deletion`` blocks deleting the branch) and
"Managing environments for deployment" (required reviewers, wait timer, deployment branch
policies); pulumi-github ``RepositoryRuleset``, ``RepositoryEnvironment`` and
``RepositoryEnvironmentDeploymentPolicy``.

Actions secrets and variables are deliberately not resources here: pulumi-github's
``ActionsSecret``/``ActionsVariable`` require the value as an input, which would put it in the
program and the state. Their names are declared in github.yaml and checked by
``clusterstack github audit``. Environments are ``protect=True``: deleting one deletes its
environment secrets, which live outside Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_github as github

from clusterstack.pulumi import importids as ids
from clusterstack.pulumi.tokens import REPOSITORY_POLICY_COMPONENT

#: Ruleset condition matching the repository's default branch, whatever its name.
DEFAULT_BRANCH = "~DEFAULT_BRANCH"


@dataclass(frozen=True)
class RulesetSpec:
    name: str                                 # ruleset.name
    enforcement: str                          # ruleset.enforcement
    required_approving_review_count: int      # ruleset.required_approving_review_count
    dismiss_stale_reviews_on_push: bool       # ruleset.dismiss_stale_reviews_on_push
    require_code_owner_review: bool           # ruleset.require_code_owner_review
    require_last_push_approval: bool          # ruleset.require_last_push_approval
    required_review_thread_resolution: bool   # ruleset.required_review_thread_resolution
    required_status_checks: tuple[str, ...]   # ruleset.required_status_checks (job names)
    strict_status_checks: bool                # ruleset.strict_status_checks


@dataclass(frozen=True)
class EnvironmentSpec:
    name: str                                 # environments.<name>
    reviewer_team_ids: tuple[int, ...]        # environments.<name>.reviewers.teams (IDs, slug order)
    reviewer_user_ids: tuple[int, ...]        # environments.<name>.reviewers.users (IDs, login order)
    prevent_self_review: bool                 # environments.<name>.prevent_self_review
    can_admins_bypass: bool                   # environments.<name>.can_admins_bypass
    wait_timer_minutes: int                   # environments.<name>.wait_timer_minutes
    deployment_branches: str | tuple[str, ...]  # environments.<name>.deployment_branches


@dataclass(frozen=True)
class RepositoryPolicyArgs:
    repository: str                           # repository (the name part of owner/name)
    ruleset: RulesetSpec                      # ruleset
    environments: tuple[EnvironmentSpec, ...]  # environments, in file order


class RepositoryPolicy(pulumi.ComponentResource):
    """The default-branch ruleset and every declared environment of one repository."""

    ruleset: github.RepositoryRuleset
    environments: dict[str, github.RepositoryEnvironment]

    def __init__(self, name: str, args: RepositoryPolicyArgs, *, provider: github.Provider,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(REPOSITORY_POLICY_COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        r = args.ruleset
        self.ruleset = github.RepositoryRuleset(
            r.name, name=r.name, repository=args.repository, target="branch",
            enforcement=r.enforcement,
            conditions={"ref_name": {"includes": [DEFAULT_BRANCH], "excludes": []}},
            rules={
                "deletion": True,            # the default branch cannot be deleted
                "non_fast_forward": True,    # no force pushes
                "pull_request": {
                    "required_approving_review_count": r.required_approving_review_count,
                    "dismiss_stale_reviews_on_push": r.dismiss_stale_reviews_on_push,
                    "require_code_owner_review": r.require_code_owner_review,
                    "require_last_push_approval": r.require_last_push_approval,
                    "required_review_thread_resolution": r.required_review_thread_resolution,
                },
                "required_status_checks": {
                    "required_checks": [{"context": c} for c in r.required_status_checks],
                    "strict_required_status_checks_policy": r.strict_status_checks,
                },
            }, opts=child)
        # pulumi-github RepositoryRuleset "Import": <repository>:<ruleset id> (GitHub's number)
        ids.importable(self.ruleset, f"{args.repository}:<ruleset_id>")

        self.environments = {}
        for e in args.environments:
            custom = isinstance(e.deployment_branches, tuple)
            policy: github.RepositoryEnvironmentDeploymentBranchPolicyArgsDict | None = None
            if e.deployment_branches != "all":
                policy = {"protected_branches": not custom, "custom_branch_policies": custom}
            reviewers: list[github.RepositoryEnvironmentReviewerArgsDict] | None = None
            if e.reviewer_team_ids or e.reviewer_user_ids:
                reviewers = [{"teams": list(e.reviewer_team_ids), "users": list(e.reviewer_user_ids)}]
            env = github.RepositoryEnvironment(
                e.name, repository=args.repository, environment=e.name,
                wait_timer=e.wait_timer_minutes, can_admins_bypass=e.can_admins_bypass,
                prevent_self_review=e.prevent_self_review, reviewers=reviewers,
                deployment_branch_policy=policy,
                opts=pulumi.ResourceOptions(parent=self, provider=provider, protect=True))
            self.environments[e.name] = env
            ids.importable(env, f"{args.repository}:{e.name}")  # "Import": <repository>:<environment>
            if custom:
                for pattern in e.deployment_branches:
                    dp = github.RepositoryEnvironmentDeploymentPolicy(
                        f"{e.name}/{pattern}", repository=args.repository, environment=env.environment,
                        branch_pattern=pattern, opts=child)
                    # "Import": <repository>:<environment>:<policy id> (GitHub's number)
                    ids.importable(dp, f"{args.repository}:{e.name}:<policy_id>")
        self.register_outputs({"ruleset": self.ruleset.name,
                               "environments": sorted(self.environments)})
