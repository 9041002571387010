"""Outside calls only in adapters (docs/architecture.md "Outside systems"):
the client SDK of an outside system — and the HTTP transport under it (``urllib3``,
``requests``), whose errors are the adapter's to sort — is imported only in ``adapters/`` (GCP,
Kubernetes, GitHub, KMS), the Pulumi Automation API only in the engine adapter (``engine/automation.py``),
and the Pulumi program SDK and its providers only on the program side (``programs/`` — the
program registry —, the ``components/`` they declare, the mock runtime that runs them in
``plan/runtime.py``, and the two helpers that make a program's values). Checked on the source
with ``ast`` (imports inside functions and under ``TYPE_CHECKING`` count too)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import parsed

SRC = Path(__file__).resolve().parent.parent / "src" / "clusterstack"

#: top-level import name (or dotted prefix) → where it may be imported (path prefixes under
#: src/clusterstack), and why
RULES: dict[str, tuple[tuple[str, ...], str]] = {
    # the outside systems' client SDKs: one adapter each
    "google.cloud": (("adapters/",), "GCP and KMS clients: adapters/gcp.py, adapters/kms.py"),
    "google.api_core": (("adapters/",), "GCP errors and retries: adapters/gcp.py"),
    "google.auth": (("adapters/",), "GCP credentials: adapters/gcp.py"),
    "google.oauth2": (("adapters/",), "GCP credentials: adapters/gcp.py"),
    "kubernetes": (("adapters/",), "the Kubernetes API: adapters/kubernetes.py"),
    "github": (("adapters/",), "the GitHub API (PyGithub): adapters/github.py"),
    "tink.integration": (("adapters/",), "Cloud KMS through Tink: adapters/kms.py"),
    "google_crc32c": (("adapters/",), "Secret Manager's payload checksum: adapters/gcp.py"),
    # the HTTP transports under the clients: their errors are the adapters' to sort
    "urllib3": (("adapters/",), "the Kubernetes client's transport: adapters/kubernetes.py"),
    "requests": (("adapters/",), "the REST transport of the GCP and GitHub clients: adapters/"),
    # the Pulumi CLI: the engine adapter
    "pulumi.automation": (("engine/automation.py",), "the engine adapter runs the Pulumi CLI"),
    # the program side: the Pulumi SDK and its providers
    "pulumi": (("programs/", "components/", "plan/runtime.py", "engine/automation.py",
                "secrets.py", "pulumi/importids.py"),
               "programs and their components; the mock runtime; Output/import-ID helpers"),
    "pulumi_": (("programs/", "components/"), "provider SDKs: only the programs declare resources"),
    # declared by type token (components/bytoken.py): their SDKs' packages import every module
    "pulumi_gcp": ((), "GCP resources are declared by type token: components/gcp/kinds.py"),
    "pulumi_cloudflare": ((), "Cloudflare resources are declared by type token: components/dns.py"),
}


def imported_names() -> list[tuple[str, int, str]]:
    """``(path under src/clusterstack, line, imported module)`` of every absolute import."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for n in ast.walk(parsed(path)):
            if isinstance(n, ast.Import):
                out += [(rel, n.lineno, a.name) for a in n.names]
            elif isinstance(n, ast.ImportFrom) and not n.level and n.module:
                out.append((rel, n.lineno, n.module))
                out += [(rel, n.lineno, f"{n.module}.{a.name}") for a in n.names]
    return out


def rule_of(module: str) -> str | None:
    """The most specific :data:`RULES` key covering ``module`` (``pulumi_`` covers the
    provider packages ``pulumi_gcp``, ``pulumi_kubernetes``, …)."""
    keys = [k for k in RULES if module == k or module.startswith(k + ".")
            or (k.endswith("_") and module.startswith(k))]
    return max(keys, key=len) if keys else None


def violations() -> list[str]:
    out = []
    for rel, line, module in imported_names():
        key = rule_of(module)
        if key and not rel.startswith(RULES[key][0]):
            out.append(f"src/clusterstack/{rel}:{line}: {module} — {RULES[key][1]}")
    return sorted(set(out))


def test_outside_sdks_are_imported_only_by_their_adapters():
    assert violations() == []


def test_the_rules_cover_what_they_claim():
    assert rule_of("google.cloud.run_v2") == "google.cloud"
    assert rule_of("pulumi.automation._cmd") == "pulumi.automation"
    assert rule_of("pulumi_kubernetes") == "pulumi_"
    assert rule_of("pulumi_gcp.compute") == "pulumi_gcp"
    assert rule_of("pulumi_cloudflare") == "pulumi_cloudflare"
    assert rule_of("pulumi") == "pulumi"
    assert rule_of("tink") is None            # Tink's local AEAD: a library, not a system
    assert rule_of("googleish") is None
    assert rule_of("urllib3.exceptions") == "urllib3"
    assert rule_of("google_crc32c") == "google_crc32c"
