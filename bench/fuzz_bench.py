"""A longer fuzz run of the loaders and parsers: no input may end in an internal error.

Usage: ``uv run python bench/fuzz_bench.py [--configs 300] [--documents 3000] [--seed N]``.

Two parts, both in-process:

1. **configs** — the property of tests/validation/test_agreement.py on many more inputs: each
   input is one mutation of a shipped reviewed file (tests/mutations.py: a line deleted or
   repeated, a value retyped, a bad byte, the file cut short) in a fresh workspace copy, then
   ``validate`` and the plan that reads the file. Counted as a failure: an exit code other than
   0 or 2, a traceback, or validate ok while plan refuses.
2. **documents** — random byte-level mutations (flip, delete, insert a JSON token, a deep
   nesting, a long number, a bad byte, a cut) of the Pulumi documents clusterstack parses: the
   recorded previews and event streams in tests/fixtures/pulumi and tests/fixtures/engine,
   Pulumi's own lifecycle-test event streams under ../shared/reference (when present), the
   state files in tests/fixtures/state and the golden import files; each goes through the
   parser that reads it (``pulumi.documents.parse_text``, ``pulumi.state.load_state``,
   ``pulumi.importfile.parse``). Counted as a failure: any exception that is not a
   ClusterstackError (exit 2).

Prints the counts and every failure with its input; exits 1 when there is any.
Results: docs/performance.md ("Fuzz run of the loaders and parsers").
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

TOKENS = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"null", b"true", b"-", b"1e999",
          b"9" * 40, b"\xff", b"\x00", b"\\u0000", b"\\ud800", b'"urn"', b"[" * 5000, b"\n"]


def _mutate(data: bytes, rnd: random.Random) -> bytes:
    for _ in range(rnd.randint(1, 4)):
        op = rnd.randrange(5)
        i = rnd.randrange(len(data) + 1) if data else 0
        if op == 0 and data:          # flip a byte
            i = min(i, len(data) - 1)
            data = data[:i] + bytes([rnd.randrange(256)]) + data[i + 1:]
        elif op == 1:                 # delete a range
            data = data[:i] + data[i + rnd.randint(1, 64):]
        elif op == 2:                 # insert a token
            data = data[:i] + rnd.choice(TOKENS) + data[i:]
        elif op == 3:                 # cut short
            data = data[:i]
        else:                         # repeat a range
            j = min(len(data), i + rnd.randint(1, 200))
            data = data[:j] + data[i:j] + data[j:]
    return data


def _documents() -> list[tuple[str, Path]]:
    """(parser, file) of every document fuzzed, sorted for a stable run."""
    out = [("steps", p) for d in ("fixtures/pulumi", "fixtures/engine")
           for p in sorted((ROOT / "tests" / d).rglob("*.json*"))]
    from k8s_schemas import reference_dir  # the one locator of ../shared/reference

    base = reference_dir()
    ref = base / "pulumi" / "pkg" / "engine" / "lifecycletest" if base is not None else None
    if ref is not None and ref.is_dir():
        streams = sorted(ref.rglob("eventstream.json"))
        out += [("steps", p) for p in streams[::max(1, len(streams) // 60)]]
    out += [("state", p) for p in sorted((ROOT / "tests" / "fixtures" / "state").glob("*.json"))]
    out += [("import", p) for p in sorted((ROOT / "tests" / "golden").glob("import-*.json"))]
    return out


def fuzz_documents(n: int, seed: int) -> tuple[dict[str, int], list[str]]:
    from clusterstack.errors import ClusterstackError
    from clusterstack.pulumi.documents import parse_text
    from clusterstack.pulumi.importfile import parse as parse_import
    from clusterstack.pulumi.state import load_state

    rnd = random.Random(seed)
    docs = [(kind, p, p.read_bytes()) for kind, p in _documents()]
    counts = {"inputs": 0, "accepted": 0, "refused (exit 2)": 0, "files": len(docs)}
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "doc.json"
        for k in range(n):
            kind, path, original = docs[k % len(docs)]
            data = _mutate(original, rnd)
            counts["inputs"] += 1
            try:
                if kind == "state":
                    scratch.write_bytes(data)
                    load_state(scratch)
                else:
                    text = data.decode("utf-8", errors="strict")
                    (parse_text if kind == "steps" else parse_import)(text)
                counts["accepted"] += 1
            except UnicodeDecodeError:
                counts["refused (exit 2)"] += 1   # the CLI's reader refuses it (config.document.decode)
            except ClusterstackError:
                counts["refused (exit 2)"] += 1
            except Exception:  # noqa: BLE001 - what the fuzz run looks for
                failures.append(f"{kind} {path} (input {k}, seed {seed}):\n"
                                + traceback.format_exc(limit=6))
    return counts, failures


def fuzz_configs(n: int, seed: int) -> tuple[dict[str, int], list[str]]:
    from hypothesis import HealthCheck, given, seed as hseed, settings

    from mutations import agreement, mutations

    counts = {"inputs": 0, "validate ok": 0, "validate refused": 0, "plan ok": 0, "plan refused": 0}
    failures: list[str] = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutations())
    def run(mutation) -> None:
        outcome = agreement(mutation)
        counts["inputs"] += 1
        counts["validate ok" if outcome.validate_rc == 0 else "validate refused"] += 1
        counts["plan ok" if outcome.plan_rc == 0 else "plan refused"] += 1
        if outcome.problems:
            failures.append(f"{mutation}: {outcome.problems}\n{outcome.output[-1500:]}")

    run()
    return counts, failures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=300)
    ap.add_argument("--documents", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    failures: list[str] = []
    for name, fn, n in (("documents", fuzz_documents, args.documents), ("configs", fuzz_configs, args.configs)):
        if n <= 0:
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        counts, failed = fn(n, args.seed)
        print(f"{name}: {counts}, failures {len(failed)}; "
              f"{time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU", flush=True)
        failures += failed
    for f in failures:
        print("FAILURE", f, sep="\n", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
