"""IPoIB netdev state against its port, and HCA firmware across same-model
HCAs (issue 18 item 7), over a real-layout sysfs tree."""

from __future__ import annotations

import os
import shutil

import pytest

from gcm_checks.checks import ib_host as checks
from gcm_checks.gather import ib_host
from gcm_checks.result import Status

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "ib", "ipoib-fw-mismatch")


def test_reads_hca_models_and_firmware():
    hcas = {h.device: (h.hca_type, h.fw_ver) for h in ib_host.read_hcas(FIX)}
    assert hcas["mlx5_0"] == ("MT4129", "28.41.1000") and hcas["mlx5_2"] == ("MT4129", "28.39.1002")
    assert hcas["mlx5_bond_0"] == ("MT41692", "32.38.3056")


def test_reads_ipoib_netdevs_with_their_port_state():
    got = {i.name: (i.device, i.port, i.operstate, i.admin_up, i.port_state) for i in ib_host.read_ipoib(FIX)[0]}
    assert got == {"ibp26s0": ("mlx5_0", 1, "up", True, "ACTIVE"), "ibp60s0": ("mlx5_1", 1, "down", True, "ACTIVE"),
                   "ibp77s0": ("mlx5_2", 1, "down", False, "ACTIVE"), "ibp94s0": ("mlx5_3", 1, "down", True, "DOWN")}


def test_ipoib_down_on_an_active_port_fails_only_where_configured():
    res = checks.check_ipoib_state(ib_host.read_host(FIX), {})
    assert [(r.status, r.subject) for r in res] == [(Status.FAIL, "ibp60s0 (mlx5_1 port 1)")]
    assert "down while mlx5_1 port 1 is ACTIVE" in res[0].message


def test_firmware_mismatch_warns_naming_both_versions():
    (r,) = checks.check_hca_firmware(ib_host.read_host(FIX), {})
    assert r.status is Status.WARN and r.subject == "mlx5_2"
    assert "28.39.1002" in r.message and "28.41.1000" in r.message and "MT4129" in r.message
    assert "MT41692" not in r.message  # another model is not compared


def test_all_well_passes(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(FIX, root)
    (root / "sys/class/infiniband/mlx5_2/fw_ver").write_text("28.41.1000\n")
    (root / "sys/class/net/ibp60s0/operstate").write_text("up\n")
    facts = ib_host.read_host(root)
    assert [r.status for r in checks.check_hca_firmware(facts, {})] == [Status.PASS]
    res = checks.check_ipoib_state(facts, {})
    assert [r.status for r in res] == [Status.PASS] and "2 IPoIB" in res[0].message


@pytest.mark.parametrize("what", ["no sysfs at all", "unreadable fw_ver"])
def test_nothing_to_judge_passes_never_fails(tmp_path, what):
    root = tmp_path / "t"
    if what == "unreadable fw_ver":
        shutil.copytree(FIX, root)
        for d in ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"):
            os.remove(root / f"sys/class/infiniband/{d}/fw_ver")
    facts = ib_host.read_host(root)
    assert all(r.status is Status.PASS for r in checks.check_hca_firmware(facts, {}))


def test_old_kernels_dev_id_gives_the_port(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(FIX, root)
    os.remove(root / "sys/class/net/ibp60s0/dev_port")
    (root / "sys/class/net/ibp60s0/dev_id").write_text("0x0\n")
    got = {i.name: i.port for i in ib_host.read_ipoib(root)[0]}
    assert got["ibp60s0"] == 1
