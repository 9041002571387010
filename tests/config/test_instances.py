"""The one table of CoreWeave instance types and zones (config/instances.py)."""

from __future__ import annotations

import pytest

from clusterstack.config.instances import (COREWEAVE_ZONES, INSTANCE_TYPES, instance_type, rack_size,
                                           zone_problem)


def test_every_entry_is_consistent_and_sourced():
    for name, t in INSTANCE_TYPES.items():
        assert t.name == name and t.source
        assert (t.gpus == 0) == (t.gpu_model is None), name
        assert t.ram_bytes > 0 and t.disk_bytes > 0 and t.vcpus > 0
        assert t.rack_size is None or t.gpus * t.rack_size == 72, name   # NVL72: 72 GPUs a rack


def test_the_lab_types_are_known():
    b200, gb200 = instance_type("b200-8x"), instance_type("gb200-4x")
    assert (b200.gpus, b200.gpu_model, b200.rack_size) == (8, "B200", None)
    assert (gb200.gpus, gb200.gpu_model, gb200.rack_size, gb200.rack_gpus) == (4, "GB200", 18, 72)
    assert instance_type("gd-8xh100ib-i256") is None


def test_rack_size_of_an_unknown_nvl72_variant_follows_its_family():
    assert rack_size("gb300-4x-e") == 18 and rack_size("gd-8xh100ib-i256") is None


@pytest.mark.parametrize("zone", ["US-EAST-04A", "RNO2A", "US-WEST-09B", "US-EAST-08A", "US-EAST-02A",
                                  "US-WEST-04A"])
def test_marin_and_shipped_zones_are_zones(zone):
    assert zone in COREWEAVE_ZONES and zone_problem(zone) is None


def test_a_region_is_not_a_zone():
    assert "its zones: US-EAST-04A, US-EAST-04B" in zone_problem("US-EAST-04")
    assert "did you mean" in zone_problem("US-EAST-4A")
