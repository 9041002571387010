"""The IAM file: loader refusals (each with its line), canonical form and round-trip."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import pytest

from clusterstack.iam import canonical
from clusterstack.iam.loader import IamFileError, load_iam, load_iam_text, parse_document
from clusterstack.iam.targets import (ConditionSpec, MemberError, Target, classify_member, member_sort_key,
                                      parse_target)
from clusterstack.errors import ClusterstackError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "iam" / "iam.yaml"

# Syntactically valid Tink ciphertexts (prefix 0x01 + key id + 48 bytes); the loader never
# decrypts, so these need no keyset.
CT1, CT2 = (base64.b64encode(b"\x01\x00\x00\x00\x07" + bytes([i]) * 48).decode() for i in (1, 2))

HEAD = f"""\
schema_version: 1
project: demo-project
encryption:
  scheme: tink-daead-aes256-siv
  keyset: .iam/keyset.json
principals:
  human-001: {CT1}
  human-002: {CT2}
"""


def load(body: str):
    return load_iam_text(HEAD + textwrap.dedent(body), Path("iam.yaml"))


def problems(body: str, *, head: str = HEAD) -> list[tuple[int | None, str, str]]:
    with pytest.raises(IamFileError) as ei:
        load_iam_text(head + textwrap.dedent(body), Path("iam.yaml"))
    assert ei.value.exit_code == 2
    return [(p.line, p.field, p.message) for p in ei.value.problems]


def test_shipped_example_round_trips_byte_identically():
    text = SHIPPED.read_text(encoding="utf-8")
    loaded = load_iam(SHIPPED)
    assert canonical.dump(loaded.document) == text                      # plain round-trip
    assert canonical.canonical_text(parse_document(text, SHIPPED)) == text  # and already canonical
    assert loaded.model.principals and loaded.bindings()


def test_valid_file_merges_grants_per_target_role_and_condition():
    loaded = load("""\
        project_grants:
          - role: roles/viewer
            members: [human-001]
          - role: roles/viewer
            members: [group:ml@example.org]
          - role: roles/logging.viewer
            members: [human-002]
            condition: {title: until-2026, expression: 'request.time < timestamp("2026-01-01T00:00:00Z")'}
        """)
    bindings = {b.logical_name: b for b in loaded.bindings()}
    assert sorted(bindings) == ["project-logging-viewer-until-2026", "project-viewer"]
    assert bindings["project-viewer"].members == ("human-001", "group:ml@example.org")
    assert bindings["project-logging-viewer-until-2026"].condition.title == "until-2026"


def test_duplicate_key_is_reported_with_its_line():
    got = problems("""\
        project_grants:
          - role: roles/viewer
            role: roles/editor
            members: [human-001]
        """)
    assert got[0][0] == 11 and "duplicate key" in got[0][2]


def test_unknown_field_is_reported_with_its_line():
    got = problems("""\
        buckets:
          - name: data-bucket
            grnats: []
            grants:
              - {role: roles/storage.objectViewer, members: [human-001]}
        """)
    assert (11, "buckets[0].grnats") == got[0][:2]


def test_dangling_principal_id():
    got = problems("""\
        project_grants:
          - role: roles/viewer
            members: [human-001, human-009]
        """)
    assert got == [(11, "project_grants[0].members[1]", "human-009 is not a registered principal")]


def test_duplicate_member_across_merged_grants():
    got = problems("""\
        secrets:
          - name: hf-token
            grants:
              - role: roles/secretmanager.secretAccessor
                members: [human-001]
              - role: roles/secretmanager.secretAccessor
                members:
                  - serviceAccount:ci@demo-project.iam.gserviceaccount.com
                  - human-001
        """)
    assert len(got) == 1 and got[0][0] == 17 and "duplicate member human-001" in got[0][2]


def test_duplicate_ciphertext_is_one_person_registered_twice():
    head = HEAD + f"  human-003: {CT1}\n"
    got = problems("", head=head)
    assert got == [(9, "principals.human-003", "same ciphertext as human-001: one person registered twice")]


def test_empty_member_list():
    got = problems("""\
        project_grants:
          - role: roles/viewer
            members: []
        """)
    assert got[0][:2] == (11, "project_grants[0].members") and "at least 1" in got[0][2]


def test_conflicting_conditions_with_one_title_on_one_target():
    got = problems("""\
        buckets:
          - name: data-bucket
            grants:
              - role: roles/storage.objectViewer
                members: [human-001]
                condition: {title: temp, expression: 'request.time < timestamp("2026-01-01T00:00:00Z")'}
              - role: roles/storage.objectViewer
                members: [human-002]
                condition: {title: temp, expression: 'request.time < timestamp("2027-01-01T00:00:00Z")'}
        """)
    assert len(got) == 1 and got[0][:2] == (17, "buckets[0].grants[1].condition")
    assert "conflicts with the condition titled 'temp'" in got[0][2]


@pytest.mark.parametrize("member", ["user:alice@example.org", "alice@example.org"])
def test_plaintext_user_member_is_refused(member):
    got = problems(f"""\
        project_grants:
          - role: roles/viewer
            members: [human-001, "{member}"]
        """)
    assert got[0][:2] == (11, "project_grants[0].members[1]")
    assert "plaintext user: member" in got[0][2]


def test_plaintext_email_as_principal_is_refused():
    head = HEAD.replace(CT2, "bob@example.org")
    got = problems("", head=head)
    assert got[0][:2] == (8, "principals.human-002") and "plaintext email" in got[0][2]


def test_undeclared_custom_role_and_condition_on_basic_role():
    got = problems("""\
        project_grants:
          - role: projects/demo-project/roles/clusterOperator
            members: [human-001]
          - role: roles/owner
            members: [human-002]
            condition: {title: temp, expression: "true"}
        """)
    messages = {(line, msg.split(" ")[0]) for line, _, msg in got}
    assert (10, "custom") in messages and (14, "roles/owner") in messages


def test_every_problem_is_reported_at_once():
    got = problems("""\
        project_grants:
          - role: roles/viewer
            members: [human-007]
          - role: roles/editor
            members: [human-008]
        """)
    assert [g[0] for g in got] == [11, 13]


def test_member_classification_and_order():
    assert classify_member("human-001") == "human"
    for m in ("serviceAccount:a@p.iam.gserviceaccount.com", "group:g@example.org", "domain:example.org",
              "principalSet://iam.googleapis.com/x", "projectViewer:demo-project", "allUsers"):
        assert classify_member(m) == "plain"
    with pytest.raises(MemberError):
        classify_member("robot:x")
    ms = ["serviceAccount:b", "human-010", "group:a", "human-002"]
    assert sorted(ms, key=member_sort_key) == ["human-002", "human-010", "group:a", "serviceAccount:b"]


def test_parse_target_forms():
    p = "demo-project"
    assert parse_target("project", p) == Target("project", p, p)
    assert parse_target("repo:us/mirror", p).name == "us/mirror"
    assert parse_target("kms:projects/k/locations/global/keyRings/r/cryptoKeys/c", p).slug == "kms-k-global-r-c"
    assert parse_target("sa:ci@demo-project.iam.gserviceaccount.com", p).slug == "sa-ci"
    for bad in ("bucket", "repo:mirror", "kms:key", "sa:nobody", "disk:x"):
        with pytest.raises(ClusterstackError):
            parse_target(bad, p)


def test_canonical_form_sorts_merges_and_is_idempotent():
    messy = HEAD.replace(f"  human-001: {CT1}\n  human-002: {CT2}\n",
                         f"  human-002: {CT2}\n  human-001: {CT1}\n") + textwrap.dedent("""\
        buckets:
          - name: zeta-bucket
            grants:
              - members: [human-002, human-001]   # who reads the data
                role: roles/storage.objectViewer
          - name: alpha-bucket
            grants:
              - {role: roles/storage.objectViewer, members: [human-001]}
          - name: zeta-bucket
            grants:
              - {role: roles/storage.objectViewer, members: [group:ml@example.org]}
        project_grants:
          - role: roles/viewer
            members: [human-001]
        """)
    loaded = load_iam_text(messy, Path("iam.yaml"))
    text = canonical.canonical_text(loaded.document)
    again = canonical.canonical_text(parse_document(text, Path("iam.yaml")))
    assert again == text
    assert text.index("human-001:") < text.index("human-002:")
    assert text.index("project_grants:") < text.index("buckets:")
    assert text.index("alpha-bucket") < text.index("zeta-bucket") and text.count("zeta-bucket") == 1
    assert "# who reads the data" in text
    assert "members:                          # who reads the data\n          - human-001\n" \
           "          - human-002\n          - group:ml@example.org\n" in text  # merged, sorted, block style
    # the merged file means the same as the messy one
    assert load_iam_text(text, Path("iam.yaml")).bindings() == loaded.bindings()


def test_add_and_remove_member_edit_the_document_in_place():
    loaded = load("""\
        # the project-wide roles
        project_grants:
          - role: roles/viewer  # read-only
            members: [human-001]
        """)
    doc = loaded.document
    t = Target("bucket", "data-bucket", "demo-project")
    cond = ConditionSpec("temp", 'request.time < timestamp("2026-01-01T00:00:00Z")')
    assert canonical.add_member(doc, t, "roles/storage.objectViewer", cond, "human-002")
    assert not canonical.add_member(doc, t, "roles/storage.objectViewer", None, "human-002",
                                    condition_title="temp")
    with pytest.raises(ClusterstackError, match="another expression"):
        canonical.add_member(doc, t, "roles/storage.objectViewer", ConditionSpec("temp", "true"), "human-001")
    with pytest.raises(ClusterstackError, match="--condition-expression"):
        canonical.add_member(doc, t, "roles/storage.objectViewer", None, "human-001", condition_title="other")
    text = canonical.dump(doc)
    assert "# the project-wide roles" in text and "# read-only" in text
    assert load_iam_text(text, Path("iam.yaml")).bindings()[-1].target == t
    assert canonical.remove_member(doc, t, "roles/storage.objectViewer", "temp", "human-002")
    assert not canonical.remove_member(doc, t, "roles/storage.objectViewer", "temp", "human-002")
    assert "buckets" not in doc  # the emptied grant, target and section are gone


# --- additive by default, authoritative where a role opts in -----------------------------------

def test_grants_are_additive_unless_the_role_opts_in():
    loaded = load("""\
        project_grants:
          - role: roles/owner
            authoritative: true
            members: [group:admins@example.org]
          - role: roles/viewer
            members: [human-001, serviceAccount:ci@demo-project.iam.gserviceaccount.com]
        """)
    owner, viewer = loaded.bindings()
    assert owner.authoritative and owner.resource_names == ("project-owner",)
    assert not viewer.authoritative
    assert viewer.resource_names == ("project-viewer-human-001", "project-viewer-sa-ci")


def test_grants_of_one_role_on_one_target_must_agree_on_authoritative():
    found = problems("""\
        project_grants:
          - role: roles/browser
            authoritative: true
            members: [human-001]
          - role: roles/browser
            members: [human-002]
            condition: {title: temp, expression: 'request.time < timestamp("2027-01-01T00:00:00Z")'}
        buckets:
          - name: data-bucket
            grants:
              - role: roles/storage.objectViewer
                authoritative: true
                members: [human-001]
        """)
    assert found == [(13, "project_grants[1].authoritative",
                      "roles/browser on project is authoritative at project_grants[0] but not here")]


def test_authoritative_must_be_a_boolean():
    (found,) = problems("""\
        project_grants:
          - role: roles/viewer
            authoritative: sometimes
            members: [human-001]
        """)
    assert found[0] == 11 and found[1] == "project_grants[0].authoritative"


def test_additive_member_names_that_collide_are_refused():
    found = problems("""\
        project_grants:
          - role: roles/viewer
            members: ["group:a-b@example.org", "group:a.b@example.org"]
        """)
    assert [f[2] for f in found] == ["binding name 'project-viewer-group-a-b-example-org' collides with "
                                     "another binding's"]


def test_canonical_form_keeps_the_flag_drops_the_default_and_new_grants_inherit_it():
    loaded = load("""\
        project_grants:
          - role: roles/container.viewer
            members: [human-001]
            authoritative: true
          - role: roles/browser
            authoritative: false
            members: [human-001]
        """)
    text = canonical.canonical_text(loaded.document)
    assert "  - role: roles/container.viewer\n    authoritative: true\n    members:\n" in text
    assert "authoritative: false" not in text
    doc = parse_document(text, Path("iam.yaml"))
    project = Target("project", "demo-project", "demo-project")
    cond = ConditionSpec("temp", 'request.time < timestamp("2027-01-01T00:00:00Z")')
    assert canonical.add_member(doc, project, "roles/container.viewer", cond, "human-002")
    again = load_iam_text(canonical.dump(doc), Path("iam.yaml"))   # still valid: the modes agree
    assert [b.authoritative for b in again.bindings() if b.role == "roles/container.viewer"] == [True, True]


def test_review_notes_a_role_that_becomes_authoritative_or_additive():
    from clusterstack.iam.review import review

    body = textwrap.dedent("""\
        project_grants:
          - role: roles/owner
            members: [human-001]
          - role: roles/viewer
            authoritative: true
            members: [human-002]
        """)
    flipped = body.replace("  - role: roles/owner\n", "  - role: roles/owner\n    authoritative: true\n") \
                  .replace("    authoritative: true\n    members: [human-002]", "    members: [human-002]")
    r = review(HEAD + body, HEAD + flipped, base_label="base", head_label="head", cipher=None)
    assert r.changes == ()                        # nobody gains or loses a grant in the file …
    assert [n for n in r.notes if "becomes" in n] == [  # … but the blast radius of `up` changes
        "roles/owner on project becomes authoritative: the next `up` removes every member of it the file "
        "does not list — attach `clusterstack iam scan` output",
        "roles/viewer on project becomes additive: members granted outside the file are no longer removed"]
    assert not [n for n in review(HEAD + body, HEAD + body, base_label="b", head_label="h", cipher=None).notes
                if "becomes" in n]
