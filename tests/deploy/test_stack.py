"""Rollback of a plain Pulumi service (kind `pulumi`): history from the stack's updates, and the
re-apply of an older update's program (a git worktree at its commit) with its config — on the
FakeEngine, in a real git repository with real commits."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from ruamel.yaml import YAML

from clusterstack.cli import main
from clusterstack.deploy.model import FailedRestored, FailedRestoreFailed, RollbackRefused, WorldMoved
from clusterstack.deploy.rollback import execute, plan_rollback
from clusterstack.deploy.stack import PulumiStackBackend, config_document
from clusterstack.engine import ResourceFailedError
from fakes.pulumi import FakeEngine, FakeStack, res_step
from clusterstack.engine.model import HistoryEntry
from clusterstack.guard import GuardPolicy
from clusterstack.workspace import Workspace
from deploy_support import make_workspace, timing
from helpers import git
from fakes.clients import bound_engine, fake_clients

REGISTRY = """\
services:
  jobs:
    project_dir: services/jobs
    stack: prod
    kind: pulumi
"""
SALT = "v1:Zm9vYmFyYmF6:v1:c2FsdHNhbHQ=:ZW5jcnlwdGVk"


def stack_file(replicas: int) -> str:
    return f"encryptionsalt: {SALT}\nconfig:\n  jobs:replicas: {replicas}\n  jobs:region: us-central1\n"


class RecordingEngine(FakeEngine):
    """Records, at each update, what the program directory held (the code that would run) and
    can fail a number of updates first."""

    def __init__(self) -> None:
        super().__init__({"prod": FakeStack(steps=(res_step("update", "prod", "command:local:Command", "nightly"),))})
        self.seen: list[tuple[str, str, str]] = []  # (job.py, config file text, message)
        self.fail_ups = 0

    def up(self, stack, **kw):
        self.seen.append(((self.project_dir / "job.py").read_text(),
                          Path(self.config_file).read_text() if self.config_file else "", kw["message"]))
        if self.fail_ups:
            self.fail_ups -= 1
            self.calls.append(("up", stack, kw))
            raise ResourceFailedError(stack, ["nightly: deploy CLI exited 1"])
        res = super().up(stack, **kw)
        self.stacks[stack].steps = (res_step("update", stack, "command:local:Command", "nightly"),)
        return res


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A workspace with the `jobs` service rolled out from three commits (versions 1–3)."""
    root = make_workspace(tmp_path)
    jobs = root / "services" / "jobs"
    jobs.mkdir()
    (jobs / "Pulumi.yaml").write_text("name: jobs\nruntime: python\n")
    (root / "services.yaml").write_text(REGISTRY)
    eng = RecordingEngine()
    clients = fake_clients(engine=bound_engine(eng))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    commits = []
    for n in (1, 2, 3):
        (jobs / "job.py").write_text(f"VERSION = {n}\n")
        (jobs / "Pulumi.prod.yaml").write_text(stack_file(n + 1))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"jobs v{n}")
        commits.append(git(root, "rev-parse", "HEAD"))
        assert main(["--root", str(root), "deploy", "jobs", "rollout", "--yes", "-m", f"jobs v{n}"], clients=clients) == 0
    eng.seen.clear()
    eng.calls.clear()
    return SimpleNamespace(root=root, eng=eng, commits=commits, clients=clients)


def pulumi_backend(repo) -> PulumiStackBackend:
    ws = Workspace.load(repo.root)
    return PulumiStackBackend(
        "jobs", repo.eng.bind(project_dir=repo.root / "services" / "jobs"), stack="prod", root=repo.root,
        project_dir=repo.root / "services" / "jobs",
        engine_at=lambda p, c, env: repo.eng.bind(project_dir=p, config_file=c, env=env),
        policy=GuardPolicy.from_toml(ws.guard))


def test_history_is_the_stack_update_history(repo, capsys):
    assert main(["--root", str(repo.root), "deploy", "jobs", "history", "--json"], clients=repo.clients) == 0
    revs = json.loads(capsys.readouterr().out)["revisions"]
    assert [(r["revision"], r["serving"], r["health"], r["git_commit"]) for r in revs] == [
        (3, True, "healthy", repo.commits[2]), (2, False, "healthy", repo.commits[1]),
        (1, False, "healthy", repo.commits[0])]
    assert revs[0]["message"].startswith("jobs v3 [clusterstack: git ")


