"""What a Marin checkout holds beside ``examples/marin`` that clusterstack reads: the service
projects ``examples/marin/services.yaml`` registers (``infra/<name>/``), of which ``clusterstack
validate`` and ``deploy`` read only ``Pulumi.yaml`` (the project's name) and the stack files. The
programs are Marin's and never run in tests (the engine is the fake), so a stand-in holds those
two files, each value from Marin's own (file@commit below).

:func:`add_service_projects` writes them into a copy of ``examples/marin`` — the tests that
validate or plan the example call it, as they copy Marin's published cluster configs in."""

from __future__ import annotations

from pathlib import Path

#: project directory → the ``name:`` of its Pulumi.yaml: infra/ducky@72555151 ducky,
#: infra/echo@72555151 marin-echo, infra/evaldash@49da99ea marin-evaldash, infra/grafana@6019f395
#: marin-grafana, infra/loom@004f4a55 marin-loom, infra/xprof@004f4a55 xprof,
#: infra/finelog@8abb8551 finelog
PROJECT_NAMES = {"ducky": "ducky", "echo": "marin-echo", "evaldash": "marin-evaldash",
                 "grafana": "marin-grafana", "loom": "marin-loom", "xprof": "xprof", "finelog": "finelog"}
#: project directory → its stacks: marin_deploy/pulumi.py@3cbaec2b PULUMI_SERVICES; infra/finelog
#: Pulumi.cw-rno2a.yaml / Pulumi.cw-us-east-08a.yaml@1435a05c, Pulumi.cw-us-east-02a.yaml@788296ea
STACKS = {"ducky": ("ducky-marin",), "echo": ("marin-echo",), "evaldash": ("marin-evaldash",),
          "grafana": ("marin-grafana",), "loom": ("marin-loom",), "xprof": ("xprof-marin",),
          "finelog": ("cw-rno2a", "cw-us-east-02a", "cw-us-east-08a")}
#: every stack file's secrets provider (e.g. infra/echo/Pulumi.marin-echo.yaml@4db997c6)
KMS = "gcpkms://projects/hai-gcp-models/locations/us-central1/keyRings/marin-iac-keyring/cryptoKeys/marin-iac-key"
#: the config a stand-in stack file carries (infra/finelog/Pulumi.<cluster>.yaml@1435a05c
#: finelog:cluster; infra/echo/__main__.py@1b52ee73 reads marin-echo:custom_domain)
CONFIG = {"finelog": lambda stack: {"finelog:cluster": stack},
          "echo": lambda stack: {"marin-echo:custom_domain": "echo.oa.dev"}}


def add_service_projects(root: Path) -> None:
    """Write the stand-in service projects (module docstring) under ``root/infra``."""
    for name, project in PROJECT_NAMES.items():
        d = root / "infra" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "Pulumi.yaml").write_text(f"name: {project}\nruntime:\n  name: python\n", encoding="utf-8")
        for stack in STACKS[name]:
            config = CONFIG.get(name, lambda _s: {})(stack)
            body = "".join(f"  {k}: {v}\n" for k, v in config.items())
            (d / f"Pulumi.{stack}.yaml").write_text((f"config:\n{body}" if body else "") + f"secretsprovider: {KMS}\n",
                                                    encoding="utf-8")
