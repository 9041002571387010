"""The one comparison every catalogue test makes: the plan of ``examples/marin`` declares each
object of a kind exactly as Marin's program does (tests/marin/catalogue.py), and no object of
that kind Marin does not declare. A failure names each differing object, the top-level keys
that differ and the Marin sources of the expected values."""

from __future__ import annotations

from typing import Any

from marin.catalogue import Expected, catalogue, plan_key

CW_STACKS = ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a", "cw-us-west-04a")


def expected(stack: str, cfg: dict, kind: str) -> dict[tuple[str, str, str], Expected]:
    return {e.key: e for e in catalogue(stack, cfg) if e.kind == kind}


def planned(plan: Any, kind: str) -> dict[tuple[str, str, str], Any]:
    return {k: r for r in plan.resources if (k := plan_key(r)) is not None and k[0] == kind}


def problems(plan: Any, stack: str, cfg: dict, kind: str, *, options: bool = False) -> list[str]:
    """Every way the plan's objects of ``kind`` differ from Marin's (empty: exact).
    ``options``: also compare ``ignoreChanges`` (it changes what Pulumi diffs)."""
    want, got = expected(stack, cfg, kind), planned(plan, kind)
    out = []
    for key, e in sorted(want.items()):
        if e.name is None:
            out.append(f"{stack}: {kind} in {key[1]}: Marin declares one; its name is not known "
                       f"({'; '.join(map(str, e.sources))})")
            continue
        r = got.get(key)
        if r is None:
            out.append(f"{stack}: {key} is declared by Marin, not by the plan ({'; '.join(map(str, e.sources))})")
        elif r.inputs != e.inputs:
            keys = sorted(k for k in set(r.inputs) | set(e.inputs) if r.inputs.get(k) != e.inputs.get(k))
            out.append(f"{stack}: {key} differs in {keys}: plan {_show(r.inputs, keys)} != Marin "
                       f"{_show(e.inputs, keys)} ({'; '.join(map(str, e.sources))})")
        elif options and list(r.ignore_changes) != e.options.get("ignoreChanges", []):
            out.append(f"{stack}: {key} ignoreChanges {list(r.ignore_changes)} != Marin's "
                       f"{e.options.get('ignoreChanges', [])}")
    for key in sorted(set(got) - set(want)):
        out.append(f"{stack}: {key} is declared by the plan; Marin does not run it")
    return out


def _show(inputs: dict, keys: list[str]) -> dict:
    return {k: inputs.get(k) for k in keys}


def assert_exact(plan: Any, stack: str, cfg: dict, kind: str, **kw: bool) -> None:
    found = problems(plan, stack, cfg, kind, **kw)
    assert not found, "\n".join(found)