def test_rollback_reapplies_the_older_program_with_its_config(repo, capsys):
    root, eng = repo.root, repo.eng
    assert main(["--root", str(root), "deploy", "jobs", "rollback", "--yes"], clients=repo.clients) == 0
    out = capsys.readouterr().out
    assert "rollback jobs (pulumi): revision 3 (version 3) → revision 2 (version 2" in out
    assert f"re-apply jobs at commit {repo.commits[1][:12]}" in out
    # preview and update ran on version 2's code and config, from a worktree, not the checkout
    (code, config_text, message), = eng.seen
    assert code == "VERSION = 2\n"
    doc = YAML(typ="safe").load(config_text)
    assert doc["encryptionsalt"] == SALT
    assert doc["config"]["jobs:replicas"] == "3"
    assert doc["config"]["jobs:sourceRevision"] == repo.commits[1]
    assert message == f"rollback jobs from version 3 to version 2 [clusterstack: git {repo.commits[1]}]"
    binds = [kw for op, _, kw in eng.calls if op == "bind" and kw["config_file"]]
    assert len(binds) == 2  # the preview's engine and the update's
    assert all(not str(b["project_dir"]).startswith(str(root)) for b in binds)
    latest = eng.stacks["prod"].history[0]
    assert (latest.version, latest.git_commit) == (4, repo.commits[1])  # Pulumi records the worktree's HEAD
    assert git(root, "worktree", "list").count("\n") == 0                # the worktree is gone
    assert (root / "services" / "jobs" / "job.py").read_text() == "VERSION = 3\n"  # checkout untouched
    # version 3 is marked rolled back; the next default target skips it and version 2 (same program)
    snap = pulumi_backend(repo).snapshot()
    assert [(r.number, r.health, r.serving) for r in snap.revisions][:2] == [(4, "healthy", True),
                                                                            (3, "rolled-back", False)]
    plan = plan_rollback(pulumi_backend(repo))
    assert plan.target.number == 1


def test_the_guard_blocks_a_destructive_reapply(repo, capsys):
    repo.eng.stacks["prod"].steps = (res_step("delete", "prod", "gcp:compute/address:Address", "ingress-ip",
                                              protect=True),)
    assert main(["--root", str(repo.root), "deploy", "jobs", "rollback", "--yes"], clients=repo.clients) == 3
    assert "up" not in [op for op, _, _ in repo.eng.calls]


def test_a_new_update_after_planning_is_a_moved_world(repo):
    b = pulumi_backend(repo)
    plan = plan_rollback(b)
    assert main(["--root", str(repo.root), "deploy", "jobs", "rollout", "--yes"], clients=repo.clients) == 0
    with pytest.raises(WorldMoved, match="latest update is now version 4, not 3"):
        execute(b, plan, timing())


def test_failed_reapply_restores_the_source(repo):
    repo.eng.fail_ups = 1
    b = pulumi_backend(repo)
    outcome = execute(b, plan_rollback(b), timing())
    assert isinstance(outcome, FailedRestored)
    assert "deploy CLI exited 1" in outcome.reason
    (_, _, first), (code, _, second) = repo.eng.seen
    assert code == "VERSION = 3\n"
    assert second == f"restore version 3 after a failed rollback to version 2 [clusterstack: git {repo.commits[2]}]"
    healths = {r.number: r.health for r in pulumi_backend(repo).snapshot().revisions}
    assert healths[2] == "unhealthy" and healths[4] == "healthy"


def test_failed_restore(repo):
    repo.eng.fail_ups = 2
    b = pulumi_backend(repo)
    outcome = execute(b, plan_rollback(b), timing())
    assert isinstance(outcome, FailedRestoreFailed)
    assert "deploy CLI exited 1" in outcome.restore_error


def _entry(version: int, **kw) -> HistoryEntry:
    base = dict(version=version, kind="update", result="succeeded", start_time=None, end_time=None,
                message=f"v{version}", environment={})
    base.update(kw)
    return HistoryEntry(**base)


@pytest.mark.parametrize("entry, reason", [
    (_entry(2), "recorded no git commit"),
    (_entry(2, environment={"git.head": "f" * 40}), "is not in this repository"),
    (_entry(2, environment={"git.head": "HEAD", "git.dirty": "true"}), "ran from a dirty working tree"),
    (_entry(2, environment={"git.head": "HEAD"}, config={"jobs:apiKey": "[secret]"},
            config_secrets=("jobs:apiKey",)), "had secret config"),
])
def test_updates_that_cannot_be_reapplied_are_not_targets(repo, entry, reason):
    if entry.environment.get("git.head") == "HEAD":
        entry = HistoryEntry(**{**entry.__dict__, "environment": {**entry.environment,
                                                                   "git.head": repo.commits[0]}})
    repo.eng.stacks["prod"].history = [_entry(3, environment={"git.head": repo.commits[2]}), entry]
    with pytest.raises(RollbackRefused, match=reason):
        plan_rollback(pulumi_backend(repo), to_revision=2)
    with pytest.raises(RollbackRefused, match="no revision older than the serving one"):
        plan_rollback(pulumi_backend(repo))


def test_config_document_keeps_the_secrets_provider_keys(tmp_path):
    f = tmp_path / "Pulumi.prod.yaml"
    f.write_text("secretsprovider: gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k\n"
                 "encryptedkey: Q0lQSEVS\nconfig:\n  jobs:old: 1\n")
    doc = YAML(typ="safe").load(config_document(f, {"jobs:b": "2", "jobs:a": "1"}))
    assert doc == {"secretsprovider": "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k",
                   "encryptedkey": "Q0lQSEVS", "config": {"jobs:a": "1", "jobs:b": "2"}}
