"""GPU checks judged from snapshots (no hardware), and the NVML adapter over
the fake that speaks pynvml's API."""


import pytest

from gcm_checks import config, testing
from gcm_checks.checks import gpu as g
from gcm_checks.gather import nvml
from gcm_checks.gather.nvml import GpuFacts, GpuSnapshot
from gcm_checks.result import Status
from gcm_checks.sim.fake_nvml import ERROR_CODES, FakeNvml

def settings(**gpu):
    return testing.settings(gpu={"count": 2, **gpu})


# Facts come from gcm_checks.testing: a healthy snapshot, fields overridden.
facts, healthy = testing.gpu_facts, testing.gpu


CASES = [
    # (check id, snapshot overrides, settings, expected status, text in message)
    ("gpu.ecc.uncorrectable", {"ecc_uncorrected_volatile": 0}, {}, Status.PASS, "no uncorrectable"),
    ("gpu.ecc.uncorrectable", {"ecc_uncorrected_volatile": 2}, {}, Status.FAIL, "2 uncorrectable ECC"),
    ("gpu.ecc.uncorrectable", {"ecc_uncorrected_volatile": 2}, {"ecc_uncorrected_max": 5}, Status.PASS, ""),
    ("gpu.ecc.uncorrectable", {"ecc_uncorrected_volatile": None}, {}, Status.PASS, ""),  # not supported (e.g. no ECC)
    ("gpu.retired_pages.pending", {"retired_pages_pending": True}, {}, Status.FAIL, "reset the GPU"),
    ("gpu.row_remap", {"remap_pending": True}, {}, Status.FAIL, "pending"),
    ("gpu.row_remap", {"remap_failure": True}, {}, Status.FAIL, "RMA"),
    ("gpu.pcie.width", {"pcie_width": 8}, {}, Status.FAIL, "x8 of x16"),
    ("gpu.pcie.width", {"pcie_gen": 1, "pcie_width": 16}, {}, Status.PASS, ""),  # idle gen drop is normal
    ("gpu.temperature", {"temperature_c": 91}, {}, Status.FAIL, "91 C"),
    ("gpu.temperature", {"temperature_c": 91}, {"temperature_max_c": 95}, Status.PASS, ""),
    ("gpu.throttle", {"throttle_reasons": ("hw_thermal_slowdown",)}, {}, Status.WARN, "hw_thermal_slowdown"),
    ("gpu.throttle", {"throttle_reasons": ("hw_power_brake_slowdown",)}, {}, Status.WARN, "power"),
    ("gpu.throttle", {"throttle_reasons": ("sw_power_cap", "gpu_idle")}, {}, Status.PASS, ""),
    ("gpu.persistence_mode", {"persistence_mode": False}, {}, Status.WARN, "persistence"),
    ("gpu.processes", {"processes": ({"pid": 77, "used_memory_mib": 1024},)}, {}, Status.WARN, "pid 77"),
    ("gpu.processes", {"processes": ({"pid": 77, "used_memory_mib": 1024},)}, {"leftover_processes": "fail"}, Status.FAIL, "pid 77"),
    ("gpu.ecc.uncorrectable", {"errors": {"ecc": "NVML_ERROR_UNKNOWN: x"}}, {}, Status.UNKNOWN, "could not read ecc"),
]


@pytest.mark.parametrize("check_id, over, cfg, status, text", CASES)
def test_per_gpu_checks(check_id, over, cfg, status, text):
    out = testing.run_checks(facts(healthy(0), healthy(1, **over)), settings(**cfg), check_id)
    worst = max(out, key=lambda r: r.status.rank)
    assert worst.status is status, out
    assert text in worst.message and worst.check == check_id
    if status is not Status.PASS:
        assert worst.subject == f"GPU 1 ({healthy(1).pci_bus_id})"


def test_all_pass_collapses_to_one_line():
    out = g.check_ecc(facts(healthy(0), healthy(1)), settings())
    assert len(out) == 1 and out[0].status is Status.PASS and out[0].subject == ""


@pytest.mark.parametrize(
    "count, found, status",
    [(2, 2, Status.PASS), (2, 1, Status.FAIL), (2, 3, Status.WARN), (None, 1, None)],
)
def test_count(count, found, status):
    f = facts(*[healthy(i) for i in range(found)])
    out = g.check_count(f, config.resolve({"gpu": {"count": count}}, "n"))
    assert (out[0].status if out else None) is status


