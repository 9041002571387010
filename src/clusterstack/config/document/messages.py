"""pydantic's errors in the reviewed file's words: one table of hints, and messages without
regexes or class names."""

from __future__ import annotations

from pydantic_core import ErrorDetails

from clusterstack.config.types import PATTERN_RULES


HINTS: dict[str, str] = {
    "missing": "add this field",
    "extra_forbidden": "remove it or fix its spelling; {strict}",
    "string_pattern_mismatch": "fix the value's format",
    "too_short": "a list here needs at least one entry; remove the entry instead of emptying it",
    "string_too_long": "shorten it",
}
DEFAULT_HINT = "fix the value"


def hint_for(error: ErrorDetails, *, strict: str) -> str:
    """The hint of one pydantic error (``error["type"]`` and its ``ctx``). ``strict`` says
    which fields of the file are strict (for unknown keys)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if isinstance(ctx.get("hint"), str) and ctx["hint"]:   # a validator that knows what to do
        return ctx["hint"]
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        return "use one of the allowed values" if " or " in expected else "use the allowed value"
    if kind == "union_tag_invalid":
        tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        return f"set {str(ctx.get('discriminator', '')).strip(chr(39))} to {' or '.join(tags)}"
    return HINTS.get(kind, DEFAULT_HINT).format(strict=strict)


def _plain_message(error: ErrorDetails, message: str) -> str:
    """A pydantic message in the reviewed file's words: a pattern's rule instead of its
    regex, "a list" instead of "a valid tuple" (no regexes or class names in errors)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        rule = PATTERN_RULES.get(str(ctx.get("pattern", "")))
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "…"
        return f"{shown} is not {rule}" if rule else f"{shown} is not in the expected format"
    if kind in ("tuple_type", "list_type", "set_type", "frozen_set_type"):
        return "must be a list"
    if kind == "is_instance_of":
        return "has the wrong type"
    return message


def one_message(messages: list[str]) -> str:
    """The messages of the members of one union refusing one value, as one: ``Input should be a
    valid integer`` + ``Input should be a valid number`` → ``Input should be a valid integer or
    a valid number`` (duplicates once, order kept)."""
    unique = list(dict.fromkeys(messages))
    lead = "Input should be "
    if all(m.startswith(lead) for m in unique):
        return lead + " or ".join(m.removeprefix(lead) for m in unique)
    return "; or ".join(unique)
