"""Commands that start things: ``init`` (a workspace), ``cluster new`` (a cluster from a
template), ``schema`` (the JSON Schema of a reviewed file, for editors). The files and their
rules are :mod:`clusterstack.scaffold`'s; the schemas :mod:`clusterstack.schemas`'."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable

import typer

from clusterstack import scaffold as sc
from clusterstack.cli import out, say, workspace
from clusterstack.config import cluster, types
from clusterstack.config.services import name_problem
from clusterstack.config.types import IpOrCidr, PATTERN_RULES, PROJECT_NAME
from clusterstack.errors import ConfigError, Problem
from clusterstack.scaffold import (CloudRunTemplate, ci_settings, cluster_plan, init_plan,
                                   service_plan)
from clusterstack.schemas import KINDS, schema_text
from clusterstack.validation.iam import gcp_clusters

#: This module's commands, built when one of them is used (clusterstack.cli.SUBCOMMANDS).
app = typer.Typer()

# What each template option must be: ONE value of the type its field has (config/types.py),
# checked before rendering so a value can never become two list items, a comment or a key.
_OPTION_TYPES = {
    "region": ("--region", "CoreweaveZone", "<CoreWeave zone, e.g. US-EAST-04A>"),
    "cks_cluster": ("--cks-cluster", "CksClusterName", "<CKS cluster name, e.g. cw-h200>"),
    "kube_context": ("--kube-context", "NonEmptyStr", "<kubeconfig context>"),
    "instance_type": ("--instance-type", "InstanceType", "<instance type, e.g. gd-8xh100ib-i128>"),
    "node_ram": ("--node-ram", "NonEmptyStr", "<RAM per node, e.g. 2048GB>"),
    "node_disk": ("--node-disk", "NonEmptyStr", "<disk per node, e.g. 27.94TiB>"),
    "gpu_model": ("--gpu-model", "NonEmptyStr", "<GPU model, e.g. H200>"),
    "cpu_instance_type": ("--cpu-instance-type", "InstanceType", "<instance type, e.g. cd-gp-i64-erapids>"),
    "cpu_node_ram": ("--cpu-node-ram", "NonEmptyStr", "<RAM per node, e.g. 512GB>"),
    "cpu_node_disk": ("--cpu-node-disk", "NonEmptyStr", "<disk per node, e.g. 6.98TiB>"),
    "acme_email": ("--acme-email", "Email", "<one address, e.g. ops@example.org>"),
    "allow_sources": ("--allow-source", "IpOrCidr", "<one IP or CIDR, e.g. 203.0.113.10>; repeat the option "
                      "for more"),
    "dns_hostname": ("--dns-hostname", "DnsHostname", "<hostname, e.g. ctl.example.org>"),
    "dns_target": ("--dns-target", "DnsHostname", "<host>.<org id>-<CKS cluster>.coreweave.app"),
    "dns_zone_id": ("--dns-zone-id", "NonEmptyStr", "<32-hex Cloudflare zone id>"),
    "dns_token": ("--dns-token", "NonEmptyStr", "<secret spec, e.g. gcp-secret://projects/P/secrets/S/versions/latest>"),
    "project": ("--project", "GcpProjectId", "<GCP project id>"),
    "project_number": ("--project-number", "ProjectNumber", "<the project's number, e.g. 123456789012>"),
    "controller_zone": ("--controller-zone", "GcpZone", "<GCP zone, e.g. us-central1-a>"),
    "controller_instance": ("--controller-instance", "GcpResourceName", "<the VM's name>"),
    "iap_domain": ("--iap-domain", "DnsHostname", "<hostname, e.g. ctl.your-lab.example.org>"),
    "iap_audience": ("--iap-audience", "IapAudience", "/projects/<number>/global/backendServices/<id>"),
}


def _one_value(value: str, type_name: str, option: str, example: str) -> Problem | None:
    """None when ``value`` is one value of ``config.types.<type_name>``, else the Problem
    naming ``option`` and the rule it breaks."""
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    try:
        TypeAdapter(getattr(types, type_name, None) or getattr(cluster, type_name),
                    config=ConfigDict(regex_engine="python-re")).validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = err["msg"].removeprefix("Value error, ")
        pattern = (err.get("ctx") or {}).get("pattern")   # a pattern rule's own words, if it has them
        rule = types.PATTERN_RULES.get(pattern, message) if isinstance(pattern, str) else message
        return Problem(f"{option} {value!r} is not one value: {rule}", f"pass {option} {example}")
    return None

cluster_app = typer.Typer(no_args_is_help=True, help="Add a cluster to the workspace from a template.")
app.add_typer(cluster_app, name="cluster")

_PROVIDERS = ("coreweave", "gcp")


def _project_name(directory: Path) -> str:
    """The project name ``init`` derives when ``--project-name`` is not given: the directory's
    own name, unchanged. Raises ConfigError (exit 2, before anything is written) naming
    ``--project-name`` when that name is no Pulumi project name (:data:`config.types.PROJECT_NAME`,
    from pulumi/pulumi sdk/go/common/tokens names.go) — ``9lab``, ``my lab``. Refused rather
    than rewritten: the project name is part of every resource URN and of the state's path, so
    it is chosen once, by the operator, and never a silent rewrite of what they typed."""
    name = directory.resolve().name
    if _one_value(name, "ProjectName", "--project-name", "") is None:
        return name
    raise ConfigError(problems=[Problem(
        f"init names the Pulumi project after the directory, and {name!r} is not {PATTERN_RULES[PROJECT_NAME]}",
        "pass --project-name NAME, e.g. --project-name clusterstack", field="--project-name")])


def _template(name: str, provider: str | None, *, region, cks_cluster, kube_context, instance_type,
              nodes, racks, node_cpu, node_ram, node_disk, gpus, gpu_model, cpu_instance_type, cpu_nodes,
              cpu_node_cpu, cpu_node_ram, cpu_node_disk, acme_email, allow_sources, dns_hostname,
              dns_target, dns_zone_id, dns_token, project, project_number, addresses, controller_zone,
              controller_port, controller_instance, iap_domain, iap_audience, defaults=None):
    """The template the options describe. Raises ConfigError naming EVERY missing, malformed
    or contradicting option at once (one run, not one per option), each by its flag:
    :func:`clusterstack.scaffold.resolve_pool` for the pools (``--nodes``/``--racks``, the
    per-node figures of a type the instance-type table lacks or a flag contradicting a known
    type). ``defaults``: the workspace's ``[defaults]`` (lab-wide values needing no option)."""
    defaults = defaults or {}
    problems: list[Problem] = []

    def need(value, option: str, what: str, why: str = "") -> None:
        if value in (None, [], ()):
            problems.append(Problem(f"{option} is required for a {provider} cluster{why}", f"pass {option} {what}"))

    problem = _one_value(name, "Rfc1123Label", "the cluster name", "<name, e.g. cw-h200>")
    if problem is not None:
        problems.append(problem)
    given = locals()
    for key, (option, type_name, example) in _OPTION_TYPES.items():
        values = given[key] if isinstance(given[key], (list, tuple)) else [given[key]]
        problems += [p for v in values if v is not None
                     and (p := _one_value(v, type_name, option, example)) is not None]
    if provider not in _PROVIDERS:
        raise ConfigError(problems=[Problem(f"--provider {provider!r} is not one of {', '.join(_PROVIDERS)}"
                                            if provider else "--provider is required with a cluster",
                                            "pass --provider coreweave or --provider gcp")])
    if provider == "gcp":
        need(project, "--project", "<GCP project id>")
        parsed = []
        for a in addresses or []:
            parts = a.split(":")
            if len(parts) in (2, 3):
                problems += [p for v, t, what in ((parts[0], "GcpResourceName", "NAME"),
                                                  (parts[1], "GcpRegion", "REGION"))
                             if (p := _one_value(v, t, f"--address {what}", "e.g. --address "
                                                 "controller-ingress:us-central1")) is not None]
                if len(parts) == 3 and (_one_value(parts[2], "IpOrCidr", "", "") is not None or "/" in parts[2]):
                    problems.append(Problem(f"--address IP {parts[2]!r} is not one IP address",
                                            "e.g. --address controller-ingress:us-central1:34.16.10.20"))
            if len(parts) not in (2, 3):
                problems.append(Problem(f"--address {a!r} is not NAME:REGION (a new IP) or NAME:REGION:IP "
                                        "(one the project holds)",
                                        "e.g. --address controller-ingress:us-central1"))
            else:
                parsed.append(sc.Address(parts[0], parts[1], parts[2] if len(parts) == 3 else None))
        controller = None
        if any(v is not None for v in (controller_zone, iap_domain, iap_audience, controller_instance)):
            why = " with a controller behind IAP"
            need(controller_zone, "--controller-zone", "<GCP zone of the controller VM, e.g. us-central1-a>", why)
            need(iap_domain, "--iap-domain", "<the controller's hostname, e.g. ctl.your-lab.example.org>", why)
            if iap_audience is None:
                need(project_number, "--project-number", "<the project's number: gcloud projects describe "
                     f"{project or 'PROJECT'} --format='value(projectNumber)'>",
                     " whose backend does not exist yet (it names the IAP settings; pass --iap-audience "
                     "instead to adopt an existing backend)")
            for key, option in (("dns_zone_id", "--dns-zone-id"), ("dns_api_token", "--dns-token")):
                if key not in defaults and given["dns_token" if key == "dns_api_token" else key] is None:
                    need(None, option, f"<{'Cloudflare zone id' if key == 'dns_zone_id' else 'secret spec'}> "
                         f"(or [defaults] {key})", " with a load balancer (an A record per certificate domain)")
            controller = sc.GcpController(
                zone=controller_zone or "", port=controller_port, iap_domain=iap_domain or "",
                instance=controller_instance, audience=iap_audience,
                dns_zone_id=dns_zone_id if dns_zone_id != defaults.get("dns_zone_id") else None,
                dns_api_token=dns_token if dns_token != defaults.get("dns_api_token") else None)
        if problems:
            raise ConfigError(problems=problems)
        return sc.GcpTemplate(name=name, project=project, addresses=tuple(parsed),
                              project_number=project_number, controller=controller)
    need(region, "--region", "<CoreWeave zone, e.g. US-EAST-04A>")
    need(instance_type, "--instance-type", "<GPU instance type, e.g. b200-8x, gb200-4x>")
    if "acme_email" not in defaults:
        need(acme_email, "--acme-email", "<cert-manager ACME contact> (or [defaults] acme_email)")
    if "federation_allow_sources" not in defaults:
        need(allow_sources, "--allow-source", "<IP or CIDR allowed to the federation ingress> "
             "(repeatable; or [defaults] federation_allow_sources)")
    gpu_pool, more = sc.resolve_pool(gpu=True, instance_type=instance_type, nodes=nodes, racks=racks,
                                     cpu=node_cpu, ram=node_ram, disk=node_disk, gpus=gpus, gpu_model=gpu_model)
    problems += more
    # Every CoreWeave cluster gets a CPU pool: the controller and the system charts run there,
    # never on GPU nodes (docs/cluster-objects.md "Where the charts run"); default
    # scaffold.DEFAULT_CPU_POOL
    cpu_pool, more = sc.resolve_pool(gpu=False, instance_type=cpu_instance_type or sc.DEFAULT_CPU_POOL.instance_type,
                                     nodes=cpu_nodes or sc.DEFAULT_CPU_POOL.nodes, cpu=cpu_node_cpu,
                                     ram=cpu_node_ram, disk=cpu_node_disk)
    problems += more
    if (dns_hostname is None) != (dns_target is None):
        problems.append(Problem("federation DNS needs both --dns-hostname and --dns-target",
                                "pass both (target: <host>.<org id>-<CKS cluster>.coreweave.app), or neither"))
    if dns_hostname is not None:
        if dns_zone_id is None and "dns_zone_id" not in defaults:
            need(None, "--dns-zone-id", "<32-hex Cloudflare zone id> (or [defaults] dns_zone_id)")
        if dns_token is None and "dns_api_token" not in defaults:
            need(None, "--dns-token", "<secret spec, e.g. gcp-secret://projects/P/secrets/S/versions/latest> "
                 "(or [defaults] dns_api_token)")
    if problems or gpu_pool is None:
        raise ConfigError(problems=problems)
    dns = (sc.Dns(dns_hostname, dns_target, zone_id=dns_zone_id, api_token=dns_token)
           if dns_hostname else None)
    return sc.CoreweaveTemplate(
        name=name, region=region, cks_cluster=cks_cluster, kube_context=kube_context,
        # --acme-email, else [defaults] acme_email: one of them is there (need() above)
        gpu_pool=gpu_pool, cpu_pool=cpu_pool, dns=dns, acme_email=acme_email or defaults["acme_email"],
        allow_sources=tuple(allow_sources or defaults.get("federation_allow_sources") or ()))


