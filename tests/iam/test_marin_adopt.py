"""``clusterstack iam adopt``: Marin's ``iam_data.yaml`` into the IAM file, and Marin's workspace
(``examples/marin``) planning Marin's members additive and identical.

The input is the synthetic fixture in Marin's exact format (``marin_iam_support.py`` says where the
format comes from); Cloud KMS is :class:`fakes.gcp_api.FakeKms` holding the fixture's fake key.
What Marin plans is computed here directly from the input file, following Marin's
``infra/pulumi/src/iac/gcp/iam.py`` @ 0fe5f595bef8 (``GcpIam``: ``_create_custom_roles``,
``_create_service_accounts``, ``_grant_project_iam``, ``_grant_kms_iam``, ``_grant_secret_iam``,
``_grant_bucket_iam``, ``_grant_artifact_repository_iam``, ``_grant_service_account_iam``,
``_grant_cloud_run_service_iam``, ``_grant_cloud_run_job_iam``, ``_grant_resource``,
``_condition_args``) — not with clusterstack's conversion code.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from marin_iam_support import CRYPTO_KEY, FIXTURE, PEOPLE, PROJECT, install_fake_kms, marin_emails
from clusterstack.cli import main
from clusterstack.iam import ops
from clusterstack.iam.adopt import adopt
from clusterstack.iam.crypto import load_cipher
from clusterstack.iam.loader import load_iam
from clusterstack.iam.marin import MarinIamError, load_marin
from clusterstack.iam.settings import DOC_DOMAINS, IamSettings
from clusterstack.pulumi import tokens
from marin.checkout import add_service_projects

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def kms(monkeypatch):
    return install_fake_kms(monkeypatch)


def settings_at(root: Path) -> IamSettings:
    return IamSettings(root=root, file=root / "iam" / "iam.yaml", stack=None,
                       allow_email_domains=DOC_DOMAINS, allow_emails=())


@pytest.fixture
def fresh(tmp_path, kms) -> IamSettings:
    """A workspace root with a new IAM file of Marin's project and a local keyset."""
    s = settings_at(tmp_path / "ws")
    s.root.mkdir()
    ops.init(s, project=PROJECT, kms_key=None)
    return s


def copy_fixture(tmp_path: Path, edit=None) -> Path:
    text = FIXTURE.read_text(encoding="utf-8")
    if edit is not None:
        text = edit(text)
    path = tmp_path / "iam_data.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- what Marin declares, computed from the input file ------------------------------------------

MEMBER_TYPES = {  # iam.py @ 0fe5f595: the resource each _grant_*_iam declares
    "project": tokens.PROJECT_IAM_MEMBER, "kms": tokens.KMS_CRYPTO_KEY_IAM_MEMBER,
    "secret": tokens.SECRET_IAM_MEMBER, "bucket": tokens.GCS_BUCKET_IAM_MEMBER,
    "repo": tokens.ARTIFACT_REPOSITORY_IAM_MEMBER, "sa": tokens.SERVICE_ACCOUNT_IAM_MEMBER,
    "run": tokens.CLOUD_RUN_SERVICE_IAM_MEMBER, "iap-run": tokens.IAP_CLOUD_RUN_IAM_MEMBER,
    "run-job": tokens.CLOUD_RUN_JOB_IAM_MEMBER,
}


