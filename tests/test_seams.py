"""Honest imports (docs/architecture.md "The seams"): an import of
``clusterstack.*`` sits at module top unless it is at one of the declared seams below, where
deferring it keeps something out of a run that does not need it — a cloud/Pulumi SDK, or (for
the CLI's root group) the workspace loader out of ``--help``.

:data:`SEAMS` is THE list of them; the test fails on an in-function internal import anywhere
else, on a seam that no longer defers anything (a stale entry), and when the count rises above
:data:`CEILING` (measured, ``bench/import_counts.py``). The CLI's commands are not among them:
the root group imports a command's module by name when that command is used
(:data:`clusterstack.cli.SUBCOMMANDS`), and each command module imports at its top.
``tests/test_import_hygiene.py`` checks the other side: that the commands which plan nothing
still import no SDK, and ``--help`` no command module."""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from pathlib import Path

from helpers import parsed

SRC = Path(__file__).resolve().parent.parent / "src" / "clusterstack"
sys.path.insert(0, str(SRC.parent.parent / "bench"))
_spec = importlib.util.spec_from_file_location("import_counts", SRC.parent.parent / "bench" / "import_counts.py")
import_counts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_counts)

#: module (a trailing ``.*``: the package's modules) or ``module:function`` → what deferring
#: the imports there keeps out of a run. Nothing else may import ``clusterstack.*`` inside a
#: function.
SEAMS: dict[str, str] = {
    # the commands: the root group (cli/__init__.py) is loaded for every run, --help included;
    # a command's module — its flows, models and views at its top — is imported by name when
    # that command is used (clusterstack.cli.SUBCOMMANDS: importlib, no import statement)
    "clusterstack.cli": "the root group: the workspace loader (pydantic) only when a command "
                        "reads the workspace or an error names a file",
    "clusterstack.cli.help": "name completion (help.py loads with the root group): the workspace, "
                             "services.yaml and schema loaders only when a shell completes a name",
    "clusterstack.engine:open_engine": "the engine factory: the Automation API (pulumi SDK)",
    # the programs: a project kind's build module and the provider components it declares
    "clusterstack.programs.*": "the program registry: a provider SDK only when its stack needs it",
    # the executable: signal handlers are armed before the CLI's own import
    "clusterstack.entry:main": "the executable: SIGINT/SIGTERM handled during the CLI's import",
    # planning runs the program under Pulumi's mock runtime: the pulumi SDK and the providers
    "clusterstack.flows.diff": "plan/: the Pulumi SDK's mock runtime, only when a diff plans",
    "clusterstack.flows.plan:plan": "plan/: the Pulumi SDK's mock runtime, only when planning",
    "clusterstack.deploy.service:rollout": "plan.runtime (pulumi SDK): only a Pulumi-stack service",
    # the local keyset: tink and Cloud KMS, only when a scan decrypts
    "clusterstack.iam.scan:run_scan": "iam.crypto: tink and Cloud KMS, only when a scan decrypts",
    "clusterstack.validation.iam:iam_problems": "validation.iap: the GCP secret adapter (google, tink) through secrets.py",
    # the plan cache also runs in the child under a REF's older package (plan/refproto.py)
    "clusterstack.plan.cache:write_atomic": "a REF's older package may lack fsutil.write_atomic (ImportError fallback)",
}

#: The measured count of in-function internal imports (bench/import_counts.py). Lower it when a
#: seam shrinks; never raise it.
CEILING = 29


@functools.cache
def deferred() -> tuple[tuple[str, str, int], ...]:
    """``(module, function, line)`` of every ``clusterstack.*`` import inside a function
    (found once per test process: the tests never edit ``src/``)."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        tree = parsed(path)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                internal = ((isinstance(n, ast.ImportFrom)
                             and (n.level or (n.module or "").startswith("clusterstack")))
                            or (isinstance(n, ast.Import)
                                and any(a.name.startswith("clusterstack") for a in n.names)))
                if internal and n is not fn:
                    out.append((module, fn.name, n.lineno))
    # a nested function's import is inside its outer function too: count it once, innermost
    seen: dict[tuple[str, int], str] = {}
    for module, fn, line in out:
        seen[(module, line)] = fn
    return tuple(sorted((m, f, ln) for (m, ln), f in seen.items()))


def seam_of(module: str, function: str) -> str | None:
    """The :data:`SEAMS` key covering ``function`` of ``module``, or None."""
    for key in (f"{module}:{function}", module):
        if key in SEAMS:
            return key
    parent = module.rsplit(".", 1)[0]
    while parent:
        if f"{parent}.*" in SEAMS:
            return f"{parent}.*"
        parent = parent.rsplit(".", 1)[0] if "." in parent else ""
    return None


def test_the_checker_matches_the_bench_count():
    assert len(deferred()) == import_counts.counts(SRC)["in_functions"]


def test_every_deferred_import_is_at_a_declared_seam():
    outside = [f"{m}:{f} (line {ln})" for m, f, ln in deferred() if seam_of(m, f) is None]
    assert outside == [], ("internal imports inside functions outside the declared seams — "
                           "hoist them to module top, or declare the seam in SEAMS with what "
                           "deferring keeps out:\n" + "\n".join(outside))


def test_no_seam_is_stale():
    used = {seam_of(m, f) for m, f, _ in deferred()}
    assert sorted(set(SEAMS) - used) == []


def test_the_count_holds():
    n = len(deferred())
    assert n <= CEILING, f"{n} in-function internal imports, more than the {CEILING} measured"


def test_seam_of_rejects_an_undeclared_place():
    assert seam_of("clusterstack.guard", "check") is None
    assert seam_of("clusterstack.cli.iam", "anything") is None
    assert seam_of("clusterstack.programs.cluster", "build_gcp") == "clusterstack.programs.*"
    assert seam_of("clusterstack.engine", "open_engine") == "clusterstack.engine:open_engine"
    assert seam_of("clusterstack.engine", "other") is None
