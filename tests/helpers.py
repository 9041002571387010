"""The helpers every test shares, written once: the repository paths, text edits of a copy of
the shipped workspace (expected line numbers are computed from the edited text, never
hard-coded), a git runner for throw-away repositories, and the leak canaries."""

from __future__ import annotations

import ast
import functools
import shutil
import subprocess
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path``, parsed once per test process (the tests
    read ``src/`` and never edit it; callers walk the tree and must not change it)."""
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))


def edit(path: Path, *replacements) -> str:
    """Apply ``(old, new)`` text replacements to the file at ``path``; each ``old`` must occur
    exactly once. ``edit(path, old, new)`` is one replacement. Returns the new text (also
    written back)."""
    if len(replacements) == 2 and all(isinstance(r, str) for r in replacements):
        replacements = (tuple(replacements),)
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return text


def line_of(text: str, needle: str) -> int:
    """1-based line on which the only occurrence of ``needle`` starts."""
    assert text.count(needle) == 1, f"{needle!r} occurs {text.count(needle)} times"
    return text[:text.index(needle)].count("\n") + 1


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` as a test identity; returns stdout without surrounding whitespace.
    Raises CalledProcessError on failure."""
    return subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=t@example.org",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(root: Path, message: str) -> str:
    """Stage everything, commit, return the new commit id."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@functools.cache
def _shipped_project_dirs() -> tuple[Path, ...]:
    """The [projects] directories of the shipped workspace, relative to it (its
    clusterstack.toml is read once per test process: the tests never edit the checkout)."""
    from clusterstack.workspace import Workspace

    return tuple(ref.directory.relative_to(REPO) for ref in Workspace.load(REPO).projects)


def copy_workspace(root: Path, *, services: bool = False, iam: bool = True) -> Path:
    """Copy clusterstack.toml, clusters/, infra/, every [projects] directory and the IAM file
    its [iam] declares (a declared file that is missing is an error) of the shipped workspace
    into ``root`` (created); optionally the services. ``iam=False`` leaves the IAM file out
    (to test that error). Returns root."""
    root.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copy(REPO / "clusterstack.toml", root / "clusterstack.toml")
    shutil.copytree(REPO / "clusters", root / "clusters")
    shutil.copytree(REPO / "infra", root / "infra", ignore=ignore)
    for rel in _shipped_project_dirs():
        shutil.copytree(REPO / rel, root / rel, ignore=ignore)
    if services:
        shutil.copy(REPO / "services.yaml", root / "services.yaml")
        shutil.copytree(REPO / "services", root / "services", ignore=ignore)
    if iam:
        shutil.copytree(REPO / "iam", root / "iam")
    return root


def make_repo(root: Path, *, services: bool = False, iam: bool = True) -> Path:
    """``root`` (a workspace copy, or made here when it has no clusterstack.toml) as a git
    repository on ``main`` with one commit."""
    if not (root / "clusterstack.toml").is_file():
        copy_workspace(root, services=services, iam=iam)
    else:
        if services and not (root / "services.yaml").exists():
            shutil.copy(REPO / "services.yaml", root / "services.yaml")
            shutil.copytree(REPO / "services", root / "services", ignore=shutil.ignore_patterns("__pycache__"))
        if iam and not (root / "iam").exists():
            shutil.copytree(REPO / "iam", root / "iam")
    (root / ".gitignore").write_text("__pycache__/\n.pulumi-state/\n")
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "workspace")
    return root


def iam_file_head(project: str, principals: dict[str, str]) -> str:
    """The opening of an IAM file (schema, project, the local tink keyset, ``principals``:
    ``{human-NNN: ciphertext}``) that a test completes with its own grants."""
    lines = "".join(f"  {pid}: {ct}\n" for pid, ct in principals.items())
    return ("schema_version: 1\n"
            f"project: {project}\n"
            "encryption:\n"
            "  scheme: tink-daead-aes256-siv\n"
            "  keyset: .iam/keyset.json\n"
            f"principals:\n{lines}")


def iam_workspace(root: Path) -> Path:
    """``root`` (created) as a git repository holding the shipped clusterstack.toml, .gitignore,
    clusters/ and infra/ but no IAM file yet — the start of an `iam init`. Returns ``root``."""
    root.mkdir(parents=True)
    for f in ("clusterstack.toml", ".gitignore"):
        shutil.copy(REPO / f, root / f)
    for d in ("clusters", "infra"):
        shutil.copytree(REPO / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    return root


class Repo:
    """A throw-away repository driven through `clusterstack iam …` in-process (stdout/stderr
    captured by pytest's ``capsys``)."""
    def __init__(self, root: Path, capsys, clients=None) -> None:
        self.root, self.capsys = root, capsys
        self.clients = clients   # a Clients for every run (e.g. a fake KMS); None: production
        self.outputs: list[str] = []

    def cs(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        from clusterstack.cli import main

        rc = main(["--root", str(self.root), "iam", *args], clients=self.clients)
        cap = self.capsys.readouterr()
        self.outputs += [cap.out, cap.err]
        return rc, cap.out, cap.err

    def ok(self, *args: str) -> str:
        rc, out, err = self.cs(*args)
        assert rc == 0, err
        return out

    @property
    def iam_file(self) -> Path:
        return self.root / "iam" / "iam.yaml"

    @property
    def keyset(self) -> Path:
        return self.root / ".iam" / "keyset.json"

    def commit(self, msg: str = "change") -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", msg)



def shown(path: Path) -> str:
    """``path`` as the CLI shows it in a message: relative to its workspace root (the nearest
    directory above it holding clusterstack.toml), absolute outside any workspace."""
    path = Path(path).parent.resolve() / Path(path).name    # a symlinked file keeps its name
    for d in path.parents:
        if (d / "clusterstack.toml").is_file():
            return str(path.relative_to(d))
    return str(path)