def marin_members(text: str, project: str) -> list[dict]:
    """Every member resource Marin's GcpIam declares for ``text``: ``{kind, type, inputs,
    import_id}`` with the inputs as the engine records them (camelCase) and people resolved to
    ``user:<email>`` as ``_resolve_encrypted_members`` resolves them."""
    data = yaml.safe_load(text)
    emails = marin_emails(text)
    kms = data["kms"]
    key = f"projects/{project}/locations/{kms['location']}/keyRings/{kms['key_ring']}/cryptoKeys/{kms['key']}"
    targets = [("project", project, {"project": project}, data["project_grants"]),
               ("kms", key, {"cryptoKeyId": key}, data["kms_grants"])]
    for s in data["secrets"]:
        targets.append(("secret", f"projects/{project}/secrets/{s['secret']}",
                        {"project": project, "secretId": s["secret"]}, s["grants"]))
    for b in data["buckets"]:
        targets.append(("bucket", f"b/{b['bucket']}", {"bucket": b["bucket"]}, b["grants"]))
    for r in data["artifact_repositories"]:
        targets.append(("repo", f"projects/{project}/locations/{r['location']}/repositories/{r['repository']}",
                        {"project": project, "location": r["location"], "repository": r["repository"]},
                        r["grants"]))
    for a in data["service_accounts"]:
        ref = f"projects/{project}/serviceAccounts/{a['email']}"
        targets.append(("sa", ref, {"serviceAccountId": ref}, a["grants"]))
    for c in data.get("cloud_run_services", []):
        loc, svc = c["location"], c["service"]
        targets.append(("run", f"projects/{project}/locations/{loc}/services/{svc}",
                        {"project": project, "location": loc, "name": svc}, c["grants"]))
        targets.append(("iap-run", f"projects/{project}/iap_web/cloud_run-{loc}/services/{svc}",
                        {"project": project, "location": loc, "cloudRunServiceName": svc}, c["iap_grants"]))
    for j in data.get("cloud_run_jobs", []):
        targets.append(("run-job", f"projects/{project}/locations/{j['location']}/jobs/{j['job']}",
                        {"project": project, "location": j["location"], "name": j["job"]}, j["grants"]))
    out = []
    for kind, ref, target_inputs, grants in targets:
        for g in grants:
            cond = g.get("condition")
            for m in g["members"]:
                member = f"user:{emails[m['principal']]}" if isinstance(m, dict) else m
                inputs = {**target_inputs, "role": g["role"], "member": member}
                if cond:   # _condition_args: description only when set
                    inputs["condition"] = {"title": cond["title"], "expression": cond["expression"],
                                           **({"description": cond["description"]} if cond.get("description") else {})}
                import_id = f"{ref} {g['role']} {member}" + (f" {cond['title']}" if cond else "")
                out.append({"kind": kind, "type": MEMBER_TYPES[kind], "inputs": inputs, "import_id": import_id})
    return out


def key_of(item: dict) -> str:
    return json.dumps([item["type"], item["inputs"], item["import_id"]], sort_keys=True)


# --- the fixture ------------------------------------------------------------------------------

def test_fixture_is_marins_shape_and_loads():
    loaded = load_marin(FIXTURE)
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    # iam_config.py @ 0fe5f595 iam_config_data: Marin's keys, in Marin's order
    assert list(data) == ["schema_version", "kms", "principals", "custom_roles", "owned_service_accounts",
                          "project_grants", "kms_grants", "secrets", "buckets", "artifact_repositories",
                          "service_accounts", "cloud_run_services", "cloud_run_jobs"]
    assert loaded.data.schema_version == 2
    assert marin_emails(FIXTURE.read_text(encoding="utf-8")) == PEOPLE
    assert all(e.endswith("@example.org") for e in PEOPLE.values())   # fake identities only


# --- adopt: the file ----------------------------------------------------------------------------

def test_adopt_declares_every_member_role_and_account(fresh):
    r = adopt(fresh, FIXTURE)
    expected = marin_members(FIXTURE.read_text(encoding="utf-8"), PROJECT)
    assert r.changed and r.added == len(expected) == 56
    assert r.members == dict(sorted(Counter(m["kind"] for m in expected).items()))
    loaded = load_iam(fresh.file)
    assert {b.target.kind for b in loaded.bindings()} == set(MEMBER_TYPES)
    assert sum(len(b.members) for b in loaded.bindings()) == 56
    assert not any(b.authoritative for b in loaded.bindings())            # additive, as Marin's
    assert [c.role_id for c in loaded.model.custom_roles] == ["ci.example.launcher", "exampleResourcePreviewer",
                                                              "example_agent"]
    assert loaded.model.custom_roles[2].description == "Role designed for autonomous agents.\n\nCreated on: 2026-03-18. "
    assert [(a.account_id, a.display_name) for a in loaded.model.owned_service_accounts] == [
        ("pulumi-ci-example", "Pulumi CI preview (read-only)")]


def test_people_keep_marins_ids_and_are_stored_only_encrypted(fresh, kms):
    r = adopt(fresh, FIXTURE)
    assert r.ids == {pid: pid for pid in PEOPLE} and r.registered == tuple(PEOPLE)
    loaded = load_iam(fresh.file)
    cipher = load_cipher(loaded.model.encryption, fresh.root)
    assert {pid: cipher.decrypt(ct) for pid, ct in loaded.model.principals.items()} == PEOPLE
    # Marin's key was asked to Decrypt each principal once, without additional authenticated data
    assert [c for c in kms.calls if c[0] == "decrypt"] == [("decrypt", CRYPTO_KEY, b"")] * len(PEOPLE)


