"""Mutations of the shipped reviewed files, and the agreement of validate and plan on them —
shared by the property test (tests/validation/test_agreement.py, bounded examples) and the
longer fuzz run (bench/fuzz_bench.py).

A mutation is a small, plausible edit of one shipped file: delete a line, repeat a line (a
duplicate key), retype a value (a list, a number, a boolean, an empty or a very long string
where something else was), insert a byte that is not UTF-8 or a control character, or cut the
file short. :func:`agreement` applies one to a fresh workspace copy and runs, in-process,
``validate`` and ``plan`` of the stack(s) that read the file, returning what each said.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

#: The shipped reviewed files mutated, each with the plan that reads it (``plan`` arguments).
TARGETS: dict[str, tuple[str, ...]] = {
    "clusters/cw-demo-h100.yaml": ("cw-demo-h100",),
    "clusters/gcp-demo.yaml": ("gcp-demo",),
    "clusters/gcp-tpu-a.yaml": ("gcp-tpu-a",),
    "clusterstack.toml": ("cw-demo-h100",),
    "infra/Pulumi.cw-demo-h100.yaml": ("cw-demo-h100",),
    "infra/Pulumi.yaml": ("gcp-tpu-a",),
    "iam/iam.yaml": ("gcp-demo",),
    "buckets/buckets.yaml": ("--project", "buckets"),
    "github/github.yaml": ("--project", "github"),
}

#: Values a line's value is replaced with: other types, blanks, extremes, names too long for
#: any cloud, a path out of the repository.
VALUES = ("", "0", "-1", "5", "99999999999999999999999999", "1.5", "true", "null", "[]", "[1, 2]",
          "{}", "{a: 1}", "'2'", '"x"', "a" * 300, "../../../../etc/passwd", "'h100\\n'", "~",
          "[a, b, a]", "my project")


@dataclass(frozen=True)
class Mutation:
    """One edit of ``target``: ``op`` at ``line`` (0-based, taken modulo the line count) with
    ``value`` (a replacement value, or the bytes inserted)."""

    target: str
    op: str
    line: int
    value: str | bytes = ""

    def apply(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        i = self.line % len(lines)
        if self.op == "delete":
            del lines[i]
        elif self.op == "repeat":
            lines.insert(i, lines[i])
        elif self.op == "retype":
            line = lines[i]
            for sep in (b": ", b" = "):
                if sep in line:
                    key = line.split(sep, 1)[0]
                    value = str(self.value).encode()
                    if sep == b" = ":  # TOML wants quoted strings
                        value = value if value[:1] in b"[{\"'0123456789-" or value in (b"true", b"false") \
                            else b'"' + value + b'"'
                    lines[i] = key + sep + value
                    break
            else:
                lines[i] = line + b" " + str(self.value).encode()
        elif self.op == "bytes":
            line = lines[i]
            at = len(line) // 2
            lines[i] = line[:at] + bytes(self.value) + line[at:]
        elif self.op == "cut":
            return b"\n".join(lines[:i])
        return b"\n".join(lines)


def mutations() -> st.SearchStrategy[Mutation]:
    """Hypothesis strategy of :class:`Mutation` over :data:`TARGETS`."""
    target = st.sampled_from(sorted(TARGETS))
    line = st.integers(min_value=0, max_value=400)
    simple = st.builds(Mutation, target, st.sampled_from(["delete", "repeat", "cut"]), line)
    retype = st.builds(Mutation, target, st.just("retype"), line, st.sampled_from(VALUES))
    raw = st.builds(Mutation, target, st.just("bytes"), line,
                    st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\x1b[31m", b"\t", b"\r", b"\xef\xbb\xbf"]))
    return st.one_of(simple, retype, raw)


@dataclass(frozen=True)
class Outcome:
    """What ``validate`` and ``plan`` said about one mutated workspace."""

    mutation: Mutation
    validate_rc: int
    plan_rc: int
    output: str  # stdout and stderr of both, for the traceback check and the failure report

    @property
    def problems(self) -> list[str]:
        """The ways this outcome breaks the contract (empty when it holds)."""
        out = []
        if self.validate_rc not in (0, 2):
            out.append(f"validate exited {self.validate_rc}")
        if self.plan_rc not in (0, 2):
            out.append(f"plan exited {self.plan_rc}")
        if self.validate_rc == 0 and self.plan_rc != 0:
            out.append("validate said ok but plan refused")
        if "Traceback" in self.output:
            out.append("a traceback was printed")
        return out


def _run(root: Path, *argv: str) -> tuple[int, str]:
    from clusterstack.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--root", str(root), *argv])
    return rc, out.getvalue() + err.getvalue()


def agreement(mutation: Mutation) -> Outcome:
    """Apply ``mutation`` to a fresh copy of the shipped workspace (clusters, infra, [projects],
    the IAM file) and run ``validate`` and ``plan <its stacks>`` in-process. Nothing outside
    the temporary copy is written."""
    from helpers import copy_workspace

    with tempfile.TemporaryDirectory() as tmp:
        root = copy_workspace(Path(tmp) / "ws")
        path = root / mutation.target
        path.write_bytes(mutation.apply(path.read_bytes()))
        vrc, vout = _run(root, "validate")
        prc, pout = _run(root, "plan", *TARGETS[mutation.target])
    return Outcome(mutation, vrc, prc, vout + pout)