def _lab_wide(options: dict[str, Any]) -> dict[str, Any]:
    """The lab-wide values among ``options`` (scaffold.LAB_WIDE), by their ``[defaults]`` key:
    what ``init`` writes to ``clusterstack.toml`` so ``cluster new`` needs no option for them."""
    values = {"acme_email": options.get("acme_email"), "federation_allow_sources": options.get("allow_sources"),
              "dns_zone_id": options.get("dns_zone_id"), "dns_api_token": options.get("dns_token")}
    out = {}
    for key, value in values.items():
        if value in (None, [], ()):
            continue
        if key == "federation_allow_sources":   # normalised as the loader reads them
            from pydantic import TypeAdapter

            value = [TypeAdapter(IpOrCidr).validate_python(v) for v in value]
        out[key] = value
    return out


# The template options, declared once for `init --cluster` and `cluster new`: (parameter, type,
# typer.Option). typer has no option groups, so `_template_options` adds them to a command's
# signature (typer reads ``inspect.signature``, which honours ``__signature__``).
_TEMPLATE_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("provider", str, typer.Option(None, "--provider", help="coreweave or gcp.")),
    ("region", str, typer.Option(None, "--region", help="CoreWeave: the zone, e.g. US-EAST-04A.")),
    ("cks_cluster", str, typer.Option(None, "--cks-cluster", help="CoreWeave: the CKS cluster's name (default: the cluster name).")),
    ("kube_context", str, typer.Option(None, "--kube-context", help="CoreWeave: the kubeconfig context (default: <cks cluster>_<region>).")),
    ("instance_type", str, typer.Option(None, "--instance-type", help="CoreWeave: the GPU pool's instance type, e.g. gd-8xh100ib-i128.")),
    ("nodes", int, typer.Option(None, "--nodes", min=1, help="CoreWeave: GPU nodes (pinned: NodePool min = max).")),
    ("racks", int, typer.Option(None, "--racks", min=1, help="CoreWeave: whole NVL72 racks of a rack-scale type (gb200-4x, gb300-4x: 18 nodes each), instead of --nodes.")),
    ("node_cpu", int, typer.Option(None, "--node-cpu", min=1, help="vCPUs per GPU node (known types: filled in).")),
    ("node_ram", str, typer.Option(None, "--node-ram", help="RAM per GPU node, e.g. 2048GB.")),
    ("node_disk", str, typer.Option(None, "--node-disk", help="Local disk per GPU node, e.g. 27.94TiB.")),
    ("gpus", int, typer.Option(None, "--gpus", min=1, help="GPUs per node.")),
    ("gpu_model", str, typer.Option(None, "--gpu-model", help="GPU model, e.g. H200 (names the pool).")),
    ("cpu_instance_type", str, typer.Option(None, "--cpu-instance-type", help="CoreWeave: the CPU pool's instance type (the controller and the charts run there; default cd-gp-i64-erapids).")),
    ("cpu_nodes", int, typer.Option(None, "--cpu-nodes", min=1, help="CoreWeave: CPU pool nodes (pinned; default 2).")),
    ("cpu_node_cpu", int, typer.Option(None, "--cpu-node-cpu", min=1, help="vCPUs per CPU node.")),
    ("cpu_node_ram", str, typer.Option(None, "--cpu-node-ram", help="RAM per CPU node.")),
    ("cpu_node_disk", str, typer.Option(None, "--cpu-node-disk", help="Local disk per CPU node.")),
    ("acme_email", str, typer.Option(None, "--acme-email", help="CoreWeave: cert-manager's ACME contact address.")),
    ("allow_sources", list[str], typer.Option(None, "--allow-source", help="CoreWeave: an IP/CIDR allowed to the federation ingress (repeatable).")),
    ("dns_hostname", str, typer.Option(None, "--dns-hostname", help="CoreWeave: the federation hostname (Cloudflare CNAME).")),
    ("dns_target", str, typer.Option(None, "--dns-target", help="CoreWeave: <host>.<org id>-<CKS cluster>.coreweave.app.")),
    ("dns_zone_id", str, typer.Option(None, "--dns-zone-id", help="CoreWeave: the Cloudflare zone id.")),
    ("dns_token", str, typer.Option(None, "--dns-token", help="CoreWeave: the Cloudflare token's secret spec (gcp-secret://…).")),
    ("project", str, typer.Option(None, "--project", help="GCP: the project id.")),
    ("project_number", str, typer.Option(None, "--project-number", help="GCP: the project's number (names the IAP settings; needed with a controller whose backend does not exist yet).")),
    ("controller_zone", str, typer.Option(None, "--controller-zone", help="GCP: the zone of the controller VM; adds the controller behind IAP and the lab's HTTPS load balancer.")),
    ("controller_port", int, typer.Option(10000, "--controller-port", min=1, max=65535, help="GCP: the port the controller serves HTTP on.")),
    ("controller_instance", str, typer.Option(None, "--controller-instance", help="GCP: the controller VM's name (default: [conventions] controller_instance).")),
    ("iap_domain", str, typer.Option(None, "--iap-domain", help="GCP: the controller's hostname behind IAP (its certificate's domain).")),
    ("iap_audience", str, typer.Option(None, "--iap-audience", help="GCP: /projects/<number>/global/backendServices/<id> of an existing backend, to adopt it.")),
    ("addresses", list[str], typer.Option(None, "--address", help="GCP: a static address NAME:REGION (GCP picks a new IP) or NAME:REGION:IP (an IP the project already holds: adopt-only, imported) (repeatable).")),
)


