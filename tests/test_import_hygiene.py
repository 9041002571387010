"""Commands load only what they use: the commands that plan nothing import neither ``pulumi``
nor a provider SDK, and a stack's plan imports only the provider SDKs its resources need (checked
in one fresh interpreter's ``sys.modules`` after each command: the commands that plan nothing
first, the plan last)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def probe(*commands: list[str]) -> list[tuple[list[str], int, list[str]]]:
    """Run ``commands`` one after another in one fresh interpreter (cwd: the repository);
    after each, the exit code and which of :data:`SDKS` are in ``sys.modules``. Modules
    only accumulate, so a clean entry means every command up to it was clean."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(commands)),
                           json.dumps(SDKS)], cwd=REPO, capture_output=True, text=True,
                          check=True)
    return [tuple(row) for row in json.loads(proc.stdout)]


PLAN_NOTHING_MATRIX = '{"include":[{"stack":"gcp-demo"}]}'


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[tuple[list[str], int, list[str]]]:
    """One fresh interpreter for both tests below: first the commands that plan nothing, then
    ``plan cw-demo-h100``. Modules only accumulate, so the plan's entry lists what the plan
    added to an interpreter in which (as the first entries show) no SDK was loaded yet."""
    empty = tmp_path_factory.mktemp("previews")
    return probe(["--help"], ["validate"], ["validate", "cw-demo-h100"],
                 ["guard", "tests/fixtures/pulumi/preview-clean.json"],
                 ["iam", "check"], ["ci", "comment", str(empty), "--matrix", PLAN_NOTHING_MATRIX],
                 ["plan", "cw-demo-h100"])


def test_commands_that_plan_nothing_import_no_sdk(rows):
    nothing = rows[:-1]
    assert [(args[:2], code) for args, code, _ in nothing] == [
        (["--help"], 0), (["validate"], 0), (["validate", "cw-demo-h100"], 0),
        (["guard", "tests/fixtures/pulumi/preview-clean.json"], 0), (["iam", "check"], 0),
        (["ci", "comment"], 0)]
    assert [loaded for _, _, loaded in nothing] == [[]] * len(nothing)


def test_a_stack_plan_imports_only_the_sdks_it_declares(rows):
    """The CoreWeave stack's one DNS record is declared by type token: planning it loads
    pulumi and the Kubernetes SDK, not pulumi_cloudflare (nor GCP's)."""
    before, (args, code, loaded) = rows[-2][2], rows[-1]
    assert args == ["plan", "cw-demo-h100"] and code == 0
    assert before == []                      # no SDK loaded before the plan ran
    assert loaded == ["pulumi", "pulumi_kubernetes"]


def test_the_root_help_imports_no_command_module():
    """``clusterstack --help`` lists the commands from the root group's registry
    (``clusterstack.cli.SUBCOMMANDS``): no command's module — hence no flow, no model, no
    pydantic — is imported for it."""
    probe_help = ("import contextlib, io, sys\n"
                  "from clusterstack.cli import main\n"
                  "with contextlib.redirect_stdout(io.StringIO()):\n"
                  "    code = main(['--help'])\n"
                  "print(code, *sorted(m for m in sys.modules if m.startswith(('clusterstack.cli.', "
                  "'clusterstack.flows', 'pydantic'))))")
    proc = subprocess.run([sys.executable, "-c", probe_help], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert proc.stdout.split() == ["0", "clusterstack.cli.help"]


def test_the_dns_record_carries_the_sdk_version():
    """The version sent without the SDK is the one the SDK itself sends: the SDK's own
    ``_utilities.get_version()`` (pulumi_cloudflare/_utilities.py ``_get_semver_version``, which
    derives it from its module name and the installed distribution), loaded alone — the
    package's ``__init__`` imports every resource module (~3 CPU-s) and takes no part in it."""
    import importlib.util

    from clusterstack.components.dns import provider_version

    package = importlib.util.find_spec("pulumi_cloudflare")        # found, not imported
    spec = importlib.util.spec_from_file_location(
        "pulumi_cloudflare._utilities", Path(package.origin).with_name("_utilities.py"))
    utilities = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utilities)
    assert provider_version() == utilities.get_version()


def test_the_buckets_plan_declares_its_r2_and_gcs_buckets_without_their_sdks():
    """The buckets stack's R2 and GCS buckets, their lifecycles, locks, grants and providers
    are declared by type token (components/buckets.py, components/gcp/kinds.py): importing
    ``pulumi_cloudflare`` and ``pulumi_gcp`` for them loaded ~780 and ~716 modules, whose
    bytecode was most of what the first `make demo` compiled. The plan is the same (the golden
    tests/golden/buckets-lab.json, tests/programs/test_buckets.py)."""
    [(args, code, loaded)] = probe(["plan", "--project", "buckets"])
    assert code == 0 and loaded == ["pulumi"]     # of SDKS: no pulumi_cloudflare, no pulumi_gcp


def test_the_gcp_stack_plan_imports_no_provider_sdk():
    """Every resource of the GCP project stack (addresses, registry mirrors, the load balancer,
    IAM, its DNS records) is declared by type token: its plan loads neither provider SDK.
    (``pulumi_kubernetes``, whose package imports its modules lazily, comes with the cluster
    program's module.)"""
    [(args, code, loaded)] = probe(["plan", "gcp-demo"])
    assert code == 0 and "pulumi_gcp" not in loaded and "pulumi_cloudflare" not in loaded
