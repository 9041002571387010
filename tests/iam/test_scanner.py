"""``iam check``'s repository scans: the field a finding's line defines."""

from __future__ import annotations

from clusterstack.iam.scanner import field_at_line

YAML = """\
provisioning:
  owner: x@example.org
  grants:
    - name: z
      members:
        - human-001   # a trailing comment
# a comment
notes: |
  a continuation line
"""

TOML = """\
[iam]
file = "iam/iam.yaml"
allow_emails = ["a@example.org"]
[defaults]
acme_email = "ops@example.org"
"""


def test_a_yaml_line_names_the_deepest_key_or_item_starting_on_it():
    got = [field_at_line(YAML, "clusters/c.yaml", n) for n in range(1, 10)]
    assert got == ["provisioning", "provisioning.owner", "provisioning.grants",
                   "provisioning.grants[0].name", "provisioning.grants[0].members",
                   "provisioning.grants[0].members[0]", "", "notes", ""]


def test_a_toml_line_names_its_key_path():
    got = [field_at_line(TOML, "clusterstack.toml", n) for n in range(1, 6)]
    assert got == ["iam", "iam.file", "iam.allow_emails", "defaults", "defaults.acme_email"]


def test_other_files_and_unparsable_yaml_name_no_field():
    assert field_at_line("owner: x@example.org\n", "notes.md", 1) == ""
    assert field_at_line("a: [unclosed\n", "c.yaml", 1) == ""
