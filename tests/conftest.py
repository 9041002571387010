"""Shared fixtures: the repository root and a throw-away copy of the workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import REPO


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def workspace_copy(tmp_path: Path) -> Path:
    """A copy of clusterstack.toml, clusters/, infra/ and the [projects] dirs in a temp dir
    (safe to edit)."""
    from helpers import copy_workspace

    return copy_workspace(tmp_path / "ws")


from regen_golden import EXAMPLE_STACKS  # noqa: E402  (the three shipped example stacks)


@pytest.fixture(scope="session")
def example_plans():
    """Offline plans of the three shipped example stacks, by stack name (planned once per run:
    importing the Pulumi providers costs seconds, each further stack milliseconds)."""
    from clusterstack.plan import plan_stack

    return {stack: plan_stack(REPO / "infra", stack) for stack in EXAMPLE_STACKS}


@pytest.fixture(scope="session")
def coreweave_stacks(example_plans, tmp_path_factory):
    """Every shipped CoreWeave stack, by name → (plan, cluster config, the workspace's
    conventions): the examples (cw-demo-h100, cw-demo-gb200, cw-demo-teams), Marin's four CoreWeave clusters
    (examples/marin planned on its configs from ../shared/reference/marin, when present) and
    what ``clusterstack init`` writes for a new lab (H100 by nodes, GB200 by racks). Planned once
    per run."""
    from clusterstack.cli import main
    from clusterstack.plan import plan_stack
    from clusterstack.validation import load_cluster
    from clusterstack.workspace import Workspace
    from k8s_schemas import reference_dir

    out = {}
    ws = Workspace.load(REPO)
    for name in ("cw-demo-h100", "cw-demo-gb200", "cw-demo-teams"):
        out[name] = (example_plans[name], load_cluster(ws, name).config, ws.conventions)
    ref = reference_dir()
    configs = ref / "marin" / "lib" / "iris" / "config" if ref else None
    if configs is not None and configs.is_dir():
        root = tmp_path_factory.mktemp("marin-ws") / "marin"
        shutil.copytree(REPO / "examples" / "marin", root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
        for cfg in configs.glob("*.yaml"):
            shutil.copy(cfg, root / "lib" / "iris" / "config" / cfg.name)
        mws = Workspace.load(root)
        for name in ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a"):
            out[name] = (plan_stack(mws.project_dir, name), load_cluster(mws, name).config, mws.conventions)
    # what `init` writes for a new lab: an InfiniBand H100 cluster and a GB200 NVL72 one
    for cluster, sizing in (("cw-new-lab", ["--instance-type", "gd-8xh100ib-i128", "--nodes", "4"]),
                            ("cw-new-gb", ["--instance-type", "gb200-4x", "--racks", "2"])):
        lab = tmp_path_factory.mktemp("init") / "lab"
        assert main(["init", str(lab), "--cluster", cluster, "--provider", "coreweave", "--region", "US-EAST-04A",
                     *sizing, "--acme-email", "ops@example.org", "--allow-source", "203.0.113.10"]) == 0
        lws = Workspace.load(lab)
        out[f"init:{cluster}"] = (plan_stack(lws.project_dir, cluster), load_cluster(lws, cluster).config,
                                  lws.conventions)
    return out


@pytest.fixture(scope="session")
def plan_all_output():
    """``plan_all_output(*flags)``: stdout of ``clusterstack --root <repo> plan --all *flags``
    (exit 0 asserted), run once per flag set and process: several modules read the same
    shipped plans as text or JSON, and each run plans every stack of every project again."""
    import contextlib
    import io

    from clusterstack.cli import main

    runs: dict[tuple[str, ...], str] = {}

    def output(*flags: str) -> str:
        if flags not in runs:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main(["--root", str(REPO), "plan", "--all", *flags]) == 0
            runs[flags] = buf.getvalue()
        return runs[flags]

    return output


#: The test modules that plan the bucket project (directly, or through ``plan --all``,
#: ``diff --all``, ``validate`` then ``plan``; found by recording which tests run
#: ``clusterstack.programs.buckets.declare``). A process that runs one imports pulumi_cloudflare
#: (~2–3 CPU-s: its ``__init__`` imports every resource module), pulumi_coreweave and
#: pulumi_github. pytest-xdist's worksteal scheduler (xdist/scheduler/worksteal.py
#: ``check_schedule``) hands each worker a contiguous share of the collected order and steals
#: from the end of a queue, so these modules, collected first, run on the first worker and the
#: other workers never import those SDKs. A module missing here costs seconds, never a result.
SDK_HEAVY_MODULES = (
    "tests/programs/test_buckets.py", "tests/flows/test_diff_projects.py",
    "tests/plan/test_at_ref.py", "tests/plan/test_runtime.py", "tests/cli/test_commands.py",
    "tests/cli/test_diff.py", "tests/config/test_buckets.py", "tests/programs/test_github.py",
    "tests/pulumi/test_vocabulary.py", "tests/validation/test_agreement.py",
    "tests/validation/test_validate.py",
)


def pytest_collection_modifyitems(items):
    """The :data:`SDK_HEAVY_MODULES` first, each module's tests in their own order (the same
    order in every worker, as xdist requires)."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in SDK_HEAVY_MODULES)
