"""Strict schema checks of declared Kubernetes objects and Helm values, against the
authoritative schemas of the versions the tool pins (``../shared/reference/``).

What a real API server does to an object, emulated with ``jsonschema`` (no hand-written
checker):

- the object's group/kind must be served by a CRD (or be a core kind), at a *served*
  ``apiVersion`` (apiextensions.k8s.io/v1 ``spec.versions[].served``);
- defaults of the CRD's structural schema are applied first (API server "defaulting"), then
  the version's ``openAPIV3Schema`` is validated with every object node closed
  (``additionalProperties: false``) unless it says ``x-kubernetes-preserve-unknown-fields``:
  a field the API server would silently *prune* is an error here;
- the CRD's CEL rules (``x-kubernetes-validations``) are evaluated with ``cel-python``;
  transition rules (those naming ``oldSelf``) only run on update, so they are listed as
  skipped, never silently passed;
- core kinds (Namespace, ClusterRole, Service, Ingress, PriorityClass …) go through
  ``kubernetes-validate`` in strict mode (Kubernetes' own OpenAPI, unknown fields rejected).

Helm values are checked against the chart's ``values.schema.json`` (cert-manager, traefik)
and, where a chart ships ``values.yaml``, every key path we set must exist in it (Kueue ships
no schema; a misspelt key is otherwise silently ignored by the templates).

The CoreWeave NodePool and Kueue Configuration schemas are ours (no upstream file exists),
written from their cited sources: ``tests/schemas/``.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

# libyaml's parser (PyYAML's C binding) where built: the same SafeConstructor, so the same
# data (checked equal on every reference file), ~10× faster on the large CRDs.
_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OWN_SCHEMAS = HERE / "schemas"
# Kubernetes minor versions CKS serves today (CoreWeave "CKS release notes": 1.32 and 1.33).
KUBERNETES_VERSIONS = ("1.32.0", "1.33.0")

# Pinned reference directories (shared/reference/README.md): the tool's chart pins must match.
KUEUE_REF = "kueue-v0.14.4"
CERT_MANAGER_REF = "cert-manager-v1.19.1"
TRAEFIK_REF = "traefik-helm-chart-v37.2.0"


def reference_dir() -> Path | None:
    """``shared/reference`` beside the repository (``../shared/reference``), or
    ``$CLUSTERSTACK_REFERENCE``; ``None`` when absent (tests then skip, saying why)."""
    candidates = [os.environ.get("CLUSTERSTACK_REFERENCE"), REPO.parent / "shared" / "reference",
                  REPO.parent.parent / "shared" / "reference"]
    for c in candidates:
        if c and (Path(c) / "README.md").is_file():
            return Path(c)
    return None


def kueue_crd_spec(plural: str) -> dict:
    """The ``spec`` schema (v1beta1, the version Kueue 0.14 serves) of the pinned Kueue CRD
    ``config/components/crd/bases/kueue.x-k8s.io_<plural>.yaml``, for tests that read a limit
    (``maxItems``, ``maxProperties``) from it. Skips the calling test where the reference is absent."""
    import pytest

    ref = reference_dir()
    if ref is None:
        pytest.skip("shared/reference/ (the pinned Kueue CRDs) is absent beside the repository")
    crd = yaml.load((ref / KUEUE_REF / "config/components/crd/bases" / f"kueue.x-k8s.io_{plural}.yaml")
                    .read_text(encoding="utf-8"), Loader=_YAML)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


# --- structural schema → strict JSON schema ------------------------------------------------

# ObjectMeta fields a declared object may carry (Kubernetes API "ObjectMeta"); the CRD
# schemas only say ``metadata: {type: object}`` because the API server checks it itself.
OBJECT_META = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 253},
        "generateName": {"type": "string"},
        "namespace": {"type": "string", "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}


def strict_schema(node: Any) -> Any:
    """Close every object node that does not preserve unknown fields (emulates pruning as an
    error). Returns a new schema; ``node`` is not changed."""
    if not isinstance(node, dict):
        return node
    s = {k: v for k, v in node.items()}
    if s.get("x-kubernetes-preserve-unknown-fields"):
        return s
    if "properties" in s:
        s["properties"] = {k: strict_schema(v) for k, v in s["properties"].items()}
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = strict_schema(s["additionalProperties"])
    elif s.get("type") == "object" and "additionalProperties" not in s:
        s["additionalProperties"] = False
    if isinstance(s.get("items"), dict):
        s["items"] = strict_schema(s["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in s:
            s[key] = [strict_schema(x) for x in s[key]]
    return s


def apply_defaults(schema: dict, value: Any) -> Any:
    """Fill ``default`` values of absent properties, recursively (API server defaulting of
    structural schemas). Mutates and returns ``value``."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name, sub in props.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        for name, v in value.items():
            if name in props:
                apply_defaults(props[name], v)
            elif isinstance(schema.get("additionalProperties"), dict):
                apply_defaults(schema["additionalProperties"], v)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for v in value:
            apply_defaults(schema["items"], v)
    return value


