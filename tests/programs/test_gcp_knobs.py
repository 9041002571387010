"""The [conventions] knobs of the shared load balancer (workspace/model.py ``Conventions``): a
new lab gets the SSL policy, the token-proxy throttle and the certificates' DNS records; Marin's
workspace (examples/marin/clusterstack.toml, each value cited there) turns all three off, so a
load balancer planned under Marin's conventions declares exactly what it did before them —
adopting Marin changes nothing live."""

from __future__ import annotations

import tomllib
from pathlib import Path

from clusterstack.plan import plan_stack
from clusterstack.pulumi.tokens import (CLOUDFLARE_PROVIDER, DNS_RECORD, LOAD_BALANCER_DNS_COMPONENT,
                                        SECURITY_POLICY, SSL_POLICY)

REPO = Path(__file__).resolve().parents[2]
KNOBS = ("gclb_dns_records", "gclb_ssl_policy", "gclb_min_tls_version", "gclb_token_proxy_armor")


def marin_knobs() -> dict:
    conv = tomllib.loads((REPO / "examples/marin/clusterstack.toml").read_text())["conventions"]
    return {k: conv[k] for k in KNOBS if k in conv}


def test_marin_turns_off_every_object_marin_does_not_run():
    assert marin_knobs() == {"gclb_dns_records": False, "gclb_ssl_policy": "", "gclb_token_proxy_armor": False}


def test_under_marins_conventions_the_load_balancer_gains_no_object(example_plans, workspace_copy):
    toml = workspace_copy / "clusterstack.toml"
    lines = "".join(f"{k} = {'true' if v is True else 'false' if v is False else repr(v)}\n".replace("'", '"')
                    for k, v in marin_knobs().items())
    toml.write_text(toml.read_text() + "\n[conventions]\n" + lines)
    marin = {(r.type, r.name) for r in plan_stack(workspace_copy / "infra", "gcp-demo").resources}
    new_lab = {(r.type, r.name) for r in example_plans["gcp-demo"].resources}
    added = new_lab - marin
    assert marin <= new_lab
    assert added == {(SSL_POLICY, "gcp-tpu-a-ssl-policy"), (SECURITY_POLICY, "gcp-tpu-a-proxy-armor"),
                     (LOAD_BALANCER_DNS_COMPONENT, "gclb-dns"), (CLOUDFLARE_PROVIDER, "cloudflare"),
                     (DNS_RECORD, "ctl-a.example.org"), (DNS_RECORD, "ctl-b.example.org"),
                     (DNS_RECORD, "logs.example.org")}
