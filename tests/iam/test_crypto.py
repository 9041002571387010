"""Principal encryption: determinism, binding to the associated data, keyset storage (local
0600 and Cloud KMS-wrapped through Tink's gcpkms integration against a fake KMS), redaction."""

from __future__ import annotations

import base64
import json
import stat

import pytest
import tink
from google.api_core import exceptions as gexc
from tink import aead, daead

from clusterstack.iam.crypto import (KEYSET_AD, PRINCIPAL_AD, KeysetError, PrincipalCipher, ciphertext_key_id,
                                     load_cipher, normalize_kms_uri, store_cipher)
from clusterstack.adapters.kms import GcpKms
from clusterstack.iam.model import Encryption
from fakes.gcp_api import FakeKms
from clusterstack.redact import redact_email, redact_member, redact_text

KEY_NAME = "projects/kms-project/locations/global/keyRings/iam/cryptoKeys/principals"


def test_same_email_same_ciphertext_and_normalization():
    c = PrincipalCipher.generate()
    a = c.encrypt("alice@example.org")
    assert c.encrypt("alice@example.org") == a
    assert c.encrypt("  Alice@Example.ORG ") == a          # one person, one ciphertext
    assert c.encrypt("user:alice@example.org") == a
    assert c.encrypt("bob@example.org") != a
    assert c.decrypt(a) == "alice@example.org"
    assert ciphertext_key_id(a) == c.primary_key_id


def test_ciphertexts_hide_the_exact_email_length():
    c = PrincipalCipher.generate()
    lengths = {len(c.encrypt(e)) for e in ("a@b.example", "alice.smith@example.org", "x" * 20 + "@example.org")}
    assert len(lengths) == 1


def test_another_keyset_gives_another_ciphertext_and_cannot_decrypt():
    c1, c2 = PrincipalCipher.generate(), PrincipalCipher.generate()
    ct = c1.encrypt("alice@example.org")
    assert c2.encrypt("alice@example.org") != ct
    with pytest.raises(KeysetError) as ei:
        c2.decrypt(ct, pid="human-001")
    assert "human-001" in ei.value.render() and str(c1.primary_key_id) in ei.value.render()


def test_ciphertext_is_bound_to_the_fixed_associated_data():
    c = PrincipalCipher.generate()
    raw = base64.b64decode(c.encrypt("alice@example.org"))
    primitive = c._handle.primitive(daead.DeterministicAead)
    assert primitive.decrypt_deterministically(raw, PRINCIPAL_AD).rstrip(b"\0") == b"alice@example.org"
    with pytest.raises(tink.TinkError):
        primitive.decrypt_deterministically(raw, b"another purpose")


def test_non_email_is_refused():
    with pytest.raises(ValueError):
        PrincipalCipher.generate().encrypt("not-an-email")


def test_local_keyset_is_0600_and_round_trips(tmp_path):
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset=".iam/keyset.json")
    c = PrincipalCipher.generate()
    path = store_cipher(c, enc, tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = load_cipher(enc, tmp_path)
    assert again.decrypt(c.encrypt("alice@example.org")) == "alice@example.org"
    with pytest.raises(KeysetError, match="keyset file not found"):
        load_cipher(Encryption(scheme="tink-daead-aes256-siv", keyset="missing.json"), tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    (tmp_path / "bad.json").chmod(0o600)
    with pytest.raises(KeysetError, match="not a Tink keyset"):
        load_cipher(Encryption(scheme="tink-daead-aes256-siv", keyset="bad.json"), tmp_path)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o666])
def test_a_cleartext_keyset_others_can_read_or_write_is_refused(tmp_path, mode):
    # OpenSSH's rule for private keys (authfile.c sshkey_perm_ok): own file, mode & 077 -> refused
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset=".iam/keyset.json")
    path = store_cipher(PrincipalCipher.generate(), enc, tmp_path)
    path.chmod(mode)
    with pytest.raises(KeysetError, match=f"readable or writable by others \\(mode 0{mode:o}\\)") as ei:
        load_cipher(enc, tmp_path)
    assert ei.value.exit_code == 2 and "chmod 600" in str(ei.value)
    path.chmod(0o400)   # owner-only read is fine
    load_cipher(enc, tmp_path)


