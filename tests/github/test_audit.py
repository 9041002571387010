"""``clusterstack github audit``: declared Actions secret/variable names against a repository,
with the real PyGithub client talking to the local GitHub REST fake (fakes.github_api)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.config.github import load_github
from clusterstack.adapters.github import GitHub, GitHubError
from clusterstack.github.audit import AUDIT_FORMAT, audit
from fakes.github_api import FakeGitHub


def connect(full_name: str, *, token: str, base_url: str, **kw):
    """The audited repository through the one GitHub adapter (read at once, as the CLI does)."""
    return GitHub(token=token, base_url=base_url, **kw).repository(full_name, check=True)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "github" / "github.yaml"
FULL = "example-lab/clusterstack"
TOKEN = "ghp_test_token_0000"
VALUE_CANARY = "canary-value-do-not-print-5d1e"

# What the shipped github.yaml declares, as GitHub would hold it.
MATCHING = dict(
    secrets=["PULUMI_CONFIG_PASSPHRASE"],
    variables={"GCP_WORKLOAD_IDENTITY_PROVIDER": VALUE_CANARY, "PULUMI_BACKEND_URL": VALUE_CANARY},
    environments={"preview": {"variables": {"GCP_PREVIEW_SERVICE_ACCOUNT": VALUE_CANARY}},
                  "production": {"secrets": ["PULUMI_CONFIG_PASSPHRASE"],
                                 "variables": {"GCP_DEPLOY_SERVICE_ACCOUNT": VALUE_CANARY}}})


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    with FakeGitHub(token=TOKEN) as server:
        yield server


def run(capsys, *args: str, root: Path = REPO) -> tuple[int, str, str]:
    code = main(["--root", str(root), "github", "audit", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_clean_repository_exits_0(gh, capsys):
    gh.add_repo(FULL, **MATCHING)
    code, out, err = run(capsys, "--api-url", gh.base_url)
    assert (code, err) == (0, "")
    assert out == f"ok: {FULL} has every declared name (6) and no other\n"
    assert VALUE_CANARY not in out


def test_missing_and_undeclared_names_exit_4(gh, capsys):
    env = {k: {"secrets": list(v.get("secrets", [])), "variables": dict(v.get("variables", {}))}
           for k, v in MATCHING["environments"].items()}
    env["production"]["secrets"] = ["OLD_DEPLOY_KEY"]               # declared one missing
    env["staging"] = {"secrets": ["STAGING_KEY"]}                   # undeclared environment
    gh.add_repo(FULL, secrets=["PULUMI_CONFIG_PASSPHRASE", "LEGACY_TOKEN"],
                variables={"PULUMI_BACKEND_URL": VALUE_CANARY}, environments=env)
    code, out, err = run(capsys, "--api-url", gh.base_url, "--json")
    assert code == 4
    doc = json.loads(out)
    assert doc["format"] == AUDIT_FORMAT and doc["clean"] is False and doc["differences"] == 6
    assert doc["environments"] == {"missing": [], "undeclared": ["staging"]}
    rows = {(s["scope"], s["kind"]): (s["missing"], s["undeclared"]) for s in doc["scopes"]}
    assert rows[("repository", "secret")] == ([], ["LEGACY_TOKEN"])
    assert rows[("repository", "variable")] == (["GCP_WORKLOAD_IDENTITY_PROVIDER"], [])
    assert rows[("environment:production", "secret")] == (["PULUMI_CONFIG_PASSPHRASE"],
                                                          ["OLD_DEPLOY_KEY"])
    assert rows[("environment:staging", "secret")] == ([], ["STAGING_KEY"])
    assert err == (f"error: 6 difference(s) between github.yaml and {FULL} — declare the name in "
                   "github.yaml, or create it (gh secret set NAME / gh variable set NAME) or "
                   "delete it on GitHub\n")
    assert VALUE_CANARY not in out + err


def test_text_report_lists_each_difference_and_never_a_value(gh, capsys):
    gh.add_repo(FULL, secrets=["LEGACY_TOKEN"], variables={"STRAY": VALUE_CANARY},
                environments={"production": MATCHING["environments"]["production"]})
    code, out, err = run(capsys, "--api-url", gh.base_url)
    assert code == 4
    lines = [" ".join(ln.split()) for ln in out.splitlines()]
    assert lines[0] == f"{FULL}: 7 difference(s)"
    for row in ("environment:preview │ environment │ preview │ missing",
                "repository │ secret │ LEGACY_TOKEN │ undeclared",
                "repository │ secret │ PULUMI_CONFIG_PASSPHRASE │ missing",
                "repository │ variable │ STRAY │ undeclared",
                "environment:preview │ variable │ GCP_PREVIEW_SERVICE_ACCOUNT │ missing"):
        assert row in lines, row
    assert VALUE_CANARY not in out + err


def test_missing_environment_reports_its_names_missing(gh):
    gh.add_repo(FULL, secrets=MATCHING["secrets"], variables=MATCHING["variables"],
                environments={"preview": MATCHING["environments"]["preview"]})
    report = audit(load_github(SHIPPED), connect(FULL, token=TOKEN, base_url=gh.base_url))
    assert report.missing_environments == ("production",)
    prod = {s.kind: s.missing for s in report.scopes if s.scope == "environment:production"}
    assert prod == {"secret": ("PULUMI_CONFIG_PASSPHRASE",),
                    "variable": ("GCP_DEPLOY_SERVICE_ACCOUNT",)}
    # a missing environment's secrets are never requested (GitHub would answer 404)
    assert not any("/environments/production/" in p for p in gh.paths())


def test_every_page_is_read(gh, capsys):
    many = [f"EXTRA_{i:03d}" for i in range(75)]   # three pages of 30
    gh.add_repo(FULL, **{**MATCHING, "secrets": MATCHING["secrets"] + many})
    code, out, _ = run(capsys, "--api-url", gh.base_url, "--json")
    assert code == 4
    [repo_secrets] = [s for s in json.loads(out)["scopes"]
                      if (s["scope"], s["kind"]) == ("repository", "secret")]
    assert repo_secrets["undeclared"] == many and repo_secrets["missing"] == []
    assert gh.paths().count(f"/repos/{FULL}/actions/secrets") == 3


def test_json_is_byte_identical_across_runs(gh, capsys):
    gh.add_repo(FULL, secrets=["B_SECRET", "A_SECRET"], variables={})
    first = run(capsys, "--api-url", gh.base_url, "--json")
    second = run(capsys, "--api-url", gh.base_url, "--json")
    assert first == second and first[0] == 4


def test_repo_option_and_api_url_from_the_environment(gh, capsys, monkeypatch):
    gh.add_repo("other-org/fork", **MATCHING)
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)   # as GitHub Actions sets it
    code, out, _ = run(capsys, "--repo", "other-org/fork")
    assert code == 0 and "other-org/fork" in out
    assert gh.paths()[0] == "/repos/other-org/fork"


def test_file_option(gh, capsys, tmp_path):
    path = tmp_path / "gh.yaml"
    path.write_text("repository: example-lab/clusterstack\nruleset:\n  required_status_checks: [t]\n"
                    "actions:\n  secrets: [PULUMI_CONFIG_PASSPHRASE]\n")
    gh.add_repo(FULL, secrets=["PULUMI_CONFIG_PASSPHRASE"])
    code, out, _ = run(capsys, "--api-url", gh.base_url, "--file", str(path))
    assert code == 0, out


def test_the_file_comes_from_the_github_stack(workspace_copy, gh, capsys):
    stack = workspace_copy / "github" / "Pulumi.repo.yaml"
    shutil.copy(SHIPPED, workspace_copy / "github" / "other.yaml")
    (workspace_copy / "github" / "other.yaml").write_text(
        SHIPPED.read_text().replace("example-lab/clusterstack", "example-lab/other"))
    stack.write_text("config:\n  clusterstack-github:file: other.yaml\n")
    gh.add_repo("example-lab/other", **MATCHING)
    code, out, _ = run(capsys, "--api-url", gh.base_url, root=workspace_copy)
    assert code == 0 and "example-lab/other" in out
    (workspace_copy / "github" / "Pulumi.second.yaml").write_text(stack.read_text())
    code, _, err = run(capsys, "--api-url", gh.base_url, root=workspace_copy)
    assert code == 2 and "2 stacks in github/: repo, second — name one with --stack" in err
    assert run(capsys, "--api-url", gh.base_url, "--stack", "second", root=workspace_copy)[0] == 0


# ---------------------------------------------------------------------------------------------
# Bad input and refusals: exit 2; GitHub or network down: exit 2 too (exit 1 is a bug)


def test_no_token(capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    code, out, err = run(capsys, "--api-url", "http://127.0.0.1:9")
    assert code == 2 and out == ""
    assert err.startswith("error: GITHUB_TOKEN is not set — export GITHUB_TOKEN=$(gh auth token)")


def test_rejected_token(gh, capsys, monkeypatch):
    gh.add_repo(FULL, **MATCHING)
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    code, _, err = run(capsys, "--api-url", gh.base_url)
    assert code == 2
    assert err == (f"error: cannot read repository {FULL}: GitHub rejected the token (401) — "
                   "set GITHUB_TOKEN to a valid token\n")


def test_unknown_repository(gh, capsys):
    code, _, err = run(capsys, "--api-url", gh.base_url, "--repo", "example-lab/nope")
    assert code == 2 and "cannot read repository example-lab/nope: not found (404)" in err


def test_token_without_secrets_permission(gh, capsys):
    gh.add_repo(FULL, **MATCHING)
    gh.forbidden.add(f"/repos/{FULL}/actions/secrets")
    code, _, err = run(capsys, "--api-url", gh.base_url)
    assert code == 2 and "cannot list Actions secrets: the token lacks permission (403)" in err


@pytest.mark.parametrize("args, fragment", [
    (["--repo", "not a repo"], "--repo: bad repository 'not a repo'"),
    (["--file", "x.yaml", "--stack", "repo"], "give --file or --stack, not both"),
    (["--stack", "nope"], "--stack: unknown stack 'nope' of project clusterstack-github"),
])
def test_bad_arguments(gh, capsys, args, fragment):
    code, _, err = run(capsys, "--api-url", gh.base_url, *args)
    assert code == 2 and fragment in err


def test_bad_github_yaml_is_located(gh, capsys, tmp_path):
    path = tmp_path / "github.yaml"
    path.write_text("repository: example-lab/clusterstack\nruleset:\n  required_status_checks: [t]\n"
                    "actions:\n  secrets: [GITHUB_TOKEN]\n")
    code, _, err = run(capsys, "--api-url", gh.base_url, "--file", str(path))
    assert code == 2
    assert err.startswith(f"error: {path}:5: actions.secrets[0]: 'GITHUB_TOKEN': names starting "
                          "with GITHUB_ are reserved by GitHub")
    assert gh.requests == []   # nothing asked of GitHub before the file is valid


def test_unreachable_github_is_exit_2():
    with socket.socket() as s:   # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(GitHubError) as ei:
        connect(FULL, token=TOKEN, base_url=f"http://127.0.0.1:{port}", retry=None, timeout=2)
    assert ei.value.exit_code == 2 and "ConnectionError" in ei.value.render()
    assert ei.value.render().startswith(f"cannot reach http://127.0.0.1:{port} to ")
    assert "check the network" in ei.value.render()


def test_server_error_is_exit_2(gh):
    gh.add_repo(FULL, **MATCHING)
    gh.broken.add(f"/repos/{FULL}/actions/variables")
    names = connect(FULL, token=TOKEN, base_url=gh.base_url, retry=None)
    with pytest.raises(GitHubError) as ei:
        names.variable_names()
    assert ei.value.exit_code == 2
    assert ei.value.problems[0].message == "cannot list Actions variables: GitHub answered 502"


def test_repository_vanishing_mid_audit_is_exit_2(gh):
    gh.add_repo(FULL, **MATCHING)
    names = connect(FULL, token=TOKEN, base_url=gh.base_url, retry=None)
    gh.repos.clear()   # deleted (or access revoked) after it was opened: GitHub answers 404
    with pytest.raises(GitHubError) as ei:
        names.secret_names()
    assert ei.value.exit_code == 2 and "not found (404)" in ei.value.render()
