"""A fake that speaks pynvml's API for a simulated node.

Same function names, return types and ``NVMLError`` codes as pynvml (the real
``pynvml.NVMLError`` class is used when importable, so ``except
pynvml.NVMLError`` and the per-code subclasses behave identically), so the
production adapter in ``gcm_checks.gather.nvml`` runs unchanged.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Dict, List

from gcm_checks.gather.nvml import NVML_ERRORS as _NVML_ERRORS


class _LocalNVMLError(Exception):
    """Stand-in with pynvml's shape when nvidia-ml-py is not installed."""

    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"NVML error {self.value}"


def _error_class() -> Any:
    try:
        import pynvml

        return pynvml.NVMLError
    except ImportError:
        return _LocalNVMLError


# Codes from nvml.h, by the names scenarios use.
# Every nvml.h return code, by name, as pynvml defines them (issue 18).
ERROR_CODES = {name: code for code, (name, _) in _NVML_ERRORS.items()}

_THROTTLE_NAMES = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}

# Fields a scenario may mark unsupported -> NVML_ERROR_NOT_SUPPORTED.
_FIELD_OF = {
    "nvmlDeviceGetTotalEccErrors": "ecc",
    "nvmlDeviceGetRetiredPagesPendingStatus": "retired_pages",
    "nvmlDeviceGetRemappedRows": "remapped_rows",
    "nvmlDeviceGetTemperature": "temperature",
    "nvmlDeviceGetCurrentClocksThrottleReasons": "throttle",
    "nvmlDeviceGetCurrentClocksEventReasons": "throttle",
    "nvmlDeviceGetPersistenceMode": "persistence_mode",
    "nvmlDeviceGetComputeRunningProcesses": "processes",
    "nvmlDeviceGetPowerUsage": "power",
    "nvmlDeviceGetClockInfo": "clocks",
    "nvmlDeviceGetRetiredPages": "retired_pages",
    "nvmlDeviceGetNvLinkState": "nvlink",
    "nvmlDeviceGetNvLinkErrorCounter": "nvlink",
}