def test_a_kms_wrapped_keyset_may_be_world_readable(tmp_path):
    # it is committed on purpose (store_cipher writes it 0644): only KMS can unwrap it
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset="iam/keyset.kms.json",
                     kms_key="gcp-kms://projects/p/locations/global/keyRings/r/cryptoKeys/k")
    from clusterstack.iam.crypto import check_keyset_mode

    (tmp_path / "iam").mkdir()
    (tmp_path / "iam" / "keyset.kms.json").write_text("{}")
    (tmp_path / "iam" / "keyset.kms.json").chmod(0o644)
    with pytest.raises(KeysetError, match="cannot decrypt|not a Tink"):   # judged on content, not mode
        load_cipher(enc, tmp_path, kms_aead=lambda uri: (_ for _ in ()).throw(ValueError("no kms")))
    with pytest.raises(KeysetError):
        check_keyset_mode(tmp_path / "iam" / "keyset.kms.json")   # the rule itself would refuse it


def test_kms_uri_forms():
    assert normalize_kms_uri(f"gcpkms://{KEY_NAME}") == f"gcp-kms://{KEY_NAME}"
    assert normalize_kms_uri(f"gcp-kms://{KEY_NAME}") == f"gcp-kms://{KEY_NAME}"
    with pytest.raises(KeysetError):
        normalize_kms_uri("gcpkms://projects/p/keyRings/r")




@pytest.fixture
def fake_kms():
    """The fake KMS API client (no credentials, no network), reset; the tests hand it to the
    production adapter, ``GcpKms(make_client=FakeKms)`` — Tink's real Cloud KMS wiring."""
    FakeKms.keys, FakeKms.calls, FakeKms.deny = {}, [], False
    return FakeKms


def test_kms_wrapped_keyset_through_tinks_gcpkms_integration(tmp_path, fake_kms):
    """The production wiring (crypto.gcp_kms_aead → tink.integration.gcpkms) against a fake
    KMS; a real Cloud KMS round-trip cannot run here (no credentials, no network)."""
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset="iam/keyset.kms.json",
                     kms_key=f"gcp-kms://{KEY_NAME}")
    c = PrincipalCipher.generate()
    kms = GcpKms(make_client=fake_kms)     # the adapter Clients.kms holds, over the fake client
    path = store_cipher(c, enc, tmp_path, kms_aead=kms)
    stored = json.loads(path.read_text())
    assert "encryptedKeyset" in stored and "key" not in stored   # no cleartext key material
    assert stat.S_IMODE(path.stat().st_mode) == 0o644          # safe to commit
    ct = c.encrypt("alice@example.org")
    assert load_cipher(enc, tmp_path, kms_aead=kms).decrypt(ct) == "alice@example.org"
    assert {op for op, _, _ in fake_kms.calls} == {"encrypt", "decrypt"}
    assert {(name, ad) for _, name, ad in fake_kms.calls} == {(KEY_NAME, KEYSET_AD)}
    fake_kms.deny = True
    with pytest.raises(KeysetError, match="cannot decrypt the keyset with gcp-kms://"):
        load_cipher(enc, tmp_path, kms_aead=kms)


def test_keyset_from_another_kms_key_does_not_load(tmp_path, fake_kms):
    enc = Encryption(scheme="tink-daead-aes256-siv", keyset="k.json", kms_key=f"gcp-kms://{KEY_NAME}")
    kms = GcpKms(make_client=fake_kms)
    store_cipher(PrincipalCipher.generate(), enc, tmp_path, kms_aead=kms)
    other = enc.model_copy(update={"kms_key": f"gcp-kms://{KEY_NAME}-2"})
    with pytest.raises(KeysetError):
        load_cipher(other, tmp_path, kms_aead=kms)


def test_serialized_keyset_is_json_and_key_material_not_in_messages(tmp_path):
    c = PrincipalCipher.generate()
    text = c.serialize(None)
    key_value = json.loads(text)["key"][0]["keyData"]["value"]
    err = None
    try:
        PrincipalCipher.generate().decrypt(c.encrypt("alice@example.org"))
    except KeysetError as exc:
        err = exc.render()
    assert err and key_value not in err and "alice" not in err


def test_redaction():
    assert redact_email("alice.smith@example.org") == "a***@example.org"
    assert redact_email("nonsense") == "n***"
    assert redact_member("user:bob@corp.example") == "user:b***@corp.example"
    assert redact_member("serviceAccount:ci@p.iam.gserviceaccount.com") == "serviceAccount:ci@p.iam.gserviceaccount.com"
    text = "granted to alice@corp.example and ci@p.iam.gserviceaccount.com"
    assert redact_text(text, keep=("gserviceaccount.com",)) == \
        "granted to a***@corp.example and ci@p.iam.gserviceaccount.com"
