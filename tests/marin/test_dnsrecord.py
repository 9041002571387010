"""Marin catalogue: DnsRecord. The federation CNAME: ttl 300, not proxied (infra/pulumi/src/iac/coreweave/dns.py@3d818800;
the config's hostname/target, program.py@12deed0d)."""

from __future__ import annotations

import pytest

from marin.check import CW_STACKS, assert_exact


@pytest.mark.parametrize("stack", CW_STACKS)
def test_dnsrecords_are_marins(marin_plans, marin_configs, stack):
    assert_exact(marin_plans[stack], stack, marin_configs[stack], "DnsRecord")