def test_no_email_lands_in_the_file_a_temporary_file_or_the_output(tmp_path, kms, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "clusterstack.toml").write_text('[workspace]\nproject_name = "t"\n', encoding="utf-8")
    made: list[Path] = []
    import clusterstack.fsutil as fsutil
    real = fsutil.write_atomic

    def spy(path, text, **kw):   # every file the command writes, temporary ones included
        made.append(Path(path))
        return real(path, text, **kw)

    monkeypatch.setattr("clusterstack.iam.adopt.write_atomic", spy)
    code, out = run("--root", str(root), "iam", "init", "--project", PROJECT)
    assert code == 0, out
    source = copy_fixture(tmp_path)
    code, out = run("--root", str(root), "iam", "adopt", str(source))
    assert code == 0, out
    code, out_json = run("--root", str(root), "iam", "adopt", str(source), "--json")
    assert code == 0, out_json
    needles = [e for e in PEOPLE.values()] + [e.split("@")[0] + "@" for e in PEOPLE.values()]
    for text in (out, out_json):
        assert not any(n.lower() in text.lower() for n in needles), text
    files = [p for p in root.rglob("*") if p.is_file()]
    assert sorted(p.relative_to(root).as_posix() for p in files) == [
        ".clusterstack.toml.lock", ".iam/keyset.json", "clusterstack.toml", "iam/.iam.yaml.lock", "iam/iam.yaml"]
    for p in files:
        body = p.read_bytes().lower()
        assert not any(n.lower().encode() in body for n in needles), p
    assert made == [root / "iam" / "iam.yaml"]   # one write; write_atomic's temp file sits beside it
    assert "registered 7 person(s)" in out and "= iam.yaml already holds all of it" in run(
        "--root", str(root), "iam", "adopt", str(source))[1]


def test_output_is_deterministic_and_adopting_twice_changes_nothing(tmp_path, kms):
    texts = []
    for name in ("a", "b"):
        s = settings_at(tmp_path / name)
        s.root.mkdir()
        ops.init(s, project=PROJECT, kms_key=None)
        if texts:   # the same keyset: deterministic encryption gives the same ciphertexts
            shutil.copy(tmp_path / "a" / ".iam" / "keyset.json", s.root / ".iam" / "keyset.json")
        adopt(s, FIXTURE)
        texts.append(s.file.read_bytes())
        again = adopt(s, FIXTURE)
        assert not again.changed and again.added == 0 and s.file.read_bytes() == texts[-1]
    assert texts[0] == texts[1]
    assert run_check_canonical(tmp_path / "a")


def run_check_canonical(root: Path) -> bool:
    from clusterstack.iam.canonical import canonical_text
    from clusterstack.iam.loader import parse_document

    loaded = load_iam(root / "iam" / "iam.yaml")
    return canonical_text(parse_document(loaded.text, loaded.path)) == loaded.text


def test_public_members_are_kept_marked_and_listed(fresh):
    r = adopt(fresh, FIXTURE)
    assert r.public == (
        "! allAuthenticatedUsers gets roles/artifactregistry.reader on repo:europe-west4/levanter: "
        "public in Marin's file, kept (the grant says public: true)",
        "! allUsers gets roles/artifactregistry.reader on repo:europe-west4/levanter: public in Marin's "
        "file, kept (the grant says public: true)",
        "! allUsers gets roles/artifactregistry.reader on repo:us-central1/levanter: public in Marin's "
        "file, kept (the grant says public: true)")
    loaded = load_iam(fresh.file)
    assert not ops.unconfirmed_public_members(loaded)
    assert {(t.spec, g.public) for _, t, g in loaded.model.grants() if t.kind == "repo"} == {
        ("repo:europe-west4/levanter", True), ("repo:us-central1/levanter", True),
        ("repo:us/pypi-mirror", False), ("repo:us-central1/example-grafana", False)}


