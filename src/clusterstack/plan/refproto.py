"""The ``diff --base`` protocol: what the caller (:mod:`clusterstack.plan.at_ref`) asks the
planner of REF (``plan/__main__.py``, run in a child interpreter whose ``clusterstack`` is
REF's package) and what it answers — one versioned :class:`Request` in, one :class:`Response`
out — and the **stable surface** of the package that the driver may rely on.

Why a protocol: the driver is *this* package's file, run against an *older or newer* package
(REF's). It may use of REF's package only what :data:`SURFACE` names; everything else it
carries itself (the stack discovery, the cache). A name the driver needs is added here (and
to the test that plans a real earlier commit of this repository,
``tests/plan/test_refproto.py``), never reached for by duck typing.

Wire format (JSON, UTF-8): the request on the child's stdin, the response on its stdout;
stderr is the program's own chatter (and ``error: …`` lines for a human). Both documents carry
``"protocol": PROTOCOL``; a response of another protocol is refused
(:class:`ProtocolError`). The plans travel as the canonical plan JSON *text*
(``clusterstack.plan/v1``, REF's ``dumps``): byte-identical to what the same package writes
for ``plan --json``.

Standard library only: this module is loaded by path in the child (REF's package may predate
it), like :mod:`clusterstack.plan.cache`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import dataclass, field
from typing import Any

#: The protocol's name and version. Bump the version when a field changes meaning.
PROTOCOL = "clusterstack.refplan/v1"


class ProtocolError(ValueError):
    """A document that is not this protocol's (other version, missing or mistyped field)."""


@dataclass(frozen=True)
class Need:
    """One name of REF's package the driver uses: ``module`` and the attribute ``path`` in it
    (``Workspace.load``; the last part may be a dataclass field), whether the driver cannot
    work without it (``required``) and what it is used for (``why``: for an optional name,
    what the driver does without it)."""

    module: str
    path: str
    required: bool
    why: str

    @property
    def name(self) -> str:
        return f"{self.module}:{self.path}"


#: THE stable surface: every name of a REF's ``clusterstack`` package the driver uses.
#: Present in every version since the first commit with ``src/clusterstack``, except where
#: marked optional (the driver then does without, as ``why`` says).
SURFACE: tuple[Need, ...] = (
    Need("clusterstack.workspace", "Workspace.load", True, "load REF's workspace once per run"),
    Need("clusterstack.workspace", "Workspace.project_dir", True,
         "the cluster project's directory (its stack files are the cluster stacks)"),
    Need("clusterstack.workspace", "Workspace.root", True, "the workspace root"),
    Need("clusterstack.plan", "plan_stack", True, "plan one stack under Pulumi's mock runtime"),
    Need("clusterstack.plan", "dumps", True, "the canonical plan JSON (clusterstack.plan/v1)"),
    Need("clusterstack.errors", "ClusterstackError", True,
         "the program's own failures: their lines and exit code go back in the response"),
    Need("clusterstack.workspace", "Workspace.settings", False,
         "[projects] from the loaded workspace; without it the table is read with tomllib"),
    Need("clusterstack.plan.model", "loads", False,
         "read a cached plan back; without it REF is planned uncached"),
    Need("clusterstack.reads", "observing", False,
         "what a stack read (THE byte reader and the workspace listings); without it REF is "
         "planned uncached"),
    Need("clusterstack.reads", "note", False,
         "the driver's own listings of stack files, noted like the package's"),
)

#: The optional names the plan cache needs: without any of them REF is planned uncached
#: (a package older than the read record cannot say what a stack read).
CACHE_NEEDS = ("clusterstack.plan.model:loads", "clusterstack.reads:observing",
               "clusterstack.reads:note")


def _attribute(obj: Any, path: str) -> Any:
    """``obj`` followed along dotted ``path``; the last part may name a dataclass field (no
    class attribute when it has a default factory). Raises AttributeError."""
    parts = path.split(".")
    for i, part in enumerate(parts):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif i == len(parts) - 1 and dataclasses.is_dataclass(obj) and part in {
                f.name for f in dataclasses.fields(obj)}:
            return dataclasses.MISSING  # a field without a class attribute: present
        else:
            raise AttributeError(f"{path}: no {part!r}")
    return obj


