"""``clusterstack iam …`` end to end on a throw-away git repository: init, grant, revoke, whois,
decrypt, rotate, fmt, check and review."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from clusterstack.cli import main
from clusterstack.iam.loader import load_iam
from helpers import Repo, git, iam_workspace, line_of

REPO = Path(__file__).resolve().parents[2]
KMS_KEY = "projects/kms-project/locations/global/keyRings/iam/cryptoKeys/principals"





@pytest.fixture
def repo(tmp_path, capsys) -> Repo:
    root = iam_workspace(tmp_path / "repo")
    r = Repo(root, capsys)
    r.commit("init")
    r.ok("init")  # the project comes from the [iam] stack's cluster config (gcp-demo → demo-project)
    return r


def test_init_creates_a_private_ignored_keyset_and_refuses_twice(repo):
    assert stat.S_IMODE(repo.keyset.stat().st_mode) == 0o600
    assert git(repo.root, "status", "--porcelain", "--ignored", ".iam").startswith("!! .iam/")
    assert load_iam(repo.iam_file).model.project == "demo-project"
    rc, _, err = repo.cs("init")
    assert rc == 2 and "already initialised" in err


def test_init_refuses_a_keyset_git_would_track(tmp_path, capsys):
    root = tmp_path / "r"
    root.mkdir()
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    git(root, "init", "-q")
    rc = main(["--root", str(root), "iam", "init", "--project", "demo-project"])
    assert rc == 2 and "would not be git-ignored" in capsys.readouterr().err
    assert not (root / ".iam").exists() and not (root / "iam").exists()


def test_grant_registers_once_and_never_churns(repo):
    out = repo.ok("grant", "Alice@Example.org", "--role", "roles/viewer")
    assert out.splitlines() == ["registered user:a***@example.org (human-001)",
                                "+ user:a***@example.org (human-001) roles/viewer on project"]
    before = repo.iam_file.read_bytes()
    out = repo.ok("grant", "alice@example.org", "--role", "roles/viewer")   # same person, same grant
    assert out.startswith("= ") and repo.iam_file.read_bytes() == before
    repo.ok("grant", "bob@example.org", "--role", "roles/viewer")
    repo.ok("grant", "alice@example.org", "--role", "roles/storage.objectViewer", "--on", "bucket:demo-data")
    repo.ok("grant", "serviceAccount:ci@demo-project.iam.gserviceaccount.com", "--role",
            "roles/storage.objectViewer", "--on", "bucket:demo-data")
    m = load_iam(repo.iam_file).model
    assert sorted(m.principals) == ["human-001", "human-002"]
    assert m.project_grants[0].members == ["human-001", "human-002"]
    assert m.buckets[0].grants[0].members == ["human-001", "serviceAccount:ci@demo-project.iam.gserviceaccount.com"]
    assert "alice" not in repo.iam_file.read_text()
    assert all("alice@" not in o and "bob@" not in o for o in repo.outputs)  # printed redacted


def test_grant_with_condition_then_reuse_by_title(repo):
    expr = 'request.time < timestamp("2026-01-01T00:00:00Z")'
    repo.ok("grant", "alice@example.org", "--role", "roles/secretmanager.secretAccessor", "--on",
            "secret:hf-token", "--condition-title", "until 2026", "--condition-expression", expr)
    repo.ok("grant", "bob@example.org", "--role", "roles/secretmanager.secretAccessor", "--on",
            "secret:hf-token", "--condition-title", "until 2026")
    rc, _, err = repo.cs("grant", "bob@example.org", "--role", "roles/secretmanager.secretAccessor",
                         "--on", "secret:hf-token", "--condition-title", "until 2026",
                         "--condition-expression", "true")
    assert rc == 2 and "another expression" in err
    (g,) = load_iam(repo.iam_file).model.secrets[0].grants
    assert g.members == ["human-001", "human-002"] and g.condition.expression == expr


@pytest.mark.parametrize("args,msg", [
    (("user:", "--role", "roles/viewer"), "plaintext user: member"),
    (("robot:x", "--role", "roles/viewer"), "unknown member form"),
    (("human-007", "--role", "roles/viewer"), "human-007 is not a registered principal"),
    (("a@example.org", "--role", "viewer"), "not a role"),
    (("a@example.org", "--role", "roles/viewer", "--on", "disk:x"), "unknown target"),
])
def test_grant_argument_errors(repo, args, msg):
    before = repo.iam_file.read_bytes()
    rc, _, err = repo.cs("grant", *args)
    assert rc == 2 and msg in err and err.startswith("error: ")
    assert repo.iam_file.read_bytes() == before


def test_grant_refuses_a_keyset_that_did_not_encrypt_the_file(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    # init refuses to replace the keyset of a file with principals, so simulate a wrong
    # keyset handed over by mistake:
    from clusterstack.iam.crypto import PrincipalCipher, store_cipher

    store_cipher(PrincipalCipher.generate(), load_iam(repo.iam_file).model.encryption, repo.root)
    before = repo.iam_file.read_bytes()
    rc, _, err = repo.cs("grant", "alice@example.org", "--role", "roles/editor")
    assert rc == 2 and "did not encrypt the principals" in err
    assert repo.iam_file.read_bytes() == before


def test_revoke(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.ok("grant", "alice@example.org", "--role", "roles/storage.objectViewer", "--on", "bucket:demo-data")
    assert repo.ok("revoke", "ALICE@example.org", "--role", "roles/storage.objectViewer", "--on",
                   "bucket:demo-data").strip() == \
        "- user:a***@example.org (human-001) roles/storage.objectViewer on bucket:demo-data"
    m = load_iam(repo.iam_file).model
    assert m.buckets == [] and "human-001" in m.principals   # emptied target gone, person stays
    rc, _, err = repo.cs("revoke", "human-001", "--role", "roles/editor")
    assert rc == 2 and "nothing to revoke" in err
    rc, _, err = repo.cs("revoke", "nobody@example.org", "--role", "roles/viewer")
    assert rc == 2 and "is not a registered principal" in err


def test_whois_and_decrypt(repo, tmp_path):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.ok("grant", "bob@example.org", "--role", "roles/viewer", "--on", "bucket:demo-data")
    assert repo.ok("whois", "human-002").splitlines() == ["human-002: user:bob@example.org",
                                                          "  roles/viewer on bucket:demo-data"]
    info = json.loads(repo.ok("whois", "human-001", "--json"))
    assert info == {"id": "human-001", "email": "alice@example.org",
                    "grants": [{"condition": None, "role": "roles/viewer", "target": "project"}]}
    assert repo.cs("whois", "human-003")[0] == 2
    inside = repo.root / "principals.json"
    rc, _, err = repo.cs("decrypt", "--out", str(inside))
    assert rc == 2 and "inside the repository" in err and not inside.exists()
    outside = tmp_path / "private" / "principals.json"
    outside.parent.mkdir()
    repo.ok("decrypt", "--out", str(outside))
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600
    assert json.loads(outside.read_text()) == {"human-001": "alice@example.org", "human-002": "bob@example.org"}


def test_whois_without_the_keyset_says_how_to_get_it(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.keyset.unlink()
    rc, _, err = repo.cs("whois", "human-001")
    assert rc == 2 and "keyset file not found" in err and "ask a key holder" in err


def test_rotate_keeps_every_reference(repo):
    for who, role, on in (("alice@example.org", "roles/viewer", "project"),
                          ("bob@example.org", "roles/storage.objectViewer", "bucket:demo-data"),
                          ("human-001", "roles/iam.serviceAccountUser", "sa:ci@demo-project.iam.gserviceaccount.com")):
        repo.ok("grant", who, "--role", role, "--on", on)
    cluster = repo.root / "clusters" / "cw-demo-h100.yaml"
    cluster.write_text(cluster.read_text() + "# on call: human-002\n")
    before = load_iam(repo.iam_file)
    old_keyset = repo.keyset.read_text()
    cluster_before = cluster.read_bytes()
    out = repo.ok("rotate")
    assert "re-encrypted 2 principal(s)" in out
    after = load_iam(repo.iam_file)
    assert after.bindings() == before.bindings()                               # ids and grants unchanged
    assert set(after.model.principals) == set(before.model.principals)
    assert all(after.model.principals[p] != before.model.principals[p] for p in before.model.principals)
    assert cluster.read_bytes() == cluster_before
    before_lines = [ln for ln in before.text.splitlines() if "human-00" not in ln]
    assert [ln for ln in after.text.splitlines() if "human-00" not in ln] == before_lines
    backup = repo.keyset.with_name("keyset.json.previous")
    assert backup.read_text() == old_keyset and stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert repo.ok("whois", "human-002").startswith("human-002: user:bob@example.org")
    key_value = json.loads(old_keyset)["key"][0]["keyData"]["value"]
    assert all(key_value not in o for o in repo.outputs)


def fake_kms_clients():
    """Production Clients but KMS: the real adapter (Tink's Cloud KMS wiring) over
    :class:`fakes.gcp_api.FakeKms` (reset) — passed to ``main``, nothing patched."""
    from clusterstack.adapters.kms import GcpKms
    from clusterstack.clients import Clients
    from fakes.gcp_api import FakeKms

    FakeKms.keys, FakeKms.calls, FakeKms.deny = {}, [], False
    return Clients.production().replace(kms=GcpKms(make_client=FakeKms))


def test_rotate_onto_a_kms_key(repo):
    repo.clients = fake_kms_clients()
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    out = repo.ok("rotate", "--new-kms-key", f"gcpkms://{KMS_KEY}")
    assert "commit it" in out
    enc = load_iam(repo.iam_file).model.encryption
    assert enc.kms_key == f"gcp-kms://{KMS_KEY}" and enc.keyset == "iam/keyset.kms.json"
    assert "encryptedKeyset" in (repo.root / "iam" / "keyset.kms.json").read_text()
    assert repo.ok("whois", "human-001").startswith("human-001: user:alice@example.org")


def test_check_passes_then_catches_problems(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.commit()
    assert repo.ok("check").startswith("ok: iam/iam.yaml is valid and canonical (1 principal(s)")
    notes = repo.root / "docs" / "notes.md"
    notes.parent.mkdir()
    personal = "Jane.Doe" + "@" + "acme-corp.com"  # assembled here so this test file itself passes `iam check`
    notes.write_text("Contacts: ops@example.org, group:admins@acme-corp.com, ci@p.iam.gserviceaccount.com\n"
                     f"Escalate to\n  {personal}\n")
    git(repo.root, "add", "docs/notes.md")
    cluster = repo.root / "clusters" / "cw-demo-h100.yaml"
    cluster.write_text(cluster.read_text() + "# owner: human-009\n")
    text = repo.iam_file.read_text()
    repo.iam_file.write_text(text.replace("members:\n      - human-001", "members: [human-001]"))
    rc, _, err = repo.cs("check")
    assert rc == 2
    lines = err.splitlines()
    assert any(ln.startswith("error: docs/notes.md:3: plaintext personal email J***@acme-corp.com")
               for ln in lines)
    assert "Jane.Doe" not in err                                   # CI logs are public: redacted
    assert not any("ops@" in ln or "admins@" in ln or "ci@p" in ln for ln in lines)
    assert any(ln.startswith("error: clusters/cw-demo-h100.yaml:") and "human-009 is not a registered" in ln
               for ln in lines)
    assert any("iam.yaml" in ln and "not in canonical form" in ln for ln in lines)
    report = json.loads(repo.cs("check", "--json")[1])
    assert report["ok"] is False and len(report["problems"]) == 3
    repo.ok("fmt")
    assert repo.iam_file.read_text() == text


def test_check_reports_an_invalid_iam_file_with_its_line(repo):
    repo.iam_file.write_text(repo.iam_file.read_text() + "principals:\n  human-001: bob@example.org\n")
    rc, _, err = repo.cs("check")
    assert rc == 2 and "iam/iam.yaml:10: principals.human-001: a plaintext email" in err


def test_review_adds_removals_moves_and_references(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.ok("grant", "bob@example.org", "--role", "roles/storage.objectViewer", "--on", "bucket:demo-data")
    repo.ok("grant", "serviceAccount:ci@demo-project.iam.gserviceaccount.com", "--role", "roles/editor")
    repo.commit("base")
    repo.ok("revoke", "alice@example.org", "--role", "roles/viewer")
    repo.ok("grant", "alice@example.org", "--role", "roles/logging.viewer")                 # a move
    repo.ok("revoke", "serviceAccount:ci@demo-project.iam.gserviceaccount.com", "--role", "roles/editor")
    repo.ok("grant", "carol@example.com", "--role", "roles/storage.objectViewer", "--on", "bucket:demo-data",
            "--condition-title", "temp", "--condition-expression", 'request.time < timestamp("2027-01-01T00:00:00Z")')
    cluster = repo.root / "clusters" / "cw-demo-h100.yaml"
    cluster.write_text(cluster.read_text() + "# on call: human-002\n")
    assert repo.ok("review").splitlines() == [
        "- serviceAccount:ci@demo-project.iam.gserviceaccount.com roles/editor on project",
        "~ user:alice@example.org (human-001) roles/viewer → roles/logging.viewer on project",
        "+ user:carol@example.com (human-003) roles/storage.objectViewer on bucket:demo-data if temp",
        "+ user:bob@example.org (human-002) referenced in clusters/cw-demo-h100.yaml:"
        f"{len(cluster.read_text().splitlines())}",
        "+ user:carol@example.com (human-003) registered",
    ]
    redacted = repo.ok("review", "--redact")
    assert "a***@example.org" in redacted and "alice" not in redacted and "carol@" not in redacted
    repo.commit("head")
    assert repo.ok("review", "--base", "HEAD~1", "--head", "HEAD", "--redact") == redacted
    assert repo.ok("review") == "no IAM change\n"


def test_review_detects_an_id_given_to_another_person(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.commit("base")
    from clusterstack.iam.crypto import load_cipher

    loaded = load_iam(repo.iam_file)
    cipher = load_cipher(loaded.model.encryption, repo.root)
    text = repo.iam_file.read_text().replace(loaded.model.principals["human-001"],
                                             cipher.encrypt("mallory@example.net"))
    repo.iam_file.write_text(text)
    assert repo.ok("review").splitlines() == [
        "! human-001 now refers to a different person: user:alice@example.org → user:mallory@example.net",
        "- user:alice@example.org (human-001) roles/viewer on project",
        "+ user:mallory@example.net (human-001) roles/viewer on project",
        "- user:alice@example.org (human-001) unregistered",
        "+ user:mallory@example.net (human-001) registered",
    ]


def test_review_after_rotation_uses_the_previous_keyset_and_works_without_keyset(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    repo.commit("base")
    repo.ok("rotate")
    out = repo.ok("review")
    assert out.splitlines() == ["no IAM change", "note: 1 base principal(s) decrypted with the previous "
                                "keyset (the head is under another one): human-001"]
    # without the previous keyset the base people are unknown: loudly incomplete, never guessed by id
    previous = repo.keyset.with_name(repo.keyset.name + ".previous")
    saved = previous.read_bytes()
    previous.unlink()
    rc, out, err = repo.cs("review")
    assert rc == 2 and "review is incomplete" in err
    assert "INCOMPLETE: 1 base principal(s) do not decrypt with any available keyset" in out
    assert "- human-001 (base revision, person unknown) roles/viewer on project" in out
    assert "+ user:alice@example.org (human-001) roles/viewer on project" in out
    assert repo.cs("review", "--allow-undecryptable")[0] == 0
    previous.write_bytes(saved)
    repo.ok("grant", "bob@example.org", "--role", "roles/viewer")
    repo.keyset.unlink()
    # no keyset at all: a changed ciphertext (the rotation) cannot be verified → incomplete
    rc, out, err = repo.cs("review")
    assert rc == 2 and err.startswith("warning: .iam/keyset.json: keyset file not found — "), err
    rc, _, grant_err = repo.cs("grant", "carol@example.org", "--role", "roles/viewer")
    assert rc == 2 and grant_err.startswith("error: .iam/keyset.json: keyset file not found — "), grant_err
    assert "INCOMPLETE: 1 principal(s) changed ciphertext and no keyset is available" in out
    assert "+ human-002 roles/viewer on project" in out and "people are shown by id" in out
    # unchanged ciphertexts are the same person (deterministic encryption): complete by id
    repo.commit("rotated")
    repo.iam_file.write_text(repo.iam_file.read_text().replace("roles/viewer", "roles/logging.viewer"))
    rc, out, err = repo.cs("review")
    assert rc == 0 and "INCOMPLETE" not in out
    assert "~ human-001 roles/viewer → roles/logging.viewer on project" in out


def test_review_of_a_new_file_and_unknown_ref(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    assert repo.ok("review").splitlines()[0] == "+ user:alice@example.org (human-001) roles/viewer on project"
    rc, _, err = repo.cs("review", "--base", "no-such-branch")
    assert rc == 2 and "unknown git ref 'no-such-branch'" in err


def test_init_with_a_kms_key_commits_the_wrapped_keyset(tmp_path, capsys):
    clients = fake_kms_clients()
    root = tmp_path / "repo"
    root.mkdir()
    for f in ("clusterstack.toml", ".gitignore"):
        shutil.copy(REPO / f, root / f)
    shutil.copytree(REPO / "clusters", root / "clusters")
    git(root, "init", "-q")
    r = Repo(root, capsys, clients)
    assert "commit it" in r.ok("init", "--kms-key", f"gcpkms://{KMS_KEY}")
    enc = load_iam(r.iam_file).model.encryption
    assert (enc.kms_key, enc.keyset) == (f"gcp-kms://{KMS_KEY}", "iam/keyset.kms.json")
    assert not (root / ".iam").exists()
    r.ok("grant", "alice@example.org", "--role", "roles/viewer")
    assert r.ok("whois", "human-001").startswith("human-001: user:alice@example.org")
    assert git(root, "status", "--porcelain", "iam/keyset.kms.json").startswith("?? ")  # not ignored


def test_review_after_a_new_keyset_compares_people_not_ids(repo):
    """Re-created file under a fresh keyset: ids now name other people. Review must never
    attribute the old human-001's grants to the new human-001."""
    repo.ok("grant", "carol@example.com", "--role", "roles/iam.serviceAccountUser")   # human-001
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")                     # human-002
    repo.commit("base")
    old_keyset = repo.keyset.read_bytes()
    git(repo.root, "rm", "-q", "iam/iam.yaml")
    repo.keyset.unlink()
    repo.ok("init")
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")                     # human-001
    repo.ok("grant", "bob.smith@" "gmail.com", "--role", "roles/storage.objectViewer")     # human-002
    # the base keyset is not available: incomplete, exit 2, and no guess by id
    rc, out, err = repo.cs("review", "--base", "HEAD")
    assert rc == 2 and "review is incomplete" in err
    assert "INCOMPLETE: 2 base principal(s)" in out
    assert "user:alice@example.org (human-001) roles/iam.serviceAccountUser" not in out
    assert "+ user:bob.smith@" "gmail.com (human-002) roles/storage.objectViewer on project" in out
    # with the old keyset (kept as .previous) every person is known: compared by email
    repo.keyset.with_name(repo.keyset.name + ".previous").write_bytes(old_keyset)
    assert repo.ok("review", "--base", "HEAD").splitlines() == [
        "! human-001 now refers to a different person: user:carol@example.com → user:alice@example.org",
        "! human-002 now refers to a different person: user:alice@example.org → user:bob.smith@" "gmail.com",
        "+ user:bob.smith@" "gmail.com (human-002) roles/storage.objectViewer on project",
        "- user:carol@example.com (human-001) roles/iam.serviceAccountUser on project",
        "+ user:bob.smith@" "gmail.com (human-002) registered",
        "- user:carol@example.com (human-001) unregistered",
        "note: 2 base principal(s) decrypted with the previous keyset (the head is under another "
        "one): human-001, human-002",
    ]


def test_check_accepts_the_addresses_the_configs_require_and_names_allow_emails(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    domain = "acme-corp" + ".com"     # assembled so this test file itself passes `iam check`
    toml = repo.root / "clusterstack.toml"
    toml.write_text(toml.read_text().replace('acme_email = "ops@example.org"', f'acme_email = "certs@{domain}"'))
    cluster = repo.root / "clusters" / "cw-demo-h100.yaml"
    cluster.write_text(cluster.read_text().replace("acme_email: ops@example.org", f"acme_email: TLS@{domain}"))
    repo.commit()
    assert repo.ok("check").startswith("ok: ")       # cert-manager's contacts are required, not leaks
    notes = repo.root / "notes.md"
    notes.write_text(f"ask tls@{domain} or jane@{domain}\n")
    git(repo.root, "add", "notes.md")
    rc, _, err = repo.cs("check")
    assert rc == 2
    (line,) = [ln for ln in err.splitlines() if "notes.md" in ln]
    assert line.startswith(f"error: notes.md:1: plaintext personal email j***@{domain}")
    assert "[iam] allow_emails (one address)" in line and "[iam] allow_email_domains" in line


def test_check_names_the_field_of_an_email_or_id_in_a_config(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    domain = "acme-corp" + ".com"     # assembled so this test file itself passes `iam check`
    cluster = repo.root / "clusters" / "cw-demo-h100.yaml"
    text = cluster.read_text().replace("acme_email: ops@example.org",
                                       f"acme_email: ops@example.org  # or jane@{domain}")
    cluster.write_text(text.replace("ingress:\n", "ingress:\n    # owner: human-009\n", 1))
    repo.commit()
    rc, _, err = repo.cs("check")
    assert rc == 2
    cl = cluster.read_text()
    lines = sorted(ln.split(" — ")[0] for ln in err.splitlines())
    assert lines == sorted([
        f"error: clusters/cw-demo-h100.yaml:{line_of(cl, 'acme_email')}: "
        f"provisioning.coreweave.ingress.acme_email: plaintext personal email j***@{domain}",
        f"error: clusters/cw-demo-h100.yaml:{line_of(cl, 'human-009')}: human-009 is not a "
        "registered principal"])   # a comment line defines no field


def test_an_argument_that_would_make_the_file_invalid_cites_no_line_of_the_unwritten_text(repo):
    before = repo.iam_file.read_bytes()
    rc, _, err = repo.cs("grant", "alice@example.org", "--role", "roles/viewer",
                         "--condition-title", "a" * 200, "--condition-expression", "true")
    assert rc == 2 and err.startswith("error: ")
    first = err.splitlines()[0]
    # the file on disk has 8 lines; the message names the field, not a line of the edited text
    assert re.match(r"error: \S*iam\.yaml: project_grants\[0\]\.condition\.title: this change would make "
                    r"the file invalid: String should have at most 100 characters — nothing was written", first), first
    assert repo.iam_file.read_bytes() == before


@pytest.mark.parametrize("member", ["allUsers", "allAuthenticatedUsers"])
def test_a_public_member_is_refused_unless_asked_for(repo, member):
    before = repo.iam_file.read_bytes()
    for on in ("project", "bucket:demo-data"):
        rc, _, err = repo.cs("grant", member, "--role", "roles/viewer", "--on", on)
        assert rc == 2 and "makes it public" in err and "--allow-public" in err
        assert repo.iam_file.read_bytes() == before
    out = repo.ok("grant", member, "--role", "roles/storage.objectViewer", "--on", "bucket:demo-data",
                  "--allow-public")
    assert out.splitlines()[0].startswith(f"! {member} (anyone ") and "this is public" in out
    grant = load_iam(repo.iam_file).model.buckets[0].grants[0]
    assert grant.members == [member] and grant.public is True   # recorded: check accepts it
    assert "    public: true\n" in repo.iam_file.read_text()
    repo.commit()
    assert repo.ok("check").startswith("ok: ")


@pytest.mark.parametrize("member", ["allUsers", "allAuthenticatedUsers"])
def test_check_flags_a_public_member_added_by_hand(repo, member):
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    text = repo.iam_file.read_text()
    assert "      - human-001\n" in text
    repo.iam_file.write_text(text.replace("      - human-001\n", f"      - human-001\n      - {member}\n"))
    repo.commit()
    rc, _, err = repo.cs("check")
    assert rc == 2
    (line,) = [ln for ln in err.splitlines() if member in ln]
    n = repo.iam_file.read_text().splitlines().index(f"      - {member}") + 1
    assert line.startswith(f"error: iam/iam.yaml:{n}: project_grants.0.members.1: {member} gets roles/viewer "
                           "on project: this is public, and the grant does not say so — ")
    assert "add `public: true`" in line
    repo.iam_file.write_text(repo.iam_file.read_text().replace(
        "  - role: roles/viewer\n", "  - role: roles/viewer\n    public: true\n"))
    repo.commit()
    assert repo.ok("check").startswith("ok: ")


def test_check_refuses_every_accessor_grant_when_the_iam_stack_has_no_load_balancer(repo):
    repo.ok("grant", "alice@example.org", "--role", "roles/iap.httpsResourceAccessor", "--on", "iap:gcp-tpu-a-be")
    toml = repo.root / "clusterstack.toml"
    toml.write_text(toml.read_text().replace('stack = "gcp-demo"', 'stack = "gcp-tpu-a"'))  # same project
    repo.commit()
    line = repo.iam_file.read_text().splitlines().index("  - name: gcp-tpu-a-be") + 1
    rc, out, err = repo.cs("check")
    assert (rc, out, err.splitlines()) == (2, "", [
        f"error: iam/iam.yaml:{line}: iap_backend_services[0].name: backend service 'gcp-tpu-a-be' is "
        "not an IAP backend of this stack: it has no load balancer (provisioning.gcp.gclb) — remove "
        "the entry, or add a gclb: block whose controllers declare <cluster>-be to the [iam] stack"])


def test_a_non_ascii_email_is_never_printed(repo):
    for who in ("jürgen.müller@example.org", "user:jürgen.müller@bücher.example", "ирина@пример.example"):
        rc, out, err = repo.cs("grant", who, "--role", "roles/viewer")
        assert "ürgen" not in out + err and "рина" not in out + err and "müller" not in out + err, (who, out, err)


def test_grant_refuses_an_accessor_grant_on_a_backend_the_stack_does_not_declare(repo):
    # The rule iam check, validate and plan apply, run on the would-be file: nothing written.
    repo.ok("grant", "alice@example.org", "--role", "roles/iap.httpsResourceAccessor", "--on", "iap:gcp-tpu-a-be")
    before = repo.iam_file.read_bytes()
    rc, out, err = repo.cs("grant", "bob@example.org", "--role", "roles/iap.httpsResourceAccessor",
                           "--on", "iap:gcp-tpu-c-be")
    assert (rc, out, err.splitlines()) == (2, "", [
        "error: iam/iam.yaml: iap_backend_services[1].name: this change would make the file invalid: "
        "backend service 'gcp-tpu-c-be' is not an IAP backend of this stack's load balancer "
        "(gcp-tpu-a-be, gcp-tpu-b-be) — nothing was written; name a controller's backend, "
        "<cluster>-be, of provisioning.gcp.gclb.controllers"])
    assert repo.iam_file.read_bytes() == before
    repo.commit()
    assert repo.ok("check").startswith("ok: ")


def test_a_command_that_writes_is_not_blocked_by_a_problem_already_in_the_file(repo):
    # A hand-written accessor grant on an undeclared backend is iam check's to report; revoking
    # (or granting) something else still works, and revoking it fixes the file.
    repo.ok("grant", "alice@example.org", "--role", "roles/iap.httpsResourceAccessor", "--on", "iap:gcp-tpu-a-be")
    repo.iam_file.write_text(repo.iam_file.read_text() + (
        "  - name: gcp-tpu-c-be\n    grants:\n      - role: roles/iap.httpsResourceAccessor\n"
        "        members:\n          - group:iap-users@example.org\n"))
    repo.commit()
    text = repo.iam_file.read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.endswith("- name: gcp-tpu-c-be"))
    expected = (f"error: iam/iam.yaml:{line}: iap_backend_services[1].name: backend service 'gcp-tpu-c-be' "
                "is not an IAP backend of this stack's load balancer (gcp-tpu-a-be, gcp-tpu-b-be) — name a "
                "controller's backend, <cluster>-be, of provisioning.gcp.gclb.controllers")
    rc, out, err = repo.cs("check")
    assert (rc, out, err.splitlines()) == (2, "", [expected])
    rc, out, _ = repo.cs("check", "--json")
    assert rc == 2 and json.loads(out)["problems"] == [expected.removeprefix("error: ")]
    assert main(["--root", str(repo.root), "validate"]) == 2  # (this repo also lacks the projects' dirs)
    assert expected in repo.capsys.readouterr().err.splitlines()
    repo.ok("grant", "bob@example.org", "--role", "roles/viewer")
    repo.ok("revoke", "group:iap-users@example.org", "--role", "roles/iap.httpsResourceAccessor",
            "--on", "iap:gcp-tpu-c-be")
    repo.commit()
    assert repo.ok("check").startswith("ok: iam/iam.yaml is valid and canonical (2 principal(s)")


def test_a_misspelled_role_is_refused_by_grant_check_and_validate_naming_the_near_miss(repo):
    # `iam grant --role roles/viewr` passed grant, `iam check` and `validate`
    repo.ok("grant", "alice@example.org", "--role", "roles/viewer")
    before = repo.iam_file.read_bytes()
    rc, out, err = repo.cs("grant", "bob@example.org", "--role", "roles/viewr")
    assert rc == 2 and out == "" and "did you mean roles/viewer " in err and "Traceback" not in err
    assert repo.iam_file.read_bytes() == before
    text = before.decode().replace("role: roles/viewer", "role: roles/viewr")
    repo.iam_file.write_text(text)
    repo.commit()
    rc, _, err = repo.cs("check")
    expected = (f"iam/iam.yaml:{line_of(text, 'role: roles/viewr')}: project_grants[0].role: roles/viewr is "
                "not a GCP predefined role (clusterstack's snapshot of ")
    assert rc == 2 and expected in err and "did you mean roles/viewer " in err
    assert main(["--root", str(repo.root), "validate"]) == 2
    assert expected in repo.capsys.readouterr().err


def test_a_custom_role_written_as_a_predefined_one_names_its_full_name():
    from clusterstack.iam.roles import role_problem

    assert role_problem("roles/ciLauncher", project="lab-project", custom_role_ids={"ciLauncher"}) == (
        "roles/ciLauncher is not a predefined role; ciLauncher is a custom role of this file",
        "write it as projects/lab-project/roles/ciLauncher")
    assert "did you mean projects/lab-project/roles/ciLauncher?" in role_problem(
        "projects/lab-project/roles/ciLaunchr", project="lab-project", custom_role_ids={"ciLauncher"})[1]
    # what the rule cannot know passes: another project's or an organization's custom role
    assert role_problem("projects/other-project/roles/x", project="lab-project", custom_role_ids=set()) is None
    assert role_problem("organizations/123/roles/x", project="lab-project", custom_role_ids=set()) is None
