"""echo: an IAP-gated Cloud Run service (clusterstack example service project).

Everything comes from the stack config (``Pulumi.<stack>.yaml``); ``clusterstack deploy echo
rollout`` adds ``echo:sourceRevision`` (the git commit) and ``echo:changeCause`` (the rollout
message) to a temporary copy, and they end up on the revision template so ``deploy echo
history`` can show where each retained revision came from.
"""

import pulumi
import pulumi_gcp as gcp

from clusterstack.components.services.cloudrun import CloudRunService, CloudRunServiceArgs, SecretEnv
from clusterstack.components.services.marks import UNRELEASED

cfg = pulumi.Config()
project = cfg.require("project")
region = cfg.require("region")


def secret_env(refs: dict) -> tuple[SecretEnv, ...]:
    """``{VAR: "secret[:version]"}`` → references (sorted by variable name)."""
    out = []
    for name, ref in sorted(refs.items()):
        secret, _, version = str(ref).partition(":")
        out.append(SecretEnv(name=name, secret=secret, version=version or "latest"))
    return tuple(out)


provider = gcp.Provider("gcp", project=project, region=region)
service = CloudRunService("echo", CloudRunServiceArgs(
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

pulumi.export("url", service.service.uri)
pulumi.export("runtime_account", service.runtime_account.email)
