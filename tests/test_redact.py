"""The one email rule for public text, on non-ASCII addresses too (an ASCII-only pattern used
to leave the start of ``jürgen@…`` in the clear and miss IDN domains)."""

from __future__ import annotations

import pytest

from clusterstack.redact import EMAIL_RE, redact_text


@pytest.mark.parametrize("text,want", [
    ("owner jürgen@example.org", "owner j***@example.org"),
    ("alice@bücher.example granted", "a***@bücher.example granted"),
    ("x 李雷@例子.公司 y", "x 李***@例子.公司 y"),
    ("Ωmega.ß@δ.gr", "Ω***@δ.gr"),
    ("a.b@example.xn--p1ai", "a***@example.xn--p1ai"),
    ("user:bob@lab.example,", "user:b***@lab.example,"),
    ("'zoë@lab.example'", "'z***@lab.example'"),
    ("ci@p.iam.gserviceaccount.com", "ci@p.iam.gserviceaccount.com"),     # a machine stays readable
    ("no email @ here, a@b, @handle", "no email @ here, a@b, @handle"),
])
def test_every_address_is_redacted_whole(text, want):
    assert redact_text(text) == want


def test_no_character_of_a_non_ascii_local_part_but_the_first_survives():
    for email in ("jürgen.müller@example.org", "ñandú@lab.example", "ирина@пример.рф"):
        out = redact_text(f"member {email} is outside the lab domain")
        local = email.split("@")[0]
        assert local[1:] not in out and out.startswith(f"member {local[0]}***@")
        assert EMAIL_RE.search(email).group(0) == email
