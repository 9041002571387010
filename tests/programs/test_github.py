"""github.yaml and the GitHub project under Pulumi mocks: the default-branch ruleset, the
environments and their protection rules, located config errors, and no secret value anywhere in
the project's inputs or outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clusterstack.errors import ConfigError
from clusterstack.config.github import load_github
from clusterstack.plan import dumps, plan_stack, run_program
from clusterstack.plan.model import StackPlan

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "github"
RULESET = "github:index/repositoryRuleset:RepositoryRuleset"
ENVIRONMENT = "github:index/repositoryEnvironment:RepositoryEnvironment"
DEPLOY_POLICY = "github:index/repositoryEnvironmentDeploymentPolicy:RepositoryEnvironmentDeploymentPolicy"
CANARIES = ("ghp_CANARYTOKEN0000000000000000000000", "canary-passphrase-7f3a",
            "canary-variable-value-91c2")

MINIMAL = """\
repository: example-lab/clusterstack
ruleset:
  required_status_checks: [test, preview]
environments:
  production:
    reviewers:
      teams: {ml-infra: 4567890}
    deployment_branches: [main]
    secrets: [PULUMI_CONFIG_PASSPHRASE]
actions:
  secrets: [PULUMI_CONFIG_PASSPHRASE]
  variables: [PULUMI_BACKEND_URL]