def test_a_registered_person_keeps_the_files_id_and_a_taken_id_moves(fresh, kms):
    # ada (Marin's human-001) is already human-002 here; human-001 is someone else
    ops.grant(fresh, "zed@example.org", "roles/viewer")
    ops.grant(fresh, "Ada@Example.org", "roles/viewer")
    r = adopt(fresh, FIXTURE)
    assert r.ids["human-001"] == "human-002"
    assert r.ids["human-002"] == "human-010"   # taken, and after every id of both files (009)
    assert r.ids["human-003"] == "human-003"
    assert "human-001" not in r.registered and "human-010" in r.registered
    loaded = load_iam(fresh.file)
    cipher = load_cipher(loaded.model.encryption, fresh.root)
    who = {pid: cipher.decrypt(ct) for pid, ct in loaded.model.principals.items()}
    assert who["human-001"] == "zed@example.org" and who["human-002"] == PEOPLE["human-001"]
    assert who["human-010"] == PEOPLE["human-002"]
    owners = next(b for b in loaded.bindings() if b.role == "roles/owner")
    assert owners.members == ("human-002", "human-009")   # Marin's owners human-001, human-009


def test_two_marin_ids_of_one_person_become_one(fresh, kms):
    import base64

    from marin_iam_support import fake_kms_aead

    again = base64.b64encode(fake_kms_aead().encrypt(b"ada@example.org", b"")).decode()

    def edit(text):
        return text.replace("  human-009:", f"  human-007: {again}\n  human-009:")

    source = copy_fixture(fresh.root.parent, edit)
    r = adopt(fresh, source)
    assert r.ids["human-007"] == r.ids["human-001"] == "human-001"
    assert "human-007" not in load_iam(fresh.file).model.principals


# --- adopt: refusals (exit 2, located, nothing written, no email printed) -------------------------

def run(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        code = main(list(args))
    return code, buf.getvalue()


@pytest.fixture
def cli_ws(tmp_path, kms) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "clusterstack.toml").write_text('[workspace]\nproject_name = "t"\n', encoding="utf-8")
    code, out = run("--root", str(root), "iam", "init", "--project", PROJECT)
    assert code == 0, out
    return root


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("name, edit, where, message", [
    ("plaintext person", lambda t: t.replace("- group:eng-all@example.org", "- user:jo.secret@example.org"),
     "user:jo.secret", "project_grants[5].members[0]: a plaintext user principal"),
    ("bare email", lambda t: t.replace("- group:eng-all@example.org", "- jo.secret@example.org"),
     "jo.secret", "project_grants[5].members[0]: a plaintext user principal"),
    ("undeclared person", lambda t: t.replace("principal: human-009", "principal: human-077"),
     "human-077", "project_grants[8].members[1].principal: human-077 is not declared under principals"),
    ("unknown key", lambda t: t.replace("kms_grants:", "kms_grant:"), "kms_grant:",
     "kms_grant: "),
    ("not a role", lambda t: t.replace("role: roles/editor", "role: editor"), "role: editor",
     "project_grants[6].role"),
    ("person as a string", lambda t: t.replace("- group:eng-all@example.org", "- human-001"), "- human-001",
     "project_grants[5].members[0]: human-001 as a plain string is not a member"),
    ("schema 3", lambda t: t.replace("schema_version: 2", "schema_version: 3"), "schema_version: 3",
     "schema_version: Input should be 1 or 2"),
])
def test_a_bad_input_file_is_a_located_error(cli_ws, tmp_path, name, edit, where, message):
    source = copy_fixture(tmp_path, edit)
    before = (cli_ws / "iam" / "iam.yaml").read_bytes()
    code, out = run("--root", str(cli_ws), "iam", "adopt", str(source))
    assert code == 2, out
    text = source.read_text(encoding="utf-8")
    assert f"iam_data.yaml:{line_of(text, where)}: {message}" in out, out
    assert "jo.secret" not in out and "Traceback" not in out
    assert (cli_ws / "iam" / "iam.yaml").read_bytes() == before


