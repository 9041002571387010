"""Property values: normalising Pulumi's wire values for plans, and masking secrets.

``[secret]`` is how Pulumi itself shows a secret (``pulumi preview``, ``stack export`` without
``--show-secrets``); ``[unknown]`` is clusterstack's plan spelling of a value unknown until
deployment (Pulumi's CLI prints ``output<string>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterstack.pulumi.wire import OUTPUT_SIG, RESOURCE_SIG, SECRET_SIG, SIG_KEY, UNKNOWN_SENTINEL

SECRET = "[secret]"
UNKNOWN = "[unknown]"


def plan_value(value: Any) -> Any:
    """A Pulumi property value (protobuf JSON of a RegisterResource request, or a state file's
    inputs/outputs) → plan value: secrets ``[secret]``, unknowns ``[unknown]``, resource
    references ``{"urn": …}``, output values unwrapped, integral floats → int, mapping keys
    sorted. Signatures: :mod:`clusterstack.pulumi.wire`."""
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SECRET_SIG:
            return SECRET
        if sig == RESOURCE_SIG:
            return {"urn": value.get("urn")}
        if sig == OUTPUT_SIG:
            if value.get("secret"):
                return SECRET
            return plan_value(value["value"]) if "value" in value else UNKNOWN
        return {k: plan_value(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [plan_value(v) for v in value]
    if value == UNKNOWN_SENTINEL:
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def mask(value: Any) -> Any:
    """Replace every special-value object (``{SIG_KEY: …}``, at any depth) by ``[secret]``.

    Fail closed: an envelope this code does not render (an output value marked secret, an
    asset) may carry a secret, so every one is masked, not only ``SECRET_SIG``."""
    if isinstance(value, Mapping):
        if SIG_KEY in value:
            return SECRET
        return {k: mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value


def mask_pair(old: Any, new: Any, *, absent: Any = None) -> tuple[Any, Any]:
    """The two sides of a change, both ``[secret]`` when either is: a change must not reveal a
    secret's old or new value by showing the other side. A side that is ``absent`` (no value)
    stays absent."""
    if SECRET in (old, new):
        return (old if old is absent else SECRET, new if new is absent else SECRET)
    return old, new