class FakeNvml:
    """Module-like object: ``nvml.nvmlInit()``, ``nvml.NVMLError``, constants."""

    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_AGGREGATE_ECC = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1
    NVML_FEATURE_DISABLED = 0
    NVML_FEATURE_ENABLED = 1

    def __init__(self, scenario: Dict[str, Any]):
        self.NVMLError = _error_class()
        self._scenario = scenario
        self._gpus: List[Dict[str, Any]] = list(scenario.get("gpus") or [])
        self._initialised = False
        self._forever = threading.Event()  # never set: a hang is a wait on it
        for name, code in ERROR_CODES.items():
            setattr(self, name, code)
        self.calls: List[str] = []

    # -- helpers -------------------------------------------------------
    def _raise(self, code: int) -> None:
        raise self.NVMLError(code)

    def _hang(self) -> None:
        self._forever.wait()  # releases the GIL, like a blocked ioctl

    def _gpu(self, handle: Any) -> Dict[str, Any]:
        if not self._initialised:
            self._raise(1)
        gpu = self._gpus[handle.index]
        return gpu

    def _device_call(self, fn_name: str, handle: Any) -> Dict[str, Any]:
        self.calls.append(fn_name)
        gpu = self._gpu(handle)
        if gpu.get("hang"):
            self._hang()
        if gpu.get("lost"):
            self._raise(15)
        field = _FIELD_OF.get(fn_name)
        if field and field in (gpu.get("unsupported") or ()):
            self._raise(3)
        errs = gpu.get("nvml_errors") or {}
        if field and field in errs:
            self._raise(ERROR_CODES.get(errs[field], 999))
        return gpu

    # -- system --------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self._scenario.get("nvml_init_hang"):
            self._hang()
        err = self._scenario.get("nvml_init_error")
        if err:
            self._raise(ERROR_CODES.get(err, 999))
        self._initialised = True

    nvmlInitWithFlags = lambda self, flags=0: self.nvmlInit()  # noqa: E731

    def nvmlShutdown(self) -> None:
        self._initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self._scenario.get("driver_version", "550.54.15"))

    def nvmlDeviceGetCount(self) -> int:
        if not self._initialised:
            self._raise(1)
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        if not self._initialised:
            self._raise(1)
        if index < 0 or index >= len(self._gpus):
            self._raise(2)
        if self._gpus[index].get("hang"):
            self._hang()
        return SimpleNamespace(index=index)

    # -- device --------------------------------------------------------
    def nvmlDeviceGetPciInfo(self, h: Any) -> Any:
        gpu = self._device_call("nvmlDeviceGetPciInfo", h)
        bus = gpu["pci_bus_id"]
        return SimpleNamespace(busId=bus, busIdLegacy=bus[4:], domain=int(bus.split(":")[0], 16))

    def nvmlDeviceGetName(self, h: Any) -> str:
        return self._device_call("nvmlDeviceGetName", h).get("name", "NVIDIA H100 80GB HBM3")

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return self._device_call("nvmlDeviceGetUUID", h).get("uuid", f"GPU-sim-{h.index:04d}")

    def nvmlDeviceGetTotalEccErrors(self, h: Any, error_type: int, counter_type: int) -> int:
        gpu = self._device_call("nvmlDeviceGetTotalEccErrors", h)
        if error_type == self.NVML_MEMORY_ERROR_TYPE_UNCORRECTED and counter_type == self.NVML_VOLATILE_ECC:
            return int(gpu.get("ecc_uncorrected_volatile", 0))
        if counter_type == self.NVML_AGGREGATE_ECC:
            key = "ecc_uncorrected_aggregate" if error_type == self.NVML_MEMORY_ERROR_TYPE_UNCORRECTED else "ecc_corrected_aggregate"
            if key in gpu:
                return int(gpu[key])
        return int(gpu.get("ecc_other", 0))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: Any) -> int:
        gpu = self._device_call("nvmlDeviceGetRetiredPagesPendingStatus", h)
        return self.NVML_FEATURE_ENABLED if gpu.get("retired_pages_pending") else self.NVML_FEATURE_DISABLED

    def nvmlDeviceGetRemappedRows(self, h: Any) -> tuple:
        gpu = self._device_call("nvmlDeviceGetRemappedRows", h)
        rr = gpu.get("remapped_rows") or {}
        return (int(rr.get("correctable", 0)), int(rr.get("uncorrectable", 0)),
                int(bool(rr.get("pending"))), int(bool(rr.get("failure"))))

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return int(self._device_call("nvmlDeviceGetTemperature", h).get("temperature_c", 35))

    def _pcie(self, h: Any, key: str, fn: str) -> int:
        pcie = self._device_call(fn, h).get("pcie") or {}
        return int(pcie.get(key, {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}[key]))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        return self._pcie(h, "gen", "nvmlDeviceGetCurrPcieLinkGeneration")

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        return self._pcie(h, "width", "nvmlDeviceGetCurrPcieLinkWidth")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        return self._pcie(h, "max_gen", "nvmlDeviceGetMaxPcieLinkGeneration")

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        return self._pcie(h, "max_width", "nvmlDeviceGetMaxPcieLinkWidth")

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:
        gpu = self._device_call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        mask = 0
        for name in gpu.get("throttle_reasons") or ():
            mask |= _THROTTLE_NAMES[name]
        return mask

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return self.nvmlDeviceGetCurrentClocksThrottleReasons(h)

    def nvmlDeviceGetPersistenceMode(self, h: Any) -> int:
        gpu = self._device_call("nvmlDeviceGetPersistenceMode", h)
        return self.NVML_FEATURE_ENABLED if gpu.get("persistence_mode", True) else self.NVML_FEATURE_DISABLED

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list:
        gpu = self._device_call("nvmlDeviceGetComputeRunningProcesses", h)
        return [SimpleNamespace(pid=int(p["pid"]), usedGpuMemory=int(p.get("used_memory_mib", 0)) * 1024 * 1024)
                for p in gpu.get("processes") or ()]

    # -- telemetry-only readings (health/epilog) ------------------------
    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        # One definition for the straggler sampler and telemetry (both merged one in).
        return int(float(self._device_call("nvmlDeviceGetPowerUsage", h).get("power_w", 300.0)) * 1000)  # mW

    def nvmlDeviceGetClockInfo(self, h: Any, clock_type: int) -> int:
        return int(self._device_call("nvmlDeviceGetClockInfo", h).get("sm_clock_mhz", 1980))

    def nvmlDeviceGetRetiredPages(self, h: Any, cause: int) -> list:
        rp = self._device_call("nvmlDeviceGetRetiredPages", h).get("retired_pages") or {}
        n = int(rp.get("double_bit" if cause == 1 else "single_bit", 0))
        return [0x1000 * (i + 1) for i in range(n)]  # page addresses

    def nvmlDeviceGetNvLinkState(self, h: Any, link: int) -> int:
        nv = self._device_call("nvmlDeviceGetNvLinkState", h).get("nvlink") or {}
        if link >= int(nv.get("links", 18)):
            self._raise(2)  # NVML_ERROR_INVALID_ARGUMENT past the last link
        return self.NVML_FEATURE_DISABLED if link in (nv.get("down") or ()) else self.NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkErrorCounter(self, h: Any, link: int, counter: int) -> int:
        nv = self._device_call("nvmlDeviceGetNvLinkErrorCounter", h).get("nvlink") or {}
        name = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}.get(counter, "")
        # Scenario totals per GPU land on link 0, so sums over links match them.
        return int((nv.get("errors") or {}).get(name, 0)) if link == 0 else 0

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for gpu in self._gpus:
            for p in gpu.get("processes") or ():
                if int(p["pid"]) == pid:
                    return p.get("name", "python")
        self._raise(6)
        return ""