def resolve_surface() -> dict[str, Any]:
    """``{Need.name: object}`` of every name of :data:`SURFACE` the importable ``clusterstack``
    package has (REF's, in the child); a missing optional name is left out. Raises
    ProtocolError naming every missing required one."""
    found: dict[str, Any] = {}
    missing = []
    for need in SURFACE:
        try:
            found[need.name] = _attribute(importlib.import_module(need.module), need.path)
        except (ImportError, AttributeError):
            if need.required:
                missing.append(need.name)
    if missing:
        raise ProtocolError(f"the package lacks {', '.join(missing)} of the stable surface "
                            f"({PROTOCOL})")
    return found


def _check(doc: Any, fields: dict[str, tuple[type, ...]], what: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("protocol") != PROTOCOL:
        got = doc.get("protocol") if isinstance(doc, dict) else type(doc).__name__
        raise ProtocolError(f"{what} of protocol {got!r}, expected {PROTOCOL!r}")
    for name, types in fields.items():
        if not isinstance(doc.get(name), types):
            raise ProtocolError(f"{what}: field {name!r} is not {' or '.join(t.__name__ for t in types)}")
    return doc


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@dataclass(frozen=True)
class Request:
    """What to plan at REF. ``root``: the workspace root in REF's checkout; ``stacks``: the
    cluster stacks (``None``: every one with a stack file); ``skip_missing``: leave out named
    stacks without one (presence is read from the response); ``projects``: ``"all"``, a list
    of ``[projects]`` handles, or ``None``; ``cache_dir`` / ``cache_program``: the plan cache
    (:mod:`clusterstack.plan.cache`) and the planning code's key, or ``None`` (no cache)."""

    root: str
    stacks: list[str] | None = None
    skip_missing: bool = True
    projects: str | list[str] | None = None
    cache_dir: str | None = None
    cache_program: str | None = None

    def dumps(self) -> str:
        return json.dumps({"protocol": PROTOCOL, **dataclasses.asdict(self)}, sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> "Request":
        """Raises ProtocolError (not JSON, another protocol, a mistyped field)."""
        try:
            doc = json.loads(text)  # the driver's own document, read under REF's package
        except ValueError as exc:
            raise ProtocolError(f"request: not JSON ({exc})") from None
        _check(doc, {"root": (str,), "skip_missing": (bool,)}, "request")
        stacks, projects = doc.get("stacks"), doc.get("projects")
        if not (stacks is None or _strings(stacks)) or not (
                projects is None or projects == "all" or _strings(projects)):
            raise ProtocolError("request: stacks/projects must be null, \"all\" or a list of names")
        for name in ("cache_dir", "cache_program"):
            if not isinstance(doc.get(name), (str, type(None))):
                raise ProtocolError(f"request: field {name!r} is not a string or null")
        return cls(root=doc["root"], stacks=stacks, skip_missing=doc["skip_missing"],
                   projects=projects, cache_dir=doc.get("cache_dir"),
                   cache_program=doc.get("cache_program"))


@dataclass(frozen=True)
class Response:
    """What the planner of REF answers. ``plans``: the canonical plan JSON text of every
    planned stack, in request order (``""`` on error); ``cached``: the cache was used (REF's
    package has the optional names it needs); ``hits`` / ``misses``: the stacks
    (``<project dir>/<stack>``) read from it / planned; ``missing``: the optional names of
    :data:`SURFACE` REF's package lacks; ``error``: ``None``, or the failure's ``lines`` and
    ``exit_code`` (2: REF's configs or program refused; 1: the package lacks a required name)."""

    plans: str = ""
    cached: bool = False
    hits: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None

    def dumps(self) -> str:
        return json.dumps({"protocol": PROTOCOL, **dataclasses.asdict(self)}, sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> "Response":
        """Raises ProtocolError (not JSON, another protocol, a mistyped field)."""
        try:
            doc = json.loads(text)  # the driver's answer (its plans are re-read with loads)
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"response: not JSON ({exc})") from None
        _check(doc, {"plans": (str,), "cached": (bool,), "hits": (list,), "misses": (list,),
                     "missing": (list,), "error": (dict, type(None))}, "response")
        if not all(_strings(doc[k]) for k in ("hits", "misses", "missing")):
            raise ProtocolError("response: hits/misses/missing must be lists of names")
        error = doc["error"]
        if error is not None and not (_strings(error.get("lines")) and isinstance(error.get("exit_code"), int)):
            raise ProtocolError("response: error must hold lines and exit_code")
        return cls(plans=doc["plans"], cached=doc["cached"], hits=doc["hits"],
                   misses=doc["misses"], missing=doc["missing"], error=error)
