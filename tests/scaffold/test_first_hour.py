"""Getting to the first plan, end to end through the process boundary (the thing
tested: a new lab types these commands into a shell): from an empty directory, the lab of the
issue — 24 nodes of 8×B200 and 4 CPU nodes, a cluster of 6 GB200 NVL72 racks, one GCP project
with a controller behind IAP, one service — reaches `validate` and `plan --all` with no
hand-written file and at most one failed command (here: the one that names `--racks`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

CLI = Path(sys.executable).parent / "clusterstack"   # the console script pip installs
IMAGE = ("us-central1-docker.pkg.dev/lab-project/apps/dashboard@sha256:"
         "3f1c9a6e2b7d4c8a9e0f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60")


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    cmd = [str(CLI)] if CLI.is_file() else [sys.executable, "-c", "from clusterstack.cli import entrypoint; entrypoint()"]
    return subprocess.run([*cmd, *argv], cwd=cwd, capture_output=True, text=True, timeout=300)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_new_lab_reaches_its_first_plan_with_no_hand_written_file(tmp_path):
    runs: list[subprocess.CompletedProcess] = []

    def cs(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
        proc = _run(cwd, *argv)
        runs.append(proc)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    init = cs(tmp_path, "init", "lab", "--cluster", "cw-b200", "--provider", "coreweave",
              "--region", "US-EAST-13A", "--instance-type", "b200-8x", "--nodes", "24",
              "--cpu-instance-type", "cd-gp-i64-erapids", "--cpu-nodes", "4",
              "--acme-email", "ops@lab.example.org", "--allow-source", "203.0.113.0/24",
              "--dns-zone-id", "0123456789abcdef0123456789abcdef",
              "--dns-token", "gcp-secret://projects/lab-project/secrets/cloudflare-token/versions/latest")
    assert init.returncode == 0, init.stderr
    lab = tmp_path / "lab"
    written = {ln.removeprefix("wrote ") for ln in init.stdout.splitlines() if ln.startswith("wrote ")}
    # the one failed command: a rack-scale type sized in nodes that are not whole racks, answered
    # in flags (not `max_slices × num_vms`), nothing written
    before = _files(lab)
    wrong = cs(lab, "cluster", "new", "cw-gb200", "--provider", "coreweave", "--region", "US-EAST-08A",
               "--instance-type", "gb200-4x", "--nodes", "100")
    assert wrong.returncode == 2 and _files(lab) == before
    assert wrong.stderr.splitlines() == [
        "error: --nodes 100 is not a whole number of 18-node NVL72 racks of gb200-4x — pass --racks 6 "
        "(108 nodes) or --racks 5 (90 nodes)"]
    # the lab-wide values (ACME contact, allowed sources, DNS zone and token) came from init
    for argv in (("cluster", "new", "cw-gb200", "--provider", "coreweave", "--region", "US-EAST-08A",
                  "--instance-type", "gb200-4x", "--racks", "6"),
                 ("cluster", "new", "gcp-lab", "--provider", "gcp", "--project", "lab-project",
                  "--project-number", "123456789012", "--controller-zone", "us-central1-a",
                  "--iap-domain", "ctl.lab.example.org"),
                 ("service", "new", "dashboard", "--region", "us-central1", "--image", IMAGE),
                 ("iam", "init"),
                 ("iam", "grant", "group:ml-ops@lab.example.org", "--role", "roles/viewer")):
        proc = cs(lab, *argv)
        assert proc.returncode == 0, (argv, proc.stderr)
        written |= {ln.removeprefix("wrote ") for ln in proc.stdout.splitlines() if ln.startswith("wrote ")}
    validate = cs(lab, "validate")
    assert validate.returncode == 0, validate.stderr
    assert validate.stdout.startswith("ok: 3 cluster config(s)")
    plan = cs(lab, "plan", "--all", "--json")
    assert plan.returncode == 0, plan.stderr
    assert sum(p.returncode != 0 for p in runs) == 1
    # every file of the workspace was written by a command (none by hand)
    made_by_iam = {"iam/iam.yaml", ".iam/keyset.json"}
    assert _files(lab) - {".iam.yaml.lock", "iam/.iam.yaml.lock", ".clusterstack.toml.lock"} <= written | made_by_iam

    doc = json.loads(plan.stdout[plan.stdout.index("{"):])
    stacks = {s["stack"]: s for s in doc["stacks"]}
    assert set(stacks) == {"cw-b200", "cw-gb200", "gcp-lab"}

    def pools(stack: str) -> dict:
        return {r["name"]: r["inputs"]["spec"] for r in stacks[stack]["resources"] if r["type"].endswith(":NodePool")}

    def gpu_quota(stack: str) -> int:
        (queue,) = [r for r in stacks[stack]["resources"] if r["type"].endswith(":ClusterQueue")]
        return sum(int(res["nominalQuota"]) for g in queue["inputs"]["spec"]["resourceGroups"]
                   for f in g["flavors"] for res in f["resources"] if res["name"] == "nvidia.com/gpu")

    b200 = pools("cw-b200")
    assert (b200["cwb200-b200"]["instanceType"], b200["cwb200-b200"]["maxNodes"]) == ("b200-8x", 24)
    assert (b200["cwb200-cpu"]["instanceType"], b200["cwb200-cpu"]["maxNodes"]) == ("cd-gp-i64-erapids", 4)
    assert gpu_quota("cw-b200") == 24 * 8
    gb200 = pools("cw-gb200")["cwgb200-gb200"]
    assert (gb200["instanceType"], gb200["targetRacks"]) == ("gb200-4x", 6)
    assert gpu_quota("cw-gb200") == 6 * 18 * 4        # 432: the hardware's, from the table
    types = {r["type"] for r in stacks["gcp-lab"]["resources"]}
    assert {"gcp:compute/backendService:BackendService", "gcp:iap/settings:Settings",
            "gcp:compute/globalForwardingRule:GlobalForwardingRule"} <= types
    # the lab's own CI: no lock file needed, clusterstack installed by pip
    workflows = [lab / ".github" / "workflows" / f"{n}.yaml" for n in ("preview", "drift", "deployment-check")]
    assert all(w.is_file() for w in workflows) and not (lab / "uv.lock").exists()
    assert not any("uv " in w.read_text() or "uv.lock" in w.read_text() for w in workflows)
    assert (lab / "requirements-clusterstack.txt").read_text().splitlines()[-1].startswith("clusterstack")
    if shutil.which("git"):
        (lab / ".venv" / "lib").mkdir(parents=True)
        (lab / ".venv" / "lib" / "x.py").write_text("")
        subprocess.run(["git", "init", "-q"], cwd=lab, check=True)
        staged = subprocess.run(["git", "add", "-A", "--dry-run"], cwd=lab, capture_output=True, text=True,
                                check=True).stdout
        assert ".venv" not in staged and ".iam/" not in staged
