"""The plan tree is never cropped: piped (CI logs, `make demo` under a runner) every label is
printed whole, however long; on a terminal a long label folds inside the tree."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console

from helpers import REPO
from clusterstack.plan import plan_stack
from clusterstack.plan.render import render_tree


def test_a_piped_plan_prints_every_label_whole():
    """The process boundary is the thing tested: stdout is a pipe, as in CI and `make demo`."""
    run = subprocess.run([sys.executable, "-c", "from clusterstack.cli import entrypoint; entrypoint()", "--root", str(REPO), "plan", "gcp-demo"],
                         capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    iap = [ln for ln in lines if "-iap-settings  [" in ln]
    assert iap and all(ln.endswith("accessSettings.oauthSettings.clientSecretSha256]") for ln in iap)
    long_member = [ln for ln in lines if "sa-ci-deployer-iam-workloadidentityuser" in ln]
    assert long_member and all(ln.endswith("-repository-example-lab-clusterstack") for ln in long_member)
    assert max(map(len, lines)) > 200   # past the old fixed width of 200, uncut


def test_on_a_terminal_a_long_label_folds_and_keeps_every_character():
    plan = plan_stack(REPO / "infra", "gcp-demo")
    buf = io.StringIO()
    Console(file=buf, width=100, soft_wrap=True, color_system=None).print(render_tree(plan))
    text = buf.getvalue()
    assert max(map(len, text.splitlines())) <= 100
    joined = "".join(ln.strip("│├└─ ") for ln in text.splitlines())
    assert "accessSettings.oauthSettings.clientSecretSha256]" in joined
