"""Benchmark of the IAM file's hot paths at lab scale.

Usage: ``uv run python bench/iam_bench.py [--people 500] [--buckets 100]``. Builds, in a
temporary directory, an IAM file with N people (each on the project and on a few of B buckets,
some through conditional grants) and measures in this process:

- Tink deterministic AEAD: encrypt and decrypt per principal (µs);
- load (parse + validate + cross-entry rules) and canonical write of the whole file (ms);
- one ``grant`` of a new person end to end (read keyset, encrypt, edit, canonical dump,
  re-validate, atomic write) (ms);
- ``review`` of a change touching 10 people between two texts, decrypting only those (ms);
- the component under Pulumi mocks for the whole file (s).

Prints one JSON document; docs/performance.md records the results and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    start = time.perf_counter()
    for _ in range(repeat):
        result = fn()
    t = (time.perf_counter() - start) / repeat
    print(f"  {t:8.3f}s  {getattr(fn, '__name__', '')}", file=sys.stderr)
    return t, result


def build(root: Path, people: int, buckets: int) -> None:
    from clusterstack.iam.crypto import PrincipalCipher, store_cipher
    from clusterstack.iam.model import Encryption

    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    (root / "iam").mkdir()
    cipher = PrincipalCipher.generate()
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset=".iam/keyset.json")
    store_cipher(cipher, enc, root)
    lines = ["schema_version: 1", "project: demo-project", "encryption:",
             "  scheme: tink-daead-aes256-siv", "  keyset: .iam/keyset.json", "principals:"]
    for i in range(1, people + 1):
        lines.append(f"  human-{i:03d}: {cipher.encrypt(f'person{i}@example.org')}")
    lines += ["project_grants:", "  - role: roles/viewer", "    members:"]
    lines += [f"      - human-{i:03d}" for i in range(1, people + 1)]
    lines.append("buckets:")
    for b in range(buckets):
        lines += [f"  - name: bucket-{b:04d}", "    grants:", "      - role: roles/storage.objectViewer",
                  "        members:"]
        lines += [f"          - human-{i:03d}" for i in range(1, people + 1) if i % buckets == b or i % 7 == b % 7]
        lines += ["      - role: roles/storage.objectAdmin", "        members:",
                  f"          - human-{(b % people) + 1:03d}", "        condition:",
                  "          title: until 2027", '          expression: request.time < timestamp("2027-01-01T00:00:00Z")']
    from clusterstack.iam.canonical import canonical_text
    from clusterstack.iam.loader import parse_document

    path = root / "iam" / "iam.yaml"
    path.write_text(canonical_text(parse_document("\n".join(lines) + "\n", path)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--people", type=int, default=500)
    ap.add_argument("--buckets", type=int, default=100)
    args = ap.parse_args()
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from clusterstack.iam import canonical, ops
    from clusterstack.iam.crypto import load_cipher
    from clusterstack.iam.loader import load_iam, load_iam_text, parse_document
    from clusterstack.iam.review import review
    from clusterstack.iam.settings import IamSettings
    from clusterstack.workspace import Workspace

    result: dict[str, object] = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                             "cpus": os.cpu_count()},
                                 "people": args.people, "buckets": args.buckets}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.people, args.buckets)
        path = root / "iam" / "iam.yaml"
        text = path.read_text()
        result["file_kib"] = round(len(text.encode()) / 1024, 1)
        loaded = load_iam(path)
        result["bindings"] = len(loaded.bindings())
        result["member_entries"] = sum(len(b.members) for b in loaded.bindings())
        cipher = load_cipher(loaded.model.encryption, root)
        cts = list(loaded.model.principals.values())
        t, _ = timed(lambda: [cipher.encrypt(f"person{i}@example.org") for i in range(200)])
        result["encrypt_us"] = round(t / 200 * 1e6, 1)
        t, _ = timed(lambda: [cipher.decrypt(ct) for ct in cts[:200]])
        result["decrypt_us"] = round(t / min(200, len(cts)) * 1e6, 1)
        t, _ = timed(lambda: load_iam_text(text, path), repeat=3)
        result["load_ms"] = round(t * 1e3, 1)
        t, out = timed(lambda: canonical.canonical_text(parse_document(text, path)), repeat=3)
        assert out == text, "the synthetic file is not canonical"
        result["canonical_write_ms"] = round(t * 1e3, 1)
        settings = IamSettings.from_workspace(Workspace.load(root))
        t, _ = timed(lambda: ops.grant(settings, "newcomer@example.org", "roles/storage.objectViewer",
                                       "bucket:bucket-0001"))
        result["grant_new_person_ms"] = round(t * 1e3, 1)
        head = path.read_text()
        for i in range(2, 12):
            ops.grant(settings, f"person{i}@example.org", "roles/storage.objectAdmin", "bucket:bucket-0002",
                      condition_title="until 2027")
        changed = path.read_text()
        t, rv = timed(lambda: review(head, changed, base_label="base", head_label="head", cipher=cipher))
        result["review_10_changes_ms"] = round(t * 1e3, 1)
        result["review_lines"] = len(rv.changes)

        import pulumi

        from clusterstack.components.gcp import kinds
        from clusterstack.components.gcp.iam import IamBindings
        from clusterstack.programs.iam import iam_args
        from clusterstack.plan import run_program

        final = load_iam(path)
        def program():
            principals = {p: pulumi.Output.secret("user:x@example.org") for p in final.model.principals}
            IamBindings("iam", iam_args(final, principals), provider=kinds.provider("gcp", project="demo-project"))

        t, plan = timed(lambda: run_program("clusterstack", "bench", {}, program))
        result["component_plan_s"] = round(t, 2)
        result["component_resources"] = len(plan.resources)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