@pytest.mark.parametrize(
    "kw, count, status, text",
    [
        ({"init_error": 18}, 8, Status.FAIL, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
        ({"init_error": 9}, 8, Status.FAIL, "driver is not loaded"),
        ({"init_error": 12}, 8, Status.FAIL, "not installed"),
        ({"init_error": 4}, 8, Status.FAIL, "permissions"),
        ({"init_error": 9}, None, Status.UNKNOWN, "set gpu.count"),  # cannot tell if this is a GPU node
        ({"init_error": 9}, 0, Status.PASS, "no GPUs expected"),
        ({"init_hang": True}, 8, Status.FAIL, "did not answer"),
        ({"import_error": "No module named 'pynvml'"}, 8, Status.UNKNOWN, "reinstall"),  # our deploy, not the GPU
    ],
)
def test_nvml_init_errors(kw, count, status, text):
    out = g.check_nvml(GpuFacts(**kw), config.resolve({"gpu": {"count": count}}, "n"))
    assert out[0].status is status and text in out[0].message


def test_lost_and_unresponsive_gpus_fail_once_and_are_skipped_elsewhere():
    f = facts(healthy(0), GpuSnapshot(index=1, lost=True, broken_error="NVML_ERROR_GPU_IS_LOST"),
              GpuSnapshot(index=2, responsive=False))
    out = g.check_responsive(f, settings())
    assert [(r.status, r.subject) for r in out] == [(Status.FAIL, "GPU 1"), (Status.FAIL, "GPU 2")]
    assert "fallen off the bus" in out[0].message and "did not return" in out[1].message
    assert g.check_ecc(f, settings())[0].status is Status.PASS  # judged once, by gpu.responsive


# --- the adapter over the fake -------------------------------------------

def scenario(**gpu1):
    return {"gpus": [{"index": 0, "pci_bus_id": "00000000:18:00.0"}, {"index": 1, "pci_bus_id": "00000000:2A:00.0", **gpu1}]}


def test_fake_error_codes_match_pynvml():
    pynvml = pytest.importorskip("pynvml")
    for name, code in ERROR_CODES.items():
        assert getattr(pynvml, name) == code, name
    fake = FakeNvml({"nvml_init_error": "NVML_ERROR_DRIVER_NOT_LOADED"})
    with pytest.raises(pynvml.NVMLError) as ei:
        fake.nvmlInit()
    assert ei.value.value == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    assert isinstance(ei.value, pynvml.NVMLError_DriverNotLoaded)  # same per-code subclass


def test_fake_constants_match_pynvml():
    pynvml = pytest.importorskip("pynvml")
    for name in ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC", "NVML_TEMPERATURE_GPU", "NVML_FEATURE_ENABLED"):
        assert getattr(FakeNvml, name) == getattr(pynvml, name)
    for bit, name in nvml.THROTTLE_BITS.items():
        attr = {"gpu_idle": "nvmlClocksThrottleReasonGpuIdle", "hw_slowdown": "nvmlClocksThrottleReasonHwSlowdown",
                "hw_thermal_slowdown": "nvmlClocksThrottleReasonHwThermalSlowdown",
                "hw_power_brake_slowdown": "nvmlClocksThrottleReasonHwPowerBrakeSlowdown",
                "sw_power_cap": "nvmlClocksThrottleReasonSwPowerCap",
                "sw_thermal_slowdown": "nvmlClocksThrottleReasonSwThermalSlowdown"}.get(name)
        if attr and hasattr(pynvml, attr):
            assert getattr(pynvml, attr) == bit, name


@pytest.mark.parametrize(
    "gpu1, field, value",
    [
        ({"ecc_uncorrected_volatile": 3}, "ecc_uncorrected_volatile", 3),
        ({"remapped_rows": {"pending": True}}, "remap_pending", True),
        ({"pcie": {"gen": 4, "width": 4, "max_gen": 5, "max_width": 16}}, "pcie_width", 4),
        ({"throttle_reasons": ["hw_slowdown", "gpu_idle"]}, "throttle_reasons", ("gpu_idle", "hw_slowdown")),
        ({"unsupported": ["ecc"]}, "ecc_uncorrected_volatile", None),
        ({"processes": [{"pid": 9, "used_memory_mib": 512}]}, "processes", ({"pid": 9, "used_memory_mib": 512},)),
        ({"lost": True}, "lost", True),
    ],
)
def test_adapter_reads_what_the_fake_reports(gpu1, field, value):
    f = nvml.gather(lambda: FakeNvml(scenario(**gpu1)), 2.0)
    assert getattr(f.gpus[1], field) == value
    assert f.gpus[0].pci_bus_id == "00000000:18:00.0"


def test_adapter_abandons_a_hung_gpu_and_keeps_the_others():
    f = nvml.gather(lambda: FakeNvml(scenario(hang=True)), 0.3)
    assert f.gpus[0].responsive and not f.gpus[1].responsive


def test_adapter_init_hang_and_missing_pynvml():
    assert nvml.gather(lambda: FakeNvml({"nvml_init_hang": True, "gpus": []}), 0.2).init_hang

    def missing():
        raise ImportError("No module named 'pynvml'")

    assert "pynvml" in nvml.gather(missing, 0.2).import_error


@pytest.mark.parametrize(
    "raw, norm",
    [("0000:3b:00", "00000000:3B:00.0"), ("00000000:3B:00.0", "00000000:3B:00.0"), ("3b:00.0", "00000000:3B:00.0"),
     (b"0000:DB:00.0", "00000000:DB:00.0")],
)
def test_normalize_bus_id(raw, norm):
    assert nvml.normalize_bus_id(raw) == norm


class SlowInitNvml(FakeNvml):
    """nvmlInit that takes a while, as without persistence mode."""

    def nvmlInit(self):
        import time

        time.sleep(0.4)
        super().nvmlInit()


def test_slow_init_is_not_a_hang_when_within_its_own_deadline():
    # per-call deadline 0.2 s, but nvmlInit gets 1 s: a slow driver start is
    # not a wedged GPU.
    f = nvml.gather(lambda: SlowInitNvml(scenario()), 0.2, 3.0, init_timeout_s=1.0)
    assert not f.init_hang and f.count == 2 and all(g.responsive for g in f.gpus)
    assert nvml.gather(lambda: SlowInitNvml(scenario()), 0.2, 3.0, init_timeout_s=0.1).init_hang
