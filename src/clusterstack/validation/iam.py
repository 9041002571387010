"""The IAM file, offline: it loads, a stack applies it (``[iam] stack`` names a GCP cluster of
the workspace), and its ``project:`` is that stack's project."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from pathlib import Path

from clusterstack.config.cluster import ClusterConfig, GcpProvisioning
from clusterstack.derive.gclb import derive_gclb
from clusterstack.errors import ClusterstackError, FieldError, Problem
from clusterstack.iam.loader import IamFileError, LoadedIam, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.validation.clusters import load_cluster, load_references
from clusterstack.validation.ownership import stack_grant_problems
from clusterstack.workspace import Workspace
from clusterstack.fsutil import file_kind


def check_project(loaded: LoadedIam, file: Path, stack: str, project: str) -> None:
    """The IAM file's ``project:`` must be the GCP project of the stack that applies it
    (``[iam] stack``); used by the program and, offline, by ``clusterstack validate``.
    Raises IamFileError located at ``project:``."""
    if loaded.model.project != project:
        raise IamFileError(f"project {loaded.model.project!r} is not the project of stack {stack} "
                           f"({project!r})", "fix project: in the IAM file or [iam] stack in "
                           "clusterstack.toml", file=file, line=loaded.line_of(("project",)),
                           field="project")


def iap_backend_names(ws: Workspace, cfg: ClusterConfig) -> frozenset[str] | None:
    """GCE names of the IAP backend services GCP stack ``cfg`` declares — one ``<cluster>-be``
    per ``provisioning.gcp.gclb.controllers`` entry (:func:`clusterstack.derive.gclb.derive_gclb`,
    the same derivation the load balancer component builds its ``iap_backends`` from); None
    without a load balancer. Raises ConfigError when a referenced cluster does not load and
    FieldError when the references do not fit the load balancer."""
    backends = derive_gclb(cfg, load_references(ws, cfg), ws.conventions)
    if backends is None:
        return None
    return frozenset(c.names.backend for c in backends.controllers)


def iap_backend_problems(loaded: LoadedIam, file: Path,
                         declared: Collection[str] | None) -> list[Problem]:
    """Every ``iap_backend_services[].name`` must be an IAP backend the stack declares
    (``declared``: GCE names, e.g. :func:`iap_backend_names` or the component's
    ``iap_backends``; None when the GCP stack has no load balancer — no ``provisioning.gcp.gclb``
    — so that every entry is refused: there is no backend the binding could name). The one
    rule behind the program's check, ``clusterstack validate``, ``plan`` and ``iam check``
    (docs/iam.md "IAP access"); one Problem per unknown name, located at it."""
    if declared is None:
        problem = ("is not an IAP backend of this stack: it has no load balancer "
                   "(provisioning.gcp.gclb)")
        hint = ("remove the entry, or add a gclb: block whose controllers declare <cluster>-be "
                "to the [iam] stack")
    else:
        known = ", ".join(sorted(declared)) or "none"
        problem = f"is not an IAP backend of this stack's load balancer ({known})"
        hint = "name a controller's backend, <cluster>-be, of provisioning.gcp.gclb.controllers"
    return [Problem(f"backend service {entry.name!r} {problem}", hint,
                    file=file, line=loaded.line_of(("iap_backend_services", i, "name")),
                    field=f"iap_backend_services[{i}].name")
            for i, entry in enumerate(loaded.model.iap_backend_services)
            if declared is None or entry.name not in declared]


def _iam_stack_config(ws: Workspace) -> ClusterConfig | None:
    """The config of the ``[iam] stack`` when it is a GCP cluster of the workspace that loads;
    None when the stack is unset, not a cluster, not GCP, or its config does not load (each of
    those is reported by :func:`iam_problems` or with the clusters)."""
    stack = IamSettings.from_workspace(ws).stack
    if stack is None or stack not in ws.cluster_names():
        return None
    try:
        cfg = load_cluster(ws, stack, references=False).config
    except ClusterstackError:
        return None
    return cfg if cfg.provisioning.gcp is not None else None


def _stack_iap_backends(ws: Workspace) -> tuple[bool, Collection[str] | None]:
    """``(applies, declared)``: whether there is a GCP ``[iam] stack`` to check the IAM file
    against, and the IAP backends it declares (:func:`iap_backend_names`; None for a GCP stack
    without a load balancer). ``applies`` is False when there is no such stack or a referenced
    cluster does not load: :func:`iam_problems` and the clusters' checks report those."""
    cfg = _iam_stack_config(ws)
    if cfg is None:
        return False, None
    try:
        return True, iap_backend_names(ws, cfg)
    except (ClusterstackError, FieldError):
        return False, None


