"""Fixtures of the adoption tests: the recorded-format Marin fixtures (tests/fixtures/adoption,
see its README) and the Marin example workspace planned with Marin's published configs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from k8s_schemas import reference_dir

REPO = Path(__file__).resolve().parents[2]
ADOPTION = REPO / "tests" / "fixtures" / "adoption"
EXAMPLE = REPO / "examples" / "marin"
REF = reference_dir()
CONFIGS = REF / "marin" / "lib" / "iris" / "config" if REF else None
MARIN_STACKS = ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a", "marin")

needs_marin = pytest.mark.skipif(
    CONFIGS is None or not CONFIGS.is_dir(),
    reason="Marin's published configs are not in ../shared/reference/marin/lib/iris/config")


def marin_dumps(*names: str) -> list[Path]:
    """Paths of the recorded dumps of tests/fixtures/adoption."""
    return [ADOPTION / n for n in names]


CW_DUMPS = ("cw-us-west-04a.kubectl.yaml", "cw-us-west-04a.helm.yaml", "cw-us-west-04a.cloudflare.json")


@pytest.fixture(scope="session")
def marin_root(tmp_path_factory) -> Path:
    """A copy of examples/marin with Marin's configs (as the runbook tells an operator to)."""
    if CONFIGS is None or not CONFIGS.is_dir():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    root = tmp_path_factory.mktemp("marin-adopt") / "marin"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
    for name in MARIN_STACKS:
        text = (CONFIGS / f"{name}.yaml").read_text(encoding="utf-8")
        # the fixtures write Marin's ACME mailbox at the documentation domain (README there)
        text = re.sub(r"(acme_email:\s*)\S+", r"\1ops@example.org", text)
        (root / "lib/iris/config" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def marin_plans(marin_root):
    """``{stack: plan}`` of the CoreWeave stack the fixtures record and the GCP stack."""
    from clusterstack.plan import plan_stack

    return {s: plan_stack(marin_root / "infra" / "clusterstack", s) for s in ("cw-us-west-04a", "marin")}
