"""Commands load only what they use: the commands that plan nothing import neither ``pulumi``
nor a provider SDK, and a stack's plan imports only the provider SDKs its resources need (each
checked in a fresh interpreter's ``sys.modules``)."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO

SDKS = ("pulumi", "pulumi_cloudflare", "pulumi_gcp", "pulumi_kubernetes")

_PROBE = """
import contextlib, io, json, sys
from clusterstack.cli import main
out = []
for args in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
    out.append([args, code, loaded])
print(json.dumps(out))
"""


def probe(tmp_path, *commands: list[str]) -> list[tuple[list[str], int, list[str]]]:
    """Run ``commands`` one after another in one fresh interpreter (cwd: the repository);
    after each, the exit code and which of :data:`SDKS` are in ``sys.modules``. Modules
    only accumulate, so a clean entry means every command up to it was clean."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(commands)),
                           json.dumps(SDKS)], cwd=REPO, capture_output=True, text=True,
                          check=True)
    return [tuple(row) for row in json.loads(proc.stdout)]


def test_commands_that_plan_nothing_import_no_sdk(tmp_path):
    empty = tmp_path / "previews"
    empty.mkdir()
    matrix = '{"include":[{"stack":"gcp-demo"}]}'
    rows = probe(tmp_path, ["--help"], ["validate"], ["validate", "cw-demo-h100"],
                 ["guard", "tests/fixtures/pulumi/preview-clean.json"],
                 ["iam", "check"], ["ci", "comment", str(empty), "--matrix", matrix])
    assert [(args[:2], code) for args, code, _ in rows] == [
        (["--help"], 0), (["validate"], 0), (["validate", "cw-demo-h100"], 0),
        (["guard", "tests/fixtures/pulumi/preview-clean.json"], 0), (["iam", "check"], 0),
        (["ci", "comment"], 0)]
    assert [loaded for _, _, loaded in rows] == [[]] * len(rows)


def test_a_stack_plan_imports_only_the_sdks_it_declares(tmp_path):
    """The CoreWeave stack's one DNS record is declared by type token: planning it loads
    pulumi and the Kubernetes SDK, not pulumi_cloudflare (nor GCP's)."""
    ((_, code, loaded),) = probe(tmp_path, ["plan", "cw-demo-h100"])
    assert code == 0
    assert loaded == ["pulumi", "pulumi_kubernetes"]


def test_the_dns_record_carries_the_sdk_version():
    """The version sent without the SDK is the one the SDK itself sends."""
    from pulumi_cloudflare import _utilities

    from clusterstack.components.dns import provider_version

    assert provider_version() == _utilities.get_version()