"""


@pytest.fixture(scope="module")
def plan() -> StackPlan:
    """The shipped github/ stack, planned while the environment holds a GitHub token and values
    of the declared secrets and variables (as on an operator's machine or in CI)."""
    saved = dict(os.environ)
    os.environ.update({"GITHUB_TOKEN": CANARIES[0], "GH_TOKEN": CANARIES[0],
                       "PULUMI_CONFIG_PASSPHRASE": CANARIES[1],
                       "PULUMI_BACKEND_URL": CANARIES[2], "GCP_DEPLOY_SERVICE_ACCOUNT": CANARIES[2]})
    try:
        return plan_stack(PROJECT, "repo")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def of_type(plan: StackPlan, typ: str):
    return [r for r in plan.resources if r.type == typ]


def leaves(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    else:
        yield value


VALUE_KEYS = {"plaintextValue", "encryptedValue", "value", "token", "appAuth"}


def secret_leaks(plan: StackPlan, canaries=CANARIES) -> list[str]:
    """Every way a secret value could sit in a plan: a resource that carries a secret or
    variable value, an input key that holds one, or a canary value anywhere in the JSON."""
    leaks = [f"type {r.type}" for r in plan.resources
             if "Secret" in r.type or "Variable" in r.type]
    leaks += [f"{r.name}: {k}" for r in plan.resources for k in leaves(r.inputs)
              if isinstance(k, str) and k in VALUE_KEYS]
    text = dumps([plan])
    leaks += [f"canary {c[:12]}…" for c in canaries if c in text]
    return leaks


# ---------------------------------------------------------------------------------------------
# No secret value anywhere


def test_no_secret_value_anywhere_in_the_project(plan):
    assert secret_leaks(plan) == []
    [provider] = [r for r in plan.resources if r.is_provider]
    assert provider.inputs == {"baseUrl": "https://api.github.com/", "owner": "example-lab"}
    # the names are declared (as outputs), the values are not
    assert plan.outputs["actions_secret_names"] == ["PULUMI_CONFIG_PASSPHRASE"]
    assert plan.outputs["environments"]["production"]["secret_names"] == ["PULUMI_CONFIG_PASSPHRASE"]


def test_golden_plan(plan):
    from regen_golden import project_golden_path
    path = project_golden_path("github", "repo")
    assert dumps([plan]) == path.read_text(encoding="utf-8"), (
        f"the plan of github/repo differs from {path}; if intended, run "
        "`.venv/bin/python tests/regen_golden.py` and review `git diff tests/golden`")


def test_the_leak_check_catches_a_declared_secret_value():
    """The check above is not vacuous: a program that manages an Actions secret is caught, even
    though the plan masks the value itself."""
    def program() -> None:
        import pulumi_github as github
        github.ActionsSecret("s", repository="r", secret_name="PULUMI_CONFIG_PASSPHRASE",
                             plaintext_value=CANARIES[1])
        github.ActionsVariable("v", repository="r", variable_name="X", value=CANARIES[2])

    p = run_program("leak", "test", {}, program)
    leaks = secret_leaks(p)
    assert "type github:index/actionsSecret:ActionsSecret" in leaks
    assert "s: plaintextValue" in leaks and f"canary {CANARIES[2][:12]}…" in leaks


# ---------------------------------------------------------------------------------------------
# The ruleset and the environments


def test_default_branch_ruleset(plan):
    [rs] = of_type(plan, RULESET)
    i = rs.inputs
    assert (i["repository"], i["target"], i["enforcement"]) == ("clusterstack", "branch", "active")
    assert i["conditions"]["refName"] == {"includes": ["~DEFAULT_BRANCH"], "excludes": []}
    rules = i["rules"]
    assert rules["nonFastForward"] is True and rules["deletion"] is True   # no force push / delete
    assert rules["pullRequest"]["requiredApprovingReviewCount"] == 1
    assert rules["pullRequest"]["dismissStaleReviewsOnPush"] is True
    checks = [c["context"] for c in rules["requiredStatusChecks"]["requiredChecks"]]
    assert checks == ["test", "preview-summary"]  # the preview workflow must pass
    assert rules["requiredStatusChecks"]["strictRequiredStatusChecksPolicy"] is True
    assert rs.adopt_id == "clusterstack:<ruleset_id>"


def test_environments_and_their_protection_rules(plan):
    envs = {r.name: r for r in of_type(plan, ENVIRONMENT)}
    assert set(envs) == {"preview", "production"}
    assert all(r.protect for r in envs.values())     # deleting one deletes its secrets
    prod = envs["production"].inputs
    assert prod["reviewers"] == [{"teams": [4567890], "users": []}]
    assert prod["preventSelfReview"] is True and prod["canAdminsBypass"] is False
    assert prod["deploymentBranchPolicy"] == {"protectedBranches": False, "customBranchPolicies": True}
    assert "deploymentBranchPolicy" not in envs["preview"].inputs      # all branches
    [dp] = of_type(plan, DEPLOY_POLICY)
    assert dp.inputs == {"repository": "clusterstack", "environment": "production",
                         "branchPattern": "main"}
    assert envs["production"].adopt_id == "clusterstack:production"


def test_protected_branches_policy(tmp_path):
    path = tmp_path / "github.yaml"
    path.write_text(MINIMAL.replace("deployment_branches: [main]", "deployment_branches: protected"))
    cfg = load_github(path)

    def program() -> None:
        from clusterstack.programs.github import declare
        declare(cfg)

    p = run_program("gh", "test", {}, program)
    [env] = of_type(p, ENVIRONMENT)
    assert env.inputs["deploymentBranchPolicy"] == {"protectedBranches": True,
                                                    "customBranchPolicies": False}
    assert of_type(p, DEPLOY_POLICY) == []


def test_plan_all_includes_both_projects(plan_all_output):
    from clusterstack.plan import loads
    stacks = {(p.project, p.stack) for p in loads(plan_all_output("--json"))}
    assert {("clusterstack-buckets", "lab"), ("clusterstack-github", "repo")} <= stacks
    lines = plan_all_output().splitlines()
    assert "clusterstack-buckets/lab" in lines and "clusterstack-github/repo" in lines


def test_plan_one_project(repo_root, capsys, plan):
    from clusterstack.cli import main
    assert main(["--root", str(repo_root), "plan", "--project", "github", "--json"]) == 0
    assert capsys.readouterr().out == dumps([plan])


@pytest.mark.parametrize("argv, message", [
    # the list is what --project takes: [projects] keys (the cluster project is planned by name)
    (["--project", "nope"], "unknown project 'nope' — known projects: buckets, github ("),
    (["--project", "clusters"], "'clusters' is the cluster project"),
    (["--project", "github", "--all"], "give --project or --all, not both"),
])
def test_plan_project_errors(repo_root, capsys, argv, message):
    from clusterstack.cli import main
    assert main(["--root", str(repo_root), "plan", *argv]) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# github.yaml errors


def problems(tmp_path: Path, text: str) -> list[tuple[int | None, str, str]]:
    path = tmp_path / "github.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as ei:
        load_github(path)
    return [(p.line, p.field, p.message) for p in ei.value.problems]


BAD = [
    (("secrets: [PULUMI_CONFIG_PASSPHRASE]\nactions", "secrets: [GITHUB_PAT]\nactions"), 9,
     "environments.production.secrets[0]", "reserved by GitHub"),
    (("variables: [PULUMI_BACKEND_URL]", "variables: [pulumi_backend_url]"), 12,
     "actions.variables[0]", "' is not "),
    (("variables: [PULUMI_BACKEND_URL]", "variables: [A, A]"), 12, "actions.variables",
     "'A' is listed twice"),
    (("  required_status_checks: [test, preview]\n", "  name: main-rules\n"), 2,
     "ruleset.required_status_checks", "Field required"),
    (("[test, preview]", "[]"), 3, "ruleset.required_status_checks", "at least 1 item"),
    (("repository: example-lab/clusterstack", "repository: clusterstack"), 1, "repository",
     "' is not "),
    (("teams: {ml-infra: 4567890}", "teams: {ml-infra: 1, a: 2, b: 3, c: 4, d: 5, e: 6, f: 7}"), 6,
     "environments.production.reviewers", "7 reviewers; GitHub allows at most 6"),
    (("    reviewers:\n      teams: {ml-infra: 4567890}\n", ""), 5,
     "environments.production.prevent_self_review", "has no effect"),
    (("deployment_branches: [main]", "deployment_branches: sometimes"), 8,
     "environments.production.deployment_branches", "Input should be"),
    (("ruleset:\n", "ruleset:\n  bypass: everyone\n"), 3, "ruleset.bypass", "Extra inputs"),
]


@pytest.mark.parametrize("change, line, field, fragment", BAD, ids=[b[2] for b in BAD])
def test_bad_input_is_located(tmp_path, change, line, field, fragment):
    old, new = change
    assert old in MINIMAL
    found = problems(tmp_path, MINIMAL.replace(old, new, 1))
    assert any(ln == line and f == field and fragment in m for ln, f, m in found), found


def test_the_shipped_file_loads():
    cfg = load_github(PROJECT / "github.yaml")
    assert cfg.owner == "example-lab" and cfg.name == "clusterstack"
    assert "preview-summary" in cfg.ruleset.required_status_checks
    assert json.loads(json.dumps(sorted(cfg.environments))) == ["preview", "production"]
