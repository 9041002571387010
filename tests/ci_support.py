"""Helpers shared by the tests of ``clusterstack ci``: git repositories with real commits,
fake engines per project, and preview results of every severity in the engine's real types."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from clusterstack.engine.errors import StackLockedError
from helpers import REPO, commit_all, edit, git, make_repo  # noqa: F401  (re-used by the ci tests)
from fakes.pulumi import FakeEngine, FakeStack, np_step, res_step
from clusterstack.engine.model import Diagnostic, PreviewResult
from clusterstack.pulumi.tokens import ADDRESS

IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
SECRET_VERSION = "gcp:secretmanager/secretVersion:SecretVersion"

# the redaction canary: none of these may appear in anything CI writes
CANARY_EMAIL = "alice.canary@lab.example"
CANARY_LOCAL = "alice.canary"
CANARY_TOKEN = "ghp_" + "C4n4ryT0k3n" * 3 + "abc"               # GitHub token shape (40 chars)
CANARY_KEYED = "cf-canary-token-7d1f0a9e3b"                     # no known shape: under a secret key
CANARY_ENV = "env-canary-passphrase-5c2e81"                     # only known as an env var's value


def verdict_doc(*, ops: dict | None = None, violations: list | tuple = (),
                destructive: list | tuple = ()) -> dict:
    """A ``meta.json`` ``guard``: the verdict document (clusterstack.verdict/v1) as ``ci preview``
    writes it, computed by the real view from steps of the given ops."""
    from clusterstack.guard import Verdict, Violation
    from clusterstack.pulumi.steps import Step
    from clusterstack.views.verdict import verdict_json

    ops = {"update": 1} if ops is None else ops
    steps = [Step(op=op, urn=f"urn:pulumi:x::p::t:m:T::{op}{i}", type="t:m:T")
             for op, n in sorted(ops.items()) for i in range(n)]
    v = Verdict(violations=tuple(Violation(urn=x["urn"], type=x.get("type", ""), op=x["op"], reasons=(),
                                           rule=x.get("rule", "r"), hint="h") for x in violations),
                destructive=tuple((d["op"], d["urn"]) for d in destructive))
    return verdict_json(v, steps, source="x", input_format="engine")






def blocked_steps(stack: str) -> tuple:
    return (np_step("same", stack, "cwdemo-cpu-general"),
            np_step("replace", stack, "cwdemo-h100",
                    changed={"instanceType": ("gd-8xh100ib-i128", "gd-8xh200ib-i128")},
                    replace_keys=("spec.instanceType",)))


def delete_steps(stack: str) -> tuple:
    """An allowed destructive change: a retained static address deleted."""
    from clusterstack.pulumi.steps import Step
    from fakes.pulumi import urn

    return (Step(op="delete", urn=urn(stack, ADDRESS, "old-ingress"), type=ADDRESS,
                 old_retain_on_delete=True, old_inputs={"name": "old-ingress", "region": "us-central1"}),
            res_step("same", stack, ADDRESS, "controller-ingress"))


def change_steps(stack: str) -> tuple:
    return (np_step("same", stack, "cwdemo-cpu-general"),
            np_step("update", stack, "cwdemo-h100", changed={"maxNodes": (16, 24)}))


def canary_steps(stack: str) -> tuple:
    """Steps carrying the canary email and tokens in the places real previews carry them."""
    return (
        res_step("create", stack, IAM_MEMBER, "viewer-alice",
                 new={"member": f"user:{CANARY_EMAIL}", "role": "roles/viewer", "project": "demo-project"}),
        res_step("update", stack, "kubernetes:apps/v1:Deployment", "relay",
                 old={"spec": {"template": {"spec": {"containers": [
                     {"name": "relay", "env": [{"name": "GITHUB_TOKEN", "value": "old"}]}]}}}},
                 new={"spec": {"template": {"spec": {"containers": [
                     {"name": "relay", "env": [{"name": "GITHUB_TOKEN", "value": CANARY_TOKEN}]}]}}}},
                 detailed_diff={"spec.template.spec.containers[0].env[0].value": {"kind": "update"}}),
        res_step("update", stack, "cloudflare:index/dnsRecord:DnsRecord", "api",
                 old={"apiToken": "previous-token-value", "content": "34.16.10.20"},
                 new={"apiToken": CANARY_KEYED, "content": "34.16.10.21"},
                 detailed_diff={"apiToken": {"kind": "update"}, "content": {"kind": "update"}}),
        res_step("create", stack, SECRET_VERSION, "passphrase",
                 new={"secret": "pulumi-passphrase", "secretData": CANARY_ENV}),
        res_step("create", stack, "kubernetes:core/v1:Secret", "relay-env",
                 new={"metadata": {"name": "relay-env"}, "stringData": {"PASSPHRASE": CANARY_ENV}}),
    )


class CanaryEngine(FakeEngine):
    """A FakeEngine whose previews also report diagnostics that quote the canaries."""

    def preview(self, stack, *, refresh=False, targets=()):
        res = super().preview(stack, refresh=refresh, targets=targets)
        diags = (Diagnostic("warning", f"member user:{CANARY_EMAIL} is outside the lab domain"),
                 Diagnostic("error", f"provider rejected token {CANARY_TOKEN} and password={CANARY_KEYED}"))
        return PreviewResult(stack=res.stack, steps=res.steps, counts=res.counts, stdout=res.stdout,
                             diagnostics=diags)


def severity_engine(stacks: list[str]) -> FakeEngine:
    """cw-demo-h100 blocked, gcp-demo delete (allowed), cw-demo-gb200 change, gcp-tpu-a locked
    (error), the rest clean."""
    eng = FakeEngine({s: FakeStack() for s in stacks})
    eng.stacks["cw-demo-h100"].steps = blocked_steps("cw-demo-h100")
    eng.stacks["gcp-demo"].steps = delete_steps("gcp-demo")
    eng.stacks["cw-demo-gb200"].steps = change_steps("cw-demo-gb200")
    eng.fail("preview", "gcp-tpu-a", StackLockedError("gcp-tpu-a"))
    return eng


class BarrierEngine(FakeEngine):
    """A FakeEngine whose previews record how many run at once; with ``barrier`` each preview
    waits until that many are running together (proves concurrency without timing)."""

    def __init__(self, stacks, barrier: int | None = None) -> None:
        super().__init__(stacks)
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.barrier = threading.Barrier(barrier, timeout=30) if barrier else None

    def preview(self, stack, *, refresh=False, targets=()):
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.barrier is not None:
                self.barrier.wait()
            return super().preview(stack, refresh=refresh, targets=targets)
        finally:
            with self._lock:
                self.active -= 1

