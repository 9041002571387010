"""The program of a Cloud Run service project (``services/<name>/__main__.py`` calls
:func:`main`): one :class:`~clusterstack.components.services.cloudrun.CloudRunService` from the
stack config (``Pulumi.<stack>.yaml``, keys in the project's namespace ``<name>:…``).

Config keys: ``project``, ``projectNumber`` (names the IAP service agent), ``region``,
``image`` (an immutable digest), ``runtimeAccount`` are required; ``serviceName`` (default: the
project's name), ``env`` (map), ``secretEnv`` (``{VAR: "secret[:version]"}``: Secret Manager
references, values never enter Pulumi), ``minInstances`` (0), ``maxInstances`` (3),
``iapAccess`` (groups / ``*@domain``), and ``sourceRevision`` / ``changeCause``, which
``clusterstack deploy <service> rollout`` adds to a temporary copy so they end up on the
revision template (``deploy <service> history`` shows them). Exports ``url`` and
``runtime_account``.
"""

from __future__ import annotations

import pulumi

from clusterstack.components.gcp import kinds
from clusterstack.components.services.cloudrun import CloudRunService, CloudRunServiceArgs, SecretEnv
from clusterstack.components.services.marks import UNRELEASED


def secret_env(refs: dict) -> tuple[SecretEnv, ...]:
    """``{VAR: "secret[:version]"}`` → references (sorted by variable name)."""
    out = []
    for name, ref in sorted(refs.items()):
        secret, _, version = str(ref).partition(":")
        out.append(SecretEnv(name=name, secret=secret, version=version or "latest"))
    return tuple(out)


def main() -> None:
    """Declare the service of the current stack (see the module docstring)."""
    cfg = pulumi.Config()
    project = cfg.require("project")
    region = cfg.require("region")
    provider = kinds.provider("gcp", project=project, region=region)
    service = CloudRunService(pulumi.get_project(), CloudRunServiceArgs(
        project=project,
        project_number=str(cfg.require("projectNumber")),
        region=region,
        service_name=cfg.get("serviceName") or pulumi.get_project(),
        image=cfg.require("image"),
        runtime_account_id=cfg.require("runtimeAccount"),
        env=tuple(sorted((cfg.get_object("env") or {}).items())),
        secret_env=secret_env(cfg.get_object("secretEnv") or {}),
        min_instances=cfg.get_int("minInstances") or 0,
        max_instances=cfg.get_int("maxInstances") or 3,
        iap_access=tuple(cfg.get_object("iapAccess") or ()),
        source_revision=cfg.get("sourceRevision") or UNRELEASED,
        change_cause=cfg.get("changeCause") or "",
    ), provider=provider)
    pulumi.export("url", service.service.output("uri"))
    pulumi.export("runtime_account", service.runtime_account.output("email"))
