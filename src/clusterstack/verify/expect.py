"""What should exist: read from the stack's offline plan.

The plan is the real program run under mocks (:func:`clusterstack.plan.plan_stack`): the
same derivations and component Args as ``up``, so the names, namespaces, instance types and
pinned IPs checked here are the ones the components declare — there is no second table of
expected resources. This module only knows, per resource *type*, how to find the live object
(its identity in the API) and which declared fields identify it, together with the same
field of the live object (:data:`RULES`). Values the plan cannot know (``[unknown]``,
``[secret]``, and the mock IDs other resources' references resolve to) are never compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clusterstack.plan.model import PlannedResource, StackPlan
from clusterstack.pulumi import tokens
from clusterstack.pulumi.tokens import STACK_TYPE
from clusterstack.pulumi.values import SECRET, UNKNOWN
from clusterstack.verify.model import Expected, GcpObject, HelmRelease, KubeObject, Lookup, NegMember

Fields = dict[str, Any]


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]…`` or None when a step is missing."""
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def _known(value: Any) -> bool:
    if value in (UNKNOWN, SECRET):
        return False
    if isinstance(value, (list, tuple)):
        return all(_known(v) for v in value)
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    return True


def _sorted(value: Any) -> Any:
    return sorted(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Rule:
    """How to verify one resource type.

    ``lookup(resource)`` names the live object; ``fields(obj)`` extracts the compared fields
    from an object in the API's JSON shape — applied to the plan's inputs (which use the same
    camelCase shape) and to the live object alike, unless ``declared`` is given for inputs
    whose shape differs from the API's.
    """

    system: str
    lookup: Callable[[PlannedResource], Lookup]
    fields: Callable[[dict], Fields] = lambda obj: {}
    declared: Callable[[dict], Fields] | None = None


# --- Kubernetes --------------------------------------------------------------------------

def _kube_lookup(r: PlannedResource) -> KubeObject:
    meta = r.inputs.get("metadata") or {}
    return KubeObject(api_version=r.inputs["apiVersion"], kind=r.inputs["kind"],
                      name=meta["name"], namespace=meta.get("namespace"))


# The fields that identify each kind's declared object (what an operator checks: every NodePool with
# its instance type; the flavor's topology; the queue's flavors; issuer servers; the Ingress
# class and issuer; the binding's role).
_KUBE_FIELDS: dict[str, Callable[[dict], Fields]] = {
    "NodePool": lambda o: {"spec.instanceType": dig(o, "spec", "instanceType")},
    "ResourceFlavor": lambda o: {"spec.topologyName": dig(o, "spec", "topologyName")},
    "ClusterQueue": lambda o: {"spec.resourceGroups[].flavors[].name": sorted(
        f.get("name") for g in (dig(o, "spec", "resourceGroups") or []) for f in g.get("flavors") or [])},
    "Topology": lambda o: {"spec.levels[].nodeLabel": [
        lv.get("nodeLabel") for lv in dig(o, "spec", "levels") or []]},
    "ClusterIssuer": lambda o: {"spec.acme.server": dig(o, "spec", "acme", "server")},
    "Ingress": lambda o: {
        "spec.ingressClassName": dig(o, "spec", "ingressClassName"),
        "metadata.annotations[cert-manager.io/cluster-issuer]":
            dig(o, "metadata", "annotations", "cert-manager.io/cluster-issuer")},
    "Middleware": lambda o: {"spec.ipAllowList.sourceRange": _sorted(
        dig(o, "spec", "ipAllowList", "sourceRange"))},
    "ClusterRoleBinding": lambda o: {"roleRef.name": dig(o, "roleRef", "name")},
    "PriorityClass": lambda o: {"value": o.get("value")},
}


def _kube_rule(kind: str) -> Rule:
    return Rule("kubernetes", _kube_lookup, _KUBE_FIELDS.get(kind, lambda o: {}))


_HELM = Rule("kubernetes",
             lambda r: HelmRelease(namespace=r.inputs["namespace"], name=r.inputs["name"]),
             fields=lambda o: {"status": o.get("status")},
             declared=lambda i: {"status": "deployed"})


# --- GCP ---------------------------------------------------------------------------------

def _global(collection: str) -> Callable[[PlannedResource], GcpObject]:
    return lambda r: GcpObject(collection, r.inputs["project"], r.inputs["name"])


def _port_range(value: Any) -> Any:
    # The API normalises "443" to "443-443".
    if isinstance(value, str) and "-" in value:
        lo, hi = value.split("-", 1)
        return lo if lo == hi else value
    return str(value) if value is not None else None


def _firewall_declared(i: dict) -> Fields:
    action, rules = ("allow", i.get("allows")) if i.get("allows") else ("deny", i.get("denies"))
    return {"priority": i.get("priority"), "direction": i.get("direction", "INGRESS"),
            "sourceRanges": _sorted(i.get("sourceRanges")), "targetTags": _sorted(i.get("targetTags")),
            "action": action,
            "ports": sorted(f"{p.get('protocol')}:{port}" for p in rules or [] for port in p.get("ports") or [])}


def _firewall_live(o: dict) -> Fields:
    action, rules = ("allow", o.get("allowed")) if o.get("allowed") else ("deny", o.get("denied"))
    return {"priority": o.get("priority"), "direction": o.get("direction"),
            "sourceRanges": _sorted(o.get("sourceRanges")), "targetTags": _sorted(o.get("targetTags")),
            "action": action,
            "ports": sorted(f"{p.get('IPProtocol')}:{port}" for p in rules or [] for port in p.get("ports") or [])}


def _armor_rules(o: dict) -> Fields:
    # A throttle rule also compares its threshold (requests per interval, per key).
    return {"rules": sorted(
        [r.get("priority"), r.get("action"), sorted(dig(r, "match", "config", "srcIpRanges") or []),
         [dig(r, "rateLimitOptions", "rateLimitThreshold", "count"),
          dig(r, "rateLimitOptions", "rateLimitThreshold", "intervalSec"),
          dig(r, "rateLimitOptions", "enforceOnKey")]]
        for r in o.get("rules") or [])}


def _backend_fields(o: dict) -> Fields:
    return {"loadBalancingScheme": o.get("loadBalancingScheme"), "protocol": o.get("protocol"),
            "iap.enabled": bool(dig(o, "iap", "enabled"))}


GCP_RULES: dict[str, Rule] = {
    tokens.ADDRESS: Rule(
        "gcp", lambda r: GcpObject("addresses", r.inputs["project"], r.inputs["name"],
                                   region=r.inputs["region"]),
        lambda o: {"address": o.get("address"), "addressType": o.get("addressType")}),
    tokens.ARTIFACT_REPOSITORY: Rule(
        "gcp", lambda r: GcpObject("repositories", r.inputs["project"], r.inputs["repositoryId"],
                                   location=r.inputs["location"]),
        lambda o: {"format": o.get("format"), "mode": o.get("mode")}),
    tokens.GLOBAL_ADDRESS: Rule(
        "gcp", _global("addresses"), lambda o: {"addressType": o.get("addressType")}),
    tokens.NETWORK_ENDPOINT_GROUP: Rule(
        "gcp", lambda r: GcpObject("networkEndpointGroups", r.inputs["project"], r.inputs["name"],
                                   zone=r.inputs["zone"]),
        lambda o: {"networkEndpointType": o.get("networkEndpointType"),
                   "defaultPort": o.get("defaultPort")}),
    tokens.NETWORK_ENDPOINT: Rule(
        "gcp", lambda r: NegMember(r.inputs["project"], r.inputs["zone"],
                                   r.inputs["networkEndpointGroup"], r.inputs["instance"],
                                   int(r.inputs["port"]))),
    tokens.HEALTH_CHECK: Rule(
        "gcp", _global("healthChecks"),
        lambda o: {"httpHealthCheck.requestPath": dig(o, "httpHealthCheck", "requestPath"),
                   "httpHealthCheck.port": dig(o, "httpHealthCheck", "port")}),
    tokens.BACKEND_SERVICE: Rule("gcp", _global("backendServices"), _backend_fields),
    tokens.FIREWALL: Rule("gcp", _global("firewalls"), _firewall_live, declared=_firewall_declared),
    tokens.SECURITY_POLICY: Rule("gcp", _global("securityPolicies"), _armor_rules),
    tokens.MANAGED_SSL_CERTIFICATE: Rule(
        "gcp", _global("sslCertificates"),
        lambda o: {"managed.domains": _sorted(dig(o, "managed", "domains"))}),
    tokens.URL_MAP: Rule(
        "gcp", _global("urlMaps"),
        lambda o: {"hostRules": sorted([sorted(h.get("hosts") or []), h.get("pathMatcher")]
                                       for h in o.get("hostRules") or [])}),
    tokens.TARGET_HTTPS_PROXY: Rule("gcp", _global("targetHttpsProxies")),
    tokens.SSL_POLICY: Rule(
        "gcp", _global("sslPolicies"),
        lambda o: {"profile": o.get("profile"), "minTlsVersion": o.get("minTlsVersion")}),
    tokens.GLOBAL_FORWARDING_RULE: Rule(
        "gcp", _global("forwardingRules"),
        lambda o: {"portRange": _port_range(o.get("portRange")),
                   "IPProtocol": o.get("IPProtocol"),
                   "loadBalancingScheme": o.get("loadBalancingScheme")},
        declared=lambda i: {"portRange": _port_range(i.get("portRange")),
                            "IPProtocol": i.get("ipProtocol"),
                            "loadBalancingScheme": i.get("loadBalancingScheme")}),
}

# Types that are declared but not read, and why (reported as "skipped", never a failure).
UNCHECKED: dict[str, str] = {
    tokens.IAP_SETTINGS: "IAP settings live in the IAP API, which verify does not read",
}


def rule_for(type_token: str) -> Rule | None:
    """The rule for a Pulumi type token, or None when verify cannot read that type."""
    if type_token in GCP_RULES:
        return GCP_RULES[type_token]
    if type_token == tokens.HELM_RELEASE:
        return _HELM
    if tokens.package(type_token) == "kubernetes":
        return _kube_rule(tokens.member(type_token))
    return None


def expectations(plan: StackPlan) -> tuple[Expected, ...]:
    """One :class:`Expected` per declared custom resource (providers, components and the
    Stack excluded), in the plan's URN order."""
    out = []
    for r in plan.resources:
        if not r.custom or r.is_provider or r.type == STACK_TYPE:
            continue
        system = tokens.package(r.type)
        rule = rule_for(r.type)
        if rule is None:
            reason = UNCHECKED.get(r.type, f"verify has no reader for {r.type}")
            out.append(Expected(system, r.type, r.name, None, reason=reason))
            continue
        declared = (rule.declared or rule.fields)(r.inputs)
        out.append(Expected(rule.system, r.type, r.name, rule.lookup(r),
                            tuple(sorted((k, v) for k, v in declared.items() if _known(v)))))
    return tuple(out)
