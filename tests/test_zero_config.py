"""Zero-config expectations (issue 12 item 8): the PCI bus as the view of what
the node has, the NVML/PCI comparison, dead rails among identical HCAs, ports
remembered ACTIVE since boot, and the simulated PCI section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from gcm_checks import suite
from gcm_checks.config import resolve
from gcm_checks.gather import ib, pci
from gcm_checks.result import Status
from gcm_checks.sim import scenario
from gcm_checks.sim.scenario import ScenarioError


def _dev(addr: str, vendor: int, device: int, klass: int, **kw: Any) -> Dict[str, Any]:
    return {"address": addr, "vendor": vendor, "device": device, "class": klass, **kw}


# ---------------------------------------------------------------- PCI gather


def test_pci_read_counts_gpus_and_ib_hcas_only(tmp_path):
    devs = [
        _dev("0000:18:00.0", 0x10DE, 0x2330, 0x030200, driver="nvidia"),  # H100 SXM: 3D controller
        _dev("0000:2a:00.0", 0x10DE, 0x2331, 0x030000, driver="nvidia"),  # PCIe board: VGA class
        _dev("0000:3a:00.0", 0x10DE, 0x2330, 0x030200),  # no driver bound (probe failed): still expected
        _dev("0000:5d:00.0", 0x10DE, 0x2330, 0x030200, driver="vfio-pci"),  # given to a VM
        _dev("0000:05:00.0", 0x10DE, 0x22A3, 0x068000, driver="nvidia"),  # NVSwitch: a bridge, not a GPU
        _dev("0000:2a:00.1", 0x10DE, 0x22BA, 0x040300),  # HDMI audio function
        _dev("0000:0c:00.0", 0x15B3, 0x1021, 0x020700, driver="mlx5_core", ib_devices=["mlx5_0"]),
        _dev("0000:0c:00.1", 0x15B3, 0x1021, 0x020000, driver="mlx5_core"),  # Ethernet-mode port
        _dev("0000:1c:00.0", 0x15B3, 0x1021, 0x020700, driver="mlx5_core"),  # IB HCA, no ib device
        _dev("0000:00:1f.0", 0x8086, 0x1234, 0x060100),
    ]
    pci.write_pci_tree(tmp_path, devs, nvidia_module=True)
    vf = tmp_path / "sys/bus/pci/devices/0000:0c:00.2"  # an SR-IOV virtual function
    pci.write_pci_tree(tmp_path, [_dev("0000:0c:00.2", 0x15B3, 0x101E, 0x020700)], nvidia_module=True)
    (vf / "physfn").symlink_to(tmp_path / "sys/bus/pci/devices/0000:0c:00.0")
    facts = pci.read_pci(tmp_path)
    assert facts.readable and facts.nvidia_module is True
    assert facts.gpu_addresses() == ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0"]
    assert [d.address for d in facts.other_gpus] == ["0000:5d:00.0"]
    assert [(d.address, d.ib_devices) for d in facts.hcas] == [("0000:0c:00.0", ("mlx5_0",)), ("0000:1c:00.0", ())]
    assert facts.gpus[0].driver == "nvidia" and facts.gpus[2].driver == ""


def test_pci_unreadable_means_we_cannot_tell(tmp_path):
    facts = pci.read_pci(tmp_path / "nothing")
    assert not facts.readable and facts.gpu_count is None and "nothing" in facts.error


def test_nvidia_module_absent_is_recorded(tmp_path):
    pci.write_pci_tree(tmp_path, [_dev("0000:18:00.0", 0x10DE, 0x2330, 0x030200)], nvidia_module=False)
    assert pci.read_pci(tmp_path).nvidia_module is False


# ---------------------------------------------------------------- simulated PCI section


def _scenario(tmp_path: Path, text: str, name: str = "s") -> Dict[str, Any]:
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return scenario.load(str(p))


def test_scenario_without_pci_follows_gpus_and_hcas_lost_gpu_included():
    data = scenario.load("gpu-lost")
    devices = data["pci"]["devices"]
    gpus = [d for d in devices if d["vendor"] == pci.NVIDIA]
    hcas = [d for d in devices if d["vendor"] == pci.MELLANOX]
    assert len(gpus) == 8 and "0000:5d:00.0" in {d["address"] for d in gpus}  # GPU 3, lost, still on the bus
    assert [d["ib_devices"] for d in hcas] == [[f"mlx5_{i}"] for i in range(8)]
    assert data["pci"]["nvidia_module"] is True


@pytest.mark.parametrize("name", scenario.list_builtin())
def test_every_builtin_scenario_keeps_nvml_and_pci_in_agreement_unless_it_says_otherwise(name, tmp_path):
    data = scenario.load(name)
    root = tmp_path / "root"
    from gcm_checks.sim.tree import write_tree

    write_tree(root, data)
    facts = pci.read_pci(root)
    explicit = "pci" in scenario._read_raw(name)
    if not explicit:
        assert facts.gpu_count == len(data["gpus"])
        assert sorted(n for d in facts.hcas for n in d.ib_devices) == sorted(
            {p["device"] for p in data["infiniband"] if p.get("link_layer", "InfiniBand") == "InfiniBand"})


def test_scenario_pci_section_overrides(tmp_path):
    data = _scenario(tmp_path, "extends: healthy\npci: {gpus: 9, hcas: [{ib_device: mlx5_0}, {ib_device: null}], nvidia_module: false}\n")
    devices = data["pci"]["devices"]
    assert sum(d["vendor"] == pci.NVIDIA for d in devices) == 9
    assert [d["ib_devices"] for d in devices if d["vendor"] == pci.MELLANOX] == [["mlx5_0"], []]
    assert data["pci"]["nvidia_module"] is False


@pytest.mark.parametrize("text", ["pci: {gpu: 8}\n", "pci: [1]\n", "pci: {gpus: yes}\n", "pci: {other: [{address: x}]}\n"])
def test_bad_pci_section_is_an_error(tmp_path, text):
    with pytest.raises(ScenarioError):
        _scenario(tmp_path, "extends: healthy\n" + text)


# ---------------------------------------------------------------- GPU rules through the runner


def _run(tmp_path: Path, sim: Dict[str, Any], config: Dict[str, Any] = None, tag: str = "prolog", dry_run=False):
    settings = resolve(config or {}, "sim")
    ctx = suite.Context(settings=settings, node="sim", sim=sim, state_dir=tmp_path / "state", dry_run=dry_run)
    try:
        return suite.run_suite(tag, ctx)
    finally:
        ctx.close()


def _by(results, check: str) -> List:
    return [r for r in results if r.check == check]


def test_version_mismatch_without_config_fails_on_a_gpu_node(tmp_path):
    r = _by(_run(tmp_path, scenario.load("nvml-mismatch")), "gpu.nvml")
    assert [x.status for x in r] == [Status.FAIL]
    assert "NVML_ERROR_LIB_RM_VERSION_MISMATCH" in r[0].message and "8 NVIDIA GPUs on the PCI bus" in r[0].message


@pytest.mark.parametrize("error", ["NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_NO_PERMISSION"])
def test_nvml_failing_with_gpus_on_the_bus_fails(tmp_path, error):
    sim = _scenario(tmp_path, f"extends: healthy\nnvml_init_error: {error}\npci: {{nvidia_module: false}}\n")
    r = _by(_run(tmp_path, sim), "gpu.nvml")
    assert r[0].status is Status.FAIL and "nvidia kernel module is not loaded" in r[0].message


def test_cpu_node_without_nvidia_gpus_on_the_bus_passes(tmp_path):
    sim = _scenario(tmp_path, "extends: healthy\nnvml_init_error: NVML_ERROR_LIBRARY_NOT_FOUND\ngpus: []\n")
    r = _by(_run(tmp_path, sim), "gpu.nvml")
    assert r[0].status is Status.PASS and "no NVIDIA GPUs on the PCI bus" in r[0].message


def test_explicit_zero_gpus_wins_over_the_bus(tmp_path):
    r = _by(_run(tmp_path, scenario.load("nvml-mismatch"), {"gpu": {"count": 0}}), "gpu.nvml")
    assert r[0].status is Status.PASS


def test_gpu_on_the_bus_that_nvml_does_not_list_fails(tmp_path):
    sim = scenario.load("gpu-missing")
    r = _by(_run(tmp_path, sim), "gpu.count")
    assert [x.status for x in r] == [Status.FAIL]
    assert "0000:db:00.0" in r[0].message and r[0].details["unlisted"] == ["0000:db:00.0"]


def test_explicit_gpu_count_wins_over_the_bus(tmp_path):
    r = _by(_run(tmp_path, scenario.load("gpu-missing"), {"gpu": {"count": 7}}), "gpu.count")
    assert r[0].status is Status.PASS


def test_healthy_count_is_judged_against_the_bus(tmp_path):
    r = _by(_run(tmp_path, scenario.load("healthy")), "gpu.count")
    assert r[0].status is Status.PASS and r[0].details["source"] == "pci"


def test_lost_gpu_is_judged_once_by_responsive_not_by_count(tmp_path):
    results = _run(tmp_path, scenario.load("gpu-lost"))
    assert _by(results, "gpu.count")[0].status is Status.PASS
    assert [r.subject for r in results if r.status is Status.FAIL] == ["GPU 3"]


def test_unreadable_bus_and_no_count_stays_unknown():
    from gcm_checks.checks.gpu import check_count, check_nvml
    from gcm_checks.gather.nvml import GpuFacts

    settings = resolve({}, "n")
    facts = GpuFacts(init_error=18, pci=pci.PciFacts("/x", False))
    assert check_nvml(facts, settings)[0].status is Status.UNKNOWN
    assert check_count(GpuFacts(count=7, pci=pci.PciFacts("/x", False)), settings) == []


# ---------------------------------------------------------------- dead rails


def test_one_port_down_among_identical_rails_is_a_dead_rail(tmp_path):
    r = _by(_run(tmp_path, scenario.load("ib-port-down")), "ib.port.rail")
    assert [(x.status, x.subject) for x in r] == [(Status.FAIL, "mlx5_3 port 1")]
    assert "7 of 7 sibling" in r[0].message


def test_explicit_expectations_win_over_the_rail_rule(tmp_path):
    conf = {"infiniband": {"expected_hcas": [f"mlx5_{i}" for i in range(8) if i != 3]}}
    results = _run(tmp_path, scenario.load("ib-port-down"), conf)
    assert _by(results, "ib.port.rail")[0].status is Status.PASS
    assert _by(results, "ib.hca.pci")[0].status is Status.PASS


def test_unlisted_ports_ignore_silences_the_rail_rule(tmp_path):
    results = _run(tmp_path, scenario.load("ib-port-down"), {"infiniband": {"unlisted_ports": "ignore"}})
    assert all(r.status is Status.PASS for r in _by(results, "ib.port.rail"))


def _ports(tmp_path: Path, overrides: Dict[int, Dict[str, Any]], count: int = 8, extra: str = "") -> Dict[str, Any]:
    ov = json.dumps({str(k): v for k, v in overrides.items()})
    return _scenario(tmp_path, f"extends: healthy\ninfiniband:\n  count: {count}\n  overrides: {ov}\n{extra}", name=f"p{len(overrides)}")


@pytest.mark.parametrize("overrides,dead", [
    ({}, []),
    ({3: {"state": "DOWN", "phys_state": "Disabled"}}, ["mlx5_3 port 1"]),
    ({3: {"state": "INIT", "phys_state": "LinkUp"}}, ["mlx5_3 port 1"]),  # no subnet manager for this one
    ({1: {"state": "DOWN", "phys_state": "Polling"}, 6: {"state": "DOWN", "phys_state": "Polling"}}, ["mlx5_1 port 1", "mlx5_6 port 1"]),
    # half or more of the rails down: no longer "the odd one out" (first run, nothing remembered)
    ({i: {"state": "DOWN", "phys_state": "Polling"} for i in range(5)}, []),
    # a different model is not a sibling
    ({3: {"state": "DOWN", "phys_state": "Polling", "hca_type": "MT4123"}}, []),
    # RoCE/Ethernet ports are never rails here
    ({3: {"state": "DOWN", "phys_state": "Polling", "link_layer": "Ethernet"}}, []),
])
def test_rail_table(tmp_path, overrides, dead):
    results = _run(tmp_path, _ports(tmp_path, overrides))
    assert sorted(r.subject for r in _by(results, "ib.port.rail") if r.status is Status.FAIL) == dead


def test_unused_second_port_on_every_hca_is_not_a_dead_rail(tmp_path):
    ports = "\n".join(f"  - {{device: mlx5_{i}, port: {p}, state: {'ACTIVE' if p == 1 else 'DOWN'}, phys_state: {'LinkUp' if p == 1 else 'Polling'}}}"
                      for i in range(4) for p in (1, 2))
    sim = _scenario(tmp_path, f"extends: healthy\ninfiniband:\n{ports}\n")
    assert all(r.status is Status.PASS for r in _by(_run(tmp_path, sim), "ib.port.rail"))


def test_a_port_seen_active_since_boot_stays_expected(tmp_path):
    _run(tmp_path, scenario.load("healthy"))  # every port ACTIVE: remembered
    seen = json.loads((tmp_path / "state" / "ib_seen_active.json").read_text())
    assert len(seen["ports"]) == 8
    all_down = _ports(tmp_path, {i: {"state": "DOWN", "phys_state": "Polling"} for i in range(8)})
    r = _by(_run(tmp_path, all_down), "ib.port.rail")
    assert len(r) == 8 and all(x.status is Status.FAIL and "ACTIVE earlier since this boot" in x.message for x in r)


def test_a_new_boot_forgets_the_ports_seen_active(tmp_path):
    _run(tmp_path, scenario.load("healthy"))
    f = tmp_path / "state" / "ib_seen_active.json"
    f.write_text(json.dumps(dict(json.loads(f.read_text()), boot_id="an-earlier-boot")))
    all_down = _ports(tmp_path, {i: {"state": "DOWN", "phys_state": "Polling"} for i in range(8)})
    assert all(r.status is Status.PASS for r in _by(_run(tmp_path, all_down), "ib.port.rail"))


def test_seen_active_is_written_only_on_change_and_never_in_dry_run(tmp_path):
    f = tmp_path / "state" / "ib_seen_active.json"
    _run(tmp_path, scenario.load("healthy"), dry_run=True)
    assert not f.exists()
    _run(tmp_path, scenario.load("healthy"))
    mtime = f.stat().st_mtime_ns
    _run(tmp_path, scenario.load("healthy"))
    assert f.stat().st_mtime_ns == mtime


def test_hca_on_the_bus_without_its_ib_device_fails(tmp_path):
    sim = scenario.load("hca-missing")
    results = _run(tmp_path, sim)
    bad = [r for r in _by(results, "ib.hca.pci") if r.status is Status.FAIL]
    assert len(bad) == 1 and bad[0].subject == "0000:7c:00.0" and "mlx5_core" in bad[0].message


def test_hca_rule_is_silent_when_hcas_are_listed(tmp_path):
    conf = {"infiniband": {"expected_hcas": [f"mlx5_{i}" for i in range(7)]}}
    assert all(r.status is Status.PASS for r in _by(_run(tmp_path, scenario.load("hca-missing"), conf), "ib.hca.pci"))


def test_model_is_read_from_hca_type_and_board_id(tmp_path):
    ib.write_sysfs_tree(tmp_path, [{"device": "mlx5_0", "hca_type": "MT4129", "board_id": "MT_0000000838"},
                                   {"device": "mlx5_1"}])
    assert ib.read_models(tmp_path, ["mlx5_0", "mlx5_1"]) == {"mlx5_0": "MT4129/MT_0000000838", "mlx5_1": ""}


# ---------------------------------------------------------------- the real prolog process, no config at all

ZERO_CONFIG = {
    "healthy": ("pass", None),
    "nvml-mismatch": ("fail", "gpu.nvml"),
    "ib-port-down": ("fail", "ib.port.rail"),
    "gpu-missing": ("fail", "gpu.count"),
    "hca-missing": ("fail", "ib.hca.pci"),
}


@pytest.mark.parametrize("name", sorted(ZERO_CONFIG))
def test_prolog_with_no_config_judges_by_the_bus(tmp_path, name):
    import os
    import subprocess
    import sys

    verdict, check = ZERO_CONFIG[name]
    cfg = tmp_path / "c.yaml"  # only where to write: nothing about GPUs or HCAs
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "prolog", "--config", str(cfg), "--sim", name, "--json",
                        "--dry-run"], capture_output=True, text=True, env=env, timeout=60)
    doc = json.loads(p.stdout)
    assert doc["verdict"] == verdict, p.stdout + p.stderr
    if check:
        assert any(r["check"] == check and r["status"] == "fail" for r in doc["results"]), p.stdout


def test_a_failing_pci_read_costs_neither_the_gpu_nor_the_ib_facts(tmp_path, monkeypatch):
    def boom(self):
        raise RuntimeError("odd sysfs")

    monkeypatch.setattr(suite.Context, "pci_facts", boom)
    results = _run(tmp_path, scenario.load("gpu-lost"))
    assert not [r for r in results if r.check.endswith(".gather")]
    assert [(r.check, r.subject) for r in results if r.status is Status.FAIL] == [("gpu.responsive", "GPU 3")]
    assert _by(results, "ib.hca.pci")[0].status is Status.PASS


def test_nvml_listing_more_than_a_partial_bus_view_is_not_judged():
    from gcm_checks.checks.gpu import check_count
    from gcm_checks.gather.nvml import GpuFacts, GpuSnapshot

    bus = pci.PciFacts("/", True, gpus=(pci.PciDevice("0000:18:00.0", 0x10DE, 0x2330, 0x030200, "nvidia"),))
    facts = GpuFacts(count=2, gpus=(GpuSnapshot(0, "00000000:18:00.0"), GpuSnapshot(1, "00000000:2A:00.0")), pci=bus)
    r = check_count(facts, resolve({}, "n"))
    assert r[0].status is Status.PASS and "partial" in r[0].message
    missing = GpuFacts(count=1, gpus=(GpuSnapshot(0, "00000000:2A:00.0"),), pci=bus)
    r = check_count(missing, resolve({}, "n"))
    assert r[0].status is Status.FAIL and r[0].details["unlisted"] == ["0000:18:00.0"]
