"""The shared constrained types that carry a Kubernetes rule: a label or taint key (a qualified
name, Kubernetes "Labels and Selectors": ``[<DNS subdomain ≤ 253>/]<name ≤ 63>``, the name
alphanumeric at both ends with ``-_.`` inside), property-tested against that grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st
from pydantic import TypeAdapter, ValidationError

from clusterstack.config.types import KubernetesQualifiedName, OptionalQualifiedName

KEY = TypeAdapter(KubernetesQualifiedName)
OPTIONAL = TypeAdapter(OptionalQualifiedName)

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
names = st.builds(lambda a, mid, b: a + mid + b, st.sampled_from(_ALNUM),
                  st.text(alphabet=_ALNUM + "-_.", max_size=20), st.sampled_from(_ALNUM))
prefixes = st.lists(_label, min_size=1, max_size=4).map(".".join)


@given(st.one_of(names, st.builds(lambda p, n: f"{p}/{n}", prefixes, names)))
def test_every_qualified_name_is_accepted(key):
    assert KEY.validate_python(key) == key


@given(names, st.sampled_from([" ", "!", "/", "=", ":", "é"]), st.integers(min_value=0, max_value=3))
def test_a_character_outside_the_grammar_is_refused(name, bad, at):
    key = name[:at] + bad + name[at:]
    if bad == "/" and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", key):
        return   # a '/' can make a valid prefix/name pair
    with pytest.raises(ValidationError):
        KEY.validate_python(key)


@pytest.mark.parametrize("key", ["", "-gpu", "gpu-", "x" * 64, "UPPER.example/gpu", "a/b/c", "/gpu", "gpu/"])
def test_edges_are_refused(key):
    with pytest.raises(ValidationError):
        KEY.validate_python(key)


def test_the_optional_form_takes_the_empty_string_only_as_none():
    assert OPTIONAL.validate_python("") == ""
    assert OPTIONAL.validate_python("nvidia.com/gpu") == "nvidia.com/gpu"
    assert KEY.validate_python("x" * 63) == "x" * 63
    with pytest.raises(ValidationError):
        OPTIONAL.validate_python(" ")
