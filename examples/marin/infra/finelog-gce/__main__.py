"""finelog-gce: Marin's GCE Finelog server as a :class:`GceVmService` (one container on one VM).

Everything comes from the stack config; ``clusterstack deploy finelog-marin rollout`` adds
``finelog-gce:sourceRevision`` and ``finelog-gce:changeCause`` (and the ``--config image=…`` the
operator pins) to a temporary copy. The VM's service account is Marin's existing
``iris-controller`` (lib/finelog/config/marin.yaml@032da538 ``service_account``): it is looked up,
not created, so this stack never claims it.
"""

import pulumi
import pulumi_gcp as gcp

from clusterstack.components.services.gce import GceVmService, GceVmServiceArgs
from clusterstack.components.services.marks import UNRELEASED

cfg = pulumi.Config()
project = cfg.require("project")
provider = gcp.Provider("gcp", project=project)
service = GceVmService("finelog", GceVmServiceArgs(
    project=project,
    zone=cfg.require("zone"),
    instance_name=cfg.require("instanceName"),
    image=cfg.require("image"),
    runtime_account_id=cfg.require("runtimeAccount"),
    machine_type=cfg.get("machineType") or "e2-standard-2",
    boot_disk_gb=cfg.get_int("bootDiskGb") or 50,
    port=cfg.get_int("port") or 8080,
    health_path=cfg.get("healthPath") or "/healthz",   # finelog: /health (marin_deploy/finelog.py@a731b902)
    source_revision=cfg.get("sourceRevision") or UNRELEASED,
    change_cause=cfg.get("changeCause") or "",
), provider=provider, create_account=False)

pulumi.export("instance", service.instance.name)