@dataclass
class Report:
    """Violations (``<kind>/<name>: <path>: <message>``) and CEL rules not evaluated."""

    violations: list[str] = field(default_factory=list)
    skipped_rules: set[str] = field(default_factory=set)
    checked: int = 0


def _path(parts: Iterable[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts) or "."


class Cel:
    """CEL rules of a CRD, compiled once (``cel-python``)."""

    def __init__(self) -> None:
        import celpy

        self._celpy = celpy
        self._env = celpy.Environment()
        self._programs: dict[str, Any] = {}

    def evaluate(self, rule: str, value: Any) -> bool:
        """True/False, or raises ValueError when the rule cannot be evaluated here."""
        celpy = self._celpy
        if rule not in self._programs:
            self._programs[rule] = self._env.program(self._env.compile(rule))
        try:
            result = self._programs[rule].evaluate({"self": celpy.json_to_cel(value)})
        except Exception as exc:  # celpy raises its own family; all mean "not evaluable"
            raise ValueError(f"{type(exc).__name__}: {exc}") from None
        if isinstance(result, celpy.celtypes.BoolType):
            return bool(result)
        raise ValueError(f"rule returned {result!r}, not a bool")


def cel_violations(cel: Cel, schema: dict, value: Any, path: tuple, report: Report, where: str) -> None:
    """Evaluate every ``x-kubernetes-validations`` rule at every node of ``value``."""
    for rule in schema.get("x-kubernetes-validations", []):
        text = rule["rule"]
        if "oldSelf" in text:  # transition rule: evaluated on update only (KEP-2876)
            report.skipped_rules.add(f"{where}{_path(path)}: {text} (transition rule, update only)")
            continue
        try:
            ok = cel.evaluate(text, value)
        except ValueError as exc:
            report.skipped_rules.add(f"{where}{_path(path)}: {text} ({exc})")
            continue
        if not ok:
            report.violations.append(f"{where}: {_path(path)}: CEL rule failed: "
                                     f"{rule.get('message') or text}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k, v in value.items():
            sub = props.get(k) or (schema.get("additionalProperties")
                                   if isinstance(schema.get("additionalProperties"), dict) else None)
            if sub:
                cel_violations(cel, sub, v, path + (k,), report, where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            cel_violations(cel, schema["items"], v, path + (i,), report, where)


class SchemaChecker:
    """Checks objects and Helm values against ``reference`` (+ ``tests/schemas/``)."""

    def __init__(self, reference: Path) -> None:
        self.reference = reference

    # CRDs -----------------------------------------------------------------------------
    @cached_property
    def crds(self) -> dict[tuple[str, str], dict]:
        """(group, kind) → CRD document, from the reference CRDs and our own schemas."""
        files = [*sorted((self.reference / KUEUE_REF / "config/components/crd/bases").glob("*.yaml")),
                 *sorted((self.reference / CERT_MANAGER_REF / "deploy/crds").glob("*.yaml")),
                 *sorted((self.reference / TRAEFIK_REF / "traefik/crds").glob("*.yaml")),
                 *sorted(OWN_SCHEMAS.glob("*.crd.yaml"))]
        out: dict[tuple[str, str], dict] = {}
        for f in files:
            for doc in yaml.load_all(f.read_text(encoding="utf-8"), Loader=_YAML):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    out[(doc["spec"]["group"], doc["spec"]["names"]["kind"])] = doc
        return out

    @cached_property
    def _cel(self) -> Cel:
        return Cel()

    def _validator(self, schema: dict):
        import jsonschema

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        return cls(schema)

    # Loaded and compiled once per checker (each is read-only once built): the strict schema
    # and validator of a CRD version, a chart's values schema and values.yaml, the Kueue
    # Configuration schema, and kubernetes-validate's schema of a core kind.
    @functools.cache
    def _custom(self, group: str, kind: str, version: str) -> tuple[dict, Any]:
        """(structural schema, validator of its strict form with ObjectMeta) of a served version."""
        crd = self.crds[(group, kind)]
        raw = next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
        schema = strict_schema(raw)
        schema["properties"] = {**schema.get("properties", {}), "metadata": OBJECT_META}
        return raw, self._validator(schema)

    @functools.cache
    def _json_validator(self, path: Path):
        return self._validator(json.loads(path.read_text(encoding="utf-8")))

    @functools.cache
    def _yaml(self, path: Path) -> Any:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML)

    @functools.cache
    def _core_validator(self, k8s_version: str, api_version: str, kind: str) -> tuple[Any, str]:
        """What ``kubernetes_validate.validate(obj, k8s_version, strict=True)`` (utils.py,
        kubernetes-validate 1.x) validates ``obj`` with, built once: the same schema files
        (the newest schema version not newer than ``k8s_version``, ``-local-strict``), the
        same registry, the same Draft 2020-12 validator; with the schema's ``major.minor``.
        Raises its SchemaNotFoundError (no such kind) and VersionNotSupportedError."""
        import jsonschema
        from kubernetes_validate import utils
        from referencing import Registry, Resource

        if utils.major_minor(k8s_version) > utils.latest_version():
            raise utils.VersionNotSupportedError(version=utils.major_minor(k8s_version))
        version = [v for v in utils.all_versions()
                   if utils.major_minor(v) <= utils.major_minor(k8s_version)][-1]
        schema_dir = f"v{version}-local-strict"
        group_version = re.sub(r'^([^./]*)(?:\.[^/]*)?/', r'\1-', api_version)
        try:
            schema = utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-"
                                           f"{group_version}.json", k8s_version)
        except FileNotFoundError:
            raise utils.SchemaNotFoundError(version=utils.major_minor(k8s_version), kind=kind,
                                            api_version=api_version) from None
        registry = Resource.from_contents(schema) @ (self._core_definitions(schema_dir, k8s_version)
                                                     @ Registry())
        return jsonschema.validators.Draft202012Validator(schema, registry=registry), utils.major_minor(version)

    @functools.cache
    def _core_definitions(self, schema_dir: str, k8s_version: str):
        from kubernetes_validate import utils
        from referencing import Resource

        return Resource.from_contents(utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/_definitions.json", k8s_version))

    def check_object(self, obj: dict, report: Report) -> None:
        """Add the violations of one declared object (apiVersion, kind, metadata, …)."""
        report.checked += 1
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        where = f"{kind}/{(obj.get('metadata') or {}).get('name', '?')}"
        group, _, version = api_version.rpartition("/")
        if (group, kind) in self.crds:
            self._check_custom(self.crds[(group, kind)], version, obj, report, where)
        elif any(g == group for g, _ in self.crds):
            report.violations.append(f"{where}: kind {kind} is not served by any CRD of group {group}")
        else:
            self._check_core(obj, report, where)

    def _check_custom(self, crd: dict, version: str, obj: dict, report: Report, where: str) -> None:
        served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
        if version not in served:
            report.violations.append(
                f"{where}: apiVersion {obj['apiVersion']} is not served by CRD "
                f"{crd['metadata']['name']} (served: {sorted(served)})")
            return
        raw, validator = self._custom(crd["spec"]["group"], crd["spec"]["names"]["kind"], version)
        value = apply_defaults(raw, copy.deepcopy(obj))
        for err in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
            report.violations.append(f"{where}: {_path(err.absolute_path)}: {err.message}")
        cel_violations(self._cel, raw, value, (), report, where)

    def _check_core(self, obj: dict, report: Report, where: str) -> None:
        import jsonschema
        import kubernetes_validate

        for k8s_version in KUBERNETES_VERSIONS:
            try:
                validator, schema_version = self._core_validator(k8s_version, obj["apiVersion"], obj["kind"])
                try:
                    validator.validate(obj)
                except jsonschema.ValidationError as exc:
                    raise kubernetes_validate.ValidationError(exc, version=schema_version) from None
            except kubernetes_validate.SchemaNotFoundError:
                report.violations.append(f"{where}: no Kubernetes {k8s_version} schema for "
                                         f"{obj.get('apiVersion')} {obj.get('kind')}")
            except kubernetes_validate.ValidationError as exc:  # the first error only
                report.violations.append(f"{where}: Kubernetes {k8s_version}: "
                                         f"{_path(exc.absolute_path)}: {exc.message}")

    # Helm values ----------------------------------------------------------------------
    def chart_files(self, chart: str) -> tuple[Path | None, Path | None, str]:
        """(values.schema.json, values.yaml, reference version) of a chart we pin."""
        if chart == "cert-manager":
            return (self.reference / CERT_MANAGER_REF / "deploy/charts/cert-manager/values.schema.json",
                    None, CERT_MANAGER_REF.rpartition("-")[2])
        if chart == "traefik":
            base = self.reference / TRAEFIK_REF / "traefik"
            return base / "values.schema.json", base / "values.yaml", _chart_version(base)
        if chart.endswith("/kueue"):
            base = self.reference / KUEUE_REF / "charts/kueue"
            return None, base / "values.yaml", _chart_version(base)
        raise KeyError(f"no reference schema for chart {chart!r}")

    def check_values(self, chart: str, values: dict, report: Report, where: str) -> None:
        report.checked += 1
        schema_file, values_file, _ = self.chart_files(chart)
        if schema_file is not None:
            for err in sorted(self._json_validator(schema_file).iter_errors(values), key=lambda e: list(e.path)):
                report.violations.append(f"{where}: values{_path(err.absolute_path)}: {err.message}")
        if values_file is not None:
            known = self._yaml(values_file)
            for path in unknown_keys(values, known):
                report.violations.append(f"{where}: values{_path(path)}: not a key of the chart's "
                                         f"values.yaml ({values_file.parent.name})")

    def check_kueue_configuration(self, doc: dict, report: Report, where: str) -> None:
        """The manager's Configuration (``managerConfig.controllerManagerConfigYaml``) against
        tests/schemas/kueue-configuration-v1beta1.json."""
        report.checked += 1
        validator = self._json_validator(OWN_SCHEMAS / "kueue-configuration-v1beta1.json")
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            report.violations.append(f"{where}: Configuration{_path(err.absolute_path)}: {err.message}")


def _chart_version(chart_dir: Path) -> str:
    return str(yaml.load((chart_dir / "Chart.yaml").read_text(encoding="utf-8"), Loader=_YAML)["version"])


def unknown_keys(values: Any, known: Any, path: tuple = ()) -> Iterator[tuple]:
    """Key paths of ``values`` that ``known`` (a chart's values.yaml) does not have. A key
    whose default is not a non-empty mapping (``{}``, a list, a scalar, null) accepts anything
    below it: the chart passes it through."""
    if not isinstance(values, dict) or not isinstance(known, dict) or not known:
        return
    for k, v in values.items():
        if k not in known:
            yield path + (k,)
        else:
            yield from unknown_keys(v, known[k], path + (k,))


# --- the objects of a plan ------------------------------------------------------------------

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def plan_objects(plan) -> Iterator[dict]:
    """Every Kubernetes object a plan declares (its inputs), Helm releases and providers excluded."""
    for r in plan.resources:
        if r.type.startswith("kubernetes:") and r.type != HELM_RELEASE:
            yield r.inputs


def plan_releases(plan) -> Iterator[tuple[str, dict]]:
    """(chart, values) of every Helm release a plan declares."""
    for r in plan.resources:
        if r.type == HELM_RELEASE:
            yield r.inputs["chart"], r.inputs.get("values", {})


def check_plan(checker: SchemaChecker, plan, report: Report) -> Report:
    """Every object, every Helm release's values and the Kueue Configuration of one plan."""
    for obj in plan_objects(plan):
        checker.check_object(obj, report)
    for chart, values in plan_releases(plan):
        where = f"{plan.stack}:{chart}"
        checker.check_values(chart, values, report, where)
        conf = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
        if chart.endswith("/kueue") and conf:
            checker.check_kueue_configuration(yaml.safe_load(conf), report, where)
    return report