def test_a_missing_or_unparsable_input_is_exit_2(cli_ws, tmp_path):
    code, out = run("--root", str(cli_ws), "iam", "adopt", str(tmp_path / "nope.yaml"))
    assert code == 2 and "Marin's IAM file not found" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 2\nkms: [\n", encoding="utf-8")
    code, out = run("--root", str(cli_ws), "iam", "adopt", str(bad))
    assert code == 2 and "bad.yaml:" in out and "Traceback" not in out


def test_kms_refusal_is_exit_2_at_the_first_principal_and_writes_nothing(cli_ws, tmp_path, kms):
    kms.deny = True
    before = (cli_ws / "iam" / "iam.yaml").read_bytes()
    code, out = run("--root", str(cli_ws), "iam", "adopt", str(copy_fixture(tmp_path)))
    assert code == 2, out
    text = FIXTURE.read_text(encoding="utf-8")
    assert f"iam_data.yaml:{line_of(text, 'human-001:')}: principals.human-001: does not decrypt with " \
           f"gcp-kms://{CRYPTO_KEY}" in out
    assert "roles/cloudkms.cryptoKeyDecrypter" in out
    assert (cli_ws / "iam" / "iam.yaml").read_bytes() == before


def test_a_ciphertext_that_is_not_an_email_is_reported_by_id_only(fresh, tmp_path):
    import base64

    from marin_iam_support import fake_kms_aead

    odd = base64.b64encode(fake_kms_aead().encrypt(b"not-an-address secret words", b"")).decode()
    source = copy_fixture(tmp_path, lambda t: t.replace("  human-009:", f"  human-008: {odd}\n  human-009:"))
    with pytest.raises(MarinIamError) as err:
        adopt(fresh, source)
    (p,) = err.value.problems
    assert (p.field, p.message) == ("principals.human-008", "does not decrypt to an email address")
    assert "secret words" not in str(err.value.problems)


def test_a_custom_role_declared_differently_is_refused_at_marins_line(fresh, tmp_path):
    text = fresh.file.read_text(encoding="utf-8") + (
        "custom_roles:\n  - role_id: example_agent\n    title: Another\n    permissions:\n      - compute.instances.get\n")
    fresh.file.write_text(text, encoding="utf-8")
    before = fresh.file.read_bytes()
    with pytest.raises(MarinIamError) as err:
        adopt(fresh, FIXTURE)
    (p,) = err.value.problems
    assert p.field == "custom_roles[2].role_id" and "declared differently" in p.message
    assert fresh.file.read_bytes() == before


def test_adopt_needs_the_iam_file_first(tmp_path, kms):
    s = settings_at(tmp_path)
    from clusterstack.iam.loader import IamFileError

    with pytest.raises(IamFileError) as err:
        adopt(s, FIXTURE)
    assert "iam init" in err.value.problems[0].hint
    assert not (tmp_path / "iam").exists()


def test_schema_1_without_cloud_run_sections_is_read(fresh, tmp_path):
    # iam_data.yaml @ 8f9a38ebf2db: schema_version 1, no cloud_run_services / cloud_run_jobs
    def edit(text):
        head = text.split("cloud_run_services:")[0]
        return head.replace("schema_version: 2", "schema_version: 1")

    r = adopt(fresh, copy_fixture(tmp_path, edit))
    assert set(r.members) == {"project", "kms", "secret", "bucket", "repo", "sa"}
    code_2 = copy_fixture(tmp_path, lambda t: t.split("cloud_run_services:")[0])
    with pytest.raises(MarinIamError) as err:
        load_marin(code_2)
    assert [p.field for p in err.value.problems] == ["cloud_run_services", "cloud_run_jobs"]


# --- Marin's workspace plans Marin's members, additive and identical ----------------------------------

def _marin_configs() -> Path | None:
    from k8s_schemas import reference_dir

    ref = reference_dir()
    return ref / "marin" / "lib" / "iris" / "config" if ref else None


@pytest.fixture(scope="module")
def marin_plan(tmp_path_factory):
    """examples/marin with Marin's published configs (../shared/reference/marin), `[iam]` naming
    the GCP stack `marin` (project hai-gcp-models), `iam init` + `iam adopt` of the fixture, then
    `clusterstack plan marin`: the plan and the adopted IAM file's people, decrypted."""
    configs = _marin_configs()
    if configs is None or not (configs / "marin.yaml").is_file():
        pytest.skip("Marin's published configs are not in ../shared/reference/marin/lib/iris/config")
    mp = pytest.MonkeyPatch()
    try:
        install_fake_kms(mp)
        root = tmp_path_factory.mktemp("marin-iam") / "marin"
        shutil.copytree(REPO / "examples" / "marin", root,
                        ignore=shutil.ignore_patterns("__pycache__", ".pulumi-state"))
        for f in configs.glob("*.yaml"):
            shutil.copy(f, root / "lib" / "iris" / "config" / f.name)
        add_service_projects(root)   # Marin's service projects (examples/marin/services.yaml)
        with (root / "clusterstack.toml").open("a", encoding="utf-8") as fh:
            fh.write('\n[iam]\nfile = "infra/clusterstack/iam.yaml"\nstack = "marin"\n')
        code, out = run("--root", str(root), "iam", "init")    # the project of stack marin
        assert code == 0, out
        code, out = run("--root", str(root), "iam", "adopt", str(FIXTURE))
        assert code == 0, out
        code, out = run("--root", str(root), "validate")
        assert code == 0, out
        target = root.parent / "plan.json"
        code, out = run("--root", str(root), "plan", "marin", "-o", str(target))
        assert code == 0, out
        from clusterstack.plan import loads

        (plan,) = loads(target.read_text(encoding="utf-8"))
        loaded = load_iam(root / "infra" / "clusterstack" / "iam.yaml")
        cipher = load_cipher(loaded.model.encryption, root)
        people = {pid: cipher.decrypt(ct) for pid, ct in loaded.model.principals.items()}
        yield plan, people, out
    finally:
        mp.undo()


def planned_members(plan, people: dict[str, str]) -> list[dict]:
    """The member resources of the plan's IAM component, people's ``[secret]`` member resolved
    from the ``human-NNN`` their logical name ends with (the plan never holds an email)."""
    import re

    out = []
    for r in plan.resources:
        if not r.custom or not (r.parent or "").endswith("IamBindings::iam") or r.type not in MEMBER_TYPES.values():
            continue
        inputs = dict(r.inputs)
        import_id = r.adopt_id
        if inputs["member"] == "[secret]":
            pid = re.search(r"-(human-\d{3,})$", r.name).group(1)
            inputs["member"] = f"user:{people[pid]}"
            import_id = import_id.replace("user:<email>", inputs["member"])
        out.append({"type": r.type, "inputs": inputs, "import_id": import_id})
    return out


def test_marin_plans_marins_members_additive_and_identical(marin_plan):
    plan, people, _ = marin_plan
    expected = marin_members(FIXTURE.read_text(encoding="utf-8"), PROJECT)
    got = planned_members(plan, people)
    assert len(got) == len(expected) == 56
    assert Counter(map(key_of, got)) == Counter(map(key_of, expected))
    iam_types = {r.type for r in plan.resources if (r.parent or "").endswith("IamBindings::iam")}
    assert not any("Binding" in t for t in iam_types), "Marin's members are additive: no *Binding"


def test_marin_plans_marins_custom_roles_and_owned_accounts(marin_plan):
    plan, _, _ = marin_plan
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    roles = {r.inputs["roleId"]: r for r in plan.resources if r.type == tokens.PROJECT_CUSTOM_ROLE}
    # _create_custom_roles: project, role_id, title, description, permissions; no stage
    # (pulumi-gcp IAMCustomRole "stage": "Defaults to GA")
    assert {k: {x: v.inputs[x] for x in ("project", "title", "description", "permissions", "stage")}
            for k, v in roles.items()} == {
        r["role_id"]: {"project": PROJECT, "title": r["title"], "description": r["description"],
                       "permissions": sorted(r["permissions"]), "stage": "GA"} for r in data["custom_roles"]}
    assert {k: v.adopt_id for k, v in roles.items()} == {
        r["role_id"]: f"projects/{PROJECT}/roles/{r['role_id']}" for r in data["custom_roles"]}
    accounts = [r for r in plan.resources if r.type == tokens.GCP_SERVICE_ACCOUNT
                and (r.parent or "").endswith("IamBindings::iam")]
    # _create_service_accounts: project, account_id, display_name, protect=True
    assert [({k: a.inputs[k] for k in ("project", "accountId", "displayName")}, a.protect) for a in accounts] == [
        ({"project": PROJECT, "accountId": s["account_id"], "displayName": s["display_name"]}, True)
        for s in data["owned_service_accounts"]]


def test_marin_plan_holds_no_email(marin_plan):
    plan, people, out = marin_plan
    from clusterstack.plan import dumps

    text = dumps([plan])
    assert not any(e in text or e in out for e in people.values())