def stack_iap_problems(ws: Workspace, loaded: LoadedIam,
                       backends: tuple[bool, Collection[str] | None] | None = None) -> list[Problem]:
    """:func:`iap_backend_problems` of ``loaded`` against the IAP backends of the ``[iam]
    stack`` (``backends``: :func:`_stack_iap_backends`, worked out here when not given; a GCP
    stack without a load balancer declares none, so every entry is refused). Nothing is
    checked — [] — when there is no GCP ``[iam] stack`` to check against."""
    applies, declared = backends if backends is not None else _stack_iap_backends(ws)
    return iap_backend_problems(loaded, loaded.path, declared) if applies else []


def check_rules(ws: Workspace) -> tuple[Callable[[LoadedIam], list[Problem]], ...]:
    """The rules of ``validate`` over a loaded IAM file that ``clusterstack iam check`` runs
    too (:func:`clusterstack.iam.ops.check` ``file_rules``) and every ``iam`` command that
    writes runs on the would-be file: :func:`stack_iap_problems`, and the Cloud Run grants a
    registered service's stack owns (:func:`clusterstack.validation.ownership.stack_grant_problems`:
    one side owns each grant). The stack's backends are
    read once, when a rule first runs (a write checks the file before and after the edit).
    Same Problems, same lines as ``validate`` and ``plan``."""
    backends = functools.cache(lambda: _stack_iap_backends(ws))
    return (lambda loaded: stack_iap_problems(ws, loaded, backends()),
            lambda loaded: stack_grant_problems(ws, loaded))


def config_addresses(ws: Workspace) -> tuple[str, ...]:
    """The contact addresses the configs *require* — ``[defaults] acme_email`` and every
    CoreWeave cluster's ``provisioning.coreweave.ingress.acme_email`` (cert-manager's ACME
    account contact: Let's Encrypt mails expiry notices there, RFC 8555 §7.3 ``contact``) —
    lower-cased and sorted. ``iam check`` accepts them wherever they appear: a lab must write
    them, so they are not leaks. A cluster whose config does not load contributes nothing (its
    problems are ``validate``'s)."""
    found = {ws.settings.defaults.acme_email} if ws.settings.defaults.acme_email else set()
    for name in ws.cluster_names():
        try:
            cw = load_cluster(ws, name, references=False).config.provisioning.coreweave
        except ClusterstackError:
            continue
        if cw is not None and cw.ingress is not None and cw.ingress.acme_email:
            found.add(str(cw.ingress.acme_email))
    return tuple(sorted(a.lower() for a in found))


def _stack_problem(ws: Workspace, message: str, hint: str) -> Problem:
    line = ws.line_of("iam", "stack") or ws.line_of("iam")
    return Problem(message=message, hint=hint, file=ws.file, line=line, field="iam.stack")


def gcp_clusters(ws: Workspace, project: str | None = None) -> dict[str, GcpProvisioning]:
    """The GCP clusters whose config loads (and, given ``project``, is in it): name → its
    ``provisioning.gcp``, sorted by name. A cluster that does not load is left out (its
    problems are the clusters' own)."""
    out = {}
    for name in sorted(ws.cluster_names()):
        try:
            gcp = load_cluster(ws, name, references=False).config.provisioning.gcp
        except ClusterstackError:
            continue
        if gcp is not None and (project is None or gcp.project == project):
            out[name] = gcp
    return out


def _gcp_stacks(ws: Workspace, project: str | None) -> list[str]:
    """GCP clusters whose config loads (and, given ``project``, is in it), sorted."""
    return list(gcp_clusters(ws, project))


