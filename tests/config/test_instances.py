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


# --- validate refuses a config that contradicts its instance type, at its line -------------

from helpers import edit, line_of  # noqa: E402

from clusterstack.cli import main  # noqa: E402

GB200 = "clusters/cw-demo-gb200.yaml"
H100 = "clusters/cw-demo-h100.yaml"


def _validate(root, capsys) -> tuple[int, str]:
    rc = main(["--root", str(root), "validate"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return rc, cap.err


def test_gb200_with_eight_gpus_per_node_is_refused_with_the_quota_it_would_make(workspace_copy, capsys):
    # 12 racks × 18 nodes = 216 nodes: 8 per node would be a quota of 1728 where there are 864
    text = edit(workspace_copy / GB200, "device_variant: GB200, device_count: 4}",
                "device_variant: GB200, device_count: 8}")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"{GB200}:{line_of(text, 'device_count: 8')}: scale_groups.gb200.resources.device_count: 8 GPUs "
            "per node, but gb200-4x has 4: the ClusterQueue's nvidia.com/gpu quota would be 1728 where "
            "216 nodes have 864 — set device_count: 4") in err


def test_an_h100_type_declared_as_b200_is_refused(workspace_copy, capsys):
    text = edit(workspace_copy / H100, "device_variant: H100", "device_variant: B200")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"{H100}:{line_of(text, 'device_variant: B200')}: scale_groups.h100.resources.device_variant: "
            "'B200' GPUs, but gd-8xh100ib-i128 has H100 GPUs") in err


@pytest.mark.parametrize("old,new,field", [
    ("cpu: 128, ram: 2048GB", "cpu: 256, ram: 2048GB", "cpu"),
    ("ram: 2048GB, disk: 1TB", "ram: 4096GB, disk: 1TB", "ram"),
    ("disk: 1TB, device_type: gpu", "disk: 61.44TB, device_type: gpu", "disk"),
    ("device_type: gpu, device_variant: H100, device_count: 8}", "device_type: cpu}  # 8 H100s", "device_type"),
])
def test_per_node_figures_above_the_hardware_are_refused(workspace_copy, capsys, old, new, field):
    text = edit(workspace_copy / H100, old, new)
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert f"{H100}:{line_of(text, new)}: scale_groups.h100.resources.{field}: " in err


def test_a_type_the_table_lacks_takes_the_configs_figures_and_validate_says_so(workspace_copy, capsys):
    text = edit(workspace_copy / H100, "instance_type: gd-8xh100ib-i128", "instance_type: gd-8xh100ib-i999")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 0, err
    assert (f"note: {H100}:{line_of(text, 'gd-8xh100ib-i999')}: scale_groups.h100.slice_template.coreweave."
            "instance_type: instance type 'gd-8xh100ib-i999' is not in clusterstack's instance-type table "
            "(CoreWeave's catalogue as read on 2026-12-02): its per-node figures (cpu 128, ram 2048GB, disk 1TB, "
            "8 GPUs) are this file's own and unchecked") in err
    assert main(["--root", str(workspace_copy), "validate", "--json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert [n["field"] for n in doc["notes"] if "gd-8xh100ib-i999" in n["message"]] == [
        "scale_groups.h100.slice_template.coreweave.instance_type"]


def test_a_region_as_the_cks_zone_is_refused_naming_the_zone(workspace_copy, capsys):
    text = (workspace_copy / H100).read_text(encoding="utf-8").replace("US-EAST-04A", "US-EAST-04")
    (workspace_copy / H100).write_text(text, encoding="utf-8")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 2
    assert (f"{H100}:{line_of(text, 'zone: US-EAST-04}')}: provisioning.coreweave.cluster.zone: 'US-EAST-04' "
            "is a CoreWeave Region, not an Availability Zone; its zones: US-EAST-04A, US-EAST-04B") in err


def test_a_gpu_type_whose_name_does_not_say_infiniband_gets_a_topology_note(workspace_copy, capsys):
    """The GPU flavor binds the InfiniBand Topology, whose fabric levels CoreWeave sets on
    InfiniBand nodes; TAS lists only nodes carrying every level (kueue v0.14.4 tas_flavor.go
    L107-113). For a type whose name does not say InfiniBand validate cannot know: a note."""
    edit(workspace_copy / H100, "device_variant: H100", "device_variant: B200")
    text = edit(workspace_copy / H100, "instance_type: gd-8xh100ib-i128", "instance_type: b200-8x")
    rc, err = _validate(workspace_copy, capsys)
    assert rc == 0, err
    assert (f"note: {H100}:{line_of(text, 'instance_type: b200-8x')}: scale_groups.h100.slice_template.coreweave."
            "instance_type: GPU pool cwdemo-h100 (b200-8x) is under the Kueue Topology 'infiniband', whose levels "
            "backend.coreweave.cloud/fabric, backend.coreweave.cloud/leafgroup CoreWeave sets on InfiniBand nodes"
            ) in err and "so if these nodes lack them Kueue admits no GPU job here" in err
    # the shipped H100 (…ib…) and GB200 (NVL72) pools get none
    assert err.count("CoreWeave sets on InfiniBand nodes") == 1