def _template_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` (its own parameters, then ``options``) as a typer command that also takes
    every template option of :data:`_TEMPLATE_OPTIONS`; they reach ``command`` as
    ``options={parameter: value}``."""
    own = inspect.signature(command, eval_str=True)
    params = [p for name, p in own.parameters.items() if name != "options"]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
               for name, kind, option in _TEMPLATE_OPTIONS]

    @functools.wraps(command)
    def with_options(**kwargs: Any) -> None:
        options = {name: kwargs.pop(name) for name, _kind, _option in _TEMPLATE_OPTIONS}
        return command(**kwargs, options=options)

    with_options.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    with_options.__annotations__ = {}  # the signature holds the evaluated ones
    return with_options


@app.command()
@_template_options
def init(directory: Path = typer.Argument(Path("."), help="Where (default: here; created when missing)."),
         project_name: str = typer.Option(None, "--project-name",
                                          help="The Pulumi project name (default: the directory's name, "
                                          "when it is one; else this option is required)."),
         cluster: str = typer.Option(None, "--cluster", help="Also create this first cluster from a template "
                                     "(with --provider and its options)."),
         ci: bool = typer.Option(True, "--ci/--no-ci", help="Write the GitHub workflows (preview with one PR "
                                 "comment, drift, deployment check) and the pip requirements file they "
                                 "install clusterstack from."),
         ci_requirement: str = typer.Option(None, "--ci-requirement", help="The pip requirement the workflows "
                                            "install (default: how this clusterstack was installed)."),
         *, options: dict[str, Any]) -> None:
    """Create a workspace in DIRECTORY (empty, or an existing repository): a commented
    clusterstack.toml (lab-wide values given — --acme-email, --allow-source, --dns-zone-id,
    --dns-token — go to its [defaults], so `cluster new` needs them no more), the Pulumi
    project (infra/Pulumi.yaml, infra/__main__.py), editor schemas, .gitignore entries and the
    GitHub workflows — and with --cluster, a first cluster and its stack file. Every missing or
    contradicting option is named in one run. Never overwrites: when any file exists, nothing
    is written (exit 2).

    Example: clusterstack init lab --cluster cw-b200 --provider coreweave --region US-EAST-13A
    --instance-type b200-8x --nodes 24 --cpu-instance-type cd-gp-i64-erapids --cpu-nodes 4
    --acme-email ops@lab.example.org --allow-source 203.0.113.0/24"""
    if directory.exists() and not directory.is_dir():
        raise ConfigError("not a directory", "pass a directory to init", file=directory)
    if project_name is not None and (problem := _one_value(
            project_name, "ProjectName", "--project-name", "<letters, digits, '_', '.', '-'>")) is not None:
        raise ConfigError(problems=[problem])
    problems = []
    for key in ("acme_email", "allow_sources", "dns_zone_id", "dns_token"):   # lab-wide: checked without a cluster too
        option, type_name, example = _OPTION_TYPES[key]
        values = options[key] if isinstance(options[key], (list, tuple)) else [options[key]]
        problems += [p for v in values if v is not None and (p := _one_value(v, type_name, option, example))]
    if ci_requirement is not None and not ci_requirement.strip() or "\n" in (ci_requirement or ""):
        problems.append(Problem("--ci-requirement must be one pip requirement line",
                                "e.g. --ci-requirement 'clusterstack==0.1.0'"))
    try:
        project_name = project_name or _project_name(directory)
    except ConfigError as exc:
        problems += exc.problems
    template = None
    if cluster is not None or options["provider"] is not None:
        if cluster is None:
            problems.append(Problem("--provider given without --cluster", "pass --cluster NAME"))
        else:
            try:
                template = _template(cluster, **options)
            except ConfigError as exc:
                problems += [p for p in exc.problems if p not in problems]
    if problems:
        raise ConfigError(problems=problems)
    plan = init_plan(directory, project_name=project_name, cluster=template, defaults=_lab_wide(options),
                     ci=ci_settings(ci_requirement) if ci else None)
    plan.check_new()
    for rel in plan.write():
        say(f"wrote {rel}")
    where = "" if directory.resolve() == Path.cwd().resolve() else f" (cd {directory})"
    say(f"next{where}: clusterstack validate; clusterstack plan --all"
        + ("" if template else "; add a cluster: clusterstack cluster new NAME --provider coreweave …"))


@cluster_app.command("new")
@_template_options
def cluster_new(name: str = typer.Argument(..., help="The cluster (= stack) name."),
                *, options: dict[str, Any]) -> None:
    """Add clusters/NAME.yaml (from the CoreWeave or GCP template) and its stack file.
    Values in [defaults] (acme_email, federation_allow_sources, DNS zone and token) need no
    option. Every missing or contradicting option is named in one run. Never overwrites
    (exit 2, nothing written).

    Examples: clusterstack cluster new cw-gb200 --provider coreweave --region US-EAST-08A
    --instance-type gb200-4x --racks 6 — and a GCP project with its controller behind IAP and
    the load balancer: clusterstack cluster new gcp-lab --provider gcp --project lab-project
    --project-number 123456789012 --controller-zone us-central1-a --iap-domain ctl.lab.example.org"""
    ws = workspace()
    template = _template(name, defaults=ws.defaults.model_dump(exclude_none=True), **options)
    plan = cluster_plan(ws, template)
    plan.check_new()
    for rel in plan.write():
        say(f"wrote {rel}")
    say(f"next: clusterstack validate {name}; clusterstack plan {name}")


service_app = typer.Typer(no_args_is_help=True, help="Add a service (services.yaml) from a template.")
app.add_typer(service_app, name="service")


@service_app.command("new")
def service_new(name: str = typer.Argument(..., help="The service name (clusterstack deploy NAME …)."),
                image: str = typer.Option(None, "--image", help="The container image, by digest "
                                          "(REGISTRY/PATH@sha256:…)."),
                region: str = typer.Option(None, "--region", help="The Cloud Run region, e.g. us-central1."),
                project: str = typer.Option(None, "--project", help="GCP project (default: the one GCP "
                                            "cluster's)."),
                project_number: str = typer.Option(None, "--project-number", help="The project's number "
                                                   "(default: that cluster's provisioning.gcp.project_number)."),
                runtime_account: str = typer.Option(None, "--runtime-account", help="Service account id the "
                                                    "revisions run as (default: <name>-runtime)."),
                stack: str = typer.Option("prod", "--stack", help="The production stack's name."),
                iap_access: list[str] = typer.Option(None, "--iap-access", help="A group:… or *@domain "
                                                     "allowed through IAP (repeatable).")) -> None:
    """Add a Cloud Run service: services/NAME/ (Pulumi.yaml, __main__.py, Pulumi.STACK.yaml)
    and its services.yaml entry; roll it out with `clusterstack deploy NAME rollout`. The GCP
    project and its number default to the workspace's GCP cluster's. Every missing option is
    named in one run; never overwrites (exit 2, nothing written).

    Example: clusterstack service new dashboard --region us-central1
    --image us-central1-docker.pkg.dev/lab-project/apps/dashboard@sha256:…"""
    ws = workspace()
    problems: list[Problem] = []
    if (why := name_problem(name)) is not None:
        problems.append(Problem(why, "pass another NAME"))
    gcp = list(gcp_clusters(ws, project).values())
    if project is None and len({g.project for g in gcp}) == 1:
        project = gcp[0].project
    if project_number is None:
        project_number = next((g.project_number for g in gcp if g.project_number), None)
    for value, option, what in ((project, "--project", "<GCP project id> (no single GCP cluster to take it from)"),
                                (project_number, "--project-number", "<the project's number> (names the IAP "
                                 "service agent; or set provisioning.gcp.project_number of its GCP cluster)"),
                                (region, "--region", "<Cloud Run region, e.g. us-central1>"),
                                (image, "--image", "<REGISTRY/PATH@sha256:DIGEST> (what a rollout deploys)")):
        if value is None:
            problems.append(Problem(f"{option} is required", f"pass {option} {what}"))
    for value, type_name, option, example in ((project, "GcpProjectId", "--project", "<GCP project id>"),
                                              (project_number, "ProjectNumber", "--project-number", "<digits>"),
                                              (region, "GcpRegion", "--region", "<e.g. us-central1>"),
                                              (image, "NonEmptyStr", "--image", "<REGISTRY/PATH@sha256:…>"),
                                              (runtime_account, "GcpServiceAccountId", "--runtime-account",
                                               "<6–30 lowercase letters, digits, '-'>"),
                                              (stack, "StackName", "--stack", "<e.g. prod>")):
        if value is not None and (p := _one_value(value, type_name, option, example)) is not None:
            problems.append(p)
    if image is not None and "@sha256:" not in image:
        problems.append(Problem(f"--image {image!r} is not pinned by digest",
                                "pass REGISTRY/PATH@sha256:DIGEST: a tag can move under a reviewed config"))
    if problems:
        raise ConfigError(problems=problems)
    plan = service_plan(ws, CloudRunTemplate(
        name=name, project=project, project_number=project_number, region=region, image=image,
        runtime_account=runtime_account or f"{name}-runtime"[:30], stack=stack,
        iap_access=tuple(iap_access or ())))
    plan.check_new()
    for rel in plan.write():
        say(f"wrote {rel}")
    say(f"next: clusterstack validate; clusterstack deploy {name} rollout")


@app.command("schema")
def schema_cmd(kind: str = typer.Argument(..., help="cluster, workspace, iam, services, buckets or github.")) -> None:
    """Print the JSON Schema of a reviewed file (for editors: a yaml-language-server
    `# yaml-language-server: $schema=<file>` modeline, or the editor's schema settings)."""
    if kind not in KINDS:
        raise ConfigError(problems=[Problem(f"unknown schema {kind!r}", f"one of: {', '.join(KINDS)}")])
    out.file.write(schema_text(kind))
