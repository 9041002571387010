"""Load reviewed cluster configs with ``file:line`` errors.

Only ``<workspace>/<clusters_dir>/<name>.yaml`` and ``clusterstack.toml`` are read. Parsing
uses ruamel.yaml's round-trip loader (it keeps each key's line and rejects duplicate keys);
validation uses the pydantic models in :mod:`clusterstack.config.models`; then every
derivation runs once so a bad scale group is reported at load time, with its line.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from clusterstack.config.models import ClusterConfig
from clusterstack.errors import ConfigError, FieldError, Problem
from clusterstack.workspace import Workspace

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedCluster:
    """A validated cluster config and where it came from (for located errors)."""

    config: ClusterConfig
    path: Path

    @cached_property
    def document(self) -> Any:
        """The round-trip document (keys carry their lines); parsed only when asked for."""
        return _load_yaml(self.path, positions=True)

    def line_of(self, path: Path_) -> int | None:
        """1-based line of a key path (its nearest existing ancestor when missing)."""
        return locate(self.document, path)[1]


def _load_yaml(path: Path, *, positions: bool) -> Any:
    """Parse a YAML file. ``positions=False`` uses the fast C-based safe loader (the happy
    path); ``positions=True`` the round-trip loader, whose nodes know their lines (used only
    to locate an error). Both reject duplicate keys."""
    yaml = YAML(typ="rt" if positions else "safe")
    yaml.allow_duplicate_keys = False
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", "check the cluster name and clusters_dir in "
                          "clusterstack.toml", file=path) from None
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        what = (exc.problem or "invalid YAML").strip()
        hint = ("remove or rename the repeated key" if "duplicate key" in what
                else "fix the YAML syntax")
        raise ConfigError(f"invalid YAML: {what}", hint, file=path, line=line) from None


def locate(doc: Any, path: Path_) -> tuple[Path_, int | None]:
    """Walk ``path`` through a ruamel document.

    Returns ``(path_in_document, line)``; lines are 1-based. Rules:

    - a part naming an existing key or list item is followed (the line becomes that key's);
    - union tags pydantic adds to an error's location are dropped: a discriminator value
      that is not the last part (``DELETE`` when the node has ``action: DELETE``) and the member
      tags of a smart union (``str``, ``literal['X']``), which appear below a scalar;
    - from the first key missing from the document on (a required field that is absent, or
      an optional section a cross-check needs), the rest of the path is kept as given and the
      line is that of the nearest existing ancestor.
    """
    node, kept, line = doc, [], (doc.lc.line + 1 if hasattr(doc, "lc") else None)
    missing = False
    for i, part in enumerate(path):
        if missing:
            kept.append(part)
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1 if hasattr(node, "lc") else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            line = node.lc.key(part)[0] + 1 if hasattr(node, "lc") else line
            node = node[part]
            kept.append(part)
        elif isinstance(part, str) and isinstance(node, dict) and i < len(path) - 1 and part in {
                v for v in node.values() if isinstance(v, str)}:
            continue  # discriminated-union tag (the discriminator's value), always followed by a field
        elif isinstance(part, str) and node is not None and not isinstance(node, dict):
            continue  # smart-union member tag below a scalar or list
        else:
            missing = True
            kept.append(part)
    return tuple(kept), line


def format_path(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_HINTS = {
    "missing": "add this field",
    "extra_forbidden": "remove it or fix its spelling; fields under provisioning are strict",
    "literal_error": "use one of the allowed values",
    "string_pattern_mismatch": "fix the value's format",
    "union_tag_invalid": "set action to DELETE or KEEP",
}


def _apply_defaults(data: dict, defaults: dict, filled: dict[Path_, str] | None = None) -> dict:
    """Fill lab-wide values from ``clusterstack.toml`` ``[defaults]`` where a file omits them.

    Returns a copy of ``data``. When ``filled`` is given, records each filled key path →
    the ``[defaults]`` key it came from (so an error in that value points at the TOML).
    """
    data = copy.deepcopy(data)
    filled = {} if filled is None else filled
    prov = data.get("provisioning")
    if not isinstance(prov, dict) or not isinstance(prov.get("coreweave"), dict):
        return data
    cw = prov["coreweave"]
    ingress = cw.get("ingress")
    if isinstance(ingress, dict):
        if "acme_email" not in ingress and "acme_email" in defaults:
            ingress["acme_email"] = defaults["acme_email"]
            filled[("provisioning", "coreweave", "ingress", "acme_email")] = "acme_email"
        if "federation_allow_sources" not in ingress and "federation_allow_sources" in defaults:
            ingress["federation_allow_sources"] = list(defaults["federation_allow_sources"])
            filled[("provisioning", "coreweave", "ingress", "federation_allow_sources")] = \
                "federation_allow_sources"
    dns = cw.get("federation_dns")
    if isinstance(dns, dict):
        if "zone_id" not in dns and "dns_zone_id" in defaults:
            dns["zone_id"] = defaults["dns_zone_id"]
            filled[("provisioning", "coreweave", "federation_dns", "zone_id")] = "dns_zone_id"
        if "api_token" not in dns and "dns_api_token" in defaults:
            dns["api_token"] = defaults["dns_api_token"]
            filled[("provisioning", "coreweave", "federation_dns", "api_token")] = "dns_api_token"
    return data


def _defaults_line(workspace: Workspace, key: str) -> int | None:
    """1-based line of ``key = …`` in the ``[defaults]`` table of ``clusterstack.toml``."""
    section = None
    for n, raw in enumerate(workspace.file.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[] ")
        elif section == "defaults" and line.split("=", 1)[0].strip() == key:
            return n
    return None


def _cross_checks(cfg: ClusterConfig, expected_name: str) -> list[FieldError]:
    """Rules that span sections; each names the field a user must change."""
    errs: list[FieldError] = []
    if cfg.name != expected_name:
        errs.append(FieldError(("name",), f"{cfg.name!r} does not match the file name "
                               f"{expected_name}.yaml", "rename the file or fix name:"))
    prov = cfg.provisioning
    other = "gcp" if prov.provider == "coreweave" else "coreweave"
    if getattr(prov, prov.provider) is None:
        errs.append(FieldError(("provisioning", prov.provider),
                               f"provider is {prov.provider} but the {prov.provider} block is missing",
                               f"add provisioning.{prov.provider}"))
    if getattr(prov, other) is not None:
        errs.append(FieldError(("provisioning", other),
                               f"provider is {prov.provider}; a {other} block is not allowed",
                               f"remove provisioning.{other} or change provider"))
    if prov.provider == "coreweave":
        if cfg.platform.coreweave is None:
            errs.append(FieldError(("platform", "coreweave"), "missing for a CoreWeave stack",
                                   "add platform.coreweave with region and kube_context"))
        if cfg.kubernetes_provider.kueue is None:
            errs.append(FieldError(("kubernetes_provider", "kueue", "cluster_queue"),
                                   "required for a CoreWeave stack",
                                   "add kubernetes_provider.kueue.cluster_queue"))
        if cfg.controller.coreweave is None:
            errs.append(FieldError(("controller", "coreweave"),
                                   "required for a CoreWeave stack (the federation Ingress backend)",
                                   "add controller.coreweave with service_name and port"))
    return errs


TYPO_CUTOFF = 0.8  # difflib ratio: 'scale_group' ~ 'scale_groups' (0.96), 'scheduler' ~ nothing


def _top_level_typos(data: dict[str, Any]) -> list[FieldError]:
    """Unknown top-level keys that look like a misspelt :class:`ClusterConfig` key.

    Unknown top-level keys are allowed (other tools keep their own sections in the file), but a
    typo of a known key silently drops that section (``scale_group:`` → no NodePool at all). A
    key is reported when it is unknown, a known key that the file lacks is its close match
    (``difflib.get_close_matches``, cutoff :data:`TYPO_CUTOFF`), and the path is the typo itself
    so the error points at its line.
    """
    known = {n for n in ClusterConfig.model_fields}
    known |= {f.alias for f in ClusterConfig.model_fields.values() if f.alias}
    absent = sorted(known - set(data))
    errs: list[FieldError] = []
    for key in data:
        if not isinstance(key, str) or key in known:
            continue
        match = difflib.get_close_matches(key, absent, n=1, cutoff=TYPO_CUTOFF)
        if match:
            errs.append(FieldError((key,), f"unknown top-level key {key!r} — did you mean "
                                   f"{match[0]!r}?", f"rename it to {match[0]}:"))
    return errs


def load_cluster(workspace: Workspace, name: str, *, references: bool = True) -> LoadedCluster:
    """Load, validate and derive ``clusters/<name>.yaml``.

    With ``references`` (the default), configs this one references — the clusters behind a
    GCP stack's ``provisioning.gcp.gclb`` — are loaded too (without following their own
    references) and checked against it (:mod:`clusterstack.config.references`).

    Raises ConfigError listing every problem as ``file:line: field: message — hint``.
    """
    path = workspace.cluster_file(name)
    if not path.is_file():
        known = ", ".join(workspace.cluster_names()) or "none"
        raise ConfigError(f"unknown cluster {name!r}", f"known clusters: {known}",
                          file=path)
    data = _load_yaml(path, positions=False)
    if not isinstance(data, dict):
        raise ConfigError("the file must be a YAML mapping", "start from a shipped example",
                          file=path, line=1)

    positioned: list[Any] = []  # the round-trip parse, made once and only on the error path

    filled: dict[Path_, str] = {}  # key path → [defaults] key, for values the file omits

    def located(path_: Path_, message: str, hint: str) -> Problem:
        for at, key in filled.items():
            if tuple(path_[:len(at)]) == at:  # the bad value came from clusterstack.toml
                return Problem(message=f"{message} (the lab-wide value {path.name} uses for "
                               f"{format_path(at)})", hint=hint, file=workspace.file,
                               line=_defaults_line(workspace, key),
                               field=format_path(("defaults", key, *path_[len(at):])))
        if not positioned:
            positioned.append(_load_yaml(path, positions=True))
        kept, line = locate(positioned[0], path_)
        return Problem(message=message, hint=hint, file=path, line=line, field=format_path(kept))

    typos = _top_level_typos(data)
    try:
        cfg = ClusterConfig.model_validate(_apply_defaults(data, workspace.defaults, filled))
    except ValidationError as exc:
        problems = [located(fe.path, fe.message, fe.hint) for fe in typos]
        for err in exc.errors(include_url=False):
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(located(tuple(err["loc"]), msg, _HINTS.get(err["type"], "fix the value")))
        raise ConfigError(problems=problems) from None

    field_errors = typos + _cross_checks(cfg, name)
    loaded = LoadedCluster(config=cfg, path=path)
    if not field_errors:
        from clusterstack.derive import derive_all  # local: derive imports config models
        try:
            derive_all(cfg)
        except FieldError as fe:
            field_errors.append(fe)
    if field_errors:
        raise ConfigError(problems=[located(fe.path, fe.message, fe.hint) for fe in field_errors])
    if references:
        from clusterstack.config.references import reference_problems  # local: loads clusters
        ref_problems = reference_problems(workspace, loaded)
        if ref_problems:
            raise ConfigError(problems=ref_problems)
    return loaded


def load_all(workspace: Workspace) -> list[LoadedCluster]:
    """Load every cluster config; raises one ConfigError carrying every file's problems."""
    loaded, problems = [], []
    for name in workspace.cluster_names():
        try:
            loaded.append(load_cluster(workspace, name))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems=problems)
    return loaded
