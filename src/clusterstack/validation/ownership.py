"""One side owns each Cloud Run grant: the service's stack or the IAM file, never both.

A Cloud Run service's ``roles/run.invoker`` and ``roles/iap.httpsResourceAccessor`` members can
be declared in two places: by the service's own program (clusterstack's
:class:`~clusterstack.components.services.cloudrun.CloudRunService` declares the IAP service
agent's invoker and one accessor per ``iapAccess`` entry, as Marin's
``iac.gcp.cloud_run.CloudRunService`` does — ``infra/pulumi/src/iac/gcp/cloud_run.py``@004f4a55
``iap-invoker``, ``iap-access-*``) and by the IAM file (``cloud_run_services``,
``iap_cloud_run_services``, ``cloud_run_jobs``; Marin's ``iam_data.yaml`` schema 2 lists the
same members: ``tests/iam/fixtures/marin-iam_data.yaml``). Declared twice, two stacks hold one
IAM member as two ``*IamMember`` resources: deleting either (a service retired, an IAM file
edit) removes the member the other still declares, and an authoritative binding on one side
deletes the other's members at every ``up``.

The rule: for a Cloud Run service or job registered in ``services.yaml``, the roles listed in
its ``stack_grants`` (:class:`~clusterstack.config.services.CloudRunTarget`,
:class:`~clusterstack.config.services.CloudRunJobTarget`) belong to the service's stack; the IAM
file may hold no grant of those roles on it. Every other role on it (who may deploy it, view
its logs …) is the IAM file's. :func:`stack_grant_problems` finds the double declarations;
``clusterstack iam check`` (:func:`clusterstack.validation.iam.check_rules`) and ``clusterstack
deploy <service> rollout`` refuse them (exit 2, at the IAM file's line).
"""

from __future__ import annotations

from typing import Any

from clusterstack.config.document import Document
from clusterstack.config.services import REGISTRY_FILE, RegistryFile
from clusterstack.errors import ConfigError, Problem
from clusterstack.iam.loader import IamFileError, load_iam
from clusterstack.iam.settings import IamSettings
from clusterstack.workspace import Workspace

#: IAM file section → (the registry block that can own it, the target's kind in messages)
SECTIONS = {"cloud_run_services": ("cloud_run", "run"), "iap_cloud_run_services": ("cloud_run", "iap-run"),
            "cloud_run_jobs": ("cloud_run_job", "run-job")}


def registered_owners(ws: Workspace) -> dict[tuple[str, str, str, str], tuple[str, frozenset[str], int | None]]:
    """``(IAM section, project, location, name) → (service, roles its stack owns, its line in
    services.yaml)`` for every registered Cloud Run service and job. Reads the registry's model
    only (a project directory that does not exist here does not matter); {} without a
    ``services.yaml`` or when it does not validate (``deploy list`` reports that)."""
    path = ws.root / REGISTRY_FILE
    if not path.is_file():
        return {}
    try:
        doc = Document.read(path, format="yaml")
        if not isinstance(doc.data, dict):
            return {}
        model = doc.validate(RegistryFile)
    except ConfigError:
        return {}
    out: dict[tuple[str, str, str, str], tuple[str, frozenset[str], int | None]] = {}
    for name, svc in model.services.items():
        line = doc.line_of(("services", name))
        if svc.cloud_run is not None:
            c = svc.cloud_run
            for section in ("cloud_run_services", "iap_cloud_run_services"):
                out[(section, c.project, c.region, c.service)] = (name, frozenset(c.stack_grants), line)
        if svc.cloud_run_job is not None:
            j = svc.cloud_run_job
            out[("cloud_run_jobs", j.project, j.region, j.job)] = (name, frozenset(j.stack_grants), line)
    return out


def stack_grant_problems(ws: Workspace, loaded: Any, *, service: str | None = None) -> list[Problem]:
    """The grants of the loaded IAM file (:class:`clusterstack.iam.loader.LoadedIam`) that a
    registered service's stack owns (module docstring), each located at its line; only those
    of ``service`` when given. [] when nothing is registered."""
    owners = registered_owners(ws)
    if not owners:
        return []
    model = loaded.model
    problems: list[Problem] = []
    for section, (_, kind) in SECTIONS.items():
        for i, target in enumerate(getattr(model, section, None) or ()):
            owner = owners.get((section, model.project, target.location, target.name))
            if owner is None or (service is not None and owner[0] != service):
                continue
            name, roles, line = owner
            for j, grant in enumerate(target.grants):
                if grant.role not in roles:
                    continue
                where = f"{REGISTRY_FILE}:{line}" if line else REGISTRY_FILE
                problems.append(Problem(
                    message=(f"{grant.role} on {kind}:{target.location}/{target.name} is declared by the "
                             f"stack of service {name} ({where}: stack_grants) — a member declared twice is "
                             "removed by whichever side drops it"),
                    hint=("delete this grant: the service's stack owns it; or, for the IAM file to own it, "
                          f"remove {grant.role} from stack_grants of {name} and from the service's program"),
                    file=loaded.path, line=loaded.line_of((section, i, "grants", j)),
                    field=f"{section}[{i}].grants[{j}]"))
    return problems


def check_service_grants(ws: Workspace, service: str) -> None:
    """``deploy <service> rollout``'s gate: raise ConfigError (exit 2) when the workspace's IAM
    file holds a grant ``service``'s stack owns. Nothing to check without an IAM file; an IAM
    file that does not load is ``iam check``'s to report, not the rollout's."""
    settings = IamSettings.from_workspace(ws)
    if not settings.file.is_file():
        return
    try:
        loaded = load_iam(settings.file)
    except IamFileError:
        return
    problems = stack_grant_problems(ws, loaded, service=service)
    if problems:
        raise ConfigError(problems=problems)