def missing_file_problem(ws: Workspace) -> Problem | None:
    """A Problem when ``[iam]`` declares the IAM file (``file`` or ``stack`` set) and it does
    not exist — else the stack would silently plan and apply no IAM at all (the 16 IAM
    resources of the shipped gcp-demo would vanish). None when the file exists or ``[iam]``
    declares nothing (a workspace without IAM). Located at ``[iam] file`` (or ``[iam]``)."""
    s = IamSettings.from_workspace(ws)
    declared = "file" in ws.settings.iam.model_fields_set or s.stack is not None
    if not declared or s.file.is_file():
        return None
    rel = s.file.relative_to(ws.root) if s.file.is_relative_to(ws.root) else s.file
    if s.file.is_dir():
        what = "is a directory, not a file"
    elif s.file.exists():  # a named pipe, a device: never read (config.document.read_bytes)

        what = f"is {file_kind(s.file.stat().st_mode)}, not a regular file"
    else:
        what = "does not exist"
    return Problem(f"the IAM file {rel} {what}",
                   "restore it (git checkout), create it with `clusterstack iam init`, or remove "
                   "file and stack from [iam] for a workspace without IAM",
                   file=ws.file, line=ws.line_of("iam", "file") or ws.line_of("iam"),
                   field="iam.file")


def iam_problems(ws: Workspace) -> tuple[bool, list[Problem]]:
    """Check the IAM file when it exists: load it; ``[iam] stack`` must be set (else the file
    is applied by no stack and nothing would say so) and name a GCP cluster of the workspace,
    whose project must be the file's, every IAP accessor grant must name a backend that
    stack's load balancer declares (:func:`iap_backend_problems`), and every admin of a
    controller behind it must be admitted by its IAP binding
    (:func:`clusterstack.validation.iap.admin_binding_problems`). Stack problems are located
    in clusterstack.toml at ``[iam]``. Returns (file checked, problems)."""
    s = IamSettings.from_workspace(ws)
    if not s.file.is_file():
        missing = missing_file_problem(ws)
        return False, [missing] if missing else []
    try:
        loaded = load_iam(s.file)
    except ClusterstackError as exc:
        return True, list(exc.problems)
    rel = s.file.relative_to(ws.root) if s.file.is_relative_to(ws.root) else s.file
    if s.stack is None:
        candidates = _gcp_stacks(ws, loaded.model.project)
        example = candidates[0] if candidates else "<a GCP cluster>"
        return True, [_stack_problem(
            ws, f"{rel} exists but no stack applies it: [iam] stack is not set",
            f'add stack = "{example}" under [iam] in clusterstack.toml (the one GCP stack of project '
            f"{loaded.model.project} that owns its IAM"
            + (f"; candidates: {', '.join(candidates)})" if candidates else ")"))]
    if s.stack not in ws.cluster_names():
        return True, [_stack_problem(
            ws, f"[iam] stack {s.stack!r} is not a cluster of this workspace",
            f"name a GCP cluster in {ws.clusters_dir.name}/ (one of: "
            f"{', '.join(_gcp_stacks(ws, None)) or 'none'})")]
    try:
        cfg = load_cluster(ws, s.stack, references=False).config
    except ClusterstackError:
        return True, []  # the cluster's own problems are reported with the clusters
    gcp = cfg.provisioning.gcp
    if gcp is None:
        return True, [_stack_problem(
            ws, f"[iam] stack {s.stack!r} is not a GCP cluster: no stack would apply {rel}",
            f"name a GCP cluster (one of: {', '.join(_gcp_stacks(ws, None)) or 'none'})")]
    try:
        check_project(loaded, s.file, s.stack, gcp.project)
    except ClusterstackError as exc:
        return True, list(exc.problems)
    try:
        declared = iap_backend_names(ws, cfg)
    except (ClusterstackError, FieldError):
        return True, []  # a referenced cluster's problems are reported with the clusters
    from clusterstack.validation.iap import admin_binding_problems

    return True, (iap_backend_problems(loaded, s.file, declared)
                  + admin_binding_problems(ws, loaded, s.file, cfg))
