"""Every NVML return code in nvml.h has a name and a cause; the hardware
ones mark the GPU broken through the production adapter (issue 18 item 5)."""

from __future__ import annotations

import pytest

from gcm_checks import config
from gcm_checks.checks import gpu as g
from gcm_checks.gather import nvml
from gcm_checks.result import Status
from gcm_checks.sim.fake_nvml import ERROR_CODES, FakeNvml

# nvmlReturn_t in nvml.h (R550+): 0 is success, 1-29 and 999 are errors.
NVML_H = [*range(1, 30), 999]
HARDWARE = {8: "INSUFFICIENT_POWER", 14: "CORRUPTED_INFOROM", 15: "GPU_IS_LOST", 16: "RESET_REQUIRED"}


@pytest.mark.parametrize("code", NVML_H)
def test_every_code_has_a_name_and_a_cause(code):
    name, cause = nvml.NVML_ERRORS[code]
    assert nvml.error_name(code) == name and name.startswith("NVML_ERROR_")
    assert nvml.error_cause(code) == cause and cause != f"NVML error {code}"
    assert ERROR_CODES[name] == code  # the fake raises every one of them


def test_names_match_pynvml_where_installed():
    pynvml = pytest.importorskip("pynvml")
    for code, (name, _) in nvml.NVML_ERRORS.items():
        assert getattr(pynvml, name) == code, name


def test_hardware_codes_are_exactly_the_broken_ones():
    assert nvml.GPU_BROKEN_CODES == set(HARDWARE)
    assert 20 not in nvml.GPU_BROKEN_CODES  # NVML_ERROR_MEMORY: NVML failed to allocate, not the GPU


def _scenario(err):
    gpu = {"pci_bus_id": "00000000:18:00.0"}
    bad = {"pci_bus_id": "00000000:2A:00.0", "nvml_errors": {"temperature": err}}
    return {"gpus": [gpu, bad]}


@pytest.mark.parametrize("code", NVML_H)
def test_each_code_through_the_adapter_and_the_check(code):
    name = nvml.error_name(code)
    f = nvml.gather(lambda: FakeNvml(_scenario(name)), 2.0)
    s = config.resolve({"gpu": {"count": 2}}, "n1")
    res = [r for r in g.check_responsive(f, s) if r.status is Status.FAIL]
    if code in HARDWARE:
        assert f.gpus[1].lost and f.gpus[1].broken_error == name
        (r,) = res
        assert name in r.message or "fallen off the bus" in r.message
        if code == 8:
            assert "power cables" in r.message
    else:
        assert not f.gpus[1].lost and not res
        if code != nvml.NOT_SUPPORTED:
            assert name in f.gpus[1].errors.get("temperature", "")
